"""``workbench replay`` (``workbench/cli/replay.py``) given something other than a result file.
Its outputs are tested with the viewer (tests/unit/workbench/test_viewer.py), the web page
(tests/unit/workbench/test_web_page.py, tests/integration/test_web_replay.py) and the command
line's smoke tests (tests/integration/test_cli.py)."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import SCENES, run_main


@pytest.mark.parametrize(
    "given", ["falling_object", "scenes/falling_object.yaml", "spelling_balls"]
)
def test_a_scene_is_refused_with_the_command_that_makes_a_result_file(given, tmp_path):
    """A shipped scene's name or a scene file: one line naming it, saying it is a scene and
    which command makes a file to replay; exit 2, nothing written."""
    if "/" in given:
        shutil.copy(SCENES / "falling_object.yaml", tmp_path / "scenes_falling_object.yaml")
        given = str(tmp_path / "scenes_falling_object.yaml")
    r = run_main("replay", given, "--html", tmp_path / "page.html")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"{given}: a scene, not a result file" in lines[0]
    assert f"`workbench run {given} -o run.h5`" in lines[0]
    assert not (tmp_path / "page.html").exists()


def test_a_missing_file_that_is_no_scene_says_no_such_file(tmp_path):
    r = run_main("replay", tmp_path / "nothing.h5")
    assert r.returncode == 2
    assert r.stderr.strip().endswith("nothing.h5: no such file")


def test_an_hdf5_file_named_like_a_scene_is_replayed(tmp_path):
    """The file is looked at first: a result file called falling_object (no suffix) in the
    working folder is a result file, not the shipped scene."""
    assert run_main("run", "falling_object", "-o", tmp_path / "falling_object").returncode == 0
    r = run_main("replay", "falling_object", "--html", "page.html", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "page.html").is_file()


def test_a_run_marked_implausible_is_shown_whole_and_said_to_be_marked(tmp_path):
    """A reverse run the audit marks 'implausible' keeps every record: the replay says it is
    marked, not that it failed part-way."""
    from workbench.scene.loader import load_scene, scene_to_json
    from workbench.sim.forward import run_scene
    from workbench.store import write_trajectory

    scene = load_scene(SCENES / "falling_object.yaml")
    traj = run_scene(scene.with_settings(duration=0.1))
    traj.status, traj.message = "implausible", "the physical audit failed: bodies overlap"
    write_trajectory(tmp_path / "marked.h5", traj, scene_json=scene_to_json(scene))
    r = run_main("replay", tmp_path / "marked.h5", "--html", tmp_path / "page.html")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == (
        "the run is marked 'implausible' (the physical audit failed: bodies overlap); "
        f"showing all its {traj.n_times} records"
    )
