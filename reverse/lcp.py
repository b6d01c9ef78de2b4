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
* Cold start: Lemke's method ([2]_ §4.4) on ``ŵ = M̂ ẑ + e z0 + q̂``: the covering vector is ``e``
  in equilibrated units, ``D⁻¹e`` in the caller's. The path, and hence which solution is found
  when several exist, depends on this choice (as in Drake and Siconos, which use ``e``; where
  ``D`` is uniform, as for all the peer problems of the tests, the two coincide). The non-unit
  columns of ``B⁻¹`` are kept and updated by one rank-1 update per pivot (``O(n·m)`` for ``m``
  basic ``z``) and recomputed from scratch every ``max(_REFACTOR_MIN, n)`` pivots.
* Ratio test: lexicographic minimum ratio over the rows of ``[B⁻¹q, B⁻¹]`` ([2]_ §4.9), which
  rules out cycling on degenerate problems. If the artificial variable ``z0`` is among the tied
  blocking variables it leaves, which ends the path ([2]_ Ex. 4.4.16: without this rule Lemke ends
  on a ray for PSD problems that have solutions).
* Pivot cap ``DEFAULT_PIVOTS_PER_ROW·n`` (Lemke is exponential in the worst case, [3]_ Ch. 6).
* The answer is the solution of the final complementary basis ``J``, re-solved from scratch
  (``M̂[J, J] ẑ_J = −q̂_J``, one step of iterative refinement; the tableau's own values are the
  second candidate), so it does not carry the update error of the pivots.

Verification and fallback ladder
--------------------------------
Every ``"solved"`` answer is checked on the caller's (unscaled) ``M`` and ``q`` by
:func:`lcp_residual` (``z ≥ −tol``, ``w ≥ −tol``, ``|zᵢwᵢ| ≤ tol`` in units that make the rows
and columns of ``M`` comparable). If plain Lemke gives no verified solution — it claims one that
does not verify, breaks down numerically, ends on a ray or hits the pivot cap — the ladder is:

1. regularized retry: Lemke on ``M̂ + αI``, ``α = ρ·max|M̂|`` for ``ρ`` in :data:`_REG_STEPS`
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
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "DEFAULT_PIVOTS_PER_ROW",
    "ENUMERATION_MAX_N",
    "VERIFY_RTOL",
    "LCPError",
    "LCPResult",
    "lcp_residual",
    "random_contact_lcp",
    "solve_lcp",
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

#: Largest n of the brute-force rung: 2¹² = 4096 principal systems of size ≤ 12, batched (≈ 0.1 s).
ENUMERATION_MAX_N = 12

#: Entries of the entering column below this fraction of its largest entry cannot block. Rounding
#: in ``B⁻¹a`` is ≈ 1e-14 of ``‖B⁻¹a‖`` on contact problems (measured); pivoting on anything
#: smaller would amplify that noise by more than 1e11.
_PIVOT_RTOL = 1e-11

#: Basic values below this fraction of ``max(1, ‖x‖∞)`` (scaled problem, ``‖q‖∞ = 1``) are
#: degenerate zeros: set to 0 in the ratio test, so ties between them are exact and the
#: lexicographic rule, not rounding noise, decides.
_ZERO_RTOL = 1e-12

#: Blocking variables that a ratio-test step leaves below this fraction of
#: ``max(1, ‖x‖∞ + θ‖d‖∞)`` (the scale of their rounding error) are tied; then z0 wins, else the
#: lexicographic rule. A relative test on the ratios themselves missed a z0 tie by 3e-11 on a
#: 120-row contact problem (z0 and three friction variables reaching zero together, x and d good
#: to 1e-14 of their norms): the path stepped past z0's exit and ended on a ray. Choosing among
#: such ties moves other basic values by at most this fraction, far below ``VERIFY_RTOL``.
_TIE_RTOL = 1e-11

#: Entries of ``B⁻¹`` rows (divided by the pivot column) closer than this, relative to the
#: largest, are equal in the lexicographic comparison (rounding is ≈ 1e-14 of it).
_LEX_RTOL = 1e-12

#: Recompute ``B⁻¹`` from scratch (one LAPACK inverse) every ``max(_REFACTOR_MIN, n)`` pivots, to
#: bound the drift of the rank-1 updates on long paths. Contact problems finish in fewer than n
#: pivots, so for them it never runs; the answer is re-solved from its basis in any case.
_REFACTOR_MIN = 100

#: Regularization steps ``ρ`` of ladder rung 1 (``α = ρ·max|M̂|``, equilibrated units). The basis
#: found on ``M̂ + αI`` is re-solved on the original problem, so ``α`` only has to make Lemke's path
#: well-posed; the steps go from "perturbs nothing measurable" to "clearly regularizes a singular
#: PSD matrix".
_REG_STEPS = (1e-10, 1e-8, 1e-6)

#: Symmetric Ruiz equilibration sweeps ([5]_): each sweep roughly halves the log-distance of the
#: row/column maxima from 1, so 8 sweeps bring a 1e6 spread to within a few percent — enough,
#: since the scaling only has to make rows comparable, not exactly equal. Measured: contact
#: problems with rows and columns rescaled by random factors spanning 1e6 solve like the
#: originals (without equilibration, a 1e4 spread already failed 40%).
_RUIZ_SWEEPS = 8

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
    """

    z: np.ndarray
    w: np.ndarray
    status: str
    pivots: int
    basis: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    residual: float = float("nan")
    fallback: str = ""

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

    def __init__(self, M: np.ndarray, q: np.ndarray) -> None:
        self.M, self.q = M, q
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
        status, zs, basis, pivots = _lemke_path(Mh / sM, self.qh / sq, cap)
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

    Returns
    -------
    LCPResult
    """
    M, q = _check_problem(M, q)
    n = q.size
    rtol = VERIFY_RTOL if tol is None else float(tol)
    cap = DEFAULT_PIVOTS_PER_ROW * n if max_pivots is None else max(1, int(max_pivots))
    if n == 0 or np.all(q >= 0.0):  # z = 0, w = q: exact
        return LCPResult(np.zeros(n), q.copy(), "solved", 0, np.zeros(0, dtype=int), 0.0, "")
    prob = _Problem(M, q)

    if warm_start is not None:
        J = _basis_indices(warm_start, n)
        z = prob.principal(J)
        if z is not None and prob.residual(z) <= rtol:
            return prob.result(z, "solved", 0, J, "")

    status, z_last, basis, pivots = prob.lemke(cap)
    if status == "solved":
        for z in (prob.principal(basis), z_last):
            if z is not None and prob.residual(z) <= rtol:
                return prob.result(z, "solved", pivots, basis, "")
        status = "failed"  # Lemke's answer does not verify
    if not regularize:
        return prob.result(z_last, status, pivots, basis, "")
    return _ladder(prob, status, z_last, basis, pivots, cap, rtol)


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
    return _enumeration(_Problem(M, q), VERIFY_RTOL if tol is None else float(tol))


def _enumeration(prob: _Problem, rtol: float) -> LCPResult:
    n = prob.q.size
    if n > ENUMERATION_MAX_N:
        raise LCPError(
            f"enumeration is limited to n <= {ENUMERATION_MAX_N} (got n = {n}); use solve_lcp"
        )
    tried = 0
    best = (np.inf, np.zeros(n), np.zeros(0, dtype=int))
    for Zh, Js, count in _enumerate_candidates(prob.Mh, prob.qh):
        tried += count
        for zh, J in zip(Zh, Js, strict=True):
            z = prob.d * zh
            r = prob.residual(z)
            if r <= rtol:
                return prob.result(z, "solved", tried, J, "")
            if r < best[0]:
                best = (r, z, J)
    return prob.result(best[1], "failed", tried, best[2], "")


def random_contact_lcp(
    rng: np.random.Generator,
    n_contacts: int,
    *,
    n_bodies: int | None = None,
    n_directions: int = 4,
    mu_range: tuple[float, float] = (0.2, 1.0),
    speed: float = 0.5,
    dt: float = 0.01,
) -> tuple[np.ndarray, np.ndarray]:
    """A random velocity-level frictional contact LCP in the Stewart–Trinkle/Anitescu–Potra form.

    Bodies with random mass and inertia touch the ground or each other at random points; each
    contact has a normal row, ``n_directions`` pyramid friction rows ``D`` (unit tangents spread
    evenly around the normal) and a slack row with Coulomb coefficient ``μ`` ([4]_; [1]_ Eq. 3, 5–6
    in its pyramid form)::

        ⎡w_n⎤   ⎡N A Nᵀ  N A D   0⎤ ⎡f_n⎤   ⎡N u⎤
        ⎢w_t⎥ = ⎢Dᵀ A Nᵀ Dᵀ A D  E⎥ ⎢ β ⎥ + ⎢Dᵀu⎥,   A = dt·M_body⁻¹ blocks of J M⁻¹ Jᵀ,
        ⎣ λ'⎦   ⎣  U     −Eᵀ     0⎦ ⎣ λ ⎦   ⎣ 0 ⎦

    with ``U = diag(μ)``, ``E`` the contact-wise sum of the friction rows and ``u`` the free
    velocity (random body velocities plus a gravity step), so ``n = (2 + n_directions)·n_contacts``
    (rows grouped: all normals, then all friction rows, then all slack rows).

    Parameters
    ----------
    rng : numpy.random.Generator
    n_contacts : int
    n_bodies : int, optional
        Default ``max(1, n_contacts // 4)`` (about four contacts per body, so ``J M⁻¹ Jᵀ`` is rank
        deficient, as for boxes resting on their corners).
    n_directions : int
        Friction directions per contact (4: the usual pyramid).
    mu_range : (float, float)
        Friction coefficients are uniform in this range.
    speed : float
        Standard deviation of the random body velocities, m/s and rad/s (0: bodies at rest, only
        the gravity step pushes them into the contacts — the degenerate resting case).
    dt : float
        Time step, s.

    Returns
    -------
    M : ndarray, shape (n, n)
    q : ndarray, shape (n,)
    """
    nb = max(1, n_contacts // 4) if n_bodies is None else int(n_bodies)
    k = int(n_directions)
    mass = rng.uniform(0.5, 2.0, nb)  # kg
    inertia = mass[:, None] * rng.uniform(0.02, 0.1, (nb, 3))  # kg m², principal, body = world
    minv = np.zeros(6 * nb)  # diagonal of M_body⁻¹ (principal axes = world axes)
    for b in range(nb):
        minv[6 * b : 6 * b + 3] = 1.0 / mass[b]
        minv[6 * b + 3 : 6 * b + 6] = 1.0 / inertia[b]
    vel = rng.normal(0.0, speed, 6 * nb)  # body twists (v, ω), m/s and rad/s
    vel[2::6] -= 9.81 * dt  # gravity impulse on v_z
    N = np.zeros((n_contacts, 6 * nb))
    D = np.zeros((n_contacts * k, 6 * nb))
    for c in range(n_contacts):
        normal = rng.normal(size=3) * np.array([0.3, 0.3, 1.0])
        normal /= np.linalg.norm(normal)
        t1 = np.cross(normal, [1.0, 0.0, 0.0] if abs(normal[0]) < 0.9 else [0.0, 1.0, 0.0])
        t1 /= np.linalg.norm(t1)
        t2 = np.cross(normal, t1)
        angles = 2 * np.pi * np.arange(k) / k
        dirs = np.cos(angles)[:, None] * t1 + np.sin(angles)[:, None] * t2
        a = int(rng.integers(nb))
        pair = [(a, 1.0)]
        if nb > 1 and rng.random() < 0.4:  # body-body contact, else body-ground
            b = int(rng.integers(nb - 1))
            pair.append((b + (b >= a), -1.0))
        for body, sign in pair:
            r = rng.uniform(-0.2, 0.2, 3)  # contact point from the body's COM, m
            sl = slice(6 * body, 6 * body + 6)
            N[c, sl] += sign * np.concatenate([normal, np.cross(r, normal)])
            for j, d in enumerate(dirs):
                D[c * k + j, sl] += sign * np.concatenate([d, np.cross(r, d)])
    A = dt * minv
    Nn = (N * A) @ N.T
    Nd = (N * A) @ D.T
    Dd = (D * A) @ D.T
    E = np.kron(np.eye(n_contacts), np.ones((k, 1)))
    mu = rng.uniform(*mu_range, n_contacts)
    nc, nt = n_contacts, n_contacts * k
    n = nc + nt + nc
    M = np.zeros((n, n))
    M[:nc, :nc] = Nn
    M[:nc, nc : nc + nt] = Nd
    M[nc : nc + nt, :nc] = Nd.T
    M[nc : nc + nt, nc : nc + nt] = Dd
    M[nc : nc + nt, nc + nt :] = E
    M[nc + nt :, :nc] = np.diag(mu)
    M[nc + nt :, nc : nc + nt] = -E.T
    q = np.concatenate([N @ vel, D @ vel, np.zeros(nc)])
    return M, q


# --- Lemke


def _lemke_path(M: np.ndarray, q: np.ndarray, cap: int):
    """Lemke's complementary pivot method with covering vector e ([2]_ §4.4, §4.9).

    Returns ``(status, z, basis, pivots)`` for the (scaled) problem it is given.
    """
    n = q.size
    t = _Basis(M, q)
    refactor_every = max(_REFACTOR_MIN, n)

    # first pivot: z0 enters (B⁻¹a = −e) at the level that makes every w ≥ 0; the blocking row is
    # the most negative q_i, ties broken by the lexicographic rule on [q_i, e_iᵀ]
    d = t.column(t.z0)
    qmin = float(t.x.min())
    tied = np.flatnonzero(t.x <= qmin + _TIE_RTOL * abs(qmin))
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
        cand = np.flatnonzero(d > _PIVOT_RTOL * dmax)
        if cand.size == 0:
            return "ray", t.z(), t.basis(), pivots
        x = t.x
        xmax = float(np.max(np.abs(x)))
        xc = x[cand]
        xc = np.where(xc > _ZERO_RTOL * max(1.0, xmax), xc, 0.0)  # degenerate zeros are zeros
        x[cand] = xc
        ratios = xc / d[cand]
        tmin = float(ratios.min())
        # ties: the blocking variables that a step of tmin drives to zero together, judged on the
        # values they would take (x_i − tmin·d_i), whose rounding error is ≈ ‖x‖ + tmin·‖d‖
        after = xc - tmin * d[cand]
        tied = cand[after <= _TIE_RTOL * max(1.0, xmax + tmin * dmax)]
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
        tol = _LEX_RTOL * max(float(np.max(np.abs(L))), _TINY)
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


# --- fallback ladder


def _ladder(prob: _Problem, status, z_last, basis_last, pivots, cap, rtol) -> LCPResult:
    """Rungs 1–3 of the module docstring, run when plain Lemke gave no verified solution."""
    n = prob.q.size
    tried = []
    for rho in _REG_STEPS:
        alpha = rho * (float(np.max(prob.A)) or 1.0)
        tried.append(f"regularized(alpha={alpha:.3g})")
        reg_status, z_reg, J, piv = prob.lemke(cap, alpha)
        pivots += piv
        if reg_status != "solved":
            continue
        # the regularized path's basis re-solved on the original problem, else its raw answer
        for z in (prob.principal(J), z_reg):
            if z is not None and prob.residual(z) <= rtol:
                return prob.result(z, "solved", pivots, J, tried[-1])
    if n <= ENUMERATION_MAX_N:
        tried.append("enumeration")
        res = _enumeration(prob, rtol)
        pivots += res.pivots
        if res.solved:
            return prob.result(res.z, "solved", pivots, res.basis, "enumeration")
    return prob.result(z_last, status, pivots, basis_last, "tried " + ", ".join(tried))


def _enumerate_candidates(M: np.ndarray, q: np.ndarray):
    """Yield, per subset size k, the candidate ``z`` of every nonsingular principal block."""
    n = q.size
    eps = np.finfo(float).eps
    yield np.zeros((1, n)), [np.zeros(0, dtype=int)], 1
    for k in range(1, n + 1):
        subsets = np.array(list(itertools.combinations(range(n), k)), dtype=int)
        A = M[subsets[:, :, None], subsets[:, None, :]]  # (m, k, k)
        b = -q[subsets]  # (m, k)
        # a block with condition number above 1/(100·k·eps) (≈ 5e12 at k = 10) is singular here:
        # its solution would be rounding noise (and could not verify anyway)
        sv = np.linalg.svd(A, compute_uv=False)
        ok = sv[:, -1] > 100 * k * eps * np.maximum(sv[:, 0], _TINY)
        if not np.any(ok):
            continue
        zJ = np.linalg.solve(A[ok], b[ok][:, :, None])[:, :, 0]
        Z = np.zeros((int(ok.sum()), n))
        rows = np.arange(Z.shape[0])[:, None]
        Z[rows, subsets[ok]] = zJ
        # only an ordering (sign-feasible candidates first, to 1e-6); the verification decides
        w = Z @ M.T + q
        scale = np.maximum(np.max(np.abs(Z), axis=1, keepdims=True), 1.0)
        good = np.all(Z >= -1e-6 * scale, axis=1) & np.all(w >= -1e-6 * scale, axis=1)
        order = np.argsort(~good, kind="stable")
        yield Z[order], [subsets[ok][i] for i in order], int(ok.sum())


# --- helpers


def _check_problem(M, q) -> tuple[np.ndarray, np.ndarray]:
    M = np.asarray(M, dtype=float)
    q = np.asarray(q, dtype=float).reshape(-1)
    n = q.size
    if M.ndim != 2 or M.shape != (n, n):
        raise LCPError(f"M must be square with the size of q: M is {M.shape}, q has {n} entries")
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
