"""The blocked path of the compiled Lemke on long paths (:mod:`reverse.lcp.lemke_kernel`, the large
islands of ``benchmarks/island.py``): the refactor of ``B⁻¹`` over the rows of the basic ``w``
only gives the same tableau to the bit as the full product; paths that refactor several times
(Murty's family, [1]_: 2ⁿ pivots) take the dense path's pivots to its basis for block sizes that
flush every pivot, every few pivots and rarely; the equilibration over the nonzeros only gives
the same scaling to the bit.

.. [1] Murty, Computational complexity of complementary pivot methods, Math. Prog. Study 7 (1978).
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.lcp import solve as lcp
from reverse.lcp.solve import solve_lcp
from tests.lcp_problems import random_contact_lcp

K = pytest.importorskip("reverse.lcp.lemke_kernel")

_NONE = np.zeros(0, dtype=np.int64)


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
