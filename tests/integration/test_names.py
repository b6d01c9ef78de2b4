"""Names on the command line (issue 19): scenes, hints files, specs and Markov tables resolve by
one rule from any working directory (an existing path as given; else a name next to the scene,
for hints, and in the shipped folders, with or without folder prefix and suffix); a misspelled
name is one line with the nearest names and exit status 2; `workbench scenes` lists everything
that ships, wrapped to the terminal."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, WORKBENCH, cli_env, run_main, run_workbench
from workbench.cli.main import main
from workbench.errors import SceneError, SpecError
from workbench.scene import catalog
from workbench.scene.catalog import find_data, find_hints, find_scene, find_spec
from workbench.store import TrajectoryStore

HINTS = REPO / "scenes" / "reverse_landing.hints.yaml"
#: Reverse runs in these tests are a few steps: the names are under test, not the stepper.
SHORT = ["--duration", "0.01", "-q"]


@pytest.fixture(autouse=True)
def _elsewhere(tmp_path, monkeypatch):
    """Every test runs in an empty folder outside the repository, with no user scene folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORKBENCH_SCENES", raising=False)


def _stored_hints(path) -> str:
    with TrajectoryStore.open(path) as store:
        return store.attrs["hints"]


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize(
    "name",
    [
        "scenes/reverse_landing.hints.yaml",  # as the docs write it, from another folder
        "reverse_landing.hints.yaml",
        "reverse_landing.hints",
        "reverse_landing",
    ],
)
def test_a_hints_name_finds_the_shipped_file_from_any_folder(name, tmp_path):
    out = tmp_path / "rev.h5"
    assert main(["reverse", "reverse_landing", "--hints", name, *SHORT, "-o", str(out)]) == 0
    assert _stored_hints(out) == HINTS.read_text(encoding="utf-8")


def test_a_hints_file_next_to_the_scene_comes_before_the_shipped_one(tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copy(REPO / "scenes" / "reverse_landing.yaml", mine / "landing.yaml")
    own = "hints:\n  - {body: ball, bounce: 0.1}\n"
    (mine / "reverse_landing.hints.yaml").write_text(own, encoding="utf-8")
    (mine / "other.hints.yaml").write_text(own.replace("0.1", "0.05"), encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for name, text in [("reverse_landing.hints.yaml", own), ("other", own.replace("0.1", "0.05"))]:
        out = work / "rev.h5"
        argv = ["reverse", "../mine/landing.yaml", "--hints", name, *SHORT, "-o", str(out)]
        assert main(argv) == 0
        assert _stored_hints(out) == text
    assert find_hints("other.hints", mine / "landing.yaml") == (mine / "other.hints.yaml")


def test_names_with_folder_prefix_or_without_suffix_resolve_from_another_folder():
    assert find_scene("scenes/sliding_block.yaml") == REPO / "scenes" / "sliding_block.yaml"
    assert find_scene("sliding_block") == REPO / "scenes" / "sliding_block.yaml"
    assert find_scene("spelling_balls") == REPO / "scenes" / "spelling_balls.py"
    spec = REPO / "specs" / "falling_object_example1.yaml"
    assert find_spec("specs/falling_object_example1.yaml") == spec
    assert find_spec("falling_object_example1") == spec
    table = REPO / "data" / "markov_block.json"
    assert find_data("data/markov_block.json") == find_data("markov_block") == table


def test_an_existing_path_is_used_as_given(tmp_path):
    local = tmp_path / "sliding_block.yaml"
    local.write_text("bodies: []\n", encoding="utf-8")
    assert find_scene("sliding_block.yaml") == local.relative_to(tmp_path)
    (tmp_path / "scenes").mkdir()
    (tmp_path / "scenes" / "sliding_block.yaml").write_text("bodies: []\n", encoding="utf-8")
    assert find_scene("scenes/sliding_block.yaml").resolve() == tmp_path / "scenes" / local.name


def test_a_path_into_another_folder_is_left_to_its_loader(capsys):
    """Not a name: the user's own path, reported missing as before (no lookup, no guess)."""
    assert main(["run", "nowhere/sliding_block.yaml"]) == 2
    assert _one_error_line(capsys) == "workbench run: nowhere/sliding_block.yaml: file not found"


@pytest.mark.parametrize(
    "argv, words",
    [
        (["run", "sliding_blok"], "sliding_blok: file not found, and no shipped scene of that "
         "name (did you mean 'sliding_block'?)"),
        (["check", "scenes/sliding_blok.yaml"], "(did you mean 'sliding_block'?)"),
        (["infer", "falling_objct_example1"], "(did you mean 'falling_object_example1'?)"),
        (["design", "falling_object_exampl3", "--n", "2"],
         "(did you mean 'falling_object_example3'?)"),
        (["inverse", "specs/du_impact_analytc.yaml"], "(did you mean 'du_impact_analytic'?)"),
        (["reverse", "reverse_landing", "--hints", "reverse_landing.hint.yaml", *SHORT],
         "(did you mean 'reverse_landing.hints.yaml'?)"),
        (["reverse", "markov_block", "--markov", "markov_blok", *SHORT],
         "no shipped contact-transition table of that name (did you mean 'markov_block'?)"),
        (["run", "falling_object_example1"],
         "falling_object_example1: not a scene but an inference spec: run it with "
         "`workbench infer falling_object_example1`"),
        (["inverse", "falling_object"],
         "falling_object: not a spec but a scene: run it with `workbench run falling_object`"),
        (["reverse", "reverse_landing", "--hints", "du_impact_analytic", *SHORT],
         "not a hints file but an inverse spec: run it with `workbench inverse du_impact_"),
        (["run", "reverse_landing.hints"],
         "not a scene but a hints file: use it with `workbench reverse SCENE --hints "
         "reverse_landing.hints`"),
        (["run", "qqqqqqqq"], "no shipped scene of that name; looked in"),
    ],
)  # fmt: skip
def test_a_misspelled_name_is_one_line_with_the_nearest_names(argv, words, capsys, tmp_path):
    assert main([*argv, "-o", str(tmp_path / "out")] if argv[0] != "check" else argv) == 2
    line = _one_error_line(capsys)
    assert line.startswith(f"workbench {argv[0]}: ") and words in line, line


def test_equally_near_names_are_all_offered():
    with pytest.raises(SpecError, match=r"did you mean 'du_impact_analytic' or 'du_impact_py"):
        find_spec("du_impact_")  # the same distance from both


def test_the_user_folder_comes_first_and_names_its_own_files(tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "sliding_block.yaml").write_text((REPO / "scenes/sliding_block.yaml").read_text())
    (mine / "my_spec.yaml").write_text((REPO / "specs/du_impact_analytic.yaml").read_text())
    monkeypatch.setenv("WORKBENCH_SCENES", str(mine))
    assert find_scene("sliding_block") == mine / "sliding_block.yaml"
    assert find_spec("my_spec") == mine / "my_spec.yaml"
    with pytest.raises(SpecError, match="did you mean 'my_spec'"):
        find_spec("my_spek")


def test_installed_layout_without_a_checkout(tmp_path, monkeypatch):
    """After `pip install .` (no source checkout) the files are under
    <prefix>/share/rigid-workbench/{scenes,specs,data}; every name resolves there."""
    share = tmp_path / "share"
    share.mkdir()
    for folder in ("scenes", "specs", "data"):
        (share / folder).symlink_to(REPO / folder)
    monkeypatch.setattr(catalog, "REPOSITORY", tmp_path / "no_checkout")
    monkeypatch.setattr(catalog, "INSTALLED", share)
    assert find_scene("reverse_landing") == share / "scenes" / "reverse_landing.yaml"
    hints = share / "scenes" / "reverse_landing.hints.yaml"
    assert find_hints("scenes/reverse_landing.hints.yaml") == hints
    assert find_spec("du_impact_analytic") == share / "specs" / "du_impact_analytic.yaml"
    assert find_data("markov_block") == share / "data" / "markov_block.json"
    with pytest.raises(SceneError, match="did you mean 'sliding_block'"):
        find_scene("slidingblock")


@pytest.mark.slow  # ~3 s
def test_scenes_lists_every_kind_wrapped_to_the_terminal(tmp_path, monkeypatch):
    descriptions = {}
    for columns in (60, 200):
        if columns == 60:  # the command's own process
            r = subprocess.run(
                [*WORKBENCH, "scenes"],
                capture_output=True,
                text=True,
                cwd=tmp_path,
                env={**cli_env(), "COLUMNS": str(columns)},
                timeout=60,
            )
        else:  # this process: the same listing without an interpreter's start
            monkeypatch.setenv("COLUMNS", str(columns))
            r = run_main("scenes", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert max(map(len, lines)) < columns
        for title in ("scenes in", "hints files", "inference specs", "inverse specs",
                      "contact-transition tables"):  # fmt: skip
            assert any(line.startswith(title) for line in lines), title
        descriptions[columns] = " ".join(r.stdout.split())
    # the same words either way: wrapped, not truncated
    assert descriptions[60] == descriptions[200]
    crash = 'boxes spelling "CRASH" in mid-air just after they collided'  # a long description
    assert crash in descriptions[60]
    r = run_main("scenes", "--json", cwd=tmp_path)
    listing = json.loads(r.stdout)
    names = {key: [e["name"] for e in entries] for key, entries in listing.items()}
    assert "sliding_block" in names["scenes"] and "crash" in names["scenes"]
    assert names["inference_specs"] == [f"falling_object_example{i}" for i in (1, 2, 3)]
    assert names["inverse_specs"] == ["du_impact_analytic", "du_impact_pybullet"]
    tables = [
        f"markov_{shape}{kind}" for shape in ("block", "plate", "rod") for kind in ("", "_semi")
    ]
    assert set(tables) <= set(names["markov_tables"])
    assert all(name.startswith("markov_") for name in names["markov_tables"])
    assert names["markov_tables"] == sorted(names["markov_tables"])
    assert names["hints"] == ["reverse_landing.hints"]
    assert all(e["description"] for entries in listing.values() for e in entries)
    finders = {
        "scenes": find_scene,
        "hints": find_hints,
        "inference_specs": find_spec,
        "inverse_specs": find_spec,
        "markov_tables": find_data,
    }
    for key, entries in listing.items():  # every listed name finds the listed file
        for e in entries:
            assert finders[key](e["name"]) == Path(e["path"]), e


@pytest.mark.slow  # ~3 s
def test_the_command_line_from_another_folder(tmp_path):
    """The whole command line from another folder: a docs-style hints path and a misspelling."""
    r = run_workbench(
        "reverse", "reverse_landing", "--hints", "scenes/reverse_landing.hints.yaml",
        "--duration", "0.01", "-o", tmp_path / "x.h5", cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = run_main("reverse", "reverse_landng", "--duration", "0.01", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "did you mean 'reverse_landing'?" in r.stderr


def test_no_shipped_names_means_no_suggestion():
    """With nothing to compare against, the hint is empty (difflib refuses n = 0)."""
    from workbench.scene import catalog

    assert catalog._nearest("sliding_blok", {}) == ""
    assert catalog._nearest("sliding_blok", {"sliding_block": "sliding_block"}) == "'sliding_block'"
