"""The shortcuts of the second speed round (issue 17) give the numbers of the plain computations
they replace, bit for bit:

* :func:`reverse.islands.island_arrays` (minimum-label propagation) finds the islands of a
  plain union-find, in the same order (ascending bodies, islands by their smallest body);
* :func:`reverse.integration.backward_configuration`, which no longer iterates static bodies
  and computes ``L`` for the moving ones only, returns what iterating every body of the scene
  until the largest change is within the tolerance returns (the loop of the first
  implementation, its documented semantics), to the bit, with static bodies among moving ones;
* the batch's lazily made answers (:class:`reverse.batched._Results`) and matrices
  (:class:`reverse.batched._GroupViews`) read like the lists they replaced.
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.dynamics import RigidBodies
from reverse.integration import backward_configuration
from reverse.islands import find_islands, island_arrays
from tests.unit.reverse.test_orientation import reference_backward_configuration
from workbench.sim.state import State


def _union_find_islands(n, awake, pairs):
    """The reference: a union-find over awake bodies linked by pairs of awake bodies."""
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in np.asarray(pairs, dtype=int).reshape(-1, 2).tolist():
        if a >= 0 and b >= 0 and awake[a] and awake[b]:
            ra, rb = root(a), root(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        if awake[i]:
            groups.setdefault(root(i), []).append(i)
    return [np.array(g) for _, g in sorted(groups.items(), key=lambda kv: min(kv[1]))]


@pytest.mark.parametrize("seed", range(4))
def test_island_arrays_are_the_union_find_islands(seed):
    rng = np.random.default_rng(seed)
    for _ in range(300):
        n = int(rng.integers(0, 80))
        m = int(rng.integers(0, 120))
        awake = rng.random(n) < rng.random()
        pairs = rng.integers(-1, max(n, 1), size=(m, 2)) if n else np.zeros((0, 2), dtype=int)
        want = _union_find_islands(n, awake, pairs)
        got = find_islands(n, awake, pairs)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g, w)
        members, sizes = island_arrays(n, awake, pairs)
        assert members.dtype == np.int64
        assert sizes.sum() == members.size
        flat = np.concatenate(want) if want else np.zeros(0, dtype=int)
        assert np.array_equal(members, flat)


def test_long_chain_island():
    """A chain of 500 bodies linked in a scrambled order: one island (many propagation passes
    would be needed without the pointer jumping; the answer is the same)."""
    n = 500
    rng = np.random.default_rng(3)
    perm = rng.permutation(n)
    pairs = np.column_stack([perm[:-1], perm[1:]])[rng.permutation(n - 1)]
    got = find_islands(n, np.ones(n, dtype=bool), pairs)
    assert len(got) == 1 and np.array_equal(got[0], np.arange(n))


def _random_scene(rng, n, static_share, spin):
    moving = rng.random(n) >= static_share
    mass = np.where(moving, rng.uniform(0.1, 3.0, n), 0.0)
    inertia = np.zeros((n, 3, 3))
    for j in range(n):
        if rng.random() < 0.5:  # a sphere: isotropic (the spelling balls)
            inertia[j] = np.eye(3) * rng.uniform(1e-4, 1e-2)
        else:  # a box: anisotropic, turned
            d = np.diag(rng.uniform(1e-3, 1e-1, 3))
            R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
            inertia[j] = R @ d @ R.T
    rigid = RigidBodies(
        tuple(f"b{j}" for j in range(n)),
        mass,
        inertia,
        np.zeros((n, 3)),
        np.zeros((n, 3)),
    )
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w = rng.normal(size=(n, 3)) * spin
    w[rng.random(n) < 0.3] = 0.0  # bodies at rest
    w[~moving] = rng.normal(size=(int((~moving).sum()), 3))  # ignored for static bodies
    state = State(rng.normal(size=(n, 3)), q, rng.normal(size=(n, 3)), w)
    return rigid, state


@pytest.mark.parametrize("seed", range(6))
def test_backward_configuration_is_the_plain_loop(seed):
    rng = np.random.default_rng(100 + seed)
    dt = 1.0 / 120.0
    checked = 0
    for n, static_share, spin in ((1, 0.0, 5.0), (7, 0.5, 20.0), (40, 0.2, 60.0), (90, 0.9, 5.0)):
        rigid, state = _random_scene(rng, n, static_share, spin)
        got = backward_configuration(state, rigid, dt)
        x, q, w, iters, residual = reference_backward_configuration(state, rigid, dt)
        if not got.converged or got.newton_bodies:
            continue  # Newton took over: not the plain loop's answer (tested elsewhere)
        checked += 1
        assert got.position.tobytes() == x.tobytes()
        assert got.orientation.tobytes() == q.tobytes()
        assert got.angular_velocity.tobytes() == w.tobytes()
        assert got.iterations == iters
        assert got.residual == residual
    assert checked >= 2  # the scenes above converge (a test that cannot fail is no test)


def test_lazy_batch_sequences_read_like_lists():
    from reverse.batched import _GroupViews, _Results

    stacked = [np.arange(2 * 3 * 3, dtype=float).reshape(2, 3, 3), np.ones((1, 2, 2))]
    gid = np.array([0, -1, 1, 0])
    gpos = np.array([1, 0, 0, 0])
    views = _GroupViews(stacked, gid, gpos)
    assert len(views) == 4
    assert views[1] is None
    assert np.array_equal(views[0], stacked[0][1]) and np.shares_memory(views[0], stacked[0])
    assert np.array_equal(views[-1], stacked[0][0])
    assert [v is None for v in views] == [False, True, False, False]
    assert np.array_equal(views.posed, [True, False, True, True])
    empty = _Results(3)
    assert list(empty) == [None, None, None]
    with pytest.raises(IndexError):
        empty[3]
