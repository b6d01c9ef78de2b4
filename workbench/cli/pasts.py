"""``workbench pasts``: conditioned forward pasts of a scene whose one moving body rests on a flat
ground (thin: checks, the file and the summary; the work is
:func:`workbench.pasts`). The realizations follow the reverse runs'
conventions (:func:`reverse.runs.run.run_reverse`), so `workbench replay` and `inspect` read them as
they read a ``workbench reverse --samples`` file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.cli.common import (
    add_scene_arguments,
    add_timestamp_argument,
    add_verify_arguments,
    add_workers_arguments,
    hold_output_lock,
    parse_overrides,
    progress_bar,
    task_workers,
)
from workbench.scene.catalog import find_scene
from workbench.tasks.pasts import CONDITIONED_BUDGET, DEFAULT_RADIUS, MAX_THROWS_PER_PAST

__all__ = ["add_pasts_parser", "cmd_pasts"]

DESCRIPTION = f"""\
Sample K pasts of SCENE forward: motions that PyBullet brings to rest at the scene's state, for a
scene whose one moving body rests on a flat ground (a plane or a fixed box). Stacks, several
moving bodies and final states in motion need `workbench reverse` (the backward stepper).

Throws of the training's throw law (`workbench markov train`; throw i draws from
SeedSequence(seed, spawn_key=(i,))) are kept when PyBullet brings them to rest by the end of
--duration on the face the final pose rests on; the turn about the vertical and the horizontal
shift that carry the rest pose onto the final one carry the whole throw, and its release is
refined (at most --verify-budget PyBullet runs) until PyBullet, played forward from it, rests
within --verify-tolerance of the final pose by the end of --duration.

The realizations are PyBullet's own motions from the refined releases, earliest state first, on
the reverse runs' time axis (`workbench replay OUT.h5 --realization i`): the first K confirmed in
throw order, the same bits for any --workers. At most --max-throws throws are tried (default
{MAX_THROWS_PER_PAST} K); /conditioned/outcomes holds one row per throw (status, residuals,
PyBullet runs). Fewer than K pasts are written, marked (attribute conditioned_complete = 0), and
end with exit status 1. --duration defaults to the scene's settings.duration.

examples:
  workbench pasts markov_block -n 20 --seed 1 --workers 2 -o pasts.h5
  workbench replay pasts.h5 --realization 3
  workbench pasts markov_block -n 50 --seed 1 --verify-budget 40 --max-throws 500 -o quick.h5
"""


def add_pasts_parser(sub) -> None:
    ps = sub.add_parser(
        "pasts", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_scene_arguments(ps)  # SCENE, --set, --dt, --duration, -q
    ps.add_argument("-n", type=int, required=True, metavar="K", help="number of pasts to sample")
    ps.add_argument(
        "--seed", type=int, help="entropy of the throws (default: fresh, stored in the file)"
    )
    add_workers_arguments(ps, "the throws")
    ps.add_argument("-o", "--output", help="HDF5 file to write (default: <scene>_pasts.h5)")
    add_timestamp_argument(ps)
    ps.add_argument(
        "--max-throws",
        type=int,
        metavar="N",
        help=f"most throws to try ({MAX_THROWS_PER_PAST} K)",
    )
    add_verify_arguments(ps, ("--verify-budget", CONDITIONED_BUDGET), DEFAULT_RADIUS)
    ps.add_argument(
        "--force",
        action="store_true",
        help="run even above the bound on record memory (2 GiB) that refuses runs too long to "
        "be meant",
    )
    ps.set_defaults(func=cmd_pasts)


def cmd_pasts(args) -> int:
    """``workbench pasts`` (the work is :func:`workbench.pasts`)."""
    from workbench.tasks.pasts import pasts

    path = find_scene(args.scene)
    out = Path(args.output or f"{path.stem}_pasts.h5")
    hold_output_lock(args, out)  # the file the pasts go to, held from before they compute
    with progress_bar(args.n, "pasts", quiet=args.quiet) as advance:
        result = pasts(
            path, args.n, set=dict(parse_overrides(args)), dt=args.dt, duration=args.duration,
            seed=args.seed, workers=task_workers(args), max_throws=args.max_throws,
            verify_budget=args.verify_budget, verify_tolerance=args.verify_tolerance,
            force=args.force, timestamp=args.timestamp, progress=advance,
        )  # fmt: skip
    summary, kept, tried = result.summary, result.kept, result.tried
    statuses = ", ".join(f"{n} {s}" for s, n in summary["by_status"].items())
    if not kept:
        name = result.scene.bodies[result.body].name
        print(
            f"workbench pasts: {path}: none of {len(tried)} throws (--max-throws "
            f"{result.max_throws}) came to rest on {name}'s final face and was confirmed "
            f"({statuses}); nothing written",
            file=sys.stderr,
        )
        return 1
    result.save(out)
    if not args.quiet:
        print("\n".join(result.report_lines()))
    if not result.complete:
        print(
            f"workbench pasts: {path}: only {len(kept)} of {args.n} pasts found in "
            f"{len(tried)} throws (--max-throws {result.max_throws}; {statuses}); wrote them to "
            f"{out} (attribute conditioned_complete = 0)",
            file=sys.stderr,
        )
        return 1
    if not args.quiet:
        print(
            f"wrote {out}: {len(kept)} conditioned forward pasts of {result.duration:g} s "
            f"(replay one with --realization i) in {result.wall_seconds:.1f} s"
        )
    return 0
