"""Sequential Monte Carlo pieces: a time-indexed law of scalar features given by quantiles, its
log-density with soft tails, effective sample size and systematic resampling.

Used by the reverse runs' particle filter (:mod:`reverse.smc`): particles are weighted by the
forward likelihood of their state at each reverse time — the "twisted" potentials
``G_g = φ_g(x_g) / φ_{g−1}(x_{g−1})`` of a guided particle filter, whose product telescopes to the
last potential ``φ_G(x_G)`` (Del Moral 2004 [1]_ §2.4; Doucet & Johansen 2011 [2]_ §4.1, §3.5
for the resampling scheme and the ESS rule) — and resampled when the effective sample size
falls below a share of the particles.

Pure numpy; randomness comes in as uniforms or a ``numpy.random.Generator``.

References
----------
.. [1] Del Moral, Feynman–Kac Formulae: Genealogical and Interacting Particle Systems with
   Applications, Springer 2004.
.. [2] Doucet & Johansen, A Tutorial on Particle Filtering and Smoothing: Fifteen Years Later,
   in The Oxford Handbook of Nonlinear Filtering, 2011.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "QUANTILE_LEVELS",
    "TAIL_SHARE",
    "MIN_TAIL",
    "QuantileLaw",
    "histogram_log_ratio",
    "effective_sample_size",
    "normalised_weights",
    "systematic_resample",
]

#: Probability levels at which a law's quantiles are stored (every 5%, as the goal speeds of
#: :mod:`reverse.markov`).
QUANTILE_LEVELS = np.linspace(0.0, 1.0, 21)

#: Width of the exponential tails beyond the stored range, as a share of the range between the
#: 5% and 95% quantiles: a value one such width beyond the largest quantile is e times less
#: likely than at it. Soft tails keep an order among particles that are all outside the forward
#: range (the first generations of backward runs often are), where a hard zero would not.
TAIL_SHARE = 0.1

#: Smallest tail width, in the feature's own (transformed) unit: where the forward values at a
#: time are nearly one point (a body at rest, energy ≈ 0) ``TAIL_SHARE`` of their range would make
#: a state 0.01 J/kg above them e^10 times less likely; with ``log1p`` features 0.05 is a 5%
#: change of ``1 + value``.
MIN_TAIL = 0.05


@dataclass(frozen=True)
class QuantileLaw:
    """A law of one scalar feature per time bin, given by its quantiles.

    Attributes
    ----------
    bin_width : float
        Width of the time bins (s); bin ``b`` covers ``[b w, (b + 1) w)``; times past the last
        bin use the last one.
    quantiles : ndarray, shape (n_bins, len(QUANTILE_LEVELS))
        Non-decreasing quantiles of the feature per bin (the feature already transformed, e.g.
        ``log1p``); NaN rows: no data in that bin (the nearest earlier bin with data is used).
    """

    bin_width: float
    quantiles: np.ndarray

    def __post_init__(self) -> None:
        q = np.asarray(self.quantiles, dtype=float)
        if q.ndim != 2 or q.shape[1] != len(QUANTILE_LEVELS):
            raise ValueError(f"quantiles must have shape (n_bins, {len(QUANTILE_LEVELS)})")
        if not (math.isfinite(self.bin_width) and self.bin_width > 0):
            raise ValueError("bin_width must be a positive number")
        object.__setattr__(self, "quantiles", q)

    @classmethod
    def fit(cls, times, values, bin_width: float, n_bins: int) -> QuantileLaw:
        """Quantiles of ``values`` per time bin (``times`` and ``values`` of equal shape)."""
        t = np.asarray(times, dtype=float).ravel()
        v = np.asarray(values, dtype=float).ravel()
        b = np.minimum((t / bin_width).astype(np.int64), n_bins - 1)
        q = np.full((n_bins, len(QUANTILE_LEVELS)), np.nan)
        for k in range(n_bins):
            sel = v[b == k]
            if sel.size:
                q[k] = np.quantile(sel, QUANTILE_LEVELS)
        return cls(float(bin_width), q)

    def row(self, time: float) -> np.ndarray:
        """The quantiles of the bin of ``time`` (s), or of the nearest earlier bin with data."""
        k = min(max(int(time / self.bin_width), 0), len(self.quantiles) - 1)
        while k > 0 and np.isnan(self.quantiles[k, 0]):
            k -= 1
        return self.quantiles[k]

    def log_density(self, time: float, x) -> np.ndarray:
        """Log-density of the feature ``x`` (any shape) at ``time``.

        Inside the stored range: the density of the piecewise-linear CDF through the quantiles,
        ``Δp / Δq`` on each interval (intervals narrower than 1e-9 of the range are widened to it,
        so that a point mass has a large but finite density). Beyond it: that edge density times
        ``exp(−d / s)``, ``d`` the distance beyond the range and ``s`` = :data:`TAIL_SHARE` ×
        (95% − 5% quantile range).
        """
        q = self.row(time)
        x = np.asarray(x, dtype=float)
        if np.isnan(q[0]):
            return np.zeros_like(x)
        # the 5%-95% range; the whole range if that is a point; 1e-12 if all is one point
        span = q[-2] - q[1] if q[-2] > q[1] else max(q[-1] - q[0], 1e-12)
        # width floor: 1e-9 of the range keeps a repeated quantile (a point mass) finite
        dq = np.maximum(np.diff(q), 1e-9 * span)
        dens = np.diff(QUANTILE_LEVELS) / dq
        k = np.clip(np.searchsorted(q, x, side="right") - 1, 0, len(dq) - 1)
        out = np.log(dens[k])
        scale = max(TAIL_SHARE * span, MIN_TAIL)
        below, above = x < q[0], x > q[-1]
        out = np.where(below, np.log(dens[0]) - (q[0] - x) / scale, out)
        out = np.where(above, np.log(dens[-1]) - (x - q[-1]) / scale, out)
        return np.where(np.isnan(x), -np.inf, out)

    def to_doc(self, digits: int = 9) -> dict:
        """JSON-ready: bin width and rounded quantile rows (``None`` for empty bins)."""
        rows = [
            None if np.isnan(r[0]) else [round(float(x), digits) for x in r] for r in self.quantiles
        ]
        return {"bin_width": float(self.bin_width), "quantiles": rows}

    @classmethod
    def from_doc(cls, doc: dict) -> QuantileLaw:
        """Inverse of :meth:`to_doc`; ``ValueError`` naming what is wrong."""
        try:
            width = float(doc["bin_width"])
            rows = [
                [np.nan] * len(QUANTILE_LEVELS) if r is None else [float(x) for x in r]
                for r in doc["quantiles"]
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"expected bin_width and quantiles rows ({exc})") from None
        q = np.array(rows, dtype=float)
        good = q.ndim == 2 and q.shape[1] == len(QUANTILE_LEVELS)
        if not good or np.any(np.diff(q[~np.isnan(q[:, 0])], axis=1) < 0):
            raise ValueError(
                f"quantiles: expected rows of {len(QUANTILE_LEVELS)} non-decreasing numbers"
            )
        return cls(width, q)


def histogram_log_ratio(reference, values, n_reference: float) -> np.ndarray:
    """Log of ``p_ref(x) / p_sample(x)`` per value, on bins cut at the reference's quantiles.

    The weights that make a sample's histogram match a reference law's: resampling ``values``
    with ``exp`` of them moves the sample's frequency in each bin to the reference's (the
    importance weight of a density ratio, [2]_ §2, estimated on bins).

    Bins: the distinct values ``u_0 < … < u_m`` of the reference quantiles ``q`` cut the line
    into ``x ≤ u_0``, ``u_{k−1} < x ≤ u_k`` and ``x > u_m``; the reference's probability of a bin
    is the difference of the largest levels at which ``q`` reaches its ends (a repeated quantile
    — an atom, such as the energy 0 of a body at rest — is one bin with all its mass). Both
    frequencies get half a count per bin (Jeffreys), the reference's with ``n_reference``
    counts, so no bin has probability 0. Beyond the reference's range the ratio also falls as
    ``exp(−d / s)`` (:meth:`QuantileLaw.log_density`'s tails), so that values far out stay
    ordered.

    Parameters
    ----------
    reference : ndarray, shape (len(QUANTILE_LEVELS),)
        Non-decreasing quantiles of the reference law (all NaN: no reference, ratio 1).
    values : ndarray, shape (n,)
        The sample (NaN: ratio 0).
    n_reference : float
        Effective size of the reference sample.
    """
    q = np.asarray(reference, dtype=float)
    x = np.asarray(values, dtype=float)
    if np.isnan(q[0]) or x.size == 0:
        return np.zeros(x.shape)
    edges = np.unique(q)
    cdf = np.array([QUANTILE_LEVELS[q == u].max() for u in edges])
    p_ref = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
    n_bins = p_ref.size
    k = np.searchsorted(edges, np.nan_to_num(x, nan=np.inf), side="left")
    counts = np.bincount(k, minlength=n_bins)
    p_ref = (p_ref * n_reference + 0.5) / (n_reference + 0.5 * n_bins)
    p_smp = (counts + 0.5) / (x.size + 0.5 * n_bins)
    out = np.log(p_ref[k]) - np.log(p_smp[k])
    span = q[-2] - q[1] if q[-2] > q[1] else max(q[-1] - q[0], 1e-12)
    scale = max(TAIL_SHARE * span, MIN_TAIL)
    out -= np.maximum(x - q[-1], 0.0) / scale + np.maximum(q[0] - x, 0.0) / scale
    return np.where(np.isnan(x), -np.inf, out)


def normalised_weights(log_w) -> np.ndarray:
    """Weights summing to 1 from log-weights (``−inf`` allowed; all ``−inf``: uniform)."""
    lw = np.asarray(log_w, dtype=float)
    if not np.any(np.isfinite(lw)):
        return np.full(lw.shape, 1.0 / lw.size)
    w = np.exp(lw - np.max(lw[np.isfinite(lw)]))
    w[~np.isfinite(lw)] = 0.0
    return w / w.sum()


def effective_sample_size(log_w) -> float:
    """``1 / Σ w_i²`` of the normalised weights ([2]_ §3.5): N for equal weights, 1 for one."""
    w = normalised_weights(log_w)
    return float(1.0 / np.sum(w * w))


def systematic_resample(weights, u: float) -> np.ndarray:
    """Systematic resampling ([2]_ §3.4): indices of ``n`` offspring, offspring ``k`` of the
    particle whose cumulative weight first passes ``(k + u) / n``; ``u`` uniform in [0, 1).

    Returns
    -------
    ndarray of int64, shape (n,)
        Non-decreasing parent indices.
    """
    w = np.asarray(weights, dtype=float)
    n = w.size
    if not 0.0 <= u < 1.0:
        raise ValueError("u must be in [0, 1)")
    c = np.cumsum(w)
    c /= c[-1]
    return np.minimum(np.searchsorted(c, (np.arange(n) + u) / n, side="right"), n - 1).astype(
        np.int64
    )
