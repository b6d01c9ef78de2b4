"""Figures of sensitivity indices (``workbench plot FILE --sensitivity OUTPUT``): bars with their
bootstrap intervals for a scalar output, indices against time for an observer channel."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from workbench.figures.files import save_figure  # noqa: E402
from workbench.figures.labels import DIMENSIONLESS, axis_label  # noqa: E402

__all__ = ["plot_index_bars", "plot_index_curves"]


def plot_index_bars(
    data: Mapping[str, np.ndarray],
    inputs: Sequence[str],
    output: str,
    out: str | Path,
    *,
    method: str = "sobol",
) -> Path:
    """Bars of S1 and ST (Sobol') or μ* (Morris) per input, with error bars of the bootstrap
    half-widths (``*_conf``); returns the written path.

    Parameters
    ----------
    data : mapping
        ``S1``, ``ST``, ``S1_conf``, ``ST_conf`` (or ``mu_star``, ``mu_star_conf``), shape (G,).
    inputs : sequence of str
        The G inputs (groups), in index order.
    output : str
        The output's name, for the title.
    out : str or Path
    method : str
        ``sobol`` or ``morris``.
    """
    x = np.arange(len(inputs))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(inputs) + 2), 4.0))
    if method == "morris":
        ax.bar(
            x,
            data["mu_star"],
            0.6,
            yerr=data.get("mu_star_conf"),
            capsize=4,
            color="C0",
            label="μ*",
        )
        ax.set_ylabel(axis_label("μ* (per unit design coordinate)", None))
        title = f"Morris screening of {output}"
    else:
        w = 0.38
        ax.bar(
            x - w / 2,
            data["S1"],
            w,
            yerr=data.get("S1_conf"),
            capsize=4,
            color="C0",
            label="first order S1",
        )
        ax.bar(
            x + w / 2,
            data["ST"],
            w,
            yerr=data.get("ST_conf"),
            capsize=4,
            color="C1",
            label="total ST",
        )
        ax.set_ylabel(axis_label("Sobol' index", DIMENSIONLESS))
        ax.axhline(0.0, color="k", lw=0.6)
        title = f"Sobol' indices of {output}\n(error bars: 95% bootstrap intervals)"
    ax.set_xticks(x, list(inputs), rotation=20 if len(inputs) > 4 else 0)
    ax.set_xlabel("input")
    ax.set_title(title)
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)


def plot_index_curves(
    data: Mapping[str, np.ndarray],
    inputs: Sequence[str],
    output: str,
    out: str | Path,
    *,
    method: str = "sobol",
    unit: str = "",
) -> Path:
    """Indices of a time-resolved output against time: S1 (solid) and ST (dashed) per input
    with their intervals shaded, above the output's variance (Sobol'); μ* per input (Morris).

    Parameters
    ----------
    data : mapping
        ``time`` (nt,), ``S1``, ``ST``, ``*_conf`` (nt, G), ``variance`` (nt,); or ``mu_star``
        (nt, G) for Morris.
    unit : str
        The observer's unit (the variance's is its square; ``[?]`` when empty).
    """
    t = np.asarray(data["time"], float)
    if method == "morris":
        fig, ax = plt.subplots(figsize=(7, 4))
        for j, name in enumerate(inputs):
            ax.plot(t, data["mu_star"][:, j], color=f"C{j}", label=name)
        ax.set_ylabel(axis_label("μ* (per unit design coordinate)", None))
        axes = [ax]
    else:
        fig, (ax, av) = plt.subplots(
            2, 1, figsize=(7, 5.5), sharex=True, gridspec_kw={"height_ratios": [3, 1]}
        )
        for j, name in enumerate(inputs):
            for key, style in (("S1", "-"), ("ST", "--")):
                s = data[key][:, j]
                ax.plot(
                    t,
                    s,
                    style,
                    color=f"C{j}",
                    lw=1.3,
                    label=f"{name} {key}" if key == "S1" or j == 0 else None,
                )
                conf = data.get(f"{key}_conf")
                if conf is not None:
                    ax.fill_between(
                        t, s - conf[:, j], s + conf[:, j], color=f"C{j}", alpha=0.12, lw=0
                    )
        ax.set_ylabel(axis_label("Sobol' index", DIMENSIONLESS))
        ax.set_ylim(-0.1, 1.1)
        av.plot(t, data["variance"], color="k", lw=1.0)
        compound = any(ch in unit for ch in " /*·^")
        square = (f"({unit})^2" if compound else f"{unit}^2") if unit else None
        av.set_ylabel(axis_label("variance", square))
        av.set_xlabel(axis_label("time", "s"))
        axes = [ax, av]
    if method == "morris":
        axes[0].set_title(f"Morris μ* of {output} against time")
    else:
        axes[0].set_title(f"Sobol' indices of {output} against time (S1 solid, ST dashed)")
    axes[0].legend(fontsize=8, ncol=2)
    for a in axes:
        a.grid(alpha=0.3)
    if method == "morris":
        axes[0].set_xlabel(axis_label("time", "s"))
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)
