"""Time-domain validation metrics: instantaneous, first-passage and accumulated model reliability.

A dynamics model is compared with experiments at one or several validation sites. At site ``i``
the model gives ``M`` realizations ``Y_M`` (rows, one per draw of the random inputs) and the
experiments give ``n_i`` measured series ``Y_D``, all on one time grid of ``n_t`` instants. With
``d = Y_M - Y_D`` and a threshold ``ε(t)`` (absolute, or relative ``ε = λ |Y_D(t)|``, Eq. 2 and 33
of [1]) the metrics are

- instantaneous reliability ``r(t_q) = Pr{|d(t_q)| < ε(t_q)}`` (Eq. 3-9);
- first-passage reliability ``r(t) = Pr{|d(τ)| < ε(τ) for all τ ≤ t}``, computed through the
  running maximum ``max_{τ ≤ t} (|d(τ)| - ε(τ)) < 0`` (Eq. 10-21);
- accumulated reliability ``r(t) = Pr{d_a < 0}``, where ``d_a`` draws the instant uniformly from
  ``t_1 .. t_q`` (a mixture with equal weights, Eq. 22-28).

Every probability is a Monte Carlo frequency over the model realizations, averaged over the
experiments (total probability over the replicated experiments, Eq. 5). Variable names follow the
paper where that helps: ``M`` model realizations, ``n_i`` experiments, ``n_t`` instants, ``λ``
(``lam``) and ``ε`` (``epsilon``).

Several sites
-------------
With ``correlated=True`` the rows of the sites' model arrays are paired: row ``k`` of every site
comes from the same draw of the random inputs (the shared inputs ``X_a`` of [1]), and the joint
probability over sites is estimated by joint Monte Carlo (Eq. 8, 20, 27). For the accumulated
metric the instant of each site's ``d_a`` is drawn independently (``d_a`` of site ``i`` depends on
the random inputs and on its own mixture index), so Eq. 27 is ``E_k[prod_i (fraction of instants
of site i inside the threshold)]`` and reduces to Eq. 28 when the sites' inputs are independent.
With ``correlated=False`` the sites are taken as independent and the per-site reliabilities are
multiplied (Eq. 9, 21, 28). Pairing rows is an unbiased estimator either way; when the sites really
share inputs only the joint estimator is right.

Exactness
---------
Every metric is a ratio of two integers (counts of indicator events over realizations, experiments
and instants). Counts are accumulated exactly (int64, or Python integers where int64 could
overflow) and each value is formed by one correctly rounded division of Python integers, so the
result does not depend on how the model realizations are split into chunks, and equals any exact
evaluation of the paper's sums. The indicator ``|d| < ε`` (Eq. 4) is evaluated as ``|d| - ε < 0``
(Eq. 14, 25): for finite floats the rounded difference has the sign of the exact one, so the two
forms agree bit for bit.

Streaming
---------
:func:`streamed_reliability` takes any iterable of model chunks (e.g. rows read from an HDF5
dataset) and keeps only integer counts between chunks (:mod:`uncertainty.reliability_counts`):
memory is ``O(chunk_size · n_t)`` whatever ``M`` is. The in-memory functions run the same code
over row blocks of their input.

References
----------
.. [1] Y. Ao, Z. Hu, S. Mahadevan, Dynamics Model Validation Using Time-Domain Metrics,
       ASME J. Verif. Valid. Uncert. 2(1):011004 (2017).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from uncertainty.errors import UncertaintyError
from uncertainty.reliability_counts import METRICS, ReliabilityCounts

__all__ = [
    "METRICS",
    "DEFAULT_CHUNK_SIZE",
    "ValidationResult",
    "instantaneous_reliability",
    "first_passage_reliability",
    "accumulated_reliability",
    "validation_metrics",
    "streamed_reliability",
    "relative_threshold",
]

#: Model rows processed at once. Temporaries are a few float64 and boolean/small-integer arrays
#: of ``(chunk_size, n_t)`` per site: 4096 rows of 500 instants peak at 47 MB of numpy memory
#: (measured by benchmarks/validation.py, input block included).
DEFAULT_CHUNK_SIZE = 4096


@dataclass(frozen=True)
class ValidationResult:
    """The three time-domain reliabilities of a model against experiments.

    Attributes
    ----------
    instantaneous, first_passage, accumulated : ndarray, shape (n_t,), or None
        Reliability at each instant (Eq. 6/8/9), over ``[t_1, t_q]`` (Eq. 19/20/21) and
        accumulated over ``[t_1, t_q]`` (Eq. 26/27/28) of [1]; ``None`` when not requested.
    per_experiment : tuple of dict
        One dict per site, metric name -> ndarray, shape (n_i, n_t): the reliability given the
        ``j``-th experiment (Eq. 3, 12, 24 of [1]).
    n_model : tuple of int
        Model realizations used at each site (``M``).
    n_experiments : tuple of int
        Experiments at each site (``n_i``).
    correlated : bool
        Whether several sites were combined by joint Monte Carlo (always True for one site).
    """

    instantaneous: np.ndarray | None
    first_passage: np.ndarray | None
    accumulated: np.ndarray | None
    per_experiment: tuple[dict[str, np.ndarray], ...] = field(repr=False)
    n_model: tuple[int, ...]
    n_experiments: tuple[int, ...]
    correlated: bool

    def metric(self, name: str) -> np.ndarray:
        """The reliability curve of metric ``name`` (one of :data:`METRICS`), shape (n_t,)."""
        if name not in METRICS:
            raise UncertaintyError(
                f"metric: unknown metric {name!r}; expected one of {', '.join(METRICS)}", "metric"
            )
        value = getattr(self, name)
        if value is None:
            raise UncertaintyError(f"metric: {name} was not computed", "metric")
        return value


# --------------------------------------------------------------------------------- input checks
def _finite_2d(name: str, value, site: int | None) -> np.ndarray:
    where = name if site is None else f"{name}[{site}]"
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise UncertaintyError(f"{where}: expected an array of numbers", name) from None
    if arr.ndim != 2:
        raise UncertaintyError(
            f"{where}: expected a 2-D array (rows = realizations or experiments, columns = "
            f"instants), got shape {arr.shape}",
            name,
        )
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise UncertaintyError(f"{where}: empty array of shape {arr.shape}", name)
    bad = ~np.isfinite(arr)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise UncertaintyError(
            f"{where}: {int(bad.sum())} non-finite values (first at row {row}, instant {col}); "
            "NaN or inf cannot be compared with a threshold",
            name,
        )
    return arr


def relative_threshold(experiments: np.ndarray, lam: float) -> np.ndarray:
    """Threshold ``ε(t) = λ |Y_D(t)|`` of every experiment (Eq. 2 and 33 of [1]).

    Parameters
    ----------
    experiments : ndarray, shape (n_i, n_t)
        Measured series, in the unit of the observed quantity.
    lam : float
        Relative accuracy requirement λ > 0 (the paper uses 0.08 and 0.16).

    Returns
    -------
    ndarray, shape (n_i, n_t)
        ε for each experiment and instant, in the unit of the observed quantity.
    """
    lam = _positive_lambda(lam)
    # Eq. (33) in [1]: ε(t) = λ |Y_D(X, t)|
    return lam * np.abs(np.asarray(experiments, dtype=np.float64))


def _positive_lambda(lam) -> float:
    try:
        value = float(lam)
    except (TypeError, ValueError):
        raise UncertaintyError(f"lam: expected a number, got {lam!r}", "lam") from None
    if not math.isfinite(value) or value <= 0.0:
        raise UncertaintyError(
            f"lam: the relative threshold λ must be a finite number > 0, got {lam!r}", "lam"
        )
    return value


def _absolute_threshold(epsilon, n_t: int, site: int | None) -> np.ndarray:
    where = "epsilon" if site is None else f"epsilon[{site}]"
    try:
        eps = np.asarray(epsilon, dtype=np.float64)
    except (TypeError, ValueError):
        raise UncertaintyError(f"{where}: expected a number or an array", "epsilon") from None
    if eps.ndim == 0:
        eps = np.full(n_t, float(eps))
    if eps.shape != (n_t,):
        raise UncertaintyError(
            f"{where}: expected a scalar or shape ({n_t},) (one value per instant), got "
            f"shape {eps.shape}",
            "epsilon",
        )
    if not np.all(np.isfinite(eps)) or np.any(eps < 0.0):
        raise UncertaintyError(f"{where}: ε must be finite and >= 0", "epsilon")
    return eps


def _sites(model, experiments) -> tuple[list, list, bool]:
    """Split the inputs into per-site lists; the flag says whether several sites were given."""
    several_m = isinstance(model, (list, tuple))
    several_d = isinstance(experiments, (list, tuple))
    if several_m != several_d:
        raise UncertaintyError(
            "experiments: give one array each for model and experiments (one site), or "
            "lists of equal length (several sites)",
            "experiments",
        )
    if not several_m:
        return [model], [experiments], False
    if len(model) != len(experiments) or len(model) == 0:
        raise UncertaintyError(
            f"experiments: {len(model)} model arrays but {len(experiments)} experiment arrays; "
            "expected one of each per site (at least one site)",
            "experiments",
        )
    return list(model), list(experiments), True


def _thresholds(experiments: list[np.ndarray], epsilon, lam) -> list[np.ndarray]:
    """ε per site, shape (n_i, n_t), from exactly one of ``epsilon`` and ``lam``."""
    if (epsilon is None) == (lam is None):
        raise UncertaintyError(
            "epsilon: give exactly one of epsilon (absolute threshold) and lam (relative, "
            "ε = λ |Y_D|)",
            "epsilon",
        )
    if lam is not None:
        return [relative_threshold(yd, lam) for yd in experiments]
    n_sites = len(experiments)
    if isinstance(epsilon, (list, tuple)) and n_sites > 1:
        if len(epsilon) != n_sites:
            raise UncertaintyError(
                f"epsilon: {len(epsilon)} thresholds for {n_sites} sites", "epsilon"
            )
        per_site = list(epsilon)
    else:
        per_site = [epsilon] * n_sites
    out = []
    for i, (yd, eps) in enumerate(zip(experiments, per_site, strict=True)):
        e = _absolute_threshold(eps, yd.shape[1], i if n_sites > 1 else None)
        out.append(np.broadcast_to(e, yd.shape))
    return out


def _metric_names(metrics) -> tuple[str, ...]:
    if isinstance(metrics, str):
        metrics = (metrics,)
    names = tuple(metrics)
    for name in names:
        if name not in METRICS:
            raise UncertaintyError(
                f"metric: unknown metric {name!r}; expected one of {', '.join(METRICS)}", "metric"
            )
    if not names:
        raise UncertaintyError("metric: no metric requested", "metric")
    return names


def _chunk_size(chunk_size) -> int:
    try:
        size = int(chunk_size)
    except (TypeError, ValueError):
        raise UncertaintyError(f"chunk_size: expected an integer, got {chunk_size!r}") from None
    if size < 1 or size != chunk_size:
        raise UncertaintyError(f"chunk_size: expected an integer >= 1, got {chunk_size!r}")
    return size


# ------------------------------------------------------------------------------------ public API
def _prepare(experiments: list, epsilon, lam, several: bool):
    """Checked experiments and thresholds per site, and the common number of instants."""
    exps = [
        _finite_2d("experiments", yd, i if several else None) for i, yd in enumerate(experiments)
    ]
    n_t = exps[0].shape[1]
    for i, yd in enumerate(exps):
        if yd.shape[1] != n_t:
            raise UncertaintyError(
                f"experiments[{i}]: {yd.shape[1]} instants, site 0 has {n_t}; every site must "
                "use the same time grid",
                "experiments",
            )
    eps = _thresholds(exps, epsilon, lam)
    return exps, eps, n_t


def _check_chunk(chunk, n_t: int, site: int | None) -> np.ndarray:
    arr = _finite_2d("model", chunk, site)
    if arr.shape[1] != n_t:
        where = "model" if site is None else f"model[{site}]"
        raise UncertaintyError(
            f"{where}: {arr.shape[1]} instants per realization, the experiments have {n_t}; "
            "model and experiments must share the time grid",
            "model",
        )
    return arr


def _row_blocks(arr: np.ndarray, size: int) -> Iterator[np.ndarray]:
    for start in range(0, arr.shape[0], size):
        yield arr[start : start + size]


def streamed_reliability(
    chunks: Iterable,
    experiments,
    *,
    epsilon=None,
    lam: float | None = None,
    correlated: bool = True,
    metrics: Sequence[str] | str = METRICS,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> ValidationResult:
    """The time-domain reliabilities from model realizations that arrive in chunks.

    Only integer counts are kept between chunks, so a model ensemble of any size can be read
    block by block (e.g. from an HDF5 dataset) in ``O(chunk_size · n_t)`` memory. The result is
    bit-identical to :func:`validation_metrics` on the concatenated rows, for any chunking.

    Parameters
    ----------
    chunks : iterable
        Blocks of model realizations. One site: each item is an array, shape (m, n_t). Several
        sites: each item is a sequence of per-site arrays, shape (m_i, n_t); with
        ``correlated=True`` the ``m_i`` must be equal and row ``k`` of every site must come from
        the same draw of the random inputs.
    experiments : ndarray, shape (n_i, n_t), or list of them (one per site)
        Measured series, finite, on the model's time grid.
    epsilon : float or ndarray, shape (n_t,), or list of them (one per site), optional
        Absolute threshold ε(t) >= 0 in the unit of the data (Eq. 1 of [1]).
    lam : float, optional
        Relative threshold: ε(t) = λ |Y_D(t)| with λ > 0 (Eq. 2, 33). Give exactly one of
        ``epsilon`` and ``lam``.
    correlated : bool
        Several sites: joint Monte Carlo over paired rows (Eq. 8, 20, 27) if True, the
        independence product (Eq. 9, 21, 28) if False. Ignored for one site.
    metrics : str or sequence of str
        Which of :data:`METRICS` to compute (default all; the first-passage running maximum is
        skipped when not asked for).
    chunk_size : int
        Largest number of model rows processed at once; bigger incoming chunks are split.

    Returns
    -------
    ValidationResult

    Raises
    ------
    UncertaintyError
        Shapes that do not match, non-finite values, λ <= 0, ε < 0, both or neither of
        ``epsilon`` and ``lam``, an empty model, unequal row counts with ``correlated=True``.
    """
    names = _metric_names(metrics)
    size = _chunk_size(chunk_size)
    several = isinstance(experiments, (list, tuple))
    exp_list = list(experiments) if several else [experiments]
    if several and not exp_list:
        raise UncertaintyError("experiments: no sites given", "experiments")
    exps, eps, n_t = _prepare(exp_list, epsilon, lam, several)
    acc = ReliabilityCounts(exps, eps, bool(correlated), names)
    for item in chunks:
        if several:
            if not isinstance(item, (list, tuple)) or len(item) != len(exps):
                raise UncertaintyError(
                    f"model: each chunk must be a sequence of {len(exps)} arrays, one per site",
                    "model",
                )
            parts = [_check_chunk(c, n_t, i) for i, c in enumerate(item)]
        else:
            parts = [_check_chunk(item, n_t, None)]
        if acc.joint:
            for start in range(0, parts[0].shape[0], size):
                acc.add_joint([p[start : start + size] for p in parts])
        else:  # one site, or independent sites: each site's rows on their own
            for i, p in enumerate(parts):
                for block in _row_blocks(p, size):
                    acc.add_site(i, block)
    return ValidationResult(**acc.result())


def validation_metrics(
    model,
    experiments,
    *,
    epsilon=None,
    lam: float | None = None,
    correlated: bool = True,
    metrics: Sequence[str] | str = METRICS,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> ValidationResult:
    """Instantaneous, first-passage and accumulated reliability of in-memory model realizations.

    Implements Eq. (3)-(28) of [1] by Monte Carlo over the given realizations; see the module
    docstring for the several-site conventions.

    Parameters
    ----------
    model : ndarray, shape (M, n_t), or list of them (one per site)
        Model realizations Y_M, one row per draw of the random inputs.
    experiments : ndarray, shape (n_i, n_t), or list of them (one per site)
        Experiments Y_D on the same time grid.
    epsilon, lam, correlated, metrics, chunk_size
        As in :func:`streamed_reliability`. With ``correlated=False`` the sites may have
        different numbers of realizations.

    Returns
    -------
    ValidationResult
    """
    models, exps, several = _sites(model, experiments)
    if several:
        arrays = [_finite_2d("model", m, i) for i, m in enumerate(models)]
        if correlated:
            rows = {a.shape[0] for a in arrays}
            if len(rows) != 1:
                raise UncertaintyError(
                    "model: with correlated=True every site needs the same number of "
                    f"realizations (paired rows); got {sorted(rows)}",
                    "model",
                )
        chunks: Iterable = [arrays]
    else:
        chunks = [models[0]]
    return streamed_reliability(
        chunks,
        exps if several else exps[0],
        epsilon=epsilon,
        lam=lam,
        correlated=correlated,
        metrics=metrics,
        chunk_size=chunk_size,
    )


def _one_metric(name: str, model, experiments, epsilon, lam, correlated) -> np.ndarray:
    """The reliability curve of metric ``name`` alone (the others are not computed)."""
    return validation_metrics(
        model, experiments, epsilon=epsilon, lam=lam, correlated=correlated, metrics=name
    ).metric(name)


def instantaneous_reliability(
    model, experiments, *, epsilon=None, lam: float | None = None, correlated: bool = True
) -> np.ndarray:
    """Instantaneous reliability r(t_q) = Pr{|Y_M(t_q) - Y_D(t_q)| < ε(t_q)}.

    Implements Eq. (3)-(6) of [1] for one site, Eq. (8) (``correlated=True``) and Eq. (9)
    (``correlated=False``) for several.

    Parameters
    ----------
    model : ndarray, shape (M, n_t), or list of them (one per site)
    experiments : ndarray, shape (n_i, n_t), or list of them (one per site)
    epsilon : float or ndarray, shape (n_t,), optional
        Absolute threshold, in the unit of the data.
    lam : float, optional
        Relative threshold λ > 0: ε = λ |Y_D| (Eq. 2, 33).
    correlated : bool
        Joint Monte Carlo over paired rows (default) or the independence product.

    Returns
    -------
    ndarray, shape (n_t,)
        Reliability at each instant, in [0, 1].
    """
    return _one_metric("instantaneous", model, experiments, epsilon, lam, correlated)


def first_passage_reliability(
    model, experiments, *, epsilon=None, lam: float | None = None, correlated: bool = True
) -> np.ndarray:
    """First-passage reliability r(t) = Pr{|d(τ)| < ε(τ) for all τ in [t_1, t]}.

    Implements Eq. (10)-(19) of [1] through the running maximum of |d| - ε (Eq. 18) for one
    site, Eq. (20) (``correlated=True``) and Eq. (21) (``correlated=False``) for several.

    Parameters
    ----------
    model, experiments, epsilon, lam, correlated
        As in :func:`instantaneous_reliability`.

    Returns
    -------
    ndarray, shape (n_t,)
        r over ``[t_1, t_q]`` for every q; non-increasing, in [0, 1].
    """
    return _one_metric("first_passage", model, experiments, epsilon, lam, correlated)


def accumulated_reliability(
    model, experiments, *, epsilon=None, lam: float | None = None, correlated: bool = True
) -> np.ndarray:
    """Accumulated reliability: Pr{d_a < 0} with the instants of [t_1, t_q] weighted equally.

    Implements Eq. (22)-(26) of [1] for one site, Eq. (27) (``correlated=True``) and Eq. (28)
    (``correlated=False``) for several.

    Parameters
    ----------
    model, experiments, epsilon, lam, correlated
        As in :func:`instantaneous_reliability`.

    Returns
    -------
    ndarray, shape (n_t,)
        r over ``[t_1, t_q]`` for every q, in [0, 1]; for one site, the running mean over time
        of the instantaneous reliability.
    """
    return _one_metric("accumulated", model, experiments, epsilon, lam, correlated)
