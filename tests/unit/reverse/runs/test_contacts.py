"""The contact query's placing of bodies (issue 17, the 3875-ball run's contact phase).

``ContactDetector`` keeps the moving bodies' poses as (n, 7) rows and places only the rows
that changed. Both must leave PyBullet exactly as placing every body one by one does: the
detector's output is compared to the bit with a detector that places every moving body at every
query (PyBullet's detection depends on the poses alone, but its persistent manifolds carry
points from one query to the next, so the whole sequence of queries is compared).

Contact persistence (``persist``): a block raised by less than the touch tolerance keeps its
corners, by more none; a fresh detection keeps nothing (the runs it changes:
tests/integration/test_contact_persistence.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.runs.contacts import TOUCH_TOLERANCE, ContactDetector
from tests.conftest import SCENES
from workbench.scene.loader import load_scene

SPELLING = SCENES / "spelling_balls.py"


@pytest.fixture(scope="module")
def scene():
    # two bins of 3 × 3 balls ("I" is 5 lit cells × 9 balls = 45 balls with walls and ground)
    return load_scene(SPELLING, {"text": "I", "per_side": 3})


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


BLOCK = SCENES / "markov_block.yaml"


def test_a_lifted_block_keeps_its_corners_within_the_tolerance_only():
    """Detector level: a block resting on the ground (4 corners), then raised by 0.2 µm —
    PyBullet reports nothing — keeps its 4 corners at that gap; raised by twice the touch
    tolerance it keeps none; a fresh detection keeps nothing; without persistence nothing."""
    scene = load_scene(BLOCK)
    for persist in (False, True):
        with ContactDetector(scene, persist=persist) as det:
            state = det.engine.state()
            x, q = state.position.copy(), state.orientation
            rest = det.fresh(x, q)
            assert len(rest) == 4
            up = x.copy()
            up[1, 2] += 2e-7
            lifted = det(up, q)
            if persist:
                assert len(lifted) == 4
                np.testing.assert_allclose(lifted.distance, 2e-7 + rest.distance, atol=1e-12)
                np.testing.assert_allclose(lifted.normal, rest.normal, atol=1e-12)
            else:
                assert len(lifted) == 0
            assert len(det.fresh(up, q)) == 0  # an isolated query: nothing from before
            det(x, q)
            far = x.copy()
            far[1, 2] += 2 * TOUCH_TOLERANCE
            assert len(det(far, q)) == 0
