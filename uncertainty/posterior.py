"""Minus the log posterior of model parameters under Gaussian prediction errors, with derivatives.

For data ŷ, shape (N,), and a model z(θ) with prediction error e = ŷ − z(θ) ~ N(0, Σ), Σ = σ² Σ̃
(Eq. 5 of [1]_), :class:`Posterior` gives L(θ, σ) = J̃/(2σ²) + N ln σ + ½ ln det Σ̃ + (N/2) ln 2π
− ln p(θ), J̃ = rᵀ Σ̃⁻¹ r, r = ŷ − z(θ) (Eq. 7-10 and Appendix 1.2 of [1]), its gradient and its
full Hessian from the model's first and second derivatives; :func:`prediction_error_covariance`
gives Σ = Σ_meas + Σ_model of Eq. (18)-(21).

References
----------
.. [1] Bayesian Inference for the Mechanical Model of a Falling Object (course project document,
       ../shared/papers/falling-object-bayesian-inference-and-design.md).
.. [2] J. Nocedal, S. J. Wright, Numerical Optimization, 2nd ed., Springer (2006).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.linalg import cholesky, solve_triangular

from uncertainty.errors import UncertaintyError
from uncertainty.model import CachedModel, Model
from uncertainty.prior import Prior

__all__ = ["ANALYTIC_HESSIAN_ACCURACY", "prediction_error_covariance", "Posterior"]

#: Relative accuracy of an analytic Hessian of L: a sum over N data of products of analytic
#: derivatives, each good to a few units of roundoff (1e-13 allows for N up to ~1e3 terms).
ANALYTIC_HESSIAN_ACCURACY = 1e-13

_LN_2PI = math.log(2 * math.pi)


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
    all_priors : tuple of Prior
        The prior of every parameter, in ``names`` order (σ's last when inferred).
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
        self.all_priors: tuple[Prior, ...] = all_priors  # type: ignore[assignment]
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
        return np.array([p.std for p in self.all_priors])

    def in_support(self, p: np.ndarray) -> bool:
        p = np.asarray(p, dtype=float)
        return bool(np.all(p >= self.lower) and np.all(p <= self.upper))

    def _whiten(self, a: np.ndarray) -> np.ndarray:
        """L⁻¹ a with Σ̃ = L Lᵀ (identity when the errors are independent)."""
        if self._chol is None:
            return a
        return solve_triangular(self._chol, a, lower=True)

    def _prior_neg_log(self, p: np.ndarray) -> float:
        return float(sum(pr.neg_log_pdf(v) for pr, v in zip(self.all_priors, p, strict=True)))

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
        for j, pr in enumerate(self.all_priors):
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
        for j, pr in enumerate(self.all_priors):
            g[j] += pr.derivatives(float(p[j]))[0]
        return g

    def hessian(self, p: np.ndarray, *, second_order: bool = True) -> np.ndarray:
        """Full Hessian of L, shape (n, n). Appendix 1.2 of [1]:

        ∂²L/∂θ_i∂θ_j = (1/σ²) Σ_k [∂z_k/∂θ_i ∂z_k/∂θ_j + (z_k − ŷ_k) ∂²z_k/∂θ_i∂θ_j],
        ∂²L/∂σ² = 3J/σ⁴ − N/σ², ∂²L/∂θ_i∂σ = −(2/σ³) Σ_k (z_k − ŷ_k) ∂z_k/∂θ_i,
        with Σ̃⁻¹ weighting when the errors are correlated. ``second_order=False`` drops the
        model's second derivatives (the Gauss-Newton approximation, [2]_ §10.3), which needs only
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
        for j, pr in enumerate(self.all_priors):
            H[j, j] += pr.derivatives(float(p[j]))[1]
        return 0.5 * (H + H.T)

    def hessian_accuracy(self) -> float:
        """Relative accuracy of :meth:`hessian`: analytic model derivatives, or central second
        differences with h = ε^(1/4), whose error is O(√ε) ([1] of :mod:`uncertainty.model`)."""
        if self.model.analytic_hessian and self.model.analytic_jacobian:
            return ANALYTIC_HESSIAN_ACCURACY
        return max(ANALYTIC_HESSIAN_ACCURACY, math.sqrt(self.model.noise))
