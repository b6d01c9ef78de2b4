"""What replay builds and shows (``workbench/sim/engine_view.py``): ``Engine(shown_only=True)``
draws every body where a full build draws it, from the same states, in few PyBullet calls."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from workbench.scene.model import scene_from_dict
from workbench.sim.engine import Engine
from workbench.sim.forward import run_scene
from workbench.sim.state import State

#: A full inertia tensor (principal axes turned from the body's) and an off-centre centre of mass,
#: so the inertial frame differs from the body frame in position and orientation.
J = [[2.0, 0.3, -0.2], [0.3, 1.5, 0.1], [-0.2, 0.1, 1.0]]

SCENE = {
    "gravity": [0.0, 0.0, -9.81],
    "settings": {"dt": 1.0 / 240.0, "duration": 0.5, "record_every": 20},
    "bodies": [
        {"name": "ground", "shape": {"type": "plane"}, "fixed": True},
        {"name": "ramp", "shape": {"type": "box", "half_extents": [0.5, 0.3, 0.05]}, "fixed": True,
         "position": [0.0, 0.0, 0.1], "euler_deg": [0, 15, 0]},
        {"name": "brick", "shape": {"type": "box", "half_extents": [0.2, 0.1, 0.1]}, "mass": 3.0,
         "com": [0.05, -0.02, 0.01], "inertia": J, "position": [0.0, 0.0, 0.6],
         "euler_deg": [10, 20, 30], "angular_velocity": [3.0, -2.0, 1.0]},
        {"name": "ball1", "shape": {"type": "sphere", "radius": 0.08}, "mass": 1.0,
         "position": [0.3, 0.3, 0.5], "linear_velocity": [0.0, -1.0, 0.0]},
        {"name": "ball2", "shape": {"type": "sphere", "radius": 0.08}, "mass": 1.0,
         "position": [-0.3, 0.3, 0.5]},
        {"name": "can", "shape": {"type": "cylinder", "radius": 0.05, "length": 0.2},
         "mass": 0.5, "position": [0.0, -0.4, 0.4], "angular_velocity": [5.0, 0.0, 0.0]},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def run():
    scene = scene_from_dict(SCENE)
    return scene, run_scene(scene)


def _images(engine: Engine, traj, records) -> np.ndarray:
    view = engine.camera([0.0, 0.0, 0.3], 2.0, 30.0, -30.0, 60.0, 4.0 / 3.0)
    out = []
    for i in records:
        zeros = np.zeros_like(traj.position[i])
        engine.set_state(State(traj.position[i], traj.orientation[i], zeros, zeros))
        out.append(engine.render(view, 160, 120))
    return np.array(out)


def test_shown_bodies_are_drawn_where_a_full_build_draws_them(run):
    """The same records rendered from both builds: the same pixels, to the last one."""
    scene, traj = run
    records = [0, traj.n_times // 2, traj.n_times - 1]
    with Engine(scene, visual=True) as full, Engine(scene, shown_only=True) as shown:
        assert shown.n_bodies == full.n_bodies == len(scene.bodies)
        a, b = _images(full, traj, records), _images(shown, traj, records)
    assert np.array_equal(a, b)
    assert np.any(a[0] != a[-1])  # the records differ: the comparison sees motion


def test_shown_bodies_start_at_the_scenes_poses(run):
    """Built without a state set: each body at its scene pose (the batch places body frames
    unturned; the build turns them)."""
    scene, _ = run
    with Engine(scene) as full, Engine(scene, shown_only=True) as shown:
        want, got = full.state(), shown.state()
    assert np.allclose(got.position, want.position, atol=1e-12)
    same = np.abs(np.sum(got.orientation * want.orientation, axis=1))
    assert np.allclose(same, 1.0, atol=1e-12)


def test_a_realizations_mass_properties_place_the_shown_bodies(run):
    """A sampled centre of mass and inertia (``mass_overrides``) give the shown body the
    realization's inertial frame, as the full build: set_state puts the body frame alike."""
    scene, traj = run
    over = {"brick": {"mass": 2.0, "com": [-0.04, 0.03, 0.0], "inertia": np.diag([1.0, 2.0, 3.0])}}
    with (
        Engine(scene, visual=True, mass_overrides=over) as full,
        Engine(scene, shown_only=True, mass_overrides=over) as shown,
    ):
        assert np.allclose(shown.frames[2].com, full.frames[2].com)
        assert np.allclose(shown.frames[2].principal, full.frames[2].principal)
        records = [0, traj.n_times - 1]
        assert np.array_equal(_images(full, traj, records), _images(shown, traj, records))


def test_bodies_that_look_alike_share_one_creation_call(monkeypatch):
    """Seventy balls of one radius in the 7 colours of moving bodies: one ``createMultiBody``
    call per look (and inertial frame), 7 in all, each body at its place."""
    scene = scene_from_dict(
        {
            "gravity": [0, 0, 0],
            "bodies": [
                {"name": f"b{k}", "shape": {"type": "sphere", "radius": 0.05}, "mass": 1.0,
                 "position": [0.2 * k, 0.0, 0.05]}
                for k in range(70)
            ],
        }
    )  # fmt: skip
    with Engine(scene, shown_only=True) as shown:
        calls = []
        real = shown._p

        class Counting:
            def __getattr__(self, name):
                if name == "createMultiBody":
                    calls.append(name)
                return getattr(real, name)

        monkeypatch.setattr(shown, "_p", Counting())
        shown.rebuild()
        assert shown.n_bodies == 70
        state = shown.state()
    # 70 balls in the 7 colours of moving bodies: 7 batches of 10
    assert len(calls) == 7
    assert np.allclose(state.position[:, 0], 0.2 * np.arange(70))
    turned = Rotation.from_quat(state.orientation).magnitude()
    assert np.allclose(turned, 0.0)
