"""The blocked path of the compiled Lemke (:mod:`reverse.lcp.lemke_kernel`, ``block > 0``: the
rank-1 updates of ``B⁻¹`` delayed and applied as one matrix product), used by
:func:`reverse.lcp.solve.solve_lcp` from :data:`reverse.lcp.solve.BLOCKED_MIN_ROWS` rows: the same
pivots to
the same basis as the dense path, for block sizes that flush every pivot, every few pivots and
rarely; cold and advanced starts; and the ``solve_lcp`` dispatch by size.
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.lcp import solve as lcp
from reverse.lcp.solve import VERIFY_RTOL, solve_lcp
from tests.lcp_problems import random_contact_lcp

K = pytest.importorskip("reverse.lcp.lemke_kernel")

_NONE = np.zeros(0, dtype=np.int64)


def _scaled(M, q):
    """The normalized equilibrated problem that :func:`reverse.lcp.solve.solve_lcp` hands to
    Lemke."""
    prob = lcp._Problem(M, q)
    sM, sq = np.abs(prob.Mh).max(), np.abs(prob.qh).max()
    return prob, prob.Mh / sM, prob.qh / sq


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


def test_solve_lcp_takes_the_blocked_path_from_the_threshold(monkeypatch):
    M, q = random_contact_lcp(np.random.default_rng(300_001), 50)
    dense = solve_lcp(M, q)
    ref = solve_lcp(M, q, engine="numpy")
    assert q.size < lcp.BLOCKED_MIN_ROWS and lcp._block(q.size) == 0
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
