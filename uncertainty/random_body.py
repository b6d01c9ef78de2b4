"""Random rigid body of Batou & Soize: random mass, initial centre of mass and inertia tensor.

Implements the maximum-entropy model of an uncertain rigid body of [1]_, §3.1:

* mass M: Gamma law with mean m̲ and coefficient of variation δ_M, Eq. (15)-(17);
* initial centre of mass R0: density 1_D(a) C0 exp(-<λ_r, a>) on a bounded domain D with mean r̲0,
  Eq. (18)-(23); exact inverse-CDF sampling on a box (the density factorizes into truncated
  exponentials), Metropolis-Hastings (Appendix D) on a ball or a convex polytope;
* inertia tensor J = M (tr(Z) I - Z), Z = L̲ᵀ G L̲ with L̲ᵀ L̲ = Z̲ = (tr(J̲)/2 I - J̲)/m̲,
  Eq. (32), (34), (36), (37), with the normalized matrix G drawn from Soize's ensemble SG0+
  (Appendix B, [2]_) or from the bounded ensemble of Eq. (41), calibrated so that E[G] = I
  (Eq. 42-43) and sampled by Metropolis-Hastings.

Every realization is physically admissible by construction: Z > 0 makes J positive definite
(Eq. 28) with principal moments J_i + J_j - J_k = 2 M z_k > 0 (the triangle inequalities;
Appendix A). M, R0 and G are drawn independently, so E[J] = m̲ (tr(Z̲) I - Z̲) = J̲ (Eq. 44-c).

Reproducibility: every sampler takes ``rng`` (a ``numpy.random.Generator``) and ``size``.
``size=None`` returns one draw (a float, shape (3,) or shape (3, 3)); the Metropolis-Hastings
samplers then run one fresh chain with its full burn-in, so one call is one valid draw. The same
generator state gives bit-identical output. ``size=n`` runs n independent chains; its draws are not
the numbers that n calls with ``size=None`` would give.

Variables follow the symbols of [1]: m̲ ``mean``/``mean_mass``, δ ``dispersion``, λ_r ``lambda_r``,
C0 ``c0``, J̲ ``mean_inertia``, Z̲ ``z_bar``, L̲ ``l_z``, G_max ``g_max``, μ ``mu``, λ_l ``lambda_l``,
λ_u ``lambda_u``. Lengths are in metres, masses in kg, inertia in kg·m².

References
----------
.. [1] A. Batou, C. Soize, Rigid multibody system dynamics with uncertain rigid bodies,
       Multibody System Dynamics 27 (2012) 285-319, doi:10.1007/s11044-011-9279-2.
.. [2] C. Soize, Maximum entropy approach for modeling random uncertainties in transient
       elastodynamics, J. Acoust. Soc. Am. 109 (2001) 1979-1996.
.. [3] G. O. Roberts, A. Gelman, W. R. Gilks, Weak convergence and optimal scaling of random
       walk Metropolis algorithms, Ann. Appl. Probab. 7 (1997) 110-120.
.. [4] K. L. Mengersen, R. L. Tweedie, Rates of convergence of the Hastings and Metropolis
       algorithms, Ann. Statist. 24 (1996) 101-121.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.optimize import brentq
from scipy.spatial import ConvexHull, QhullError
from scipy.special import gammaln, logsumexp, roots_jacobi, roots_legendre

from uncertainty.errors import UncertaintyError

__all__ = [
    "UncertaintyError",
    "MAX_DISPERSION",
    "sample_mass",
    "BoxDomain",
    "BallDomain",
    "ConvexDomain",
    "com_multipliers",
    "com_mean",
    "sample_com",
    "nominal_z",
    "sample_sg0",
    "SG0Ensemble",
    "z_max_from_box",
    "z_max_from_vertices",
    "BoundedCalibration",
    "BoundedGEnsemble",
    "inertia_from_g",
    "sample_inertia",
    "physically_admissible",
]

# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------

#: Exclusive upper bound of the dispersions δ_M and δ_G (dimensionless): Eq. (17) of [1] for the
#: mass (E[M⁻²] < ∞) and Appendix B, Eq. (56), for SG0+ (E[‖G⁻¹‖²] < ∞).
MAX_DISPERSION = 1.0 / math.sqrt(2.0)

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
#: d-dimensional Gaussian targets [3]; on these targets, truncated by D, 1.0 gave the lowest lag-1
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

#: Default number of SG0+ draws for identifying μ (Eq. 42-43 of [1]); as many again are drawn to
#: check E[G] = I on independent samples.
CALIBRATION_SAMPLES = 200_000

#: Calibration of the bounded ensemble succeeds when ‖E[G] - I‖_F, estimated by importance
#: sampling on the independent check draws, is below this. For the paper's case (effective sample
#: size ≈ 68 %) the Monte Carlo error of that estimate with 2e5 draws is a few 1e-3 (measured
#: residual 1.4e-3), so 0.02 flags a failed identification, not noise.
CALIBRATION_TOL = 0.02

#: Importance sampling is declared degenerate when the effective sample size (Σw)²/Σw² is below
#: this fraction of the draws: the μ identified would rest on a handful of samples.
MIN_ESS_FRACTION = 0.01

#: Newton iterations on the (convex) dual of the maximum-entropy problems stop when the moment
#: residual is below this (G entries and lengths relative to the extent are O(1)).
NEWTON_TOL = 1e-10
NEWTON_MAX_ITER = 200
#: The same for the centre of mass (lengths over the extent): well below QUADRATURE_RTOL, so the
#: quadrature check measures the rule's error, not Newton's.
COM_NEWTON_TOL = 1e-13

#: Independence Metropolis-Hastings for the bounded G (Appendix D of [1], kernel q = law of the
#: SG0+ proposal). With W = sup π/q, the total variation after k steps is ≤ (1 - 1/W)^k ([4],
#: Thm. 2.1). The number of steps per draw is chosen so that this bound is MH_G_TV, with W taken
#: as MH_G_W_SAFETY times the largest normalized importance weight seen during calibration (a
#: sample maximum underestimates the supremum).
MH_G_TV = 1e-4
MH_G_W_SAFETY = 2.0
MH_G_MIN_STEPS = 20
#: More steps than this means the SG0+ proposal is too far from the bounded law: calibration
#: reports ``converged=False`` rather than sampling with a chain that mixes poorly.
MH_G_MAX_STEPS = 2000

#: Symmetry tolerance of given matrices (J̲, Z̲, Z_max), relative to their largest entry.
SYMMETRY_RTOL = 1e-9

#: Relative tolerance of :func:`physically_admissible`'s triangle inequality, in units of the
#: largest principal moment: thin rods and plates meet it with equality up to rounding.
INERTIA_RTOL = 1e-9

_DIAG = np.array([0, 1, 2])
_OFF_R, _OFF_C = np.array([0, 0, 1]), np.array([1, 2, 2])
_CHUNK_DRAWS = 200_000  # proposals held in memory at once by the chained samplers

# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------


def _real(x, field: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise UncertaintyError(f"{field}: expected a real number, got {x!r}", field) from None
    if not math.isfinite(v):
        raise UncertaintyError(f"{field}: expected a finite number, got {v}", field)
    return v


def _vec3(x, field: str) -> np.ndarray:
    try:
        v = np.array(x, dtype=float)
    except (TypeError, ValueError):
        raise UncertaintyError(f"{field}: expected 3 real numbers, got {x!r}", field) from None
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise UncertaintyError(f"{field}: expected 3 finite numbers, got {x!r}", field)
    return v


def _sym3(x, field: str) -> np.ndarray:
    try:
        a = np.array(x, dtype=float)
    except (TypeError, ValueError):
        raise UncertaintyError(f"{field}: expected a 3x3 real matrix, got {x!r}", field) from None
    if a.shape != (3, 3) or not np.all(np.isfinite(a)):
        raise UncertaintyError(f"{field}: expected a finite 3x3 matrix, got {x!r}", field)
    scale = max(float(np.max(np.abs(a))), np.finfo(float).tiny)
    if np.max(np.abs(a - a.T)) > SYMMETRY_RTOL * scale:
        raise UncertaintyError(f"{field}: expected a symmetric matrix, got {a.tolist()}", field)
    return 0.5 * (a + a.T)


def _check_dispersion(dispersion, field: str, symbol: str, reason: str) -> float:
    d = _real(dispersion, field)
    if not 0.0 < d < MAX_DISPERSION:
        raise UncertaintyError(
            f"{field}: {symbol} = {d:g} is outside the admissible range "
            f"0 < {symbol} < 1/sqrt(2) = {MAX_DISPERSION:.5f} ({reason})",
            field,
        )
    return d


def _size(size) -> int:
    if size is None:
        return 1
    n = int(size)
    if n < 0 or n != size:
        raise UncertaintyError(f"size: expected None or a non-negative integer, got {size!r}")
    return n


# --------------------------------------------------------------------------------------------
# Mass, Eq. (15)-(17)
# --------------------------------------------------------------------------------------------


def sample_mass(rng: np.random.Generator, mean: float, dispersion: float, size: int | None = None):
    """Draw the random mass M of Eq. (17) of [1]_: Gamma, mean m̲, coefficient of variation δ_M.

    Parameters
    ----------
    rng : numpy.random.Generator
    mean : float
        Nominal mass m̲ > 0 (kg), the mean of M (Eq. 15-b).
    dispersion : float
        Coefficient of variation δ_M = σ_M / m̲, 0 < δ_M < 1/√2 (Eq. 17).
    size : int, optional
        Number of draws; ``None`` for one.

    Returns
    -------
    float or ndarray, shape (size,)
        Masses (kg), all positive.

    Raises
    ------
    UncertaintyError
        ``mass.dispersion`` out of range or ``mass.mean`` not positive.
    """
    m = _real(mean, "mass.mean")
    if m <= 0.0:
        raise UncertaintyError(
            f"mass.mean: the nominal mass must be positive, got {m:g}", "mass.mean"
        )
    d = _check_dispersion(dispersion, "mass.dispersion", "delta_M", "Eq. (17): E[M^-2] < inf")
    # Eq. (17) in [1]: p(μ) ∝ μ^(δ⁻² - 1) exp(-μ / (δ² m̲)), a Gamma law of shape δ⁻², scale δ² m̲
    out = rng.gamma(1.0 / d**2, d**2 * m, size=None if size is None else _size(size))
    return float(out) if size is None else out


# --------------------------------------------------------------------------------------------
# Centre of mass: domains
# --------------------------------------------------------------------------------------------


class BoxDomain:
    """Axis-aligned box ``center ± size/2`` (m): an admissible domain D of R0 (Eq. 18-a of [1]).

    Parameters
    ----------
    center : array_like, shape (3,)
    size : array_like, shape (3,)
        Edge lengths, all positive.
    """

    kind = "box"

    def __init__(self, center, size):
        self.center = _vec3(center, "com.center")
        self.size = _vec3(size, "com.size")
        if not np.all(self.size > 0.0):
            raise UncertaintyError(
                f"com.size: box edge lengths must be positive, got {self.size.tolist()}", "com.size"
            )
        self.half = 0.5 * self.size
        self.low = self.center - self.half
        self.high = self.center + self.half
        self._rules: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def __repr__(self) -> str:
        return f"BoxDomain(center={self.center.tolist()}, size={self.size.tolist()})"

    @property
    def barycentre(self) -> np.ndarray:
        return self.center.copy()

    @property
    def volume(self) -> float:
        return float(np.prod(self.size))

    @property
    def extent(self) -> float:
        """Largest edge (m): the length scale of tolerances."""
        return float(np.max(self.size))

    def contains(self, points) -> np.ndarray:
        """Whether each point (shape (..., 3)) lies in the closed box; shape (...)."""
        p = np.asarray(points, dtype=float)
        return np.all((p >= self.low) & (p <= self.high), axis=-1)

    def interior_gap(self, point) -> float:
        """Distance from ``point`` to the boundary over the extent (negative outside)."""
        p = np.asarray(point, dtype=float)
        return float(np.min(np.minimum(p - self.low, self.high - p)) / self.extent)

    def sample_uniform(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n exact draws of the uniform law on the box, shape (n, 3)."""
        t = 2.0 * rng.random((n, 3)) - 1.0
        return self.center + self.half * t

    def quadrature(self, order: int) -> tuple[np.ndarray, np.ndarray]:
        """Tensor Gauss-Legendre rule with ``order``³ nodes: points (k, 3), weights (k,)."""
        if order not in self._rules:
            x, w = roots_legendre(order)
            g = np.stack(np.meshgrid(x, x, x, indexing="ij"), -1).reshape(-1, 3)
            wg = np.einsum("i,j,k->ijk", w, w, w).ravel()
            self._rules[order] = (self.center + self.half * g, wg * np.prod(self.half))
        return self._rules[order]


class BallDomain:
    """Ball of ``radius`` (m) about ``center``: an admissible domain D of R0 (Eq. 18-a of [1])."""

    kind = "ball"

    def __init__(self, center, radius):
        self.center = _vec3(center, "com.center")
        self.radius = _real(radius, "com.radius")
        if self.radius <= 0.0:
            raise UncertaintyError(
                f"com.radius: the ball radius must be positive, got {self.radius:g}", "com.radius"
            )
        self._rules: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def __repr__(self) -> str:
        return f"BallDomain(center={self.center.tolist()}, radius={self.radius!r})"

    @property
    def barycentre(self) -> np.ndarray:
        return self.center.copy()

    @property
    def volume(self) -> float:
        return 4.0 / 3.0 * math.pi * self.radius**3

    @property
    def extent(self) -> float:
        """Diameter (m)."""
        return 2.0 * self.radius

    def contains(self, points) -> np.ndarray:
        p = np.asarray(points, dtype=float) - self.center
        return np.einsum("...i,...i->...", p, p) <= self.radius**2

    def interior_gap(self, point) -> float:
        d = np.linalg.norm(np.asarray(point, dtype=float) - self.center)
        return float((self.radius - d) / self.extent)

    def sample_uniform(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n exact draws of the uniform law on the ball, shape (n, 3)."""
        v = rng.standard_normal((n, 3))
        r = self.radius * np.cbrt(rng.random(n))
        x = self.center + v * (r / np.linalg.norm(v, axis=1))[:, None]
        # rounding can put a draw of radius ≈ R a few ulps outside: use the centre instead
        return np.where(self.contains(x)[:, None], x, self.center)

    def quadrature(self, order: int) -> tuple[np.ndarray, np.ndarray]:
        """Spherical product rule: Gauss-Jacobi in r (weight r²), Gauss-Legendre in cos θ and
        the trapezoidal rule in φ (exact for trigonometric polynomials), ``2 order³`` nodes."""
        if order not in self._rules:
            xr, wr = roots_jacobi(order, 0.0, 2.0)  # weight (1 + x)² on [-1, 1]
            r = 0.5 * self.radius * (xr + 1.0)
            wr = wr * (0.5 * self.radius) ** 3
            ct, wt = roots_legendre(order)
            phi = np.arange(2 * order) * (np.pi / order)
            wp = np.full(2 * order, np.pi / order)
            R, C, P = np.meshgrid(r, ct, phi, indexing="ij")
            S = np.sqrt(1.0 - C**2)
            pts = np.stack([R * S * np.cos(P), R * S * np.sin(P), R * C], -1).reshape(-1, 3)
            w = np.einsum("i,j,k->ijk", wr, wt, wp).ravel()
            self._rules[order] = (self.center + pts, w)
        return self._rules[order]


class ConvexDomain:
    """Convex hull of ``vertices`` (m): an admissible domain D of R0 (Eq. 18-a of [1]).

    Parameters
    ----------
    vertices : array_like, shape (k, 3)
        At least 4 points, not coplanar; interior points are allowed and ignored.
    """

    kind = "convex"

    def __init__(self, vertices):
        try:
            v = np.array(vertices, dtype=float)
        except (TypeError, ValueError):
            raise UncertaintyError(
                f"com.vertices: expected (k, 3) real coordinates, got {vertices!r}", "com.vertices"
            ) from None
        if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] < 4 or not np.all(np.isfinite(v)):
            raise UncertaintyError(
                f"com.vertices: expected at least 4 finite points (k, 3), got shape {v.shape}",
                "com.vertices",
            )
        try:
            hull = ConvexHull(v)
        except QhullError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else "degenerate"
            raise UncertaintyError(
                f"com.vertices: the points span no volume (coplanar or repeated): {first}",
                "com.vertices",
            ) from None
        self.vertices = v[hull.vertices]
        self.equations = hull.equations  # rows (n, d): n·x + d ≤ 0 inside, |n| = 1
        self._extent = float(np.max(np.ptp(self.vertices, axis=0)))
        # Tetrahedra from an interior point to every (triangular) facet of the hull.
        apex = v[hull.vertices].mean(axis=0)
        tri = v[hull.simplices]  # (f, 3, 3)
        self._tets = np.concatenate([np.broadcast_to(apex, (len(tri), 1, 3)), tri], axis=1)
        edges = self._tets[:, 1:] - self._tets[:, :1]
        self._tet_volumes = np.abs(np.linalg.det(edges)) / 6.0
        self._volume = float(self._tet_volumes.sum())
        self._barycentre = (self._tet_volumes @ self._tets.mean(axis=1)) / self._volume
        self._rules: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def __repr__(self) -> str:
        return f"ConvexDomain(<{len(self.vertices)} vertices, {len(self.equations)} facets>)"

    @property
    def barycentre(self) -> np.ndarray:
        return self._barycentre.copy()

    @property
    def volume(self) -> float:
        return self._volume

    @property
    def extent(self) -> float:
        """Largest edge of the bounding box (m)."""
        return self._extent

    def contains(self, points) -> np.ndarray:
        p = np.asarray(points, dtype=float)
        return np.max(p @ self.equations[:, :3].T + self.equations[:, 3], axis=-1) <= 0.0

    def interior_gap(self, point) -> float:
        p = np.asarray(point, dtype=float)
        return float(-np.max(self.equations[:, :3] @ p + self.equations[:, 3]) / self.extent)

    def sample_uniform(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n exact draws of the uniform law on the hull (tetrahedron by volume, then uniform
        barycentric coordinates), shape (n, 3)."""
        k = rng.choice(len(self._tets), size=n, p=self._tet_volumes / self._volume)
        e = rng.exponential(size=(n, 4))
        x = np.einsum("ni,nij->nj", e / e.sum(axis=1, keepdims=True), self._tets[k])
        return np.where(self.contains(x)[:, None], x, self._barycentre)

    def quadrature(self, order: int) -> tuple[np.ndarray, np.ndarray]:
        """Collapsed-coordinate (Duffy) Gauss product rule on every tetrahedron, ``order``³
        nodes each: points (k, 3), weights (k,), exact for polynomials of degree 2·order - 1."""
        if order not in self._rules:
            xu, wu = roots_jacobi(order, 2.0, 0.0)  # weight (1 - x)², x = 2u - 1
            xv, wv = roots_jacobi(order, 1.0, 0.0)  # weight (1 - x)
            xw, ww = roots_legendre(order)
            u, v, w = 0.5 * (xu + 1.0), 0.5 * (xv + 1.0), 0.5 * (xw + 1.0)
            wu, wv, ww = wu / 8.0, wv / 4.0, ww / 2.0  # weights of ∫₀¹ (1-u)² du etc.
            U, V, W = np.meshgrid(u, v, w, indexing="ij")
            ref = np.stack([U, V * (1 - U), W * (1 - U) * (1 - V)], -1).reshape(-1, 3)
            wref = np.einsum("i,j,k->ijk", wu, wv, ww).ravel()  # sums to 1/6
            edges = self._tets[:, 1:] - self._tets[:, :1]  # (t, 3, 3)
            pts = self._tets[:, None, 0, :] + np.einsum("qi,tij->tqj", ref, edges)
            wts = 6.0 * self._tet_volumes[:, None] * wref[None, :]
            self._rules[order] = (pts.reshape(-1, 3), wts.ravel())
        return self._rules[order]


Domain = BoxDomain | BallDomain | ConvexDomain

# --------------------------------------------------------------------------------------------
# Centre of mass: Lagrange multipliers, Eq. (20)-(22)
# --------------------------------------------------------------------------------------------

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


def _max_entropy_newton(features, log_base, target, theta0, tol=NEWTON_TOL):
    """Minimize F(θ) = log Σ_i exp(log_base_i - <θ, φ_i>) + <θ, target> by damped Newton.

    F is convex (log-sum-exp of affine functions); its gradient target - E_θ[φ] vanishes when the
    tilted weights p_i ∝ exp(log_base_i - <θ, φ_i>) reproduce the prescribed moments. This is the
    dual of the maximum-entropy problems of Eq. (21) (centre of mass) and Eq. (42) (bounded G).

    Returns θ, p (normalized weights), iterations, converged.
    """
    theta = np.array(theta0, dtype=float)

    def objective(th):
        e = log_base - features @ th
        lse = logsumexp(e)
        return lse + th @ target, e, lse

    f, e, lse = objective(theta)
    for it in range(NEWTON_MAX_ITER):
        p = np.exp(e - lse)
        m = p @ features
        grad = target - m
        if np.max(np.abs(grad)) <= tol:
            return theta, p, it, True
        d = features - m
        hess = (d * p[:, None]).T @ d
        try:
            step = np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(hess, grad, rcond=None)[0]
        slope = -grad @ step
        t = 1.0
        while True:  # Armijo backtracking on the convex objective
            f_new, e_new, lse_new = objective(theta - t * step)
            if f_new <= f + 1e-4 * t * slope or t < 1e-12:
                break
            t *= 0.5
        if t < 1e-12:
            return theta, p, it + 1, False
        theta, f, e, lse = theta - t * step, f_new, e_new, lse_new
    p = np.exp(e - lse)
    return theta, p, NEWTON_MAX_ITER, bool(np.max(np.abs(target - p @ features)) <= tol)


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
        theta, _, _, ok = _max_entropy_newton(
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
    r0 = _vec3(r0, "com.r0")
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
    lam = _vec3(lambda_r, "com.lambda_r")
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
    n = _size(size)
    if method == "exact" and not isinstance(domain, BoxDomain):
        raise UncertaintyError(
            f"method: the exact sampler needs a box domain, got a {domain.kind}; use 'mh'", "method"
        )
    if isinstance(domain, BoxDomain) and method in ("auto", "exact"):
        out = _sample_box_exact(rng, domain, sol.lambda_r, n)
    else:
        out = _sample_com_mh(rng, domain, sol, _vec3(r0, "com.r0"), n)
    return out[0] if size is None else out


# --------------------------------------------------------------------------------------------
# Inertia: Z̲, SG0+, the bounded ensemble, J
# --------------------------------------------------------------------------------------------


def nominal_z(mean_inertia, mean_mass: float) -> np.ndarray:
    """Z̲ = (tr(J̲)/2 I - J̲)/m̲, Eq. (34) of [1]_, checked positive definite.

    Parameters
    ----------
    mean_inertia : array_like, shape (3, 3)
        Nominal inertia tensor J̲ about the centre of mass (kg·m²).
    mean_mass : float
        Nominal mass m̲ (kg).

    Returns
    -------
    ndarray, shape (3, 3)
        Z̲ (m²), symmetric positive definite.

    Raises
    ------
    UncertaintyError
        ``inertia.mean`` not symmetric, or not the tensor of a physical body (Z̲ not positive
        definite: a triangle inequality J_i + J_j > J_k fails); ``mass.mean`` not positive.
    """
    J = _sym3(mean_inertia, "inertia.mean")
    m = _real(mean_mass, "mass.mean")
    if m <= 0.0:
        raise UncertaintyError(
            f"mass.mean: the nominal mass must be positive, got {m:g}", "mass.mean"
        )
    z = (np.trace(J) / 2.0 * np.eye(3) - J) / m  # Eq. (34) in [1]
    if np.linalg.eigvalsh(z)[0] <= 0.0:
        raise UncertaintyError(
            f"inertia.mean: J = {J.tolist()} is not the inertia tensor of a physical body: "
            "Z = (tr(J)/2 I - J)/m must be positive definite (Eq. 34; principal moments with "
            "J_i + J_j > J_k)",
            "inertia.mean",
        )
    return z


def sample_sg0(rng: np.random.Generator, dispersion: float, size: int | None = None) -> np.ndarray:
    """Draw G0 from Soize's ensemble SG0+ of dispersion δ_G, Appendix B of [1]_ ([2]_).

    G0 = Lᵀ L with L upper triangular, independent entries (Eq. 57-59): L_jk = σ U_jk (j < k),
    U_jk ~ N(0, 1); L_jj = σ √(2 V_j), V_j ~ Gamma(2/δ² + (1 - j)/2) for j = 1, 2, 3; σ = δ/2.
    Then E[G0] = I and (E‖G0 - I‖²_F / 3)^(1/2) = δ (Eq. 56). (G0 is the Wishart law with
    4/δ² degrees of freedom and scale I δ²/4.)

    Parameters
    ----------
    rng : numpy.random.Generator
    dispersion : float
        δ_G, 0 < δ_G < 1/√2.
    size : int, optional
        Number of draws; ``None`` for one.

    Returns
    -------
    ndarray, shape (3, 3) or (size, 3, 3)
        Symmetric positive-definite matrices.

    Raises
    ------
    UncertaintyError
        ``inertia.dispersion`` out of range.
    """
    d = _check_dispersion(
        dispersion, "inertia.dispersion", "delta_G", "Appendix B: E[||G^-1||^2] < inf"
    )
    return _sg0(rng, d, _size(size)) if size is not None else _sg0(rng, d, 1)[0]


def _sg0(rng: np.random.Generator, d: float, n: int) -> np.ndarray:
    """SG0+ draws without the range check on δ (used with δ² = 2/(2 - λ_l) up to 2)."""
    sigma = d / 2.0  # σ_m = δ/√(n+1) with n = 3
    j = np.arange(1, 4)  # the paper's 1-based index j = 1, 2, 3
    shapes = 2.0 / d**2 + (1.0 - j) / 2.0  # Eq. (58)-(59) in [1]: shapes 2/δ², 2/δ² - ½, 2/δ² - 1
    v = rng.gamma(shapes, size=(n, 3))
    off = rng.standard_normal((n, 3))
    L = np.zeros((n, 3, 3))
    L[:, _DIAG, _DIAG] = sigma * np.sqrt(2.0 * v)
    L[:, _OFF_R, _OFF_C] = sigma * off
    return np.einsum("nki,nkj->nij", L, L)  # G0 = Lᵀ L


class GEnsemble(Protocol):
    """What :func:`sample_inertia` needs: ``sample(rng, size=None)`` returning G."""

    def sample(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray: ...


@dataclass(frozen=True)
class SG0Ensemble:
    """Soize's SG0+ ensemble for G (Appendix B of [1]_), as a :class:`GEnsemble`.

    Parameters
    ----------
    dispersion : float
        δ_G, 0 < δ_G < 1/√2.
    """

    dispersion: float

    def __post_init__(self):
        _check_dispersion(
            self.dispersion, "inertia.dispersion", "delta_G", "Appendix B: E[||G^-1||^2] < inf"
        )

    def sample(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        """G, shape (3, 3) or (size, 3, 3); see :func:`sample_sg0`."""
        return sample_sg0(rng, self.dispersion, size)


def z_max_from_box(center, size, com) -> np.ndarray:
    """Upper bound Z_max of Eq. (33) of [1]_ for a body contained in an axis-aligned box.

    [Z_max]_jk = max over the body of (x'_j)² δ_jk, x' = x - com in the body frame; over the box
    ``center ± size/2`` the maximum is (|center_j - com_j| + size_j/2)².

    Eq. (33) bounds every diagonal entry of Z; it bounds Z in the matrix order (Z_max - Z positive
    definite) when the body's products of inertia are small, e.g. for bodies with symmetry planes
    along the axes. :class:`BoundedGEnsemble` checks Z_max > Z̲ and raises otherwise.

    Parameters
    ----------
    center, size, com : array_like, shape (3,)
        Box centre and edge lengths, centre of mass (m, body frame).

    Returns
    -------
    ndarray, shape (3, 3)
        Diagonal Z_max (m²).
    """
    c, s, g = _vec3(center, "inertia.z_max"), _vec3(size, "inertia.z_max"), _vec3(com, "com")
    return np.diag((np.abs(c - g) + 0.5 * np.abs(s)) ** 2)


def z_max_from_vertices(vertices, com) -> np.ndarray:
    """Upper bound Z_max of Eq. (33) of [1]_ for a body inside the convex hull of ``vertices``.

    (x'_j)² is convex, so its maximum over the hull is reached at a vertex. See
    :func:`z_max_from_box` for when Eq. (33) bounds Z in the matrix order.

    Parameters
    ----------
    vertices : array_like, shape (k, 3)
    com : array_like, shape (3,)

    Returns
    -------
    ndarray, shape (3, 3)
        Diagonal Z_max (m²).
    """
    v = np.asarray(vertices, dtype=float)
    if v.ndim != 2 or v.shape[1] != 3 or not np.all(np.isfinite(v)):
        raise UncertaintyError(
            f"inertia.z_max: expected vertices (k, 3), got shape {v.shape}", "inertia.z_max"
        )
    return np.diag(np.max((v - _vec3(com, "com")) ** 2, axis=0))


@dataclass(frozen=True)
class BoundedCalibration:
    """Result of :meth:`BoundedGEnsemble.calibrate` (Eq. 42-43 of [1]).

    Attributes
    ----------
    mu : ndarray, shape (3, 3)
        Lagrange multiplier μ of Eq. (41) (symmetric, not necessarily positive definite).
    c_g : float
        Normalization constant C_G of Eq. (41), w.r.t. dG̃ = 2^(3/2) Π_{j≤k} dG_jk.
    residual : float
        ‖E[G] - I‖_F estimated on independent check draws.
    iterations : int
        Newton iterations on the dual of Eq. (42).
    converged : bool
        Newton converged, residual ≤ CALIBRATION_TOL, ESS fraction ≥ MIN_ESS_FRACTION and the
        Metropolis chain length within MH_G_MAX_STEPS.
    ess_fraction : float
        Effective sample size (Σw)²/Σw² over the number of draws.
    inside_fraction : float
        Fraction of SG0+ draws below G_max (where the weight is non-zero).
    max_weight : float
        Largest importance weight over its mean, the estimate of W = sup π/q.
    mh_steps : int
        Independence Metropolis-Hastings steps per draw.
    dispersion : float
        δ_G = (E‖G - I‖²_F / 3)^(1/2) of the calibrated law.
    n_samples : int
        SG0+ draws used to identify μ (as many again for the check).
    message : str
        Why calibration failed ("" when converged).
    """

    mu: np.ndarray
    c_g: float
    residual: float
    iterations: int
    converged: bool
    ess_fraction: float
    inside_fraction: float
    max_weight: float
    mh_steps: int
    dispersion: float
    n_samples: int
    message: str = ""


def _features(G: np.ndarray) -> np.ndarray:
    """φ(G) such that tr(μ G) = <θ(μ), φ(G)>: (G11, G22, G33, 2G12, 2G13, 2G23)."""
    return np.stack(
        [
            G[..., 0, 0],
            G[..., 1, 1],
            G[..., 2, 2],
            2 * G[..., 0, 1],
            2 * G[..., 0, 2],
            2 * G[..., 1, 2],
        ],
        axis=-1,
    )


def _theta_to_mu(theta: np.ndarray) -> np.ndarray:
    t = theta
    return np.array([[t[0], t[3], t[4]], [t[3], t[1], t[5]], [t[4], t[5], t[2]]])


def _log_sg0_normalizer(d: float) -> float:
    """log C_G0 of Eq. (58) of [1] (w.r.t. dG̃ = 2^(3/2) Π dG_jk)."""
    j = np.arange(1, 4)
    return float(
        -1.5 * math.log(2.0 * math.pi)
        + 6.0 / d**2 * math.log(2.0 / d**2)
        - np.sum(gammaln(2.0 / d**2 + (1.0 - j) / 2.0))
    )


class BoundedGEnsemble:
    """The bounded ensemble of Eq. (41) of [1]_ for the normalized inertia matrix G.

    p(G) = 1[0 < G < G_max] C_G det(G)^(-λ_l) det(G_max - G)^(-λ_u) exp(-tr(μ G)), with
    G_max = L̲⁻ᵀ Z_max L̲⁻¹ (Eq. 39). μ and C_G are identified by :meth:`calibrate` so that
    E[G] = I (Eq. 42); :meth:`sample` then draws by Metropolis-Hastings.

    Parameters
    ----------
    lambda_l, lambda_u : float
        Shape multipliers λ_l < 1 and λ_u < 1 (λ_l < -2 gives E‖J⁻¹‖² < ∞, Eq. 44-d).
    z_bar : array_like, shape (3, 3)
        Nominal Z̲ of Eq. (34) (m²), see :func:`nominal_z`.
    z_max : array_like, shape (3, 3)
        Upper bound Z_max of Z (m²), with Z_max - Z̲ positive definite (Eq. 35-b); from the
        body's geometry with :func:`z_max_from_box` or :func:`z_max_from_vertices` (Eq. 33).

    Raises
    ------
    UncertaintyError
        ``inertia.lambda_l``/``inertia.lambda_u`` ≥ 1, ``inertia.z_max`` missing, not symmetric
        or not above Z̲.
    """

    def __init__(self, lambda_l: float, lambda_u: float, z_bar, z_max):
        self.lambda_l = _real(lambda_l, "inertia.lambda_l")
        self.lambda_u = _real(lambda_u, "inertia.lambda_u")
        for name, v in (("lambda_l", self.lambda_l), ("lambda_u", self.lambda_u)):
            if not v < 1.0:
                raise UncertaintyError(
                    f"inertia.{name}: expected {name} < 1 (Eq. 41 of Batou & Soize 2012: the "
                    f"density must be integrable at the bound), got {v:g}",
                    f"inertia.{name}",
                )
        self.z_bar = _sym3(z_bar, "inertia.z_bar")
        if np.linalg.eigvalsh(self.z_bar)[0] <= 0.0:
            raise UncertaintyError("inertia.z_bar: Z̲ must be positive definite", "inertia.z_bar")
        if z_max is None:
            raise UncertaintyError(
                "inertia.z_max: the bounded ensemble needs the upper bound Z_max of Z (m^2); "
                "derive it from the body's geometry with Eq. (33) (z_max_from_box, "
                "z_max_from_vertices) or give it",
                "inertia.z_max",
            )
        self.z_max = _sym3(z_max, "inertia.z_max")
        gap = np.linalg.eigvalsh(self.z_max - self.z_bar)
        if gap[0] <= 0.0:
            raise UncertaintyError(
                "inertia.z_max: Z_max must be above Z̲ = (tr(J)/2 I - J)/m (Z_max - Z̲ positive "
                f"definite, Eq. 35-b); Z̲ = {np.round(self.z_bar, 6).tolist()}, eigenvalues of "
                f"Z_max - Z̲ = {np.round(gap, 6).tolist()}",
                "inertia.z_max",
            )
        self.l_z = np.linalg.cholesky(self.z_bar).T  # Eq. (36) in [1]: Z̲ = L̲ᵀ L̲, L̲ upper
        l_inv = np.linalg.inv(self.l_z)
        g_max = l_inv.T @ self.z_max @ l_inv  # Eq. (39) in [1]
        self.g_max = 0.5 * (g_max + g_max.T)
        # Proposal G0 of Eq. (40) with λ = λ_l (Appendix C: same behaviour near 0 as Eq. 41):
        # Eq. (57) has det(G)^(2(δ⁻² - 1)) = det(G)^(-λ_l), so δ0² = 2/(2 - λ_l), μ0 = (2 - λ_l) I.
        self.dispersion_g0 = math.sqrt(2.0 / (2.0 - self.lambda_l))
        self._theta0 = np.array([2.0 - self.lambda_l] * 3 + [0.0] * 3)
        self._theta: np.ndarray | None = None
        self.calibration: BoundedCalibration | None = None

    @classmethod
    def from_inertia(cls, lambda_l, lambda_u, mean_inertia, mean_mass, z_max) -> BoundedGEnsemble:
        """Build from the nominal J̲ (kg·m²) and m̲ (kg) via Z̲ of Eq. (34)."""
        return cls(lambda_l, lambda_u, nominal_z(mean_inertia, mean_mass), z_max)

    def __repr__(self) -> str:
        return (
            f"BoundedGEnsemble(lambda_l={self.lambda_l!r}, lambda_u={self.lambda_u!r}, "
            f"z_bar={self.z_bar.tolist()}, z_max={self.z_max.tolist()})"
        )

    def _log_bound(self, G: np.ndarray) -> np.ndarray:
        """log(det(G_max - G)^(-λ_u)) where G < G_max, -inf elsewhere."""
        D = self.g_max - G
        m1 = D[..., 0, 0]
        m2 = D[..., 0, 0] * D[..., 1, 1] - D[..., 0, 1] * D[..., 1, 0]
        det = np.linalg.det(D)
        inside = (m1 > 0.0) & (m2 > 0.0) & (det > 0.0)  # Sylvester's criterion
        return np.where(inside, -self.lambda_u * np.log(np.where(inside, det, 1.0)), -np.inf)

    def _log_weight(self, G: np.ndarray, theta: np.ndarray) -> np.ndarray:
        # π/q for π = Eq. (41) and q = Eq. (40) with (λ_l, μ0): the factor det(G)^(-λ_l) cancels.
        # (Eq. 43 as printed omits exp(-tr((μ - μ0) G)); it is needed unless μ = μ0.)
        return self._log_bound(G) - _features(G) @ (theta - self._theta0)

    def calibrate(
        self, rng: np.random.Generator, n_samples: int = CALIBRATION_SAMPLES, strict: bool = True
    ) -> BoundedCalibration:
        """Identify μ and C_G so that E[G] = I, Eq. (42)-(43) of [1]_.

        The expectations under Eq. (41) are importance-sampling estimates with ``n_samples`` draws
        of G0 ~ SG0+ with δ0² = 2/(2 - λ_l) (Eq. 43). For these fixed draws the equations
        E_μ[G] = I are the stationarity conditions of a convex function of μ (log-sum-exp), solved
        by damped Newton, so the result is deterministic given ``rng``. E[G] = I is then checked
        on ``n_samples`` independent draws and C_G = C_G0 / E_G0[w] (Eq. 43 with g = 1, C_G0 of
        Eq. 58).

        Parameters
        ----------
        rng : numpy.random.Generator
        n_samples : int
            SG0+ draws for the identification (as many again for the check).
        strict : bool
            Raise if calibration fails; otherwise only record it (:meth:`sample` still refuses).

        Returns
        -------
        BoundedCalibration
            Also stored as ``self.calibration``.

        Raises
        ------
        UncertaintyError
            (``strict``) calibration did not converge; the message gives the diagnostics.
        """
        n = _size(n_samples)
        if n < 1000:
            raise UncertaintyError(f"n_samples: need at least 1000 draws, got {n}", "n_samples")
        d0 = self.dispersion_g0
        G = _sg0(rng, d0, n)
        logb = self._log_bound(G)
        inside = np.isfinite(logb)
        phi = _features(G[inside])
        target = _features(np.eye(3))
        # Eq. (42) in [1]: E[G] = I with E by Eq. (43);
        # dual variables θ = (μ11, μ22, μ33, μ12, μ13, μ23)
        theta, p, iterations, newton_ok = _max_entropy_newton(
            phi, logb[inside] + phi @ self._theta0, target, self._theta0
        )
        ess = 1.0 / float(np.sum(p**2)) / n
        w_max = float(np.max(p)) * n
        raw_steps = math.log(MH_G_TV) / math.log1p(-1.0 / max(MH_G_W_SAFETY * w_max, 1.0 + 1e-12))
        steps = int(min(max(math.ceil(raw_steps), MH_G_MIN_STEPS), MH_G_MAX_STEPS))
        # independent check of E[G] = I, δ_G and C_G
        G2 = _sg0(rng, d0, n)
        lw2 = self._log_weight(G2, theta)
        lse2 = logsumexp(lw2)
        p2 = np.exp(lw2 - lse2)
        mean_g = np.einsum("n,nij->ij", p2, G2)
        residual = float(np.linalg.norm(mean_g - np.eye(3)))
        dispersion = math.sqrt(float(p2 @ np.sum((G2 - np.eye(3)) ** 2, axis=(1, 2))) / 3.0)
        c_g = math.exp(_log_sg0_normalizer(d0) - (lse2 - math.log(n)))
        problems = []
        if not newton_ok:
            problems.append(f"Newton did not converge in {iterations} iterations")
        if residual > CALIBRATION_TOL:
            problems.append(f"||E[G] - I||_F = {residual:.3g} > {CALIBRATION_TOL}")
        if ess < MIN_ESS_FRACTION:
            problems.append(f"effective sample size {ess:.2%} < {MIN_ESS_FRACTION:.0%}")
        if raw_steps > MH_G_MAX_STEPS:
            problems.append(f"Metropolis chain would need {raw_steps:.0f} > {MH_G_MAX_STEPS} steps")
        self._theta = theta
        self.calibration = BoundedCalibration(
            mu=_theta_to_mu(theta),
            c_g=c_g,
            residual=residual,
            iterations=iterations,
            converged=not problems,
            ess_fraction=ess,
            inside_fraction=float(inside.mean()),
            max_weight=w_max,
            mh_steps=steps,
            dispersion=dispersion,
            n_samples=n,
            message="; ".join(problems),
        )
        if problems and strict:
            raise UncertaintyError(
                f"inertia: calibration of the bounded ensemble (lambda_l={self.lambda_l:g}, "
                f"lambda_u={self.lambda_u:g}) failed: {self.calibration.message}; try more "
                "n_samples, lambda_l/lambda_u further below 1, or a larger z_max",
                "inertia",
            )
        return self.calibration

    def sample(self, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
        """Draw G from Eq. (41) by independence Metropolis-Hastings (Appendix D of [1]_).

        The kernel proposes SG0+ draws (the law q of Eq. 40 with λ = λ_l, μ = μ0), accepted with
        probability min(1, w(G̃)/w(G)), w = π/q the importance weight of calibration. Each draw
        is the last state of its own chain of ``calibration.mh_steps`` proposals, so draws are
        independent; the chain length bounds the total variation to the target by MH_G_TV.

        Returns
        -------
        ndarray, shape (3, 3) or (size, 3, 3)
            Symmetric matrices with 0 < G < G_max.

        Raises
        ------
        UncertaintyError
            Not calibrated, or calibration did not converge.
        """
        cal = self.calibration
        if cal is None or self._theta is None:
            raise UncertaintyError("inertia: call calibrate(rng) before sample()", "inertia")
        if not cal.converged:
            raise UncertaintyError(
                f"inertia: the bounded ensemble is not calibrated ({cal.message})", "inertia"
            )
        n = _size(size)
        steps = cal.mh_steps
        out = np.empty((n, 3, 3))
        chunk = max(1, _CHUNK_DRAWS // steps)
        for start in range(0, n, chunk):
            c = min(chunk, n - start)
            props = _sg0(rng, self.dispersion_g0, steps * c).reshape(steps, c, 3, 3)
            logw = self._log_weight(props, self._theta)
            u = rng.random((steps, c))
            x, lw = props[0].copy(), logw[0].copy()
            for k in range(1, steps):
                valid = np.isfinite(lw)
                ratio = np.exp(np.minimum(logw[k] - np.where(valid, lw, 0.0), 0.0))
                acc = ~valid | (u[k] < ratio)
                x = np.where(acc[:, None, None], props[k], x)
                lw = np.where(acc, logw[k], lw)
            while not np.all(np.isfinite(lw)):  # no admissible proposal yet (probability ~0)
                bad = np.flatnonzero(~np.isfinite(lw))
                new = _sg0(rng, self.dispersion_g0, len(bad))
                x[bad], lw[bad] = new, self._log_weight(new, self._theta)
            out[start : start + c] = x
        return out[0] if size is None else out


def inertia_from_g(g, z_bar, mass) -> np.ndarray:
    """J = M (tr(Z) I - Z) with Z = L̲ᵀ G L̲, Eq. (32), (36), (37) of [1]_.

    Parameters
    ----------
    g : array_like, shape (..., 3, 3)
        Normalized matrices G (symmetric positive definite).
    z_bar : array_like, shape (3, 3)
        Z̲ of Eq. (34) (m²).
    mass : float or array_like, shape (...)
        Masses M (kg).

    Returns
    -------
    ndarray, shape (..., 3, 3)
        Inertia tensors (kg·m²), exactly symmetric.
    """
    l_z = np.linalg.cholesky(np.asarray(z_bar, dtype=float)).T  # Eq. (36) in [1]: Z̲ = L̲ᵀ L̲
    G = np.asarray(g, dtype=float)
    Z = np.einsum("ki,...kl,lj->...ij", l_z, G, l_z)  # Eq. (37) in [1]: Z = L̲ᵀ G L̲
    tr = np.trace(Z, axis1=-2, axis2=-1)
    M = np.asarray(mass, dtype=float)[..., None, None]
    J = M * (tr[..., None, None] * np.eye(3) - Z)  # Eq. (32) in [1]: J = M (tr(Z) I - Z)
    return 0.5 * (J + np.swapaxes(J, -1, -2))


def sample_inertia(
    rng: np.random.Generator, mean_inertia, mean_mass: float, mass, g_ensemble: GEnsemble
) -> np.ndarray:
    """Draw the random inertia tensor J of Eq. (32) of [1]_ given realizations of the mass.

    J = M (tr(Z) I - Z), Z = L̲ᵀ G L̲, Z̲ = L̲ᵀ L̲ = (tr(J̲)/2 I - J̲)/m̲ (Eq. 32, 34, 36, 37), G from
    ``g_ensemble``. With M independent of G, E[M] = m̲ and E[G] = I, E[J] = J̲ (Eq. 44-c).

    Parameters
    ----------
    rng : numpy.random.Generator
        Used for G only (draw M beforehand, e.g. with :func:`sample_mass`).
    mean_inertia : array_like, shape (3, 3)
        Nominal J̲ (kg·m²).
    mean_mass : float
        Nominal m̲ (kg).
    mass : float or array_like, shape (n,)
        Realizations of M (kg): a scalar gives one tensor, n masses give n tensors. Pass
        ``mean_mass`` for a deterministic mass.
    g_ensemble : SG0Ensemble, BoundedGEnsemble or any object with ``sample(rng, size)``
        The law of G. A :class:`BoundedGEnsemble` must have been built for this Z̲.

    Returns
    -------
    ndarray, shape (3, 3) or (n, 3, 3)
        Physically admissible inertia tensors (kg·m²).
    """
    z_bar = nominal_z(mean_inertia, mean_mass)
    built_for = getattr(g_ensemble, "z_bar", None)
    if built_for is not None and not np.allclose(built_for, z_bar, rtol=1e-9, atol=0.0):
        raise UncertaintyError(
            f"inertia: the G ensemble was built for Z̲ = {np.round(built_for, 6).tolist()}, not for "
            f"this body's Z̲ = {np.round(z_bar, 6).tolist()}",
            "inertia",
        )
    M = np.asarray(mass, dtype=float)
    if M.ndim > 1 or not np.all(np.isfinite(M)) or not np.all(M > 0.0):
        raise UncertaintyError("mass: expected a positive mass or a 1-D array of them", "mass")
    G = g_ensemble.sample(rng, None if M.ndim == 0 else len(M))
    return inertia_from_g(G, z_bar, M)


def physically_admissible(inertia, rtol: float = INERTIA_RTOL) -> np.ndarray:
    """Whether each tensor is that of a physical rigid body.

    Symmetric, positive definite, and principal moments with J_i + J_j ≥ J_k (triangle
    inequalities), up to ``rtol`` of the largest principal moment.

    Parameters
    ----------
    inertia : array_like, shape (..., 3, 3)

    Returns
    -------
    ndarray of bool, shape (...)
    """
    J = np.asarray(inertia, dtype=float)
    scale = np.max(np.abs(J), axis=(-2, -1))
    sym = np.max(np.abs(J - np.swapaxes(J, -1, -2)), axis=(-2, -1)) <= rtol * scale
    ev = np.linalg.eigvalsh(0.5 * (J + np.swapaxes(J, -1, -2)))  # ascending
    pd = ev[..., 0] > 0.0
    triangle = ev[..., 0] + ev[..., 1] >= ev[..., 2] * (1.0 - rtol)
    return sym & pd & triangle
