"""Compare a model ensemble (MODEL.h5 from `workbench ensemble`) with experiments (stores such as
`workbench run` files, or a CSV of time series: first column time in s, one column per
experiment) on one observer component, with the instantaneous, first-passage and accumulated
reliability metrics of Ao, Hu & Mahadevan (2017). The model is streamed in blocks of
--chunk-size realizations.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from workbench.cli.common import check_output, hold_output_lock

__all__ = ["add_validate_parser", "cmd_validate"]


EPILOG = """\
examples:
  workbench ensemble validation_pendulum -n 200 --seed 1 -o model.h5
  workbench run validation_pendulum -o experiment.h5
  workbench validate --model model.h5 --experiments experiment.h5 --observer tip \\
      --component x --epsilon 0.05 --plot validation.png
  workbench validate --model model.h5 --experiments data.csv --observer tip \\
      --component x --lambda 0.08 --metric first-passage --json
"""


def add_validate_parser(sub) -> None:
    va = sub.add_parser(
        "validate",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    va.add_argument("--model", required=True, metavar="MODEL.h5", help="model ensemble store")
    va.add_argument(
        "--experiments",
        required=True,
        nargs="+",
        metavar="EXP",
        help="experiment stores (every completed realization is one experiment) or CSV files",
    )
    va.add_argument("--observer", required=True, help="observer name")
    va.add_argument(
        "--component",
        help="component index or label (e.g. 0 or x); needed when the observer has several",
    )
    thr = va.add_mutually_exclusive_group(required=True)
    thr.add_argument(
        "--lambda",
        dest="lam",
        type=float,
        metavar="LAMBDA",
        help="relative threshold: |model - experiment| < LAMBDA |experiment| (e.g. 0.08)",
    )
    thr.add_argument(
        "--epsilon",
        type=float,
        help="absolute threshold in the observer's unit: |model - experiment| < EPSILON",
    )
    va.add_argument(
        "--metric",
        choices=("instantaneous", "first-passage", "accumulated", "all"),
        default="all",
        help="which metric (default all)",
    )
    va.add_argument(
        "--interpolate",
        action="store_true",
        help="interpolate the model onto the experiments' instants when the time grids differ",
    )
    va.add_argument(
        "--chunk-size",
        type=int,
        default=4096,
        help="model realizations read and processed at once (memory bound; default 4096)",
    )
    va.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    va.add_argument("-o", "--output", metavar="OUT.json", help="write the full result as JSON")
    va.add_argument("--plot", metavar="FIG.png", help="write a figure of the metrics")
    va.set_defaults(func=cmd_validate)


def cmd_validate(args) -> int:
    """``workbench validate`` (the work is :func:`workbench.validate`)."""
    from workbench.tasks.validate import validate

    check_output(args.output)
    check_output(args.plot)
    hold_output_lock(args, args.output, args.plot)
    result = validate(
        args.model, args.experiments, args.observer, component=args.component,
        metric=args.metric, lam=args.lam, epsilon=args.epsilon, interpolate=args.interpolate,
        chunk_size=args.chunk_size,
    )  # fmt: skip
    if args.output:
        result.save(args.output)
    if args.plot:
        result.plot(args.plot, model_name=Path(args.model).name)
    if args.json:
        print(result.text.rstrip("\n"))
        return 0
    report = result.report
    excluded = f", {report.n_excluded} incomplete left out" if report.n_excluded else ""
    n_exp = len(report.experiments)
    print(
        f"{report.observer}.{report.component}: {report.n_model} model realizations"
        f"{excluded}, {n_exp} experiment{'s' if n_exp != 1 else ''}, {report.time.size} instants "
        f"in [{report.window[0]:g}, {report.window[1]:g}] s"
        f"{' (model interpolated)' if report.interpolated else ''}; {result.threshold_text()}"
    )
    print(f"  {'metric':<15}{'r(t_end)':>10}{'min':>10}{'mean':>10}")
    for name, row in report.summary().items():
        print(
            f"  {name.replace('_', '-'):<15}{row['final']:>10.4f}{row['min']:>10.4f}"
            f"{row['mean']:>10.4f}"
        )
    for path in (args.output, args.plot):
        if path:
            print(f"wrote {path}")
    return 0
