"""Run SCENE (a .yaml file, a .py scene script, or the name of a shipped scene) forward in PyBullet
and write the trajectory to HDF5.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from workbench.cli.common import (
    add_scene_arguments,
    add_timestamp_argument,
    check_output,
    check_positive,
    load_scene_arguments,
    progress_bar,
)
from workbench.scene.loader import scene_to_json
from workbench.sim.forward import (
    MAX_RECORD_BYTES,
    MAX_STEPS,
    check_run_size,
    run_scene,
    start_overlap,
)
from workbench.store import write_trajectory
from workbench.store.lock import output_lock

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
    """``workbench run`` (the work is :func:`workbench.sim.forward.run_scene`)."""
    path, _, scene = load_scene_arguments(args)
    for name in ("dt", "duration"):
        check_positive(name, getattr(args, name), what="number of seconds", finite=False)
    scene = scene.with_settings(dt=args.dt, duration=args.duration)
    check_run_size(scene, force=args.force)
    out = Path(args.output or f"{path.stem}.h5")
    check_output(out)  # before the run, not after it
    # the one lock of every writer (workbench/store/lock.py): an ensemble writing the same file
    # refuses this run, and this run refuses the ensemble, for as long as it computes and writes
    with output_lock(out):
        overlap = start_overlap(scene)
        if overlap.warning(path):
            print(f"workbench run: {overlap.warning(path)}", file=sys.stderr)
        t0 = time.perf_counter()
        with progress_bar(scene.settings.n_steps, "steps", quiet=args.quiet) as advance:
            traj = run_scene(scene, progress=advance, force=args.force)
        wall = time.perf_counter() - t0
        write_trajectory(
            out,
            traj,
            scene_text=scene.source_text,
            scene_json=scene_to_json(scene),
            timestamp=args.timestamp,
            extra_attrs={"start_overlap": overlap.depth},
        )
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
