"""The pure numerics of forward verification (:mod:`reverse.runs.verify`), without PyBullet: the
pose residual and the refinement's score, its settings and seeded draws, the gravity correction
(a turn about ``up`` and a shift across it, the swing left alone), and the refinement's offsets
(a candidate state and its offset are inverses; clipping keeps offsets in the neighbourhood).
The forward runs themselves: tests/integration/test_reverse_verify.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from reverse.runs import verify
from reverse.runs.sampling import variation_rng
from reverse.runs.verify import (
    NOT_AT_REST_PENALTY,
    gravity_correction,
    pose_residual,
    score,
    verify_rng,
    verify_settings,
)
from workbench.sim.state import State

UP = np.array([0.0, 0.0, 1.0])


def test_pose_residual_is_the_largest_distance_and_angle_over_bodies():
    q0 = Rotation.identity(2).as_quat()
    turned = (Rotation.from_rotvec([[0.0, 0.0, 0.3], [0.1, 0.0, 0.0]])).as_quat()
    dp, da = pose_residual([[3.0, 4.0, 0.0], [0.0, 0.0, 1.0]], turned, np.zeros((2, 3)), q0)
    assert dp == pytest.approx(5.0, rel=1e-15) and da == pytest.approx(0.3, rel=1e-12)
    assert pose_residual(np.ones((2, 3)), q0, np.ones((2, 3)), q0) == (0.0, 0.0)


def test_score_is_the_worse_ratio_to_the_tolerance_plus_the_rest_penalty():
    tol = (0.01, 0.1)
    assert score(0.005, 0.0, True, tol) == pytest.approx(0.5)
    assert score(0.005, 0.2, True, tol) == pytest.approx(2.0)
    assert score(0.005, 0.0, False, tol) == pytest.approx(0.5 + NOT_AT_REST_PENALTY)


def test_settings_take_a_whole_budget_of_at_least_one():
    s = verify_settings(budget=7.0, tolerance=[0.02, 0.1])
    assert s == {"budget": 7, "tolerance": (0.02, 0.1), "radius": verify.DEFAULT_RADIUS}
    assert isinstance(s["budget"], int)
    for bad in (0, -3, 2.5):
        with pytest.raises(ValueError, match="--verify-budget: expected a whole number"):
            verify_settings(budget=bad)


def test_refinement_draws_are_seeded_per_run_and_apart_from_the_variations():
    a = verify_rng(3, 1).random(5)
    np.testing.assert_array_equal(a, verify_rng(3, 1).random(5))
    assert not np.array_equal(a, verify_rng(3, 2).random(5))
    assert not np.array_equal(a, variation_rng(3, 1).random(5))


def test_gravity_correction_carries_a_turned_and_shifted_pose_onto_the_target():
    reached_p = np.array([0.2, -0.1, 0.05])
    reached_q = Rotation.from_rotvec([0.4, -0.2, 1.0]).as_quat()
    twist = Rotation.from_rotvec(0.7 * UP)
    target_q = (twist * Rotation.from_quat(reached_q)).as_quat()
    target_p = reached_p + [0.1, -0.2, 0.3]
    turn, centre, shift = gravity_correction(reached_p, reached_q, target_p, target_q, UP)
    np.testing.assert_allclose(turn.as_rotvec(), 0.7 * UP, atol=1e-12)
    np.testing.assert_array_equal(centre, reached_p)
    np.testing.assert_allclose(shift, [0.1, -0.2, 0.0], atol=1e-15)  # nothing along up
    # a swing (a tilt about a horizontal axis) is no turn about up: left alone
    tilted = (Rotation.from_rotvec([0.3, 0.0, 0.0]) * Rotation.from_quat(reached_q)).as_quat()
    turn, _, shift = gravity_correction(reached_p, reached_q, reached_p, tilted, UP)
    assert turn.magnitude() == pytest.approx(0.0, abs=1e-12)
    assert not shift.any()


def _base(n=3) -> State:
    rng = np.random.default_rng(0)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return State(rng.normal(size=(n, 3)), q, rng.normal(size=(n, 3)), rng.normal(size=(n, 3)))


def test_a_candidates_offset_is_the_offset_it_was_made_from():
    base, moving = _base(), [0, 2]
    scales = np.tile(np.repeat([0.01, 0.05, 0.1, 0.5], 3), len(moving))
    z = np.random.default_rng(1).normal(size=12 * len(moving))
    cand = verify._candidate(base, moving, z, scales)
    np.testing.assert_allclose(verify._offset(base, cand, moving, scales), z, atol=1e-9)
    for field in ("position", "orientation", "linear_velocity", "angular_velocity"):
        np.testing.assert_array_equal(getattr(cand, field)[1], getattr(base, field)[1])  # held


def test_clipping_shrinks_offsets_into_the_neighbourhood():
    radius = (0.2, 0.5)
    scales = np.ones(24)
    z = np.zeros(24)
    z[0:3] = [0.6, 0.0, 0.0]  # body 0: three times the position radius
    z[15:18] = [0.0, 0.1, 0.0]  # body 1's rotation offset, inside
    z[18:21] = [7.0, 7.0, 7.0]  # body 1's velocity change: not a pose, never clipped
    assert not verify._inside(z, scales, 2, radius)
    c = verify._clip(z, scales, 2, radius)
    np.testing.assert_allclose(c[0:3], [0.2, 0.0, 0.0], rtol=1e-15)
    np.testing.assert_array_equal(c[3:], z[3:])
    assert verify._inside(c, scales, 2, radius)
