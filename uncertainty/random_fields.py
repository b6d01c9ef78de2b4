"""Random inputs for dynamics examples: Gaussian processes in time and lognormal variables.

A Gaussian process ``X(t)`` with mean ``μ(t)``, standard deviation ``σ(t)`` and a squared-
exponential autocorrelation ``ρ(t1, t2) = exp(-((t1 - t2) / ℓ)²)`` (Eq. 30-31 of [1], where
``ℓ = 1/8 s`` for the beam's point load and ``1/2 s`` for its distributed load) is sampled on a
time grid, either

- by a Karhunen-Loève expansion of the process restricted to the grid: the eigenpairs of the
  covariance matrix, truncated where the variance left out drops below a tolerance ([2], Sec. 2;
  on a uniform grid this is the Nyström discretisation of the continuous expansion), or
- by a Cholesky factor of the covariance matrix, with the smallest diagonal jitter that makes the
  factorisation succeed (squared-exponential covariance matrices on fine grids are numerically
  singular).

Either way the sampler states its error: :attr:`GaussianProcess.truncation_error` is the largest
relative variance error over the grid, ``max_t |Var_sampled[X(t)] - σ²(t)| / σ²(t)``. The
correlation is reproduced to the same absolute accuracy.

References
----------
.. [1] Y. Ao, Z. Hu, S. Mahadevan, Dynamics Model Validation Using Time-Domain Metrics,
       ASME J. Verif. Valid. Uncert. 2(1):011004 (2017).
.. [2] Z. Hu, S. Mahadevan, Time-Dependent System Reliability Analysis Using Random Field
       Discretization, ASME J. Mech. Des. 137(10):101404 (2015).
.. [3] N. L. Johnson, S. Kotz, N. Balakrishnan, Continuous Univariate Distributions, Vol. 1,
       2nd ed., Wiley (1994), ch. 14 (lognormal moments).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from uncertainty.errors import UncertaintyError

__all__ = [
    "GaussianProcess",
    "squared_exponential_correlation",
    "gaussian_process",
    "lognormal_parameters",
    "sample_lognormal",
]

#: Default tolerance on the relative variance left out by the KL truncation. 1e-4 keeps the
#: sampled standard deviation within 0.005 % of the target, far below the Monte Carlo error of
#: any ensemble this project draws (1e5 samples estimate a std to ~0.2 %).
DEFAULT_KL_TOL = 1e-4

#: First Cholesky jitter, relative to the largest variance; multiplied by 10 until the factor
#: exists. 1e-12 is a few thousand ulps of the diagonal: the smallest shift worth trying.
_FIRST_JITTER = 1e-12
_MAX_JITTER = 1e-2  # beyond this the "Gaussian process" would be mostly white noise


def squared_exponential_correlation(time: np.ndarray, correlation_length: float) -> np.ndarray:
    """Correlation matrix ``ρ(t_a, t_b) = exp(-((t_a - t_b) / ℓ)²)`` (Eq. 30-31 of [1]).

    Parameters
    ----------
    time : ndarray, shape (n_t,)
        Instants, s.
    correlation_length : float
        ℓ > 0, s. Eq. (30) of [1] has ``exp(-(8 Δt)²)``, i.e. ℓ = 1/8 s; Eq. (31) ℓ = 1/2 s.

    Returns
    -------
    ndarray, shape (n_t, n_t)
        Symmetric, unit diagonal.
    """
    t = _time(time)
    ell = _positive("correlation_length", correlation_length)
    dt = (t[:, None] - t[None, :]) / ell
    # Eq. (30)/(31) in [1]: ρ(t1, t2) = exp(-((t1 - t2)/ℓ)²)
    return np.exp(-(dt**2))


@dataclass(frozen=True)
class GaussianProcess:
    """A Gaussian process discretised on a time grid: ``X = mean + ξ @ basis``, ξ ~ N(0, I).

    Attributes
    ----------
    time : ndarray, shape (n_t,)
        Instants, s.
    mean : ndarray, shape (n_t,)
        Mean of the process at each instant.
    basis : ndarray, shape (n_terms, n_t)
        Rows are ``sqrt(λ_m) φ_m`` (KL) or the columns of the Cholesky factor; ``basis.T @
        basis`` approximates the covariance matrix.
    method : str
        ``"kl"`` or ``"cholesky"``.
    truncation_error : float
        ``max_t |(basis.T @ basis)_tt - σ²(t)| / σ²(t)``: the relative variance error of the
        sampler (KL: variance left out; Cholesky: the jitter added).
    """

    time: np.ndarray
    mean: np.ndarray
    basis: np.ndarray
    method: str
    truncation_error: float

    @property
    def n_terms(self) -> int:
        """Number of standard normal variables per sample path."""
        return int(self.basis.shape[0])

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Draw ``size`` sample paths.

        Parameters
        ----------
        rng : numpy.random.Generator
        size : int
            Number of paths.

        Returns
        -------
        ndarray, shape (size, n_t)
        """
        xi = rng.standard_normal((int(size), self.n_terms))
        return self.mean + xi @ self.basis


def gaussian_process(
    time: np.ndarray,
    mean,
    std,
    correlation_length: float,
    *,
    method: str = "kl",
    tol: float = DEFAULT_KL_TOL,
) -> GaussianProcess:
    """A sampler of a Gaussian process with squared-exponential autocorrelation.

    Parameters
    ----------
    time : ndarray, shape (n_t,)
        Instants, s (strictly increasing).
    mean : float or ndarray, shape (n_t,)
        Mean function μ(t).
    std : float or ndarray, shape (n_t,)
        Standard deviation σ(t) > 0.
    correlation_length : float
        ℓ of ``ρ = exp(-(Δt/ℓ)²)``, s.
    method : {"kl", "cholesky"}
        Truncated Karhunen-Loève expansion on the grid, or Cholesky factor with jitter.
    tol : float
        KL only: largest admitted relative variance error at any instant (0 < tol < 1); the
        fewest leading eigenpairs meeting it are kept.

    Returns
    -------
    GaussianProcess
        With its measured ``truncation_error`` (<= ``tol`` for KL).
    """
    t = _time(time)
    n_t = t.shape[0]
    mu = _per_instant("mean", mean, n_t)
    sigma = _per_instant("std", std, n_t)
    if np.any(sigma <= 0.0):
        raise UncertaintyError("std: a Gaussian process needs std > 0 at every instant", "std")
    if not 0.0 < tol < 1.0:
        raise UncertaintyError(f"tol: expected 0 < tol < 1, got {tol}", "tol")
    cov = squared_exponential_correlation(t, correlation_length) * np.outer(sigma, sigma)
    var = sigma**2
    if method == "kl":
        lam, phi = np.linalg.eigh(cov)
        lam, phi = lam[::-1], phi[:, ::-1]  # descending
        lam = np.clip(lam, 0.0, None)  # round-off makes the tail slightly negative
        # variance captured at each instant by the leading m terms: sum_{m' <= m} λ φ²(t)
        captured = np.cumsum(lam[:, None] * phi.T**2, axis=0)  # (n_t terms, n_t)
        err = np.max(np.abs(captured - var) / var, axis=1)
        ok = np.flatnonzero(err <= tol)
        m = int(ok[0]) + 1 if ok.size else n_t
        basis = np.sqrt(lam[:m])[:, None] * phi[:, :m].T
        # X(t) = μ(t) + Σ_m sqrt(λ_m) ξ_m φ_m(t)  (KL expansion, [2])
        return GaussianProcess(t, mu, basis, "kl", float(err[m - 1]))
    if method == "cholesky":
        scale = float(var.max())
        jitter = _FIRST_JITTER
        while True:
            try:
                L = np.linalg.cholesky(cov + jitter * scale * np.eye(n_t))
                break
            except np.linalg.LinAlgError:
                jitter *= 10.0
                if jitter > _MAX_JITTER:
                    raise UncertaintyError(
                        "method: the covariance matrix is too close to singular for a "
                        "Cholesky factor; use method='kl'",
                        "method",
                    ) from None
        realized = np.sum(L**2, axis=1)
        error = float(np.max(np.abs(realized - var) / var))
        return GaussianProcess(t, mu, np.ascontiguousarray(L.T), "cholesky", error)
    raise UncertaintyError(f"method: expected 'kl' or 'cholesky', got {method!r}", "method")


def lognormal_parameters(mean: float, std: float) -> tuple[float, float]:
    """Parameters (m, s) of ``log X ~ N(m, s²)`` for a lognormal X with the given mean and std.

    Parameters
    ----------
    mean : float
        E[X] > 0.
    std : float
        Standard deviation of X, > 0.

    Returns
    -------
    (float, float)
        ``s² = ln(1 + (std/mean)²)``, ``m = ln(mean) - s²/2`` ([3], ch. 14).
    """
    mean = _positive("mean", mean)
    std = _positive("std", std)
    s2 = math.log1p((std / mean) ** 2)
    return math.log(mean) - 0.5 * s2, math.sqrt(s2)


def sample_lognormal(
    rng: np.random.Generator, mean: float, std: float, size: int | tuple[int, ...]
) -> np.ndarray:
    """Lognormal draws with the given mean and standard deviation (of X, not of log X).

    Parameters
    ----------
    rng : numpy.random.Generator
    mean, std : float
        Moments of X, both > 0.
    size : int or tuple of int
        Output shape.

    Returns
    -------
    ndarray, shape ``size``
    """
    m, s = lognormal_parameters(mean, std)
    return rng.lognormal(m, s, size)


def _time(time) -> np.ndarray:
    t = np.asarray(time, dtype=np.float64)
    if t.ndim != 1 or t.size < 1 or not np.all(np.isfinite(t)):
        raise UncertaintyError("time: expected a finite 1-D array of instants", "time")
    if t.size > 1 and np.any(np.diff(t) <= 0.0):
        raise UncertaintyError("time: instants must be strictly increasing", "time")
    return t


def _per_instant(name: str, value, n_t: int) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(n_t, float(arr))
    if arr.shape != (n_t,) or not np.all(np.isfinite(arr)):
        raise UncertaintyError(
            f"{name}: expected a finite scalar or shape ({n_t},), got shape {arr.shape}", name
        )
    return arr


def _positive(name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UncertaintyError(f"{name}: expected a number, got {value!r}", name) from None
    if not math.isfinite(v) or v <= 0.0:
        raise UncertaintyError(f"{name}: expected a finite number > 0, got {value!r}", name)
    return v
