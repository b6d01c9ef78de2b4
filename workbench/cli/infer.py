"""``workbench infer`` and ``workbench design``: Bayesian parameter estimation and optimal
measurement times from one inference spec (the work is :mod:`workbench.analysis.inference`)."""

from __future__ import annotations

import argparse
import sys

from workbench.analysis.inference import (
    design_report,
    fit_curves,
    format_design,
    format_inference,
    inference_report,
    load_spec,
    parse_counts,
    run_design,
    run_inference,
)
from workbench.cli.common import (
    add_report_arguments,
    add_spec_arguments,
    check_output,
    check_seed,
    hold_output_lock,
    parse_overrides,
    print_written,
    progress_bar,
    write_report,
)
from workbench.scene.catalog import find_spec

__all__ = ["add_infer_parser", "add_design_parser", "cmd_infer", "cmd_design"]

INFER_DESCRIPTION = """\
Infer model parameters from data as SPEC (a YAML file with kind: inference) describes: the most
probable value (MAP), the Laplace (Gaussian) posterior with standard deviations and correlations,
and the exact posterior on a grid (1-2 parameters) or by MCMC (emcee). Exit status 1 when the MAP
did not converge, the Hessian is singular or MCMC did not converge (the results are still
printed)."""

DESIGN_DESCRIPTION = """\
Optimal experimental design: the measurement times in the spec's design interval that minimize
the information entropy of the asymptotic posterior, with model errors correlated in time
(exp(-|t_i - t_j|/lambda)), for each ratio eta = sigma2/sigma1 and number of measurements N. Exit
status 1 when a global optimization was not confirmed by two restarts."""

INFER_EPILOG = """\
examples:
  workbench infer falling_object_example1 --set case=3
  workbench infer falling_object_example2 --json -o example2.json --plot figures/
  workbench infer falling_object_example3 --exact mcmc --seed 1
  workbench infer falling_object_example1 --set model=pybullet     PyBullet in the loop
"""

DESIGN_EPILOG = """\
examples:
  workbench design falling_object_example1 --n 1..4 --plot figures/
  workbench design falling_object_example2 --eta 0.1 1 10 --n 2 --lambda 2 --json
"""


def add_infer_parser(sub) -> None:
    inf = sub.add_parser(
        "infer",
        description=INFER_DESCRIPTION,
        epilog=INFER_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_spec_arguments(
        inf,
        "inference spec (YAML with kind: inference)",
        "override a spec parameter (repeatable), e.g. case=3",
    )
    inf.add_argument(
        "--exact",
        choices=("auto", "grid", "mcmc", "none"),
        help="exact posterior: grid (1-2 parameters), mcmc (emcee) or none (default: the "
        "spec's; auto = grid for 1-2 parameters of a function model)",
    )
    inf.add_argument("--seed", type=int, help="MCMC seed (default: the spec's exact.seed)")
    add_report_arguments(inf, "write the fit and posterior figures to DIR")
    inf.set_defaults(func=cmd_infer)


def add_design_parser(sub) -> None:
    de = sub.add_parser(
        "design",
        description=DESIGN_DESCRIPTION,
        epilog=DESIGN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_spec_arguments(
        de, "inference spec with a design section", "override a spec parameter (repeatable)"
    )
    de.add_argument(
        "--eta",
        type=float,
        nargs="+",
        metavar="ETA",
        help="ratios sigma2/sigma1 of model to measurement error (default: the spec's)",
    )
    de.add_argument(
        "--n", metavar="N", help="numbers of measurements: 3, 1..10 or 1,2,5 (default: the spec's)"
    )
    de.add_argument(
        "--param",
        action="append",
        metavar="NAME",
        help="design for these parameters only (repeatable; default: the spec's)",
    )
    de.add_argument(
        "--lambda", dest="lam", type=float, metavar="S", help="model-error correlation length, s"
    )
    de.add_argument("--seed", type=int, help="optimizer seed (default: the spec's design.seed)")
    add_report_arguments(de, "write the design figures to DIR")
    de.set_defaults(func=cmd_design)


def cmd_infer(args) -> int:
    """``workbench infer`` (the work is :func:`workbench.analysis.inference.run_inference`)."""
    _check_report_arguments(args)
    spec = load_spec(find_spec(args.spec), dict(parse_overrides(args)))
    with progress_bar(0, "MCMC steps") as advance:
        result = run_inference(spec, exact=args.exact, seed=args.seed, progress=advance)
    write_report(args, inference_report(result), format_inference)
    if args.plot:
        # matplotlib takes half a second to import: only when --plot asks for figures
        from workbench.figures.inference import write_inference_plots

        written = write_inference_plots(result, args.plot, fit=fit_curves(result), units=spec.units)
        print_written(args, written)
    if not result.converged:
        print(f"workbench infer: {spec.source}: {'; '.join(result.problems())}", file=sys.stderr)
        return 1
    return 0


def cmd_design(args) -> int:
    """``workbench design`` (the work is :func:`workbench.analysis.inference.run_design`)."""
    _check_report_arguments(args)
    spec = load_spec(find_spec(args.spec), dict(parse_overrides(args)))
    with progress_bar(0, "designs") as advance:
        run = run_design(
            spec,
            etas=args.eta,
            counts=None if args.n is None else parse_counts(args.n),
            parameters=args.param,
            correlation_length=args.lam,
            seed=args.seed,
            progress=advance,
        )
    report = design_report(run)
    write_report(args, report, format_design)
    if args.plot:
        # matplotlib takes half a second to import: only when --plot asks for figures. The
        # design figures' axes are times (s), entropies (nat), N and η: no spec unit is needed.
        from workbench.figures.inference import write_design_plots

        print_written(args, write_design_plots(run, args.plot))
    if not report["converged"]:
        print(f"workbench design: {spec.source}: some designs were not confirmed", file=sys.stderr)
        return 1
    return 0


def _check_report_arguments(args) -> None:
    """--seed, -o and --plot, before any work."""
    check_seed(args.seed)
    check_output(args.output)
    check_output(args.plot, folder=True)
    hold_output_lock(args, args.output, args.plot)
