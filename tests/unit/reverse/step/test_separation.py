"""Pushing overlap out of a backward step's configuration (``reverse/step/separation.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from reverse.step.dynamics import ContactSet
from reverse.step.separation import MAX_SWEEPS, SLOP, TOLERANCE, separate_overlaps


def _contacts(a, b, point, normal, distance) -> ContactSet:
    k = len(a)
    normal = np.asarray(normal, dtype=float).reshape(k, 3)
    t = np.tile([1.0, 0.0, 0.0], (k, 1))
    z = np.zeros(k)
    return ContactSet(
        np.asarray(a), np.asarray(b), np.asarray(point, dtype=float).reshape(k, 3), normal,
        np.asarray(distance, dtype=float), z, z, z, z, t, t,
    )  # fmt: skip


def _ball_overlap(x, r=0.02):
    """Sphere–sphere contacts of every overlapping pair of balls at ``x`` (normal B → A)."""
    rows = []
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            d = x[i] - x[j]
            gap = np.linalg.norm(d) - 2 * r
            if gap < 0.01:
                rows.append((i, j, 0.5 * (x[i] + x[j]), d / np.linalg.norm(d), gap))
    a, b, p, n, g = zip(*rows, strict=True)
    return _contacts(a, b, p, n, g)


def test_a_ball_inside_the_ground_is_lifted_to_the_slop_and_the_ground_stays():
    x = np.array([[0.0, 0.0, 0.015]])  # a 2 cm ball 5 mm deep
    c = _contacts([0], [-1], [[0.0, 0.0, -0.005]], [[0.0, 0.0, 1.0]], [-0.005])
    out, moved, sweeps = separate_overlaps(c, x, np.array([1 / 0.03]))
    assert out[0, 2] == pytest.approx(0.015 + 0.005 - SLOP)
    assert moved.distance[0] == pytest.approx(-SLOP)
    assert moved.point[0, 2] == pytest.approx(-0.005 + 0.005 - SLOP)
    assert sweeps == 1
    assert x[0, 2] == 0.015  # the input is not changed


def test_two_balls_share_the_push_by_inverse_mass():
    x = np.array([[0.0, 0.0, 0.0], [0.036, 0.0, 0.0]])  # 4 mm overlap of two 2 cm balls
    c = _contacts([1], [0], [[0.018, 0.0, 0.0]], [[1.0, 0.0, 0.0]], [-0.004])
    out, moved, _ = separate_overlaps(c, x, np.array([1.0, 3.0]))  # body 0 three times heavier
    push = 0.004 - SLOP
    assert out[1, 0] - 0.036 == pytest.approx(0.75 * push)
    assert out[0, 0] == pytest.approx(-0.25 * push)
    assert np.linalg.norm(out[1] - out[0]) - 0.04 == pytest.approx(-SLOP)
    assert moved.point[0, 0] == pytest.approx(0.018 + 0.25 * push)  # the pair's mean push


def test_a_packed_row_between_walls_of_static_bodies_comes_apart_within_the_tolerance():
    # five balls squeezed into a row 6 mm too short between two fixed walls
    r, n = 0.02, 5
    x = np.column_stack([np.linspace(r - 0.0006, 10 * r - 0.0054, n), np.zeros(n), np.zeros(n)])
    inv = np.full(n, 1 / 0.03)
    for _ in range(5):  # as a run does: contacts found again after each push
        balls = _ball_overlap(x, r)
        walls = _contacts(
            [0, n - 1], [-1, -1], [[0.0, 0, 0], [10 * r, 0, 0]], [[1.0, 0, 0], [-1.0, 0, 0]],
            [x[0, 0] - r, 10 * r - x[-1, 0] - r],
        )  # fmt: skip
        both = ContactSet(
            **{k: np.concatenate([getattr(balls, k), getattr(walls, k)]) for k in balls.__dict__}
        )
        x, moved, sweeps = separate_overlaps(both, x, inv)
        assert sweeps <= MAX_SWEEPS
    assert np.all(moved.distance >= -SLOP - TOLERANCE - 1e-9)
    gaps = np.diff(x[:, 0]) - 2 * r
    assert gaps.min() >= -SLOP - 2 * TOLERANCE


def test_nothing_moves_without_overlap_beyond_the_slop_or_for_static_pairs():
    x = np.array([[0.0, 0.0, 0.0199]])
    c = _contacts([0], [-1], [[0.0, 0.0, 0.0]], [[0.0, 0.0, 1.0]], [-0.5 * SLOP])
    out, moved, sweeps = separate_overlaps(c, x, np.array([10.0]))
    assert sweeps == 0 and moved is c and np.array_equal(out, x)
    held = separate_overlaps(
        _contacts([0], [-1], [[0, 0, 0]], [[0, 0, 1.0]], [-0.01]), x, np.zeros(1)
    )
    assert held[2] == 0 and np.array_equal(held[0], x)  # a body that must not move stays
