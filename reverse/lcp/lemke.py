"""Lemke's complementary pivot method ([2]_ §4.4) for the scaled LCP ``w = M z + e z0 + q``: the
pivoting core of :func:`reverse.lcp.solve.solve_lcp` ([1]_ §2.2 solves its contact LCPs with it).

* Covering vector ``e``; the non-unit columns of ``B⁻¹`` are kept and updated by one rank-1
  update per pivot (``O(n·m)`` for ``m`` basic ``z``) and recomputed from scratch every
  ``max(REFACTOR_MIN, n)`` pivots.
* Ratio test: lexicographic minimum ratio over the rows of ``[B⁻¹q, B⁻¹]`` ([2]_ §4.9), which
  rules out cycling on degenerate problems. If the artificial variable ``z0`` is among the tied
  blocking variables it leaves, which ends the path ([2]_ Ex. 4.4.16).

The caller (:func:`reverse.lcp.solve.solve_lcp`) scales the problem to ``max|M| = max|q| = 1``, so
the relative tolerances below are in units of one, and it re-solves and verifies the answer.

This is the numpy reference (``solve_lcp(..., engine="numpy")``, and the engine when numba is
missing); :mod:`reverse.lcp.lemke_kernel` compiles the same steps with the same tolerances (the
public
constants below) and is tested against it.

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, SIGGRAPH 2008 (ACM TOG 27(3) 25).
.. [2] Cottle, Pang & Stone, The Linear Complementarity Problem, Academic Press 1992.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "LEX_RTOL",
    "PIVOT_RTOL",
    "REFACTOR_MIN",
    "TIE_RTOL",
    "ZERO_RTOL",
    "lemke_path",
]

#: Entries of the entering column below this fraction of its largest entry cannot block. Rounding
#: in ``B⁻¹a`` is ≈ 1e-14 of ``‖B⁻¹a‖`` on contact problems (measured); pivoting on anything
#: smaller would amplify that noise by more than 1e11.
PIVOT_RTOL = 1e-11

#: Basic values below this fraction of ``max(1, ‖x‖∞)`` (scaled problem, ``‖q‖∞ = 1``) are
#: degenerate zeros: set to 0 in the ratio test, so ties between them are exact and the
#: lexicographic rule, not rounding noise, decides.
ZERO_RTOL = 1e-12

#: Blocking variables that a ratio-test step leaves below this fraction of
#: ``max(1, ‖x‖∞ + θ‖d‖∞)`` (the scale of their rounding error) are tied; then z0 wins, else the
#: lexicographic rule. A relative test on the ratios themselves missed a z0 tie by 3e-11 on a
#: 120-row contact problem (z0 and three friction variables reaching zero together, x and d good
#: to 1e-14 of their norms): the path stepped past z0's exit and ended on a ray. Choosing among
#: such ties moves other basic values by at most this fraction, far below ``VERIFY_RTOL``.
TIE_RTOL = 1e-11

#: Entries of ``B⁻¹`` rows (divided by the pivot column) closer than this, relative to the
#: largest, are equal in the lexicographic comparison (rounding is ≈ 1e-14 of it).
LEX_RTOL = 1e-12

#: Recompute ``B⁻¹`` from scratch (one LAPACK inverse) every ``max(REFACTOR_MIN, n)`` pivots, to
#: bound the drift of the rank-1 updates on long paths. Contact problems finish in fewer than n
#: pivots, so for them it never runs; the answer is re-solved from its basis in any case.
REFACTOR_MIN = 100

_TINY = np.finfo(float).tiny


def lemke_path(M: np.ndarray, q: np.ndarray, cap: int):
    """Lemke's complementary pivot method with covering vector e ([2]_ §4.4, §4.9).

    Parameters
    ----------
    M : ndarray, shape (n, n)
    q : ndarray, shape (n,)
        The scaled problem (``max|M| = max|q| = 1``).
    cap : int
        Pivot cap.

    Returns
    -------
    status : str
        ``"solved"`` (``z0`` left the basis), ``"ray"``, ``"max_pivots"`` or ``"failed"``
        (numerical breakdown); the answer is not verified here.
    z : ndarray, shape (n,)
        The ``z`` of the last basis.
    basis : ndarray of int
        Sorted indices of the basic ``z``.
    pivots : int
    """
    n = q.size
    t = _Basis(M, q)
    refactor_every = max(REFACTOR_MIN, n)

    # first pivot: z0 enters (B⁻¹a = −e) at the level that makes every w ≥ 0; the blocking row is
    # the most negative q_i, ties broken by the lexicographic rule on [q_i, e_iᵀ]
    d = t.column(t.z0)
    qmin = float(t.x.min())
    tied = np.flatnonzero(t.x <= qmin + TIE_RTOL * abs(qmin))
    r = int(tied[0]) if tied.size == 1 else t.lexmin(d, tied)
    entering = t.pivot(r, d, t.z0) + n  # w_r left: its complement z_r enters next
    pivots = since_refactor = 1

    while True:
        if pivots >= cap:
            return "max_pivots", t.z(), t.basis(), pivots
        if since_refactor >= refactor_every:
            since_refactor = 0
            if not t.refactor():
                return "failed", t.z(), t.basis(), pivots
        d = t.column(entering)
        if not np.all(np.isfinite(d)):
            return "failed", t.z(), t.basis(), pivots
        dmax = float(np.max(np.abs(d)))
        cand = np.flatnonzero(d > PIVOT_RTOL * dmax)
        if cand.size == 0:
            return "ray", t.z(), t.basis(), pivots
        x = t.x
        xmax = float(np.max(np.abs(x)))
        xc = x[cand]
        xc = np.where(xc > ZERO_RTOL * max(1.0, xmax), xc, 0.0)  # degenerate zeros are zeros
        x[cand] = xc
        ratios = xc / d[cand]
        tmin = float(ratios.min())
        # ties: the blocking variables that a step of tmin drives to zero together, judged on the
        # values they would take (x_i − tmin·d_i), whose rounding error is ≈ ‖x‖ + tmin·‖d‖
        after = xc - tmin * d[cand]
        tied = cand[after <= TIE_RTOL * max(1.0, xmax + tmin * dmax)]
        at_z0 = tied[t.basic[tied] == t.z0]
        if at_z0.size:
            r = int(at_z0[0])  # the artificial variable wins ties: the path ends here
        elif tied.size == 1:
            r = int(tied[0])
        else:
            r = t.lexmin(d, tied)
        leaving = t.pivot(r, d, entering)
        pivots += 1
        since_refactor += 1
        if leaving == t.z0:
            return "solved", t.z(), t.basis(), pivots
        entering = leaving + n if leaving < n else leaving - n  # the complement enters


class _Basis:
    """A basis of ``w − M z − e z0 = q`` with the columns of ``B⁻¹`` that are not unit vectors.

    Variables are numbered ``i`` (``w_i``), ``n + j`` (``z_j``) and ``2n`` (``z0``); ``basic[p]``
    is the variable in basis position ``p`` and ``x = B⁻¹q`` its value. ``B`` has column ``e_i``
    for ``w_i``, ``−M[:, j]`` for ``z_j`` and ``−e`` for ``z0``. Column ``i`` of ``B⁻¹`` is the unit
    vector ``e_p`` while ``w_i`` is basic at position ``p``; only the columns of the nonbasic ``w``
    (the set ``K``, as many as basic ``z``) are stored, in ``W[:, :m]``. In a contact LCP ``K``
    stays well below ``n``, so a pivot costs ``O(n·m)`` instead of ``O(n²)``, in plain numpy
    (single-threaded loops beat threaded level-2 BLAS on a shared machine).
    """

    def __init__(self, M: np.ndarray, q: np.ndarray) -> None:
        n = q.size
        self.n, self.z0 = n, 2 * n
        self.M = np.asfortranarray(M)  # contiguous columns for the entering column
        self.q = q
        self.x = q.copy()
        self.basic = np.arange(n)
        self.wpos = np.arange(n)  # basis position of w_i, −1 when nonbasic
        self.W = np.zeros((n, n), order="F")  # W[:, c] = column kcols[c] of B⁻¹
        self.kcols = np.zeros(n, dtype=int)
        self.colpos = np.full(n, -1)  # inverse of kcols
        self.m = 0
        self._buf = np.empty((n, n), order="F")

    def column(self, var: int) -> np.ndarray:
        """``B⁻¹a`` for the column ``a`` of variable ``var``."""
        n, m = self.n, self.m
        if var < n:
            return self.W[:, self.colpos[var]].copy()
        a = self.M[:, var - n] if var < 2 * n else np.ones(n)
        d = np.zeros(n)
        if m:
            d = np.einsum("ij,j->i", self.W[:, :m], a[self.kcols[:m]])
        basic_w = self.wpos >= 0
        d[self.wpos[basic_w]] += a[basic_w]
        return -d  # the columns of z and z0 in B are −M[:, j] and −e

    def pivot(self, r: int, d: np.ndarray, entering: int) -> int:
        """Replace the variable at position ``r`` by ``entering`` (``B⁻¹a = d``); return the leaver.

        ``x ← x − θd, x_r ← θ`` with ``θ = x_r/d_r``; ``B⁻¹ ← B⁻¹ − (d − e_r)(B⁻¹)_r / d_r``.
        """
        n, m, W = self.n, self.m, self.W
        dr = d[r]
        theta = self.x[r] / dr
        self.x -= theta * d
        self.x[r] = theta
        if m:
            u = d / dr
            u[r] -= 1.0 / dr
            buf = self._buf[:, :m]
            np.multiply(u[:, None], W[r, :m][None, :], out=buf)
            np.subtract(W[:, :m], buf, out=W[:, :m])
        leaving = int(self.basic[r])
        if leaving < n:  # w leaves: its column of B⁻¹ (was e_r) becomes e_r − (d − e_r)/d_r
            col = -d / dr
            col[r] += 1.0 + 1.0 / dr
            W[:, m] = col
            self.kcols[m] = leaving
            self.colpos[leaving] = m
            self.wpos[leaving] = -1
            self.m = m = m + 1
        if entering < n:  # w enters at r: its column of B⁻¹ is now e_r, no longer stored
            c, last = self.colpos[entering], m - 1
            if c != last:
                W[:, c] = W[:, last]
                self.kcols[c] = self.kcols[last]
                self.colpos[self.kcols[c]] = c
            self.colpos[entering] = -1
            self.wpos[entering] = r
            self.m = last
        self.basic[r] = entering
        return leaving

    def lexmin(self, d: np.ndarray, rows: np.ndarray) -> int:
        """Of the ``rows`` tied in the ratio test, the one whose row of ``B⁻¹ / |d|`` is
        lexicographically smallest ([2]_ §4.9): the lexicographic minimum ratio of ``[x, B⁻¹]``
        once the ``x`` column has tied.

        For the first pivot (``d = −e``) the division by ``|d|`` gives the rule that keeps the
        starting tableau lexicographically positive (of equal ``q_i``, the largest ``i``).
        """
        n, m = self.n, self.m
        L = np.zeros((rows.size, n))
        L[:, self.kcols[:m]] = self.W[rows, :m]
        held = self.basic[rows]
        isw = held < n
        L[np.flatnonzero(isw), held[isw]] = 1.0
        L /= np.abs(d[rows])[:, None]
        tol = LEX_RTOL * max(float(np.max(np.abs(L))), _TINY)
        keep = np.arange(rows.size)
        block = 32  # scan columns in blocks; inside one, the first column that differs decides
        for k0 in range(0, n, block):
            cols = L[keep, k0 : k0 + block]
            for k in np.flatnonzero(cols.max(axis=0) - cols.min(axis=0) > tol):
                col = L[keep, k0 + k]
                keep = keep[col <= col.min() + tol]
                if keep.size == 1:
                    return int(rows[keep[0]])
        return int(rows[keep[0]])  # rows equal to tolerance: any is as good

    def refactor(self) -> bool:
        """Recompute the stored columns of ``B⁻¹`` and ``x`` from scratch; False if singular."""
        n = self.n
        B = np.zeros((n, n))
        for p, var in enumerate(self.basic):
            if var < n:
                B[var, p] = 1.0
            elif var < 2 * n:
                B[:, p] = -self.M[:, var - n]
            else:
                B[:, p] = -1.0
        try:
            inv = np.linalg.inv(B)
        except np.linalg.LinAlgError:
            return False
        if not np.all(np.isfinite(inv)):
            return False
        self.W[:, : self.m] = inv[:, self.kcols[: self.m]]
        self.x = inv @ self.q
        return True

    def z(self) -> np.ndarray:
        """The ``z`` part of the current basic solution."""
        n = self.n
        z = np.zeros(n)
        isz = (self.basic >= n) & (self.basic < 2 * n)
        z[self.basic[isz] - n] = self.x[isz]
        return z

    def basis(self) -> np.ndarray:
        """Sorted indices of the basic ``z``."""
        b = self.basic
        return np.sort(b[(b >= self.n) & (b < 2 * self.n)] - self.n)
