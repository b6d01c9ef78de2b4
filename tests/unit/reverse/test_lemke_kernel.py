"""The compiled LCP path (:mod:`reverse.lcp.lemke_kernel`) against the numpy reference
(:mod:`reverse.lcp.lemke`): same path, same basis, same answers on the verification sets; its
verification formula; the advanced start from a warm basis; the batched entry point; and the
numpy fallback when numba is missing.

The whole of ``test_lcp.py`` also runs on both engines (its ``engine`` fixture).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from reverse.lcp import solve as lcp
from reverse.lcp.solve import VERIFY_RTOL, LCPError, lcp_residual, solve_lcp, solve_lcp_batch
from tests.lcp_problems import random_contact_lcp

REPO = Path(__file__).resolve().parents[3]


def _p_matrix(rng, n):
    A, S = rng.normal(size=(n, n)), rng.normal(size=(n, n))
    return A @ A.T + 0.1 * np.eye(n) + (S - S.T)  # positive definite, not symmetric: P


def _verification_set():
    """The problem classes of test_lcp.py (P, symmetric PSD, contact) and larger contact LCPs."""
    rng = np.random.default_rng(404)
    for i in range(150):
        n = int(rng.integers(1, 11))
        yield _p_matrix(rng, n), rng.normal(size=n)
        A = rng.normal(size=(n, int(rng.integers(1, n + 1))))
        yield A @ A.T, rng.normal(size=n)
        k = int(rng.integers(1, 3))
        yield random_contact_lcp(rng, k, n_bodies=int(rng.integers(1, 3)), speed=[0.0, 0.5][i % 2])
    for n in (12, 24, 48, 120, 300):
        for s in range(3):
            yield random_contact_lcp(np.random.default_rng(1000 * n + s), n // 6)


def test_compiled_path_matches_the_numpy_reference():
    identical = total = 0
    for M, q in _verification_set():
        ref = solve_lcp(M, q, engine="numpy")
        res = solve_lcp(M, q, engine="compiled")
        assert (res.status, res.fallback, res.pivots) == (ref.status, ref.fallback, ref.pivots)
        np.testing.assert_array_equal(res.basis, ref.basis)
        scale = max(np.abs(ref.z).max(initial=0.0), 1e-300)
        np.testing.assert_allclose(res.z, ref.z, rtol=1e-12, atol=1e-12 * scale)
        np.testing.assert_array_equal(res.w, M @ res.z + q)
        if res.solved:
            assert res.residual <= VERIFY_RTOL
            # equal up to the rounding of w (a few eps: the two sums differ in order)
            assert lcp_residual(M, q, res.z) == pytest.approx(res.residual, rel=1e-6, abs=1e-14)
        total += 1
        identical += np.array_equal(res.z, ref.z)
    # the same arithmetic in the same order except the entering column's sum (a loop here,
    # einsum there) and LAPACK builds: nearly all answers are bit-identical (measured: all)
    assert identical >= 0.9 * total


def test_kernel_residual_is_lcp_residual():
    kernel = pytest.importorskip("reverse.lcp.lemke_kernel")
    rng = np.random.default_rng(5)
    for _ in range(50):
        M, q = random_contact_lcp(rng, int(rng.integers(1, 8)))
        z = solve_lcp(M, q, engine="numpy").z
        d = lcp._equilibrate(M)
        Mh = M * d[:, None] * d[None, :]
        S = max(np.abs(d * q).max(), np.finfo(float).tiny)
        for cand in (z, z + 1e-3 * np.abs(z).max(), z - 1e-6, 1e12 * (z + 1.0), np.zeros_like(z)):
            w = np.empty_like(q)
            got = kernel._residual(M, q, np.abs(Mh), d, S, cand, w)
            assert got == lcp_residual(M, q, cand)
            np.testing.assert_array_equal(w, M @ cand + q)


def test_advanced_start_from_a_nearby_basis():
    rng = np.random.default_rng(17)
    used = fewer = 0
    for _ in range(60):
        n = 30
        M, q = _p_matrix(rng, n), rng.normal(size=n)
        first = solve_lcp(M, q)
        q2 = q + 0.3 * rng.normal(size=n)
        cold = solve_lcp(M, q2)
        res = solve_lcp(M, q2, warm_start=first.basis, advanced_start=True)
        assert res.solved and res.start in ("warm", "advanced")
        # P-matrix: the solution is unique, whichever path found it
        np.testing.assert_allclose(res.z, cold.z, rtol=1e-9, atol=1e-12)
        if res.start == "advanced":
            used += 1
            fewer += res.pivots < cold.pivots
    assert used > 40 and fewer > 0.8 * used
    # default: below ADVANCED_START_MIN_ROWS a warm start that does not verify starts cold
    res = solve_lcp(M, q2, warm_start=np.setdiff1d(np.arange(n), cold.basis))
    assert res.start == "cold" and res.pivots == cold.pivots


def test_advanced_start_on_contact_problems_is_verified():
    # the same contacts with body velocities twice as fast: same M, another feasible q (the
    # generator draws the velocities as speed × the same normal deviates)
    starts, fewer = [], 0
    for seed in range(80):
        k = 2 + seed % 10
        M, q = random_contact_lcp(np.random.default_rng(seed), k, speed=0.5)
        M2, q2 = random_contact_lcp(np.random.default_rng(seed), k, speed=1.0)
        np.testing.assert_array_equal(M, M2)
        first = solve_lcp(M, q)
        res = solve_lcp(M, q2, warm_start=first.basis, advanced_start=True)
        assert res.solved, (res.status, res.fallback)
        assert lcp_residual(M, q2, res.z) <= VERIFY_RTOL
        starts.append(res.start)
        fewer += res.start == "advanced" and res.pivots < solve_lcp(M, q2).pivots
    # measured: 54 warm starts verify, 26 advanced starts, each with fewer pivots than cold
    assert starts.count("warm") + starts.count("advanced") == len(starts)
    assert starts.count("advanced") >= 20 and fewer >= 0.9 * starts.count("advanced")


def test_batch_equals_single_solves():
    rng = np.random.default_rng(9)
    probs = [random_contact_lcp(rng, int(rng.integers(1, 6))) for _ in range(40)]
    probs.append((np.eye(3), np.ones(3)))  # trivial
    probs.append((np.array([[-1.0]]), np.array([-1.0])))  # no solution: the ladder runs
    warm = [None] * len(probs)
    warm[3] = solve_lcp(*probs[3]).basis  # a warm start that verifies
    out = solve_lcp_batch(probs, warm_starts=warm)
    for (M, q), ws, res in zip(probs, warm, out, strict=True):
        one = solve_lcp(M, q, warm_start=ws)
        assert (res.status, res.pivots, res.fallback, res.start) == (
            one.status,
            one.pivots,
            one.fallback,
            one.start,
        )
        np.testing.assert_array_equal(res.basis, one.basis)
        np.testing.assert_array_equal(res.z, one.z)
    assert out[3].start == "warm" and out[-2].start == "trivial" and out[-1].status == "ray"
    assert solve_lcp_batch([]) == []
    with pytest.raises(LCPError, match="finite"):
        solve_lcp_batch([(np.eye(2), np.array([np.inf, -1.0]))])


def test_without_numba_the_numpy_reference_runs(monkeypatch):
    M, q = random_contact_lcp(np.random.default_rng(3), 5)
    ref = solve_lcp(M, q, engine="numpy")
    monkeypatch.setattr(lcp, "_KERNEL", [None])  # as if numba could not be imported
    res = solve_lcp(M, q)
    np.testing.assert_array_equal(res.z, ref.z)
    assert solve_lcp_batch([(M, q)])[0].pivots == ref.pivots
    with pytest.raises(LCPError, match="numba"):
        solve_lcp(M, q, engine="compiled")
    with pytest.raises(LCPError, match="engine"):
        solve_lcp(M, q, engine="fortran")


def test_numba_blocked_in_a_fresh_process_falls_back():
    code = (
        "import sys; sys.modules['numba'] = None\n"
        "import numpy as np\n"
        "from reverse.lcp.solve import solve_lcp\n"
        "r = solve_lcp(np.eye(2), -np.ones(2))\n"
        "print(r.status, r.z.tolist())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["solved", "[1.0,", "1.0]"]


def test_stepper_import_does_not_load_numba():
    code = "import sys, reverse.step.stepper, reverse.lcp.solve; print('numba' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"
