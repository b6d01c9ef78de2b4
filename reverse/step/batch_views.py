"""Lazy sequences of :mod:`reverse.step.batched`'s answers: island matrices as views of the stacked
(or flat) arrays they were assembled in, and the compiled batch's
:class:`~reverse.lcp.solve.LCPResult`
made only when looked up (issue 17, third and fourth rounds; the stepper reads the arrays and
makes none of them)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reverse.lcp import solve as _lcp
from reverse.lcp.solve import LCPResult

__all__ = ["FlatViews", "GroupViews", "Results"]


class FlatViews(Sequence):
    """``Ms[k]``: island ``k``'s LCP matrix as a view of the flat array (None: no rows)."""

    def __init__(self, M_flat, m_off, m_k):
        self.M_flat, self.m_off, self.m_k = M_flat, m_off, m_k
        self.posed = m_k > 0

    def __len__(self) -> int:
        return len(self.m_k)

    def __getitem__(self, k):
        k = range(len(self))[k]
        m = int(self.m_k[k])
        return self.M_flat[self.m_off[k] : self.m_off[k] + m * m].reshape(m, m) if m else None


class GroupViews(Sequence):
    """``Ms[k]``, island ``k``'s LCP matrix (None: no rows), as a view of its group's stacked
    matrices, made when looked up (the batch path reads the stacks; only islands solved one
    by one look theirs up)."""

    def __init__(self, stacked, gid, gpos):
        self.stacked, self.gid, self.gpos = stacked, gid, gpos
        self.posed = gid >= 0

    def __len__(self) -> int:
        return len(self.gid)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[j] for j in range(*k.indices(len(self)))]
        k = range(len(self))[k]
        g = int(self.gid[k])
        return None if g < 0 else self.stacked[g][self.gpos[k]]


class Results(Sequence):
    """The islands' :class:`~reverse.lcp.solve.LCPResult` (None: no rows), as
    :func:`solve_island_arrays` returns them: those of the compiled batch call are made when
    looked up, from its arrays — the same fields as the list this replaced (z and w views of
    the batch's, status "solved", its pivots, the basis, residual, no fallback, the start) —
    so a step that reads the arrays (the stepper) makes none; the others (the ladder's) are
    held as answered."""

    def __init__(self, K: int):
        self.K = K
        self.explicit: dict[int, LCPResult] = {}
        self.batched = np.zeros(K, dtype=bool)
        self.pivots = np.zeros(K, dtype=np.int64)
        self.residual = np.zeros(K)
        self.basis = np.zeros(0, dtype=np.int64)
        self.basis_start = np.zeros(K + 1, dtype=np.int64)
        self.arrays = None
        self.r_start = None

    def __len__(self) -> int:
        return self.K

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[j] for j in range(*k.indices(self.K))]
        k = range(self.K)[k]  # negative indices, bounds
        if k in self.explicit:
            return self.explicit[k]
        if not self.batched[k]:
            return None
        a, o0, o1 = self.arrays, int(self.r_start[k]), int(self.r_start[k + 1])
        return LCPResult(
            a.z[o0:o1], a.w[o0:o1], "solved", int(a.pivots[k]),
            self.basis[self.basis_start[k] : self.basis_start[k + 1]],
            float(a.residual[k]), "", _lcp.START_NAMES[int(a.route[k])],
        )  # fmt: skip
