"""Run SCENE (a .yaml file, a .py scene script, or the name of a shipped scene) forward in PyBullet
and write the trajectory to HDF5.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.cli.common import (
    add_scene_arguments,
    add_timestamp_argument,
    check_output,
    hold_output_lock,
    parse_overrides,
    progress_bar,
)
from workbench.scene.catalog import find_scene
from workbench.tasks.run import MAX_RECORD_BYTES, MAX_STEPS

__all__ = ["add_run_parser", "cmd_run"]


EPILOG = """\
examples:
  workbench run falling_object -o falling.h5
  workbench run falling_object --set c=0.2 --duration 2 -o falling_c02.h5
  workbench run my_scene.yaml --dt 0.0005 -q
  workbench run scenes/spelling_balls.py -o balls.h5
  workbench run falling_object --dt 1e-6 --force   # 5e6 steps: past the limit, on purpose

then: workbench inspect falling.h5, workbench plot falling.h5 --observer height,
workbench replay falling.h5
"""


def add_run_parser(sub) -> None:
    r = sub.add_parser(
        "run",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_scene_arguments(r)
    r.add_argument("-o", "--output", help="HDF5 file to write (default: <scene name>.h5)")
    add_timestamp_argument(r)
    r.add_argument(
        "--force",
        action="store_true",
        help=f"run even when the run is estimated beyond {MAX_STEPS:.0e} steps or "
        f"{MAX_RECORD_BYTES // 2**20} MiB of records (refused otherwise, with the numbers)",
    )
    r.set_defaults(func=cmd_run)


def cmd_run(args) -> int:
    """``workbench run`` (the work is :func:`workbench.run`)."""
    from workbench.tasks.run import run

    path = find_scene(args.scene)
    out = Path(args.output or f"{path.stem}.h5")
    check_output(out)  # before the run, not after it
    # the one lock of every writer (workbench/store/lock.py), for as long as it computes and writes
    hold_output_lock(args, out)
    with progress_bar(0, "steps", quiet=args.quiet) as advance:
        result = run(
            path, set=dict(parse_overrides(args)), dt=args.dt, duration=args.duration,
            force=args.force, timestamp=args.timestamp, progress=advance,
        )  # fmt: skip
    result.save(out)
    traj, scene, wall = result.trajectory, result.scene, result.wall_seconds
    if traj.status != "ok":
        print(
            f"workbench run: {path}: {traj.message}; wrote {out} with {traj.n_times} records "
            f"(marked '{traj.status}')",
            file=sys.stderr,
        )
        return 1
    if not args.quiet:
        bodies = f"{traj.n_bodies} bod{'y' if traj.n_bodies == 1 else 'ies'}"
        print(
            f"wrote {out}: {traj.n_times} records of {bodies}, "
            f"{scene.settings.duration:g} s simulated in {wall:.2f} s "
            f"({scene.settings.n_steps / max(wall, 1e-9):,.0f} steps/s)"
        )
    return 0
