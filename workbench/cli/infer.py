"""``workbench infer`` and ``workbench design``: Bayesian parameter estimation and optimal
measurement times from one inference spec (the work is :func:`workbench.infer` and
:func:`workbench.design`)."""

from __future__ import annotations

import argparse
import sys

from workbench.cli.common import (
    add_report_arguments,
    add_spec_arguments,
    check_output,
    check_seed,
    hold_output_lock,
    parse_overrides,
    print_written,
    progress_bar,
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
    """``workbench infer`` (the work is :func:`workbench.infer`)."""
    from workbench.tasks.inference import infer

    _check_report_arguments(args)
    with progress_bar(0, "MCMC steps") as advance:
        result = infer(
            find_spec(args.spec), set=dict(parse_overrides(args)), exact=args.exact,
            seed=args.seed, progress=advance,
        )  # fmt: skip
    _report(args, result)
    if not result.converged:
        print(f"workbench infer: {result.spec.source}: {'; '.join(result.problems())}",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


def cmd_design(args) -> int:
    """``workbench design`` (the work is :func:`workbench.design`)."""
    from workbench.tasks.inference import design

    _check_report_arguments(args)
    path = find_spec(args.spec)
    with progress_bar(0, "designs") as advance:
        result = design(
            path, set=dict(parse_overrides(args)), eta=args.eta, n=args.n, param=args.param,
            lam=args.lam, seed=args.seed, progress=advance,
        )  # fmt: skip
    _report(args, result)
    if not result.converged:
        print(f"workbench design: {result.run.spec.source}: some designs were not confirmed",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


def _report(args, result) -> None:
    """The report to ``-o`` (``result.save``) and stdout, and the figures to ``--plot``
    (matplotlib takes half a second to import: only when asked)."""
    if args.output:
        result.save(args.output)
    print(result.text.rstrip("\n") if args.json else result.format())
    if args.plot:
        print_written(args, result.plot(args.plot))


def _check_report_arguments(args) -> None:
    """--seed, -o and --plot, before any work."""
    check_seed(args.seed)
    check_output(args.output)
    check_output(args.plot, folder=True)
    hold_output_lock(args, args.output, args.plot)
