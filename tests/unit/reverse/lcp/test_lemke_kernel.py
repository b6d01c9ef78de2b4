"""The compiled LCP path (:mod:`reverse.lcp.lemke_kernel`) against the numpy reference
(:mod:`reverse.lcp.lemke`): same path, same basis, same answers on the verification sets; its
verification formula; the advanced start from a warm basis; the batched entry points; and the
numpy fallback when numba is missing. The whole of ``test_solve.py`` also runs on both engines
(its ``engine`` fixture).

The blocked path (``block > 0``: the rank-1 updates of ``B⁻¹`` delayed and applied as one matrix
product), used by :func:`reverse.lcp.solve.solve_lcp` from
:data:`reverse.lcp.solve.BLOCKED_MIN_ROWS` rows, takes the same pivots to the same basis as the
dense path, for block sizes that flush every pivot, every few pivots and rarely, cold and advanced
starts, with its refactorizations; the sparse equilibration gives the dense one's bits; and the
flat-array batch entry (:func:`reverse.lcp.solve.solve_lcp_arrays`, issue 17: the islands of a step
solved in one compiled call) gives one :func:`~reverse.lcp.solve.solve_lcp` per problem, bit for
bit, warm and cold.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from reverse.lcp import solve as lcp
from reverse.lcp.solve import (
    VERIFY_RTOL,
    LCPError,
    lcp_residual,
    solve_lcp,
    solve_lcp_arrays,
    solve_lcp_batch,
)
from tests.conftest import REPO, cli_env
from tests.lcp_problems import random_contact_lcp

try:
    import reverse.lcp.lemke_kernel as K
except ImportError:  # numba missing: the tests of the compiled path are skipped
    K = None

needs_kernel = pytest.mark.skipif(K is None, reason="numba is not importable")

_NONE = np.zeros(0, dtype=np.int64)


def _p_matrix(rng, n):
    A, S = rng.normal(size=(n, n)), rng.normal(size=(n, n))
    return A @ A.T + 0.1 * np.eye(n) + (S - S.T)  # positive definite, not symmetric: P


def _verification_set():
    """The problem classes of test_solve.py (P, symmetric PSD, contact) and larger contact LCPs."""
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


def _scaled(M, q):
    """The normalized equilibrated problem that :func:`reverse.lcp.solve.solve_lcp` hands to
    Lemke."""
    prob = lcp._Problem(M, q)
    sM, sq = np.abs(prob.Mh).max(), np.abs(prob.qh).max()
    return prob, prob.Mh / sM, prob.qh / sq


@needs_kernel
@pytest.mark.parametrize("rows", [24, 120, 300])
def test_blocked_path_takes_the_dense_path(rows):
    for seed in range(3):
        M, q = random_contact_lcp(np.random.default_rng(1000 * rows + seed), rows // 6)
        prob, Ms, qs = _scaled(M, q)
        cap = lcp.DEFAULT_PIVOTS_PER_ROW * q.size
        dense = K.lemke_path(Ms, qs, cap, _NONE, 0)
        assert dense[0] == K.SOLVED
        for block in (1, 3, 64):  # flush every pivot, every few, and (here) almost never
            st, z, basis, pivots = K.lemke_path(Ms, qs, cap, _NONE, block)
            assert (st, pivots) == (dense[0], dense[3])
            np.testing.assert_array_equal(basis, dense[2])
            # the tableau's values: the same quantities, rounded in another order (measured
            # ≤ 3e-12 of max|z| here, ≤ 1e-10 at 600 rows); the answer is re-solved from the
            # basis, hence bit-identical whenever the basis is
            scale = np.abs(dense[1]).max()
            np.testing.assert_allclose(z, dense[1], rtol=0, atol=1e-9 * scale)
            assert prob.residual(prob.principal(basis)) <= VERIFY_RTOL


@needs_kernel
def test_blocked_advanced_start_takes_the_dense_path():
    # a warm basis from the same contacts at twice the speed (as test_lemke_kernel.py)
    checked = 0
    for seed in range(20):
        M, q = random_contact_lcp(np.random.default_rng(seed), 12 + seed % 8, speed=0.5)
        _, q2 = random_contact_lcp(np.random.default_rng(seed), 12 + seed % 8, speed=1.0)
        J0 = solve_lcp(M, q).basis.astype(np.int64)
        if J0.size == 0:
            continue
        _, Ms, qs = _scaled(M, q2)
        cap = q2.size
        dense = K.lemke_path(Ms, qs, cap, J0, 0)
        for block in (1, 4):
            got = K.lemke_path(Ms, qs, cap, J0, block)
            assert (got[0], got[3]) == (dense[0], dense[3])
            np.testing.assert_array_equal(got[2], dense[2])
        checked += dense[3] > 1
    assert checked >= 5  # enough paths of more than the first pivot


@needs_kernel
def test_solve_lcp_takes_the_blocked_path_from_the_threshold(monkeypatch):
    M, q = random_contact_lcp(np.random.default_rng(300_001), 49)  # 294 rows: below the threshold
    dense = solve_lcp(M, q)
    ref = solve_lcp(M, q, engine="numpy")
    assert q.size < lcp.BLOCKED_MIN_ROWS and lcp._block(q.size) == 0
    # issue 38: islands under ADVANCED_START_MIN_ROWS (300) rows keep the dense path, whose
    # answers are the reference's bit for bit; from there any verified answer may be returned
    assert lcp._block(lcp.ADVANCED_START_MIN_ROWS - 1) == 0
    assert lcp._block(lcp.ADVANCED_START_MIN_ROWS) == lcp.UPDATE_BLOCK
    calls = []
    real = K.lemke_path

    def spy(Ms, qs, cap, J0, block):
        calls.append(block)
        return real(Ms, qs, cap, J0, block)

    monkeypatch.setattr(lcp, "BLOCKED_MIN_ROWS", q.size)
    assert lcp._block(q.size) == lcp.UPDATE_BLOCK
    monkeypatch.setattr(K, "lemke_path", spy)  # the ladder's Python-side calls
    blocked = solve_lcp(M, q)
    assert blocked.solved and blocked.start == "cold"
    assert (blocked.pivots, blocked.start) == (dense.pivots, dense.start)
    np.testing.assert_array_equal(blocked.basis, ref.basis)
    # same basis: the re-solved answer is the same to the bit
    np.testing.assert_array_equal(blocked.z, dense.z)
    # the regularized rung of the ladder runs blocked too
    prob = lcp._Problem(M, q, K)
    status, _, _, _ = prob.lemke(lcp.DEFAULT_PIVOTS_PER_ROW * q.size, alpha=1e-10)
    assert status == "solved" and calls == [lcp.UPDATE_BLOCK]


def _tableau_state(Ms, J):
    """The compiled path's bookkeeping for the complementary basis ``J`` (basic ``z_J``, the
    other ``w``), as :func:`reverse.lcp.lemke_kernel.lemke_path` holds it."""
    n = Ms.shape[0]
    basic = np.arange(n, dtype=np.int64)
    basic[J] = n + J
    wpos = np.arange(n, dtype=np.int64)
    wpos[J] = -1
    kcols = np.zeros(n, dtype=np.int64)
    kcols[: J.size] = J
    return np.ascontiguousarray(Ms.T), basic, kcols, wpos


@needs_kernel
@pytest.mark.parametrize("seed", [0, 1])
def test_refactor_over_the_basic_w_rows_is_bit_identical(seed):
    M, q = random_contact_lcp(np.random.default_rng(40_000 + seed), 50)  # 300 rows
    J = solve_lcp(M, q).basis.astype(np.int64)
    assert 0 < J.size < q.size
    prob = lcp._Problem(M, q)
    Ms, qs = prob.Mh / np.abs(prob.Mh).max(), prob.qh / np.abs(prob.qh).max()
    n, m = q.size, J.size
    Mt, basic, kcols, wpos = _tableau_state(Ms, J)
    out = []
    for rows_only in (False, True):
        Wt, x = np.full((n, n), np.nan), np.full(n, np.nan)
        assert K._refactor(n, m, Mt, np.ones(n), qs, basic, kcols, wpos, Wt, x, rows_only)
        out.append((Wt[:m], x))
    # every stored entry written, and the same dgemm dot products: equal to the bit
    assert np.all(np.isfinite(out[0][0])) and np.all(np.isfinite(out[0][1]))
    np.testing.assert_array_equal(out[1][0], out[0][0])
    np.testing.assert_array_equal(out[1][1], out[0][1])


@needs_kernel
@pytest.mark.parametrize("n", [8, 9])
def test_blocked_path_with_refactors_takes_the_dense_path(n):
    # Murty's family: 2ⁿ pivots, so the tableau is refactored every REFACTOR_MIN = 100 of them
    M = np.eye(n) + np.tril(np.full((n, n), 2.0), -1)
    q = -np.cumsum(2.0 ** np.arange(n, 0, -1))
    prob = lcp._Problem(M, q)
    Ms, qs = prob.Mh / np.abs(prob.Mh).max(), prob.qh / np.abs(prob.qh).max()
    dense = K.lemke_path(Ms, qs, 2**n + 1, _NONE, 0)
    assert dense[0] == K.SOLVED and dense[3] == 2**n
    for block in (1, 7, 64):
        got = K.lemke_path(Ms, qs, 2**n + 1, _NONE, block)
        assert (got[0], got[3]) == (dense[0], dense[3])
        np.testing.assert_array_equal(got[2], dense[2])
        # tableau values rounded in another order; the answer is re-solved from the basis
        np.testing.assert_allclose(got[1], dense[1], rtol=0, atol=1e-9 * np.abs(dense[1]).max())


@needs_kernel
def test_sparse_equilibration_is_bit_identical():
    # the blocked path's equilibration skips the zeros of M: the same d to the bit, also with
    # rows rescaled over twelve decades and an all-zero row and column
    rng = np.random.default_rng(7)
    for s in range(40):
        M, _ = random_contact_lcp(np.random.default_rng(500 + s), 2 + s % 30)
        M = M * np.exp(rng.uniform(-14.0, 14.0, M.shape[0]))[:, None]
        if s % 5 == 0:
            M[0, :] = 0.0
            M[:, 0] = 0.0
        d = K._equilibrate_sparse(M, lcp._RUIZ_SWEEPS)
        np.testing.assert_array_equal(d, K._equilibrate(M, lcp._RUIZ_SWEEPS))
        np.testing.assert_array_equal(d, lcp._equilibrate(M))


def _problems(seed, count):
    """Random small contact LCPs in groups of equal size (as the islands of a step), and a
    warm start per problem: the basis of a nearby problem (q perturbed: some verify, some do
    not), an empty basis, or none."""
    rng = np.random.default_rng(seed)
    probs, warm = [], []
    for i in range(count):
        M, q = random_contact_lcp(rng, int(rng.integers(1, 5)), speed=[0.0, 0.5, 2.0][i % 3])
        probs.append((M, q))
        kind = i % 4
        if kind == 0:
            warm.append(None)  # cold
        elif kind == 1:
            warm.append(solve_lcp(M, q).basis)  # verifies: the warm route
        elif kind == 2:
            near = q + rng.normal(scale=0.3 * np.abs(q).max(), size=q.size)
            warm.append(solve_lcp(M, near).basis)  # may or may not verify
        else:
            warm.append(np.zeros(0, dtype=np.int64))  # empty basis: z = 0 tried first
    probs.append((np.eye(3), np.ones(3)))  # trivial
    warm.append(None)
    probs.append((np.array([[-1.0]]), np.array([-1.0])))  # no solution: Lemke ends on a ray
    warm.append(None)
    return probs, warm


def _flat(probs, warm):
    sizes = np.array([q.size for _, q in probs], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    m_off = np.concatenate([[0], np.cumsum(sizes * sizes)])[:-1]
    M_flat = np.concatenate([M.reshape(-1) for M, _ in probs])
    q = np.concatenate([q for _, q in probs])
    n_warm = np.array([0 if w is None else w.size for w in warm], dtype=np.int64)
    parts = [w for w in warm if w is not None and w.size]
    warm_flat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    warm_off = np.concatenate([[0], np.cumsum(n_warm)])
    has = np.array([w is not None for w in warm])
    return M_flat, m_off, q, offsets, warm_flat, warm_off, has


@needs_kernel
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_batch_entry_equals_one_solve_per_problem(seed):
    probs, warm = _problems(seed, 60)
    M_flat, m_off, q_all, offsets, warm_flat, warm_off, has = _flat(probs, warm)
    select = np.ones(len(probs), dtype=bool)
    select[5] = False  # not selected: left alone
    out = solve_lcp_arrays(M_flat, m_off, q_all, offsets, select, warm_flat, warm_off, has)
    routes = set()
    for k, ((M, q), ws) in enumerate(zip(probs, warm, strict=True)):
        o0, o1 = offsets[k], offsets[k + 1]
        if not select[k]:
            assert out.route[k] == -2
            assert not out.z[o0:o1].any() and not out.basis[o0:o1].any()
            continue
        one = solve_lcp(M, q, warm_start=ws)
        routes.add(int(out.route[k]))
        if out.route[k] < 0:  # no verified answer: the caller's solve_lcp runs the ladder
            assert one.fallback  # the ladder ran there
            continue
        assert one.status == "solved" and out.status[k] == 0
        assert lcp.START_NAMES[out.route[k]] == one.start
        assert out.z[o0:o1].tobytes() == one.z.tobytes()
        assert out.w[o0:o1].tobytes() == one.w.tobytes()
        np.testing.assert_array_equal(np.flatnonzero(out.basis[o0:o1]), one.basis)
        assert int(out.pivots[k]) == one.pivots
        assert float(out.residual[k]) == one.residual
    assert {-1, 0, 1, 3} <= routes  # ray, trivial, warm and cold answers all compared


# --------------------------------------------------------------------- the compile notice
#: A 2 × 2 LCP solved through the compiled path in a fresh process (z = (1, 1)).
_SOLVE_ONE = (
    "import numpy as np\n"
    "from reverse.lcp.solve import solve_lcp\n"
    "r = solve_lcp(np.eye(2), -np.ones(2), engine='compiled')\n"
    "print(r.status, r.z.tolist())\n"
)


@needs_kernel
def test_a_cold_cache_announces_the_compile_before_it_starts(tmp_path):
    """Issue 36: the first solve after an install compiles for about a minute; the notice is the
    first line on stderr and comes while the compile is still running (the process is killed
    then: the test does not wait for the compile)."""
    env = {**cli_env(), "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}  # empty: cold
    proc = subprocess.Popen(
        [sys.executable, "-c", _SOLVE_ONE],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stderr.readline()
        still_compiling = proc.poll() is None
    finally:
        proc.kill()
        proc.communicate()
    assert first.startswith(K.COMPILE_NOTICE.split("{")[0]), first
    assert str(tmp_path / "numba-cache") in first  # says where the compiled code goes
    assert still_compiling


@needs_kernel
def test_a_warm_cache_loads_the_kernel_silently():
    """Once this process has compiled (or loaded) the kernel, its on-disk cache is warm: a fresh
    process solves without the notice and prints nothing on stderr."""
    solve_lcp(np.eye(2), -np.ones(2), engine="compiled")  # compiles and saves if cold
    out = subprocess.run(
        [sys.executable, "-c", _SOLVE_ONE], cwd=REPO, env=cli_env(), capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    assert out.stdout.split() == ["solved", "[1.0,", "1.0]"]
    assert out.stderr == ""


@needs_kernel
def test_the_compile_notice_is_printed_once_per_process(capsys):
    """Two compiles of ``reverse`` functions (one event each) give one line; a compile of another
    package's function gives none."""

    class _Event:
        def __init__(self, module):
            self.data = {"dispatcher": type("D", (), {"py_func": _fn(module)})()}

    def _fn(module):
        def f():
            pass

        f.__module__ = module
        return f

    notice = K._CompileNotice()
    notice.on_start(_Event("somebody.else"))
    assert capsys.readouterr().err == ""
    notice.on_start(_Event("reverse.lcp.lemke_kernel"))
    notice.on_start(_Event("reverse.step.assembly_kernel"))
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("reverse: compiling the LCP kernels")
