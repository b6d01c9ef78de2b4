"""The data of the web replay page (:func:`workbench.replay.web.page.page_data`), without a browser:
records decimated to at most MAX_FPS per second of trajectory time, bodies that do not move
stored once, spheres without orientation, non-finite records left out, reverse runs sorted.
The page in a browser: tests/integration/test_web_replay.py."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from workbench.errors import WorkbenchError
from workbench.replay.camera import Camera
from workbench.replay.web import write_replay_page
from workbench.replay.web.page import MAX_FPS, page_data
from workbench.scene.model import scene_from_dict
from workbench.sim.forward import run_scene

#: Recorded at every step of 1/240 s for 1 s: 241 records, 8 times denser than MAX_FPS.
DT, DURATION = 1.0 / 240.0, 1.0

SCENE = {
    "settings": {"dt": DT, "duration": DURATION, "record_every": 1},
    "bodies": [
        {"name": "ground", "shape": {"type": "plane"}, "fixed": True},
        {"name": "post", "shape": {"type": "box", "size": [0.1, 0.1, 0.4]}, "fixed": True,
         "position": [1.0, 0.0, 0.2]},
        {"name": "ball", "shape": {"type": "sphere", "radius": 0.1}, "mass": 1.0,
         "position": [0.0, 0.0, 0.5], "angular_velocity": [0.0, 5.0, 0.0]},
        {"name": "brick", "shape": {"type": "box", "size": [0.2, 0.1, 0.05]}, "mass": 1.0,
         "position": [0.0, 1.0, 0.5], "angular_velocity": [3.0, 0.0, 1.0]},
    ],
}  # fmt: skip
GROUND, POST, BALL, BRICK = range(4)
CAMERA = Camera((0.0, 0.5, 0.3), 3.0)


@pytest.fixture(scope="module")
def scene_and_run():
    scene = scene_from_dict(SCENE)
    traj = run_scene(scene)
    assert traj.n_times == round(DURATION / DT) + 1
    return scene, traj


def decode(text: str, dtype) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=np.dtype(dtype).newbyteorder("<"))


def test_records_are_decimated_to_max_fps(scene_and_run):
    """241 records over 1 s become the record nearest each 1/30 s: 31, at most 1/30 s apart
    give or take one recording step, the first and the last kept."""
    scene, traj = scene_and_run
    run = page_data(scene, {"run": traj}, camera=CAMERA)["runs"][0]
    times = decode(run["times"], np.float64)
    assert len(times) == round(DURATION * MAX_FPS) + 1
    assert times[0] == traj.time[0] and times[-1] == traj.time[-1]
    steps = np.diff(times)
    assert np.all(steps >= 1.0 / MAX_FPS - DT) and np.all(steps <= 1.0 / MAX_FPS + DT)
    assert set(times) <= set(traj.time)  # records, not interpolations


def test_sparse_records_are_all_kept(scene_and_run):
    """Records 0.1 s apart (sparser than MAX_FPS) are all kept."""
    scene, traj = scene_and_run
    sparse = traj.truncated(traj.n_times)
    keep = np.arange(0, traj.n_times, 24)  # every 0.1 s
    for name in ("time", "position", "orientation", "linear_velocity", "angular_velocity"):
        setattr(sparse, name, getattr(traj, name)[keep])
    run = page_data(scene, {"run": sparse}, camera=CAMERA)["runs"][0]
    np.testing.assert_array_equal(decode(run["times"], np.float64), traj.time[keep])


def test_static_bodies_once_and_spheres_without_orientation(scene_and_run):
    """The ground and the post (fixed) are in ``first`` only; the ball moves but its turning
    cannot be seen, so only the brick's quaternions are stored per record."""
    scene, traj = scene_and_run
    run = page_data(scene, {"run": traj}, camera=CAMERA)["runs"][0]
    nk = len(decode(run["times"], np.float64))
    assert run["moving"] == [BALL, BRICK]
    assert run["turning"] == [BRICK]
    assert np.any(traj.orientation[:, BALL] != traj.orientation[0, BALL])  # it does turn
    first = decode(run["first"], np.float32).reshape(len(scene.bodies), 7)
    np.testing.assert_allclose(first[POST, :3], [1.0, 0.0, 0.2], atol=1e-6)
    positions = decode(run["positions"], np.float32).reshape(nk, 2, 3)
    quaternions = decode(run["quaternions"], np.float32).reshape(nk, 1, 4)
    i = np.searchsorted(traj.time, decode(run["times"], np.float64))
    # shapes centred on the centre of mass: the body frame's origin is the recorded position
    np.testing.assert_allclose(positions, traj.position[i][:, [BALL, BRICK]], atol=1e-6)
    np.testing.assert_allclose(quaternions[:, 0], traj.orientation[i, BRICK], atol=1e-6)


def test_non_finite_records_are_left_out_and_reverse_runs_sorted(scene_and_run):
    scene, traj = scene_and_run
    backwards = traj.truncated(traj.n_times)
    for name in ("time", "position", "orientation", "linear_velocity", "angular_velocity"):
        setattr(backwards, name, getattr(traj, name)[::-1].copy())
    backwards.position[:10] = np.nan  # the last 10 records in time
    times = decode(page_data(scene, {"r": backwards}, camera=CAMERA)["runs"][0]["times"], float)
    assert np.all(np.diff(times) > 0)
    assert times[-1] == traj.time[-11] and times[0] == traj.time[0]


def test_camera_is_z_up_and_the_folder_must_exist(scene_and_run, tmp_path):
    """The page's orbit controls turn about z, so the data carries no up vector of its own."""
    scene, traj = scene_and_run
    camera = page_data(scene, {"run": traj}, camera=CAMERA)["camera"]
    assert set(camera) == {"eye", "target", "fov", "near", "far"}
    np.testing.assert_allclose(camera["eye"], CAMERA.eye())
    with pytest.raises(WorkbenchError, match="folder .* does not exist"):
        write_replay_page(tmp_path / "no" / "p.html", scene, {"run": traj}, camera=CAMERA)
    assert not (tmp_path / "no").exists()
