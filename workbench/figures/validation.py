"""Figures of time-domain validation results (matplotlib, Agg backend: files, no window)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from workbench.figures.files import save_figure  # noqa: E402
from workbench.figures.labels import DIMENSIONLESS, axis_label  # noqa: E402

__all__ = ["METRIC_LABELS", "plot_validation"]

#: Axis labels of the three metrics (Ao, Hu & Mahadevan 2017, Sec. 3.2).
METRIC_LABELS = {
    "instantaneous": "instantaneous",
    "first_passage": "first-passage",
    "accumulated": "accumulated",
}


def plot_validation(
    time: np.ndarray,
    metrics: Mapping[str, np.ndarray],
    out: str | Path,
    *,
    model_sample: np.ndarray | None = None,
    experiments: np.ndarray | None = None,
    experiment_labels: Sequence[str] = (),
    quantity: str = "",
    unit: str = "",
    title: str = "",
) -> Path:
    """Model realizations and experiments (top, optional) and reliability curves (bottom).

    Parameters
    ----------
    time : ndarray, shape (n_t,)
        Instants, s.
    metrics : mapping of str to ndarray, shape (n_t,)
        Reliability curves by metric name (keys of :data:`METRIC_LABELS`).
    out : str or Path
        Image file to write (PNG, PDF, SVG).
    model_sample : ndarray, shape (m, n_t), optional
        A few model realizations, drawn as thin grey lines.
    experiments : ndarray, shape (n_i, n_t), optional
        Experiments, drawn in colour.
    experiment_labels : sequence of str
        Legend entries of the experiments.
    quantity : str
        The observed quantity, e.g. ``"tip.x"`` (the label of the top panel's y axis).
    unit : str
        Its unit (empty when not declared: ``[?]``).
    title : str
        Default: "validation: reliability of the model against the experiments".

    Returns
    -------
    Path
        The written file.
    """
    out = Path(out)
    top = model_sample is not None or experiments is not None
    fig, axes = plt.subplots(
        2 if top else 1, 1, figsize=(7.5, 6.0 if top else 3.5), sharex=True, squeeze=False
    )
    axes = axes[:, 0]
    if top:
        ax = axes[0]
        if model_sample is not None:
            ax.plot(time, np.asarray(model_sample).T, color="0.6", lw=0.5, alpha=0.5)
            ax.plot([], [], color="0.6", lw=0.8, label=f"model ({len(model_sample)} shown)")
        if experiments is not None:
            labels = list(experiment_labels) or [
                f"experiment {j + 1}" for j in range(len(experiments))
            ]
            for row, label in zip(np.asarray(experiments), labels, strict=False):
                ax.plot(time, row, lw=1.2, label=label)
        ax.set_ylabel(axis_label(quantity or "observed quantity", unit))
        ax.set_title("model realizations and experiments", fontsize=9)
        ax.legend(fontsize=7, loc="best", framealpha=0.6)
        ax.grid(alpha=0.3)
    ax = axes[-1]
    for name, r in metrics.items():
        ax.plot(time, r, lw=1.2, label=METRIC_LABELS.get(name, name))
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(axis_label("time", "s"))
    ax.set_ylabel(axis_label("reliability r(t)", DIMENSIONLESS))
    ax.set_title("reliability metrics (Ao, Hu & Mahadevan 2017)", fontsize=9)
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    fig.suptitle(
        title or "validation: reliability of the model against the experiments", fontsize=10
    )
    fig.tight_layout()
    return save_figure(fig, out, dpi=110)
