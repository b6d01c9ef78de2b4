"""What the tasks take (:mod:`workbench.tasks.inputs`): a scene as a path, a shipped name or a
``Scene``; one ``workers`` argument for processes and Dask; the checks named as the command's
options."""

from __future__ import annotations

import hashlib

import pytest

import workbench
from tests.conftest import SCENES
from workbench.errors import OptionError, WorkbenchError
from workbench.tasks.inputs import Where, check_count, pose_tolerances, scene_input, where


def test_a_scene_is_taken_by_path_by_name_or_as_a_scene():
    by_name = scene_input("random_box")
    by_path = scene_input(SCENES / "random_box.yaml")
    by_scene = scene_input(workbench.load_scene(SCENES / "random_box.yaml"))
    assert by_name.path == by_path.path == by_scene.path == SCENES / "random_box.yaml"
    assert by_scene.overrides == () and by_name.stem == "random_box"


def test_a_scene_with_changed_parameters_keeps_no_file_and_cannot_go_to_workers():
    changed = workbench.load_scene(SCENES / "falling_object.yaml", {"c": 0.3})
    given = scene_input(changed)
    assert given.path is None and given.scene is changed
    with pytest.raises(ValueError, match="pass the scene's path"):
        workbench.ensemble(changed, 2, seed=1)
    with pytest.raises(ValueError, match="set= applies"):
        scene_input(changed, {"c": 0.1})


def test_an_ensemble_of_a_loaded_scene_is_the_ensemble_of_its_file(tmp_path):
    scene = workbench.load_scene(SCENES / "random_box.yaml")
    a = workbench.ensemble(scene, 2, seed=4, duration=0.1).save(tmp_path / "a.h5")
    b = workbench.ensemble("random_box", 2, seed=4, duration=0.1).save(tmp_path / "b.h5")
    assert hashlib.sha256(a.read_bytes()).digest() == hashlib.sha256(b.read_bytes()).digest()


@pytest.mark.parametrize(
    ("workers", "expected"),
    [
        (1, Where(1, None)),
        (3, Where(3, None)),
        ("2", Where(2, None)),
        ("local:2", Where(2, "local")),
        ("tcp://127.0.0.1:8786", Where(1, "tcp://127.0.0.1:8786")),
    ],
)
def test_one_workers_argument_says_where_the_runs_go(workers, expected):
    assert where(workers) == expected


@pytest.mark.parametrize("workers", [0, "tcp://nohost", "local:0", "many"])
def test_a_workers_argument_that_says_nowhere_is_refused_in_one_line(workers):
    with pytest.raises(WorkbenchError) as err:
        where(workers)
    assert "\n" not in str(err.value)


def test_the_checks_name_the_commands_options():
    with pytest.raises(OptionError, match="^-n: expected at least 1 realization, got 0"):
        check_count("-n", 0, "realization")
    with pytest.raises(OptionError, match="--verify-tolerance"):
        pose_tolerances("0.01", (0.05, 0.1))
    with pytest.raises(OptionError, match="--duration: expected a positive"):
        workbench.run("falling_object", duration=-1.0)
