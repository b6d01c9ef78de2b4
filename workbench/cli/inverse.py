"""`workbench inverse SPEC.yaml`: inverse simulation under uncertainty (Du 2013) from a spec.

Thin: the spec is read by :mod:`workbench.analysis.inverse`, the numerics are
:mod:`uncertainty.inverse`; this module wires them, prints, writes JSON and plots.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from uncertainty.errors import UncertaintyError

__all__ = ["add_inverse_parser", "build_problem", "run_spec", "report"]

EPILOG = """\
The spec (YAML, `kind: inverse`) names the model (a Python Model or function, or a scene with
output reductions run in PyBullet), the unknown inputs (with a starting guess), the known ones,
the uncertain ones (distributions: normal, lognormal, uniform, gamma, weibull, truncnormal; an
optional correlation matrix for the Nataf transform), the measured outputs (a value, or
{value, std} for a measurement with its own uncertainty) and the CDF points (a list or
{from, to, n}). See workbench/analysis/inverse.py for the full format.

For each CDF point x of an unknown, F(x) = Φ(±β) with β the distance from the origin of
standard normal space to the most probable point at which the measured outputs are reproduced
with the unknown equal to x (Du 2013, Eq. 13-14); means and standard deviations integrate the
percentiles (Eq. 19-22) by Gauss-Hermite quadrature.

--json prints {"variables": {NAME: {"cdf": [[x, F], ...], "mean": ..., "std": ...,
"model_calls": [calls per CDF point, ...], "converged": [...], "messages": [...]}, ...},
"model_calls_total": N} plus "mcs" with --mcs.

exit status: 0 all points converged; 1 some point did not converge (it is marked in the
output); 2 bad spec or measurements with no solution at the median.

examples:
  workbench inverse scenes/du_impact_analytic.yaml --mcs 100000 --plot du_cdf.png
  workbench inverse scenes/du_impact_analytic.yaml --set dA=0.6 --json
  workbench inverse scenes/du_impact_pybullet.yaml -o du_pybullet.json
"""


def add_inverse_parser(sub) -> None:
    iv = sub.add_parser(
        "inverse",
        help="inverse simulation under uncertainty: CDFs of unknown inputs (Du 2013 FORM)",
        description=(
            "Identify unknown model inputs from measured outputs when other inputs are "
            "uncertain: their CDFs, means and standard deviations by the single-loop FORM "
            "method of Du (2013), optionally checked by Monte Carlo."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    iv.add_argument("spec", help="inverse spec (YAML with kind: inverse)")
    iv.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a spec parameter (repeatable); values are read as YAML",
    )
    iv.add_argument(
        "--mcs", type=int, default=0, metavar="N", help="also run N Monte Carlo samples"
    )
    iv.add_argument("--seed", type=int, default=0, help="seed of the Monte Carlo samples (0)")
    iv.add_argument(
        "--method",
        choices=("single-loop", "double-loop"),
        default=None,
        help="Du's single loop (default) or the double loop of Eq. 10/12 for comparison",
    )
    iv.add_argument("--sorm", action="store_true", help="add Breitung's SORM value per point")
    iv.add_argument("--json", action="store_true", help="print the results as JSON")
    iv.add_argument("-o", "--output", help="write the JSON results to this file")
    iv.add_argument("--plot", metavar="FIG.png", help="plot the CDFs (and the MCS) to a PNG")
    iv.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    iv.set_defaults(func=cmd_inverse)


def build_problem(spec):
    """The :class:`~uncertainty.inverse.InverseProblem` of a loaded spec (model built)."""
    from scipy import stats

    from uncertainty.distributions import IndependentTransform, NatafTransform
    from uncertainty.inverse import InverseProblem
    from workbench.analysis.inverse import build_model

    model = build_model(spec)
    try:
        if spec.correlation is not None:
            transform = NatafTransform(spec.marginals, spec.correlation)
        else:
            transform = IndependentTransform(spec.marginals)
    except UncertaintyError as exc:
        raise spec.error(("correlation",), str(exc)) from None
    stds = [spec.measured_std[name] for name in model.output_names]
    errors = None
    if any(s > 0 for s in stds):
        if not all(s > 0 for s in stds):
            raise spec.error(
                ("measured",),
                "give a std for every measured output or for none (the measurement errors are "
                "independent normals, one per output)",
            )
        errors = IndependentTransform([stats.norm(0.0, s) for s in stds])
    try:
        problem = InverseProblem(
            model=model,
            outputs=spec.measured,
            unknowns=spec.unknowns,
            uncertain=spec.uncertain,
            transform=transform,
            known=spec.known,
            output_errors=errors,
            guess=spec.guess,
        )
    except UncertaintyError as exc:
        raise spec.error((exc.field,) if getattr(exc, "field", "") else (), str(exc)) from None
    return problem, model


def run_spec(spec, *, method=None, sorm=None, mcs=0, seed=0, log=None):
    """Run the analyses a spec asks for; returns ``(form_result, mcs_result, seconds)``."""
    from uncertainty.inverse import double_loop_form, inverse_form, inverse_monte_carlo

    problem, _ = build_problem(spec)
    method = method or ("double-loop" if spec.options.double_loop else "single-loop")
    sorm = spec.options.sorm if sorm is None else sorm
    points = spec.cdf_points or {name: np.array([]) for name in spec.unknowns}
    t0 = time.perf_counter()
    try:
        limits = {} if spec.options.max_iter is None else {"max_iter": spec.options.max_iter}
        if method == "double-loop":
            result = double_loop_form(problem, points, **limits)
        else:
            result = inverse_form(
                problem, points, moments=spec.options.moments, sorm=sorm, **limits
            )
    except UncertaintyError as exc:
        field = getattr(exc, "field", "") or ""
        text = str(exc).removeprefix(f"{field}: ") if field else str(exc)
        field = "measured" if field in ("outputs", "") else field
        raise spec.error((field,), text) from None
    form_seconds = time.perf_counter() - t0
    if log:
        log(f"FORM: {result.model_calls} model calls in {form_seconds:.1f} s")
    mc = None
    if mcs:
        t1 = time.perf_counter()
        mc = inverse_monte_carlo(problem, mcs, np.random.default_rng(seed), points=points)
        if log:
            log(
                f"MCS: {mc.n_solved} of {mc.n_samples} samples solved, {mc.model_calls} model "
                f"calls in {time.perf_counter() - t1:.1f} s"
            )
    return result, mc, form_seconds


def _num(v: float):
    return None if v is None or not math.isfinite(v) else float(v)


def report(result, mc=None, seconds: float | None = None) -> dict:
    """The JSON-able report of ``workbench inverse --json``."""
    out: dict = {"variables": {}}
    for name, var in result.variables.items():
        out["variables"][name] = {
            "cdf": [[float(p.x), _num(p.F)] for p in var.points],
            "mean": _num(var.mean),
            "std": _num(var.std),
            "model_calls": [int(p.model_calls) for p in var.points],
            "converged": [bool(p.converged) for p in var.points],
            "beta": [_num(p.beta) for p in var.points],
            "side": [p.side for p in var.points],
            "messages": [p.message for p in var.points],
            "F_sorm": [_num(p.F_sorm) for p in var.points],
            "moments_converged": all(p.converged for p in var.percentiles),
            "quadrature": var.quadrature,
            "method": var.method,
        }
    out["median"] = {k: float(v) for k, v in result.median.items()}
    out["model_calls_total"] = int(result.model_calls)
    out["setup_calls"] = int(result.setup_calls)
    out["jacobian"] = result.jacobian
    if seconds is not None:
        out["seconds"] = round(seconds, 3)
    if mc is not None:
        out["mcs"] = {
            "n_samples": mc.n_samples,
            "n_solved": mc.n_solved,
            "failures": dict(mc.failures),
            "model_calls": int(mc.model_calls),
            "variables": {
                name: {
                    "cdf": [[float(x), float(F)] for x, F in zip(v.x, v.F, strict=True)],
                    "cdf_se": [float(s) for s in v.F_se],
                    "mean": _num(v.mean),
                    "mean_se": _num(v.mean_se),
                    "std": _num(v.std),
                    "std_se": _num(v.std_se),
                }
                for name, v in mc.variables.items()
            },
        }
    return out


def format_report(rep: dict) -> str:
    """A human-readable table of a report."""
    lines = []
    mcs = rep.get("mcs", {}).get("variables", {})
    for name, v in rep["variables"].items():
        m = mcs.get(name)
        head = f"{name}: CDF by FORM" + (" (MCS ± 1 SE)" if m else "")
        lines.append(head)
        lines.append(f"  {'x':>10} {'F':>8} {'beta':>7} {'calls':>6}" + ("  MCS" if m else ""))
        for k, (x, F) in enumerate(v["cdf"]):
            flag = "" if v["converged"][k] else "  NOT CONVERGED: " + v["messages"][k]
            Ft = "nan" if F is None else f"{F:8.4f}"
            beta = v["beta"][k]
            bt = "nan" if beta is None else f"{beta:7.3f}"
            extra = ""
            if m:
                extra = f"  {m['cdf'][k][1]:.4f} ± {m['cdf_se'][k]:.4f}"
            lines.append(f"  {x:>10.4g} {Ft:>8} {bt:>7} {v['model_calls'][k]:>6}{extra}{flag}")
        calls = v["model_calls"]
        if calls:
            lines.append(f"  model calls per point: mean {np.mean(calls):.1f}, max {max(calls)}")
        if v["mean"] is not None:
            mline = f"  mean {v['mean']:.4f}, std {v['std']:.4f} ({v['quadrature']})"
            if m:
                mline += (
                    f"; MCS mean {m['mean']:.4f} ± {m['mean_se']:.4f}, "
                    f"std {m['std']:.4f} ± {m['std_se']:.4f}"
                )
            lines.append(mline)
    lines.append(f"model calls in all: {rep['model_calls_total']} ({rep['jacobian']})")
    if "mcs" in rep:
        mc = rep["mcs"]
        lines.append(
            f"MCS: {mc['n_solved']} of {mc['n_samples']} samples solved"
            + (f", failures {mc['failures']}" if mc["failures"] else "")
        )
    return "\n".join(lines)


def plot_cdfs(rep: dict, path: str | Path, title: str = "") -> Path:
    """One panel per unknown: the FORM CDF points (non-converged ones marked) and the MCS."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
        ax.set_xlabel(name)
        ax.set_ylabel(f"F({name})")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    if title:
        fig.suptitle(title)
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def cmd_inverse(args) -> int:
    from workbench.scene.catalog import find_spec
    from workbench.analysis.inverse import load_inverse_spec
    from workbench.scene.loader import parse_override

    def log(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    try:
        spec = load_inverse_spec(find_spec(args.spec), dict(parse_override(s) for s in args.set))
        result, mc, seconds = run_spec(
            spec,
            method=args.method,
            sorm=True if args.sorm else None,
            mcs=args.mcs,
            seed=args.seed,
            log=log,
        )
    except UncertaintyError as exc:  # the spec's fault, found while solving
        print(f"workbench inverse: {args.spec}: {exc}", file=sys.stderr)
        return 2
    rep = report(result, mc, seconds)
    if args.output:
        out = Path(args.output)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps(rep, indent=1) + "\n", encoding="utf-8")
        tmp.replace(out)
        log(f"wrote {out}")
    if args.plot:
        plot_cdfs(rep, args.plot, spec.description)
        log(f"wrote {args.plot}")
    if args.json:
        print(json.dumps(rep, indent=1))
    else:
        print(format_report(rep))
    converged = all(all(v["converged"]) for v in rep["variables"].values())
    return 0 if converged else 1
