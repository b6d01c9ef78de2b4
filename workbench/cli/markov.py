"""``workbench markov train``: train the contact-transition table of the reverse stepper's Markov
model (thin: parsing and output; the work is :func:`workbench.markov_train`);
``workbench markov compare``: the plausibility measure of a table
(:func:`workbench.markov_compare`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.cli.common import (
    add_scene_arguments,
    hold_output_lock,
    parse_overrides,
    progress_bar,
)
from workbench.errors import MarkovModelError, SceneError
from workbench.scene.catalog import find_scene
from workbench.tasks.markov import CONDITIONED_BUDGET, DEFAULT_BINS, KINDS, MAX_TRAIN_STEPS

__all__ = ["add_markov_parser", "cmd_markov_train", "cmd_markov_compare"]

DESCRIPTION = """\
Contact-transition Markov model of backward runs (Twigg & James 2008 §4, Figs. 9-10).

examples:
  workbench markov train SCENE -n 1000 -o table.json    throw SCENE's body N times, count
                                                        its contact-state transitions
  workbench reverse SCENE --markov table.json ...       use the table backward
  workbench markov train markov_block -n 1000 --seed 2008 -o markov_block.json
  workbench markov compare SCENE --table table.json -n 200 --seed 1 --workers 2 -o report
                                                        how much backward runs with the table
                                                        look like forward throws
"""

COMPARE_DESCRIPTION = """\
The plausibility measure of a contact model: do backward runs from SCENE's state look like
forward motion? Runs three samples of SCENE's one moving body: N forward PyBullet throws (the
throw distribution of `workbench markov train`), N more (independent: the noise floor, what two
samples of one law differ by), and N reverse runs from the scene's state with the --table, each
turned to a random heading about the vertical (--backward heading=scene: as the scene has it)
and with its own hints if --hints gives a distribution or a script's hints(seed=...). The
backward runs take workbench reverse's plausibility controls as --backward NAME=VALUE.

Prints, per statistic (time to first liftoff, contact-state transitions, dwell time and share of
steps per contact state, speed, angular speed and kinetic energy at the earliest state and their
peaks), the medians, the total-variation distance forward vs backward (bins at quantiles of the
forward samples) and forward vs forward (the floor), and their ratio; and a classifier
two-sample test: the cross-validated accuracy of a logistic regression telling forward from
backward runs by per-run features (0.5: chance; forward vs forward for reference). Writes
OUT/plausibility.json (the numbers), OUT/sequences.png (contact-state sequences as in Twigg &
James Fig. 9) and OUT/statistics.png (the histograms).

--conditioned adds a table "conditioned forward pasts vs forward": N pasts sampled forward, not
by the backward stepper (`workbench pasts`): throws of their own stream kept when they rest on
the final pose's face at the end of the duration, carried onto the final pose by the flat
ground's symmetry (a turn about the vertical and a shift), and refined (as `workbench reverse
--verify` refines an earliest state) until PyBullet confirms them. For a single body resting on
a flat ground.

--seed S gives each sample its own stream (SeedSequence(S, spawn_key=(k,))) and each run its own
below that: the numbers and files are identical whatever --workers.

A hints distribution is a hints file with ranges and random directions:

  hints:
    - body: block
      slide: {direction: random, speed: {uniform: [0.0, 1.5]}}

examples:
  workbench markov compare markov_block --table markov_block -n 200 --seed 1 --workers 2 \\
      -o block_plausibility
  workbench markov compare my_shape.yaml --table my_shape.json --hints slides.hints.yaml \\
      -n 200 --seed 1 --workers 2 -o my_shape_plausibility
  workbench markov compare markov_block --table markov_block_semi --conditioned -n 200 \\
      --seed 1 --workers 2 -o block_conditioned
"""

TRAIN_DESCRIPTION = """\
Throw the one moving body of SCENE at the (fixed) ground N times in PyBullet, with a random
orientation, linear and angular velocity each time, record its contact state after every step
(0 free, 1 vertex, 2 edge, 3 three or more contact points: a face) and write the table of
P(state at t - dt | state at t) for drops to fewer contacts -- the only transitions a backward
step can cause -- with the counts, the landing speeds, and the command, seed, n and dt that
produced it (JSON).

That table is memoryless: a state's chance of dropping is the same however long the body
has been in it. --kind semi-markov adds, from the same runs, the chance of a drop per step as a
function of the time already spent in the state (dwell-time hazards), with the final rest
modelled apart from the brief flat landings of a tumble, so that backward runs rest as long as
forward ones before they lift off.

Run i draws its throw from SeedSequence(seed, spawn_key=(i,)): the same seed writes the same
bytes whatever --workers. Planes are 1 m thick boxes, as in the reverse stepper.

examples:
  workbench markov train markov_block -n 1000 --seed 2008 --workers 2 \\
      -o data/markov_block.json
  workbench markov train markov_block -n 1000 --seed 2008 --workers 2 --kind semi-markov \\
      -o data/markov_block_semi.json
  workbench reverse markov_block --markov data/markov_block.json --seed 1 \\
      --duration 1.5 -o block_reverse.h5
"""


def add_markov_parser(sub) -> None:
    mk = sub.add_parser(
        "markov",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mk.set_defaults(func=lambda args: _no_subcommand(mk))
    msub = mk.add_subparsers(dest="markov_command", metavar="SUBCOMMAND")
    tr = msub.add_parser(
        "train",
        help="train a contact-transition table from forward PyBullet runs",
        description=TRAIN_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_scene_arguments(tr)  # SCENE, --set, --dt, --duration, -q
    tr.add_argument("-n", type=int, default=1000, help="number of forward runs (default 1000)")
    tr.add_argument("-o", "--output", help="JSON file to write (default: <scene>_markov.json)")
    tr.add_argument(
        "--seed", type=int, help="seed entropy (default: fresh; printed and stored in the file)"
    )
    tr.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    tr.add_argument(
        "--kind",
        choices=KINDS,
        default="plain",
        help="plain: the Markov table of Twigg & James (memoryless); semi-markov: the same table "
        "plus dwell-time hazards per contact state, the final rest apart (default plain)",
    )
    tr.add_argument(
        "--force",
        action="store_true",
        help=f"train even above the bound of {MAX_TRAIN_STEPS:,} steps in all",
    )
    tr.set_defaults(func=cmd_markov_train)
    cp = msub.add_parser(
        "compare",
        help="how much backward runs with a table look like forward throws (plausibility)",
        description=COMPARE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_scene_arguments(cp)  # SCENE, --set, --dt, --duration, -q
    cp.add_argument(
        "--table",
        required=True,
        metavar="TABLE",
        help="contact-transition table (JSON from `workbench markov train`, or a shipped name)",
    )
    cp.add_argument("-n", type=int, default=200, help="runs per sample (default 200)")
    cp.add_argument("--seed", type=int, help="seed entropy (default: fresh; printed and stored)")
    cp.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    cp.add_argument(
        "-o", "--output", help="folder to write the report to (default: <scene>_plausibility)"
    )
    cp.add_argument(
        "--hints",
        metavar="FILE",
        help="hints (a file, maybe a distribution, or 'script' for the scene script's "
        "hints(seed=...)) of the backward runs",
    )
    cp.add_argument(
        "--backward",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an option of the backward runs (repeatable), as `workbench reverse` spells it: "
        "restitution-blend=S, angular-damping=C, linear-damping=C (0), contacts=persist, "
        "heading=scene (default: a random turn about the vertical per run)",
    )
    cp.add_argument(
        "--conditioned",
        action="store_true",
        help="also compare conditioned forward pasts with the throws (`workbench pasts`: "
        "throws resting on the final face, carried onto the final pose and confirmed by "
        "PyBullet; a table of its own)",
    )
    cp.add_argument(
        "--verify-budget",
        type=int,
        default=None,
        metavar="N",
        help=f"with --conditioned: most PyBullet runs of one refinement (default "
        f"{CONDITIONED_BUDGET})",
    )
    cp.add_argument(
        "--bins",
        type=int,
        default=DEFAULT_BINS,
        help=f"bins of the total-variation distances (default {DEFAULT_BINS})",
    )
    cp.add_argument(
        "--force",
        action="store_true",
        help="run even above the bounds on steps that refuse runs too long to be meant",
    )
    cp.set_defaults(func=cmd_markov_compare)


def _no_subcommand(parser) -> int:
    parser.print_help(sys.stderr)
    return 2


def cmd_markov_train(args) -> int:
    """``workbench markov train`` (the work is :func:`workbench.markov_train`)."""
    from workbench.tasks.markov import markov_train

    path = find_scene(args.scene)
    out = Path(args.output or f"{path.stem}_markov.json")
    if not out.parent.is_dir():
        raise MarkovModelError(f"{out}: the directory {out.parent} does not exist")
    hold_output_lock(args, out)
    with progress_bar(args.n, "runs", delay=0.0, quiet=args.quiet) as advance:
        result = markov_train(
            args.scene, args.n, set=dict(parse_overrides(args)), dt=args.dt,
            duration=args.duration, seed=args.seed, workers=args.workers, kind=args.kind,
            force=args.force, progress=advance,
        )  # fmt: skip
    result.save(out)
    if not args.quiet:
        lines = result.lines()
        print("\n".join([f"wrote {out}: {lines[0]}", *lines[1:]]))
    return 0


def cmd_markov_compare(args) -> int:
    """``workbench markov compare`` (the work is :func:`workbench.markov_compare`)."""
    from workbench.tasks.markov import markov_compare

    path = find_scene(args.scene)
    out = Path(args.output or f"{path.stem}_plausibility")
    if out.exists() and not out.is_dir():
        raise SceneError("-o", "", f"{out} exists and is not a folder")
    if not out.parent.is_dir():
        raise SceneError("-o", "", f"the folder {out.parent} does not exist")
    hold_output_lock(args, out)
    parts = 3 + int(args.conditioned)
    with progress_bar(parts * args.n, "runs", delay=0.0, quiet=args.quiet) as advance:
        result = markov_compare(
            args.scene, args.table, args.n, set=dict(parse_overrides(args)), dt=args.dt,
            duration=args.duration, seed=args.seed, workers=args.workers, hints=args.hints,
            backward=_pairs(args.backward), conditioned=args.conditioned,
            verify_budget=args.verify_budget, bins=args.bins, force=args.force,
            progress=advance,
            names={"scene": args.scene, "table": args.table, "sets": args.overrides},
        )  # fmt: skip
    result.save(out)
    if not args.quiet:
        print(result.text())
        print(
            f"wrote {out}/plausibility.json, {', '.join(result.figures)}: {parts} x {args.n} "
            f"runs of {result.duration:g} s at dt = {result.dt:.6g} s in "
            f"{result.wall_seconds:.1f} s, seed {result.entropy}"
        )
    return 0


def _pairs(texts) -> dict:
    """``--backward NAME=VALUE`` options as a mapping (checked by the task)."""
    out = {}
    for text in texts:
        name, sep, value = text.partition("=")
        if not sep:
            raise SceneError("--backward", "", f"expected NAME=VALUE, got {text!r}")
        out[name] = value
    return out
