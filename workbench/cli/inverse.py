"""`workbench inverse SPEC.yaml`: inverse simulation under uncertainty (Du 2013) from a spec.

Thin: the parser and the command. The spec is read by :mod:`workbench.analysis.inverse_spec`,
run and reported by :mod:`workbench.analysis.inverse` (numerics: :mod:`uncertainty.inverse`),
plotted by :mod:`workbench.figures.inverse`; this module wires them, prints and writes files.
"""

from __future__ import annotations

import argparse
import sys

from uncertainty.errors import UncertaintyError
from workbench.cli.common import (
    add_spec_arguments,
    check_output,
    hold_output_lock,
    parse_overrides,
    progress_bar,
)
from workbench.scene.catalog import find_spec

__all__ = ["add_inverse_parser", "cmd_inverse"]

EPILOG = """\
The spec (YAML, `kind: inverse`) names the model (a Python Model or function, or a scene with
output reductions run in PyBullet), the unknown inputs (with a starting guess), the known ones,
the uncertain ones (distributions: normal, lognormal, uniform, gamma, weibull, truncnormal; an
optional correlation matrix for the Nataf transform), the measured outputs (a value, or
{value, std} for a measurement with its own uncertainty) and the CDF points (a list or
{from, to, n}). docs/inverse.md ("The spec") describes the full format.

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
  workbench inverse specs/du_impact_analytic.yaml --mcs 100000 --plot du_cdf.png
  workbench inverse specs/du_impact_analytic.yaml --set dA=0.6 --json
  workbench inverse specs/du_impact_pybullet.yaml -o du_pybullet.json
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
    add_spec_arguments(
        iv,
        "inverse spec (YAML with kind: inverse)",
        "override a spec parameter (repeatable); values are read as YAML",
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


def cmd_inverse(args) -> int:
    """``workbench inverse`` (the work is :func:`workbench.inverse`)."""
    from workbench.tasks.inverse import inverse

    check_output(args.output)
    check_output(args.plot)
    hold_output_lock(args, args.output, args.plot)
    try:
        with progress_bar(0, "model calls", quiet=args.quiet) as advance:
            result = inverse(
                find_spec(args.spec), set=dict(parse_overrides(args)), mcs=args.mcs,
                seed=args.seed, method=args.method, sorm=args.sorm, progress=advance,
            )  # fmt: skip
    except UncertaintyError as exc:  # the spec's fault, found while solving
        print(f"workbench inverse: {args.spec}: {exc}", file=sys.stderr)
        return 2
    log = [*result.log]
    for path, write in ((args.output, result.save), (args.plot, result.plot)):
        if path:
            write(path)
            log.append(f"wrote {path}")
    if not args.quiet:
        print("\n".join(log), file=sys.stderr, flush=True)
    print(result.text.rstrip("\n") if args.json else result.format())
    return 0 if result.converged else 1
