"""The compiled path of :func:`reverse.lcp.solve.solve_lcp`: equilibration, Lemke's method ([2]_
§4.4,
§4.9), the principal re-solve and the verification in one numba-compiled call.

This is the one module that imports numba (``@njit(cache=True)``); :mod:`reverse.lcp.solve` imports
it
lazily, on the first solve, and falls back to the numpy reference (:mod:`reverse.lcp.lemke`) when
numba cannot be imported. The algorithm is the reference's, step for step and with the same
tolerances (imported from :mod:`reverse.lcp.lemke`), on a tableau allocated once per solve:

* the non-unit columns of ``B⁻¹`` (one per basic ``z``) are rows of ``Wt`` and get one rank-1
  update per pivot, in place; the entering column ``B⁻¹a``, the ratio test and the lexicographic
  tie-break ([2]_ §4.9) reuse preallocated vectors — no allocation per pivot except for the
  (rare) lexicographic comparison of tied rows;
* the answer is re-solved from its complementary basis (``M̂[J, J] ẑ_J = −q̂_J``, one step of
  iterative refinement, LAPACK through numba) and verified on the caller's unscaled problem by
  the residual of :func:`reverse.lcp.solve.lcp_residual` (same formula, sums taken over the nonzero
  ``z`` only).

Blocked path (``block > 0``; :func:`reverse.lcp.solve.solve_lcp` uses it from
:data:`reverse.lcp.solve.BLOCKED_MIN_ROWS` rows): the rank-1 updates are delayed, as in blocked LU
factorizations — pivot ``k`` stores its update ``u_k`` (a row of ``U``) and the entries
``(B⁻¹)_r`` of the stored columns before it (a column of ``F``, kept as a row of ``Ft = Fᵀ``),
every ``B⁻¹`` entry the path reads is taken as ``Wt − F U`` (the entering column, the ratio
test's row ``r``, the rows of the lexicographic comparison), and every ``block`` pivots
``Wt −= F U`` is applied as one matrix product (BLAS ``dgemm``). Same pivots on the same
quantities, rounded in another order: on the test problems the same pivots to the same basis
(hence the same re-solved answer, bit for bit).
The flops per pivot stay ``O(m·n)`` — an explicit ``B⁻¹`` costs that — but ``Wt`` is read from
memory once per block instead of once per pivot.

Advanced start (``J0`` non-empty): Lemke's path started from a complementary basis ``J0`` (the
previous step's), as in Fackler & Miranda's ``lemke.m`` [3]_: the basis ``B₀`` has the columns
``−M[:, j]`` for ``j ∈ J0`` and ``e_i`` elsewhere, and the covering vector is chosen as
``d = B₀e`` so that the artificial variable's column in the starting tableau is ``−e``. This is
plain Lemke (covering vector ``e``) on the principal pivot transform of the LCP on ``J0``
([2]_ §2.3, §4.1: the LCP with ``w_J0`` and ``z_J0`` exchanged), written in the original
variables; the lexicographic rule compares rows of ``B⁻¹B₀`` (the transformed problem's
``B⁻¹``), so the anti-cycling argument of [2]_ §4.9 applies unchanged. A path that starts near
the answer needs only the pivots of the contacts whose state changed.

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, SIGGRAPH 2008 (ACM TOG 27(3) 25).
.. [2] Cottle, Pang & Stone, The Linear Complementarity Problem, Academic Press 1992.
.. [3] Miranda & Fackler, Applied Computational Economics and Finance, MIT Press 2002; CompEcon
   toolbox ``lemke.m`` (initial basis from a starting ``z``, covering vector ``B e``).
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit
from numba.core import event as _numba_event

from reverse.lcp.lemke import LEX_RTOL, PIVOT_RTOL, REFACTOR_MIN, TIE_RTOL, ZERO_RTOL

__all__ = [
    "SOLVED",
    "RAY",
    "MAX_PIVOTS",
    "FAILED",
    "NOT_FINITE",
    "COMPILE_NOTICE",
    "solve",
    "solve_batch",
]

#: The line printed on stderr, once per process, when numba is about to compile one of the
#: reverse stepper's kernels (this module's and :mod:`reverse.step.assembly_kernel`'s) because
#: its on-disk cache is cold: the first reverse run after an install or an update (about 80 s
#: on a loaded 2-core machine, 40 s idle; later runs load the cache in a few seconds).
COMPILE_NOTICE = (
    "reverse: compiling the LCP kernels with numba (once after an install or an update, "
    "about a minute; later runs load them from {cache})"
)


class _CompileNotice(_numba_event.Listener):
    """Prints :data:`COMPILE_NOTICE` on stderr the first time numba starts compiling a function
    of the ``reverse`` package in this process. A compile only starts after a cache miss
    (``numba.core.dispatcher.Dispatcher.compile`` looks the cache up first), so a run that loads
    every kernel from the cache prints nothing. It stays registered, silent after its notice
    (numba broadcasts an event by iterating over the list of listeners)."""

    printed = False

    def on_start(self, event) -> None:
        if self.printed:
            return
        dispatcher = (event.data or {}).get("dispatcher")
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
        if not module.startswith("reverse."):
            return
        self.printed = True
        cache = getattr(getattr(dispatcher, "_cache", None), "_cache_path", None)
        print(COMPILE_NOTICE.format(cache=cache or "numba's cache"), file=sys.stderr, flush=True)

    def on_end(self, event) -> None:
        pass


_numba_event.register("numba:compile", _CompileNotice())

#: Status codes of :func:`solve` (the strings of :attr:`reverse.lcp.solve.LCPResult.status`).
SOLVED, RAY, MAX_PIVOTS, FAILED, NOT_FINITE = 0, 1, 2, 3, 4

_TINY = np.finfo(float).tiny
_EPS = np.finfo(float).eps

#: Rows of ``Wt`` per matrix product when the blocked path applies its delayed updates
#: (:func:`_flush`): 256 × n doubles (5.5 MB at n = 2695) of scratch instead of a second n × n.
_FLUSH_ROWS = 256


@njit(cache=True)
def _equilibrate(M, sweeps):
    """Symmetric Ruiz scaling ``d`` (as :func:`reverse.lcp.solve._equilibrate`, same operation
    order:
    ``B = |M| dᵢ dⱼ``, ``d /= √max(row max, column max)``; maxima are exact, so ``d`` is
    bit-identical)."""
    n = M.shape[0]
    A = np.abs(M)
    d = np.ones(n)
    rm = np.empty(n)
    cm = np.empty(n)
    for _ in range(sweeps):
        cm[:] = 0.0
        for i in range(n):
            di = d[i]
            row = A[i]
            r = 0.0
            for j in range(n):  # branch-free, so that it vectorizes
                b = row[j] * di * d[j]
                r = max(r, b)
                cm[j] = max(cm[j], b)
            rm[i] = r
        _rescale(d, rm, cm)
    return d


@njit(cache=True)
def _rescale(d, rm, cm):
    """One Ruiz sweep's update from the row and column maxima: ``d /= √max(row, column)``; an
    all-zero row and column keeps its scale."""
    for i in range(d.size):
        m = max(rm[i], cm[i])
        d[i] /= np.sqrt(m if m > 0.0 else 1.0)


@njit(cache=True)
def _equilibrate_sparse(M, sweeps):
    """:func:`_equilibrate` over the nonzeros of ``M`` only, bit for bit the same ``d``: a zero
    entry gives ``b = 0``, which never raises a maximum that starts at 0, and every other ``b``
    is the same product (``|Mᵢⱼ|·dᵢ·dⱼ``, left to right) into the same exact maxima. For the
    large islands of the blocked path (2% nonzero at 2695 rows: 0.13 s → a few ms)."""
    n = M.shape[0]
    nnz = 0
    for i in range(n):
        for j in range(n):
            if M[i, j] != 0.0:
                nnz += 1
    ii = np.empty(nnz, dtype=np.int64)
    jj = np.empty(nnz, dtype=np.int64)
    vv = np.empty(nnz)
    t = 0
    for i in range(n):
        for j in range(n):
            if M[i, j] != 0.0:
                ii[t], jj[t], vv[t] = i, j, abs(M[i, j])
                t += 1
    d = np.ones(n)
    rm = np.empty(n)
    cm = np.empty(n)
    for _ in range(sweeps):
        rm[:] = 0.0
        cm[:] = 0.0
        for t in range(nnz):
            i, j = ii[t], jj[t]
            b = vv[t] * d[i] * d[j]
            rm[i] = max(rm[i], b)
            cm[j] = max(cm[j], b)
        _rescale(d, rm, cm)
    return d


@njit(cache=True)
def _principal(Mh, qh, J):
    """``(ok, ẑ)``: ``M̂[J, J] ẑ_J = −q̂_J`` (one step of iterative refinement), 0 off ``J``."""
    n, k = qh.size, J.size
    z = np.zeros(n)
    if k == 0:
        return True, z
    A = np.empty((k, k))
    b = np.empty(k)
    for a in range(k):
        b[a] = -qh[J[a]]
        for c in range(k):
            A[a, c] = Mh[J[a], J[c]]
    try:
        zJ = np.linalg.solve(A, b)
        zJ -= np.linalg.solve(A, A @ zJ - b)
    except Exception:  # singular block (LAPACK info > 0)
        return False, z
    for a in range(k):
        if not np.isfinite(zJ[a]):
            return False, z
        z[J[a]] = zJ[a]
    return True, z


@njit(cache=True)
def _residual(M, q, A, d, S, z, w):
    """:func:`reverse.lcp.solve.lcp_residual` of ``z`` (``A = |M̂|``), in the reference's operation
    order (``M @ z`` and ``A @ |ẑ|`` are BLAS matrix-vector products in both); fills
    ``w = M z + q`` on the caller's problem."""
    n = q.size
    wn = M @ z + q
    for i in range(n):
        w[i] = wn[i]
    if n == 0:
        return 0.0
    for i in range(n):
        if not (np.isfinite(z[i]) and np.isfinite(w[i])):
            return np.inf
    zh = z / d
    wh = d * w
    sz = max(np.max(np.abs(zh)), _TINY)
    neg_z = np.max(-zh) / sz
    neg_w = np.max(-wh) / S
    comp = np.max(np.abs(zh * wh)) / sz / S
    blur = np.sqrt(n) * _EPS * np.max(A @ np.abs(zh)) / S
    return max(0.0, neg_z, neg_w, comp) + blur


# ----------------------------------------------------------------------------- Lemke's path
@njit(cache=True)
def _lexmin(d, rows, nt, n, m, Wt, kcols, basic, Mt, in_j0, warm, Ft, U, nu):
    """Of the ``nt`` tied ``rows``, the one whose row of ``B⁻¹B₀ / |d|`` is lexicographically
    smallest ([2]_ §4.9; ``B₀ = I`` for a cold start), as :meth:`reverse.lcp.lemke._Basis.lexmin`.
    ``Ft, U, nu``: the delayed updates of the blocked path (:func:`_pivot`; ``nu = 0``
    on the dense path, where ``Wt`` is current)."""
    L = np.zeros((nt, n))
    for t in range(nt):
        r = rows[t]
        for c in range(m):
            v = Wt[c, r]
            for k in range(nu):
                v -= Ft[k, c] * U[k, r]
            L[t, kcols[c]] = v
        if basic[r] < n:
            L[t, basic[r]] = 1.0
    if warm:  # rows of B⁻¹B₀: the columns of B₀ at positions j ∈ J0 are −M[:, j]
        L0 = L.copy()
        for t in range(nt):
            for p in range(n):
                if in_j0[p]:
                    s = 0.0
                    for i in range(n):
                        s += L0[t, i] * Mt[p, i]
                    L[t, p] = -s
    big = 0.0
    for t in range(nt):
        g = abs(d[rows[t]])
        for k in range(n):
            L[t, k] /= g
            big = max(big, abs(L[t, k]))
    tol = LEX_RTOL * max(big, _TINY)
    keep = np.arange(nt)
    nk = nt
    for k in range(n):
        lo, hi = np.inf, -np.inf
        for a in range(nk):
            v = L[keep[a], k]
            lo = min(lo, v)
            hi = max(hi, v)
        if hi - lo > tol:
            nn = 0
            for a in range(nk):
                if L[keep[a], k] <= lo + tol:
                    keep[nn] = keep[a]
                    nn += 1
            nk = nn
            if nk == 1:
                return rows[keep[0]]
    return rows[keep[0]]


@njit(cache=True)
def _column(var, n, m, Mt, a0, Wt, kcols, colpos, wpos, d, Ft, U, nu, g):
    """``d = B⁻¹a`` for the column ``a`` of variable ``var`` (``w`` column ``e_i``, ``z_j``
    column ``−M[:, j]``, ``z0`` column ``−a0``). The stored columns of ``B⁻¹`` are the rows of
    ``Wt − Ftᵀ[:, :nu] U[:nu]`` (``nu`` delayed rank-1 updates of the blocked path,
    :func:`_pivot`; ``nu = 0`` on the dense path, where every loop over them is empty and
    the arithmetic is the reference's)."""
    if var < n:
        c = colpos[var]
        for i in range(n):
            d[i] = Wt[c, i]
        for k in range(nu):
            f = Ft[k, c]
            if f != 0.0:
                for i in range(n):
                    d[i] -= f * U[k, i]
        return
    a = Mt[var - n] if var < 2 * n else a0
    for i in range(n):
        d[i] = 0.0
    for k in range(nu):
        g[k] = 0.0
    for c in range(m):
        f = a[kcols[c]]
        if f != 0.0:
            row = Wt[c]
            for i in range(n):
                d[i] += f * row[i]
            for k in range(nu):
                g[k] += f * Ft[k, c]
    for k in range(nu):
        f = g[k]
        if f != 0.0:
            for i in range(n):
                d[i] -= f * U[k, i]
    for i in range(n):
        if wpos[i] >= 0:
            d[wpos[i]] += a[i]
    for i in range(n):
        d[i] = -d[i]


@njit(cache=True)
def _pivot(r, d, u, entering, n, m, x, Wt, kcols, colpos, wpos, basic, Ft, U, nu, fc, delay):
    """Replace the variable at position ``r`` by ``entering``; return ``(leaving, m, nu)``.

    ``x ← x − θd, x_r ← θ``; ``B⁻¹ ← B⁻¹ − (d − e_r)(B⁻¹)_r / d_r`` on the stored columns: at
    once (``delay`` False: the dense path, and the first pivot of either path), or delayed (the
    blocked path): ``u`` becomes row ``nu`` of ``U`` and the current ``(B⁻¹)_r`` on the stored
    columns row ``nu`` of ``Ft`` (``F`` transposed, so that this row and the sums below run over
    contiguous memory); the caller applies the ``F U`` block to ``Wt`` (:func:`_flush`) every
    ``U.shape[0]`` pivots. ``Ft`` has no rows on the dense path, so its bookkeeping below is
    empty there."""
    dr = d[r]
    theta = x[r] / dr
    for i in range(n):
        x[i] -= theta * d[i]
    x[r] = theta
    if m:
        for i in range(n):
            u[i] = d[i] / dr
        u[r] -= 1.0 / dr
    if m and not delay:
        for c in range(m):
            row = Wt[c]
            f = row[r]
            if f != 0.0:
                for i in range(n):
                    row[i] -= u[i] * f
    elif m:
        # the current (B⁻¹)_r entries, before this update: fc[c] = Wt[c, r] − Σ_k F[c, k] U[k, r]
        # with k ascending for every c (the same roundings as one sum per c), swept over c for
        # each k so that the loop runs over contiguous rows of Ft (it vectorizes; one sum per c
        # is a chain of nu dependent subtractions)
        for c in range(m):
            fc[c] = Wt[c, r]
        for k in range(nu):
            urk = U[k, r]
            fk = Ft[k]
            for c in range(m):
                fc[c] -= fk[c] * urk
        fn = Ft[nu]
        for c in range(m):
            fn[c] = fc[c]
        for i in range(n):
            U[nu, i] = u[i]
        nu += 1
    leaving = basic[r]
    if leaving < n:  # w leaves: its column of B⁻¹ (was e_r) becomes e_r − (d − e_r)/d_r, stored
        row = Wt[m]  # exact: no delayed update applies to it
        for i in range(n):
            row[i] = -d[i] / dr
        row[r] += 1.0 + 1.0 / dr
        for k in range(Ft.shape[0]):
            Ft[k, m] = 0.0
        kcols[m] = leaving
        colpos[leaving] = m
        wpos[leaving] = -1
        m += 1
    if entering < n:  # w enters at r: its column of B⁻¹ is now e_r, no longer stored
        c, last = colpos[entering], m - 1
        if c != last:
            for i in range(n):
                Wt[c, i] = Wt[last, i]
            for k in range(Ft.shape[0]):
                Ft[k, c] = Ft[k, last]
            kcols[c] = kcols[last]
            colpos[kcols[c]] = c
        colpos[entering] = -1
        wpos[entering] = r
        m = last
    basic[r] = entering
    return leaving, m, nu


@njit(cache=True)
def _flush(m, Wt, Ft, U, T, Fb):
    """``Wt[:m] −= F[:m] U``: the delayed rank-1 updates as one matrix product (BLAS ``dgemm``
    in row blocks of ``T.shape[0]``), so ``Wt`` streams through memory once per block of pivots
    instead of once per pivot. ``F = Ftᵀ``: each row block is copied into the C-contiguous
    scratch ``Fb`` first (exact), so the product is the same ``dgemm`` call on the same
    operands as with ``F`` stored row-major."""
    rb = T.shape[0]
    kb = Ft.shape[0]
    for c0 in range(0, m, rb):
        c1 = min(m, c0 + rb)
        Fblk = Fb[: c1 - c0]
        for k in range(kb):
            fk = Ft[k]
            for c in range(c0, c1):
                Fblk[c - c0, k] = fk[c]
        P = T[: c1 - c0]
        np.dot(Fblk, U, P)
        for c in range(c0, c1):
            row = Wt[c]
            prow = P[c - c0]
            for i in range(row.size):
                row[i] -= prow[i]


@njit(cache=True)
def _refactor(n, m, Mt, a0, q, basic, kcols, wpos, Wt, x, rows_only):
    """Recompute the stored columns of ``B⁻¹`` and ``x = B⁻¹q`` from scratch; False if ``B`` is
    singular.

    By blocks, not by inverting ``B``: with ``Z`` the positions of the basic ``z`` (and ``z0``),
    ``K = kcols`` the rows whose ``w`` is nonbasic (``|K| = |Z| = m``) and ``C = B[K, Z]``, the
    rows of ``B⁻¹[:, K]`` at ``Z`` are ``C⁻¹`` and those at the positions of the basic ``w`` are
    ``−B[R, Z] C⁻¹`` (every other column of ``B`` is a unit vector). ``O(m³ + n m²)`` instead of
    ``O(n³)``: at 2695 rows and m ≈ 1300 about a quarter of the flops.

    ``rows_only`` (the blocked path): the product ``B[:, Z] C⁻¹`` is taken over the rows ``R``
    only (its rows ``K`` are the identity and are never read), ``O(m³ + (n − m) m²)``: each entry
    is the same ``dgemm`` dot product as over all rows — bit for bit on the 2695- and 1630-row
    piles of ``benchmarks/island.py`` (the same path and basis, tested). At 2695 rows (m = 1313)
    the product costs 0.07 s instead of 0.14 s and the refactor 0.32–0.35 s instead of 0.36–0.43
    s (CPU, loaded machine; ``inv(C)``, 0.135 s, is now the larger part). The dense path keeps
    the full product (its arithmetic is the reference's).
    """
    pz = np.empty(m, dtype=np.int64)
    k = 0
    for p in range(n):
        if basic[p] >= n:
            pz[k] = p
            k += 1
    if k != m:
        return False
    BZ = np.empty((n, m))  # the columns of B at Z: −M[:, j] for z_j, −a0 for z0
    vb = np.empty(m, dtype=np.int64)
    for b in range(m):
        vb[b] = basic[pz[b]]
    for b0 in range(0, m, 32):  # 32 columns at a time: rows of BZ written contiguously
        b1 = min(m, b0 + 32)
        for i in range(n):
            for b in range(b0, b1):
                v = vb[b]
                BZ[i, b] = -(a0[i] if v == 2 * n else Mt[v - n, i])
    C = np.empty((m, m))
    qK = np.empty(m)
    for a in range(m):
        qK[a] = q[kcols[a]]
        for b in range(m):
            C[a, b] = BZ[kcols[a], b]
    try:
        Cinv = np.linalg.inv(C)
    except Exception:
        return False
    if not np.all(np.isfinite(Cinv)):
        return False
    xZ = Cinv @ qK
    xR = q - BZ @ xZ
    if rows_only:
        nr = n - m  # the rows R of the basic w (k == m above: exactly n − m)
        rows = np.empty(nr, dtype=np.int64)
        BR = np.empty((nr, m))
        t = 0
        for i in range(n):
            if wpos[i] >= 0:
                rows[t] = wpos[i]
                BR[t] = BZ[i]
                t += 1
        G = BR @ Cinv
        for t in range(nr):
            g = G[t]
            p = rows[t]
            for a in range(m):
                Wt[a, p] = -g[a]
    else:
        G = BZ @ Cinv
        for a in range(m):
            for i in range(n):
                if wpos[i] >= 0:
                    Wt[a, wpos[i]] = -G[i, a]
    for a in range(m):
        for b in range(m):
            Wt[a, pz[b]] = Cinv[b, a]
    for i in range(n):
        if wpos[i] >= 0:
            x[wpos[i]] = xR[i]
    for b in range(m):
        x[pz[b]] = xZ[b]
    return True


@njit(cache=True)
def lemke_path(Ms, q, cap, J0, block):
    """Lemke's method ([2]_ §4.4, §4.9) on the normalized problem, as
    :func:`reverse.lcp.lemke.lemke_path`; with a non-empty ``J0`` the advanced start of the module
    docstring. Returns ``(status code, z, sorted basic z indices, pivots)``.

    ``block = 0``: one rank-1 update of ``B⁻¹`` per pivot (the reference's arithmetic).
    ``block > 0`` (large problems): the blocked path of the module docstring — the updates are
    delayed and applied ``block`` at a time as one matrix product; every ``B⁻¹`` entry the path
    reads is the same quantity, rounded differently."""
    n = q.size
    z0 = 2 * n
    Mt = np.ascontiguousarray(Ms.T)  # Mt[j] = column j, contiguous
    x = q.copy()
    basic = np.arange(n)
    wpos = np.arange(n)
    Wt = np.zeros((n, n))
    kcols = np.zeros(n, dtype=np.int64)
    colpos = np.full(n, -1, dtype=np.int64)
    a0 = np.ones(n)
    in_j0 = np.zeros(n, dtype=np.bool_)
    m = 0
    warm = J0.size > 0
    if warm:
        k = J0.size
        A = np.empty((k, k))
        for a in range(k):
            for c in range(k):
                A[a, c] = Ms[J0[a], J0[c]]
        try:
            Ainv = np.linalg.inv(A)
        except Exception:
            return FAILED, np.zeros(n), np.zeros(0, dtype=np.int64), 0
        if not np.all(np.isfinite(Ainv)):
            return FAILED, np.zeros(n), np.zeros(0, dtype=np.int64), 0
        MJ = np.empty((n, k))
        for i in range(n):
            for c in range(k):
                MJ[i, c] = Ms[i, J0[c]]
        G = MJ @ Ainv  # M[:, J0] M[J0, J0]⁻¹
        qJ = np.empty(k)
        for a in range(k):
            qJ[a] = q[J0[a]]
        xJ = -(Ainv @ qJ)
        xR = q + MJ @ xJ  # w = q + M[:, J0] z_J0 (entries at J0 are ≈ 0, overwritten below)
        for i in range(n):
            x[i] = xR[i]
        for a in range(k):
            j = J0[a]
            in_j0[j] = True
        for i in range(n):
            s = 0.0
            for c in range(k):
                s += MJ[i, c]
            a0[i] = (0.0 if in_j0[i] else 1.0) - s  # B₀e
        for c in range(k):
            j = J0[c]
            x[j] = xJ[c]
            basic[j] = n + j
            wpos[j] = -1
            kcols[c] = j
            colpos[j] = c
            for i in range(n):
                Wt[c, i] = -G[i, c]
            for a in range(k):
                Wt[c, J0[a]] = -Ainv[a, c]
        m = k
    d = np.empty(n)
    u = np.empty(n)
    idx = np.empty(n, dtype=np.int64)
    refactor_every = max(REFACTOR_MIN, n)
    kb = max(block, 0)
    Ft = np.zeros((kb, n if kb else 0))  # delayed updates (blocked path): B⁻¹ rows = Wt − Ftᵀ U
    U = np.zeros((kb, n if kb else 0))
    T = np.empty((min(n, _FLUSH_ROWS) if kb else 0, n if kb else 0))
    Fb = np.empty((min(n, _FLUSH_ROWS) if kb else 0, kb))
    g = np.empty(kb)
    fc = np.empty(n if kb else 0)
    nu = 0

    # first pivot: z0 enters (B⁻¹a = −e) at the level that makes every basic variable ≥ 0
    _column(z0, n, m, Mt, a0, Wt, kcols, colpos, wpos, d, Ft, U, 0, g)
    qmin = x.min()
    if warm and qmin >= 0.0:  # the starting basis is feasible: nothing to pivot
        return SOLVED, _zpart(x, basic, n), _basis(basic, n), 0
    nt = 0
    for i in range(n):
        if x[i] <= qmin + TIE_RTOL * abs(qmin):
            idx[nt] = i
            nt += 1
    r = (
        idx[0]
        if nt == 1
        else _lexmin(d, idx, nt, n, m, Wt, kcols, basic, Mt, in_j0, warm, Ft, U, 0)
    )
    leaving, m, _ = _pivot(
        r, d, u, z0, n, m, x, Wt, kcols, colpos, wpos, basic, Ft, U, 0, fc, False
    )
    entering = leaving + n if leaving < n else leaving - n  # a warm start's z may leave first
    pivots = since = 1
    while True:
        if pivots >= cap:
            return MAX_PIVOTS, _zpart(x, basic, n), _basis(basic, n), pivots
        if since >= refactor_every:
            since = 0
            if not _refactor(n, m, Mt, a0, q, basic, kcols, wpos, Wt, x, kb > 0):
                return FAILED, _zpart(x, basic, n), _basis(basic, n), pivots
            nu = 0  # Wt recomputed from scratch: no delayed update left
        _column(entering, n, m, Mt, a0, Wt, kcols, colpos, wpos, d, Ft, U, nu, g)
        dmax = 0.0
        finite = True
        for i in range(n):
            if not np.isfinite(d[i]):
                finite = False
            dmax = max(dmax, abs(d[i]))
        if not finite:
            return FAILED, _zpart(x, basic, n), _basis(basic, n), pivots
        xmax = 0.0
        for i in range(n):
            xmax = max(xmax, abs(x[i]))
        zero = ZERO_RTOL * max(1.0, xmax)
        nc = 0
        tmin = np.inf
        for i in range(n):
            if d[i] > PIVOT_RTOL * dmax:
                if not x[i] > zero:
                    x[i] = 0.0  # degenerate zeros are zeros
                idx[nc] = i
                nc += 1
                tmin = min(tmin, x[i] / d[i])
        if nc == 0:
            return RAY, _zpart(x, basic, n), _basis(basic, n), pivots
        # ties: the blocking variables that a step of tmin drives to zero together
        tie = TIE_RTOL * max(1.0, xmax + tmin * dmax)
        nt = 0
        r = -1
        for a in range(nc):
            i = idx[a]
            if x[i] - tmin * d[i] <= tie:
                if basic[i] == z0 and r < 0:
                    r = i  # the artificial variable wins ties: the path ends here
                idx[nt] = i
                nt += 1
        if r < 0:
            r = (
                idx[0]
                if nt == 1
                else _lexmin(d, idx, nt, n, m, Wt, kcols, basic, Mt, in_j0, warm, Ft, U, nu)
            )
        leaving, m, nu = _pivot(
            r, d, u, entering, n, m, x, Wt, kcols, colpos, wpos, basic, Ft, U, nu, fc, kb > 0
        )
        if kb and nu == kb:
            _flush(m, Wt, Ft, U, T, Fb)
            nu = 0
        pivots += 1
        since += 1
        if leaving == z0:
            return SOLVED, _zpart(x, basic, n), _basis(basic, n), pivots
        entering = leaving + n if leaving < n else leaving - n  # the complement enters


@njit(cache=True)
def _zpart(x, basic, n):
    z = np.zeros(n)
    for p in range(n):
        if n <= basic[p] < 2 * n:
            z[basic[p] - n] = x[p]
    return z


@njit(cache=True)
def _basis(basic, n):
    mask = np.zeros(n, dtype=np.bool_)
    for p in range(n):
        if n <= basic[p] < 2 * n:
            mask[basic[p] - n] = True
    return np.flatnonzero(mask)


# ----------------------------------------------------------------------------- one solve
@njit(cache=True)
def _answer(M, q, Mh, qh, A, d, S, w, basis, z_path, rtol):
    """The verified answer of a Lemke path that ended on ``basis``: its re-solve
    (``M̂[J, J] ẑ_J = −q̂_J``) if that verifies on the caller's problem, else the path's own
    ``z_path`` if that does. Returns ``(found, z, residual)``."""
    ok, zh = _principal(Mh, qh, basis)
    z, r = z_path, np.inf
    for trial in range(2):
        if trial == 0 and not ok:
            continue
        z = d * zh if trial == 0 else z_path
        r = _residual(M, q, A, d, S, z, w)
        if r <= rtol:
            return True, z, r
    return False, z, r


@njit(cache=True)
def solve(M, q, warm, has_warm, advanced, advanced_cap, cap, sweeps, rtol, block):
    """One LCP, start to verified answer (:func:`reverse.lcp.solve.solve_lcp`'s steps up to the
    ladder).

    Parameters
    ----------
    M, q : the caller's problem (float64, C-contiguous).
    warm : int64 array
        Warm-start basis (sorted, unique, in range); used when ``has_warm``.
    advanced : bool
        When the warm basis does not verify, start Lemke's path from it (module docstring)
        before the cold start.
    advanced_cap : int
        Pivot cap of that path (a start that needs more is no better than a cold one).
    cap : int
        Pivot cap per Lemke run.
    sweeps : int
        Ruiz sweeps.
    rtol : float
        Verification tolerance.
    block : int
        0: the dense path (one rank-1 update of ``B⁻¹`` per pivot, the reference's arithmetic);
        > 0: the blocked path with that many delayed updates (:func:`lemke_path`).

    Returns
    -------
    status, z, w, basis, pivots, residual, route
        ``route``: 0 trivial, 1 warm start, 2 advanced start, 3 cold Lemke (its tableau or
        re-solved answer), −1 not solved (the caller runs the ladder).
    """
    n = q.size
    w = q.copy()
    empty = np.zeros(0, dtype=np.int64)
    for i in range(n):
        if not np.isfinite(q[i]):
            return NOT_FINITE, np.zeros(n), w, empty, 0, np.inf, -1
        for j in range(n):
            if not np.isfinite(M[i, j]):
                return NOT_FINITE, np.zeros(n), w, empty, 0, np.inf, -1
    if n == 0 or q.min() >= 0.0:  # z = 0, w = q: exact
        return SOLVED, np.zeros(n), w, empty, 0, 0.0, 0
    d = _equilibrate(M, sweeps) if block == 0 else _equilibrate_sparse(M, sweeps)
    Mh = np.empty((n, n))
    qh = np.empty(n)
    S = _TINY
    sM = 0.0
    for i in range(n):
        for j in range(n):
            Mh[i, j] = M[i, j] * d[i] * d[j]
            sM = max(sM, abs(Mh[i, j]))
        qh[i] = d[i] * q[i]
        S = max(S, abs(qh[i]))
    A = np.abs(Mh)
    if has_warm:
        ok, zh = _principal(Mh, qh, warm)
        if ok:
            z = d * zh
            r = _residual(M, q, A, d, S, z, w)
            if r <= rtol:
                return SOLVED, z, w, warm, 0, r, 1
    sM = sM if sM > 0.0 else 1.0
    sq = S if S > _TINY else 1.0
    Ms = Mh / sM
    qs = qh / sq
    pivots = 0
    if has_warm and advanced and warm.size:
        status, zs, basis, piv = lemke_path(Ms, qs, min(cap, advanced_cap), warm, block)
        pivots += piv
        if status == SOLVED:
            found, z, r = _answer(M, q, Mh, qh, A, d, S, w, basis, d * zs * (sq / sM), rtol)
            if found:
                return SOLVED, z, w, basis, pivots, r, 2
    status, zs, basis, piv = lemke_path(Ms, qs, cap, empty, block)
    pivots += piv
    z_last = d * zs * (sq / sM)
    if status == SOLVED:
        found, z, r = _answer(M, q, Mh, qh, A, d, S, w, basis, z_last, rtol)
        if found:
            return SOLVED, z, w, basis, pivots, r, 3
        status = FAILED  # Lemke's answer does not verify
    r = _residual(M, q, A, d, S, z_last, w)
    return status, z_last, w, basis, pivots, r, -1


@njit(cache=True)
def solve_batch(
    Mflat, m_offsets, qflat, offsets, select, warm_flat, warm_offsets, has_warm, cap_per_row,
    sweeps, rtol,
):  # fmt: skip
    """Many independent LCPs in one compiled call (the islands of a step), each exactly as
    :func:`solve` solves it alone with ``advanced = False`` and ``block = 0`` (the dense path;
    callers send only problems below :data:`reverse.lcp.solve.ADVANCED_START_MIN_ROWS` rows).

    Problem ``k`` has ``n_k = offsets[k+1] − offsets[k]`` rows: ``q_k = qflat[offsets[k]:
    offsets[k+1]]`` and ``M_k`` the ``n_k × n_k`` row-major block of ``Mflat`` starting at
    ``m_offsets[k]``; its warm basis (sorted, unique, in range) is
    ``warm_flat[warm_offsets[k]:warm_offsets[k+1]]`` when ``has_warm[k]``. Only the problems
    with ``select[k]`` are solved (the others: ``route = −2``, ``z = w = 0``, nothing set).
    Returns flat ``z, w`` (laid out like ``qflat``), per problem ``status, pivots, residual,
    route`` (:func:`solve`'s) and the basic-z mask (laid out like ``qflat``).
    """
    K = offsets.size - 1
    total = qflat.size
    z_all = np.zeros(total)
    w_all = np.zeros(total)
    mask = np.zeros(total, dtype=np.bool_)
    status = np.zeros(K, dtype=np.int64)
    pivots = np.zeros(K, dtype=np.int64)
    resid = np.zeros(K)
    route = np.full(K, -2, dtype=np.int64)
    for k in range(K):
        if not select[k]:
            continue
        o0, o1 = offsets[k], offsets[k + 1]
        n = o1 - o0
        start = m_offsets[k]
        M = np.ascontiguousarray(Mflat[start : start + n * n].reshape((n, n)))
        q = qflat[o0:o1].copy()
        warm = warm_flat[warm_offsets[k] : warm_offsets[k + 1]].copy()
        st, z, w, basis, piv, r, rt = solve(
            M, q, warm, has_warm[k], False, 0, cap_per_row * n, sweeps, rtol, 0
        )
        z_all[o0:o1] = z
        w_all[o0:o1] = w
        for j in basis:
            mask[o0 + j] = True
        status[k], pivots[k], resid[k], route[k] = st, piv, r, rt
    return z_all, w_all, mask, status, pivots, resid, route
