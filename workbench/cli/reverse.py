"""``workbench reverse``: step a scene backward from its final state (thin: parsing and output;
the work is :func:`workbench.reverse`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

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
from workbench.tasks.reverse import (
    DEFAULT_BUDGET,
    DEFAULT_RADIUS,
    MAX_REVERSE_STEPS,
    rejection_reasons,
)

__all__ = ["add_reverse_parser", "cmd_reverse"]

DESCRIPTION = """\
Step SCENE backward in time (Twigg & James 2008) from its state, taken as the FINAL state of the
motion (bodies at rest unless the scene gives velocities), and write the motion that would have
led to it, in forward time order, to HDF5 (attribute time_reversed = 1; `workbench replay OUT.h5`
plays it). --duration defaults to the scene's settings.duration.

A body at rest stays at rest backward unless a hint says how it arrived (--hints FILE, YAML):

  hints:
    - {body: block, slide: {direction: [1, 0, 0], speed: 2.0}}
    - {body: ball, bounce: 0.15}
    - {body: roller, roll: {direction: [0, 1, 0], speed: 1.0}, at: 0.1}

`at`: the reverse time (s before the final state) the hint acts at (0); {body: NAME, free: false}
keeps a body from ever starting. --hints script calls the scene script's hints(**parameters);
--markov TABLE lets bodies leave the ground backward as often as forward runs land. The
plausibility controls (Twigg & James sec. 4) are off unless the scene's `reverse:` section sets
them (the demos do; an option given here wins), which keeps each step an exact mirror of a
forward one. Every run is audited (overlaps, energy gained, speeds); one that breaks physics is
written and marked 'implausible' (exit 1). Diagnostics: /diagnostics and /reverse/islands.

--samples K runs K seeded runs (run i: SeedSequence(seed, spawn_key=(i,)), whatever --workers),
rejects those that fail, pass --energy-limit or have failed LCPs, and keeps the --keep k with
the lowest peak kinetic energy (replay one with --realization i; every run's outcome is in
/sampling/outcomes). Each run may draw its own past: --heading random, a hints distribution
(`slide: {direction: random, speed: {uniform: [0.0, 1.5]}}`), or a script's hints(seed=...).

--verify [N] refines each kept run's earliest state (velocities, and its pose within the radius of
--verify-tolerance) until PyBullet, played forward from it, comes to rest within the tolerance of
the final pose: at most N PyBullet runs per run, results in /verify/outcomes and /verify/earliest.
--then-forward T appends T s of forward simulation from the scene's state (the CRASH example).

Pasts of one body resting on a flat ground can also be sampled forward: `workbench pasts`.
Runs over 100,000 backward steps or 2 GiB of records are refused unless --force; an unsolved
contact LCP ends the run (earlier records written, exit 1). Details: docs/reverse.md.

examples:
  workbench reverse reverse_landing --hints reverse_landing.hints.yaml \\
      --duration 0.5 -o landing.h5 && workbench replay landing.h5
  workbench reverse markov_block --markov markov_block --duration 1 \\
      --samples 50 --keep 5 --workers 2 --energy-limit 20 --seed 1 -o block_runs.h5
  workbench reverse markov_block --markov markov_block --samples 50 --keep 5 --workers 2 \\
      --seed 1 --verify -o verified_pasts.h5
  workbench reverse box_stack5 --markov markov_block --duration 2 --attract --contacts persist \\
      --seed 0 -o stack5.h5
  workbench reverse spelling_balls --set text=LO --hints script --duration 3 -o lo.h5
"""


def add_reverse_parser(sub) -> None:
    rv = sub.add_parser(
        "reverse",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_scene_arguments(rv, settings=False)  # SCENE and --set
    rv.add_argument(
        "--duration",
        type=float,
        help="how far back to step, s (default: the scene's settings.duration, if it sets one)",
    )
    rv.add_argument("-o", "--output", help="HDF5 file to write (default: <scene>_reverse.h5)")
    add_timestamp_argument(rv)
    rv.add_argument("--dt", type=float, help="time step, s (default: the scene's)")
    rv.add_argument(
        "--hints",
        metavar="FILE",
        help="hints file (YAML) or its name (reverse_landing.hints.yaml), or 'script' for the "
        "scene script's",
    )
    rv.add_argument(
        "--seed",
        type=int,
        help="seed of the friction pyramids' turn (default: world-aligned) and of the --markov "
        "draws; with --samples, of all runs (default: fresh, stored in the file)",
    )
    rv.add_argument(
        "--markov",
        metavar="TABLE",
        help="contact-transition table (from `workbench markov train`, or a shipped name: "
        "markov_block): bodies leave the ground backward as often as forward runs land",
    )
    g = rv.add_argument_group("plausibility controls (Twigg & James sec. 4)")
    for name, meta, what in (
        ("--restitution-blend", "S", "after an elastic collision, restitution 1 blended back "
         "over S s"),
        ("--angular-damping", "C", "backward angular damping rate, 1/s"),
        ("--linear-damping", "C", "backward linear damping rate, 1/s"),
        ("--slip-damping", "C", "round bodies' slip at their static supports decays backward "
         "at rate C, 1/s (inf: they roll without slipping)"),
    ):  # fmt: skip
        g.add_argument(name, type=float, metavar=meta, help=what)
    g.add_argument(
        "--attract",
        action=argparse.BooleanOptionalAction,
        help="constrained bodies may take a negative normal force (stacks hold)",
    )
    g.add_argument(
        "--contacts",
        metavar="RULE[,RULE]",
        help="contact rules: persist (a moving box keeps its vanished contacts with a fixed box "
        "within the touch tolerance), joint-unit-restitution (restitution 1 between jointed "
        "bodies), no-free-to-bounce (goals may start any body, not only those free to bounce), "
        "bounce-apart (contacts separating below the restitution cut-off bounce at it instead "
        "of moving on into each other backward), separate (overlap a backward step brings is "
        "pushed out along the contact normals), cap-bounces (backward collisions approach at "
        "most at the speed the scene's height and hints allow)",
    )
    g.add_argument(
        "--energy-limit",
        metavar="J[,flag]",
        help="guard on the total kinetic energy, J: a run above it ends there, or with ',flag' "
        "runs on marked",
    )
    m = rv.add_argument_group("many runs")
    m.add_argument("--samples", type=int, metavar="K", help="run K seeded reverse runs")
    m.add_argument(
        "--keep",
        type=int,
        default=1,
        metavar="k",
        help="keep the k lowest-peak-energy accepted runs (1)",
    )
    add_workers_arguments(m, "--samples and --verify")
    m.add_argument(
        "--heading",
        choices=("scene", "random"),
        default="scene",
        help="keep the scene's heading (default) or turn the moving bodies by a random angle "
        "about the vertical in each run",
    )
    v = rv.add_argument_group("forward verification by PyBullet")
    add_verify_arguments(v, ("--verify", DEFAULT_BUDGET), DEFAULT_RADIUS)
    rv.add_argument(
        "--then-forward",
        type=float,
        metavar="T",
        help="append T s of PyBullet forward simulation from the scene's state",
    )
    rv.add_argument(
        "--force",
        action="store_true",
        help=f"run even above the bounds on steps ({MAX_REVERSE_STEPS:,} per run) "
        "and record memory (2 GiB) that refuse runs too long to be meant",
    )
    rv.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    rv.set_defaults(func=cmd_reverse)  # fmt: skip


def cmd_reverse(args) -> int:
    """``workbench reverse`` (the work is :func:`workbench.reverse`)."""
    from workbench.tasks.reverse import reverse

    path = find_scene(args.scene)
    out = Path(args.output or f"{path.stem}_reverse.h5")
    hold_output_lock(args, out)
    unit = "steps" if args.samples is None else "runs"
    with progress_bar(0, unit, quiet=args.quiet) as advance:
        result = reverse(
            path, set=dict(parse_overrides(args)), progress=advance, workers=task_workers(args),
            **{name: getattr(args, name) for name in OPTIONS},
        )  # fmt: skip
    if args.samples is not None:
        return _sampled(args, path, out, result)
    result.save(out)
    traj = result.trajectory
    if not args.quiet:
        lines = [*(result.run.audit.lines() if result.run.audit is not None else [])]
        lines += [result.confirmation.line()] if result.confirmation is not None else []
        print("\n".join([*lines, *result.verification_lines()]))
    if traj.status != "ok":
        print(
            f"workbench reverse: {path}: {traj.message}; wrote {out} with {traj.n_times} states "
            f"(marked '{traj.status}')",
            file=sys.stderr,
        )
        return 1
    for warning in result.warnings():
        print(f"workbench reverse: {warning}", file=sys.stderr)
    if not args.quiet:
        fallbacks = int(np.sum(traj.diagnostics["lcp_fallbacks"]))
        extra = f", {fallbacks} LCP fallback(s)" if fallbacks else ""
        fwd = f" and {args.then_forward:g} s forward" if args.then_forward else ""
        print(
            f"wrote {out}: {traj.n_times} states of {traj.n_bodies} bodies, "
            f"{result.run.trajectory.time[-1]:g} s back from the final state{fwd} in "
            f"{result.wall_seconds:.2f} s{extra}"
        )
    return 0


#: The options passed to :func:`workbench.reverse` as they are named there.
OPTIONS = (
    "duration", "dt", "hints", "seed", "markov", "restitution_blend", "angular_damping",
    "linear_damping", "slip_damping", "attract", "contacts", "energy_limit", "samples", "keep",
    "heading", "verify", "verify_tolerance", "then_forward", "force", "timestamp",
)  # fmt: skip


def _sampled(args, path, out, result) -> int:
    """Save and report the kept runs of ``--samples`` (none kept: exit 1, nothing written)."""
    if not result.sampling.kept:
        print(
            f"workbench reverse: {path}: none of the {args.samples} runs was accepted "
            f"({rejection_reasons(result.sampling.table())}); nothing written",
            file=sys.stderr,
        )
        return 1
    result.save(out)
    if not args.quiet:
        print("\n".join([*result.verification_lines(), *result.sampling_lines()]))
        order = "lowest peak kinetic energy first"
        print(
            f"wrote {out}: {len(result.sampling.kept)} of {args.samples} runs kept ({order}; "
            f"replay one with --realization i) in {result.wall_seconds:.1f} s"
        )
    return 0
