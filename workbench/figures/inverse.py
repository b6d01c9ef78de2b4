"""Figure of ``workbench inverse --plot``: the CDFs of the unknown inputs (matplotlib, Agg
backend), drawn from the report of :func:`workbench.analysis.inverse.report`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from workbench.figures.files import save_figure  # noqa: E402
from workbench.figures.labels import DIMENSIONLESS, axis_label, unit_of  # noqa: E402

__all__ = ["plot_cdfs"]


def plot_cdfs(
    rep: dict, path: str | Path, title: str = "", *, units: Mapping[str, str] | None = None
) -> Path:
    """One panel per unknown: the FORM CDF points (non-converged ones marked) and the MCS.

    Parameters
    ----------
    rep : dict
        The report of :func:`workbench.analysis.inverse.report`.
    path : str or Path
        Image file to write.
    title : str
        The figure's title (e.g. the spec's description); each panel is titled by its unknown.
    units : mapping of str to str, optional
        Units of the unknowns by name; one without a unit is labelled ``[?]``.
    """
    names = list(rep["variables"])
    fig, axes = plt.subplots(
        1, len(names), figsize=(5 * len(names), 3.8), constrained_layout=True, squeeze=False
    )
    mcs = rep.get("mcs", {}).get("variables", {})
    for ax, name in zip(axes[0], names, strict=True):
        v = rep["variables"][name]
        x = np.array([c[0] for c in v["cdf"]])
        F = np.array([np.nan if c[1] is None else c[1] for c in v["cdf"]])
        ok = np.array(v["converged"], dtype=bool)
        ax.plot(x[ok], F[ok], "o-", ms=4, label="FORM (single loop)")
        if (~ok).any():
            ax.plot(x[~ok], F[~ok], "rx", ms=8, label="not converged")
        if name in mcs:
            m = mcs[name]
            Fm = np.array([c[1] for c in m["cdf"]])
            ax.errorbar(x, Fm, yerr=2 * np.array(m["cdf_se"]), fmt="s", ms=3, mfc="none",
                        label="Monte Carlo (± 2 SE)")  # fmt: skip
        ax.set_xlabel(axis_label(name, unit_of(name, units)))
        ax.set_ylabel(axis_label(f"CDF F({name}) = P({name} ≤ x)", DIMENSIONLESS))
        ax.set_title(f"CDF of the unknown {name}", fontsize=10)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle(title or "inverse simulation: CDFs of the unknown inputs")
    return save_figure(fig, path, dpi=110)
