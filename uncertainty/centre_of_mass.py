"""Random initial centre of mass R0 of Batou & Soize: maximum entropy on a bounded domain.

Implements Eq. (18)-(23) of [1]_: the density 1_D(a) C0 exp(-<λ_r, a>) on a bounded domain D
with mean r̲0. The multiplier λ_r solves Eq. (22) (closed-form moments on boxes and balls, Gauss
quadrature on convex polytopes); draws are exact by inverse CDF on a box (the density factorizes
into truncated exponentials) and by random-walk Metropolis-Hastings (Appendix D) otherwise.
Lengths in metres.

References
----------
.. [1] A. Batou, C. Soize, Rigid multibody system dynamics with uncertain rigid bodies,
       Multibody System Dynamics 27 (2012) 285-319, doi:10.1007/s11044-011-9279-2.
.. [2] G. O. Roberts, A. Gelman, W. R. Gilks, Weak convergence and optimal scaling of random
       walk Metropolis algorithms, Ann. Appl. Probab. 7 (1997) 110-120.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln, logsumexp

from uncertainty.body_checks import checked_vec3, draw_count
from uncertainty.com_domains import BallDomain, BoxDomain, ConvexDomain, Domain
from uncertainty.errors import UncertaintyError
from uncertainty.max_entropy import max_entropy_newton

__all__ = [
    "INTERIOR_MARGIN",
    "COM_MEAN_RTOL",
    "QUADRATURE_ORDERS",
    "QUADRATURE_RTOL",
    "MH_COM_STEP_SCALE",
    "MH_COM_BURN_IN",
    "COM_NEWTON_TOL",
    "com_multipliers",
    "com_mean",
    "sample_com",
]

#: r0 must lie inside D by at least this fraction of the domain's extent. On the boundary Eq. (22)
#: has no solution (|λ_r| → ∞); 1e-9 keeps |λ_r|·extent ≲ 1e9, where the truncated exponentials
#: are still resolved in double precision.
INTERIOR_MARGIN = 1e-9

#: Tolerance of Eq. (22), |E[R0] - r0|, in units of the domain's extent, for the box and ball
#: root finders (closed-form moments): a few hundred ulps of the coordinates.
COM_MEAN_RTOL = 1e-12

#: Gauss points per direction of the collapsed (Duffy) product rule on each tetrahedron of a
#: convex domain (and of the product rules on boxes and balls used for proposal covariances).
#: Orders are tried in turn until the next one reproduces E[R0] to QUADRATURE_RTOL. The integrand
#: exp(-<λ, a>) is entire, so the rules converge spectrally. Measured on the paper's COM box given
#: as a hull, against the closed form: λ_r to 4e-14 with |λ_r|·extent = 1.2 (orders 6 and 10,
#: 5 ms), 4e-13 with 91 (up to 16, 13 ms), 9e-14 with 1000 (up to 32, 0.34 s); a 32-sided
#: cylinder (124 facets) takes 0.23 s. Solutions are memoized (see _SOLUTIONS).
QUADRATURE_ORDERS = (6, 10, 16, 24, 32)

#: Accepted quadrature error of E[R0] in units of the domain's extent (convex domains). It is far
#: below the Monte Carlo error of any feasible ensemble (1e5 draws resolve ~1e-3 of the extent).
QUADRATURE_RTOL = 1e-10

#: Random-walk Metropolis for R0 (Appendix D of [1]): Gaussian steps with covariance
#: (MH_COM_STEP_SCALE)² Cov[R0], Cov[R0] computed from Eq. (20). 2.38/√d is the optimal scale for
#: d-dimensional Gaussian targets [2]; on these targets, truncated by D, 1.0 gave the lowest lag-1
#: autocorrelation (0.85-0.93 per coordinate on boxes, a ball and a hull, against 0.86-0.94 with
#: 1.37 and 0.93-0.96 with 0.5), acceptance 0.26-0.41.
MH_COM_STEP_SCALE = 1.0

#: Metropolis steps per R0 draw. Each draw is the last state of its own chain, started at the
#: mean r0 (strictly inside D, in the bulk of the target), so draws are independent and no
#: thinning is needed (the chain length plays its role). With lag-1 autocorrelation ≤ 0.93 the
#: memory of the start after 200 steps is ≈ 0.93²⁰⁰ ≈ 5e-7. Checked: two-sample KS against the
#: exact box sampler (1e5 draws each, 8 seeds) gives uniform p-values, also with r0 at 90 % of the
#: half-widths towards a corner; starting from the uniform law on D instead failed there.
#: Cost ≈ 1-2 ms per single draw.
MH_COM_BURN_IN = 200

#: The same for the centre of mass (lengths over the extent): well below QUADRATURE_RTOL, so the
#: quadrature check measures the rule's error, not Newton's.
COM_NEWTON_TOL = 1e-13

_CHUNK_DRAWS = 200_000  # proposals held in memory at once by the chained samplers

_SERIES_K = np.arange(40)
_SERIES_LIMIT = 2.0  # |s| below which the positive power series are used (no cancellation)


def _sinh_series(s: np.ndarray, odd_factor) -> np.ndarray:
    """Σ_k c_k s^(2k) with positive coefficients (helper for the small-|s| formulas)."""
    s2 = np.asarray(s, dtype=float)[..., None] ** 2
    return np.sum(odd_factor * s2**_SERIES_K, axis=-1)


_FACT_2K1 = np.exp(gammaln(2 * _SERIES_K + 2))  # (2k+1)!
_FACT_2K3 = np.exp(gammaln(2 * _SERIES_K + 4))  # (2k+3)!
_C_SINHC = 1.0 / _FACT_2K1  # sinh(s)/s = Σ s^2k / (2k+1)!
_C_LNUM = (2 * _SERIES_K + 2) / _FACT_2K3  # (s cosh s - sinh s)/s³ = Σ 2(k+1) s^2k / (2k+3)!
_C_DLNUM = 2 * _SERIES_K * (2 * _SERIES_K + 2) / _FACT_2K3  # s d/ds of the above


def _langevin(s):
    """L(s) = coth(s) - 1/s, the mean of -t for the density ∝ exp(-s t) on [-1, 1]."""
    s = np.asarray(s, dtype=float)
    small = np.abs(s) < _SERIES_LIMIT
    ss = np.where(small, s, 0.0)
    series = ss * _sinh_series(ss, _C_LNUM) / _sinh_series(ss, _C_SINHC)
    sl = np.where(small, 1.0, s)
    return np.where(small, series, 1.0 / np.tanh(sl) - 1.0 / sl)


def _log_sinhc(s):
    """log(sinh(s)/s), stable for all s."""
    a = np.abs(np.asarray(s, dtype=float))
    small = a < _SERIES_LIMIT
    series = np.log(_sinh_series(np.where(small, a, 0.0), _C_SINHC))
    al = np.where(small, 1.0, a)
    return np.where(small, series, al - np.log(2.0 * al) + np.log1p(-np.exp(-2.0 * al)))


def _ball_mean_ratio(s: float) -> float:
    """g(s) = -E[t] for the density ∝ (1 - t²) exp(-s t) on [-1, 1] (the ball's marginal along λ_r).

    g = Φ'/Φ with Φ(s) = (s cosh s - sinh s)/s³ = ∫₋₁¹ (1 - t²) e^(-s t) dt / 4."""
    if s < _SERIES_LIMIT:
        return float(_sinh_series(s, _C_DLNUM) / (s * _sinh_series(s, _C_LNUM))) if s > 0 else 0.0
    return s / (s / math.tanh(s) - 1.0) - 3.0 / s


def _ball_log_phi(s: float) -> float:
    """log Φ(s), Φ(s) = (s cosh s - sinh s)/s³."""
    if s < _SERIES_LIMIT:
        return float(np.log(_sinh_series(s, _C_LNUM)))
    return (
        s - math.log(2.0) + math.log(s - 1.0 + (s + 1.0) * math.exp(-2.0 * s)) - 3.0 * math.log(s)
    )


def _increasing_root(f, target: float, guess: float) -> float:
    """Root s ≥ 0 of the increasing function f(s) = target ∈ [0, 1)."""
    if target == 0.0:
        return 0.0
    hi = guess
    while f(hi) < target:
        hi *= 2.0
    # Imported here, when a draw needs it: scipy.optimize costs ≈ 0.1 s of CPU on top of the
    # scipy.special and scipy.spatial this package imports anyway (≈ 0.4 s after numpy alone),
    # paid otherwise by every fork server, Dask worker and CLI start (measured 2026-11-27 with
    # time.process_time around the import).
    from scipy.optimize import brentq

    return brentq(lambda s: f(s) - target, 0.0, hi, xtol=1e-15, rtol=1e-15, maxiter=500)


@dataclass(frozen=True)
class _ComSolution:
    lambda_r: np.ndarray  # (3,) m⁻¹
    log_c0: float
    cov: np.ndarray  # (3, 3) covariance of R0 (for Metropolis proposals)
    mean_error: float  # |E[R0] - r0| / extent as achieved


def _tilted_moments(points, weights, lam, origin):
    """log ∫ e^(-<λ,a>) da, mean and covariance of the density ∝ e^(-<λ,a>) by quadrature."""
    y = points - origin
    e = np.log(weights) - y @ lam
    lse = logsumexp(e)
    p = np.exp(e - lse)
    m = p @ y
    d = y - m
    return float(lse - lam @ origin), m + origin, (d * p[:, None]).T @ d


def _box_solution(domain: BoxDomain, r0: np.ndarray) -> _ComSolution:
    # The density (20) factorizes: axis k is ∝ exp(-λ_k x) on [c_k - h_k, c_k + h_k]. With
    # x = c + h t and s = λ h, E[t] = -L(s) (Langevin function L), so Eq. (22) is
    # L(s) = (c - r0)/h.
    tau = (domain.center - r0) / domain.half
    s = np.array(
        [
            math.copysign(
                _increasing_root(lambda v: float(_langevin(v)), abs(t), 1.0 / (1 - abs(t))), t
            )
            for t in tau
        ]
    )
    lam = s / domain.half
    # Eq. (21-a): 1/C0 = Π_k e^(-λ_k c_k) 2 h_k sinh(s_k)/s_k
    log_c0 = float(np.sum(lam * domain.center - np.log(2.0 * domain.half) - _log_sinhc(s)))
    small = np.abs(s) < 0.5
    ss = np.where(small, 1.0, s)
    q = np.exp(-2.0 * np.abs(ss))
    var_t = np.where(
        small, 1 / 3 - s**2 / 15 + 2 * s**4 / 189, 1.0 / ss**2 - 4.0 * q / (1.0 - q) ** 2
    )  # Var(t) = 1/s² - 1/sinh²(s)
    err = float(np.max(np.abs(domain.half * _langevin(s) - (domain.center - r0))) / domain.extent)
    return _ComSolution(lam, log_c0, np.diag(var_t * domain.half**2), err)


def _ball_solution(domain: BallDomain, r0: np.ndarray) -> _ComSolution:
    # By symmetry λ_r ∥ -(r0 - c). Along u = λ_r/|λ_r| the marginal of (20) is
    # ∝ (R² - t²) e^(-|λ| t), whose mean is -R g(|λ| R); Eq. (22) becomes g(s) = |r0 - c| / R.
    d = r0 - domain.center
    rho = float(np.linalg.norm(d)) / domain.radius
    s = _increasing_root(_ball_mean_ratio, rho, 2.0 / (1.0 - rho) + 10.0)
    lam = -s / domain.radius * (d / np.linalg.norm(d)) if s > 0 else np.zeros(3)
    # Eq. (21-a): 1/C0 = e^(-<λ, c>) 4π R³ Φ(s)
    log_c0 = float(
        lam @ domain.center - math.log(4.0 * math.pi * domain.radius**3) - _ball_log_phi(s)
    )
    pts, w = domain.quadrature(QUADRATURE_ORDERS[1])
    cov = _tilted_moments(pts, w, lam, domain.center)[2]
    err = abs(domain.radius * _ball_mean_ratio(s) - rho * domain.radius) / domain.extent
    return _ComSolution(lam, log_c0, cov, float(err))


def _quadrature_solution(domain: ConvexDomain, r0: np.ndarray) -> _ComSolution:
    # Eq. (22) by Newton on the convex dual with a quadrature rule; the next order checks it.
    origin = domain.barycentre
    lam = np.zeros(3)
    scale = domain.extent
    err = math.inf
    for order, check in zip(QUADRATURE_ORDERS[:-1], QUADRATURE_ORDERS[1:], strict=True):
        pts, w = domain.quadrature(order)
        theta, _, _, ok = max_entropy_newton(
            (pts - origin) / scale, np.log(w), (r0 - origin) / scale, lam * scale, COM_NEWTON_TOL
        )
        if not ok:
            continue
        lam = theta / scale
        log_int, mean, cov = _tilted_moments(*domain.quadrature(check), lam, origin)
        err = float(np.max(np.abs(mean - r0)) / scale)
        if err <= QUADRATURE_RTOL:
            return _ComSolution(lam, -log_int, cov, err)
    raise UncertaintyError(
        f"com.r0: r0 = {r0.tolist()} is too close to the boundary of the convex domain for the "
        f"quadrature of Eq. (22) (error {err:.2g} of the extent after order "
        f"{QUADRATURE_ORDERS[-1]}); move r0 inward",
        "com.r0",
    )


#: Memo of solved multipliers keyed by the domain's defining numbers and r0 (the solution is a
#: pure function of them; convex domains cost milliseconds to solve, realizations call
#: :func:`sample_com` once each, often with a freshly built but identical domain).
_SOLUTIONS: dict[tuple, _ComSolution] = {}
_SOLUTIONS_MAX = 64


def _domain_key(domain: Domain) -> tuple:
    if isinstance(domain, BoxDomain):
        return ("box", domain.center.tobytes(), domain.size.tobytes())
    if isinstance(domain, BallDomain):
        return ("ball", domain.center.tobytes(), float(domain.radius))
    return ("convex", domain.vertices.tobytes())


def _com_solution(domain: Domain, r0) -> _ComSolution:
    if not isinstance(domain, BoxDomain | BallDomain | ConvexDomain):
        raise UncertaintyError(
            f"com.domain: expected a BoxDomain, BallDomain or ConvexDomain, got {domain!r}",
            "com.domain",
        )
    r0 = checked_vec3(r0, "com.r0")
    key = (_domain_key(domain), r0.tobytes())
    sol = _SOLUTIONS.get(key)
    if sol is None:
        sol = _solve_com(domain, r0)
        if len(_SOLUTIONS) >= _SOLUTIONS_MAX:
            _SOLUTIONS.pop(next(iter(_SOLUTIONS)))
        _SOLUTIONS[key] = sol
    return sol


def _solve_com(domain: Domain, r0: np.ndarray) -> _ComSolution:
    gap = domain.interior_gap(r0)
    if gap <= INTERIOR_MARGIN:
        raise UncertaintyError(
            f"com.r0: the mean centre of mass r0 = {r0.tolist()} must lie strictly inside the "
            f"{domain.kind} domain {domain!r} (Eq. 18-b of Batou & Soize 2012); it is "
            f"{'outside' if gap < 0 else 'on the boundary'}",
            "com.r0",
        )
    if isinstance(domain, ConvexDomain):
        return _quadrature_solution(domain, r0)
    sol = (_box_solution if isinstance(domain, BoxDomain) else _ball_solution)(domain, r0)
    if not sol.mean_error <= COM_MEAN_RTOL:  # Brent's method failed to reach Eq. (22)
        raise UncertaintyError(
            f"com.r0: Eq. (22) solved only to {sol.mean_error:.2g} of the extent for r0 = "
            f"{r0.tolist()}; move r0 away from the boundary of {domain!r}",
            "com.r0",
        )
    return sol


def com_multipliers(domain: Domain, r0) -> tuple[np.ndarray, float]:
    """Lagrange multiplier λ_r and normalization C0 of the density of R0, Eq. (20)-(22) of [1]_.

    Solves Eq. (22), ∫_D a e^(-<λ_r, a>) da = r0 ∫_D e^(-<λ_r, a>) da, by root finding, then C0 by
    Eq. (21-a). Box: the density factorizes into truncated exponentials, each axis solved by
    Brent's method on the closed-form mean (Langevin function). Ball: λ_r is antiparallel to
    r0 - c and its modulus solves a 1-D closed-form equation. Convex polytope: damped Newton on
    the convex dual with a Gauss product quadrature on a tetrahedral decomposition, the order
    raised until the next one reproduces E[R0] to QUADRATURE_RTOL of the extent. λ_r = 0
    (uniform law, Eq. 23) when r0 is the barycentre of D.

    Parameters
    ----------
    domain : BoxDomain, BallDomain or ConvexDomain
    r0 : array_like, shape (3,)
        Mean centre of mass r̲0 (m), strictly inside ``domain``.

    Returns
    -------
    lambda_r : ndarray, shape (3,)
        Lagrange multiplier (m⁻¹).
    c0 : float
        C0 of Eq. (20)-(21-a) in the coordinates of ``domain`` (m⁻³). It depends on the origin
        through e^(<λ_r, center>); it overflows to ``inf`` only if |<λ_r, center>| > ~700.

    Raises
    ------
    UncertaintyError
        ``com.r0`` is not strictly inside the domain.
    """
    sol = _com_solution(domain, r0)
    with np.errstate(over="ignore"):
        c0 = float(np.exp(sol.log_c0))
    return sol.lambda_r.copy(), c0


def com_mean(domain: Domain, lambda_r) -> np.ndarray:
    """Mean of the density 1_D(a) C0 e^(-<λ_r, a>) of Eq. (20) of [1]_ for a given λ_r.

    Closed form on boxes and balls, finest quadrature rule on convex domains.

    Returns
    -------
    ndarray, shape (3,)
    """
    lam = checked_vec3(lambda_r, "com.lambda_r")
    if isinstance(domain, BoxDomain):
        return domain.center - domain.half * _langevin(lam * domain.half)
    if isinstance(domain, BallDomain):
        k = float(np.linalg.norm(lam))
        if k == 0.0:
            return domain.barycentre
        return domain.center - domain.radius * _ball_mean_ratio(k * domain.radius) * lam / k
    pts, w = domain.quadrature(QUADRATURE_ORDERS[-1])
    return _tilted_moments(pts, w, lam, domain.barycentre)[1]


def _sample_box_exact(rng, domain: BoxDomain, lam: np.ndarray, n: int) -> np.ndarray:
    # Inverse CDF of the truncated exponential ∝ e^(-s t) on [-1, 1], per axis, s = λ h:
    # for s > 0, t = -1 - log(1 - u (1 - e^(-2s)))/s; for s < 0 by the reflection t → -t, u → 1-u.
    u = rng.random((n, 3))
    s = lam * domain.half
    a = np.abs(s)
    uu = np.where(s >= 0.0, u, 1.0 - u)
    a_safe = np.where(a > 0.0, a, 1.0)
    with np.errstate(divide="ignore"):  # log1p(-1) = -inf only if e^(-2|s|) underflows and u = 0
        t = -1.0 - np.log1p(uu * np.expm1(-2.0 * a_safe)) / a_safe
    t = np.where(a > 0.0, t, 2.0 * uu - 1.0)
    t = np.clip(np.where(s >= 0.0, t, -t), -1.0, 1.0)
    return domain.center + domain.half * t


def _sample_com_mh(rng, domain: Domain, sol: _ComSolution, r0: np.ndarray, n: int) -> np.ndarray:
    """Random-walk Metropolis-Hastings (Appendix D of [1]) for the density (20): one chain of
    MH_COM_BURN_IN steps per draw, started at the mean r0."""
    lam = sol.lambda_r
    cov = sol.cov + 1e-12 * domain.extent**2 * np.eye(3)  # keeps the factor defined if degenerate
    chol = MH_COM_STEP_SCALE * np.linalg.cholesky(cov)
    out = np.empty((n, 3))
    chunk = max(1, _CHUNK_DRAWS // MH_COM_BURN_IN)
    for start in range(0, n, chunk):
        c = min(chunk, n - start)
        x = np.broadcast_to(r0, (c, 3))
        steps = rng.standard_normal((MH_COM_BURN_IN, c, 3)) @ chol.T
        u = rng.random((MH_COM_BURN_IN, c))
        # Symmetric kernel: α = min(1, p(x̃)/p(x)) = min(1, e^(-<λ, x̃ - x>)) inside D, 0 outside
        ratio = np.exp(np.minimum(-(steps @ lam), 0.0))
        for k in range(MH_COM_BURN_IN):
            prop = x + steps[k]
            ok = (u[k] < ratio[k]) & domain.contains(prop)
            x = np.where(ok[:, None], prop, x)
        out[start : start + c] = x
    return out


def sample_com(
    rng: np.random.Generator,
    domain: Domain,
    r0,
    size: int | None = None,
    method: str = "auto",
) -> np.ndarray:
    """Draw the random initial centre of mass R0 of Eq. (20) of [1]_ on ``domain`` with mean r0.

    Parameters
    ----------
    rng : numpy.random.Generator
    domain : BoxDomain, BallDomain or ConvexDomain
        Admissible domain D (m).
    r0 : array_like, shape (3,)
        Mean r̲0 (m), strictly inside D.
    size : int, optional
        Number of draws; ``None`` for one.
    method : {"auto", "exact", "mh"}
        ``exact``: inverse CDF of the truncated exponentials (boxes only). ``mh``: random-walk
        Metropolis-Hastings (Appendix D), one independent chain of MH_COM_BURN_IN steps per draw
        started at r0. ``auto``: exact on boxes, mh otherwise.

    Returns
    -------
    ndarray, shape (3,) or (size, 3)
        Points of D (m).

    Raises
    ------
    UncertaintyError
        ``com.r0`` outside D, or ``exact`` asked for a ball or convex domain.
    """
    if method not in ("auto", "exact", "mh"):
        raise UncertaintyError(
            f"method: expected 'auto', 'exact' or 'mh', got {method!r}", "method"
        )
    sol = _com_solution(domain, r0)
    n = draw_count(size)
    if method == "exact" and not isinstance(domain, BoxDomain):
        raise UncertaintyError(
            f"method: the exact sampler needs a box domain, got a {domain.kind}; use 'mh'", "method"
        )
    if isinstance(domain, BoxDomain) and method in ("auto", "exact"):
        out = _sample_box_exact(rng, domain, sol.lambda_r, n)
    else:
        out = _sample_com_mh(rng, domain, sol, checked_vec3(r0, "com.r0"), n)
    return out[0] if size is None else out
