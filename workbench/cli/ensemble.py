"""Run N realizations of SCENE (random masses, centres of mass, inertias and parameters as the
scene declares) and store them, with the nominal run, in one HDF5 file. Realization i uses
SeedSequence(seed, spawn_key=(i,)): the file is bit-identical whatever --workers or --scheduler.
Many machines: docs/ensembles.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.cli.common import (
    add_scene_arguments,
    add_timestamp_argument,
    check_output,
    check_sampling_options,
    interrupted,
    progress_bar,
    task_workers,
    workers_value,
)
from workbench.scene.catalog import find_scene

__all__ = ["add_ensemble_parser", "cmd_ensemble"]


EPILOG = """\
examples:
  workbench ensemble random_box -n 200 --seed 1 -o box.h5 --workers auto
  workbench ensemble random_box -n 200 --seed 1 -o box.h5 --resume     after an interruption
  workbench ensemble random_box -n 2000 -o box.h5 --scheduler tcp://10.0.0.5:8786
  workbench ensemble random_box -n 2000 -o box.h5 --scheduler local --workers 4

then: workbench stats box.h5, workbench plot box.h5 --observer com --band 0.9
"""


def add_ensemble_parser(sub) -> None:
    en = sub.add_parser(
        "ensemble",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_scene_arguments(en)
    en.add_argument("-n", type=int, required=True, help="number of realizations")
    en.add_argument("-o", "--output", help="HDF5 file (default: <scene name>_ensemble.h5)")
    en.add_argument(
        "--force",
        action="store_true",
        help="run realizations above the run-size bounds (steps, recorded memory)",
    )
    add_timestamp_argument(en)
    en.add_argument(
        "--seed", type=int, help="seed entropy (default: a fresh one, stored in the file)"
    )
    en.add_argument(
        "--workers",
        type=workers_value,
        metavar="N|auto",
        help="worker processes on this machine, 'auto': one per core (default 1: in this "
        "process); with --scheduler local, the local Dask workers (default: one per core)",
    )
    en.add_argument(
        "--scheduler",
        metavar="tcp://HOST:PORT|local",
        help="run on a Dask cluster (needs the 'dask' extra; start workers with --nthreads 1), "
        "or 'local': --workers Dask workers on 127.0.0.1, stopped at the end",
    )
    en.add_argument(
        "--dashboard",
        metavar="HOST:PORT",
        help="with --scheduler local: serve Dask's dashboard there (e.g. 127.0.0.1:8787; "
        "needs bokeh); none by default",
    )
    en.add_argument(
        "--compression",
        choices=("gzip", "none"),
        default="gzip",
        help="of the records (default gzip: ≈ 40%% smaller files for ≈ 7%% more CPU, spent in "
        "the workers); --resume keeps the file's",
    )
    en.add_argument(
        "--resume",
        action="store_true",
        help="fill in the realizations missing from an interrupted OUTPUT (refused if the "
        "scene, settings, -n, --seed or code versions differ from those it was made with)",
    )
    en.set_defaults(func=cmd_ensemble)


def cmd_ensemble(args) -> int:
    """``workbench ensemble`` (the work is :func:`workbench.ensemble`)."""
    from workbench.tasks.ensemble import ensemble

    overrides = check_sampling_options(args, "realization")
    path = find_scene(args.scene)
    out = Path(args.output or f"{path.stem}_ensemble.h5")
    if not args.resume:  # --resume opens OUTPUT, and says so if it is missing
        check_output(out)
    try:
        with progress_bar(args.n, "realizations", delay=0.0, quiet=args.quiet) as advance:
            result = ensemble(
                path, args.n, set=dict(overrides), dt=args.dt, duration=args.duration,
                seed=args.seed, workers=task_workers(args), output=out,
                compression=None if args.compression == "none" else args.compression,
                resume=args.resume, force=args.force, timestamp=args.timestamp,
                dashboard=args.dashboard, progress=advance,
            )  # fmt: skip
    except KeyboardInterrupt:
        return interrupted("ensemble", out)
    failed = len(result.failed)
    if not args.quiet:
        print(
            f"wrote {out}: {result.ran} realizations run ({failed} failed) in "
            f"{result.wall_seconds:.1f} s; seed {result.entropy}"
        )
    if failed:
        first = next(iter(result.failed.items()))
        print(
            f"workbench ensemble: {failed} realizations failed and are marked in the file; "
            f"first: {first[0]}: {first[1]}",
            file=sys.stderr,
        )
    return 0
