"""Engine conventions: body frame vs PyBullet's inertial frame, materials, determinism; placing
bodies (``Engine.set_poses`` maps body indices to PyBullet ids as an array and resets them in one
C-level loop, as placing them one by one does).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from tests.conftest import SCENES
from workbench.scene.loader import load_scene
from workbench.scene.model import scene_from_dict
from workbench.sim.engine import Engine
from workbench.sim.forward import run_scene

J = [[2.0, 0.3, -0.2], [0.3, 1.5, 0.1], [-0.2, 0.1, 1.0]]


def _scene(**body):
    base = {
        "name": "b",
        "shape": {"type": "box", "half_extents": [0.2, 0.1, 0.1]},
        "mass": 3.0,
        "com": [0.05, -0.02, 0.01],
        "inertia": J,
        "position": [1, 2, 3],
        "euler_deg": [10, 20, 30],
    }
    base.update(body)
    return scene_from_dict(
        {"gravity": [0, 0, 0], "settings": {"dt": 1e-3, "duration": 0.01}, "bodies": [base]}
    )


def test_initial_state_is_the_body_frame_with_com_position():
    scene = _scene()
    with Engine(scene) as eng:
        st = eng.state()
    R = Rotation.from_euler("xyz", [10, 20, 30], degrees=True)
    assert np.allclose(
        st.position[0], np.array([1, 2, 3]) + R.apply([0.05, -0.02, 0.01]), atol=1e-12
    )
    q = st.orientation[0]
    assert (Rotation.from_quat(q).inv() * R).magnitude() < 1e-7


def test_set_state_round_trip():
    scene = _scene(angular_velocity=[0.1, 0.2, 0.3])
    with Engine(scene) as eng:
        st = eng.state()
        R = Rotation.from_rotvec([0.3, -0.2, 0.5])
        moved = type(st)(
            st.position + 1.0, R.as_quat()[None], st.linear_velocity + 2.0, st.angular_velocity
        )
        eng.set_state(moved)
        back = eng.state()
    assert np.allclose(back.position, moved.position, atol=1e-12)
    assert (Rotation.from_quat(back.orientation[0]).inv() * R).magnitude() < 1e-7
    assert np.allclose(back.linear_velocity, moved.linear_velocity)


def test_realized_inertia_reaches_pybullet():
    scene = _scene()
    with Engine(scene) as eng:
        frame = eng.frames[0]
        info = eng.dynamics_info(0)
    assert info["mass"] == 3.0
    assert np.allclose(sorted(info["inertia_diagonal"]), sorted(np.linalg.eigvalsh(J)), rtol=1e-12)
    Rp = Rotation.from_quat(frame.principal).as_matrix()
    assert np.allclose(Rp @ np.diag(frame.moments) @ Rp.T, J, atol=1e-12)


def test_mass_overrides_replace_scene_values():
    scene = _scene()
    over = {"b": {"mass": 5.0, "com": [0, 0, 0], "inertia": np.diag([1.0, 2.0, 2.5])}}
    with Engine(scene, mass_overrides=over) as eng:
        assert eng.frames[0].mass == 5.0
        assert np.allclose(eng.state().position[0], [1, 2, 3], atol=1e-12)


def test_material_values_are_set_on_the_body():
    scene = scene_from_dict(
        {
            "bodies": [
                {
                    "name": "b",
                    "shape": {"type": "sphere", "radius": 0.1},
                    "mass": 1.0,
                    "material": {
                        "friction": 0.3,
                        "rolling_friction": 0.01,
                        "spinning_friction": 0.02,
                        "restitution": 0.5,
                    },
                }
            ]
        }
    )
    with Engine(scene) as eng:
        info = eng.dynamics_info(0)
    assert info["friction"] == pytest.approx(0.3) and info["restitution"] == pytest.approx(0.5)
    assert info["rolling_friction"] == pytest.approx(0.01)
    assert info["spinning_friction"] == pytest.approx(0.02)


def test_rebuild_is_bit_reproducible():
    scene = _scene(angular_velocity=[1.0, 3.0, 0.5], linear_velocity=[0.1, 0, 0])
    scene = scene.with_settings(duration=0.5)
    with Engine(scene) as eng:
        a = run_scene(scene, engine=eng)
        b = run_scene(scene, engine=eng)
    c = run_scene(scene)
    for x in (b, c):
        assert a.position.tobytes() == x.position.tobytes()
        assert a.orientation.tobytes() == x.orientation.tobytes()


def test_contact_arrays_are_contact_rows_as_arrays():
    """``Engine.contact_arrays`` (the reverse stepper's query) holds the same numbers as
    ``contact_rows``, in the same order, filtered by distance the same way."""
    bodies = [
        {"name": "ground", "shape": {"type": "plane"}, "fixed": True},
        {"name": "box", "shape": {"type": "box", "half_extents": [0.1, 0.1, 0.1]}, "mass": 1.0,
         "position": [0.0, 0.0, 0.1]},
        {"name": "ball", "shape": {"type": "sphere", "radius": 0.05}, "mass": 1.0,
         "position": [0.0, 0.0, 0.2495]},
        {"name": "far", "shape": {"type": "sphere", "radius": 0.05}, "mass": 1.0,
         "position": [1.0, 0.0, 0.0502]},
    ]  # fmt: skip
    scene = scene_from_dict(
        {"gravity": [0, 0, -9.81], "settings": {"dt": 1e-3, "duration": 0.01}, "bodies": bodies}
    )
    with Engine(scene, visual=False, plane_as_box=True) as eng:
        eng.detect_collisions()
        for limit in (None, 1e-5, -1e-4, 0.01):
            rows = eng.contact_rows(max_distance=limit)
            arrays = eng.contact_arrays(max_distance=limit)
            assert len(arrays[0]) == len(rows)
            for field, values in zip(arrays, zip(*rows, strict=True), strict=True):
                expected = np.array(values)
                assert field.shape == expected.shape
                assert np.array_equal(field, expected)
        everything = eng.contact_rows()
        assert {frozenset(r[:2]) for r in everything} >= {frozenset((0, 1)), frozenset((1, 2))}
        assert len(eng.contact_rows(max_distance=-1e-4)) < len(everything)


def test_contact_arrays_keep_nan_distances_and_map_ids():
    """The pure conversion: unique ids through the lookup, a NaN distance kept (as
    ``contact_rows`` keeps it), nothing at all as empty arrays of the right shapes."""
    from workbench.sim.points import contact_arrays

    lookup = np.array([-1, 0, -1, 1])
    pts = [
        (0, 1, 3, -1, -1, (0.0, 0.0, 1.0), (0.0, 0.0, 0.9), (0.0, 0.0, 1.0), 0.1, 1.0),
        (0, 3, 1, -1, -1, (1.0, 0.0, 1.0), (1.0, 0.0, 0.9), (0.0, 1.0, 0.0), float("nan"), 1.0),
        (0, 3, 3, -1, -1, (2.0, 0.0, 1.0), (2.0, 0.0, 0.9), (1.0, 0.0, 0.0), -0.2, 1.0),
    ]
    a, b, pa, pb, nb, d = contact_arrays(pts, lookup, max_distance=0.0)
    assert a.tolist() == [1, 1] and b.tolist() == [0, 1]
    assert np.isnan(d[0]) and d[1] == -0.2
    assert pa.tolist() == [[1.0, 0.0, 1.0], [2.0, 0.0, 1.0]]
    assert pb[1].tolist() == [2.0, 0.0, 0.9] and nb[0].tolist() == [0.0, 1.0, 0.0]
    assert len(contact_arrays(pts, lookup)[0]) == 3
    empty = contact_arrays([], lookup)
    assert [e.shape for e in empty] == [(0,), (0,), (0, 3), (0, 3), (0, 3), (0,)]


# ----------------------------------------------------------------------------- placing bodies
@pytest.fixture(scope="module")
def spelling_scene():
    # two bins of 3 × 3 balls ("I" is 5 lit cells × 9 balls = 45 balls with walls and ground)
    return load_scene(SCENES / "spelling_balls.py", {"text": "I", "per_side": 3})


def _read_poses(eng: Engine, bodies) -> np.ndarray:
    return np.array([sum(map(list, eng.read_body(j)[:2]), []) for j in bodies])


def test_set_poses_places_like_set_pose_one_by_one(spelling_scene):
    rng = np.random.default_rng(7)
    with Engine(spelling_scene) as a, Engine(spelling_scene) as b:
        moving = np.array([j for j, f in enumerate(a.frames) if f.mass > 0])
        chosen = rng.permutation(moving)[: len(moving) // 2]
        x = rng.normal(size=(len(chosen), 3))
        q = rng.normal(size=(len(chosen), 4))
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        # columns of a wider array (the detector's (n, 7) rows): not contiguous
        rows = np.concatenate([x, q], axis=1)
        a.set_poses(chosen, rows[:, :3], rows[:, 3:])
        for j, xj, qj in zip(chosen, x, q, strict=True):
            b.set_pose(int(j), xj, qj)
        got, want = _read_poses(a, moving), _read_poses(b, moving)
        assert np.array_equal(got, want)  # to the bit, every body (the others untouched)
        with pytest.raises(ValueError, match="3 bodies, 2 positions"):
            a.set_poses(chosen[:3], x[:2], q[:3])


def test_set_poses_after_rebuild_uses_the_new_ids(spelling_scene):
    with Engine(spelling_scene) as eng:
        j = next(k for k, f in enumerate(eng.frames) if f.mass > 0)
        eng.set_poses([j], [[0.0, 0.0, 5.0]], [[0.0, 0.0, 0.0, 1.0]])
        before = eng._uid_array()
        eng.rebuild()
        # a rebuild makes new PyBullet ids (the same numbers here: one client, reset); the cache
        # must follow the id list, not keep the old array object
        assert eng._uid_array() is not before
        eng.set_poses([j], [[1.0, 2.0, 3.0]], [[0.0, 0.0, 0.0, 1.0]])
        assert eng.read_body(j)[0] == (1.0, 2.0, 3.0)
