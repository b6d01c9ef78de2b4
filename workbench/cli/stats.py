"""Summarise an ensemble: realizations and failures, sampled parameters (mean, std, cv), and per
observer the peaks of the nominal and mean responses, the widest confidence band and the
mean-square convergence; the indices of `workbench sensitivity` when the file has them. A file
holding one run (`workbench run`, `workbench reverse`) is refused: `workbench inspect`
describes it.
"""

from __future__ import annotations

import argparse
import json

from workbench.ensemble.report import ensemble_summary, summary_lines
from workbench.errors import StoreError

__all__ = ["add_stats_parser", "cmd_stats"]

EPILOG = """\
examples:
  workbench ensemble random_box -n 200 -o box.h5 --workers 2
  workbench stats box.h5
  workbench stats box.h5 --band 0.95 --json
  workbench plot box.h5 --observer com --band 0.9
  workbench stats sb.h5                   with the indices of `workbench sensitivity`
"""


def add_stats_parser(sub) -> None:
    stt = sub.add_parser(
        "stats",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    stt.add_argument("file", help="ensemble file (HDF5) from `workbench ensemble`")
    stt.add_argument(
        "--band",
        type=float,
        default=0.9,
        metavar="P_C",
        help="probability level of the confidence region (default 0.9)",
    )
    stt.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    stt.set_defaults(func=cmd_stats)


def cmd_stats(args) -> int:
    """``workbench stats`` (the work is :func:`workbench.ensemble.report.ensemble_summary`, the
    text :func:`~workbench.ensemble.report.summary_lines`)."""
    if not 0 < args.band < 1:
        raise StoreError(f"--band: expected a probability in (0, 1), got {args.band}")
    info = ensemble_summary(args.file, args.band)
    print(json.dumps(info, indent=2) if args.json else "\n".join(summary_lines(args.file, info)))
    return 0
