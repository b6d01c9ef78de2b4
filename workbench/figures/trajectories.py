"""Figures of stored trajectories (matplotlib, Agg backend: files, no window)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from workbench.figures.files import save_figure  # noqa: E402
from workbench.sim.state import Trajectory  # noqa: E402

__all__ = ["plot_observer", "plot_band", "plot_samples", "plot_scatter3", "plot_convergence"]


def plot_observer(traj: Trajectory, name: str, out: str | Path, *, title: str = "") -> Path:
    """One panel per component of observer ``name`` against time; returns the written path.

    Parameters
    ----------
    traj : Trajectory
    name : str
        Observer (or diagnostic) name.
    out : str or Path
        PNG/PDF/SVG file to write.
    """
    if name in traj.observers:
        data = traj.observers[name]
        info = traj.observer_info.get(name, {})
    elif name in traj.diagnostics:
        data = traj.diagnostics[name][:, None]
        info = {"quantity": name, "unit": "", "components": [name]}
    else:
        options = sorted(traj.observers) + sorted(traj.diagnostics)
        raise KeyError(f"no observer '{name}'; the file has {', '.join(options) or 'none'}")
    comps = list(info.get("components") or [f"[{i}]" for i in range(data.shape[1])])
    unit = info.get("unit", "")
    k = data.shape[1]
    fig, axes = plt.subplots(k, 1, figsize=(7, 1.9 * k + 0.8), sharex=True, squeeze=False)
    for i, ax in enumerate(axes[:, 0]):
        ax.plot(traj.time, data[:, i], lw=1.4, color="C0")
        ax.set_ylabel(f"{comps[i]} [{unit}]" if unit else comps[i])
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time [s]")
    body = info.get("body")
    head = title or f"{name}: {info.get('quantity', '')}" + (f" of {body}" if body else "")
    if traj.status != "ok":
        head += f"  (run stopped early: {traj.status})"
    fig.suptitle(head)
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)


def plot_band(
    time,
    nominal,
    mean,
    lower,
    upper,
    info: dict,
    out: str | Path,
    *,
    p_c: float,
    title: str = "",
) -> Path:
    """Confidence region as in Batou & Soize (2012) Figs. 11-38: per component, the band at
    probability ``p_c`` (thin lines), the mean response (thick) and the nominal response
    (dashed). Arrays have shape (nt, k)."""
    comps = list(info.get("components") or [f"[{i}]" for i in range(mean.shape[1])])
    unit = info.get("unit", "")
    k = mean.shape[1]
    fig, axes = plt.subplots(k, 1, figsize=(7, 2.1 * k + 0.9), sharex=True, squeeze=False)
    for i, ax in enumerate(axes[:, 0]):
        ax.fill_between(time, lower[:, i], upper[:, i], color="C0", alpha=0.12, lw=0)
        ax.plot(time, lower[:, i], color="C0", lw=0.8, label=f"{100 * p_c:g}% region")
        ax.plot(time, upper[:, i], color="C0", lw=0.8)
        ax.plot(time, mean[:, i], color="k", lw=2.0, label="mean")
        if nominal is not None:
            ax.plot(time, nominal[:, i], color="C3", lw=1.2, ls="--", label="nominal")
        ax.set_ylabel(f"{comps[i]} [{unit}]" if unit else comps[i])
        ax.grid(alpha=0.3)
    axes[0, 0].legend(loc="best", fontsize=8)
    axes[-1, 0].set_xlabel("time [s]")
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)


def plot_samples(samples, label: str, out: str | Path, *, unit: str = "") -> Path:
    """Probability density of scalar samples (histogram and Gaussian kernel estimate), as in
    Batou & Soize (2012) Figs. 10 and 17."""
    from scipy.stats import gaussian_kde

    x = np.asarray(samples, dtype=float)
    x = x[np.isfinite(x)]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.hist(x, bins="auto", density=True, color="C0", alpha=0.35, label=f"histogram (n = {x.size})")
    if x.size > 2 and np.ptp(x) > 0:
        grid = np.linspace(x.min(), x.max(), 400)
        ax.plot(grid, gaussian_kde(x)(grid), color="C0", lw=2, label="kernel estimate")
    ax.set_xlabel(f"{label} [{unit}]" if unit else label)
    ax.set_ylabel("probability density")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)


def plot_scatter3(points, label: str, out: str | Path, *, unit: str = "m") -> Path:
    """Samples of a 3-vector (e.g. the random centre of mass, Batou & Soize Figs. 24-26): the
    three coordinate-plane projections."""
    P = np.asarray(points, dtype=float)
    P = P[np.all(np.isfinite(P), axis=1)]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.7))
    names = ("x", "y", "z")
    for ax, (a, b) in zip(axes, ((0, 1), (0, 2), (1, 2)), strict=True):
        ax.scatter(P[:, a], P[:, b], s=4, alpha=0.5, color="C0")
        ax.set_xlabel(f"{names[a]} [{unit}]")
        ax.set_ylabel(f"{names[b]} [{unit}]")
        ax.grid(alpha=0.3)
    fig.suptitle(f"{label}: {P.shape[0]} samples")
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)


def plot_convergence(conv, label: str, out: str | Path) -> Path:
    """Mean-square convergence conv(n) against the number of realizations."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(np.arange(1, len(conv) + 1), conv, color="C0", lw=1.5)
    ax.set_xlabel("number of realizations n")
    ax.set_ylabel("conv(n)")
    ax.set_title(f"mean-square convergence: {label}")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)
