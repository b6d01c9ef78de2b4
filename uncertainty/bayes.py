"""Bayesian parameter estimation with a Gaussian prediction error: MAP, Laplace, exact, MCMC.

For data ŷ, shape (N,), and a model z(θ) with prediction error e = ŷ − z(θ) ~ N(0, Σ), Σ = σ² Σ̃
(Eq. 5 of [1]_; Σ̃ = I for independent errors, or Eq. 18-21 with correlated model error), this
module implements

* the negative log posterior L(θ, σ) = J̃/(2σ²) + N ln σ + ½ ln det Σ̃ + (N/2) ln 2π − ln p(θ)
  with the weighted misfit J̃ = rᵀ Σ̃⁻¹ r, r = ŷ − z(θ) (Eq. 7-10 of [1], and Appendix 1.2's
  L(θ, σ) = J/(2σ²) + N ln σ when σ is a parameter), its gradient and its full Hessian from the
  model's first and second derivatives (Appendix 1.2), analytic where the model provides them;
* the most probable value (MAP) by multi-start bounded quasi-Newton minimization polished by
  Newton steps on the full Hessian (:func:`find_map`);
* the Laplace (asymptotic) posterior N(θ̂, H⁻¹), Eq. (11)-(15) of [1], with standard deviations,
  correlations and the eigen-directions of H (:func:`laplace`); a singular or indefinite Hessian is
  reported, never inverted;
* the exact posterior of Eq. (8) on a grid for one or two parameters, with marginals by
  integration and posterior moments (:func:`grid_posterior`);
* affine-invariant ensemble MCMC (emcee, [2]_) for more parameters, seeded, with integrated
  autocorrelation times as the convergence diagnostic ([2], [3]_) (:func:`sample_posterior`);
* priors: uniform with bounds (the document's default, Eq. 6), normal and lognormal
  (:class:`Prior`);
* the prediction-error covariance Σ = Σ_meas + Σ_model of Eq. (18)-(21)
  (:func:`prediction_error_covariance`).

Symbols follow [1]: θ model parameters, σ prediction-error standard deviation, J misfit, L minus
the log posterior, H its Hessian.

References
----------
.. [1] Bayesian Inference for the Mechanical Model of a Falling Object (course project document,
       ../shared/papers/falling-object-bayesian-inference-and-design.md).
.. [2] D. Foreman-Mackey, D. W. Hogg, D. Lang, J. Goodman, emcee: The MCMC Hammer, PASP 125
       (2013) 306-312.
.. [3] J. Goodman, J. Weare, Ensemble samplers with affine invariance, Commun. Appl. Math. Comput.
       Sci. 5 (2010) 65-80.
.. [4] J. Nocedal, S. J. Wright, Numerical Optimization, 2nd ed., Springer (2006).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_factor, cho_solve, cholesky, solve_triangular

from uncertainty.errors import UncertaintyError
from uncertainty.model import CachedModel, Model

__all__ = [
    "NEWTON_TOL",
    "HESSIAN_DIGITS",
    "EDGE_DENSITY",
    "TAU_MULTIPLE",
    "Prior",
    "prior_from_spec",
    "prediction_error_covariance",
    "Posterior",
    "MapResult",
    "find_map",
    "LaplaceResult",
    "laplace",
    "GridPosterior",
    "grid_ranges",
    "grid_posterior",
    "McmcResult",
    "sample_posterior",
]

#: The MAP is converged when the Newton decrement δ = √(gᵀ H⁻¹ g) is below this: δ is the distance
#: to the optimum in units of the Laplace posterior's standard deviation along the step ([4]_
#: §3.3 for Newton's method), so 1e-6 is far below any digit reported, yet above the error of
#: finite-difference gradients for models with relative noise up to 1e-10.
NEWTON_TOL = 1e-6
#: Newton decrement below which full Newton steps are taken without a line search (the
#: iterate is within 1e-3 posterior standard deviations of the optimum, where Newton's and
#: Gauss-Newton's steps contract and L's decrease is too small to test reliably).
PURE_NEWTON = 1e-3
#: The Laplace covariance is computed only if it keeps at least this many significant digits: the
#: scaled Hessian D H D (D = diag(H)^-1/2) must have a smallest eigenvalue above
#: 10^HESSIAN_DIGITS times the Hessian's relative accuracy (the inversion amplifies relative
#: errors by the condition number).
HESSIAN_DIGITS = 3
#: Relative accuracy of an analytic Hessian of L: a sum over N data of products of analytic
#: derivatives, each good to a few units of roundoff (1e-13 allows for N up to ~1e3 terms).
ANALYTIC_HESSIAN_ACCURACY = 1e-13
#: A grid box is wide enough when the posterior density on its edges (those not on a prior
#: bound) is below this fraction of the peak: for a Gaussian that is beyond 7.4 standard
#: deviations, where the mass left out is < 1e-12.
EDGE_DENSITY = 1e-12
#: Half-width of the first grid box in Laplace standard deviations (density e^-32 ≈ 1e-14 of the
#: peak at its edge for a Gaussian posterior); widened while :data:`EDGE_DENSITY` is exceeded.
GRID_HALF_WIDTH = 8.0
#: MCMC is converged when the chain is longer than this many integrated autocorrelation times
#: and their estimate changed by less than 1% over the last check ([2]_, emcee's documentation:
#: "Saving & monitoring progress").
TAU_MULTIPLE = 50
#: Burn-in discarded from the chain, in integrated autocorrelation times: the walkers start from
#: the Laplace approximation, which is forgotten like e^(-t/τ).
BURN_TAUS = 5

_LN_2PI = math.log(2 * math.pi)


# --------------------------------------------------------------------------------------------
# Priors
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prior:
    """A one-dimensional prior: ``uniform`` (Eq. 6 of [1]), ``normal`` or ``lognormal``.

    Attributes
    ----------
    dist : str
        ``"uniform"``, ``"normal"`` or ``"lognormal"``.
    a, b : float
        uniform: low, high; normal: mean, std; lognormal: μ and s of ln θ ~ N(μ, s²).
    """

    dist: str
    a: float
    b: float

    @classmethod
    def uniform(cls, low: float, high: float) -> Prior:
        """Uniform density 1/(high − low) on [low, high] (Eq. 6 of [1])."""
        low, high = float(low), float(high)
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise UncertaintyError(
                f"prior: a uniform prior needs finite low < high, got low={low}, high={high}",
                "prior",
            )
        return cls("uniform", low, high)

    @classmethod
    def normal(cls, mean: float, std: float) -> Prior:
        """Gaussian N(mean, std²)."""
        mean, std = float(mean), float(std)
        if not (math.isfinite(mean) and math.isfinite(std) and std > 0):
            raise UncertaintyError(
                f"prior: a normal prior needs a finite mean and std > 0, got {mean}, {std}",
                "prior",
            )
        return cls("normal", mean, std)

    @classmethod
    def lognormal(cls, mean: float, std: float) -> Prior:
        """Lognormal with the given mean and standard deviation of θ itself (as scenes declare
        it): s² = ln(1 + (std/mean)²), μ = ln mean − s²/2."""
        mean, std = float(mean), float(std)
        if not (math.isfinite(mean) and math.isfinite(std) and mean > 0 and std > 0):
            raise UncertaintyError(
                f"prior: a lognormal prior needs mean > 0 and std > 0, got {mean}, {std}", "prior"
            )
        s2 = math.log1p((std / mean) ** 2)
        return cls("lognormal", math.log(mean) - s2 / 2, math.sqrt(s2))

    @property
    def low(self) -> float:
        return {"uniform": self.a, "normal": -math.inf, "lognormal": 0.0}[self.dist]

    @property
    def high(self) -> float:
        return self.b if self.dist == "uniform" else math.inf

    @property
    def mean(self) -> float:
        if self.dist == "uniform":
            return (self.a + self.b) / 2
        if self.dist == "normal":
            return self.a
        return math.exp(self.a + self.b**2 / 2)

    @property
    def std(self) -> float:
        if self.dist == "uniform":
            return (self.b - self.a) / math.sqrt(12)
        if self.dist == "normal":
            return self.b
        return self.mean * math.sqrt(math.expm1(self.b**2))

    def neg_log_pdf(self, x):
        """−ln p(x), +∞ outside the support; elementwise on arrays."""
        x = np.asarray(x, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.dist == "uniform":
                inside = (x >= self.a) & (x <= self.b)
                out = np.where(inside, math.log(self.b - self.a), np.inf)
            elif self.dist == "normal":
                out = 0.5 * ((x - self.a) / self.b) ** 2 + math.log(self.b) + 0.5 * _LN_2PI
            else:
                lx = np.log(np.where(x > 0, x, 1.0))
                out = np.where(
                    x > 0,
                    lx + 0.5 * ((lx - self.a) / self.b) ** 2 + math.log(self.b) + 0.5 * _LN_2PI,
                    np.inf,
                )
        return out if out.ndim else float(out)

    def derivatives(self, x: float) -> tuple[float, float]:
        """First and second derivatives of −ln p at ``x`` inside the support."""
        if self.dist == "uniform":
            return 0.0, 0.0
        if self.dist == "normal":
            return (x - self.a) / self.b**2, 1.0 / self.b**2
        # −ln p = ln x + (ln x − μ)²/(2s²) + const
        lx, s2 = math.log(x), self.b**2
        return (1 + (lx - self.a) / s2) / x, (1 - s2 - (lx - self.a)) / (s2 * x * x)

    def sample(self, rng: np.random.Generator, size=None):
        """Draws from the prior."""
        if self.dist == "uniform":
            return rng.uniform(self.a, self.b, size)
        if self.dist == "normal":
            return rng.normal(self.a, self.b, size)
        return np.exp(rng.normal(self.a, self.b, size))

    def to_dict(self) -> dict:
        if self.dist == "uniform":
            return {"dist": "uniform", "low": self.a, "high": self.b}
        return {"dist": self.dist, "mean": self.mean, "std": self.std}


def prior_from_spec(spec: Mapping, field_name: str = "prior") -> Prior:
    """Build a :class:`Prior` from ``{dist: uniform, low, high}``, ``{dist: normal, mean, std}``
    or ``{dist: lognormal, mean, std}`` (mean and std of the variable itself, as in scenes).

    Raises
    ------
    UncertaintyError
        Unknown distribution, missing or extra fields, or inadmissible values; the message
        starts with ``field_name``.
    """
    if not isinstance(spec, Mapping):
        raise UncertaintyError(
            f"{field_name}: expected a mapping like {{dist: uniform, low: 0, high: 1}}, got "
            f"{spec!r}",
            field_name,
        )
    fields = {"uniform": ("low", "high"), "normal": ("mean", "std"), "lognormal": ("mean", "std")}
    dist = spec.get("dist")
    if dist not in fields:
        raise UncertaintyError(
            f"{field_name}.dist: expected one of {', '.join(fields)}, got {dist!r}", field_name
        )
    want = fields[dist]
    extra = sorted(set(spec) - {"dist", *want})
    missing = [k for k in want if k not in spec]
    if extra or missing:
        raise UncertaintyError(
            f"{field_name}: a {dist} prior takes {', '.join(want)}"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unknown {', '.join(extra)}" if extra else ""),
            field_name,
        )
    values = []
    for k in want:
        v = spec[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise UncertaintyError(f"{field_name}.{k}: expected a number, got {v!r}", field_name)
        values.append(float(v))
    try:
        return getattr(Prior, dist)(*values)
    except UncertaintyError as exc:
        raise UncertaintyError(
            str(exc).replace("prior:", f"{field_name}:", 1), field_name
        ) from None


# --------------------------------------------------------------------------------------------
# Prediction-error covariance, Eq. (18)-(21)
# --------------------------------------------------------------------------------------------


def prediction_error_covariance(
    times: np.ndarray,
    z_hat: np.ndarray,
    sigma1: float,
    eta: float = 0.0,
    correlation_length: float = math.inf,
) -> np.ndarray:
    """Σ = Σ_meas + Σ_model with Σ_ij = σ1² δ_ij + σ2² ẑ_i ẑ_j R(|t_i − t_j|). Eq. (18)-(21).

    Σ_meas = σ1² I (independent measurement error), Σ_model,ij = σ2² ẑ_i ẑ_j R(δ_ij) with
    R(δ) = exp(−δ/λ) (Eq. 19-20) and σ2 = η σ1, so Σ = σ1² (I + η² ẑ ẑᵀ ∘ R). Eq. (21) of [1]
    prints σ1² without δ_ij, which would add σ1² to every off-diagonal entry and contradict the
    Σ_meas = σ1² I stated just before it; the Kronecker delta is meant.

    Parameters
    ----------
    times : ndarray, shape (N,)
        Measurement times t_k, s.
    z_hat : ndarray, shape (N,)
        Response scale ẑ_k: the data in inference, the nominal prediction z(t_k; θ0) in design.
    sigma1 : float
        Measurement-error standard deviation, > 0.
    eta : float
        σ2/σ1 ≥ 0, the size of the model error relative to the measurement error.
    correlation_length : float
        λ > 0, s; ``inf`` gives fully correlated model errors (R = 1), 0 independent ones.

    Returns
    -------
    ndarray, shape (N, N)
        Symmetric positive definite.
    """
    t = np.asarray(times, dtype=float).reshape(-1)
    z = np.asarray(z_hat, dtype=float).reshape(-1)
    if not sigma1 > 0:
        raise UncertaintyError(f"sigma: expected a positive number, got {sigma1}", "sigma")
    if not eta >= 0:
        raise UncertaintyError(f"eta: expected a number >= 0, got {eta}", "eta")
    if not correlation_length >= 0:
        raise UncertaintyError(
            f"correlation_length: expected a number >= 0, got {correlation_length}",
            "correlation_length",
        )
    delta = np.abs(t[:, None] - t[None, :])
    if correlation_length == 0:
        R = (delta == 0).astype(float)
    else:
        R = np.exp(-delta / correlation_length)  # Eq. (20) in [1]: R(δ) = exp(−δ/λ)
    # Eq. (21) in [1]: Σ_ij = σ1² (δ_ij + η² ẑ_i ẑ_j R(δ_ij))
    return sigma1**2 * (np.eye(t.size) + eta**2 * np.outer(z, z) * R)


# --------------------------------------------------------------------------------------------
# Posterior
# --------------------------------------------------------------------------------------------


class Posterior:
    """Minus the log posterior of θ (and σ) for Gaussian prediction errors, with derivatives.

    Parameters
    ----------
    model : Model or CachedModel
        θ -> z(θ), shape (N,); wrapped in a :class:`~uncertainty.model.CachedModel`.
    data : array_like, shape (N,)
        Measurements ŷ.
    priors : sequence of Prior, length n_θ
        One per model input, in input order.
    sigma : float, optional
        Fixed prediction-error standard deviation σ > 0. ``None`` makes σ the last parameter.
    sigma_prior : Prior, optional
        Prior of σ when inferred (required then); its support must lie in (0, ∞).
    correlation : ndarray, shape (N, N), optional
        Σ̃ with Σ = σ² Σ̃ (e.g. :func:`prediction_error_covariance` with σ1 = 1); default I.

    Attributes
    ----------
    names : tuple of str
        Parameter names: the model inputs, then ``"sigma"`` when inferred.
    lower, upper : ndarray, shape (n,)
        Prior support bounds.
    """

    def __init__(
        self,
        model: Model | CachedModel,
        data: np.ndarray,
        priors: Sequence[Prior],
        *,
        sigma: float | None = None,
        sigma_prior: Prior | None = None,
        correlation: np.ndarray | None = None,
    ):
        self.model = model if isinstance(model, CachedModel) else CachedModel(model)
        self.data = np.asarray(data, dtype=float).reshape(-1)
        self.n_data = self.data.size
        if self.model.n_outputs != self.n_data:
            raise UncertaintyError(
                f"data: {self.n_data} values for a model with {self.model.n_outputs} outputs",
                "data",
            )
        if not np.all(np.isfinite(self.data)):
            k = int(np.flatnonzero(~np.isfinite(self.data))[0])
            raise UncertaintyError(f"data: value {k} is not finite ({self.data[k]})", "data")
        self.priors = tuple(priors)
        self.n_theta = self.model.n_inputs
        if len(self.priors) != self.n_theta:
            raise UncertaintyError(
                f"priors: {len(self.priors)} priors for {self.n_theta} model inputs", "priors"
            )
        self.infer_sigma = sigma is None
        if self.infer_sigma:
            if sigma_prior is None:
                raise UncertaintyError("sigma: an inferred sigma needs a prior", "sigma")
            if sigma_prior.low < 0:
                raise UncertaintyError(
                    f"sigma.prior: the support must be in (0, inf), got low={sigma_prior.low}",
                    "sigma",
                )
            self.sigma = None
        else:
            if not (isinstance(sigma, (int, float)) and math.isfinite(sigma) and sigma > 0):
                raise UncertaintyError(f"sigma: expected a positive number, got {sigma}", "sigma")
            self.sigma = float(sigma)
        self.sigma_prior = sigma_prior if self.infer_sigma else None
        self.names = tuple(self.model.input_names) + (("sigma",) if self.infer_sigma else ())
        self.n = len(self.names)
        if self.n_data < self.n:
            raise UncertaintyError(
                f"data: {self.n_data} points for {self.n} parameters ({', '.join(self.names)}); "
                "need at least as many points as parameters",
                "data",
            )
        all_priors = self.priors + ((self.sigma_prior,) if self.infer_sigma else ())
        self._all_priors: tuple[Prior, ...] = all_priors  # type: ignore[assignment]
        self.lower = np.array([p.low for p in all_priors])
        self.upper = np.array([p.high for p in all_priors])
        if self.infer_sigma:
            self.lower[-1] = max(self.lower[-1], np.finfo(float).tiny)
        if correlation is None:
            self._chol = None
            self._logdet = 0.0
        else:
            C = np.asarray(correlation, dtype=float)
            if C.shape != (self.n_data, self.n_data):
                raise UncertaintyError(
                    f"correlation: expected shape ({self.n_data}, {self.n_data}), got {C.shape}",
                    "correlation",
                )
            try:
                self._chol = cholesky(C, lower=True)
            except np.linalg.LinAlgError:
                raise UncertaintyError(
                    "correlation: the error covariance is not positive definite", "correlation"
                ) from None
            self._logdet = 2.0 * float(np.sum(np.log(np.diag(self._chol))))

    # ------------------------------------------------------------------------------ helpers
    def split(self, p: np.ndarray) -> tuple[np.ndarray, float]:
        """(θ, σ) from a parameter vector, shape (n,)."""
        p = np.asarray(p, dtype=float).reshape(self.n)
        if self.infer_sigma:
            return p[:-1], float(p[-1])
        return p, float(self.sigma)  # type: ignore[arg-type]

    def typical(self) -> np.ndarray:
        """A scale per parameter, shape (n,): the prior standard deviation."""
        return np.array([p.std for p in self._all_priors])

    def in_support(self, p: np.ndarray) -> bool:
        p = np.asarray(p, dtype=float)
        return bool(np.all(p >= self.lower) and np.all(p <= self.upper))

    def _whiten(self, a: np.ndarray) -> np.ndarray:
        """L⁻¹ a with Σ̃ = L Lᵀ (identity when the errors are independent)."""
        if self._chol is None:
            return a
        return solve_triangular(self._chol, a, lower=True)

    def _prior_neg_log(self, p: np.ndarray) -> float:
        return float(sum(pr.neg_log_pdf(v) for pr, v in zip(self._all_priors, p, strict=True)))

    def misfit(self, theta: np.ndarray) -> float:
        """J̃(θ) = rᵀ Σ̃⁻¹ r, r = ŷ − z(θ) (Eq. 9 of [1] when Σ̃ = I); +∞ if z is not finite."""
        z = self.model.evaluate(np.asarray(theta, float))
        if not np.all(np.isfinite(z)):
            return math.inf
        w = self._whiten(self.data - z)
        return float(w @ w)

    # ------------------------------------------------------------------ L and its derivatives
    def neg_log_posterior(self, p: np.ndarray) -> float:
        """L(θ[, σ]) = J̃/(2σ²) + N ln σ + ½ ln det Σ̃ + (N/2) ln 2π − ln p(θ[, σ]).

        Eq. (10) of [1] (Appendix 1.2 for σ as a parameter, with the correlated Σ); +∞ outside
        the prior support or where the model output is not finite.
        """
        p = np.asarray(p, dtype=float).reshape(self.n)
        if not self.in_support(p):
            return math.inf
        theta, sigma = self.split(p)
        J = self.misfit(theta)
        if not math.isfinite(J):
            return math.inf
        N = self.n_data
        # Eq. (10) in [1]: L = J/(2σ²) + (N/2) ln σ² + const
        return (
            J / (2 * sigma**2)
            + N * math.log(sigma)
            + 0.5 * self._logdet
            + 0.5 * N * _LN_2PI
            + self._prior_neg_log(p)
        )

    def neg_log_posterior_many(self, P: np.ndarray) -> np.ndarray:
        """L at a batch of parameter vectors, shape (m, n) -> (m,); uses batch evaluation."""
        P = np.asarray(P, dtype=float).reshape(-1, self.n)
        out = np.full(P.shape[0], np.inf)
        ok = np.all((P >= self.lower) & (P <= self.upper), axis=1)
        if not np.any(ok):
            return out
        Q = P[ok]
        if self.infer_sigma:
            theta, sigma = Q[:, :-1], Q[:, -1]
        else:
            theta, sigma = Q, np.full(Q.shape[0], self.sigma)
        Z = self.model.evaluate_many(theta)
        R = self.data[None, :] - Z
        W = R if self._chol is None else solve_triangular(self._chol, R.T, lower=True).T
        with np.errstate(invalid="ignore", over="ignore"):
            J = np.sum(W * W, axis=1)
        J = np.where(np.all(np.isfinite(Z), axis=1), J, np.inf)
        prior = np.zeros(Q.shape[0])
        for j, pr in enumerate(self._all_priors):
            prior += pr.neg_log_pdf(Q[:, j])
        N = self.n_data
        out[ok] = (
            J / (2 * sigma**2) + N * np.log(sigma) + 0.5 * self._logdet + 0.5 * N * _LN_2PI + prior
        )
        return out

    def log_prob(self, p: np.ndarray) -> float:
        """ln p(θ[, σ] | D) up to the evidence: −L."""
        return -self.neg_log_posterior(p)

    def log_prob_many(self, P: np.ndarray) -> np.ndarray:
        """−L at a batch, shape (m, n) -> (m,)."""
        return -self.neg_log_posterior_many(P)

    def _pieces(self, p: np.ndarray, second: bool):
        theta, sigma = self.split(p)
        z = self.model.evaluate(theta)
        w = self._whiten(self.data - z)  # whitened residual
        Jz = self.model.jacobian(theta)  # (N, n_θ)
        Jw = self._whiten(Jz)
        H2 = self.model.hessian(theta) if second else None  # (N, n_θ, n_θ)
        return theta, sigma, w, Jw, H2

    def gradient(self, p: np.ndarray) -> np.ndarray:
        """∇L, shape (n,). Appendix 1.2 of [1]:
        ∂L/∂θ_i = (1/σ²) Σ_k (z_k − ŷ_k) ∂z_k/∂θ_i (whitened by Σ̃), ∂L/∂σ = −J/σ³ + N/σ."""
        p = np.asarray(p, dtype=float).reshape(self.n)
        theta, sigma, w, Jw, _ = self._pieces(p, second=False)
        g = np.empty(self.n)
        g[: self.n_theta] = -(Jw.T @ w) / sigma**2
        if self.infer_sigma:
            g[-1] = -float(w @ w) / sigma**3 + self.n_data / sigma
        for j, pr in enumerate(self._all_priors):
            g[j] += pr.derivatives(float(p[j]))[0]
        return g

    def hessian(self, p: np.ndarray, *, second_order: bool = True) -> np.ndarray:
        """Full Hessian of L, shape (n, n). Appendix 1.2 of [1]:

        ∂²L/∂θ_i∂θ_j = (1/σ²) Σ_k [∂z_k/∂θ_i ∂z_k/∂θ_j + (z_k − ŷ_k) ∂²z_k/∂θ_i∂θ_j],
        ∂²L/∂σ² = 3J/σ⁴ − N/σ², ∂²L/∂θ_i∂σ = −(2/σ³) Σ_k (z_k − ŷ_k) ∂z_k/∂θ_i,
        with Σ̃⁻¹ weighting when the errors are correlated. ``second_order=False`` drops the
        model's second derivatives (the Gauss-Newton approximation, [4]_ §10.3), which needs only
        the Jacobian.
        """
        p = np.asarray(p, dtype=float).reshape(self.n)
        theta, sigma, w, Jw, H2 = self._pieces(p, second=second_order)
        nt = self.n_theta
        H = np.zeros((self.n, self.n))
        H[:nt, :nt] = Jw.T @ Jw / sigma**2
        if second_order:
            # Σ̃⁻¹ r = L⁻ᵀ w multiplies the output Hessians
            v = w if self._chol is None else solve_triangular(self._chol, w, lower=True, trans="T")
            H[:nt, :nt] -= np.einsum("k,kij->ij", v, H2) / sigma**2
        if self.infer_sigma:
            J = float(w @ w)
            H[:nt, -1] = H[-1, :nt] = 2 * (Jw.T @ w) / sigma**3
            H[-1, -1] = 3 * J / sigma**4 - self.n_data / sigma**2
        for j, pr in enumerate(self._all_priors):
            H[j, j] += pr.derivatives(float(p[j]))[1]
        return 0.5 * (H + H.T)

    def hessian_accuracy(self) -> float:
        """Relative accuracy of :meth:`hessian`: analytic model derivatives, or central second
        differences with h = ε^(1/4), whose error is O(√ε) ([1] of :mod:`uncertainty.model`)."""
        if self.model.analytic_hessian and self.model.analytic_jacobian:
            return ANALYTIC_HESSIAN_ACCURACY
        return max(ANALYTIC_HESSIAN_ACCURACY, math.sqrt(self.model.noise))


# --------------------------------------------------------------------------------------------
# MAP
# --------------------------------------------------------------------------------------------


@dataclass
class MapResult:
    """Most probable value and how it was found.

    Attributes
    ----------
    names : tuple of str
    x : ndarray, shape (n,)
        The MAP estimate (θ̂[, σ̂]).
    value : float
        L at ``x``.
    gradient : ndarray, shape (n,)
        ∇L at ``x``.
    gradient_norm : float
        Euclidean norm of the gradient projected on the free (not at a bound) parameters.
    newton_decrement : float
        √(gᵀ H⁻¹ g) over the free parameters (NaN if H is not positive definite there, or
        singular to its accuracy: the optimum is then not a unique point).
    converged : bool
        ``newton_decrement < NEWTON_TOL`` (see :data:`NEWTON_TOL`).
    at_bound : tuple of str
        Parameters at a prior bound (the optimum is constrained; Laplace does not apply).
    message : str
    n_starts : int
    optima : list of (ndarray, float)
        Distinct local optima found from the starts, best first.
    evaluations : dict
        Model evaluation counts.
    """

    names: tuple[str, ...]
    x: np.ndarray
    value: float
    gradient: np.ndarray
    gradient_norm: float
    newton_decrement: float
    converged: bool
    at_bound: tuple[str, ...]
    message: str
    n_starts: int
    optima: list = field(default_factory=list)
    evaluations: dict = field(default_factory=dict)

    def as_dict(self) -> dict[str, float]:
        return dict(zip(self.names, map(float, self.x), strict=True))


def _free_mask(post: Posterior, x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Parameters not held at a bound by the gradient (a KKT-active bound is not free)."""
    at_low = (x <= post.lower) & (g > 0)
    at_high = (x >= post.upper) & (g < 0)
    return ~(at_low | at_high)


def _newton(post: Posterior, x: np.ndarray, max_iter: int) -> tuple[np.ndarray, str]:
    """Newton's method with Hessian modification and backtracking ([4]_ Alg. 3.2 and 3.3);
    Gauss-Newton when the model has no analytic second derivatives.

    The step solves (H + τ D²) s = −g over the free parameters, D = diag(1/typical) (the prior
    scales), with τ = 0 when H is positive definite and otherwise increased from 1e-3 until the
    Cholesky factorization succeeds; the step is backtracked (Armijo) and projected on the prior
    bounds. Points where L = +∞ (outside the support, or where the model has no finite output)
    are simply backtracked from, so no penalty value is needed.
    """
    f = post.neg_log_posterior(x)
    D = 1.0 / post.typical()
    # Without analytic second derivatives a finite-difference Hessian costs 2n² + 1 model runs;
    # the Gauss-Newton matrix needs only the Jacobian (2n runs) and converges fast when the
    # residual curvature is small. The final check (_stationarity) uses the full Hessian.
    full = post.model.analytic_hessian
    for _ in range(max_iter):
        g = post.gradient(x)
        free = _free_mask(post, x, g)
        if not np.any(free):
            return x, "every parameter at a bound"
        H = post.hessian(x, second_order=full)[np.ix_(free, free)]
        if not np.all(np.isfinite(H)) or not np.all(np.isfinite(g)):
            return x, "non-finite gradient or Hessian"
        d = D[free]
        A = H / np.outer(d, d)  # scaled Hessian, so that τ I is a scale-free modification
        diag_min = float(np.min(np.diag(A)))
        tau = 0.0 if diag_min > 0 else 1e-3 - diag_min
        while True:
            try:
                factor = cho_factor(A + tau * np.eye(A.shape[0]))
                break
            except np.linalg.LinAlgError:
                tau = max(2 * tau, 1e-3)
        step = np.zeros_like(x)
        step[free] = -cho_solve(factor, g[free] / d) / d
        decrement2 = float(-(g @ step))
        if decrement2 <= (NEWTON_TOL * 1e-3) ** 2 and tau == 0:  # far inside the tolerance
            return x, ""
        if decrement2 < PURE_NEWTON**2 and tau == 0:
            # Within 1e-3 posterior std of the optimum the predicted decrease δ²/2 < 5e-7 is
            # near the noise of L for simulated models, so an Armijo test would reject good
            # steps; take the full step (the pure Newton phase, [4] §3.3).
            trial = np.clip(x + step, post.lower, post.upper)
            ft = post.neg_log_posterior(trial)
            if math.isfinite(ft) and not np.array_equal(trial, x):
                x, f = trial, ft
                continue
        t = 1.0
        while t > 1e-12:
            trial = np.clip(x + t * step, post.lower, post.upper)
            ft = post.neg_log_posterior(trial)
            if ft <= f - 1e-4 * t * decrement2:  # Armijo condition ([4] §3.1)
                break
            t *= 0.5
        else:
            return x, ""  # no decrease left at machine precision
        if np.array_equal(trial, x):
            return x, ""
        x, f = trial, ft
    return x, f"Newton iterations stopped after {max_iter} iterations"


def _scaled_rcond(H: np.ndarray) -> float:
    """Smallest eigenvalue of D H D, D = diag(|H|)^-1/2: a scale-free measure of singularity
    (1 − |ρ| for two parameters; 0 if a diagonal entry vanishes)."""
    d = np.sqrt(np.abs(np.diag(H)))
    if np.any(d == 0):
        return 0.0
    return float(np.linalg.eigvalsh(H / np.outer(d, d))[0])


def _singularity_threshold(post: Posterior) -> float:
    """Scaled eigenvalues at or below this are zero to the Hessian's accuracy."""
    return 10**HESSIAN_DIGITS * post.hessian_accuracy()


def _stationarity(post: Posterior, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Gradient, free-parameter mask and Newton decrement √(gᵀH⁻¹g) over the free parameters
    (0 if none is free; NaN if H is not positive definite there or singular to its accuracy,
    i.e. the optimum is not a unique point)."""
    g = post.gradient(x)
    free = _free_mask(post, x, g)
    if not np.any(free):
        return g, free, 0.0
    H = post.hessian(x)[np.ix_(free, free)]
    if _scaled_rcond(H) <= _singularity_threshold(post):
        return g, free, math.nan
    try:
        factor = cho_factor(H)
    except np.linalg.LinAlgError:
        return g, free, math.nan
    return g, free, math.sqrt(max(0.0, float(g[free] @ cho_solve(factor, g[free]))))


def find_map(
    post: Posterior,
    starts: np.ndarray | Sequence[Sequence[float]],
    *,
    rng: np.random.Generator | None = None,
    n_random: int = 0,
    max_newton: int = 200,
) -> MapResult:
    """Most probable value: minimize L from several starts (Eq. 10 of [1]).

    Each start is minimized by Newton's method on the full Hessian with Hessian modification
    and backtracking within the prior bounds (:func:`_newton`); the lowest L wins. Convergence
    is judged by the Newton decrement (:data:`NEWTON_TOL`).

    Parameters
    ----------
    post : Posterior
    starts : array_like, shape (k, n)
        Starting points (moved inside the bounds if on or outside them).
    rng : numpy.random.Generator, optional
        Needed for ``n_random`` > 0.
    n_random : int
        Additional starts drawn from the prior.
    max_newton : int
        Cap on Newton iterations per start.
    """
    S = np.atleast_2d(np.asarray(starts, dtype=float))
    if S.shape[1] != post.n:
        raise UncertaintyError(
            f"starts: expected {post.n} values per start ({', '.join(post.names)}), "
            f"got {S.shape[1]}",
            "starts",
        )
    if n_random:
        if rng is None:
            raise UncertaintyError("starts: random starts need an rng", "starts")
        extra = np.column_stack([pr.sample(rng, n_random) for pr in post._all_priors])
        S = np.vstack([S, extra])
    lo, hi = post.lower, post.upper
    width = np.where(np.isfinite(hi - lo), hi - lo, 1.0)
    inner_lo, inner_hi = lo + 1e-9 * width, hi - 1e-9 * width  # starts strictly inside
    results = []
    for s in S:
        x0 = np.clip(s, inner_lo, inner_hi)
        if not math.isfinite(post.neg_log_posterior(x0)):
            continue
        x, note = _newton(post, x0, max_newton)
        results.append((post.neg_log_posterior(x), x, note))
    if not results:
        raise UncertaintyError(
            "starts: L is infinite at every start (outside the prior support, or the model "
            "has no finite output there); choose starts inside the priors",
            "starts",
        )
    results.sort(key=lambda r: r[0])
    value, x, note = results[0]
    g, free, decrement = _stationarity(post, x)
    converged = decrement < NEWTON_TOL
    scale = post.typical()
    optima: list[tuple[np.ndarray, float]] = []
    for v, xi, _ in results:  # distinct local optima: farther apart than 1e-4 prior scales
        if _stationarity(post, xi)[2] < NEWTON_TOL and all(
            np.max(np.abs(xi - xo) / scale) > 1e-4 for xo, _ in optima
        ):
            optima.append((xi, float(v)))
    at_bound = tuple(n for n, f in zip(post.names, free, strict=True) if not f)
    if not converged and not note and math.isnan(decrement):
        note = "Hessian singular or not positive definite at the optimum (not a unique minimum)"
    msg = note or ("converged" if converged else f"Newton decrement {decrement:.3g}")
    return MapResult(
        names=post.names,
        x=x,
        value=float(value),
        gradient=g,
        gradient_norm=float(np.linalg.norm(g[free])),
        newton_decrement=decrement,
        converged=bool(converged),
        at_bound=at_bound,
        message=msg,
        n_starts=len(S),
        optima=optima,
        evaluations=post.model.counts(),
    )


# --------------------------------------------------------------------------------------------
# Laplace
# --------------------------------------------------------------------------------------------


@dataclass
class LaplaceResult:
    """Gaussian (asymptotic) posterior N(θ̂, H⁻¹) at the MAP. Eq. (11)-(15) of [1].

    Attributes
    ----------
    names : tuple of str
    mean : ndarray, shape (n,)
        The MAP θ̂.
    hessian : ndarray, shape (n, n)
        H(θ̂), the Hessian of L.
    eigenvalues : ndarray, shape (n,)
        Of H, ascending (the posterior's principal curvatures).
    eigenvectors : ndarray, shape (n, n)
        Columns: the principal directions of the posterior.
    positive_definite : bool
    singular : bool
        H is singular to its accuracy (a parameter combination the data do not determine); the
        covariance is then not computed.
    covariance, std, corr : ndarray or None
        C = H⁻¹, shape (n, n); σ_i = √C_ii, shape (n,); ρ_ij = C_ij/(σ_i σ_j), shape (n, n).
    rcond : float
        Smallest eigenvalue of the scaled Hessian D H D, D = diag(H)^-1/2 (1 − |ρ| for n = 2).
    message : str
    """

    names: tuple[str, ...]
    mean: np.ndarray
    hessian: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    positive_definite: bool
    singular: bool
    covariance: np.ndarray | None
    std: np.ndarray | None
    corr: np.ndarray | None
    rcond: float
    message: str

    @property
    def available(self) -> bool:
        return self.covariance is not None

    def log_density(self, X: np.ndarray) -> np.ndarray:
        """Log of the Gaussian density of Eq. (14) at points X, shape (m, n) -> (m,)."""
        if self.covariance is None:
            raise UncertaintyError(f"laplace: not available ({self.message})", "laplace")
        X = np.asarray(X, float).reshape(-1, self.mean.size)
        d = X - self.mean
        sign, logdet = np.linalg.slogdet(self.hessian)
        # Eq. (14) in [1]: p = √det H / (2π)^(n/2) exp(−½ (θ − θ̂)ᵀ H (θ − θ̂))
        return (
            0.5 * logdet
            - 0.5 * self.mean.size * _LN_2PI
            - 0.5 * np.einsum("ki,ij,kj->k", d, self.hessian, d)
        )


def laplace(post: Posterior, x_map: np.ndarray) -> LaplaceResult:
    """Laplace approximation at ``x_map``: full Hessian, covariance H⁻¹, std, correlations and
    eigen-directions (Eq. 11, 14, 15 of [1]). A Hessian that is indefinite, or singular to
    within :data:`HESSIAN_DIGITS` digits of its accuracy, is reported and not inverted."""
    x = np.asarray(x_map, dtype=float).reshape(post.n)
    H = post.hessian(x)
    if not np.all(np.isfinite(H)):
        raise UncertaintyError("laplace: the Hessian at the MAP is not finite", "laplace")
    evals, evecs = np.linalg.eigh(H)
    rcond = _scaled_rcond(H)
    threshold = _singularity_threshold(post)
    pd = bool(evals[0] > 0 and rcond > 0)
    singular = bool(abs(rcond) <= threshold)
    cov = std = corr = None
    if singular:
        weak = evecs[:, 0]
        combo = " ".join(
            f"{'+' if c >= 0 else '-'}{abs(c):.3g}·{n}"
            for c, n in zip(weak, post.names, strict=True)
            if abs(c) > 1e-3
        )
        msg = (
            f"singular Hessian (scaled smallest eigenvalue {rcond:.3g} <= {threshold:.3g}): "
            f"the data do not determine the direction {combo.lstrip('+')}; not inverted"
        )
    elif not pd:
        msg = (
            f"Hessian not positive definite (smallest eigenvalue {evals[0]:.6g}): the point is "
            "not a minimum of L; not inverted"
        )
    else:
        cov = np.linalg.inv(H)
        cov = 0.5 * (cov + cov.T)
        std = np.sqrt(np.diag(cov))
        # Eq. (15) in [1]: ρ_ij = C_ij / (σ_i σ_j)
        corr = cov / np.outer(std, std)
        msg = "ok"
    return LaplaceResult(
        names=post.names,
        mean=x,
        hessian=H,
        eigenvalues=evals,
        eigenvectors=evecs,
        positive_definite=pd,
        singular=singular,
        covariance=cov,
        std=std,
        corr=corr,
        rcond=rcond,
        message=msg,
    )


# --------------------------------------------------------------------------------------------
# Exact posterior on a grid (1-2 parameters)
# --------------------------------------------------------------------------------------------


@dataclass
class GridPosterior:
    """The exact posterior of Eq. (8) of [1] tabulated on a grid of one or two parameters.

    Attributes
    ----------
    names : tuple of str
    axes : list of ndarray, each shape (n_i,)
    density : ndarray, shape (n_1,) or (n_1, n_2)
        Normalized posterior density (trapezoidal rule).
    marginals : list of ndarray, each shape (n_i,)
        Marginal densities p(θ_i | D), by integrating the others out.
    mean, std : ndarray, shape (n,)
    covariance : ndarray, shape (n, n)
    edge_density : float
        Largest density on an edge of the box that is not a prior bound, relative to the peak.
    evaluations : int
    """

    names: tuple[str, ...]
    axes: list
    density: np.ndarray
    marginals: list
    mean: np.ndarray
    std: np.ndarray
    covariance: np.ndarray
    edge_density: float
    evaluations: int


def _trapezoid_weights(x: np.ndarray) -> np.ndarray:
    w = np.zeros_like(x)
    dx = np.diff(x)
    w[:-1] += dx / 2
    w[1:] += dx / 2
    return w


def _edge_density(post: Posterior, ranges, density: np.ndarray) -> float:
    peak = float(np.max(density))
    if peak <= 0:
        return math.inf
    worst = 0.0
    D = density.reshape(density.shape + (1,) * (2 - density.ndim))
    for i, (lo, hi) in enumerate(ranges):
        for side, bound, value in ((0, post.lower[i], lo), (-1, post.upper[i], hi)):
            if value <= bound if side == 0 else value >= bound:
                continue  # the prior cuts the posterior here: no mass beyond this edge
            edge = D[side, :] if i == 0 else D[:, side]
            worst = max(worst, float(np.max(edge)) / peak)
    return worst


def grid_ranges(
    post: Posterior, x_map: np.ndarray, lap: LaplaceResult | None = None
) -> list[tuple[float, float]]:
    """First grid box: θ̂ ± :data:`GRID_HALF_WIDTH` Laplace standard deviations, clipped to the
    prior support; the prior support itself (or ±8 prior std) where Laplace is unavailable."""
    x = np.asarray(x_map, float)
    out = []
    for i, pr in enumerate(post._all_priors):
        if lap is not None and lap.std is not None:
            half = GRID_HALF_WIDTH * lap.std[i]
            lo, hi = x[i] - half, x[i] + half
        else:
            lo = pr.low if math.isfinite(pr.low) else pr.mean - GRID_HALF_WIDTH * pr.std
            hi = pr.high if math.isfinite(pr.high) else pr.mean + GRID_HALF_WIDTH * pr.std
        out.append((max(lo, post.lower[i]), min(hi, post.upper[i])))
    return out


def grid_posterior(
    post: Posterior,
    ranges: Sequence[tuple[float, float]],
    n_points: int = 401,
    *,
    widen: int = 8,
) -> GridPosterior:
    """Exact posterior (Eq. 8 of [1]) on an n_points (× n_points) grid, normalized by the
    trapezoidal rule, with marginals and moments.

    Boxes whose edges (other than prior bounds) carry more than :data:`EDGE_DENSITY` of the peak
    density are widened by a factor 2 about their centre, at most ``widen`` times.

    Parameters
    ----------
    post : Posterior
        With one or two parameters.
    ranges : sequence of (low, high)
        The first box, e.g. from :func:`grid_ranges`.
    n_points : int
        Points per axis (the trapezoidal rule converges spectrally for densities that vanish at
        the box edges; 401 resolves a Gaussian of the box's width/16 to better than 1e-10).
    """
    if post.n not in (1, 2):
        raise UncertaintyError(
            f"exact: the grid posterior is for 1 or 2 parameters, got {post.n}; use MCMC",
            "exact",
        )
    ranges = [(float(a), float(b)) for a, b in ranges]
    evaluations = 0
    for attempt in range(widen + 1):
        axes = [np.linspace(a, b, n_points) for a, b in ranges]
        mesh = np.meshgrid(*axes, indexing="ij")
        P = np.column_stack([m.ravel() for m in mesh])
        L = post.neg_log_posterior_many(P).reshape(mesh[0].shape)
        evaluations += P.shape[0]
        finite = np.isfinite(L)
        if not np.any(finite):
            raise UncertaintyError("exact: the posterior is zero on the whole grid", "exact")
        dens = np.where(finite, np.exp(-(L - np.min(L[finite]))), 0.0)
        edge = _edge_density(post, ranges, dens)
        if edge <= EDGE_DENSITY or attempt == widen:
            break
        new = []
        for i, (a, b) in enumerate(ranges):
            c, h = (a + b) / 2, (b - a)
            new.append((max(c - h, post.lower[i]), min(c + h, post.upper[i])))
        if new == ranges:
            break
        ranges = new
    weights = [_trapezoid_weights(ax) for ax in axes]
    if post.n == 1:
        Z = float(weights[0] @ dens)
        dens = dens / Z
        marginals = [dens]
    else:
        Z = float(weights[0] @ dens @ weights[1])
        dens = dens / Z
        marginals = [dens @ weights[1], weights[0] @ dens]
    mean = np.array([w @ (ax * m) for w, ax, m in zip(weights, axes, marginals, strict=True)])
    var = np.array(
        [
            w @ ((ax - mu) ** 2 * m)
            for w, ax, m, mu in zip(weights, axes, marginals, mean, strict=True)
        ]
    )
    cov = np.diag(var)
    if post.n == 2:
        d0, d1 = axes[0] - mean[0], axes[1] - mean[1]
        cov[0, 1] = cov[1, 0] = float((weights[0] * d0) @ dens @ (weights[1] * d1))
    return GridPosterior(
        names=post.names,
        axes=axes,
        density=dens,
        marginals=marginals,
        mean=mean,
        std=np.sqrt(var),
        covariance=cov,
        edge_density=edge,
        evaluations=evaluations,
    )


# --------------------------------------------------------------------------------------------
# MCMC (emcee)
# --------------------------------------------------------------------------------------------


@dataclass
class McmcResult:
    """Affine-invariant ensemble MCMC of the posterior (emcee, [2]).

    Attributes
    ----------
    names : tuple of str
    chain : ndarray, shape (n_steps, n_walkers, n)
        Every step, burn-in included.
    burn : int
        Steps discarded (:data:`BURN_TAUS` × the largest τ).
    mean, std : ndarray, shape (n,)
        Posterior moments from the kept steps of all walkers.
    tau : ndarray, shape (n,)
        Integrated autocorrelation time of each parameter, steps.
    n_eff : ndarray, shape (n,)
        Effective sample size, walkers × kept steps / τ.
    se_mean, se_std : ndarray, shape (n,)
        Monte Carlo standard errors of ``mean`` (std/√n_eff) and of ``std`` (from the
        autocorrelation of the squared deviations).
    acceptance : float
        Mean acceptance fraction.
    converged : bool
        The chain is longer than :data:`TAU_MULTIPLE` τ and τ is stable to 1%.
    seed : int
        Seed of emcee's internal generator (drawn from the caller's rng).
    message : str
    """

    names: tuple[str, ...]
    chain: np.ndarray
    burn: int
    mean: np.ndarray
    std: np.ndarray
    tau: np.ndarray
    n_eff: np.ndarray
    se_mean: np.ndarray
    se_std: np.ndarray
    acceptance: float
    converged: bool
    seed: int
    message: str

    @property
    def samples(self) -> np.ndarray:
        """Kept samples of all walkers, shape (m, n)."""
        return self.chain[self.burn :].reshape(-1, self.chain.shape[-1])


def sample_posterior(
    post: Posterior,
    start: np.ndarray,
    rng: np.random.Generator,
    *,
    covariance: np.ndarray | None = None,
    n_walkers: int = 32,
    max_steps: int = 20000,
    check_every: int = 500,
) -> McmcResult:
    """Sample the posterior with emcee's stretch move ([2], [3]) until converged.

    Walkers start at ``start`` plus Gaussian draws with ``covariance`` (the Laplace covariance
    is a good choice; default a ball of 1e-3 prior standard deviations), redrawn until inside
    the prior support. Every ``check_every`` steps the integrated autocorrelation times are
    estimated; the run stops when it is longer than :data:`TAU_MULTIPLE` τ and τ changed by less
    than 1%, or at ``max_steps``.

    Parameters
    ----------
    post : Posterior
    start : ndarray, shape (n,)
    rng : numpy.random.Generator
        Source of all randomness (initial walkers and emcee's generator seed): the same state
        gives bit-identical chains.
    """
    import emcee

    n = post.n
    x0 = np.asarray(start, float).reshape(n)
    n_walkers = max(int(n_walkers), 2 * n + 2)
    if n_walkers % 2:
        n_walkers += 1
    if covariance is None:
        covariance = np.diag((1e-3 * post.typical()) ** 2)
    chol = np.linalg.cholesky(np.asarray(covariance, float))
    p0 = np.empty((n_walkers, n))
    for k in range(n_walkers):
        for _ in range(1000):
            cand = x0 + chol @ rng.standard_normal(n)
            if math.isfinite(post.neg_log_posterior(cand)):
                break
        else:
            raise UncertaintyError(
                "mcmc: could not place a walker where the posterior is positive", "mcmc"
            )
        p0[k] = cand
    seed = int(rng.integers(2**32 - 1))
    batched = post.model.batched
    sampler = emcee.EnsembleSampler(
        n_walkers,
        n,
        post.log_prob_many if batched else post.log_prob,
        vectorize=batched,
    )
    sampler.random_state = np.random.RandomState(seed).get_state()  # noqa: NPY002 - emcee's API
    old_tau = np.full(n, np.inf)
    converged = False
    tau = old_tau
    state = p0
    steps = 0
    while steps < max_steps:
        chunk = min(check_every, max_steps - steps)
        state = sampler.run_mcmc(state, chunk, progress=False)
        steps += chunk
        tau = emcee.autocorr.integrated_time(sampler.get_chain(), tol=0, quiet=True)
        if np.all(TAU_MULTIPLE * tau < steps) and np.all(np.abs(old_tau - tau) < 0.01 * tau):
            converged = True
            break
        old_tau = tau
    chain = sampler.get_chain()
    burn = min(int(math.ceil(BURN_TAUS * float(np.max(tau)))), chain.shape[0] // 2)
    kept = chain[burn:]
    flat = kept.reshape(-1, n)
    mean = flat.mean(axis=0)
    std = flat.std(axis=0, ddof=1)
    n_eff = kept.shape[0] * n_walkers / tau
    se_mean = std / np.sqrt(n_eff)
    dev2 = (kept - mean) ** 2
    tau2 = emcee.autocorr.integrated_time(dev2, tol=0, quiet=True)
    n_eff2 = kept.shape[0] * n_walkers / tau2
    se_var = dev2.reshape(-1, n).std(axis=0, ddof=1) / np.sqrt(n_eff2)
    se_std = se_var / (2 * std)
    msg = (
        f"converged after {steps} steps (> {TAU_MULTIPLE} tau)"
        if converged
        else f"not converged: {steps} steps, tau = {np.array2string(tau, precision=1)}; "
        f"need > {TAU_MULTIPLE} tau"
    )
    return McmcResult(
        names=post.names,
        chain=chain,
        burn=burn,
        mean=mean,
        std=std,
        tau=tau,
        n_eff=n_eff,
        se_mean=se_mean,
        se_std=se_std,
        acceptance=float(np.mean(sampler.acceptance_fraction)),
        converged=converged,
        seed=seed,
        message=msg,
    )
