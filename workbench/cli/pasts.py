"""``workbench pasts``: conditioned forward pasts of a scene whose one moving body rests on a flat
ground (thin: checks, the file and the summary; the work is
:func:`reverse.pasts.conditioned.conditioned_pasts`). The realizations follow the reverse runs'
conventions (:func:`reverse.runs.run.run_reverse`), so `workbench replay` and `inspect` read them as
they read a ``workbench reverse --samples`` file."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from reverse.pasts.conditioned import CONDITIONED_BUDGET, MAX_THROWS_PER_PAST, final_rest_body
from reverse.pasts.files import write_conditioned_pasts
from reverse.runs.run import plan_reverse_run
from reverse.runs.verify import DEFAULT_RADIUS
from workbench.cli.common import (
    add_scene_arguments,
    add_timestamp_argument,
    add_verify_arguments,
    add_workers_arguments,
    check_count,
    check_positive,
    check_seed,
    hold_output_lock,
    load_scene_arguments,
    parse_verify_tolerance,
    progress_bar,
    seed_entropy,
)
from workbench.ensemble.run import SceneRef
from workbench.errors import SceneError

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
    path, overrides, scene = load_scene_arguments(args)
    if args.duration is None:
        if "duration" not in scene.settings.model_fields_set:
            raise SceneError(
                "--duration", "", "expected the pasts' duration, s (the scene sets none)"
            )
        args.duration = scene.settings.duration
    for name in ("dt", "duration"):
        check_positive(name, getattr(args, name))
    check_seed(args.seed)
    check_count("-n", args.n, "past")
    if args.max_throws is not None:
        check_count("--max-throws", args.max_throws, "throw")
    check_count("--workers", args.workers, "worker")
    parse_verify_tolerance(args)
    check_count("--verify-budget", args.verify_budget, "PyBullet run")
    # the file run_conditioned writes, held from before it computes
    hold_output_lock(args, args.output or f"{path.stem}_pasts.h5")
    return run_conditioned(args, path, overrides, scene)


def run_conditioned(args, path, overrides, scene) -> int:
    """K pasts sampled forward (:func:`reverse.pasts.conditioned.
    conditioned_pasts`) in the scene as ``workbench run`` builds it, written as realizations."""
    from reverse.pasts.conditioned import conditioned_pasts, conditioned_summary
    from reverse.runs.verify import verify_settings
    from workbench.sim.forward import start_overlap as overlap_of

    k_asked = args.n
    dt = args.dt or scene.settings.dt
    option = "--dt" if args.dt else "--duration"
    held = k_asked + (1 if args.scheduler else args.workers)  # kept + in flight here
    plan = plan_reverse_run(
        args.duration, dt, len(scene.bodies), runs=k_asked, held=held, option=option
    )
    problem = plan.problem("forward")
    if problem and not args.force:
        what = f"{k_asked} pasts of {args.duration:g} s at dt = {dt:g} s are"
        raise SceneError(option, "", f"{what} {problem}; pass --force to run them anyway")
    body = final_rest_body(scene, dt, args.verify_tolerance)
    limit = MAX_THROWS_PER_PAST * k_asked if args.max_throws is None else args.max_throws
    entropy = seed_entropy(args.seed)
    ref = SceneRef(str(path), tuple(sorted(dict(overrides).items())), dt=args.dt)
    settings = verify_settings(args.verify_budget, args.verify_tolerance, args.verify_radius)
    t0 = time.perf_counter()
    with progress_bar(k_asked, "pasts", quiet=args.quiet) as advance:
        kept, tried = conditioned_pasts(
            ("scene", ref),
            k_asked,
            entropy,
            duration=args.duration,
            settings=settings,
            max_throws=limit,
            trajectory=True,
            workers=args.workers,
            scheduler=args.scheduler,
            progress=advance,
        )
    wall = time.perf_counter() - t0
    summary = conditioned_summary(kept, tried, k_asked)
    statuses = ", ".join(f"{n} {s}" for s, n in summary["by_status"].items())
    if not kept:
        print(
            f"workbench pasts: {path}: none of {len(tried)} throws (--max-throws {limit}) "
            f"came to rest on {scene.bodies[body].name}'s final face and was confirmed "
            f"({statuses}); nothing written",
            file=sys.stderr,
        )
        return 1
    complete = len(kept) == k_asked
    out = Path(args.output or f"{path.stem}_pasts.h5")
    write_conditioned_pasts(
        out, scene, kept, tried, summary, body=body, dt=dt, asked=k_asked, max_throws=limit,
        settings=settings, entropy=entropy,
        start_overlap=overlap_of(scene.with_settings(dt=dt)).depth, timestamp=args.timestamp,
    )  # fmt: skip
    if not args.quiet:
        print(_conditioned_report(summary, kept, body, wall))
    if not complete:
        print(
            f"workbench pasts: {path}: only {len(kept)} of {k_asked} pasts found in "
            f"{len(tried)} throws (--max-throws {limit}; {statuses}); wrote them to {out} "
            "(attribute conditioned_complete = 0)",
            file=sys.stderr,
        )
        return 1
    if not args.quiet:
        print(
            f"wrote {out}: {len(kept)} conditioned forward pasts of {args.duration:g} s (replay "
            f"one with --realization i) in {wall:.1f} s"
        )
    return 0


def _conditioned_report(summary: dict, kept, body: int, wall: float) -> str:
    """A few lines: what the sample took, its residuals, and its earliest states' range."""
    s = summary
    statuses = ", ".join(f"{s_} {n}" for s_, n in s["by_status"].items())
    speed = [float(np.linalg.norm(r.earliest[body, 7:10])) for r in kept]
    spin = [float(np.linalg.norm(r.earliest[body, 10:13])) for r in kept]
    return "\n".join(
        [
            f"conditioned forward pasts: kept {s['kept']} of {s['asked']} asked from "
            f"{s['throws']} throws ({statuses})",
            f"PyBullet runs: {s['pybullet_runs']} in {wall:.1f} s, "
            f"{s['pybullet_runs_per_kept']:.3g} per kept past (refinement "
            f"{s['refinement_runs_per_kept']:.3g}); median residual "
            f"{s['median_residual_position_m']:.3g} m, {s['median_residual_angle_deg']:.3g} deg",
            f"earliest states: speed {min(speed):.3g}-{max(speed):.3g} m/s, spin "
            f"{min(spin):.3g}-{max(spin):.3g} rad/s",
        ]
    )
