"""Figures of stored trajectories (matplotlib, Agg backend: files, no window)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from workbench.state import Trajectory  # noqa: E402

__all__ = ["plot_observer"]


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
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
