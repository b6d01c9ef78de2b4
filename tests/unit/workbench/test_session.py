"""The live viewer's frames (``workbench/replay/session.py``): the poses each frame sets and
which bodies a frame needs to move. Played under Xvfb: test_viewer.py."""

from __future__ import annotations

import numpy as np

from workbench.replay.session import frame_poses
from workbench.scene.model import scene_from_dict
from workbench.sim.engine import Engine
from workbench.sim.forward import run_scene
from workbench.sim.state import State

#: A ball that comes to rest on the ground, a brick (full inertia tensor, off-centre centre of
#: mass) that tumbles throughout, and a fixed post.
SCENE = {
    "settings": {"dt": 1.0 / 240.0, "duration": 1.0, "record_every": 12},
    "gravity": [0.0, 0.0, 0.0],
    "bodies": [
        {"name": "post", "shape": {"type": "box", "half_extents": [0.05, 0.05, 0.3]},
         "fixed": True, "position": [1.0, 0.0, 0.3]},
        {"name": "brick", "shape": {"type": "box", "half_extents": [0.2, 0.1, 0.1]}, "mass": 3.0,
         "com": [0.05, -0.02, 0.01], "inertia": [[2.0, 0.3, -0.2], [0.3, 1.5, 0.1],
                                                 [-0.2, 0.1, 1.0]],
         "position": [0.0, 0.0, 0.6], "angular_velocity": [3.0, -2.0, 1.0]},
        {"name": "ball", "shape": {"type": "sphere", "radius": 0.1}, "mass": 1.0,
         "position": [0.0, 1.0, 0.5]},
    ],
}  # fmt: skip


def test_frame_poses_place_bodies_as_set_state_does():
    scene = scene_from_dict(SCENE)
    traj = run_scene(scene)
    with Engine(scene, shown_only=True) as engine:
        position, q_inertial, _ = frame_poses(engine, traj.position, traj.orientation)
        every = np.arange(len(scene.bodies))
        for i in (0, traj.n_times - 1):
            engine.set_poses(every, position[i], q_inertial[i])
            placed = engine.state()
            zeros = np.zeros_like(traj.position[i])
            engine.set_state(State(traj.position[i], traj.orientation[i], zeros, zeros))
            want = engine.state()
            assert np.allclose(placed.position, want.position, atol=1e-12)
            assert np.allclose(placed.orientation, want.orientation, atol=1e-12)


def test_a_frame_moves_exactly_the_bodies_whose_pose_changed():
    """pose ids differ between two frames exactly for the bodies whose recorded pose differs
    between them; the fixed post and the ball at rest keep theirs."""
    scene = scene_from_dict(SCENE)
    traj = run_scene(scene)
    with Engine(scene, shown_only=True) as engine:
        _, _, pose_id = frame_poses(engine, traj.position, traj.orientation)
    pose = np.concatenate([traj.position, traj.orientation], axis=2)
    for a, b in [(0, 1), (0, traj.n_times - 1), (3, 7)]:
        moved = np.any(pose[a] != pose[b], axis=1)
        assert np.array_equal(pose_id[a] != pose_id[b], moved)
    assert np.all(pose_id[:, 0] == 0) and np.all(pose_id[:, 2] == 0)  # post, ball at rest
    assert pose_id[-1, 1] == traj.n_times - 1  # the brick moves at every record
