"""``workbench.inverse``: inverse simulation under uncertainty, the CDFs of unknown inputs from
measured outputs by the single-loop FORM of Du (2013), optionally checked by Monte Carlo; the task
of ``workbench inverse``. Its file is the JSON report of ``workbench inverse -o``.

References
----------
.. [1] Du, X. (2013). Inverse simulation under uncertainty by the first order reliability method.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.tasks.inputs import check_positive, check_seed
from workbench.tasks.result import FileResult

__all__ = ["inverse", "InverseResult"]


@dataclass
class InverseResult(FileResult):
    """The CDFs of the unknown inputs.

    Attributes
    ----------
    result : InverseResult of :mod:`uncertainty.inverse`
        Per variable its CDF points (x, F, beta), mean and standard deviation.
    mcs : object or None
        The Monte Carlo check (``mcs=N``).
    report : dict
        The JSON report (``workbench inverse --json``). Its ``seconds`` is the wall time of the
        FORM solve: the one entry that differs between two runs of the same inputs.
    spec : InverseSpec
    log : list of str
        The progress lines the command prints on stderr (model calls, time).
    """

    result: Any
    mcs: Any
    report: dict
    spec: Any
    log: list

    @property
    def converged(self) -> bool:
        return all(all(v["converged"]) for v in self.report["variables"].values())

    @property
    def text(self) -> str:
        return json.dumps(self.report, indent=1) + "\n"

    def format(self) -> str:
        """The report as ``workbench inverse`` prints it."""
        from workbench.analysis.inverse import format_report

        return format_report(self.report)

    def plot(self, path: str | os.PathLike):
        """Plot the CDFs (and the Monte Carlo check) to a PNG (``--plot``)."""
        from workbench.figures.inverse import plot_cdfs

        return plot_cdfs(self.report, path, self.spec.description, units=self.spec.units)

    def to_xarray(self):
        """Per unknown ``<name>``: ``<name>_cdf`` (``<name>_x``: the CDF's abscissae, the unknown's
        unit) with ``<name>_beta``, and the moments ``<name>_mean``, ``<name>_std``."""
        from workbench.store.xarray_view import make_dataset

        variables, coords = {}, {}
        for name, v in self.report["variables"].items():
            unit = str(self.spec.units.get(name, "")) if self.spec.units else ""
            x = [p[0] for p in v["cdf"]]
            coords[f"{name}_x"] = x
            f = [np.nan if p[1] is None else p[1] for p in v["cdf"]]
            beta = [np.nan if b is None else b for b in v["beta"]]
            variables[f"{name}_cdf"] = ((f"{name}_x",), f, {"units": "1"})
            variables[f"{name}_beta"] = ((f"{name}_x",), beta, {"units": "1"})
            for key in ("mean", "std"):
                value = np.nan if v[key] is None else v[key]
                variables[f"{name}_{key}"] = ((), value, {"units": unit})
        return make_dataset(variables, coords, {"converged": int(self.converged)})


def inverse(
    spec,
    *,
    set: Mapping[str, Any] | None = None,  # noqa: A002 - named as the command's --set
    mcs: int = 0,
    seed: int = 0,
    method: str | None = None,
    sorm: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> InverseResult:
    """CDFs, means and standard deviations of a spec's unknown inputs (``workbench inverse``;
    Du 2013 [1]_).

    Parameters
    ----------
    spec : str, path or InverseSpec
        An inverse spec (``kind: inverse``) or a shipped spec's name.
    set : dict, optional
        Spec parameters to override.
    mcs : int
        Also run this many Monte Carlo samples.
    seed : int
        Seed of the Monte Carlo samples.
    method : {"single-loop", "double-loop"}, optional
        Du's single loop (default: the spec's) or the double loop, for comparison.
    sorm : bool
        Add Breitung's SORM value per point.
    progress : callable, optional
        ``progress(calls, 0)`` per model call; None is silent.

    Returns
    -------
    InverseResult
        ``.report``, ``.converged``, ``.to_xarray()``, ``.save(path)``.

    Examples
    --------
    >>> import workbench
    >>> r = workbench.inverse("du_impact_analytic")
    >>> r.converged
    True
    """
    from workbench.analysis.inverse import load_inverse_spec, report, run_spec
    from workbench.scene.catalog import find_spec

    check_positive("mcs", mcs, what="number of samples", allow_zero=True)
    check_seed(seed)
    if isinstance(spec, (str, os.PathLike)):
        loaded = load_inverse_spec(find_spec(spec), dict(set or {}))
    else:
        loaded = spec
    log: list[str] = []
    result, mc, seconds = run_spec(
        loaded, method=method, sorm=True if sorm else None, mcs=mcs, seed=seed, log=log.append,
        progress=progress,
    )  # fmt: skip
    return InverseResult(
        result=result, mcs=mc, report=report(result, mc, seconds), spec=loaded, log=log
    )
