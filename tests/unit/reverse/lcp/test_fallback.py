"""The fallback ladder (:mod:`reverse.lcp.fallback`) on the equilibrated problem of
:mod:`reverse.lcp.solve`: enumeration finds the first verified complementary basis by increasing
size and counts the principal systems it solved; the ladder's first rung (Lemke on ``M̂ + αI``)
answers a singular problem plain Lemke cannot, an infeasible problem runs every rung and keeps
Lemke's outcome, and enumeration is only tried up to ``ENUMERATION_MAX_N`` rows.
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.lcp import solve
from reverse.lcp.fallback import ENUMERATION_MAX_N, enumerate_bases, run_ladder
from reverse.lcp.solve import VERIFY_RTOL

_NONE = np.zeros(0, dtype=int)


def _problem(M, q):
    return solve._Problem(np.asarray(M, dtype=float), np.asarray(q, dtype=float))


def test_enumeration_finds_the_first_basis_that_verifies():
    # z = 0 fails (w = q has −1), then the size-1 bases: {0} gives z = (0.5, 0), w = (0, 1.5)
    res = enumerate_bases(_problem([[2.0, 1.0], [1.0, 2.0]], [-1.0, 1.0]), VERIFY_RTOL)
    assert res.status == "solved" and res.basis.tolist() == [0]
    np.testing.assert_allclose(res.z, [0.5, 0.0], rtol=1e-15)
    assert res.pivots == 3  # the empty basis and the batch of the two of size 1


def test_enumeration_of_a_nonnegative_q_stops_at_the_empty_basis():
    res = enumerate_bases(_problem(np.eye(3), [1.0, 0.0, 2.0]), VERIFY_RTOL)
    assert res.status == "solved" and res.pivots == 1 and res.basis.size == 0
    assert not res.z.any()


def test_enumeration_of_an_infeasible_problem_fails_with_its_best_candidate():
    # w₁ + w₂ = −2 for every z; the 2 × 2 block is singular and skipped: 1 + 2 systems
    prob = _problem([[1.0, -1.0], [-1.0, 1.0]], [-1.0, -1.0])
    res = enumerate_bases(prob, VERIFY_RTOL)
    assert res.status == "failed" and res.pivots == 3
    assert res.residual > VERIFY_RTOL


def test_the_first_regularized_rung_answers_a_singular_problem():
    # plain Lemke ends on a ray here (test_solve.py::test_degenerate_problem_uses_regularized_rung)
    prob = _problem([[1.0, 0.0], [1.0, 0.0]], [-1.0, -1.0])
    res = run_ladder(prob, "ray", np.zeros(2), _NONE, 3, cap=100, rtol=VERIFY_RTOL)
    assert res.status == "solved" and res.residual <= VERIFY_RTOL
    assert res.fallback.startswith("regularized(alpha=1e-10")
    assert res.pivots > 3  # the plain run's pivots plus the rung's
    assert res.z[0] == pytest.approx(1.0, abs=1e-9)


def test_an_infeasible_problem_runs_every_rung_and_keeps_lemkes_outcome():
    prob = _problem([[1.0, -1.0], [-1.0, 1.0]], [-1.0, -1.0])
    z_last = np.array([0.25, 0.0])
    res = run_ladder(prob, "ray", z_last, np.array([0]), 2, cap=100, rtol=VERIFY_RTOL)
    assert res.status == "ray" and res.basis.tolist() == [0]
    np.testing.assert_array_equal(res.z, z_last)
    rungs = res.fallback.removeprefix("tried ").split(", ")
    assert [r.split("(")[0] for r in rungs] == ["regularized"] * 3 + ["enumeration"]


def test_no_enumeration_past_its_size():
    n = ENUMERATION_MAX_N + 1
    M = np.eye(n)
    M[:2, :2] = [[1.0, -1.0], [-1.0, 1.0]]  # the infeasible pair, and n − 2 trivial rows
    q = np.ones(n)
    q[:2] = -1.0
    res = run_ladder(_problem(M, q), "ray", np.zeros(n), _NONE, 1, cap=50 * n, rtol=VERIFY_RTOL)
    assert res.status == "ray"
    assert res.fallback.startswith("tried regularized") and "enumeration" not in res.fallback
