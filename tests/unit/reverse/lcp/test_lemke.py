"""The numpy reference Lemke (:func:`reverse.lcp.lemke.lemke_path`) on normalized problems
(``max|M| = max|q| = 1``), without the verification and fallback of
:func:`reverse.lcp.solve.solve_lcp`: the pivots and basis of small problems worked by hand, the
ray of a problem without a solution, the pivot cap, and Murty's family (2ⁿ pivots, past
:data:`~reverse.lcp.lemke.REFACTOR_MIN`, so the path's refactorizations run) to its exact answer.
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.lcp.lemke import REFACTOR_MIN, lemke_path
from tests.unit.reverse.lcp.test_solve import _murty, _triangular_lcp


def _normalized(M, q):
    return M / np.abs(M).max(), q / np.abs(q).max()


def test_two_pivots_to_a_one_row_basis():
    # z = (1, 0) solves it: w = (0, 0.3). Lemke: the artificial z0 enters and w_0 (the most
    # negative q) leaves; then w_0's complement z_0 enters and z0 leaves: two pivots, basis {0}
    M = np.array([[1.0, 0.5], [0.5, 1.0]])
    q = np.array([-1.0, -0.2])
    status, z, basis, pivots = lemke_path(M, q, cap=10)
    assert status == "solved" and pivots == 2
    assert basis.tolist() == [0]
    np.testing.assert_allclose(z, [1.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(M @ z + q, [0.0, 0.3], atol=1e-15)


def test_interior_answer_has_every_z_basic():
    # M positive definite, M⁻¹(−q) > 0: the answer is interior, w = 0
    M = np.array([[1.0, 0.5], [0.5, 1.0]])
    q = np.array([-1.0, -0.8])
    status, z, basis, _ = lemke_path(M, q, cap=10)
    assert status == "solved" and basis.tolist() == [0, 1]
    np.testing.assert_allclose(z, np.linalg.solve(M, -q), rtol=1e-14)


def test_no_solution_ends_on_a_ray():
    status, _, _, pivots = lemke_path(np.array([[-1.0]]), np.array([-1.0]), cap=10)
    assert status == "ray" and pivots == 1


def test_the_cap_stops_the_path():
    M, q = _normalized(*_murty(5))  # 32 pivots
    status, _, _, pivots = lemke_path(M, q, cap=7)
    assert status == "max_pivots" and pivots == 7


@pytest.mark.parametrize("n", [3, 6, 8])
def test_murty_family_takes_two_to_the_n_pivots_to_its_exact_answer(n):
    M, q = _murty(n)
    Mn, qn = _normalized(M, q)
    status, z, basis, pivots = lemke_path(Mn, qn, cap=2**n + 1)
    assert status == "solved" and pivots == 2**n
    assert (pivots > REFACTOR_MIN) == (n == 8)  # n = 8: the path refactors its basis twice
    # a uniform scaling: z of the normalized problem is z of the original times max|M|/max|q|
    exact = _triangular_lcp(M, q) * np.abs(M).max() / np.abs(q).max()
    np.testing.assert_allclose(z, exact, rtol=1e-12, atol=1e-12)
    assert basis.tolist() == np.flatnonzero(exact).tolist()
