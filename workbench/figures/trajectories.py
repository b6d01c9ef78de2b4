"""Figures of stored trajectories (matplotlib, Agg backend: files, no window)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from workbench.figures.files import save_figure  # noqa: E402
from workbench.figures.labels import (  # noqa: E402
    COUNT,
    DIMENSIONLESS,
    axis_label,
    density_label,
)
from workbench.scene.fields import did_you_mean
from workbench.sim.state import Trajectory  # noqa: E402

__all__ = [
    "plot_observer",
    "plot_band",
    "plot_samples",
    "plot_scatter3",
    "plot_convergence",
]


def plot_observer(
    traj: Trajectory,
    name: str,
    out: str | Path,
    *,
    title: str = "",
    diagnostic_units: Mapping[str, str] | None = None,
) -> Path:
    """One panel per component of observer ``name`` against time; returns the written path.

    Parameters
    ----------
    traj : Trajectory
    name : str
        Observer (or diagnostic) name.
    out : str or Path
        PNG/PDF/SVG file to write.
    title : str
        Default: the observer, its quantity and body, and the realization's status.
    diagnostic_units : mapping of str to str, optional
        Units of the diagnostics (``kinetic_energy``: ``"J"``); observers carry their own in
        ``traj.observer_info``. A diagnostic missing here is labelled ``[?]``.
    """
    if name in traj.observers:
        data = traj.observers[name]
        info = traj.observer_info.get(name, {})
    elif name in traj.diagnostics:
        data = traj.diagnostics[name][:, None]
        unit = (diagnostic_units or {}).get(name, "")
        quantity = f"{name.replace('_', ' ')} summed over the scene"
        info = {"quantity": quantity, "unit": unit, "components": [name]}
    else:
        options = sorted(traj.observers) + sorted(traj.diagnostics)
        near = did_you_mean(name, options)
        raise KeyError(f"no observer '{name}'{near}; the file has {', '.join(options) or 'none'}")
    comps = list(info.get("components") or [f"[{i}]" for i in range(data.shape[1])])
    unit = info.get("unit", "")
    k = data.shape[1]
    fig, axes = plt.subplots(k, 1, figsize=(7, 1.9 * k + 0.8), sharex=True, squeeze=False)
    for i, ax in enumerate(axes[:, 0]):
        ax.plot(traj.time, data[:, i], lw=1.4, color="C0")
        ax.set_ylabel(axis_label(comps[i], unit))
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel(axis_label("time", "s"))
    head = title or _observer_title(name, info)
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
    title = title or (
        f"{_observer_title('', info)}: mean, nominal and {100 * p_c:g}% confidence region"
    )
    fig, axes = plt.subplots(k, 1, figsize=(7, 2.1 * k + 0.9), sharex=True, squeeze=False)
    for i, ax in enumerate(axes[:, 0]):
        ax.fill_between(time, lower[:, i], upper[:, i], color="C0", alpha=0.12, lw=0)
        ax.plot(time, lower[:, i], color="C0", lw=0.8, label=f"{100 * p_c:g}% region")
        ax.plot(time, upper[:, i], color="C0", lw=0.8)
        ax.plot(time, mean[:, i], color="k", lw=2.0, label="mean")
        if nominal is not None:
            ax.plot(time, nominal[:, i], color="C3", lw=1.2, ls="--", label="nominal")
        ax.set_ylabel(axis_label(comps[i], unit))
        ax.grid(alpha=0.3)
    axes[0, 0].legend(loc="best", fontsize=8)
    axes[-1, 0].set_xlabel(axis_label("time", "s"))
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)


def plot_samples(samples, label: str, out: str | Path, *, unit: str = "", title: str = "") -> Path:
    """Probability density of scalar samples (histogram and Gaussian kernel estimate), as in
    Batou & Soize (2012) Figs. 10 and 17.

    Parameters
    ----------
    samples : array_like, shape (n,)
        Non-finite values (failed realizations) are left out.
    label : str
        What was sampled, e.g. ``"rb5/mass"``.
    out : str or Path
    unit : str
        Unit of the samples (``"1"`` dimensionless); empty when not declared (``[?]``).
    title : str
        Default: "probability density of LABEL".
    """
    from scipy.stats import gaussian_kde

    x = np.asarray(samples, dtype=float)
    x = x[np.isfinite(x)]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.hist(x, bins="auto", density=True, color="C0", alpha=0.35, label=f"histogram (n = {x.size})")
    if x.size > 2 and np.ptp(x) > 0:
        grid = np.linspace(x.min(), x.max(), 400)
        ax.plot(grid, gaussian_kde(x)(grid), color="C0", lw=2, label="kernel estimate")
    ax.set_xlabel(axis_label(label, unit))
    ax.set_ylabel(density_label(unit))
    ax.set_title(title or f"probability density of {label}: {x.size} samples")
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
        ax.set_xlabel(axis_label(names[a], unit))
        ax.set_ylabel(axis_label(names[b], unit))
        ax.set_title(f"{names[a]}-{names[b]} projection", fontsize=10)
        ax.grid(alpha=0.3)
    fig.suptitle(f"samples of {label}: {P.shape[0]} realizations")
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)


def plot_convergence(conv, label: str, out: str | Path, *, unit: str = "") -> Path:
    """Mean-square convergence conv(n) against the number of realizations (Batou & Soize 2012,
    Sec. 3.4): conv(n) = (1/n Σⱼ ∫ ‖Yⱼ(t)‖² dt)^½, in the response's unit × s^½.

    Parameters
    ----------
    conv : array_like, shape (m,)
        conv(1), ..., conv(m).
    label : str
        The observer.
    out : str or Path
    unit : str
        Unit of the observer (empty when not declared: ``[?]``).
    """
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(np.arange(1, len(conv) + 1), conv, color="C0", lw=1.5)
    ax.set_xlabel(axis_label("number of realizations n", COUNT))
    if unit == DIMENSIONLESS:
        conv_unit = "s^½"
    else:
        compound = any(c in unit for c in " /*·")
        conv_unit = (f"({unit}) s^½" if compound else f"{unit} s^½") if unit else ""
    ax.set_ylabel(axis_label("conv(n)", conv_unit))
    ax.set_title(f"mean-square convergence of {label}\nover the realizations")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, out, dpi=120)


def _observer_title(name: str, info: Mapping) -> str:
    """ "height: com position of ball" from an observer's name and info."""
    quantity = str(info.get("quantity", "")).replace("_", " ")
    body = info.get("body")
    if name and quantity and quantity != name.replace("_", " "):
        head = f"{name}: {quantity}"
    else:
        head = name or quantity
    return head + (f" of {body}" if body else "")
