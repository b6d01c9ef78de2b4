"""Inverse simulation under uncertainty (Du 2013): model calls per CDF point, wall time, accuracy.

Rows (the 42 CDF points of Tables 1-2 of the paper plus the two moments, 9 Gauss-Hermite
percentiles each):

- ``single loop``: :func:`uncertainty.inverse.inverse_form` with the analytic model, its analytic
  Jacobian or finite differences (black box), Broyden updates (default) or a fresh Jacobian at every
  iterate (``newton``);
- ``double loop``: :func:`uncertainty.inverse.double_loop_form` (Eq. 10, 12 of the paper), for
  comparison;
- ``PyBullet``: the same problem with PyBullet in the loop (``specs/du_impact_pybullet.yaml``,
  ``scenes/du_impact.py``): every model call is one PyBullet run;
- ``MCS 1e6``: :func:`uncertainty.inverse.inverse_monte_carlo` with 10⁶ samples (seed 2013).

Columns: mean and max model calls per CDF point (vA0 / vB0), total calls including the median
solve and the moments, wall time, and the largest |F − F_paper| against the "New method" column
(and, for the MCS, against the paper's MCS column in units of our standard error).

A second table is the OpenTURNS peer check of FORM (``uncertainty.form``; the acceptance problems
linear R − S, lognormal R − S and x1³ + x2³ − 18): β and model calls side by side (OpenTURNS's
gradients by its own finite differences). Skipped when OpenTURNS is not installed (it is a test
extra).

Paper: 25-40 model calls per point (Sec. 4). Target of the issue: ≤ 15 on average (stretch ≤ 12).

Usage: ``python benchmarks/inverse.py [--no-pybullet] [--mcs N]``
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from uncertainty.examples import du_impact as du  # noqa: E402
from uncertainty.inverse import double_loop_form, inverse_form, inverse_monte_carlo  # noqa: E402

POINTS = {"vA0": du.TABLE1["x"], "vB0": du.TABLE2["x"]}
TABLES = {"vA0": du.TABLE1, "vB0": du.TABLE2}


def _row(label, result, seconds):
    calls = {n: result[n].calls for n in TABLES}
    err = max(np.max(np.abs(result[n].F - TABLES[n]["new_method"])) for n in TABLES)
    ok = all(result[n].converged for n in TABLES)
    return (
        f"| {label} | {calls['vA0'].mean():.1f} / {calls['vB0'].mean():.1f} | "
        f"{calls['vA0'].max()} / {calls['vB0'].max()} | {result.model_calls} | {seconds:.2f} | "
        f"{err:.1e} | {'yes' if ok else 'NO'} |"
    )


def du_table(pybullet: bool) -> list[str]:
    lines = [
        "| method | calls/point mean (vA0 / vB0) | max | total calls | wall s | "
        "max abs(F − paper) | all converged |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for analytic in (True, False):
        for jac in ("broyden", "newton"):
            t = time.perf_counter()
            r = inverse_form(du.inverse_problem(analytic_jacobian=analytic), POINTS, jacobian=jac)
            label = f"single loop, {'analytic Jacobian' if analytic else 'finite differences'}"
            lines.append(_row(f"{label}, {jac}", r, time.perf_counter() - t))
    for analytic in (True, False):
        t = time.perf_counter()
        r = double_loop_form(du.inverse_problem(analytic_jacobian=analytic), POINTS)
        label = f"double loop, {'analytic Jacobian' if analytic else 'finite differences'}"
        lines.append(_row(label, r, time.perf_counter() - t))
    if pybullet:
        from workbench.analysis.inverse import build_problem, load_inverse_spec

        spec = load_inverse_spec(REPO / "specs" / "du_impact_pybullet.yaml")
        problem, model = build_problem(spec)
        t = time.perf_counter()
        r = inverse_form(problem, POINTS)
        lines.append(
            _row("PyBullet scene, finite differences, broyden", r, time.perf_counter() - t)
        )
        model.close()
    return lines


def mcs_table(n: int) -> list[str]:
    t = time.perf_counter()
    mc = inverse_monte_carlo(du.inverse_problem(), n, np.random.default_rng(2013), points=POINTS)
    seconds = time.perf_counter() - t
    lines = [
        f"MCS: {mc.n_solved} of {n} samples solved in {seconds:.1f} s, failures {mc.failures}",
        "",
        "| unknown | max abs(F − paper New method) | max abs(F − paper MCS) / SE | "
        "mean ± SE (exact) | std ± SE (exact) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, table in TABLES.items():
        v = mc[name]
        d_new = np.max(np.abs(v.F - table["new_method"]))
        z_mcs = np.max(np.abs(v.F - table["mcs"]) / np.maximum(v.F_se, 1.0 / n))
        lines.append(
            f"| {name} | {d_new:.1e} | {z_mcs:.1f} | {v.mean:.4f} ± {v.mean_se:.4f} "
            f"({du.EXACT_MEAN[name]:.4f}) | {v.std:.4f} ± {v.std_se:.4f} "
            f"({du.EXACT_STD[name]:.4f}) |"
        )
    return lines


def openturns_table() -> list[str]:
    try:
        import openturns as ot
    except ImportError:
        return ["(OpenTURNS not installed: pip install '.[test]')"]
    from uncertainty.distributions import IndependentTransform, make_distribution
    from uncertainty.form import METHODS, form

    ln_r = make_distribution({"dist": "lognormal", "mean": 200.0, "std": 20.0})
    ln_s = make_distribution({"dist": "lognormal", "mean": 100.0, "std": 30.0})
    problems = {
        "linear R − S": (
            [stats.norm(200, 20), stats.norm(100, 30)],
            [ot.Normal(200, 20), ot.Normal(100, 30)],
            lambda x: x[0] - x[1],
            100 / math.hypot(20, 30),
        ),
        "lognormal R − S": (
            [ln_r, ln_s],
            [ot.LogNormal(math.log(d.kwds["scale"]), d.kwds["s"]) for d in (ln_r, ln_s)],
            lambda x: x[0] - x[1],
            (math.log(ln_r.kwds["scale"]) - math.log(ln_s.kwds["scale"]))
            / math.hypot(ln_r.kwds["s"], ln_s.kwds["s"]),
        ),
        "x1³ + x2³ − 18": (
            [stats.norm(10, 5), stats.norm(10, 5)],
            [ot.Normal(10, 5), ot.Normal(10, 5)],
            lambda x: x[0] ** 3 + x[1] ** 3 - 18.0,
            math.sqrt(2.0) * (10.0 - 9.0 ** (1.0 / 3.0)) / 5.0,
        ),
    }
    lines = ["| problem | exact β | solver | β − exact | model calls |", "|---|---:|---|---:|---:|"]
    for name, (ours, theirs, g, exact) in problems.items():
        for m in METHODS:
            r = form(g, IndependentTransform(ours), method=m)
            lines.append(
                f"| {name} | {exact:.6f} | ours {m} | {r.beta - exact:+.1e} | {r.model_calls} |"
            )
        for solver_class in (ot.AbdoRackwitz, ot.SQP, ot.Cobyla):
            calls = [0]

            def counted(x, g=g, calls=calls):
                calls[0] += 1
                return [g(np.asarray(x))]

            dist = ot.JointDistribution(theirs)
            fun = ot.PythonFunction(2, 1, counted)
            event = ot.ThresholdEvent(
                ot.CompositeRandomVector(fun, ot.RandomVector(dist)), ot.Less(), 0.0
            )
            solver = solver_class()
            solver.setStartingPoint(dist.getMean())
            algo = ot.FORM(solver, event)
            algo.run()
            beta = algo.getResult().getHasoferReliabilityIndex()
            lines.append(
                f"| {name} | {exact:.6f} | OpenTURNS {solver_class.__name__} | "
                f"{beta - exact:+.1e} | {calls[0]} |"
            )
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-pybullet", action="store_true", help="skip the PyBullet row")
    ap.add_argument("--mcs", type=int, default=1_000_000, help="Monte Carlo samples (0: skip)")
    args = ap.parse_args(argv)
    print("\n".join(du_table(not args.no_pybullet)))
    print()
    if args.mcs:
        print("\n".join(mcs_table(args.mcs)))
        print()
    print("\n".join(openturns_table()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
