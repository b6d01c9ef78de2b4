"""Batched island assembly (issue 17 item 2): :func:`reverse.step.batched.solve_islands` gives
:func:`reverse.step.dynamics.solve_island`'s numbers to the bit, island by island — velocities,
branches, LCP answers — in both directions, with goals, sliding, rolling and spinning contacts,
attraction, contacts with sleeping partners, and islands of one, two and many bodies.
The batch's LCPs (:func:`reverse.step.batched._solve_lcps`) are those of one
:func:`reverse.lcp.solve.solve_lcp` per island, warm and cold, bit for bit; a replaced solver is
called island by island; and an island whose LCP failed is retried one by one.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from reverse.lcp import solve as lcp
from reverse.lcp.solve import LCPError, solve_lcp
from reverse.step import batched
from reverse.step.batched import solve_islands
from reverse.step.dynamics import (
    ContactSet,
    Goals,
    RigidBodies,
    solve_island,
    tangent_basis,
    world_inertia,
)
from reverse.step.islands import find_islands
from tests.lcp_problems import random_contact_lcp
from tests.unit.reverse.lcp.test_lemke_kernel import _problems

needs_numba = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None, reason="numba is not importable"
)


def random_problem(seed: int, n: int = 40, nc: int = 90):
    rng = np.random.default_rng(seed)
    mass = rng.uniform(0.2, 3.0, n)
    mass[rng.random(n) < 0.1] = 0.0  # a few static bodies
    inertia = np.stack([np.diag(rng.uniform(0.01, 0.2, 3)) for _ in range(n)])
    force = mass[:, None] * np.array([0.0, 0.0, -9.81]) + rng.normal(size=(n, 3)) * 0.1
    torque = rng.normal(size=(n, 3)) * 0.01
    rigid = RigidBodies(tuple(f"b{i}" for i in range(n)), mass, inertia, force, torque)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    x = rng.normal(size=(n, 3))
    # velocities: some at rest (resting/sticking rows), some fast (elastic, sliding, spinning)
    vel = rng.normal(size=(n, 6)) * rng.choice([0.0, 1e-6, 0.05, 2.0], size=(n, 1))
    vel[mass == 0] = 0.0
    # contacts: bodies 0–7 touch each other (islands of many bodies), 8–19 in pairs (2k, 2k+1),
    # the others only the world (islands of one body); half of all contacts are with the world
    a = rng.integers(0, n, nc)
    partner = np.where(a < 8, rng.integers(0, 8, nc), np.where(a < 20, a ^ 1, -1))
    b = np.where((rng.random(nc) < 0.5) | (partner == a), -1, partner)
    normal = rng.normal(size=(nc, 3))
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    t1 = tangent_basis(normal)
    contacts = ContactSet(
        body_a=a,
        body_b=b,
        point=x[a] + rng.normal(size=(nc, 3)) * 0.1,
        normal=normal,
        distance=np.zeros(nc),
        friction=rng.choice([0.0, 0.1, 0.5], nc),
        rolling=rng.choice([0.0, 0.002, 0.01], nc),
        spinning=rng.choice([0.0, 0.001], nc),
        restitution=rng.choice([0.0, 0.5, 0.9], nc),
        tangent=t1,
        roll_axis=t1.copy(),
    )
    goals = Goals(
        np.where(rng.random(nc) < 0.3, rng.uniform(0, 0.5, nc), 0.0),
        rng.normal(size=(nc, 3)) * (rng.random((nc, 1)) < 0.3),
        rng.normal(size=(nc, 3)) * (rng.random((nc, 1)) < 0.2),
    )
    attract = rng.random(nc) < 0.2
    return rigid, x, q, vel, contacts, goals, attract, rng


def contact_islands(n, islands, contacts):
    """Each contact's island (``c_island``; −1 for none) and the islands of its two bodies
    (``la``, ``lb``; −1 for the world or a body in no island), as the stepper labels them."""
    label = np.full(n, -1)
    for k, bodies in enumerate(islands):
        label[bodies] = k
    a, b = contacts.body_a, contacts.body_b
    la = np.where(a >= 0, label[np.maximum(a, 0)], -1)
    lb = np.where(b >= 0, label[np.maximum(b, 0)], -1)
    return la, lb, np.where(la >= 0, la, lb)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("direction", ["backward", "forward"])
def test_batched_islands_are_bit_identical_to_one_by_one(seed, direction):
    rigid, x, q, vel, contacts, goals, attract, rng = random_problem(seed)
    n = len(rigid.mass)
    moving = rigid.moving
    awake = moving & (rng.random(n) < 0.85)  # some sleeping bodies act as the world
    pairs = np.column_stack([contacts.body_a, contacts.body_b])
    islands = find_islands(n, awake, pairs)
    la, lb, c_island = contact_islands(n, islands, contacts)
    sets = [np.flatnonzero(c_island == k) for k in range(len(islands))]
    keep = [k for k in range(len(islands)) if len(sets[k])]
    Iw = world_inertia(rigid.inertia, q)
    att = attract if direction == "backward" else None
    g = goals if direction == "backward" else Goals.zeros(len(contacts))
    common = dict(direction=direction, rigid=rigid, position=x, inertia_world=Iw, velocity=vel,
                  dt=1e-3, epsilon=0.2, delta=1e-4, delta_angular=1e-4)  # fmt: skip
    batched = solve_islands(
        islands=[islands[k] for k in keep],
        contact_sets=[sets[k] for k in keep],
        contacts=contacts,
        in_island_a=la == c_island,
        in_island_b=lb == c_island,
        goals=g,
        attract=att,
        **common,
    )
    sizes = {len(islands[k]) for k in keep}
    assert 1 in sizes and 2 in sizes and max(sizes) >= 3  # the case mix the test is about
    rows = 0
    for k, sol in zip(keep, batched, strict=True):
        sel = sets[k]
        sub = contacts.subset(sel)
        sub = ContactSet(**{**sub.__dict__, "body_a": np.where(la[sel] == k, sub.body_a, -1),
                            "body_b": np.where(lb[sel] == k, sub.body_b, -1)})  # fmt: skip
        ref = solve_island(
            bodies=islands[k],
            contacts=sub,
            goals=Goals(g.normal[sel], g.tangential[sel], g.rolling[sel]),
            attract=None if att is None else att[sel],
            **common,
        )
        assert np.array_equal(sol.velocity, ref.velocity), k
        assert sol.branch.tolist() == ref.branch.tolist()
        assert sol.n_rows == ref.n_rows
        assert (sol.lcp is None) == (ref.lcp is None)
        if ref.lcp is not None:
            assert np.array_equal(sol.lcp.z, ref.lcp.z)
            assert sol.lcp.status == ref.lcp.status
            rows += ref.n_rows
    assert rows > 0


def test_no_islands():
    rigid, x, q, vel, contacts, goals, attract, _ = random_problem(0)
    assert solve_islands(direction="backward", islands=[], contact_sets=[], contacts=contacts,
                         in_island_a=np.zeros(len(contacts), bool),
                         in_island_b=np.zeros(len(contacts), bool), rigid=rigid, position=x,
                         inertia_world=world_inertia(rigid.inertia, q), velocity=vel, dt=1e-3,
                         goals=goals) == []  # fmt: skip


def _balls_on_ground(n=30, seed=0):
    """``n`` balls (radius 0.1 m) on the ground z = 0, some pairs touching, moving in random
    directions: many small islands, sliding, rolling and bouncing contacts."""
    from reverse.step.stepper import Stepper, StepSettings
    from workbench.sim.state import State

    rng = np.random.default_rng(seed)
    r = 0.1
    mass = np.full(n, 0.5)
    inertia = np.tile(0.4 * 0.5 * r * r * np.eye(3), (n, 1, 1))
    rigid = RigidBodies(tuple(f"b{i}" for i in range(n)), mass, inertia,
                        mass[:, None] * np.array([0.0, 0.0, -9.81]), np.zeros((n, 3)))  # fmt: skip
    x = np.zeros((n, 3))
    x[:, 0] = np.arange(n) * 0.25
    x[1::3, 0] = x[0::3, 0][: len(x[1::3])] + 2 * r  # every third pair touches
    x[:, 2] = r

    def contacts(pos, orn):
        a_list, b_list, pts, nrm = [], [], [], []
        for i in range(n):
            if pos[i, 2] <= r + 1e-9:  # on the ground
                a_list.append(i), b_list.append(-1)
                pts.append([pos[i, 0], pos[i, 1], 0.0]), nrm.append([0.0, 0.0, 1.0])
            for j in range(i + 1, n):
                d = pos[i] - pos[j]
                if np.linalg.norm(d) <= 2 * r + 1e-9:
                    a_list.append(i), b_list.append(j)
                    pts.append(0.5 * (pos[i] + pos[j])), nrm.append(d / np.linalg.norm(d))
        k = len(a_list)
        normal = np.array(nrm, dtype=float).reshape(k, 3)
        t1 = tangent_basis(normal)
        return ContactSet(np.array(a_list, dtype=int), np.array(b_list, dtype=int),
                          np.array(pts, dtype=float).reshape(k, 3), normal, np.zeros(k),
                          np.full(k, 0.3), np.full(k, 0.002), np.full(k, 0.001), np.full(k, 0.8),
                          t1, t1.copy())  # fmt: skip

    v = np.zeros((n, 3))
    v[:, :2] = rng.normal(size=(n, 2)) * 0.5
    w = rng.normal(size=(n, 3)) * 3.0
    state = State(x, np.tile([0.0, 0.0, 0.0, 1.0], (n, 1)), v, w)
    return Stepper(rigid, contacts, StepSettings(1e-3)), state


def test_the_stepper_batched_and_one_by_one_give_the_same_states(monkeypatch):
    import reverse.step.stepper as stepper_module

    runs = []
    for limit in (0, 10**9):  # everything batched; nothing batched
        monkeypatch.setattr(stepper_module, "BATCH_MIN_CONTACTS", limit)
        st, s = _balls_on_ground()
        islands = 0
        for _ in range(5):
            s, rep = st.backward(s)
            islands += len(rep.islands)
            b, _ = st.forward(s, contacts=rep.contact_set)
        runs.append((s, b, islands))
    (s0, b0, n0), (s1, b1, n1) = runs
    assert n0 == n1 > 20
    for name in ("position", "orientation", "linear_velocity", "angular_velocity"):
        for x, y in ((s0, s1), (b0, b1)):
            a1, a2 = getattr(x, name), getattr(y, name)
            assert np.array_equal(a1.view(np.int64), a2.view(np.int64)), name


def _same_result(a, b):
    """Two LCPResults equal to the bit (z, w, basis, status, pivots, residual, ladder, start)."""
    assert (a.status, a.pivots, a.fallback, a.start) == (b.status, b.pivots, b.fallback, b.start)
    assert a.residual == b.residual or (np.isnan(a.residual) and np.isnan(b.residual))
    assert a.z.tobytes() == b.z.tobytes()
    assert a.w.tobytes() == b.w.tobytes()
    np.testing.assert_array_equal(a.basis, b.basis)


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


@needs_numba
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


@needs_numba
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


@needs_numba
def test_non_finite_island_raises_as_solve_lcp_does():
    Ms, stacked, q, m_k, r_start, r_isl, groups, warm = _islands(7)
    q = q.copy()
    q[r_start[3]] = np.nan
    with pytest.raises(LCPError, match="finite"):
        batched._solve_lcps(Ms, stacked, q, m_k, r_start, r_isl, groups, warm)


def test_a_failed_batch_island_is_retried_as_one_by_one(monkeypatch):
    """The stepper writes the batch islands' answers at once and sends an island whose LCP
    failed to the frictionless retry: the states and island reports are those of solving every
    island one by one, failures and retries included."""
    import reverse.step.stepper as stepper_module
    from reverse.lcp.solve import LCPResult
    from reverse.lcp.solve import solve_lcp as real_solve

    def friction_fails(M, q, **kw):
        if len(q) > 2 and not np.allclose(M, M.T):  # friction rows make M unsymmetric
            n = len(q)
            return LCPResult(np.full(n, 1e9), q.copy(), "ray", 7, np.zeros(0, int), 1e9, "")
        return real_solve(M, q, **kw)

    monkeypatch.setattr("reverse.step.dynamics.solve_lcp", friction_fails)
    runs = []
    for limit in (0, 10**9):  # everything batched; nothing batched
        monkeypatch.setattr(stepper_module, "BATCH_MIN_CONTACTS", limit)
        st, s = _balls_on_ground()
        reports = []
        for _ in range(4):
            s, rep = st.backward(s)
            reports += [(r.n_bodies, r.n_contacts, r.n_rows, r.status, r.pivots, r.fallback,
                         r.residual, r.verified) for r in rep.islands]  # fmt: skip
        runs.append((s, reports))
    (s0, r0), (s1, r1) = runs
    assert r0 == r1
    assert sum(r[3] == "ray" for r in r0) >= 5  # failures happened, and were retried
    assert all(r[5].endswith("frictionless retry solved") for r in r0 if r[3] == "ray")
    for name in ("position", "orientation", "linear_velocity", "angular_velocity"):
        a, b = getattr(s0, name), getattr(s1, name)
        assert np.array_equal(a.view(np.int64), b.view(np.int64)), name
