"""The flat-array batch entry of the LCP solver (:func:`reverse.lcp.solve.solve_lcp_arrays`) and the
batched islands' use of it (:func:`reverse.step.batched._solve_lcps`): bit for bit the answers of
one
:func:`reverse.lcp.solve.solve_lcp` per problem (issue 17: the islands of a step solved in one
compiled call), warm and cold; problems without a verified answer still go through
``solve_lcp`` and its fallback ladder.
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse import batched, lcp
from reverse.lcp.solve import LCPError, solve_lcp, solve_lcp_arrays
from tests.lcp_problems import random_contact_lcp

pytest.importorskip("numba")


def _same_result(a, b):
    """Two LCPResults equal to the bit (z, w, basis, status, pivots, residual, ladder, start)."""
    assert (a.status, a.pivots, a.fallback, a.start) == (b.status, b.pivots, b.fallback, b.start)
    assert a.residual == b.residual or (np.isnan(a.residual) and np.isnan(b.residual))
    assert a.z.tobytes() == b.z.tobytes()
    assert a.w.tobytes() == b.w.tobytes()
    np.testing.assert_array_equal(a.basis, b.basis)


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


def _islands(seed, big=False):
    """Islands as batched.solve_island_arrays hands them to _solve_lcps: matrices stacked by
    row count (groups), q laid out island after island, warm starts per island; ``big``: one
    more of 300 rows (ADVANCED_START_MIN_ROWS: solve_lcp's advanced start, one by one) warm
    started from a nearby problem's basis."""
    probs, warm = _problems(seed, 48)
    if big:
        rng = np.random.default_rng(seed)
        M, q = random_contact_lcp(rng, lcp.ADVANCED_START_MIN_ROWS // 6)
        near = q + rng.normal(scale=0.1 * np.abs(q).max(), size=q.size)
        probs.append((M, q))
        warm.append(solve_lcp(M, near).basis)
    order = sorted(range(len(probs)), key=lambda k: probs[k][1].size)  # by size, stably
    probs = [probs[k] for k in order]
    warm = [warm[k] for k in order]
    m_k = np.array([q.size for _, q in probs], dtype=np.int64)
    r_start = np.concatenate([[0], np.cumsum(m_k)])
    r_isl = np.repeat(np.arange(len(probs)), m_k)
    q = np.concatenate([q for _, q in probs])
    Ms, stacked, groups = [None] * len(probs), [], []
    for m in np.unique(m_k).tolist():
        km = np.flatnonzero(m_k == m)
        Mg = np.stack([probs[k][0] for k in km.tolist()])
        for k, M in zip(km.tolist(), Mg, strict=True):
            Ms[k] = M
        stacked.append(Mg)
        groups.append((1, m, km, None))
    return Ms, stacked, q, m_k, r_start, r_isl, groups, warm


def _one_by_one(Ms, q, r_start, m_k, warm):
    """The loop _solve_lcps replaces: solve_lcp per island, a warm start past the island's
    rows dropped."""
    out = []
    for k, M in enumerate(Ms):
        w = warm[k]
        if w is not None and w.size and int(w.max()) >= m_k[k]:
            w = None
        out.append(solve_lcp(M, q[r_start[k] : r_start[k + 1]], warm_start=w))
    return out


@pytest.mark.parametrize(("seed", "big"), [(4, False), (5, True)])
def test_batched_islands_solve_as_one_by_one(seed, big):
    Ms, stacked, q, m_k, r_start, r_isl, groups, warm = _islands(seed, big)
    assert (m_k.max() >= lcp.ADVANCED_START_MIN_ROWS) == big
    warm[2] = np.array([0, 10**6])  # past the island's rows: dropped, as before
    warm[6] = np.array([2, 0])  # unsorted: solve_lcp sorts it (one by one)
    warm[10] = np.zeros(m_k[10], dtype=bool)  # a mask: one by one
    ref = _one_by_one(Ms, q, r_start, m_k, warm)
    results, z_all = batched._solve_lcps(Ms, stacked, q, m_k, r_start, r_isl, groups, warm)
    for a, b in zip(results, ref, strict=True):
        _same_result(a, b)
    assert z_all.tobytes() == np.concatenate([r.z for r in ref]).tobytes()
    assert any(r.fallback for r in results)  # the ray problem went through the ladder


def test_a_replaced_solver_is_called_for_every_island(monkeypatch):
    """Tests replace reverse.step.dynamics.solve_lcp to inject failures: the batch must then call
    it, island by island, as before."""
    Ms, stacked, q, m_k, r_start, r_isl, groups, warm = _islands(6)
    calls = []

    def recording(M, q, warm_start=None):
        calls.append(q.size)
        return solve_lcp(M, q, warm_start=warm_start)

    monkeypatch.setattr("reverse.step.dynamics.solve_lcp", recording)
    results, _ = batched._solve_lcps(Ms, stacked, q, m_k, r_start, r_isl, groups, warm)
    assert calls == m_k.tolist()
    for a, b in zip(results, _one_by_one(Ms, q, r_start, m_k, warm), strict=True):
        _same_result(a, b)


def test_non_finite_island_raises_as_solve_lcp_does():
    Ms, stacked, q, m_k, r_start, r_isl, groups, warm = _islands(7)
    q = q.copy()
    q[r_start[3]] = np.nan
    with pytest.raises(LCPError, match="finite"):
        batched._solve_lcps(Ms, stacked, q, m_k, r_start, r_isl, groups, warm)
