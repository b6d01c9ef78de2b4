"""Figures of the plausibility measure (``workbench markov compare``, :mod:`reverse.pasts.measure`):
contact-state sequences of forward and backward runs as in Twigg & James 2008 [1]_ Fig. 9, and
the histograms of the per-run statistics (matplotlib, Agg backend).

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25 (SIGGRAPH 2008).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.colors import ListedColormap

from workbench.figures.files import plt, save_figure
from workbench.figures.labels import axis_label, density_label

__all__ = ["STATE_NAMES", "plot_measurement", "plot_sequences", "plot_statistics", "sort_rows"]

#: Contact states of Fig. 9 of [1]_ (as :data:`reverse.goals.markov.STATE_NAMES`; figures import no
#: library module).
STATE_NAMES = ("free", "vertex", "edge", "face")

#: Colours of "no record" (a run shorter than the others) and of the states 0–3.
_COLOURS = ListedColormap(["white", "#ececec", "#fdae61", "#2c7bb6", "#d7191c"])

#: Statistics whose values spread over orders of magnitude (backward energy growth) are drawn
#: on a log axis when the largest is this many times the median positive one.
_LOG_SPAN = 100.0

_DPI = 110


def _padded(states) -> np.ndarray:
    """Runs as rows of one array, right-aligned on their last record (the final state); −1
    before a shorter run's first record."""
    n = max((len(s) for s in states), default=0)
    out = np.full((len(states), n), -1, dtype=np.int8)
    for i, s in enumerate(states):
        if len(s):
            out[i, n - len(s) :] = s
    return out


def sort_rows(states: np.ndarray) -> np.ndarray:
    """Rows sorted lexicographically in reverse time (from the final state), as in Fig. 9."""
    if states.size == 0:
        return states
    rev = states[:, ::-1]
    return states[np.lexsort(rev.T[::-1])]


def plot_sequences(forward, backward, dt: float, out, *, titles=None):
    """Contact state per record, one row per run, reverse time from the final state (left).

    Parameters
    ----------
    forward, backward : list of ndarray of int
        Contact states per run, forward time order (the last entry: the final state).
    dt : float
        Step between records, s.
    out : str or Path
        Image file.
    titles : tuple of str, optional
        Panel titles.
    """
    titles = titles or (
        f"{len(forward)} forward PyBullet throws",
        f"{len(backward)} backward runs from rest with the contact model",
    )
    fig, axes = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    im = None
    for ax, data, title in zip(axes, (forward, backward), titles, strict=True):
        rows = sort_rows(_padded(data))
        if rows.size == 0:
            ax.set_title(f"{title} (none)", fontsize=10)
            continue
        n = rows.shape[1]
        extent = (0.0, (n - 1) * dt, rows.shape[0], 0)
        im = ax.imshow(
            rows[:, ::-1] + 1,
            aspect="auto",
            interpolation="nearest",
            cmap=_COLOURS,
            vmin=-0.5,
            vmax=4.5,
            extent=extent,
        )
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(axis_label("run", "count"))
    axes[1].set_xlabel(axis_label("reverse time (before the final state)", "s"))
    if im is not None:
        cbar = fig.colorbar(im, ax=axes, ticks=[1, 2, 3, 4], shrink=0.6)
        cbar.ax.set_yticklabels([f"{k} {s}" for k, s in enumerate(STATE_NAMES)])
    fig.suptitle("Contact-state sequences (Twigg & James 2008, Fig. 9)", fontsize=11)
    return save_figure(fig, out, dpi=_DPI, tight=True)


def plot_statistics(values: dict, out, *, labels=("forward", "forward, 2nd sample", "backward")):
    """Histograms of the per-run statistics of the three samples (densities, step outlines).

    Parameters
    ----------
    values : dict
        Key → ``(label, unit, forward, forward2, backward)`` (:class:`reverse.pasts.measure.
        Comparison` ``values``).
    out : str or Path
    labels : tuple of str
        Legend of the three samples.
    """
    keys = list(values)
    cols = 4
    rows = max(1, math.ceil(len(keys) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.5 * rows), squeeze=False)
    for ax, key in zip(axes.ravel(), keys, strict=False):
        label, unit, *samples = values[key]
        samples = [np.asarray(x, dtype=float) for x in samples]
        samples = [x[np.isfinite(x)] for x in samples]
        both = np.concatenate(samples) if samples else np.zeros(0)
        if both.size == 0:
            ax.set_title(f"{label} (no values)", fontsize=8)
            continue
        lo, hi = float(both.min()), float(both.max())
        pos = both[both > 0]
        typical = float(np.median(pos)) if pos.size else 0.0
        log = pos.size and lo >= 0 and hi > _LOG_SPAN * typical
        if log:
            # from a thousandth of the typical value: a run at rest (0 or 1e-13 rad/s) would
            # otherwise stretch the axis over ten decades
            bottom = max(float(pos.min()), 1e-3 * typical)
            edges = np.geomspace(bottom, hi, 25)
            samples = [np.clip(x, edges[0], None) for x in samples]
            ax.set_xscale("log")
        else:
            edges = np.linspace(lo, hi if hi > lo else lo + 1.0, 25)
        for x, name in zip(samples, labels, strict=True):
            if x.size:
                # on a log axis a density would divide by bins decades wide: show shares
                kw = {"weights": np.full(x.size, 1.0 / x.size)} if log else {"density": True}
                ax.hist(x, bins=edges, histtype="step", label=name, **kw)
        ax.set_xlabel(axis_label(label, unit), fontsize=8)
        ylabel = axis_label("share of runs per bin", "1") if log else density_label(unit)
        ax.set_ylabel(ylabel, fontsize=7)
        ax.tick_params(labelsize=7)
    for ax in axes.ravel()[len(keys) :]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("Per-run statistics: forward throws and backward runs", fontsize=11)
    fig.tight_layout()
    return save_figure(fig, out, dpi=_DPI)


def plot_measurement(samples, values, dt: float, out) -> list[str]:
    """The figures of one comparison in folder ``out``: ``sequences.png`` (forward runs and
    backward runs ending ``ok``), ``statistics.png`` and, when ``samples`` holds
    ``verified_runs``, ``verified_sequences.png`` (forward runs and the refined pasts), and
    when it holds ``conditioned_runs``, ``conditioned_sequences.png`` (forward runs and the
    conditioned forward pasts). Returns the file names written. ``samples``, ``values``:
    :class:`reverse.pasts.measure.Measurement`'s samples and its comparison's values."""
    out = Path(out)
    forward = [r.states for r in samples["forward"]]
    backward = [r.states for r in samples["backward"] if r.status == "ok"]
    plot_sequences(forward, backward, dt, out / "sequences.png")
    plot_statistics(values, out / "statistics.png")
    names = ["sequences.png", "statistics.png"]
    if samples.get("verified_runs") is not None:
        pasts = [r.states for r in samples["verified_runs"] if r.status == "refined"]
        titles = (
            f"{len(forward)} forward PyBullet throws",
            f"{len(pasts)} verified pasts: PyBullet from the refined earliest states",
        )
        plot_sequences(forward, pasts, dt, out / "verified_sequences.png", titles=titles)
        names.append("verified_sequences.png")
    if samples.get("conditioned_runs") is not None:
        pasts = [r.states for r in samples["conditioned_runs"]]
        titles = (
            f"{len(forward)} forward PyBullet throws",
            f"{len(pasts)} conditioned forward pasts: throws resting on the final face, confirmed",
        )
        plot_sequences(forward, pasts, dt, out / "conditioned_sequences.png", titles=titles)
        names.append("conditioned_sequences.png")
    return names
