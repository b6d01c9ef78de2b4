"""Two-sample comparisons: total-variation distance on binned statistics with a noise floor, and
a classifier two-sample test with cross-validated accuracy.

Are two samples of runs drawn from one law? Two measures, both relative to what sampling noise
alone gives:

* :func:`total_variation` between the empirical distributions of one scalar statistic, binned
  with :func:`reference_bins` — bins cut at quantiles of the *reference* samples only, so that
  the cut points do not depend on the sample under test (an outlier at 1e60 falls in the open
  bin above the references' range instead of stretching every bin). :func:`distance_with_floor`
  compares a sample with a reference and, with the same bins, a second reference sample with
  the first: the second distance is the *noise floor*, what two samples of the same law and
  size give.
* :func:`classifier_accuracy`, the classifier two-sample test of Lopez-Paz & Oquab [1]_: train a
  classifier to tell the two samples apart from per-run features and report its accuracy on
  held-out runs (stratified ``k``-fold cross-validation). Accuracy 0.5 is chance (the laws are
  alike as far as the classifier can see); 1 is a perfect separation. The classifier is an
  L2-regularised logistic regression on the standardised features and their squares (so that a
  difference in spread, not only in location, separates), fitted by Newton's method.

Pure numpy and scipy; randomness (the folds) comes in as a ``numpy.random.Generator``.

References
----------
.. [1] Lopez-Paz & Oquab, Revisiting Classifier Two-Sample Tests, ICLR 2017.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as _stats

__all__ = [
    "DEFAULT_BINS",
    "RIDGE",
    "FOLDS",
    "reference_bins",
    "binned_frequencies",
    "total_variation",
    "Distance",
    "distance_with_floor",
    "ClassifierTest",
    "classifier_accuracy",
    "fit_logistic",
]

#: Bins of a binned total-variation distance inside the references' range (two open bins beyond
#: it are added). With ``B`` equally filled bins the expected distance between two samples of
#: ``n`` runs of one law is about ``sqrt(B / (π n))`` (each bin's difference of frequencies is
#: ≈ normal with variance ``2 p (1 − p) / n``, ``p = 1/B``): 0.13 for 10 bins and 200 runs.
#: Fewer bins see less of the shape; more raise the floor.
DEFAULT_BINS = 10

#: L2 penalty of the logistic regression, on standardised features (per unit of the mean
#: log-likelihood of one run): enough to keep the weights finite when the samples separate
#: perfectly, small against the curvature of the likelihood at chance (1/4 per run).
RIDGE = 1e-2

#: Folds of the cross-validation (Lopez-Paz & Oquab [1]_ hold out one part; k folds use every run
#: once as a test run, which halves the variance of the accuracy at these sample sizes).
FOLDS = 5

#: Newton iterations of the logistic fit: the penalised log-likelihood is strongly concave and
#: Newton's method converges quadratically; the step stops earlier when the gradient's largest
#: component is below :data:`_GRADIENT_TOLERANCE`.
_NEWTON_ITERATIONS = 50
_GRADIENT_TOLERANCE = 1e-10


# ----------------------------------------------------------------------------- total variation
def _finite(x) -> np.ndarray:
    x = np.asarray(x, dtype=float).ravel()
    return x[~np.isnan(x)]


def reference_bins(*references, bins: int = DEFAULT_BINS) -> np.ndarray:
    """Cut points of ``bins`` bins at equal quantiles of the pooled reference samples, plus two
    open bins for values below and above everything the references hold.

    Parameters
    ----------
    *references : array_like
        The reference samples (NaNs ignored; ±inf allowed).
    bins : int
        Number of bins inside the references' range. Tied values (a discrete statistic) merge
        cut points, so there may be fewer.

    Returns
    -------
    ndarray, shape (m,)
        Increasing cut points; values ``x`` fall in bin ``searchsorted(cuts, x, 'right')``. The
        first cut is the references' minimum and the last lies just above their maximum, so a
        sample entirely outside the references' range is at distance 1 from them (it shares no
        bin), as disjoint samples should be.
    """
    if bins < 1:
        raise ValueError(f"bins: expected at least 1, got {bins}")
    pooled = np.concatenate([_finite(r) for r in references]) if references else np.zeros(0)
    if pooled.size == 0:
        return np.zeros(0)
    levels = np.arange(1, bins) / bins
    inner = np.quantile(pooled, levels, method="inverted_cdf")
    lo, hi = float(np.min(pooled)), float(np.max(pooled))
    return np.unique(np.concatenate([[lo], inner, [np.nextafter(hi, np.inf)]]))


def _bin_counts(x: np.ndarray, cuts) -> np.ndarray:
    idx = np.searchsorted(np.asarray(cuts, dtype=float), x, side="right")
    return np.bincount(idx, minlength=len(cuts) + 1)


def binned_frequencies(x, cuts) -> np.ndarray:
    """Frequencies of ``x`` (NaNs dropped) in the bins of :func:`reference_bins` ``cuts``."""
    x = _finite(x)
    if x.size == 0:
        raise ValueError("binned_frequencies needs a non-empty sample")
    return _bin_counts(x, cuts) / x.size


def total_variation(a, b, cuts=None) -> float:
    """Total-variation distance ``½ Σ_x |p_a(x) − p_b(x)|`` between two empirical distributions.

    Parameters
    ----------
    a, b : array_like
        Samples (NaNs dropped).
    cuts : array_like, optional
        Bin cut points (:func:`reference_bins`); ``None`` compares the distinct values
        themselves (discrete samples).

    Returns
    -------
    float
        In [0, 1]: 0 for equal empirical distributions, 1 for disjoint supports (or bins). It
        is formed from integer counts, ``Σ |c_a n_b − c_b n_a| / (2 n_a n_b)``, with one
        rounding: identical and disjoint samples give exactly 0 and 1.
    """
    a, b = _finite(a), _finite(b)
    if a.size == 0 or b.size == 0:
        raise ValueError("total_variation needs two non-empty samples")
    if cuts is None:
        values = np.union1d(a, b)
        ca = np.bincount(np.searchsorted(values, a), minlength=values.size)
        cb = np.bincount(np.searchsorted(values, b), minlength=values.size)
    else:
        ca, cb = _bin_counts(a, cuts), _bin_counts(b, cuts)
    na, nb = int(a.size), int(b.size)
    diff = sum(abs(int(x) * nb - int(y) * na) for x, y in zip(ca, cb, strict=True))
    return diff / (2 * na * nb)


@dataclass(frozen=True)
class Distance:
    """A distance between a sample and a reference, with its noise floor.

    Attributes
    ----------
    distance : float
        Total variation, reference vs the sample under test.
    floor : float
        Total variation, reference vs a second reference sample, with the same bins.
    bins : int
        Bins actually used.
    """

    distance: float
    floor: float
    bins: int

    @property
    def ratio(self) -> float:
        """``distance / floor`` (inf when the floor is 0 and the distance is not; nan if both)."""
        if self.floor > 0:
            return self.distance / self.floor
        return np.inf if self.distance > 0 else np.nan


def distance_with_floor(reference, reference2, sample, *, bins: int = DEFAULT_BINS, cuts=None):
    """:class:`Distance` of ``sample`` from ``reference`` and of ``reference2`` from it.

    The bins are cut at quantiles of both reference samples pooled (:func:`reference_bins`) unless
    ``cuts`` are given; the same bins serve both distances. NaN when a sample is empty.
    """
    if cuts is None:
        cuts = reference_bins(reference, reference2, bins=bins)
    cuts = np.asarray(cuts, dtype=float)

    def tv(a, b) -> float:
        if _finite(a).size == 0 or _finite(b).size == 0:
            return float("nan")
        return total_variation(a, b, cuts)

    return Distance(tv(reference, sample), tv(reference, reference2), len(cuts) + 1)


# ----------------------------------------------------------------------------- classifier
def fit_logistic(X: np.ndarray, y: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """Weights ``(b, w)`` of the L2-penalised logistic regression ``P(y=1|x) = σ(b + w·x)``.

    Maximises ``mean_i log σ(±(b + w·x_i)) − ½ ridge |w|²`` (the intercept is not penalised) by
    Newton's method.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Features (standardise them first: the penalty is isotropic).
    y : ndarray, shape (n,)
        Labels 0/1.
    ridge : float
        Penalty, > 0.

    Returns
    -------
    ndarray, shape (d + 1,)
        Intercept, then the weights.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n, d = X.shape
    A = np.hstack([np.ones((n, 1)), X])
    penalty = np.full(d + 1, float(ridge))
    penalty[0] = 0.0
    beta = np.zeros(d + 1)
    for _ in range(_NEWTON_ITERATIONS):
        p = _sigmoid(A @ beta)
        grad = A.T @ (y - p) / n - penalty * beta
        if np.max(np.abs(grad)) < _GRADIENT_TOLERANCE:
            break
        W = p * (1.0 - p)
        H = (A * W[:, None]).T @ A / n + np.diag(penalty)
        # the intercept's row has no penalty; a tiny diagonal keeps H invertible when all p ∈ {0,1}
        H[0, 0] += 1e-12
        beta = beta + np.linalg.solve(H, grad)
    return beta


def _sigmoid(z: np.ndarray) -> np.ndarray:
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    e = np.exp(z[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def _design(X: np.ndarray, mean: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Standardised features and their squares (a quadratic decision boundary)."""
    Z = (X - mean) / scale
    return np.hstack([Z, Z**2 - 1.0])


@dataclass(frozen=True)
class ClassifierTest:
    """Outcome of :func:`classifier_accuracy`.

    Attributes
    ----------
    accuracy : float
        Held-out accuracy over all runs (each run tested once), in [0, 1]; 0.5 is chance.
    n : int
        Runs tested (both samples).
    p_value : float
        One-sided binomial p-value of the accuracy under the null hypothesis that the samples
        have one law (held-out predictions then are right with probability ½; [1]_ §3).
    folds : int
    """

    accuracy: float
    n: int
    p_value: float
    folds: int


def classifier_accuracy(
    X, Y, rng: np.random.Generator, *, folds: int = FOLDS, ridge: float = RIDGE
) -> ClassifierTest:
    """Cross-validated accuracy of telling the rows of ``X`` from those of ``Y`` ([1]_).

    Parameters
    ----------
    X, Y : array_like, shape (n_x, d), (n_y, d)
        Per-run features of the two samples (finite).
    rng : numpy.random.Generator
        Draws the folds (stratified: each fold holds its share of both samples).
    folds : int
        ``k`` of the k-fold cross-validation (≥ 2; at most the smaller sample's size).
    ridge : float
        L2 penalty (:func:`fit_logistic`).

    Returns
    -------
    ClassifierTest
    """
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[1]:
        raise ValueError("X and Y must be 2-D arrays with the same number of columns")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(Y))):
        raise ValueError("features must be finite (transform heavy tails, e.g. log1p, first)")
    if not 2 <= folds <= min(len(X), len(Y)):
        raise ValueError(f"folds: expected 2 ≤ k ≤ {min(len(X), len(Y))}, got {folds}")
    data = np.vstack([X, Y])
    label = np.concatenate([np.zeros(len(X)), np.ones(len(Y))])
    fold = np.empty(len(data), dtype=np.int64)
    for cls in (0, 1):
        members = np.flatnonzero(label == cls)
        fold[rng.permutation(members)] = np.arange(members.size) % folds
    right = 0
    for k in range(folds):
        test, train = fold == k, fold != k
        mean = data[train].mean(axis=0)
        scale = data[train].std(axis=0)
        scale[scale == 0] = 1.0  # a constant feature carries nothing; keep it at 0
        beta = fit_logistic(_design(data[train], mean, scale), label[train], ridge)
        z = beta[0] + _design(data[test], mean, scale) @ beta[1:]
        right += int(np.sum((z > 0) == (label[test] == 1)))
    n = len(data)
    p = float(_stats.binom.sf(right - 1, n, 0.5))
    return ClassifierTest(right / n, n, p, folds)
