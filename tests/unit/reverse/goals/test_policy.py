"""The Markov policy (reverse/goals/policy.py): the choice of separating contacts, goal speeds
within the restitution band, and the policy's goals on separating, pressed and hinted contacts.
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.goals.policy import MarkovPolicy, choose_separating, goal_speed, sample_separation
from reverse.step.dynamics import ContactSet, Goals, tangent_basis
from tests.unit.reverse.goals.test_markov import DT, simple_model

SQUARE = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=float)


UP = np.array([0.0, 0.0, 1.0])


@pytest.mark.parametrize("points", [SQUARE, SQUARE * [2.0, 0.5, 1.0]])
def test_face_to_edge_keeps_two_adjacent_corners(points):
    rng = np.random.default_rng(5)
    kept_pairs = set()
    for _ in range(200):
        sep = choose_separating(points, UP, 2, rng)
        kept = tuple(np.flatnonzero(~sep))
        assert len(kept) == 2 and kept not in ((0, 2), (1, 3))  # never the diagonal
        kept_pairs.add(kept)
    assert len(kept_pairs) == 4  # every edge occurs
    assert choose_separating(points, UP, 0, rng).all()
    assert (~choose_separating(points, UP, 1, rng)).sum() == 1


def test_duplicate_points_separate_together():
    pts = np.vstack([SQUARE, SQUARE[:1] + 1e-5])
    model = simple_model(P=np.array([[1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0.0]]))
    target, sep, speed = sample_separation(model, pts, UP, np.random.default_rng(0))
    assert target == 0 and sep.all() and 0.1 <= speed <= 0.3
    edge = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0.0]])
    for seed in range(20):
        target, sep, _ = sample_separation(
            simple_model(P=edge), pts, UP, np.random.default_rng(seed)
        )
        assert target == 2 and sep[0] == sep[4] and (~sep[:4]).sum() == 2


def test_goal_speed_respects_restitution_band():
    eps = 0.2
    assert goal_speed(3.0, 0.0, eps) == 3.0
    assert goal_speed(3.0, 0.5, eps) < eps
    assert goal_speed(0.01, 0.5, eps) == pytest.approx(0.1)
    assert goal_speed(0.15, 0.5, eps) == 0.15


# ----------------------------------------------------------------------------- policy
def box_contacts(normals=None, restitution=0.5) -> ContactSet:
    k = 4
    n = np.tile(UP, (k, 1)) if normals is None else np.asarray(normals, dtype=float)
    t = tangent_basis(n)
    return ContactSet(
        body_a=np.zeros(k, dtype=int),
        body_b=np.full(k, -1),
        point=SQUARE * 0.2,
        normal=n,
        distance=np.zeros(k),
        friction=np.full(k, 0.5),
        rolling=np.zeros(k),
        spinning=np.zeros(k),
        restitution=np.full(k, restitution),
        tangent=t,
        roll_axis=t.copy(),
    )


def no_hints(contacts, position, velocity):
    k = len(contacts)
    return Goals.zeros(k), np.zeros((k, 3)), np.zeros((k, 3))


def test_policy_sets_normal_goals_on_separating_contacts():
    to_edge = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 1, 0.0]])
    policy = MarkovPolicy(simple_model(P=to_edge), no_hints, np.random.default_rng(1), DT, 0.2)
    goals, _, _ = policy(box_contacts(), np.zeros((1, 3)), np.zeros((1, 6)))
    assert (goals.normal > 0).sum() == 2 and policy.transitions == 1
    assert np.all((goals.normal == 0) | ((goals.normal >= 0.1) & (goals.normal < 0.2)))
    # the same seed gives the same goals
    again = MarkovPolicy(simple_model(P=to_edge), no_hints, np.random.default_rng(1), DT, 0.2)
    np.testing.assert_array_equal(again(box_contacts(), None, None)[0].normal, goals.normal)


def test_policy_leaves_pressed_and_hinted_bodies_alone():
    drop = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0.0]])
    pressed = [UP, UP, -UP, -UP]  # squeezed between two bodies: not free to bounce (§4)
    policy = MarkovPolicy(simple_model(P=drop), no_hints, np.random.default_rng(1), DT, 0.2)
    goals, _, _ = policy(box_contacts(pressed), None, None)
    assert not goals.any()

    def hint(contacts, position, velocity):
        g, a, b = no_hints(contacts, position, velocity)
        g.tangential[0] = [1.0, 0.0, 0.0]
        return g, a, b

    policy = MarkovPolicy(simple_model(P=drop), hint, np.random.default_rng(1), DT, 0.2)
    goals, _, _ = policy(box_contacts(), None, None)
    assert np.all(goals.normal == 0) and policy.transitions == 0
