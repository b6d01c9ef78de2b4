"""`workbench inverse SPEC.yaml` from an inverse spec: the driver and its reports.

The spec is read and checked by :mod:`workbench.analysis.inverse_spec` (its format is described
there), its model built by :func:`workbench.analysis.models.build_model`, and the numerics are
:mod:`uncertainty.inverse` (Du 2013's single-loop FORM, the double loop, Monte Carlo). This
module assembles the :class:`~uncertainty.inverse.InverseProblem`, runs the analyses and turns
the results into the JSON report and its text table; the command itself is
:mod:`workbench.cli.inverse`, the figure :mod:`workbench.figures.inverse`. See
docs/architecture.md.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
from scipy import stats

from uncertainty.distributions import IndependentTransform, NatafTransform
from uncertainty.errors import UncertaintyError
from uncertainty.inverse import (
    InverseProblem,
    double_loop_form,
    inverse_form,
    inverse_monte_carlo,
)
from workbench.analysis.inverse_spec import InverseSpec, is_inverse_spec, load_inverse_spec
from workbench.analysis.models import build_model

__all__ = [
    # the spec (workbench.analysis.inverse_spec), importable from here as before
    "InverseSpec",
    "is_inverse_spec",
    "load_inverse_spec",
    "build_model",
    # the driver and its reports
    "build_problem",
    "run_spec",
    "report",
    "format_report",
]


def build_problem(spec):
    """The :class:`~uncertainty.inverse.InverseProblem` of a loaded spec (model built)."""
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


class _CountedModel:
    """A model that reports each evaluation to ``progress(calls, 0)`` (a count without a known
    end: FORM stops when it converges); every other attribute is the model's own."""

    def __init__(self, model, progress):
        self._model, self._progress, self._calls = model, progress, 0

    def __getattr__(self, name):
        return getattr(self._model, name)

    def _tick(self, n: int) -> None:
        self._calls += n
        self._progress(self._calls, 0)

    def evaluate(self, x):
        out = self._model.evaluate(x)
        self._tick(1)
        return out

    def evaluate_many(self, X):
        out = self._model.evaluate_many(X)
        self._tick(len(X))
        return out


def run_spec(spec, *, method=None, sorm=None, mcs=0, seed=0, log=None, progress=None):
    """Run the analyses a spec asks for; returns ``(form_result, mcs_result, seconds)``.

    ``progress(calls, 0)``, if given, is called after each evaluation of the model (PyBullet runs
    for a scene model), so that a long solve shows that it advances."""
    problem, _ = build_problem(spec)
    if progress is not None:
        problem = dataclasses.replace(problem, model=_CountedModel(problem.model, progress))
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
