""":func:`reverse.step.islands.island_arrays` (minimum-label propagation) finds the islands of a
plain union-find, in the same order (ascending bodies, islands by their smallest body), issue 17.
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.step.islands import find_islands, island_arrays


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
