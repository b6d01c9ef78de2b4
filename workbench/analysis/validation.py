"""Validation of a stored model ensemble against experiments, streamed from HDF5.

Reads one observer component of a model ensemble (any store, :mod:`workbench.store`) block by
block and the experiments from stores (every completed realization of every file is one
experiment; a ``workbench run`` file holds one) or from a CSV file of time series, puts them on
one time grid and hands them to :func:`uncertainty.validation.streamed_reliability`. The model is
never loaded whole: memory is bounded by ``chunk_size`` realizations.

Conventions
-----------
- Model realizations that are not completed, or stopped early (``recorded < nt``), are left out
  and counted in :attr:`ValidationReport.n_excluded`.
- Experiments must be finite everywhere: a NaN is an error naming the file, series and time.
- Model and experiments must share the time grid (to :data:`workbench.store.schema.TIME_RTOL`
  of the time scale, as the store checks record times). With ``interpolate=True`` the model
  realizations are instead interpolated linearly onto the experiments' instants that lie inside
  the model's time span (measured values are never altered); instants outside it are dropped and
  the report says which window was validated.

CSV experiments: comma-separated, ``#`` starts a comment line, an optional header line; the first
column is time (s), each further column one experiment of the chosen observer component, e.g.::

    time,run1,run2,run3
    0.00,0.512,0.498,0.505
    0.01,0.511,0.497,0.503
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from uncertainty.errors import UncertaintyError
from uncertainty.validation import DEFAULT_CHUNK_SIZE, METRICS, streamed_reliability
from workbench.errors import ValidationInputError
from workbench.scene.fields import did_you_mean
from workbench.store import TrajectoryStore
from workbench.store.schema import same_times, time_tolerance

__all__ = [
    "ModelSource",
    "Experiments",
    "ValidationReport",
    "open_model",
    "read_experiments",
    "model_chunks",
    "validate_files",
]

#: Model realizations kept in :attr:`ValidationReport.model_sample` for figures.
SAMPLE_ROWS = 100

#: CLI option names of the threshold fields of :mod:`uncertainty.validation`.
_OPTION = {"lam": "--lambda", "epsilon": "--epsilon", "metric": "--metric"}


@dataclass(frozen=True)
class ModelSource:
    """Where the model realizations of one observer component live in a store.

    Attributes
    ----------
    path : Path
    observer : str
    component : int
        Column of the observer dataset.
    component_label : str
    unit : str
    time : ndarray, shape (nt,)
        Record times of the store, s.
    valid : ndarray of bool, shape (n_real,)
        Completed realizations with every record present.
    components : tuple of str
        All component labels of the observer.
    """

    path: Path
    observer: str
    component: int
    component_label: str
    unit: str
    time: np.ndarray
    valid: np.ndarray
    components: tuple[str, ...]

    @property
    def n_valid(self) -> int:
        return int(self.valid.sum())

    @property
    def n_excluded(self) -> int:
        return int(self.valid.size - self.valid.sum())


@dataclass(frozen=True)
class Experiments:
    """Experiments of one observer component on a common time grid.

    Attributes
    ----------
    time : ndarray, shape (n_t,)
        Instants, s.
    values : ndarray, shape (n_i, n_t)
        One row per experiment, finite.
    labels : tuple of str
        ``file`` or ``file[i]`` (ensemble realization i) or the CSV column name, per row.
    components : tuple of str or None
        Component labels of the observer in the experiment stores (None for CSV).
    """

    time: np.ndarray
    values: np.ndarray
    labels: tuple[str, ...]
    components: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ValidationReport:
    """Result of :func:`validate_files`: the metrics on the validated instants and provenance.

    Attributes
    ----------
    time : ndarray, shape (n_t,)
        Validated instants, s.
    metrics, per_experiment : dict of str to ndarray
        Curves, shape (n_t,), and per-experiment curves, shape (n_i, n_t), by metric name.
    model, observer, component, unit : str
    experiments : tuple of str
        Labels of the ``n_i`` experiments (rows of ``per_experiment``).
    n_model, n_excluded : int
        Model realizations used, and left out as incomplete.
    threshold : dict
        ``{"lambda": λ}`` or ``{"epsilon": ε, "unit": unit}``.
    interpolated : bool
        Whether the model was interpolated onto the experiments' instants.
    window : (float, float)
        First and last validated instant, s.
    experiment_values : ndarray, shape (n_i, n_t)
        The experiments on the validated instants.
    model_sample : ndarray, shape (m, n_t)
        The first ``m <= SAMPLE_ROWS`` model realizations used (for figures).
    """

    time: np.ndarray
    metrics: dict[str, np.ndarray]
    per_experiment: dict[str, np.ndarray]
    model: str
    observer: str
    component: str
    unit: str
    experiments: tuple[str, ...]
    n_model: int
    n_excluded: int
    threshold: dict
    interpolated: bool
    window: tuple[float, float]
    experiment_values: np.ndarray
    model_sample: np.ndarray

    def summary(self) -> dict[str, dict[str, float]]:
        """Per metric: value at the last instant, minimum and time average over the instants."""
        return {
            name: {
                "final": float(r[-1]),
                "min": float(r.min()),
                "mean": float(r.mean()),
            }
            for name, r in self.metrics.items()
        }

    def to_json(self) -> dict:
        """A JSON-serialisable dict with every array as a list."""
        return {
            "model": self.model,
            "experiments": list(self.experiments),
            "observer": self.observer,
            "component": self.component,
            "unit": self.unit,
            "n_model": self.n_model,
            "n_excluded": self.n_excluded,
            "n_experiments": len(self.experiments),
            "threshold": self.threshold,
            "interpolated": self.interpolated,
            "window": list(self.window),
            "summary": self.summary(),
            "time": self.time.tolist(),
            "metrics": {name: r.tolist() for name, r in self.metrics.items()},
            # rows in the order of "experiments"
            "per_experiment": {name: r.tolist() for name, r in self.per_experiment.items()},
        }


# ---------------------------------------------------------------------------------------- model
def _resolve_component(
    where: str, observer: str, components: Sequence[str], component: int | str | None
) -> int:
    labels = list(components)
    if component is None:
        if len(labels) == 1:
            return 0
        raise ValidationInputError(
            f"{where}: observer '{observer}' has {len(labels)} components "
            f"({', '.join(labels)}); choose one with --component"
        )
    if isinstance(component, str) and not component.lstrip("-").isdigit():
        if component not in labels:
            raise ValidationInputError(
                f"{where}: observer '{observer}' has no component '{component}'; it has "
                f"{', '.join(labels)}"
            )
        return labels.index(component)
    k = int(component)
    if not 0 <= k < len(labels):
        raise ValidationInputError(
            f"{where}: --component {k} out of range; observer '{observer}' has components "
            f"0..{len(labels) - 1} ({', '.join(labels)})"
        )
    return k


def _observer_info(store: TrajectoryStore, observer: str) -> dict:
    info = store.schema.observer_info
    if observer not in info:
        options = ", ".join(info) or "none"
        raise ValidationInputError(
            f"{store.path}: no observer '{observer}'{did_you_mean(observer, info)}; the file "
            f"has {options}"
        )
    return info[observer]


def open_model(path: str | os.PathLike, observer: str, component: int | str | None) -> ModelSource:
    """Locate the model realizations of ``observer`` (column ``component``) in a store.

    Raises
    ------
    ValidationInputError
        Unknown observer or component, or no complete realization.
    StoreError
        The file is missing or not a readable store.
    """
    with TrajectoryStore.open(path) as store:
        info = _observer_info(store, observer)
        k = _resolve_component(str(store.path), observer, info["components"], component)
        completed = store.completed
        nt = store.schema.n_times
        valid = completed & (store.recorded == nt)
        if not valid.any():
            raise ValidationInputError(
                f"{store.path}: no complete realization ({int(completed.sum())} of "
                f"{store.n_realizations} completed, none with all {nt} records)"
            )
        return ModelSource(
            path=Path(store.path),
            observer=observer,
            component=k,
            component_label=info["components"][k],
            unit=info["unit"],
            time=store.schema.time.copy(),
            valid=valid,
            components=tuple(info["components"]),
        )


def model_chunks(
    source: ModelSource,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    *,
    interp: tuple[np.ndarray, np.ndarray] | None = None,
) -> Iterator[np.ndarray]:
    """Blocks of at most ``chunk_size`` valid model realizations, shape (m, n_t).

    Parameters
    ----------
    source : ModelSource
    chunk_size : int
        Rows read from the dataset at once (the dataset holds one chunk per realization).
    interp : (ndarray, ndarray), optional
        ``(index, weight)``, each shape (n_t,): each output instant is
        ``(1 - w) Y[:, i] + w Y[:, i + 1]`` of the store's instants (linear interpolation).
    """
    with TrajectoryStore.open(source.path) as store:
        blocks = store.iter_rows(
            f"observers/{source.observer}",
            chunk_size,
            rows=source.valid,
            component=source.component,
        )
        for block in blocks:
            if interp is not None:
                i, w = interp
                nxt = np.minimum(i + 1, block.shape[1] - 1)
                block = (1.0 - w) * block[:, i] + w * block[:, nxt]
            yield block


# ---------------------------------------------------------------------------------- experiments
def _read_csv(path: Path) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationInputError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ValidationInputError(f"{path}: not a text (CSV) file") from None
    rows: list[tuple[int, list[str]]] = []
    for lineno, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        rows.append((lineno, [c.strip() for c in row]))
    if not rows:
        raise ValidationInputError(f"{path}: no data rows")
    header = None

    def is_number(s: str) -> bool:
        try:
            float(s)
        except ValueError:
            return False
        return True

    if not all(is_number(c) for c in rows[0][1] if c):
        header = rows[0][1]
        rows = rows[1:]
    if not rows:
        raise ValidationInputError(f"{path}: a header but no data rows")
    width = len(rows[0][1])
    if width < 2:
        raise ValidationInputError(
            f"{path}:{rows[0][0]}: expected a time column and at least one experiment column"
        )
    if header is not None and len(header) != width:
        raise ValidationInputError(
            f"{path}: header has {len(header)} columns, the data rows {width}"
        )
    data = np.empty((len(rows), width))
    for r, (lineno, row) in enumerate(rows):
        if len(row) != width:
            raise ValidationInputError(
                f"{path}:{lineno}: {len(row)} columns, expected {width} like the first data row"
            )
        for c, cell in enumerate(row):
            try:
                data[r, c] = float(cell) if cell else math.nan
            except ValueError:
                raise ValidationInputError(
                    f"{path}:{lineno}: column {c + 1}: expected a number, got {cell!r}"
                ) from None
    time = data[:, 0]
    if not np.all(np.isfinite(time)) or np.any(np.diff(time) <= 0.0):
        raise ValidationInputError(f"{path}: the time column must be finite and increasing")
    names = header[1:] if header is not None else [f"column {c + 1}" for c in range(1, width)]
    labels = tuple(f"{path.name}:{name}" for name in names)
    return time, data[:, 1:].T.copy(), labels


def _read_store_experiments(
    path: Path,
    observer: str,
    component: int | str | None,
    expected: tuple[str, ...] | None,
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...], tuple[str, ...]]:
    with TrajectoryStore.open(path) as store:
        info = _observer_info(store, observer)
        comps = tuple(info["components"])
        if expected is not None and comps != expected:
            raise ValidationInputError(
                f"{path}: shape mismatch: observer '{observer}' has {len(comps)} components "
                f"({', '.join(comps)}), expected {len(expected)} ({', '.join(expected)}) as in "
                "the model"
            )
        k = _resolve_component(str(path), observer, comps, component)
        completed = store.completed
        if not completed.any():
            raise ValidationInputError(f"{path}: no completed realization to use as experiment")
        values = store.read_array(f"observers/{observer}")[completed][:, :, k]
        idx = np.flatnonzero(completed)
        if store.n_realizations == 1:
            labels = (path.name,)
        else:
            labels = tuple(f"{path.name}[{i}]" for i in idx)
        return store.schema.time.copy(), values, labels, comps


def read_experiments(
    paths: Sequence[str | os.PathLike],
    observer: str,
    component: int | str | None,
    *,
    components: tuple[str, ...] | None = None,
) -> Experiments:
    """Experiments from stores and/or CSV files, on one time grid.

    Parameters
    ----------
    paths : sequence of path-like
        Stores (every completed realization is one experiment) or CSV files (``.csv``).
    observer : str
        Observer name in the stores (CSV files hold the chosen component already).
    component : int, str or None
        Column index or label; may be None for one-component observers.
    components : tuple of str, optional
        Component labels the observer must have in every store (the model's).

    Raises
    ------
    ValidationInputError
        Unknown observer/component, a NaN anywhere, files on different time grids, bad CSV.
    """
    if not paths:
        raise ValidationInputError("--experiments: no file given")
    times, blocks, labels = [], [], []
    for p in paths:
        path = Path(p)
        if path.suffix.lower() == ".csv":
            t, vals, labs = _read_csv(path)
        else:
            t, vals, labs, comps = _read_store_experiments(path, observer, component, components)
            components = comps
        bad = ~np.isfinite(vals)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise ValidationInputError(
                f"{path}: experiment {labs[r]} has {int(bad[r].sum())} NaN/inf values (first at "
                f"t = {t[c]:g} s); experiments must be finite"
            )
        if times and not _same_grid(times[0], t):
            raise ValidationInputError(
                f"{path}: time grid ({_grid(t)}) differs from {paths[0]} ({_grid(times[0])}); "
                "all experiments must share one time grid"
            )
        times.append(t)
        blocks.append(vals)
        labels.extend(labs)
    return Experiments(times[0], np.concatenate(blocks, axis=0), tuple(labels), components)


def _same_grid(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and same_times(a, b)


def _grid(t: np.ndarray) -> str:
    return f"{t.size} instants from {t[0]:g} to {t[-1]:g} s"


def _interpolation(model_time: np.ndarray, exp_time: np.ndarray):
    """Indices into the model grid and weights for the experiment instants inside its span."""
    tol = time_tolerance(model_time)
    inside = (exp_time >= model_time[0] - tol) & (exp_time <= model_time[-1] + tol)
    t = np.clip(exp_time[inside], model_time[0], model_time[-1])
    i = np.clip(np.searchsorted(model_time, t, side="right") - 1, 0, model_time.size - 1)
    nxt = np.minimum(i + 1, model_time.size - 1)
    span = model_time[nxt] - model_time[i]
    w = np.divide(t - model_time[i], span, out=np.zeros_like(t), where=span > 0)
    return inside, i, w


# --------------------------------------------------------------------------------------- driver
def validate_files(
    model: str | os.PathLike,
    experiments: Sequence[str | os.PathLike],
    observer: str,
    *,
    component: int | str | None = None,
    lam: float | None = None,
    epsilon: float | None = None,
    metrics: Sequence[str] = METRICS,
    interpolate: bool = False,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> ValidationReport:
    """Instantaneous, first-passage and accumulated reliability of a stored model ensemble.

    Parameters
    ----------
    model : path-like
        Store holding the model ensemble (``workbench ensemble``).
    experiments : sequence of path-like
        Stores (``workbench run`` files or ensembles) and/or CSV files, see the module docstring.
    observer : str
        Observer to compare.
    component : int, str or None
        Column index or label of the observer (None for one-component observers).
    lam, epsilon : float
        Relative (ε = λ |Y_D|, λ > 0) or absolute (ε >= 0, in the observer's unit) threshold;
        exactly one.
    metrics : sequence of str
        Subset of :data:`uncertainty.validation.METRICS`.
    interpolate : bool
        Interpolate the model onto the experiments' instants when the grids differ.
    chunk_size : int
        Model realizations read and processed at once (memory bound).

    Returns
    -------
    ValidationReport

    Raises
    ------
    ValidationInputError, StoreError
        Unusable files or options (one line, for the CLI).
    """
    if (lam is None) == (epsilon is None):
        raise ValidationInputError("give exactly one of --lambda and --epsilon")
    if lam is not None and not (math.isfinite(lam) and lam > 0.0):
        raise ValidationInputError(f"--lambda: expected a relative threshold > 0, got {lam:g}")
    if epsilon is not None and not (math.isfinite(epsilon) and epsilon >= 0.0):
        raise ValidationInputError(f"--epsilon: expected a threshold >= 0, got {epsilon:g}")
    if chunk_size < 1:
        raise ValidationInputError(f"--chunk-size: expected an integer >= 1, got {chunk_size}")
    source = open_model(model, observer, component)
    exps = read_experiments(experiments, observer, source.component, components=source.components)
    values = exps.values
    if _same_grid(source.time, exps.time):
        time, chunks_kw = source.time, {}
    elif not interpolate:
        raise ValidationInputError(
            f"{experiments[0]}: time grid ({_grid(exps.time)}) differs from the model's "
            f"({_grid(source.time)}); resample the data or pass --interpolate"
        )
    else:
        inside, i, w = _interpolation(source.time, exps.time)
        if not inside.any():
            raise ValidationInputError(
                f"{experiments[0]}: no experiment instant lies within the model's time span "
                f"[{source.time[0]:g}, {source.time[-1]:g}] s"
            )
        time, values = exps.time[inside], values[:, inside]
        chunks_kw = {"interp": (i, w)}
    threshold = {"lambda": lam} if lam is not None else {"epsilon": epsilon, "unit": source.unit}
    sample: list[np.ndarray] = []

    def chunks() -> Iterator[np.ndarray]:
        for block in model_chunks(source, chunk_size, **chunks_kw):
            if not sample:
                sample.append(block[:SAMPLE_ROWS].copy())
            yield block

    try:
        result = streamed_reliability(
            chunks(),
            values,
            lam=lam,
            epsilon=epsilon,
            metrics=tuple(metrics),
            chunk_size=chunk_size,
        )
    except UncertaintyError as exc:
        field_name = _OPTION.get(exc.field or "", exc.field or "")
        raise ValidationInputError(f"{model}: {field_name or 'validation'}: {exc}") from None
    names = tuple(metrics)
    return ValidationReport(
        time=np.asarray(time),
        metrics={name: result.metric(name) for name in names},
        per_experiment={name: result.per_experiment[0][name] for name in names},
        model=str(model),
        observer=observer,
        component=source.component_label,
        unit=source.unit,
        experiments=exps.labels,
        n_model=result.n_model[0],
        n_excluded=source.n_excluded,
        threshold=threshold,
        interpolated=bool(chunks_kw),
        window=(float(time[0]), float(time[-1])),
        experiment_values=values,
        model_sample=sample[0],
    )
