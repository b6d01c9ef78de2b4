"""The contact query's placing of bodies (issue 17, the 3875-ball run's contact phase).

``Engine.set_poses`` maps body indices to PyBullet ids as an array and resets them in one C-level
loop; ``ContactDetector`` keeps the moving bodies' poses as (n, 7) rows and places only the rows
that changed. Both must leave PyBullet exactly as placing every body one by one does: the
detector's output is compared to the bit with a detector that places every moving body at every
query (PyBullet's detection depends on the poses alone, but its persistent manifolds carry
points from one query to the next, so the whole sequence of queries is compared).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reverse.runs.contacts import ContactDetector
from workbench.scene.loader import load_scene
from workbench.sim.engine import Engine

REPO = Path(__file__).resolve().parents[1]
SPELLING = REPO / "scenes" / "spelling_balls.py"


@pytest.fixture(scope="module")
def scene():
    # two bins of 3 × 3 balls ("I" is 5 lit cells × 9 balls = 45 balls with walls and ground)
    return load_scene(SPELLING, {"text": "I", "per_side": 3})


def _read_poses(eng: Engine, bodies) -> np.ndarray:
    return np.array([sum(map(list, eng.read_body(j)[:2]), []) for j in bodies])


def test_set_poses_places_like_set_pose_one_by_one(scene):
    rng = np.random.default_rng(7)
    with Engine(scene) as a, Engine(scene) as b:
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


def test_set_poses_after_rebuild_uses_the_new_ids(scene):
    with Engine(scene) as eng:
        j = next(k for k, f in enumerate(eng.frames) if f.mass > 0)
        eng.set_poses([j], [[0.0, 0.0, 5.0]], [[0.0, 0.0, 0.0, 1.0]])
        before = eng._uid_array()
        eng.rebuild()
        # a rebuild makes new PyBullet ids (the same numbers here: one client, reset); the cache
        # must follow the id list, not keep the old array object
        assert eng._uid_array() is not before
        eng.set_poses([j], [[1.0, 2.0, 3.0]], [[0.0, 0.0, 0.0, 1.0]])
        assert eng.read_body(j)[0] == (1.0, 2.0, 3.0)


def _contacts_equal(c1, c2) -> bool:
    d1, d2 = c1.__dict__, c2.__dict__
    return d1.keys() == d2.keys() and all(
        d1[k].dtype == d2[k].dtype and np.array_equal(d1[k], d2[k]) for k in d1
    )


def test_skipping_unmoved_bodies_changes_no_bit(scene):
    """A run of queries where most balls keep their pose (sleeping bodies) and the others move
    and spin: the detector placing only the changed rows reports exactly what a detector placing
    every moving body at every query reports, and resets exactly the changed bodies."""
    rng = np.random.default_rng(3)
    with (
        ContactDetector(scene, rng=np.random.default_rng(1)) as det,
        ContactDetector(scene, rng=np.random.default_rng(1)) as ref,
    ):
        state = det.engine.state()
        x, q = state.position.copy(), state.orientation.copy()
        moving = det.moving
        placed_bodies = []
        real_set_poses = det.engine.set_poses

        def spy(bodies, positions, quats):
            placed_bodies.append(np.asarray(bodies).copy())
            real_set_poses(bodies, positions, quats)

        det.engine.set_poses = spy
        n_contacts = []
        for k in range(12):
            if k:
                move = moving[rng.random(len(moving)) < 0.3]
                shift = move[: len(move) // 2]  # the others only turn
                x[shift] += rng.normal(scale=2e-3, size=(len(shift), 3))
                dq = np.concatenate([rng.normal(scale=0.05, size=(len(move), 3)),
                                     np.ones((len(move), 1))], axis=1)  # fmt: skip
                q[move] = dq / np.linalg.norm(dq, axis=1, keepdims=True)
            else:
                move = moving
            ref._placed = None  # the reference places every moving body
            got, want = det(x, q), ref(x, q)
            assert _contacts_equal(got, want), k
            assert np.array_equal(np.sort(placed_bodies[-1]), np.sort(move)), k
            n_contacts.append(len(got))
        assert min(n_contacts) > 0  # balls on the ground and against each other: contacts exist
        # every query's parts were timed (the benchmarks' split of the contact phase)
        assert set(det.timing) == {"place", "detect", "read", "post"}
        assert all(v > 0 for v in det.timing.values())
        # a query at the same configuration places nothing (and finds the same contacts)
        n_calls = len(placed_bodies)
        again = det(x, q)
        ref._placed = None
        assert _contacts_equal(again, ref(x, q))
        assert len(placed_bodies) == n_calls
