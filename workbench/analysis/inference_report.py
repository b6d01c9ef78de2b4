"""Reports of ``workbench infer`` and ``workbench design``: the JSON documents (``--json``,
``-o``) and their human-readable summaries, from the results of
:mod:`workbench.analysis.inference`. See docs/architecture.md.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["inference_report", "format_inference", "design_report", "format_design"]


def _named(names, values) -> dict[str, float] | None:
    if values is None:
        return None
    return {n: float(v) for n, v in zip(names, values, strict=True)}


def _matrix(a) -> list | None:
    return None if a is None else [[float(v) for v in row] for row in np.asarray(a)]


def inference_report(result) -> dict:
    """The JSON document of ``workbench infer --json`` for an
    :class:`~workbench.analysis.inference.InferenceResult`."""
    spec, mp, lap = result.spec, result.map, result.laplace
    names = list(mp.names)
    out: dict[str, Any] = {
        "spec": spec.source,
        "description": spec.description,
        "parameters": spec.parameters,
        "model": spec.model_label(),
        "data": {
            "file": str(spec.data_file),
            "x": spec.x_name,
            "y": spec.y_name,
            "rows": [int(i) for i in spec.rows],
            "n": int(spec.x.size),
        },
        "sigma": spec.sigma if spec.sigma is not None else "inferred",
        "map": _named(names, mp.x),
        "map_info": {
            "neg_log_posterior": mp.value,
            "gradient_norm": mp.gradient_norm,
            "newton_decrement": None if math.isnan(mp.newton_decrement) else mp.newton_decrement,
            "converged": mp.converged,
            "at_bound": list(mp.at_bound),
            "message": mp.message,
            "starts": mp.n_starts,
            "local_optima": [{"x": _named(names, x), "neg_log_posterior": v} for x, v in mp.optima],
            "model_evaluations": mp.evaluations.get("evaluations"),
        },
        "laplace": {
            "names": names,
            "std": _named(names, lap.std),
            "corr": _matrix(lap.corr),
            "covariance": _matrix(lap.covariance),
            "hessian_eigenvalues": [float(v) for v in lap.eigenvalues],
            "hessian_eigenvectors": _matrix(lap.eigenvectors),
            "positive_definite": lap.positive_definite,
            "singular": lap.singular,
            "message": lap.message,
        },
    }
    ex = result.exact
    if result.exact_method == "grid" and ex is not None:
        out["exact"] = {
            "method": "grid",
            "mean": _named(names, ex.mean),
            "std": _named(names, ex.std),
            "corr": _matrix(ex.covariance / np.outer(ex.std, ex.std)),
            "points": [int(a.size) for a in ex.axes],
            "ranges": {n: [float(a[0]), float(a[-1])] for n, a in zip(names, ex.axes, strict=True)},
            "edge_density": ex.edge_density,
        }
    elif result.exact_method == "mcmc" and ex is not None:
        out["exact"] = {
            "method": "mcmc",
            "mean": _named(names, ex.mean),
            "std": _named(names, ex.std),
            "se_mean": _named(names, ex.se_mean),
            "se_std": _named(names, ex.se_std),
            "tau": _named(names, ex.tau),
            "n_eff": _named(names, ex.n_eff),
            "walkers": int(ex.chain.shape[1]),
            "steps": int(ex.chain.shape[0]),
            "burn": int(ex.burn),
            "acceptance": ex.acceptance,
            "converged": ex.converged,
            "seed": ex.seed,
            "message": ex.message,
        }
    out["converged"] = result.converged
    out["problems"] = result.problems()
    return out


def format_inference(report: dict) -> str:
    """Human-readable summary of :func:`inference_report`."""
    names = report["laplace"]["names"]
    info = report["map_info"]
    sig = report["sigma"]
    params = ", ".join(f"{k}={v}" for k, v in report["parameters"].items())
    lines = [
        f"{report['spec']}" + (f" ({params})" if params else "") + f": {report['model']}",
        f"  data: {report['data']['n']} points of {report['data']['y']} against "
        f"{report['data']['x']}; sigma "
        + ("inferred" if sig == "inferred" else f"{sig:g} (fixed)"),
        f"  MAP: {'converged' if info['converged'] else 'NOT converged'} ({info['message']}); "
        f"|grad L| = {info['gradient_norm']:.2e}, {info['model_evaluations']} model evaluations",
    ]
    std = report["laplace"]["std"]
    ex = report.get("exact")
    head = f"    {'':<8} {'MAP':>12} {'Laplace std':>12}"
    if ex:
        head += f" {ex['method'] + ' mean':>12} {ex['method'] + ' std':>12}"
    lines.append(head)
    for n in names:
        row = f"    {n:<8} {report['map'][n]:>12.6g} "
        row += f"{std[n]:>12.6g}" if std else f"{'-':>12}"
        if ex:
            row += f" {ex['mean'][n]:>12.6g} {ex['std'][n]:>12.6g}"
        lines.append(row)
    corr = report["laplace"]["corr"]
    if corr is not None and len(names) > 1:
        lines.append("  Laplace correlation:")
        lines.append("    " + " " * 8 + "".join(f" {n:>9}" for n in names))
        for n, row in zip(names, corr, strict=True):
            lines.append(f"    {n:<8}" + "".join(f" {v:>9.4f}" for v in row))
    if not report["laplace"]["std"]:
        lines.append(f"  Laplace: {report['laplace']['message']}")
    if ex and ex["method"] == "mcmc":
        tau = ", ".join(f"{k} {v:.1f}" for k, v in ex["tau"].items())
        lines.append(f"  MCMC: {ex['message']}; tau: {tau}; acceptance {ex['acceptance']:.2f}")
    return "\n".join(lines)


def design_report(run) -> dict:
    """The JSON document of ``workbench design --json`` for a
    :class:`~workbench.analysis.inference.DesignRun`."""
    return {
        "spec": run.spec.source,
        "parameters": list(run.parameters),
        "nominal": run.nominal,
        "interval": list(run.interval),
        "correlation_length": run.correlation_length,
        "sigma1": run.sigma1,
        "designs": [
            {
                "eta": eta,
                "n": n,
                "times": [float(v) for v in res.times],
                "entropy": res.entropy,
                "converged": res.converged,
                "message": res.message,
                "evaluations": res.evaluations,
            }
            for eta, n, res in run.designs
        ],
        "converged": all(res.converged for _, _, res in run.designs),
    }


def format_design(report: dict) -> str:
    """Human-readable table of :func:`design_report`."""
    lines = [
        f"{report['spec']}: optimal measurement times for {', '.join(report['parameters'])} on "
        f"[{report['interval'][0]:g}, {report['interval'][1]:g}] s, lambda = "
        f"{report['correlation_length']:g} s (information entropy, Eq. 16)",
        f"  {'eta':>8} {'N':>3} {'entropy':>10}  times (s)",
    ]
    for d in report["designs"]:
        flag = "" if d["converged"] else f"   [{d['message']}]"
        times = " ".join(f"{t:.3f}" for t in d["times"])
        lines.append(f"  {d['eta']:>8g} {d['n']:>3d} {d['entropy']:>10.5f}  {times}{flag}")
    return "\n".join(lines)
