"""Figures of Bayesian inference and experimental design results (matplotlib, Agg backend).

Used by ``workbench infer --plot`` / ``workbench design --plot`` and by
``docs/falling_object_figures.py`` (the figures of docs/falling_object.md).
"""

from __future__ import annotations

import math
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
    unit_of,
)

__all__ = [
    "spec_units",
    "plot_fit",
    "plot_posterior",
    "plot_pairs",
    "plot_entropy_curve",
    "plot_design_sequence",
    "plot_design_vs_eta",
    "write_inference_plots",
    "write_design_plots",
]

#: Contour levels of the 2-D posterior plots: the density of a Gaussian at 1, 2 and 3 standard
#: deviations (Mahalanobis distance) relative to its peak, exp(−k²/2).
_LEVELS = [math.exp(-0.5 * k * k) for k in (3, 2, 1)]


#: Style of each fitted curve of :func:`plot_fit`, by label.
_FIT_STYLES = {"MAP": ("C0", "-"), "reference": ("C2", "--")}

#: Unit of the information entropy of Eq. (16): a natural logarithm, so nats.
_ENTROPY_UNIT = "nat"

#: Name of an inferred prediction-error standard deviation among the posterior's parameters.
_SIGMA = "sigma"


def spec_units(spec, units: Mapping[str, str] | None = None) -> dict[str, str]:
    """Units of the names on an inference figure's axes: ``units`` (data columns and parameters
    by name), completed with what the spec itself fixes: its x column is time in s
    (:class:`~workbench.analysis.inference_spec.InferenceSpec`), and an inferred σ has the unit
    of the data column y."""
    out = {spec.x_name: "s", **(units or {})}
    if spec.y_name in out:
        out.setdefault(_SIGMA, out[spec.y_name])
    return out


def plot_fit(result, fit, out, *, title: str = "", units: Mapping[str, str] | None = None) -> Path:
    """Data (± σ) and the fitted curves against x.

    Parameters
    ----------
    result : workbench.analysis.inference.InferenceResult
    fit : workbench.analysis.inference.FitCurves
        The curves, computed by :func:`workbench.analysis.inference.fit_curves`.
    out : path
    title : str
        Default: "SPEC: data (± σ) and MAP fit".
    units : mapping of str to str, optional
        Units of the data columns by name (:func:`spec_units`); the x column is time in s.
    """
    spec = result.spec
    units = spec_units(spec, units)
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, y in fit.curves:
        color, ls = _FIT_STYLES[label]
        ax.plot(fit.x, y, color=color, ls=ls, label=label)
    sigma = spec.sigma if spec.sigma is not None else float(result.map.x[-1])
    ax.errorbar(spec.x, spec.y, yerr=sigma, fmt="ko", ms=4, capsize=2, label="data ± σ")
    ax.set_xlabel(axis_label(spec.x_name, unit_of(spec.x_name, units)))
    if spec.y_label and spec.y_label != spec.y_name:  # what y measures, then its column
        what = f"{spec.y_label} ({spec.y_name})"
    else:
        what = f"measured {spec.y_name}"
    ax.set_ylabel(axis_label(what, unit_of(spec.y_name, units)))
    ax.legend()
    ax.set_title(title or f"{Path(spec.source).stem}: data (± σ) and MAP fit")
    return save_figure(fig, out, dpi=110, tight=True)


def _laplace_pdf_1d(mean: float, std: float, x: np.ndarray) -> np.ndarray:
    # Eq. (13) of the falling-object document: the Gaussian (asymptotic) posterior
    return np.exp(-0.5 * ((x - mean) / std) ** 2) / (math.sqrt(2 * math.pi) * std)


def plot_posterior(result, out, *, title: str = "", units: Mapping[str, str] | None = None) -> Path:
    """Exact (grid) and Laplace posteriors: densities for one parameter, contours for two,
    pair panels for more (:func:`plot_pairs`). ``units``: of the parameters, by name (a
    parameter without one is labelled ``[?]``)."""
    lap, ex = result.laplace, result.exact
    names = list(result.map.names)
    if len(names) > 2 or result.exact_method == "mcmc":
        return plot_pairs(result, out, title=title, units=units)
    units = spec_units(result.spec, units)
    label = {n: axis_label(n, unit_of(n, units)) for n in names}
    fig, ax = plt.subplots(figsize=(6, 4.5))
    if len(names) == 1:
        if result.exact_method == "grid" and ex is not None:
            ax.plot(ex.axes[0], ex.density, "k-", label="exact (Eq. 8)")
            x = ex.axes[0]
        else:
            s = lap.std[0] if lap.available else 1.0
            x = np.linspace(lap.mean[0] - 5 * s, lap.mean[0] + 5 * s, 400)
        if lap.available:
            ax.plot(x, _laplace_pdf_1d(lap.mean[0], lap.std[0], x), "C0--", label="Laplace")
        ax.set_xlabel(label[names[0]])
        ax.set_ylabel(density_label(unit_of(names[0], units), "posterior density"))
        ax.legend()
    else:
        if result.exact_method == "grid" and ex is not None:
            X, Y = np.meshgrid(ex.axes[0], ex.axes[1], indexing="ij")
            ax.contour(X, Y, ex.density / ex.density.max(), levels=_LEVELS, colors="k")
            ax.plot([], [], "k-", label="exact (Eq. 8)")
            xs, ys = ex.axes
        else:
            s = lap.std if lap.available else np.ones(2)
            xs = np.linspace(lap.mean[0] - 4 * s[0], lap.mean[0] + 4 * s[0], 200)
            ys = np.linspace(lap.mean[1] - 4 * s[1], lap.mean[1] + 4 * s[1], 200)
        if lap.available:
            X, Y = np.meshgrid(xs, ys, indexing="ij")
            P = np.column_stack([X.ravel(), Y.ravel()])
            logp = lap.log_density(P).reshape(X.shape)
            ax.contour(
                X, Y, np.exp(logp - logp.max()), levels=_LEVELS, colors="C0", linestyles="--"
            )
            ax.plot([], [], "C0--", label="Laplace")
        ax.plot(*result.map.x, "C3+", ms=10, label="MAP")
        ax.set_xlabel(label[names[0]])
        ax.set_ylabel(label[names[1]])
        ax.legend()
        ax.text(
            0.02,
            0.02,
            "contours at 1, 2, 3 std (Gaussian-equivalent)",
            transform=ax.transAxes,
            fontsize=7,
        )
    what = "posterior density" if len(names) == 1 else "posterior contours"
    ax.set_title(title or f"{Path(result.spec.source).stem}: {what} of {', '.join(names)}")
    return save_figure(fig, out, dpi=110, tight=True)


def _ellipse(ax, mean, cov, k: float, **kw) -> None:
    w, v = np.linalg.eigh(cov)
    a = np.linspace(0, 2 * np.pi, 200)
    pts = mean[:, None] + k * v @ (
        np.sqrt(np.maximum(w, 0))[:, None] * np.vstack([np.cos(a), np.sin(a)])
    )
    ax.plot(pts[0], pts[1], **kw)


def plot_pairs(
    result,
    out,
    *,
    title: str = "",
    max_points: int = 4000,
    units: Mapping[str, str] | None = None,
) -> Path:
    """Pairwise marginals: Laplace 1, 2, 3-std ellipses, with MCMC samples when available.
    ``units``: of the parameters, by name (a parameter without one is labelled ``[?]``)."""
    lap = result.laplace
    names = list(result.map.names)
    units = spec_units(result.spec, units)
    n = len(names)
    samples = None
    if result.exact_method == "mcmc" and result.exact is not None:
        samples = result.exact.samples
        if samples.shape[0] > max_points:
            idx = np.linspace(0, samples.shape[0] - 1, max_points).astype(int)
            samples = samples[idx]
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    cols = min(3, len(pairs)) or 1
    rows = math.ceil(len(pairs) / cols) or 1
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.6 * rows), squeeze=False)
    for ax, (i, j) in zip(axes.ravel(), pairs, strict=False):
        if samples is not None:
            ax.plot(samples[:, i], samples[:, j], ".", ms=1, color="0.6", label="MCMC")
        if lap.available:
            sub = lap.covariance[np.ix_([i, j], [i, j])]
            for k in (1, 2, 3):
                _ellipse(ax, lap.mean[[i, j]], sub, k, color="C0", lw=1)
        ax.plot(result.map.x[i], result.map.x[j], "C3+", ms=10)
        ax.set_xlabel(axis_label(names[i], unit_of(names[i], units)))
        ax.set_ylabel(axis_label(names[j], unit_of(names[j], units)))
        ax.set_title(f"{names[j]} against {names[i]}", fontsize=9)
    for ax in axes.ravel()[len(pairs) :]:
        ax.axis("off")
    fig.suptitle(
        title
        or f"{Path(result.spec.source).stem}: posterior pairs, Laplace 1-2-3 std ellipses"
        + (" and MCMC samples" if samples is not None else "")
    )
    fig.tight_layout()
    return save_figure(fig, out, dpi=110, tight=True)


def plot_entropy_curve(t: np.ndarray, curves: np.ndarray, etas, out, *, title: str = "") -> Path:
    """Information entropy of one measurement against its time, one line per η (Fig. 15)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for e, c in zip(etas, curves, strict=True):
        ax.plot(t, c, label=f"η = {e:g}")
    ax.set_xlabel(axis_label("measurement time t", "s"))
    ax.set_ylabel(axis_label("information entropy (Eq. 16)", _ENTROPY_UNIT))
    ax.legend(fontsize=8)
    ax.set_title(title or "information entropy of one measurement against its time")
    return save_figure(fig, out, dpi=110, tight=True)


def plot_design_sequence(designs: list, out, *, title: str = "") -> Path:
    """Optimal times for N = 1, 2, ... (left) and the minimum entropy against N (right),
    Fig. 17. ``designs`` is a list of (n, DesignResult) for one η."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    ns = [n for n, _ in designs]
    for n, res in designs:
        a1.plot(res.times, [n] * len(res.times), "o", color="C0", ms=4)
    a1.set_xlabel(axis_label("optimal measurement times", "s"))
    a1.set_ylabel(axis_label("number of measurements N", COUNT))
    a1.set_yticks(ns)
    a1.set_title("optimal times for each N", fontsize=10)
    a2.plot(ns, [res.entropy for _, res in designs], "o-")
    a2.set_xlabel(axis_label("number of measurements N", COUNT))
    a2.set_ylabel(axis_label("minimum information entropy", _ENTROPY_UNIT))
    a2.set_xticks(ns)
    a2.set_title("minimum entropy against N", fontsize=10)
    fig.suptitle(title or "optimal experimental design")
    fig.tight_layout()
    return save_figure(fig, out, dpi=110, tight=True)


def plot_design_vs_eta(etas, designs: list, out, *, title: str = "") -> Path:
    """Optimal times of N = 2 measurements against η (log scale), Fig. 16."""
    fig, ax = plt.subplots(figsize=(6, 4))
    T = np.array([res.times for res in designs])
    for k in range(T.shape[1]):
        ax.semilogx(etas, T[:, k], "o-", label=f"t{k + 1}")
    ax.set_xlabel(axis_label("η = σ2/σ1", DIMENSIONLESS))
    ax.set_ylabel(axis_label("optimal measurement time", "s"))
    ax.legend()
    ax.set_title(title or "optimal times of N = 2 measurements against η")
    return save_figure(fig, out, dpi=110, tight=True)


def write_inference_plots(
    result, folder, *, fit, units: Mapping[str, str] | None = None
) -> list[Path]:
    """``<spec>_fit.png`` (the curves ``fit``, :func:`workbench.analysis.inference.fit_curves`)
    and ``<spec>_posterior.png`` in ``folder``; ``units`` of the data columns and parameters by
    name (:func:`spec_units`)."""
    folder = Path(folder)
    stem = Path(result.spec.source).stem
    return [
        plot_fit(result, fit, folder / f"{stem}_fit.png", units=units),
        plot_posterior(result, folder / f"{stem}_posterior.png", units=units),
    ]


def write_design_plots(run, folder) -> list[Path]:
    """Entropy against the time of one measurement, the design sequence per η and, with two or
    more η and N = 2, the times against η."""
    folder = Path(folder)
    stem = Path(run.spec.source).stem
    label = ", ".join(run.parameters)
    written = [
        plot_entropy_curve(
            run.curve_t,
            run.curve,
            run.etas,
            folder / f"{stem}_entropy_vs_time.png",
            title=f"{stem}: entropy of one measurement against its time\nθ = ({label})",
        )
    ]
    for eta in run.etas:
        seq = [(n, res) for e, n, res in run.designs if e == eta]
        if seq:
            written.append(
                plot_design_sequence(
                    seq,
                    folder / f"{stem}_design_eta{eta:g}.png",
                    title=f"{stem}: optimal design for θ = ({label}), η = {eta:g}, "
                    f"λ = {run.correlation_length:g} s",
                )
            )
    two = [res for e, n, res in run.designs if n == 2]
    if len(run.etas) > 1 and len(two) == len(run.etas):
        written.append(
            plot_design_vs_eta(
                run.etas,
                two,
                folder / f"{stem}_times_vs_eta.png",
                title=f"{stem}: optimal times of N = 2 against η\n"
                f"θ = ({label}), λ = {run.correlation_length:g} s",
            )
        )
    return written
