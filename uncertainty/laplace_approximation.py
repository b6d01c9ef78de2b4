"""The most probable value (MAP) and the Laplace (asymptotic) posterior N(θ̂, H⁻¹) there.

:func:`find_map` minimizes L of :class:`~uncertainty.posterior.Posterior` (Eq. 10 of [1]_) from
several starts by Newton's method on the full Hessian with Hessian modification and
backtracking within the prior bounds ([2]_); :func:`laplace` gives the Gaussian approximation of
Eq. (11)-(15) of [1] with standard deviations, correlations and the eigen-directions of H. A
singular or indefinite Hessian is reported, never inverted.

References
----------
.. [1] Bayesian Inference for the Mechanical Model of a Falling Object (course project document,
       ../shared/papers/falling-object-bayesian-inference-and-design.md).
.. [2] J. Nocedal, S. J. Wright, Numerical Optimization, 2nd ed., Springer (2006).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from uncertainty.errors import UncertaintyError
from uncertainty.posterior import Posterior

__all__ = [
    "NEWTON_TOL",
    "PURE_NEWTON",
    "HESSIAN_DIGITS",
    "MapResult",
    "find_map",
    "LaplaceResult",
    "laplace",
]

#: The MAP is converged when the Newton decrement δ = √(gᵀ H⁻¹ g) is below this: δ is the distance
#: to the optimum in units of the Laplace posterior's standard deviation along the step ([2]_
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

_LN_2PI = math.log(2 * math.pi)


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
    """Newton's method with Hessian modification and backtracking ([2]_ Alg. 3.2 and 3.3);
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
            # steps; take the full step (the pure Newton phase, [2] §3.3).
            trial = np.clip(x + step, post.lower, post.upper)
            ft = post.neg_log_posterior(trial)
            if math.isfinite(ft) and not np.array_equal(trial, x):
                x, f = trial, ft
                continue
        t = 1.0
        while t > 1e-12:
            trial = np.clip(x + t * step, post.lower, post.upper)
            ft = post.neg_log_posterior(trial)
            if ft <= f - 1e-4 * t * decrement2:  # Armijo condition ([2] §3.1)
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
        extra = np.column_stack([pr.sample(rng, n_random) for pr in post.all_priors])
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
