"""The examples in README.md and docs/scenes.md run as written."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.conftest import REPO
from workbench import load_scene, run_scene


def _blocks(path, lang):
    return re.findall(rf"```{lang}\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def test_readme_python_example_runs(tmp_path, monkeypatch):
    (tmp_path / "scenes").symlink_to(REPO / "scenes")
    monkeypatch.chdir(tmp_path)
    (code,) = _blocks(REPO / "README.md", "python")
    exec(compile(code, "README.md", "exec"), {})
    assert (tmp_path / "falling.h5").exists()


def test_readme_yaml_example_runs(tmp_path):
    (text,) = _blocks(REPO / "README.md", "yaml")
    path = tmp_path / "ball.yaml"
    path.write_text(text)
    traj = run_scene(load_scene(path, {"height": 2.0}))
    assert traj.observers["height"][0, 2] == 2.0
    assert np.all(traj.observers["height"][:, 2] > 0.04)  # it stays above the ground


def test_scene_script_example_runs(tmp_path):
    (code,) = _blocks(REPO / "docs" / "scenes.md", "python")
    path = tmp_path / "my_drop.py"
    path.write_text(code)
    scene = load_scene(path, {"height": 2.0})
    assert scene.body("ball").position == (0, 0, 2.0)
    assert run_scene(scene).status == "ok"


def test_reverse_doc_examples_run(tmp_path, monkeypatch):
    """docs/reverse.md: its hints example is a valid hints file for the shipped scene, and its
    `workbench reverse` command runs as written."""
    import shlex

    import yaml

    from reverse.goals.hints import parse_hints
    from workbench.cli.main import main as workbench_main
    from workbench.store import read_trajectory

    doc = REPO / "docs" / "reverse.md"
    (text,) = _blocks(doc, "yaml")
    scene = load_scene(REPO / "scenes" / "reverse_landing.yaml")
    hints = parse_hints(yaml.safe_load(text), scene.body_names, source=str(doc))
    assert [h.kind for h in hints] == ["slide", "bounce", "roll"]

    (tmp_path / "scenes").symlink_to(REPO / "scenes")
    monkeypatch.chdir(tmp_path)
    (bash,) = _blocks(doc, "bash")
    command = bash.split("\n")[0].rstrip("\\") + bash.split("\n")[1] + " -q"  # the first command
    argv = shlex.split(command)
    assert argv[:2] == ["workbench", "reverse"]
    assert workbench_main(argv[1:]) == 0
    traj = read_trajectory(tmp_path / "landing.h5")
    assert traj.time[-1] == 0.5


def test_inverse_doc_examples_run(tmp_path):
    """docs/inverse.md: its spec is a valid spec that runs, its Python example runs, and its
    scene-output fragment parses for the shipped du_impact scene."""
    import yaml

    from uncertainty.inverse import inverse_form
    from workbench.analysis.inverse import build_problem, load_inverse_spec
    from workbench.analysis.outputs import parse_outputs

    doc = REPO / "docs" / "inverse.md"
    spec_text, fragment = _blocks(doc, "yaml")
    path = tmp_path / "spec.yaml"
    path.write_text(spec_text)
    spec = load_inverse_spec(path)
    problem, _ = build_problem(spec)
    result = inverse_form(problem, spec.cdf_points, moments=False)
    assert result["vB0"].converged and len(result["vB0"].points) == 3
    outputs = parse_outputs(
        yaml.safe_load(fragment)["model"]["outputs"], ["floor", "incline", "A", "B"]
    )
    assert [o.name for o in outputs] == ["dA", "dB"]
    (code,) = _blocks(doc, "python")
    exec(compile(code, str(doc), "exec"), {})


@pytest.mark.slow  # ~15 s: mkdocs reads every guide and mkdocstrings every documented module
def test_the_documentation_site_builds_with_warnings_as_errors(tmp_path):
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "site" / "api" / "reverse" / "index.html").is_file()
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "Getting started" in index


@pytest.mark.slow  # ~10 s: a 2 s PyBullet run of the falling object
def test_the_python_example_of_the_site_runs(monkeypatch):
    monkeypatch.chdir(REPO)
    text = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(block, "docs/index.md", "exec"), {})


@pytest.mark.slow  # 3-5 s each: an ensemble on two processes, reverse runs, a Sobol' design
@pytest.mark.parametrize("guide", ["ensembles.md", "reverse.md", "sensitivity.md"])
def test_the_python_examples_of_the_guides_run(guide, tmp_path, monkeypatch):
    """The "From Python" examples of the guides (the tasks, issue 37) run as written."""
    monkeypatch.chdir(tmp_path)
    (code,) = _blocks(REPO / "docs" / guide, "python")
    exec(compile(code, guide, "exec"), {})
