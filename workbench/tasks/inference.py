"""``workbench.infer`` and ``workbench.design``: Bayesian parameter estimation and optimal
measurement times from one inference spec; the tasks of ``workbench infer`` and ``workbench
design``. Their file is the JSON report the commands write with ``-o``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workbench.tasks.inputs import check_seed
from workbench.tasks.result import FileResult

__all__ = ["infer", "design", "InferResult", "DesignResult", "load_inference_spec"]


def load_inference_spec(spec, overrides: Mapping[str, Any] | None = None):
    """An inference spec: a loaded one as is, or a path or shipped name read with ``overrides``
    (``--set``)."""
    from workbench.analysis.inference import load_spec
    from workbench.scene.catalog import find_spec

    if isinstance(spec, (str, os.PathLike)):
        return load_spec(find_spec(spec), dict(overrides or {}))
    if overrides:
        raise ValueError("set= applies to a spec's file or name, not to a loaded spec")
    return spec


@dataclass
class InferResult(FileResult):
    """A Bayesian estimation.

    Attributes
    ----------
    result : InferenceResult
        MAP, Laplace posterior, exact posterior (:mod:`workbench.analysis.inference`).
    report : dict
        The JSON report (``workbench infer --json``).
    spec : InferenceSpec
    """

    result: Any
    report: dict
    spec: Any

    @property
    def converged(self) -> bool:
        return bool(self.result.converged)

    def problems(self) -> list[str]:
        """Why the estimate is not to be trusted (empty when it converged)."""
        return list(self.result.problems())

    @property
    def text(self) -> str:
        return json.dumps(self.report, indent=2) + "\n"

    def format(self) -> str:
        """The report as ``workbench infer`` prints it."""
        from workbench.analysis.inference import format_inference

        return format_inference(self.report)

    def plot(self, folder: str | os.PathLike) -> list[Path]:
        """Write the fit and posterior figures to ``folder`` (``--plot``)."""
        from workbench.analysis.inference import fit_curves
        from workbench.figures.inference import write_inference_plots

        return write_inference_plots(
            self.result, folder, fit=fit_curves(self.result), units=self.spec.units
        )

    def to_xarray(self):
        """MAP (``map_estimate``), Laplace and exact posterior moments per ``parameter`` and the
        Laplace correlation (``parameter`` × ``parameter_2``)."""
        from workbench.store.xarray_view import make_dataset

        rep = self.report
        names = list(rep["map"])
        units = {"units": ""}
        variables = {
            "map_estimate": (("parameter",), [rep["map"][k] for k in names], units),
            "laplace_std": (("parameter",), _values(rep["laplace"]["std"], names), units),
        }
        if rep["laplace"].get("corr") is not None:
            corr = np.asarray(rep["laplace"]["corr"], dtype=float)
            variables["laplace_corr"] = (("parameter", "parameter_2"), corr, {"units": "1"})
        exact = rep.get("exact") or {}
        for key in ("mean", "std"):
            if isinstance(exact.get(key), dict):
                variables[f"exact_{key}"] = (("parameter",), _values(exact[key], names), units)
        attrs = {"spec": str(rep.get("spec", "")), "converged": int(self.converged)}
        return make_dataset(variables, {"parameter": names, "parameter_2": names}, attrs)


def _values(mapping, names) -> list[float]:
    return [np.nan if mapping is None or mapping.get(k) is None else mapping[k] for k in names]


def infer(
    spec,
    *,
    set: Mapping[str, Any] | None = None,  # noqa: A002 - named as the command's --set
    exact: str | None = None,
    seed: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> InferResult:
    """Infer model parameters from data as an inference spec describes (``workbench infer``):
    the MAP, the Laplace posterior and the exact posterior (grid or MCMC).

    Parameters
    ----------
    spec : str, path or InferenceSpec
        An inference spec (``kind: inference``) or a shipped spec's name.
    set : dict, optional
        Spec parameters to override (``--set case=3``).
    exact : {"auto", "grid", "mcmc", "none"}, optional
        The exact posterior (default: the spec's).
    seed : int, optional
        MCMC seed (default: the spec's ``exact.seed``).
    progress : callable, optional
        ``progress(done, total)`` in MCMC steps; None is silent.

    Returns
    -------
    InferResult
        ``.report``, ``.converged``, ``.to_xarray()``, ``.save(path)`` (the JSON of ``-o``).

    Examples
    --------
    >>> import workbench
    >>> r = workbench.infer("falling_object_example1")
    >>> r.converged, round(float(r.to_xarray().map_estimate.sel(parameter="c")), 3)
    (True, 0.106)
    """
    from workbench.analysis.inference import inference_report, run_inference

    check_seed(seed)
    loaded = load_inference_spec(spec, set)
    result = run_inference(loaded, exact=exact, seed=seed, progress=progress)
    return InferResult(result=result, report=inference_report(result), spec=loaded)


@dataclass
class DesignResult(FileResult):
    """Optimal measurement times.

    Attributes
    ----------
    run : DesignRun
        The designs (:mod:`workbench.analysis.inference`).
    report : dict
        The JSON report (``workbench design --json``): one entry per (eta, n) in ``designs``.
    """

    run: Any
    report: dict

    @property
    def converged(self) -> bool:
        return bool(self.report["converged"])

    @property
    def text(self) -> str:
        return json.dumps(self.report, indent=2) + "\n"

    def format(self) -> str:
        """The report as ``workbench design`` prints it."""
        from workbench.analysis.inference import format_design

        return format_design(self.report)

    def plot(self, folder: str | os.PathLike) -> list[Path]:
        """Write the design figures to ``folder`` (``--plot``)."""
        from workbench.figures.inference import write_design_plots

        return write_design_plots(self.run, folder)

    def to_xarray(self):
        """Per ``design``: ``eta``, ``n``, ``entropy`` and the measurement ``times``
        (``design`` × ``measurement``, s; NaN past a design's n)."""
        from workbench.store.xarray_view import make_dataset

        designs = self.report["designs"]
        width = max((len(d["times"]) for d in designs), default=0)
        times = np.full((len(designs), width), np.nan)
        for i, d in enumerate(designs):
            times[i, : len(d["times"])] = d["times"]
        variables = {
            "eta": (("design",), [d["eta"] for d in designs], {"units": "1"}),
            "n": (("design",), [d["n"] for d in designs], {"units": "1"}),
            "entropy": (("design",), [d["entropy"] for d in designs], {"units": "nat"}),
            "times": (("design", "measurement"), times, {"units": "s"}),
        }
        return make_dataset(variables, {"design": np.arange(len(designs))})


def design(
    spec,
    *,
    set: Mapping[str, Any] | None = None,  # noqa: A002 - named as the command's --set
    eta: Sequence[float] | None = None,
    n: str | Sequence[int] | None = None,
    param: Sequence[str] | None = None,
    lam: float | None = None,
    seed: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> DesignResult:
    """Optimal measurement times from an inference spec's ``design`` section (``workbench
    design``): the times that minimize the entropy of the asymptotic posterior.

    Parameters
    ----------
    spec : str, path or InferenceSpec
    set : dict, optional
        Spec parameters to override.
    eta : sequence of float, optional
        Ratios sigma2/sigma1 of model to measurement error (default: the spec's).
    n : str or sequence of int, optional
        Numbers of measurements: ``"1..4"``, ``"1,2,5"`` or a list (default: the spec's).
    param : sequence of str, optional
        Design for these parameters only.
    lam : float, optional
        Model-error correlation length, s (``--lambda``).
    seed : int, optional
        Optimizer seed.
    progress : callable, optional
        ``progress(done, total)`` in designs; None is silent.

    Returns
    -------
    DesignResult
        ``.report``, ``.to_xarray()``, ``.save(path)``.

    Examples
    --------
    >>> import workbench
    >>> d = workbench.design("falling_object_example1", n=[2], eta=[1.0])
    >>> d.to_xarray().times.shape
    (1, 2)
    """
    from workbench.analysis.inference import design_report, parse_counts, run_design

    check_seed(seed)
    loaded = load_inference_spec(spec, set)
    counts = parse_counts(n) if isinstance(n, str) else (None if n is None else list(n))
    run = run_design(
        loaded, etas=None if eta is None else list(eta), counts=counts,
        parameters=None if param is None else list(param), correlation_length=lam, seed=seed,
        progress=progress,
    )  # fmt: skip
    return DesignResult(run=run, report=design_report(run))
