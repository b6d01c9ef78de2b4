"""``workbench.validate``: time-domain validation metrics of a stored model ensemble against
experiments (instantaneous, first-passage and accumulated reliability; Ao, Hu & Mahadevan 2017),
streamed from the files; the task of ``workbench validate``. Its file is the JSON of ``-o``.

References
----------
.. [1] Ao, Hu & Mahadevan, Dynamics model validation using time-domain metrics, J. Verif. Valid.
   Uncert. Quantif. 2017.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workbench.tasks.result import FileResult

__all__ = ["validate", "ValidateResult"]

#: The metrics ``metric="all"`` computes.
ALL_METRICS = ("instantaneous", "first_passage", "accumulated")


@dataclass
class ValidateResult(FileResult):
    """The validation metrics.

    Attributes
    ----------
    report : ValidationReport
        ``time`` (nt,) s, ``metrics`` (name -> (nt,) reliability), ``per_experiment``,
        ``summary()``, threshold, counts (:mod:`workbench.analysis.validation`).
    """

    report: Any

    @property
    def time(self):
        return self.report.time

    @property
    def metrics(self) -> dict:
        return self.report.metrics

    @property
    def text(self) -> str:
        return json.dumps(self.report.to_json(), indent=1) + "\n"

    def threshold_text(self, symbol: str = "eps") -> str:
        """``"eps = 0.05 m"`` or ``"eps = 0.08 |experiment|"``: the threshold the metrics used."""
        rep = self.report
        if "lambda" in rep.threshold:
            return f"{symbol} = {rep.threshold['lambda']:g} |experiment|"
        unit = f" {rep.unit}" if rep.unit else ""
        return f"{symbol} = {rep.threshold['epsilon']:g}{unit}"

    def plot(self, path: str | os.PathLike, model_name: str = "model") -> None:
        """A figure of the metrics, the model sample and the experiments (``--plot``)."""
        from workbench.figures.validation import plot_validation

        rep = self.report
        n_exp = len(rep.experiments)
        plot_validation(
            rep.time, rep.metrics, path, model_sample=rep.model_sample,
            experiments=rep.experiment_values, experiment_labels=rep.experiments,
            quantity=f"{rep.observer}.{rep.component}", unit=rep.unit,
            title=f"validation of {rep.observer}.{rep.component}: {model_name} "
            f"({rep.n_model} realizations) against {n_exp} experiment{'s' if n_exp != 1 else ''}"
            f", {self.threshold_text('ε')}",
        )  # fmt: skip

    def to_xarray(self):
        """The metrics over ``time`` (s), one variable per metric (reliability, 1)."""
        from workbench.store.xarray_view import make_dataset

        rep = self.report
        variables = {
            name: (("time",), values, {"units": "1", "description": f"{name} reliability"})
            for name, values in rep.metrics.items()
        }
        attrs = {"observer": rep.observer, "component": str(rep.component), "unit": rep.unit}
        return make_dataset(variables, {"time": rep.time}, attrs)


def validate(
    model: str | os.PathLike,
    experiments: Sequence[str | os.PathLike],
    observer: str,
    *,
    component: int | str | None = None,
    metric: str = "all",
    lam: float | None = None,
    epsilon: float | None = None,
    interpolate: bool = False,
    chunk_size: int = 4096,
) -> ValidateResult:
    """Validation metrics of a model ensemble against experiments (``workbench validate``).

    Parameters
    ----------
    model : path
        The model ensemble (``workbench ensemble``).
    experiments : sequence of path
        Stores and/or CSV files of measurements.
    observer : str
        The observer compared.
    component : int or str, optional
        Its component (None for one-component observers).
    metric : {"all", "instantaneous", "first-passage", "accumulated"}
    lam, epsilon : float
        Relative (ε = λ |Y_D|) or absolute threshold; exactly one.
    interpolate : bool
        Interpolate the model onto the experiments' instants when the grids differ.
    chunk_size : int
        Model realizations read at once (memory bound).

    Returns
    -------
    ValidateResult
        ``.time``, ``.metrics``, ``.to_xarray()``, ``.save(path)`` (the JSON of ``-o``).

    Examples
    --------
    >>> import workbench
    >>> e = workbench.ensemble("random_box", 3, seed=1, duration=0.1)
    >>> r = workbench.run("random_box", duration=0.1)
    >>> _ = r.save("experiment.h5")
    >>> v = workbench.validate(e.path, ["experiment.h5"], "com", component="z", epsilon=0.05)
    >>> sorted(v.metrics)
    ['accumulated', 'first_passage', 'instantaneous']
    """
    from workbench.analysis.validation import validate_files

    metrics = ALL_METRICS if metric == "all" else (metric.replace("-", "_"),)
    report = validate_files(
        model, experiments, observer, metrics=metrics, component=component, lam=lam,
        epsilon=epsilon, interpolate=interpolate, chunk_size=chunk_size,
    )  # fmt: skip
    return ValidateResult(report=report)
