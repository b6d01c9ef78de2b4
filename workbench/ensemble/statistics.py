"""Statistics of ensemble responses (pure numpy): mean, confidence region, convergence.

Estimators, following Batou & Soize (2012) §4.3 [1]:

- mean response: the sample mean over realizations at each time (failed realizations, whose
  records are NaN, are left out);
- confidence region at probability P_c: at each time t and component, the band between the
  empirical quantiles of order (1 − P_c)/2 and (1 + P_c)/2 of the realizations (numpy's default
  "linear" interpolation, Hyndman & Fan type 7); the paper draws these "upper and lower envelopes"
  with P_c = 0.90. It is a pointwise band: at each time it holds the response with probability
  P_c, not the whole curve;
- mean-square convergence: conv(n) = ( (1/n) Σ_{j=1..n} ∫ ‖y_j(t)‖² dt )^{1/2}, with the time
  integral by the trapezoid rule; a flat curve says n realizations are enough.

References
----------
.. [1] A. Batou, C. Soize, Rigid multibody system dynamics with uncertain rigid bodies,
       Multibody System Dynamics 27 (2012) 285-319.
"""

from __future__ import annotations

import numpy as np

__all__ = ["mean_response", "confidence_band", "mean_square_convergence", "summarize_samples"]


def _valid(Y: np.ndarray) -> np.ndarray:
    """Realizations whose records are all finite, shape (m, nt, k)."""
    Y = np.asarray(Y, dtype=float)
    if Y.ndim == 2:
        Y = Y[..., None]
    keep = np.all(np.isfinite(Y), axis=tuple(range(1, Y.ndim)))
    return Y[keep]


def mean_response(Y: np.ndarray) -> np.ndarray:
    """Sample mean over realizations.

    Parameters
    ----------
    Y : ndarray, shape (n_real, nt, k)
        Responses; realizations with non-finite records are ignored.

    Returns
    -------
    ndarray, shape (nt, k)
    """
    V = _valid(Y)
    if V.shape[0] == 0:
        raise ValueError("no realization has finite records")
    return V.mean(axis=0)


def confidence_band(Y: np.ndarray, p_c: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise confidence region of probability ``p_c`` (see the module docstring).

    Returns
    -------
    lower, upper : ndarray, shape (nt, k)
    """
    if not 0.0 < p_c < 1.0:
        raise ValueError(f"the probability level must be in (0, 1), got {p_c}")
    V = _valid(Y)
    if V.shape[0] == 0:
        raise ValueError("no realization has finite records")
    lo, hi = np.quantile(V, [(1.0 - p_c) / 2.0, (1.0 + p_c) / 2.0], axis=0)
    return lo, hi


def mean_square_convergence(Y: np.ndarray, time: np.ndarray) -> np.ndarray:
    """conv(n) for n = 1 … m valid realizations, shape (m,), in the response's units × √s."""
    V = _valid(Y)
    energy = np.trapezoid(np.sum(V**2, axis=2), x=np.asarray(time, dtype=float), axis=1)
    return np.sqrt(np.cumsum(energy) / np.arange(1, V.shape[0] + 1))


def summarize_samples(x: np.ndarray) -> dict:
    """Mean, standard deviation, coefficient of variation, min and max of samples, shape (n,)
    (finite values only)."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"n": 0}
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if x.size > 1 else 0.0
    return {
        "n": int(x.size),
        "mean": mean,
        "std": std,
        "cv": std / abs(mean) if mean != 0 else float("nan"),
        "min": float(x.min()),
        "max": float(x.max()),
    }
