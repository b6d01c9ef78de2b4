"""The exact posterior of Eq. (8) of [1]_: tabulated on a grid (1-2 parameters) or sampled by MCMC.

:func:`grid_posterior` normalizes the posterior on a grid by the trapezoidal rule, with
marginals and moments; :func:`sample_posterior` runs affine-invariant ensemble MCMC (emcee,
[2]_), seeded, with integrated autocorrelation times as the convergence diagnostic ([2], [3]_).

References
----------
.. [1] Bayesian Inference for the Mechanical Model of a Falling Object (course project document,
       ../shared/papers/falling-object-bayesian-inference-and-design.md).
.. [2] D. Foreman-Mackey, D. W. Hogg, D. Lang, J. Goodman, emcee: The MCMC Hammer, PASP 125
       (2013) 306-312.
.. [3] J. Goodman, J. Weare, Ensemble samplers with affine invariance, Commun. Appl. Math. Comput.
       Sci. 5 (2010) 65-80.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from uncertainty.errors import UncertaintyError
from uncertainty.laplace_approximation import LaplaceResult
from uncertainty.posterior import Posterior

__all__ = [
    "EDGE_DENSITY",
    "GRID_HALF_WIDTH",
    "TAU_MULTIPLE",
    "BURN_TAUS",
    "GridPosterior",
    "grid_ranges",
    "grid_posterior",
    "McmcResult",
    "sample_posterior",
]

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
    for i, pr in enumerate(post.all_priors):
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
    progress=None,
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
    progress : callable, optional
        ``progress(steps, max_steps)`` after every ``check_every`` steps (the run may stop
        earlier, when it has converged).
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
        if progress is not None:
            progress(steps, max_steps)
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
