"""The shared bound check of every run (issue 39, case 2/3): a state is a motion when it is
finite, within the README's 1e15 m and of unit quaternions; ``first_state_problem`` names the
first record that is not. New in issue 39 (today's code had it private in the forward run)."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.sim.state import (
    MAX_COORDINATE,
    State,
    Trajectory,
    first_state_problem,
    state_in_bounds,
)


def trajectory(n: int = 4) -> Trajectory:
    q = np.zeros((n, 1, 4))
    q[..., 3] = 1.0
    z = np.zeros((n, 1, 3))
    return Trajectory(
        time=np.arange(n) * 0.1,
        body_names=("ball",),
        position=z.copy(),
        orientation=q,
        linear_velocity=z.copy(),
        angular_velocity=z.copy(),
    )


def test_a_finite_bounded_trajectory_has_no_problem():
    assert first_state_problem(trajectory()) is None


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("position", 2 * MAX_COORDINATE, "beyond 1e+15 m"),
        ("position", -1e29, "beyond 1e+15 m"),
        ("position", np.nan, "non-finite"),
        ("linear_velocity", np.inf, "non-finite"),
        ("orientation", 0.0, "degenerate orientation"),
    ],
)
def test_the_first_record_beyond_the_bound_is_named(field, value, words):
    traj = trajectory()
    getattr(traj, field)[2, 0, :] = value
    k, what = first_state_problem(traj)
    assert k == 2
    assert words in what and "'ball'" in what and "t = 0.2 s" in what
    assert not state_in_bounds(traj.state(2))
    assert state_in_bounds(traj.state(1))


def test_a_state_of_minus_1e29_m_is_out_of_bounds():
    """Issue 39 case 3's reverse run ended ``ok`` at -1e29 m: this is the check it calls."""
    q = np.array([[0.0, 0.0, 0.0, 1.0]])
    z = np.zeros((1, 3))
    assert not state_in_bounds(State(np.array([[-1e29, 0.0, 0.0]]), q, z, z))
