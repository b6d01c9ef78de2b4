"""Tracked links of URDF bodies below the forward run (issue 22): the scene's rows, the store's
schema and files, the engine's joint setter, and trajectories recorded before links were
tracked."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from tests.conftest import REPO
from workbench.errors import StoreError
from workbench.scene.model import scene_from_dict
from workbench.sim.engine import Engine
from workbench.sim.forward import run_scene
from workbench.sim.state import State, Trajectory, channel
from workbench.store import MemoryStore, StoreSchema, TrajectoryStore, write_trajectory

DATA = REPO / "tests" / "data"


def _scene(duration=0.3, **extra):
    return scene_from_dict(
        {
            "settings": {"dt": 1e-3, "duration": duration, "record_every": 50},
            "bodies": [
                {
                    "name": "ball",
                    "shape": {"type": "sphere", "radius": 0.1},
                    "mass": 1.0,
                    "position": [3, 0, 1],
                },
                {
                    "name": "p",
                    "shape": {
                        "type": "urdf",
                        "file": "double_pendulum_tracking.urdf",
                        "joints": {"shoulder": {"initial_position": 0.7}},
                    },
                    "position": [0, 0, 2],
                    "fixed": True,
                },
            ],
            **extra,
        },
        base_dir=str(DATA),
    )


@pytest.fixture(scope="module")
def traj():
    return run_scene(_scene())


def test_rows_follow_the_scene_bodies():
    scene = _scene()
    assert scene.body_names == ("ball", "p")  # the scene's own rows keep their indices
    assert scene.tracked_names == ("ball", "p", "p/upper", "p/lower")
    assert [j.name for j in scene.tracked_joints] == ["p/shoulder", "p/elbow"]
    assert scene.row_of("p", "lower") == 3 and scene.row_of("p", "pivot") == 1
    with pytest.raises(KeyError):
        scene.row_of("ball", "lower")


def test_schema_checks_link_rows(traj):
    schema = StoreSchema.from_trajectory(traj)
    assert schema.row_shapes()["joints/position"] == (traj.n_times, 2)
    with pytest.raises(StoreError, match="must be the last body names"):
        StoreSchema(
            time=traj.time, body_names=("p/upper", "ball", "p", "p/lower"), link_info=traj.link_info
        )
    with pytest.raises(StoreError, match="name 'p/upper' must be a non-empty string without"):
        StoreSchema(time=traj.time, body_names=traj.body_names)  # a '/' needs a link row
    joints = {"p/elbow": {"link": "p/nowhere", "type": "revolute"}}
    with pytest.raises(StoreError, match="moves 'p/nowhere', not a link"):
        StoreSchema(
            time=traj.time, body_names=traj.body_names, link_info=traj.link_info, joint_info=joints
        )
    broken = Trajectory(**{**traj.__dict__, "joint_position": None})
    with pytest.raises(StoreError, match="joint_position missing"):
        schema.rows(broken, "here")


def test_memory_and_file_stores_agree(traj, tmp_path):
    schema = StoreSchema.from_trajectory(traj)
    memory = MemoryStore(schema, 2)
    memory.write(1, traj)
    path = tmp_path / "s.h5"
    with TrajectoryStore.create(path, schema, 2) as store:
        store.write(1, traj)
    with TrajectoryStore.open(path) as store:
        assert store.schema == schema
        a, b = store.read(1), memory.read(1)
    for t in (a, b):
        assert t.link_info == traj.link_info and t.joint_info == traj.joint_info
        np.testing.assert_array_equal(t.joint_velocity, traj.joint_velocity)
        np.testing.assert_array_equal(t.position, traj.position)


def test_damaged_links_group_is_one_line(traj, tmp_path):
    path = tmp_path / "d.h5"
    write_trajectory(path, traj)
    with h5py.File(path, "r+") as f:
        del f["links/parent"]
    with pytest.raises(StoreError, match=r"d\.h5: damaged store, /links lacks"):
        TrajectoryStore.open(path)


def test_set_state_with_joints_places_the_links(traj):
    """The replay's placement: the base pose and the recorded joint positions give back the
    recorded link rows (positions to round-off: the same forward kinematics)."""
    scene = _scene()
    engine = Engine(scene)
    try:
        i = traj.n_times - 1
        zeros = np.zeros_like(traj.position[i])
        engine.set_state(
            State(traj.position[i], traj.orientation[i], zeros, zeros),
            traj.joint_position[i],
            traj.joint_velocity[i],
        )
        state = engine.state(links=True)
    finally:
        engine.close()
    # PyBullet's forward kinematics from the same joint angles: the same operations
    np.testing.assert_allclose(state.position[2:], traj.position[i, 2:], rtol=0, atol=1e-15)
    np.testing.assert_allclose(state.orientation[2:], traj.orientation[i, 2:], rtol=0, atol=1e-15)
    np.testing.assert_allclose(state.linear_velocity[2:], traj.linear_velocity[i, 2:], atol=1e-14)


def test_channels_of_rows_and_joints(traj):
    values, info = channel(traj, body="p/lower", field="linear_velocity")
    np.testing.assert_array_equal(values, traj.linear_velocity[:, 3])
    assert info["unit"] == "m/s" and info["body"] == "p/lower"
    values, info = channel(traj, joint="p/elbow", field="velocity")
    np.testing.assert_array_equal(values[:, 0], traj.joint_velocity[:, 1])
    assert info["unit"] == "rad/s" and info["components"] == ["elbow"]
    with pytest.raises(KeyError, match="no joint 'p/knee'; joints are p/shoulder, p/elbow"):
        channel(traj, joint="p/knee", field="position")


def test_truncated_keeps_the_joints(traj):
    short = traj.truncated(2)
    assert short.joint_position.shape == (2, 2) and short.link_info == traj.link_info


def test_a_run_recorded_before_links_were_tracked_still_renders(traj, tmp_path):
    """A URDF run from an older file: base rows only, no link_info, no joints."""
    from workbench.replay.viewer import render_frames

    old = Trajectory(
        time=traj.time,
        body_names=traj.body_names[:2],
        **{
            k: getattr(traj, k)[:, :2]
            for k in ("position", "orientation", "linear_velocity", "angular_velocity")
        },
    )
    paths = render_frames(_scene(), old, tmp_path / "f", width=64, height=48, fps=2.0)
    assert len(paths) == 1
