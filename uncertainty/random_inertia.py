"""Random inertia tensor of Batou & Soize: J = M (tr(Z) I - Z), Z = L̲ᵀ G L̲, G random.

Implements Eq. (32)-(44) of [1]_: the nominal Z̲ (Eq. 34), the normalized matrix G from Soize's
ensemble SG0+ (Appendix B, [2]_) or from the bounded ensemble of Eq. (41), calibrated so that
E[G] = I (Eq. 42-43) and sampled by independence Metropolis-Hastings, and J from G and the mass.
Every realization is physically admissible by construction (Z > 0, Eq. 28; Appendix A). Inertia
in kg·m², lengths in metres, masses in kg.

References
----------
.. [1] A. Batou, C. Soize, Rigid multibody system dynamics with uncertain rigid bodies,
       Multibody System Dynamics 27 (2012) 285-319, doi:10.1007/s11044-011-9279-2.
.. [2] C. Soize, Maximum entropy approach for modeling random uncertainties in transient
       elastodynamics, J. Acoust. Soc. Am. 109 (2001) 1979-1996.
.. [3] K. L. Mengersen, R. L. Tweedie, Rates of convergence of the Hastings and Metropolis
       algorithms, Ann. Statist. 24 (1996) 101-121.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.special import gammaln, logsumexp

from uncertainty.body_checks import (
    checked_dispersion,
    checked_real,
    checked_sym3,
    checked_vec3,
    draw_count,
)
from uncertainty.errors import UncertaintyError
from uncertainty.max_entropy import max_entropy_newton

__all__ = [
    "CALIBRATION_SAMPLES",
    "CALIBRATION_TOL",
    "MIN_ESS_FRACTION",
    "MH_G_TV",
    "MH_G_W_SAFETY",
    "MH_G_MIN_STEPS",
    "MH_G_MAX_STEPS",
    "INERTIA_RTOL",
    "nominal_z",
    "sample_sg0",
    "GEnsemble",
    "SG0Ensemble",
    "z_max_from_box",
    "z_max_from_vertices",
    "BoundedCalibration",
    "BoundedGEnsemble",
    "inertia_from_g",
    "sample_inertia",
    "physically_admissible",
]

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

#: Independence Metropolis-Hastings for the bounded G (Appendix D of [1], kernel q = law of the
#: SG0+ proposal). With W = sup π/q, the total variation after k steps is ≤ (1 - 1/W)^k ([3],
#: Thm. 2.1). The number of steps per draw is chosen so that this bound is MH_G_TV, with W taken
#: as MH_G_W_SAFETY times the largest normalized importance weight seen during calibration (a
#: sample maximum underestimates the supremum).
MH_G_TV = 1e-4
MH_G_W_SAFETY = 2.0
MH_G_MIN_STEPS = 20
#: More steps than this means the SG0+ proposal is too far from the bounded law: calibration
#: reports ``converged=False`` rather than sampling with a chain that mixes poorly.
MH_G_MAX_STEPS = 2000

#: Relative tolerance of :func:`physically_admissible`'s triangle inequality, in units of the
#: largest principal moment: thin rods and plates meet it with equality up to rounding.
INERTIA_RTOL = 1e-9

_DIAG = np.array([0, 1, 2])
_OFF_R, _OFF_C = np.array([0, 0, 1]), np.array([1, 2, 2])
_CHUNK_DRAWS = 200_000  # proposals held in memory at once by the chained samplers


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
    J = checked_sym3(mean_inertia, "inertia.mean")
    m = checked_real(mean_mass, "mass.mean")
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
    d = checked_dispersion(
        dispersion, "inertia.dispersion", "delta_G", "Appendix B: E[||G^-1||^2] < inf"
    )
    return _sg0(rng, d, draw_count(size)) if size is not None else _sg0(rng, d, 1)[0]


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
        checked_dispersion(
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
    c, s, g = (
        checked_vec3(center, "inertia.z_max"),
        checked_vec3(size, "inertia.z_max"),
        checked_vec3(com, "com"),
    )
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
    return np.diag(np.max((v - checked_vec3(com, "com")) ** 2, axis=0))


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
        self.lambda_l = checked_real(lambda_l, "inertia.lambda_l")
        self.lambda_u = checked_real(lambda_u, "inertia.lambda_u")
        for name, v in (("lambda_l", self.lambda_l), ("lambda_u", self.lambda_u)):
            if not v < 1.0:
                raise UncertaintyError(
                    f"inertia.{name}: expected {name} < 1 (Eq. 41 of Batou & Soize 2012: the "
                    f"density must be integrable at the bound), got {v:g}",
                    f"inertia.{name}",
                )
        self.z_bar = checked_sym3(z_bar, "inertia.z_bar")
        if np.linalg.eigvalsh(self.z_bar)[0] <= 0.0:
            raise UncertaintyError("inertia.z_bar: Z̲ must be positive definite", "inertia.z_bar")
        if z_max is None:
            raise UncertaintyError(
                "inertia.z_max: the bounded ensemble needs the upper bound Z_max of Z (m^2); "
                "derive it from the body's geometry with Eq. (33) (z_max_from_box, "
                "z_max_from_vertices) or give it",
                "inertia.z_max",
            )
        self.z_max = checked_sym3(z_max, "inertia.z_max")
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
        n = draw_count(n_samples)
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
        theta, p, iterations, newton_ok = max_entropy_newton(
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
        n = draw_count(size)
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
