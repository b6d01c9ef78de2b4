"""Lemke's complementary pivoting for the linear complementarity problem w = Mz + q, z ⟂ w ≥ 0.

The contact LCPs of [1]_ §2.1 (Eq. 3, 4, 6: normal impulses and pyramid friction with a slack row,
solved together as in Stewart–Trinkle/Anitescu–Potra [4]_) are solved with Lemke's algorithm, the
method of [1]_ §2.2. Notation follows [2]_: ``w = M z + q``, ``z ≥ 0``, ``w ≥ 0``, ``zᵀw = 0``; in
a contact LCP ``z`` holds impulses and ``w`` velocities (the paper's ``f`` and ``v^{t+Δt}``).

Algorithm (:func:`solve_lcp`)
-----------------------------
* ``q ≥ 0``: the trivial solution ``z = 0``, no pivots.
* Warm start from a previous basis (the index set ``J`` of basic ``z``): ``M[J, J] z_J = −q_J`` is
  solved and accepted only if it verifies (below); otherwise a cold start.
* Scaling: the problem is equilibrated symmetrically, ``M̂ = D M D``, ``q̂ = D q`` (Ruiz [5]_;
  ``z = D ẑ``, ``w = D⁻¹ŵ``), then normalized to ``max|M̂| = max|q̂| = 1``. Symmetric scaling
  keeps the matrix class (PSD, P, copositive, the skew friction-cone coupling) and makes rows in
  different units (velocity rows, impulse-valued slack rows, bodies of very different mass)
  comparable, so one set of relative tolerances fits every row.
* Cold start: Lemke's method ([2]_ §4.4; :func:`reverse.lcp.lemke.lemke_path`) on
  ``ŵ = M̂ ẑ + e z0 + q̂``: the covering vector is ``e`` in equilibrated units, ``D⁻¹e`` in the
  caller's. The path, and hence which solution is found when several exist, depends on this
  choice (as in Drake and Siconos, which use ``e``; where ``D`` is uniform, as for all the peer
  problems of the tests, the two coincide). The non-unit columns of ``B⁻¹`` are kept and updated
  by one rank-1 update per pivot (``O(n·m)`` for ``m`` basic ``z``) and recomputed from scratch
  every ``max(_REFACTOR_MIN, n)`` pivots.
* Ratio test: lexicographic minimum ratio over the rows of ``[B⁻¹q, B⁻¹]`` ([2]_ §4.9), which
  rules out cycling on degenerate problems. If the artificial variable ``z0`` is among the tied
  blocking variables it leaves, which ends the path ([2]_ Ex. 4.4.16: without this rule Lemke ends
  on a ray for PSD problems that have solutions).
* Pivot cap ``DEFAULT_PIVOTS_PER_ROW·n`` (Lemke is exponential in the worst case, [3]_ Ch. 6).
* The answer is the solution of the final complementary basis ``J``, re-solved from scratch
  (``M̂[J, J] ẑ_J = −q̂_J``, one step of iterative refinement; the tableau's own values are the
  second candidate), so it does not carry the update error of the pivots.

Engines
-------
Two implementations of the steps above give the same answers:

* ``engine="compiled"`` (the default whenever numba can be imported):
:mod:`reverse.lcp.lemke_kernel`
  runs everything up to the verified answer — equilibration, warm start, Lemke on a tableau
  allocated once per solve, re-solve, verification — in one numba-compiled call, in the
  reference's operation order. On the verification sets of the tests it takes the same pivots
  to the same basis and returns bit-identical ``z`` (tested to 1e-12; measured: all identical),
  and reverse runs are bit-identical to the numpy engine's. Compiled once per machine
  (``cache=True``, ≈ 30 s), loaded in ≈ 1 s per process on first use; ``import reverse.lcp.solve``
  itself does not load numba.
* ``engine="numpy"``: :mod:`reverse.lcp.lemke`, the reference the compiled path is tested against,
  and the fallback when numba is missing.

From :data:`BLOCKED_MIN_ROWS` (300) rows the compiled engine delays the rank-1 updates of
``B⁻¹`` and applies them :data:`UPDATE_BLOCK` at a time as one matrix product (the blocked path
of :mod:`reverse.lcp.lemke_kernel`): the same pivots, rounded in another order (on the test
problems and the 850- and 1630-row piles of ``benchmarks/island.py``, the same basis and the same
answer to the bit); below it, the reference's arithmetic as above.

The fallback ladder below is numpy code in both (it calls the compiled Lemke when available).

Advanced start ([6]_; :mod:`reverse.lcp.lemke_kernel`): when a warm start does not verify, Lemke's
path can start from the warm basis instead of the standard one (covering vector ``B₀e``: plain
Lemke on the principal pivot transform of the LCP on that basis, [2]_ §4.1, with the same
lexicographic rule). Near the answer it needs only the pivots of the contacts that changed; it may
end on another solution of an LCP with several, so by default it runs only for ``n ≥``
:data:`ADVANCED_START_MIN_ROWS` (where a cold start is what costs), and its answer is verified
like any other, with the cold start as its fallback.

Batches: :func:`solve_lcp_batch` solves many small problems (the islands of a step) in one
compiled call, each exactly as :func:`solve_lcp` would.

Verification and fallback ladder (:mod:`reverse.lcp.fallback`)
--------------------------------------------------------------
Every ``"solved"`` answer is checked on the caller's (unscaled) ``M`` and ``q`` by
:func:`lcp_residual` (``z ≥ −tol``, ``w ≥ −tol``, ``|zᵢwᵢ| ≤ tol`` in units that make the rows
and columns of ``M`` comparable). If plain Lemke gives no verified solution — it claims one that
does not verify, breaks down numerically, ends on a ray or hits the pivot cap — the ladder is:

1. regularized retry: Lemke on ``M̂ + αI``, ``α = ρ·max|M̂|`` for ``ρ`` in ``_REG_STEPS``
   (``αD⁻²`` in the caller's units); the basis it ends on is re-solved on the *original*
   problem (then its raw answer is tried); the first answer that verifies on the original
   problem is returned with ``fallback = "regularized(alpha=…)"``;
2. brute-force enumeration of complementary bases (:func:`solve_lcp_enumeration`) when
   ``n ≤ ENUMERATION_MAX_N``, ``fallback = "enumeration"``;
3. otherwise Lemke's own status (``"ray"``, ``"max_pivots"``, or ``"failed"`` for a breakdown or
   an answer that did not verify), its last iterate, the residual, and ``fallback`` listing the
   rungs tried.

For copositive-plus ``M`` (e.g. PSD) a ray certifies that the LCP has no solution, and then the
ladder cannot verify anything either; for other matrices a ray is Lemke's known limit (the
bimatrix game of the tests) and the ladder may still find a solution. Nothing unverified is ever
labelled ``"solved"``; ``regularize=False`` returns plain Lemke's outcome.

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, SIGGRAPH 2008 (ACM TOG 27(3) 25).
.. [2] Cottle, Pang & Stone, The Linear Complementarity Problem, Academic Press 1992.
.. [3] Murty, Linear Complementarity, Linear and Nonlinear Programming, Heldermann 1988;
   Murty, Computational complexity of complementary pivot methods, Math. Prog. Study 7 (1978).
.. [4] Stewart & Trinkle, An implicit time-stepping scheme for rigid body dynamics with inelastic
   collisions and Coulomb friction, IJNME 39 (1996); Anitescu & Potra, Formulating dynamic
   multi-rigid-body contact problems with friction as solvable LCPs, Nonlinear Dynamics 14 (1997).
.. [5] Ruiz, A scaling algorithm to equilibrate both rows and columns norms in matrices,
   RAL-TR-2001-034 (2001).
.. [6] Miranda & Fackler, Applied Computational Economics and Finance, MIT Press 2002; CompEcon
   toolbox ``lemke.m`` (starting basis from a previous ``z``, covering vector ``B e``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from reverse.lcp.fallback import ENUMERATION_MAX_N, enumerate_bases, run_ladder
from reverse.lcp.lemke import lemke_path

__all__ = [
    "ADVANCED_PIVOTS_PER_ROW",
    "ADVANCED_START_MIN_ROWS",
    "BLOCKED_MIN_ROWS",
    "DEFAULT_PIVOTS_PER_ROW",
    "ENUMERATION_MAX_N",
    "UPDATE_BLOCK",
    "START_NAMES",
    "VERIFY_RTOL",
    "LCPArrays",
    "LCPError",
    "LCPResult",
    "lcp_residual",
    "solve_lcp",
    "solve_lcp_arrays",
    "solve_lcp_batch",
    "solve_lcp_enumeration",
]

# --- tolerances and limits (every one with its reason)

#: Verification tolerance of :func:`lcp_residual` (dimensionless). The re-solved answer is
#: accurate to a few n·eps (≈ 1e-13 at n = 1200, measured ≤ 1e-14 on contact problems); 1e-9
#: leaves four decades for ill-conditioned bases and is far below any physical accuracy need.
VERIFY_RTOL = 1e-9

#: Pivot cap per row: ``max_pivots = 50·n``, as in Fackler & Miranda's lemke.m (without its
#: ceiling of 1000: a 1200-row contact problem takes ≈ 760). Contact and P-matrix problems take
#: ≈ 0.5n–2n pivots; Murty's family [3]_ takes 2ⁿ, and from n = 9 on the cap stops it.
DEFAULT_PIVOTS_PER_ROW = 50

#: Symmetric Ruiz equilibration sweeps ([5]_): each sweep roughly halves the log-distance of the
#: row/column maxima from 1, so 8 sweeps bring a 1e6 spread to within a few percent — enough,
#: since the scaling only has to make rows comparable, not exactly equal. Measured: contact
#: problems with rows and columns rescaled by random factors spanning 1e6 solve like the
#: originals (without equilibration, a 1e4 spread already failed 40%).
_RUIZ_SWEEPS = 8

#: Smallest problem for which a warm start that does not verify seeds an advanced-start Lemke
#: path (:mod:`reverse.lcp.lemke_kernel`) instead of a cold start. Below it a cold compiled solve
#: costs less than ≈ 1 ms and the answer stays the cold path's (the same as before issue 17 when
#: the LCP has several solutions); above it the cold path's cost (≈ 15 000 pivots, 67 s at 2695
#: rows in numpy) is what the advanced start avoids.
ADVANCED_START_MIN_ROWS = 300

#: Pivot cap of the advanced start, per row: a warm basis close to the answer needs a few pivots
#: per changed contact; one that needs more than ``n`` is no better than the standard start
#: (0.5n–5n pivots on contact problems: 2706 at 1630 rows, 14672 at 2695), which then runs. On
#: the 2695-row pile, a start from the normal rows alone ran 46 508 pivots without it.
ADVANCED_PIVOTS_PER_ROW = 1

#: Smallest problem solved on the compiled kernel's blocked path (:mod:`reverse.lcp.lemke_kernel`:
#: the rank-1 updates of ``B⁻¹`` delayed and applied :data:`UPDATE_BLOCK` at a time as one
#: matrix product). Per pivot the dense path streams the ``m × n`` stored columns of ``B⁻¹``
#: through memory once (≈ 26 MB at 2695 rows, m ≈ 1200); the blocked path reads them once per
#: block. Measured (issue 38, ``docs/studies/large-islands.md``; CPU s of a cold solve, median of
#: 5, loaded 2-core machine, dense → blocked): 300 rows 0.0048 → 0.0041, 600 rows 0.038 → 0.032,
#: 850 rows (a pile) 0.142 → 0.083, 1200 rows 0.219 → 0.122, 1630 rows 1.86 → 0.67; the same
#: pivots and the same ``z`` to the bit on each. It equals :data:`ADVANCED_START_MIN_ROWS`: islands
#: of 300 rows or more may return any verified answer (issue 38's decision), smaller ones keep
#: the dense path, whose arithmetic is the reference's (bit-identical answers, the tests), and
#: so every shipped scene (spelling balls: ≤ 69 rows) and the batch entry
#: (:func:`solve_lcp_arrays`, islands under 300 rows) are unchanged.
#:
#: Large piles are statically indeterminate and their LCPs have many solutions; which one the
#: path ends on depends on the rounding of its products. Measured on the 2695-row pile of
#: ``benchmarks/island.py``: OpenBLAS on 2 threads instead of 1 (another summation order in
#: the ``dgemm`` of the blocked path) takes 14 680 pivots instead of 14 674 to a basis that
#: differs in 2 of 1313 indices; both answers verify (residual 4e-13) and differ by 9e-4 of
#: ``max|z|`` (``w`` by 8e-4 of ``max|w|``); :data:`UPDATE_BLOCK` = 128 ends on yet another
#: basis (14 676 pivots). From the threshold on an answer is reproducible bit for bit only
#: with the same BLAS, thread count and block size — one reason the benchmarks set
#: ``OPENBLAS_NUM_THREADS=1``.
BLOCKED_MIN_ROWS = ADVANCED_START_MIN_ROWS

#: Delayed rank-1 updates per matrix product on the blocked path: 64 makes the product
#: compute-bound (64 flops per ``B⁻¹`` entry loaded) at 0.5 MB of ``U`` per 1000 rows; 32 was
#: measured 1.9× slower per pivot, and the per-pivot reads through the delayed updates
#: (``O(64·(m + n))``) stay small next to the ``O(m·n)`` product.
UPDATE_BLOCK = 64

_TINY = np.finfo(float).tiny
_EPS = np.finfo(float).eps


class LCPError(ValueError):
    """Invalid input to the LCP solvers (shapes, non-finite numbers, enumeration too large)."""


@dataclass
class LCPResult:
    """Outcome of an LCP solve.

    Attributes
    ----------
    z : ndarray, shape (n,)
        The solution when ``status == "solved"``; otherwise the last iterate (not a solution).
    w : ndarray, shape (n,)
        ``M z + q``, recomputed on the caller's problem.
    status : str
        ``"solved"`` (verified on the caller's problem), ``"ray"`` (Lemke ended on a secondary
        ray), ``"max_pivots"`` (pivot cap reached) or ``"failed"`` (numerical breakdown, or an
        answer that did not verify); the last three only after the fallback ladder failed too.
    pivots : int
        Pivots taken, summed over every rung of the ladder that ran (enumeration counts the
        principal systems it solved); 0 for the trivial solution and a successful warm start.
    basis : ndarray of int
        Sorted indices ``J`` of the basic ``z`` (``w_J = 0``; ``z`` is 0 off ``J``). Pass it as
        ``warm_start`` for a nearby problem.
    residual : float
        :func:`lcp_residual` of ``z`` on the caller's problem (dimensionless; compare with ``tol``).
    fallback : str
        ``""`` if plain Lemke (or the trivial solution, or the warm start) produced the answer;
        otherwise the rung that did (``"regularized(alpha=…)"`` or ``"enumeration"``), or, when
        none did, ``"tried …"`` with the rungs that ran.
    start : str
        How the answer of the solver proper was reached: ``"trivial"`` (``q ≥ 0``), ``"warm"``
        (the warm-start basis verified), ``"advanced"`` (Lemke's path started from the warm-start
        basis), ``"cold"`` (Lemke from the standard start), ``""`` when the ladder ran.
    """

    z: np.ndarray
    w: np.ndarray
    status: str
    pivots: int
    basis: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    residual: float = float("nan")
    fallback: str = ""
    start: str = ""

    @property
    def solved(self) -> bool:
        """True when ``status == "solved"`` (the answer passed verification)."""
        return self.status == "solved"


# --- verification


def lcp_residual(M: np.ndarray, q: np.ndarray, z: np.ndarray) -> float:
    """Scale-free violation of the LCP conditions by ``z`` (0 for an exact solution).

    ``M`` is first equilibrated, ``M̂ = D M D`` with every row and column maximum ≈ 1 (symmetric
    Ruiz [5]_), so that rows in different units (velocities, and the impulse-valued friction-cone
    rows of a contact LCP) become comparable: ``ŵ = D w``, ``ẑ = D⁻¹ z``, ``q̂ = D q``, and ``w``
    is computed from the caller's ``M`` and ``q``. With ``S = ‖q̂‖∞`` the residual is the
    largest of

    * ``max(−ẑᵢ) / ‖ẑ‖∞`` (z ≥ 0),
    * ``max(−ŵᵢ) / S`` (w ≥ 0),
    * ``max |ẑᵢ ŵᵢ| / (‖ẑ‖∞ S)`` (complementarity),

    plus the rounding uncertainty of the computed ``ŵ``, ``√n·eps·max(|M̂||ẑ|)/S``. A value ``r``
    then bounds (to first order) how far ``q̂`` must move, in units of ``S``, for ``z`` to be an
    exact solution. The yardstick is ``q``, deliberately not ``|M||z|``: a tolerance relative to
    ``|M||z|`` would accept, for an infeasible problem, the huge ``z`` (1e16 has been seen) of a
    regularized or singular principal solve, whose ``w`` is rounding noise; the rounding term
    rejects such a ``z`` even when the noise happens to look complementary.

    Parameters
    ----------
    M : ndarray, shape (n, n)
    q : ndarray, shape (n,)
    z : ndarray, shape (n,)

    Returns
    -------
    float
        Dimensionless; ``z`` verifies when this is ``≤ tol`` (default :data:`VERIFY_RTOL`).
    """
    M, q = _check_problem(M, q)
    return _Problem(M, q).residual(np.asarray(z, dtype=float))


class _Problem:
    """One LCP: the caller's ``M, q`` (verification) and the equilibrated ``M̂, q̂`` (numerics).

    ``M̂ = D M D``, ``q̂ = D q`` with the symmetric Ruiz scaling ``D`` of :func:`_equilibrate`;
    ``z = D ẑ`` and ``w = D⁻¹ ŵ``, so complementarity and signs are unchanged and every solve
    (Lemke, principal re-solves, enumeration) works on ``M̂``.
    """

    def __init__(self, M: np.ndarray, q: np.ndarray, kernel=None) -> None:
        self.M, self.q = M, q
        self.kernel = kernel  # reverse.lcp.lemke_kernel for the ladder's Lemke runs, or None: numpy
        self.d = _equilibrate(M)
        self.Mh = M * self.d[:, None] * self.d[None, :]
        self.qh = self.d * q
        self.A = np.abs(self.Mh)
        self.S = max(float(np.max(np.abs(self.qh))), _TINY) if q.size else 1.0

    def residual(self, z: np.ndarray, w: np.ndarray | None = None) -> float:
        """:func:`lcp_residual`, with ``w = M z + q`` computed from the caller's problem."""
        if z.size == 0:
            return 0.0
        if w is None:
            w = self.M @ z + self.q
        if not (np.all(np.isfinite(z)) and np.all(np.isfinite(w))):
            return float("inf")
        zh = z / self.d
        wh = self.d * w
        sz = max(float(np.max(np.abs(zh))), _TINY)
        neg_z = float(np.max(-zh)) / sz
        neg_w = float(np.max(-wh)) / self.S
        comp = float(np.max(np.abs(zh * wh))) / sz / self.S
        # rounding uncertainty of the computed w: ≈ √n·eps·|M̂||ẑ| (random-walk error of a dot
        # product); a z so large that w cannot be computed to tol never verifies
        blur = np.sqrt(z.size) * _EPS * float(np.max(self.A @ np.abs(zh))) / self.S
        return max(0.0, neg_z, neg_w, comp) + blur

    def principal(self, J: np.ndarray) -> np.ndarray | None:
        """``z`` with ``M[J, J] z_J = −q_J`` and 0 off ``J`` (solved on ``M̂``), or None."""
        zh = _principal_solution(self.Mh, self.qh, J)
        return None if zh is None else self.d * zh

    def lemke(self, cap: int, alpha: float = 0.0):
        """Lemke on ``M̂ + αI``, itself normalized to ``max|M̂| = max|q̂| = 1`` (a uniform scaling:
        the same path). Returns ``(status, z, basis, pivots)``, ``z`` the tableau's last iterate
        in the caller's units.
        """
        Mh = self.Mh + alpha * np.eye(self.q.size) if alpha else self.Mh
        sM = float(np.max(np.abs(Mh))) or 1.0
        sq = float(np.max(np.abs(self.qh))) or 1.0
        # ŵ/sq = (M̂/sM)(ẑ·sM/sq) + q̂/sq: ẑ' = ẑ·sM/sq solves the normalized problem
        if self.kernel is None:
            status, zs, basis, pivots = lemke_path(Mh / sM, self.qh / sq, cap)
        else:
            code, zs, basis, pivots = self.kernel.lemke_path(
                Mh / sM, self.qh / sq, cap, _NO_BASIS, _block(self.q.size)
            )
            status = _STATUS[code]
        return status, self.d * zs * (sq / sM), basis, pivots

    def result(self, z, status, pivots, basis, fallback) -> LCPResult:
        w = self.M @ z + self.q
        return LCPResult(
            z=z,
            w=w,
            status=status,
            pivots=int(pivots),
            basis=np.asarray(basis, dtype=int),
            residual=self.residual(z, w),
            fallback=fallback,
        )


def _equilibrate(M: np.ndarray) -> np.ndarray:
    """Symmetric Ruiz scaling ``d`` ([5]_): ``max|dᵢ Mᵢⱼ dⱼ|`` over row i and column i ≈ 1.

    Symmetric (one factor per index, ``D M D``) so that the matrix class is kept: PSD, P,
    copositive, and the skew pair ``E, −Eᵀ`` of the friction-cone rows stay what they are.
    """
    A = np.abs(M)
    d = np.ones(A.shape[0])
    for _ in range(_RUIZ_SWEEPS):
        B = A * d[:, None] * d[None, :]
        m = np.maximum(B.max(axis=1, initial=0.0), B.max(axis=0, initial=0.0))
        d /= np.sqrt(np.where(m > 0.0, m, 1.0))  # an all-zero row and column keeps scale 1
    return d


# --- public solvers


def solve_lcp(
    M: np.ndarray,
    q: np.ndarray,
    *,
    warm_start: np.ndarray | None = None,
    max_pivots: int | None = None,
    tol: float | None = None,
    regularize: bool = True,
    engine: str = "auto",
    advanced_start: bool | None = None,
) -> LCPResult:
    """Solve ``w = M z + q, z ≥ 0, w ≥ 0, zᵀw = 0`` by Lemke's method ([1]_ §2.2, [2]_ §4.4).

    Parameters
    ----------
    M : ndarray, shape (n, n)
        LCP matrix (for contacts: the ``J M⁻¹ Jᵀ`` blocks and the friction-cone rows of
        [1]_ Eq. 3–6).
    q : ndarray, shape (n,)
        LCP vector.
    warm_start : array of int or bool mask, optional
        A previous :attr:`LCPResult.basis` (indices of the basic ``z``). Used only if the
        complementary solution it defines verifies on this problem; otherwise a cold start.
    max_pivots : int, optional
        Pivot cap for each Lemke run; default :data:`DEFAULT_PIVOTS_PER_ROW` ``· n``.
    tol : float, optional
        Verification tolerance for :func:`lcp_residual`; default :data:`VERIFY_RTOL`.
    regularize : bool
        Run the fallback ladder (regularized retries, then enumeration for ``n ≤ 12``) when plain
        Lemke gives no verified solution. With ``False``, plain Lemke's outcome is returned.
    engine : {"auto", "compiled", "numpy"}
        ``"compiled"``: the numba kernel (:mod:`reverse.lcp.lemke_kernel`; the same algorithm and
        tolerances, one compiled call up to the verified answer); ``"numpy"``: the reference
        implementation (:mod:`reverse.lcp.lemke`); ``"auto"`` (default): compiled when numba can be
        imported, else numpy. ``"compiled"`` without numba raises :class:`LCPError`.
    advanced_start : bool, optional
        When ``warm_start`` does not verify, start Lemke's path from it (covering vector ``B₀e``,
        :mod:`reverse.lcp.lemke_kernel`) before the cold start: few pivots when the basis is close.
        It may pick a different solution of an LCP with several; default (``None``): on for
        ``n ≥`` :data:`ADVANCED_START_MIN_ROWS`. Compiled engine only (the numpy engine
        ignores it and starts cold).

    Returns
    -------
    LCPResult
    """
    if engine not in ("auto", "compiled", "numpy"):
        raise LCPError(f"engine must be 'auto', 'compiled' or 'numpy', got {engine!r}")
    kernel = None if engine == "numpy" else _kernel()
    if kernel is None and engine == "compiled":
        raise LCPError("engine='compiled' needs numba, which could not be imported")
    if kernel is not None:
        return _solve_compiled(
            kernel, M, q, warm_start, max_pivots, tol, regularize, advanced_start
        )
    M, q = _check_problem(M, q)
    n = q.size
    rtol = VERIFY_RTOL if tol is None else float(tol)
    cap = DEFAULT_PIVOTS_PER_ROW * n if max_pivots is None else max(1, int(max_pivots))
    if n == 0 or np.all(q >= 0.0):  # z = 0, w = q: exact
        return LCPResult(
            np.zeros(n), q.copy(), "solved", 0, np.zeros(0, dtype=int), 0.0, "", "trivial"
        )
    prob = _Problem(M, q)

    if warm_start is not None:
        J = _basis_indices(warm_start, n)
        z = prob.principal(J)
        if z is not None and prob.residual(z) <= rtol:
            return replace(prob.result(z, "solved", 0, J, ""), start="warm")

    status, z_last, basis, pivots = prob.lemke(cap)
    if status == "solved":
        for z in (prob.principal(basis), z_last):
            if z is not None and prob.residual(z) <= rtol:
                return replace(prob.result(z, "solved", pivots, basis, ""), start="cold")
        status = "failed"  # Lemke's answer does not verify
    if not regularize:
        return prob.result(z_last, status, pivots, basis, "")
    return run_ladder(prob, status, z_last, basis, pivots, cap, rtol)


def solve_lcp_batch(
    problems,
    *,
    warm_starts=None,
    tol: float | None = None,
    engine: str = "auto",
) -> list[LCPResult]:
    """Solve many independent LCPs (e.g. the small islands of one step) in one compiled call.

    Each answer is the one :func:`solve_lcp` gives for that problem alone (same path, same
    verification; ``advanced_start`` off): :func:`reverse.lcp.lemke_kernel.solve_batch` loops over
    the problems inside compiled code, so the per-call cost of a few µs is paid once. Problems
    without a verified answer then go through the fallback ladder one by one, as in
    :func:`solve_lcp`.

    Parameters
    ----------
    problems : sequence of (M, q)
    warm_starts : sequence of (array of int or bool mask or None), optional
        One per problem, as ``solve_lcp``'s ``warm_start``.
    tol : float, optional
        Verification tolerance; default :data:`VERIFY_RTOL`.
    engine : {"auto", "compiled", "numpy"}
        As for :func:`solve_lcp` (``"numpy"``: one :func:`solve_lcp` per problem).

    Returns
    -------
    list of LCPResult
    """
    problems = [_check_shape(M, q) for M, q in problems]
    warm = [None] * len(problems) if warm_starts is None else list(warm_starts)
    if len(warm) != len(problems):
        raise LCPError(f"{len(problems)} problems but {len(warm)} warm starts")
    kernel = None if engine == "numpy" else _kernel()
    if kernel is None:
        if engine == "compiled":
            raise LCPError("engine='compiled' needs numba, which could not be imported")
        return [
            solve_lcp(M, q, warm_start=ws, tol=tol, engine="numpy")
            for (M, q), ws in zip(problems, warm, strict=True)
        ]
    rtol = VERIFY_RTOL if tol is None else float(tol)
    sizes = np.array([q.size for _, q in problems], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    Js = [
        _NO_BASIS if ws is None else _basis_indices(ws, n).astype(np.int64)
        for ws, n in zip(warm, sizes, strict=True)
    ]
    warm_offsets = np.concatenate([[0], np.cumsum([J.size for J in Js])]).astype(np.int64)
    has_warm = np.array([ws is not None for ws in warm], dtype=np.bool_)
    if problems:
        Mflat = np.concatenate([M.reshape(-1) for M, _ in problems])
        qflat = np.concatenate([q for _, q in problems])
        warm_flat = np.concatenate(Js) if Js else _NO_BASIS
    else:
        Mflat = qflat = np.zeros(0)
        warm_flat = _NO_BASIS
    m_offsets = np.concatenate([[0], np.cumsum(sizes * sizes)]).astype(np.int64)
    z_all, _, mask, status, pivots, resid, route = kernel.solve_batch(
        Mflat, m_offsets, qflat, offsets, np.ones(len(problems), dtype=np.bool_), warm_flat,
        warm_offsets, has_warm, DEFAULT_PIVOTS_PER_ROW, _RUIZ_SWEEPS, rtol,
    )  # fmt: skip
    out = []
    for k, (M, q) in enumerate(problems):
        if status[k] == kernel.NOT_FINITE:
            raise LCPError(f"problem {k}: M and q must be finite (found NaN or inf)")
        sl = slice(offsets[k], offsets[k + 1])
        z, basis = z_all[sl].copy(), np.flatnonzero(mask[sl])
        w = M @ z + q
        if route[k] >= 0:
            start = ("trivial", "warm", "advanced", "cold")[route[k]]
            out.append(LCPResult(z, w, "solved", int(pivots[k]), basis, float(resid[k]), "", start))
        else:
            cap = DEFAULT_PIVOTS_PER_ROW * q.size
            prob = _Problem(M, q, kernel)
            out.append(run_ladder(prob, _STATUS[status[k]], z, basis, int(pivots[k]), cap, rtol))
    return out


class LCPArrays(NamedTuple):
    """The answers of :func:`solve_lcp_arrays`, as arrays (``K`` problems, ``R`` rows in all).

    Attributes
    ----------
    z, w : ndarray, shape (R,)
        Each solved problem's :attr:`LCPResult.z` and :attr:`LCPResult.w` at its rows (0 for a
        problem not solved here).
    basis : ndarray of bool, shape (R,)
        The basic ``z`` (:attr:`LCPResult.basis` as a mask over the problem's rows).
    status : ndarray of int, shape (K,)
        :mod:`reverse.lcp.lemke_kernel`'s status codes (``SOLVED`` … ``NOT_FINITE``).
    pivots : ndarray of int, shape (K,)
    residual : ndarray, shape (K,)
    route : ndarray of int, shape (K,)
        0 trivial, 1 warm start, 2 advanced start, 3 cold Lemke: a verified answer, exactly
        :func:`solve_lcp`'s (``start`` is :data:`START_NAMES` ``[route]``); −1: no verified
        answer (the caller runs :func:`solve_lcp` on it, whose ladder then runs); −2: not
        selected.
    """

    z: np.ndarray
    w: np.ndarray
    basis: np.ndarray
    status: np.ndarray
    pivots: np.ndarray
    residual: np.ndarray
    route: np.ndarray


#: :attr:`LCPResult.start` of each :attr:`LCPArrays.route` ≥ 0.
START_NAMES = ("trivial", "warm", "advanced", "cold")


def solve_lcp_arrays(
    M_flat: np.ndarray,
    m_offsets: np.ndarray,
    q: np.ndarray,
    offsets: np.ndarray,
    select: np.ndarray,
    warm_flat: np.ndarray,
    warm_offsets: np.ndarray,
    has_warm: np.ndarray,
    *,
    tol: float | None = None,
) -> LCPArrays | None:
    """Many small LCPs given as flat arrays, solved in one compiled call with no per-problem
    Python: the batch entry of :func:`reverse.step.batched.solve_island_arrays`.

    Problem ``k`` (solved when ``select[k]``) is ``M_k z + q_k``: ``q_k = q[offsets[k]:
    offsets[k+1]]`` (``n_k`` rows), ``M_k`` the row-major ``n_k × n_k`` block of ``M_flat`` at
    ``m_offsets[k]``, and when ``has_warm[k]`` the warm basis ``warm_flat[warm_offsets[k]:
    warm_offsets[k+1]]`` — sorted, unique and in ``[0, n_k)`` (the caller checks; anything else
    goes through :func:`solve_lcp`). Every answer with ``route ≥ 0`` is bit for bit what
    :func:`solve_lcp` (``engine="auto"``, default cap and tolerance) returns for that problem
    alone: the same compiled :func:`reverse.lcp.lemke_kernel.solve`, with ``advanced_start`` off and
    the dense path, which is ``solve_lcp``'s choice below :data:`ADVANCED_START_MIN_ROWS` rows —
    so select only smaller problems. Problems without a verified answer (``route = −1``) are for
    the caller to hand to :func:`solve_lcp`, whose fallback ladder then runs (and which raises
    :class:`LCPError` for non-finite input).

    Returns
    -------
    LCPArrays, or None when numba cannot be imported (solve each problem with
    :func:`solve_lcp`).
    """
    kernel = _kernel()
    if kernel is None:
        return None
    rtol = VERIFY_RTOL if tol is None else float(tol)
    out = kernel.solve_batch(
        np.ascontiguousarray(M_flat, dtype=float), np.asarray(m_offsets, dtype=np.int64),
        np.ascontiguousarray(q, dtype=float), np.asarray(offsets, dtype=np.int64),
        np.asarray(select, dtype=np.bool_), np.asarray(warm_flat, dtype=np.int64),
        np.asarray(warm_offsets, dtype=np.int64), np.asarray(has_warm, dtype=np.bool_),
        DEFAULT_PIVOTS_PER_ROW, _RUIZ_SWEEPS, rtol,
    )  # fmt: skip
    z, w, mask, status, pivots, resid, route = out
    return LCPArrays(z, w, mask, status, pivots, resid, route)


def solve_lcp_enumeration(M: np.ndarray, q: np.ndarray, *, tol: float | None = None) -> LCPResult:
    """Brute-force LCP solve: try every complementary basis ``J`` (``n ≤ ENUMERATION_MAX_N``).

    For each index set ``J``, by increasing size, solves ``M[J, J] z_J = −q_J`` (skipping
    numerically singular blocks), sets ``z`` to 0 off ``J`` and returns the first ``z`` that
    verifies (:func:`lcp_residual` ``≤ tol``). Exponential: a reference for tests and the last
    rung of the fallback ladder, not a solver.

    Parameters
    ----------
    M : ndarray, shape (n, n)
    q : ndarray, shape (n,)
    tol : float, optional
        Verification tolerance; default :data:`VERIFY_RTOL`.

    Returns
    -------
    LCPResult
        ``status`` is ``"solved"`` or ``"failed"`` (no complementary basis verifies; ``z`` is then
        the candidate with the smallest residual); ``pivots`` counts the principal systems solved.

    Raises
    ------
    LCPError
        If ``n > ENUMERATION_MAX_N``.
    """
    M, q = _check_problem(M, q)
    n = q.size
    if n > ENUMERATION_MAX_N:
        raise LCPError(
            f"enumeration is limited to n <= {ENUMERATION_MAX_N} (got n = {n}); use solve_lcp"
        )
    return enumerate_bases(_Problem(M, q), VERIFY_RTOL if tol is None else float(tol))


# --- the compiled path

_STATUS = ("solved", "ray", "max_pivots", "failed")
_NO_BASIS = np.zeros(0, dtype=np.int64)
_KERNEL: list = []  # [module or None] once resolved


def _kernel():
    """:mod:`reverse.lcp.lemke_kernel`, imported on first use (numba loads only here), or None when
    numba cannot be imported (the numpy reference then runs)."""
    if not _KERNEL:
        try:
            from reverse.lcp import lemke_kernel
        except ImportError:
            lemke_kernel = None
        _KERNEL.append(lemke_kernel)
    return _KERNEL[0]


def _solve_compiled(kernel, M, q, warm_start, max_pivots, tol, regularize, advanced_start):
    """:func:`solve_lcp` through :func:`reverse.lcp.lemke_kernel.solve`; the ladder (rare) in
    numpy."""
    M, q = _check_shape(M, q)
    n = q.size
    rtol = VERIFY_RTOL if tol is None else float(tol)
    cap = DEFAULT_PIVOTS_PER_ROW * n if max_pivots is None else max(1, int(max_pivots))
    has_warm = warm_start is not None
    J = _basis_indices(warm_start, n).astype(np.int64) if has_warm else _NO_BASIS
    adv = n >= ADVANCED_START_MIN_ROWS if advanced_start is None else bool(advanced_start)
    adv_cap = ADVANCED_PIVOTS_PER_ROW * n
    status, z, w, basis, pivots, res, route = kernel.solve(
        M, q, J, has_warm, adv, adv_cap, cap, _RUIZ_SWEEPS, rtol, _block(n)
    )
    if status == kernel.NOT_FINITE:
        raise LCPError("M and q must be finite (found NaN or inf)")
    if route >= 0:
        start = ("trivial", "warm", "advanced", "cold")[route]
        return LCPResult(z, w, "solved", int(pivots), basis, float(res), "", start)
    if not regularize:
        return LCPResult(z, w, _STATUS[status], int(pivots), basis, float(res), "")
    return run_ladder(_Problem(M, q, kernel), _STATUS[status], z, basis, pivots, cap, rtol)


# --- helpers


def _block(n: int) -> int:
    """Delayed updates per block for a compiled solve of ``n`` rows: 0 (the dense path) below
    :data:`BLOCKED_MIN_ROWS`, else :data:`UPDATE_BLOCK`."""
    return UPDATE_BLOCK if n >= BLOCKED_MIN_ROWS else 0


def _principal_solution(M: np.ndarray, q: np.ndarray, J: np.ndarray) -> np.ndarray | None:
    """``z`` with ``M[J, J] z_J = −q_J`` (one step of iterative refinement) and 0 elsewhere.

    None if the block is singular or the result is not finite.
    """
    z = np.zeros(q.size)
    if J.size == 0:
        return z
    A = M[np.ix_(J, J)]
    b = -q[J]
    try:
        zJ = np.linalg.solve(A, b)
        zJ -= np.linalg.solve(A, A @ zJ - b)  # one step of iterative refinement
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(zJ)):
        return None
    z[J] = zJ
    return z


def _check_shape(M, q, contiguous: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Float64 ``M`` (n × n) and ``q`` (n,), C-contiguous unless ``contiguous`` is False (the
    arrays as given then, no copy); LCPError on a shape mismatch."""
    as_array = np.ascontiguousarray if contiguous else np.asarray
    M = as_array(M, dtype=float)
    q = as_array(q, dtype=float).reshape(-1)
    n = q.size
    if M.ndim != 2 or M.shape != (n, n):
        raise LCPError(f"M must be square with the size of q: M is {M.shape}, q has {n} entries")
    return M, q


def _check_problem(M, q) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_check_shape` without a copy, and LCPError unless ``M`` and ``q`` are finite."""
    M, q = _check_shape(M, q, contiguous=False)
    if not (np.all(np.isfinite(M)) and np.all(np.isfinite(q))):
        raise LCPError("M and q must be finite (found NaN or inf)")
    return M, q


def _basis_indices(warm_start, n: int) -> np.ndarray:
    J = np.asarray(warm_start)
    if J.dtype == bool:
        if J.size != n:
            raise LCPError(f"a boolean warm_start needs {n} entries, got {J.size}")
        return np.flatnonzero(J)
    J = np.unique(J.astype(int).reshape(-1))
    if J.size and (J[0] < 0 or J[-1] >= n):
        raise LCPError(f"warm_start indices must lie in [0, {n})")
    return J
