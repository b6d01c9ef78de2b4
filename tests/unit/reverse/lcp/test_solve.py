"""Lemke solver: peer problems with published answers, Murty's exponential family, ≥ 1000 random
problems cross-checked by enumeration, scale invariance, warm start and the fallback ladder.

Peer answers are Drake's (``solvers/test/unrevised_lemke_solver_test.cc`` and
``moby_lcp_solver_test.cc``, which take them from Floudas et al., Handbook of Test Problems in Local
and Global Optimization, §10.2, and Cottle, Pang & Stone Ex. 4.4.16).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from reverse.lcp import solve as lcp
from reverse.lcp.solve import (
    ENUMERATION_MAX_N,
    VERIFY_RTOL,
    LCPError,
    lcp_residual,
    solve_lcp,
    solve_lcp_enumeration,
)
from tests.lcp_problems import random_contact_lcp

# Drake compares with 5e-14 (absolute) for UnrevisedLemkeSolver; our answers are re-solved from
# the final basis, so the same bound holds.
DRAKE_ATOL = 5e-14


@pytest.fixture(autouse=True, params=["compiled", "numpy"])
def engine(request, monkeypatch):
    """Every test runs on both engines: the numba kernel (``solve_lcp``'s default when numba is
    importable) and the numpy reference (as when numba is missing)."""
    if request.param == "numpy":
        monkeypatch.setattr(lcp, "_KERNEL", [None])
    elif lcp._kernel() is None:
        pytest.skip("numba is not importable")
    return request.param


def _alphas(fallback):
    """The α of every regularized rung named in a ``fallback`` string."""
    return [float(a) for a in re.findall(r"regularized\(alpha=([0-9.e+-]+)\)", fallback)]


def _assert_verified(M, q, res):
    """Solved, verified, and consistent with its basis (z = 0 off J, w_J = 0)."""
    assert res.status == "solved", (res.status, res.fallback)
    assert res.residual <= VERIFY_RTOL
    assert lcp_residual(M, q, res.z) == pytest.approx(res.residual)
    off = np.setdiff1d(np.arange(len(q)), res.basis)
    assert np.all(res.z[off] == 0.0)
    np.testing.assert_allclose(res.w, M @ res.z + q)
    scale = np.abs(M) @ np.abs(res.z) + np.abs(q)  # size of the terms summed into w
    w_J, s_J = np.abs(res.w[res.basis]), scale[res.basis]
    assert np.all(w_J <= 1e-8 * s_J + 1e-14 * scale.max(initial=0.0))


# --- Drake's known-solution cases


def _upper_triangular(n):
    """1 on the diagonal, 2 above (Floudas §10.2.1; Drake's 16 × 16 testProblem1)."""
    return np.eye(n) + np.triu(np.full((n, n), 2.0), 1)


def test_drake_problem1_upper_triangular_16():
    M, q = _upper_triangular(16), -np.ones(16)
    res = solve_lcp(M, q)
    _assert_verified(M, q, res)
    np.testing.assert_allclose(res.z, np.eye(16)[15], atol=DRAKE_ATOL)
    assert res.pivots > 0 and res.fallback == ""


def test_drake_problem3():
    M = np.array([[0.0, -1.0, 2.0], [2.0, 0.0, -2.0], [-1.0, 1.0, 0.0]])
    q = np.array([-3.0, 6.0, -1.0])
    res = solve_lcp(M, q)
    _assert_verified(M, q, res)
    np.testing.assert_allclose(res.z, [0.0, 1.0, 3.0], atol=DRAKE_ATOL)


def test_drake_cycling_problem():
    M = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 2.0], [2.0, 0.0, 1.0]])
    q = -np.ones(3)
    res = solve_lcp(M, q)
    _assert_verified(M, q, res)
    np.testing.assert_allclose(res.z, np.full(3, 1.0 / 3.0), atol=DRAKE_ATOL)


def test_drake_psd_tie_prefers_artificial_variable():
    # Cottle, Pang & Stone Ex. 4.4.16: after z0 enters, z0 and w1 tie in the ratio test; choosing
    # w1 leads to an unblocked column (a ray) although the PSD problem has a solution
    M = np.array([[1.0, -1.0], [-1.0, 1.0]])
    q = np.array([1.0, -1.0])
    res = solve_lcp(M, q, regularize=False)
    _assert_verified(M, q, res)
    np.testing.assert_allclose(res.z, [0.0, 1.0], atol=DRAKE_ATOL)
    assert res.pivots == 2  # z0 in, z2 in (z0 out on the tie)


def test_drake_bimatrix_game_ends_on_ray():
    # Floudas §10.2.4: Lemke (covering vector e) cannot find the game's equilibria; Drake's
    # solvers return failure. Plain Lemke here: a secondary ray after the first pivot.
    M = np.array(
        [
            [0.0, 0.0, 10.0, 20.0],
            [0.0, 0.0, 30.0, 15.0],
            [10.0, 20.0, 0.0, 0.0],
            [30.0, 15.0, 0.0, 0.0],
        ]
    )
    q = -np.ones(4)
    plain = solve_lcp(M, q, regularize=False)
    assert plain.status == "ray" and plain.fallback == ""
    assert plain.residual > VERIFY_RTOL
    # the ladder's regularized rungs fail as well; enumeration finds a (pure) equilibrium
    res = solve_lcp(M, q)
    _assert_verified(M, q, res)
    assert res.fallback == "enumeration"
    np.testing.assert_allclose(res.z, [0.1, 0.0, 0.1, 0.0], atol=1e-15)


def test_drake_problems_2_and_6():
    # §10.2.2, M = ones: (1, 0), (0, 1) and (1/2, 1/2) all solve it. Drake's Lemke returns (1, 0);
    # our lexicographic tie-break on the first pivot (equal q) takes the last row and gives (0, 1).
    M, q = np.ones((2, 2)), -np.ones(2)
    res = solve_lcp(M, q)
    _assert_verified(M, q, res)
    np.testing.assert_allclose(res.z, [0.0, 1.0], atol=DRAKE_ATOL)
    # §10.2.9 (with the (3, 3) entry corrected to 0, as Drake notes)
    M = np.array(
        [[11.0, 0.0, 10.0, -1.0], [0.0, 11.0, 10.0, -1.0], [10.0, 10.0, 21.0, -1.0], [1, 1, 1, 0]]
    )
    for ell in (1.0, 16.0):
        q = np.array([50.0, 50.0, ell, -6.0])
        res = solve_lcp(M, q)
        _assert_verified(M, q, res)
        expected = [(ell + 16) / 13, (ell + 16) / 13, 2 * (23 - ell) / 13, (1286 - 9 * ell) / 13]
        np.testing.assert_allclose(res.z, expected, atol=DRAKE_ATOL * 100)  # entries up to 98
    q = np.array([50.0, 50.0, 100.0, -6.0])
    res = solve_lcp(M, q)
    _assert_verified(M, q, res)
    np.testing.assert_allclose(res.z, [3.0, 3.0, 0.0, 83.0], atol=DRAKE_ATOL * 100)


def test_drake_simple_trivial_empty_and_failure():
    M, q = np.diag(np.arange(1.0, 10.0)), -np.ones(9)
    res = solve_lcp(M, q)
    _assert_verified(M, q, res)
    np.testing.assert_allclose(res.z, 1.0 / np.arange(1.0, 10.0), atol=DRAKE_ATOL)
    # q ≥ 0: z = 0 without pivots
    res = solve_lcp(np.eye(3), np.ones(3))
    assert res.solved and res.pivots == 0 and np.all(res.z == 0.0)
    res = solve_lcp(np.zeros((0, 0)), np.zeros(0))
    assert res.solved and res.z.size == 0
    # -z - 1 >= 0 has no solution with z >= 0
    res = solve_lcp(np.array([[-1.0]]), np.array([-1.0]))
    assert res.status == "ray" and not res.solved
    assert res.fallback.startswith("tried regularized") and res.fallback.endswith("enumeration")


def test_drake_solution_quality():
    # Drake: z = 1 − eps solves M = 1, q = −1 to machine precision (Drake's bound: 3e-16; ours
    # adds the rounding uncertainty of w, one more eps)
    eps = np.finfo(float).eps
    assert lcp_residual(np.eye(1), -np.ones(1), np.array([1.0 - eps])) <= 2 * eps


# --- Murty's exponential family


def _murty(n):
    """Murty (1978): 1 on the diagonal, 2 below; q̃ᵢ = −(2ⁿ + 2ⁿ⁻¹ + … + 2ⁿ⁻ⁱ⁺¹)."""
    M = np.eye(n) + np.tril(np.full((n, n), 2.0), -1)
    q = -np.cumsum(2.0 ** np.arange(n, 0, -1))
    return M, q


def _triangular_lcp(M, q):
    """Exact solution of an LCP with lower-triangular M with positive diagonal (a P-matrix)."""
    z = np.zeros(len(q))
    for i in range(len(q)):
        z[i] = max(0.0, -(q[i] + M[i, :i] @ z[:i]) / M[i, i])
    return z


@pytest.mark.parametrize("n", range(4, 11))
def test_murty_family_takes_two_to_the_n_pivots(n):
    M, q = _murty(n)
    res = solve_lcp(M, q, max_pivots=2**n + 1)
    _assert_verified(M, q, res)
    assert res.pivots == 2**n
    np.testing.assert_allclose(res.z, _triangular_lcp(M, q), rtol=1e-12, atol=1e-12)
    # the degenerate q = −e form (e.g. the murty.m test generator): also 2ⁿ with the
    # lexicographic tie-break on the first pivot, solution e₁
    res = solve_lcp(M, -np.ones(n), max_pivots=2**n + 1)
    assert res.solved and res.pivots == 2**n
    np.testing.assert_allclose(res.z, np.eye(n)[0], atol=1e-12)


def test_murty_mirror_image_is_drake_problem1():
    # the same family with indices reversed is Floudas §10.2.1: the tie on q = −e goes to the last
    # row, whose complement alone solves it — two pivots instead of 2ⁿ
    for n in range(4, 11):
        res = solve_lcp(_upper_triangular(n), -np.ones(n))
        assert res.solved and res.pivots == 2


def test_pivot_cap_stops_murty_and_ladder_recovers():
    M, q = _murty(10)  # needs 1024 pivots, the default cap is 50·10 = 500
    plain = solve_lcp(M, q, regularize=False)
    assert plain.status == "max_pivots" and plain.pivots == 500
    res = solve_lcp(M, q)
    _assert_verified(M, q, res)
    assert res.fallback == "enumeration"
    np.testing.assert_allclose(res.z, _triangular_lcp(M, q), rtol=1e-12, atol=1e-12)


# --- random problems cross-checked against brute-force enumeration

N_RANDOM = 400  # per class; three classes

#: Enumeration answers of the random problems, by problem: the numba and the numpy runs of a test
#: (the ``engine`` fixture) draw the same problems from the same seed, and the enumeration
#: (``reverse.lcp.fallback.enumerate_bases``, plain numpy) does not depend on the engine, so the
#: second run checks against the first's answers instead of enumerating 2^n bases again.
_ENUMERATED: dict = {}


def _enumeration(M, q):
    key = (M.shape, M.tobytes(), q.tobytes())
    if key not in _ENUMERATED:
        _ENUMERATED[key] = solve_lcp_enumeration(M, q)
    return _ENUMERATED[key]


def _p_matrix(rng, n):
    kind = rng.integers(3)
    if kind == 0:  # positive definite, not symmetric
        A, S = rng.normal(size=(n, n)), rng.normal(size=(n, n))
        return A @ A.T + 0.1 * np.eye(n) + (S - S.T)
    if kind == 1:  # permuted triangular with positive diagonal: indefinite but P
        T = np.triu(rng.normal(scale=3.0, size=(n, n)), 1) + np.diag(rng.uniform(0.1, 2.0, n))
        P = np.eye(n)[rng.permutation(n)]
        return P @ T @ P.T
    A = rng.normal(size=(n, n))  # strictly diagonally dominant, positive diagonal
    np.fill_diagonal(A, 0.0)
    return A + np.diag(np.abs(A).sum(axis=1) + rng.uniform(0.1, 1.0, n))


@pytest.mark.slow  # ~4 s
def test_random_p_matrices_match_enumeration():
    rng = np.random.default_rng(101)
    for _ in range(N_RANDOM):
        n = int(rng.integers(1, 11))
        M, q = _p_matrix(rng, n), rng.normal(size=n)
        res, ref = solve_lcp(M, q), _enumeration(M, q)
        _assert_verified(M, q, res)
        assert ref.solved and res.fallback == ""
        # P-matrix: the solution is unique
        np.testing.assert_allclose(res.z, ref.z, rtol=1e-8, atol=1e-10 * np.abs(ref.z).max())


@pytest.mark.slow  # ~4 s
def test_random_symmetric_psd_match_enumeration():
    rng = np.random.default_rng(202)
    n_solved = n_ray = 0
    for i in range(N_RANDOM):
        n = int(rng.integers(1, 11))
        A = rng.normal(size=(n, int(rng.integers(1, n + 1))))  # rank deficient in general
        M = A @ A.T
        if i % 2:  # solvable by construction: complementary z*, w* ≥ 0
            z = np.where(rng.random(n) < 0.5, rng.random(n), 0.0)
            q = np.where(z > 0, 0.0, rng.random(n)) - M @ z
        else:  # random q: feasible or not
            q = rng.normal(size=n)
        res, ref = solve_lcp(M, q), _enumeration(M, q)
        assert res.solved == ref.solved
        if res.solved:
            n_solved += 1
            _assert_verified(M, q, res)
            assert res.fallback == ""
            # symmetric PSD: z may not be unique, w = Mz + q is
            np.testing.assert_allclose(res.w, ref.w, atol=1e-8 * max(1.0, np.abs(q).max()))
        else:  # copositive-plus: a ray certifies infeasibility, and the ladder finds nothing
            n_ray += 1
            assert res.status == "ray" and res.fallback.startswith("tried")
    assert n_solved > N_RANDOM // 2 and n_ray > 20


@pytest.mark.slow  # ~4 s
def test_random_contact_problems_match_enumeration():
    rng = np.random.default_rng(303)
    shapes = [(1, 4), (1, 2), (1, 3), (2, 2), (2, 3)]  # (contacts, friction directions): n ≤ 10
    for i in range(N_RANDOM):
        k, dirs = shapes[i % len(shapes)]
        M, q = random_contact_lcp(
            rng, k, n_directions=dirs, n_bodies=int(rng.integers(1, 3)), speed=[0.0, 0.5][i % 2]
        )
        res, ref = solve_lcp(M, q), _enumeration(M, q)
        # Stewart–Trinkle/Anitescu–Potra LCPs always have a solution (not necessarily unique)
        _assert_verified(M, q, res)
        assert ref.solved and res.fallback == ""


# --- scale, size


def test_tolerances_are_scale_relative():
    M, q = random_contact_lcp(np.random.default_rng(7), 10)
    base = solve_lcp(M, q)
    _assert_verified(M, q, base)
    for sM, sq in ((1e-6, 1.0), (1e6, 1e-3), (1.0, 1e-9), (1e3, 1e8)):
        res = solve_lcp(sM * M, sq * q)
        _assert_verified(sM * M, sq * q, res)
        assert res.pivots == base.pivots  # the same path
        np.testing.assert_allclose(res.z, base.z * sq / sM, rtol=1e-10, atol=1e-12 * sq / sM)


def test_badly_scaled_contact_problems():
    # rows and columns rescaled by factors spanning 1e6 (like bodies of very different mass in one
    # island): the LCP is equivalent (z = D z', w = D⁻¹ w'), and equilibration recovers it
    rng = np.random.default_rng(21)
    for _ in range(20):
        M, q = random_contact_lcp(rng, int(rng.integers(2, 15)))
        D = 10.0 ** rng.uniform(-3.0, 3.0, q.size)
        Ms, qs = D[:, None] * M * D[None, :], D * q
        res = solve_lcp(Ms, qs)
        _assert_verified(Ms, qs, res)
        assert res.fallback == ""


def test_contact_problem_300_rows():
    M, q = random_contact_lcp(np.random.default_rng(300), 50)
    res = solve_lcp(M, q)
    _assert_verified(M, q, res)
    assert res.fallback == "" and res.pivots < 2 * len(q)


# --- warm start


def test_warm_start_on_perturbed_problem():
    rng = np.random.default_rng(11)
    n = 40
    M, q = _p_matrix(rng, n), rng.normal(size=n)
    first = solve_lcp(M, q)
    q2 = q + 1e-6 * rng.normal(size=n)
    cold, warm = solve_lcp(M, q2), solve_lcp(M, q2, warm_start=first.basis)
    _assert_verified(M, q2, warm)
    assert warm.pivots == 0 < cold.pivots
    np.testing.assert_allclose(warm.z, cold.z, rtol=1e-12, atol=1e-14)
    # a contact problem, friction rows and all
    M, q = random_contact_lcp(np.random.default_rng(4), 10)
    first = solve_lcp(M, q)
    q2 = q * (1.0 + 1e-7 * np.random.default_rng(5).normal(size=q.size))
    cold, warm = solve_lcp(M, q2), solve_lcp(M, q2, warm_start=first.basis)
    _assert_verified(M, q2, warm)
    assert warm.pivots == 0 < cold.pivots
    np.testing.assert_allclose(warm.z, cold.z, rtol=1e-12, atol=1e-14 * np.abs(cold.z).max())


def test_warm_start_that_does_not_fit_falls_back_to_cold_start():
    rng = np.random.default_rng(12)
    M, q = _p_matrix(rng, 8), rng.normal(size=8)
    cold = solve_lcp(M, q)
    wrong = np.setdiff1d(np.arange(8), cold.basis)  # the complement of the right basis
    for ws in (wrong, np.zeros(8, dtype=bool), np.ones(8, dtype=bool)):
        res = solve_lcp(M, q, warm_start=ws)
        _assert_verified(M, q, res)
        assert res.pivots == cold.pivots
        np.testing.assert_allclose(res.z, cold.z)
    mask = np.isin(np.arange(8), cold.basis)  # a boolean mask works as well as indices
    assert solve_lcp(M, q, warm_start=mask).pivots == 0


# --- fallback ladder


def test_degenerate_problem_uses_regularized_rung():
    # singular M (second column zero) and tied q: the first pivot's tie goes (lexicographically)
    # to row 2, whose complement z₂ has a zero column, so plain Lemke ends on a ray although
    # z = (1, t) solves the problem for any t ≥ 0. M + αI is a P-matrix; its answer verifies.
    M = np.array([[1.0, 0.0], [1.0, 0.0]])
    q = np.array([-1.0, -1.0])
    plain = solve_lcp(M, q, regularize=False)
    assert plain.status == "ray" and plain.fallback == ""
    res = solve_lcp(M, q)
    _assert_verified(M, q, res)
    assert res.fallback.startswith("regularized")  # the first rung: α ≈ 1e-10·max|M̂|
    assert _alphas(res.fallback) == [pytest.approx(1e-10, rel=0.1)]
    assert res.z[0] == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(res.w, 0.0, atol=1e-9)


def test_infeasible_problem_is_reported_not_solved():
    # w₁ + w₂ = −2 for every z: no solution. PSD, so Lemke's ray is a certificate; every rung of
    # the ladder runs and none verifies (in particular not the huge z of M + αI)
    M = np.array([[1.0, -1.0], [-1.0, 1.0]])
    q = np.array([-1.0, -1.0])
    res = solve_lcp(M, q)
    assert res.status == "ray" and res.residual > VERIFY_RTOL
    assert res.fallback.startswith("tried regularized") and res.fallback.endswith("enumeration")
    np.testing.assert_allclose(_alphas(res.fallback), [1e-10, 1e-8, 1e-6], rtol=0.1)


def test_unverified_answer_is_never_labelled_solved(monkeypatch):
    # a Lemke run that claims a wrong solution (simulated): caught by the verification. Python
    # cannot intercept the compiled path's plain Lemke run, so this runs on the numpy engine;
    # the compiled verification is test_lemke_kernel.py::test_kernel_residual_is_lcp_residual
    monkeypatch.setattr(lcp, "_KERNEL", [None])
    M, q = random_contact_lcp(np.random.default_rng(8), 3)
    true_lemke = lcp._Problem.lemke
    calls = []

    def lying_lemke(self, cap, alpha=0.0):
        calls.append(alpha)
        status, z, basis, pivots = true_lemke(self, cap, alpha)
        if len(calls) == 1:  # the first (plain) run only: a wrong z and a wrong basis
            return "solved", z + 1.0, np.zeros(0, dtype=int), pivots
        return status, z, basis, pivots

    monkeypatch.setattr(lcp._Problem, "lemke", lying_lemke)
    plain = solve_lcp(M, q, regularize=False)
    assert plain.status == "failed" and plain.residual > VERIFY_RTOL
    calls.clear()
    res = solve_lcp(M, q)
    _assert_verified(M, q, res)
    assert res.fallback.startswith("regularized") and calls[1] > 0.0


# --- inputs


def test_input_errors():
    with pytest.raises(LCPError, match="square"):
        solve_lcp(np.eye(3), np.ones(2))
    with pytest.raises(LCPError, match="finite"):
        solve_lcp(np.eye(2), np.array([np.nan, 1.0]))
    with pytest.raises(LCPError, match="warm_start"):
        solve_lcp(np.eye(2), -np.ones(2), warm_start=[5])
    n = ENUMERATION_MAX_N + 1
    with pytest.raises(LCPError, match="enumeration"):
        solve_lcp_enumeration(np.eye(n), -np.ones(n))
