"""``workbench markov train``: train the contact-transition table of the reverse stepper's Markov
model (thin: parsing and output; the work is :func:`reverse.pasts.training.train`);
``workbench markov compare``: the plausibility measure of a table (:mod:`reverse.pasts.measure`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from reverse.goals.markov import KINDS, STATE_NAMES
from reverse.pasts.conditioned import CONDITIONED_BUDGET
from reverse.pasts.training import MAX_TRAIN_STEPS, thrown_body, train, training_problem
from uncertainty.two_sample import DEFAULT_BINS
from workbench.cli.common import (
    add_scene_arguments,
    check_count,
    check_positive,
    check_seed,
    hold_output_lock,
    load_scene_arguments,
    progress_bar,
    seed_entropy,
)
from workbench.errors import MarkovModelError, SceneError

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


#: ``markov compare --backward NAME=VALUE``: the names, the setting each sets
#: (:data:`reverse.pasts.samplers.BACKWARD_CONTROLS`) and how its value is read (the values
#: ``workbench reverse`` takes for the option of that name).
BACKWARD_OPTIONS = {
    "restitution-blend": ("restitution_blend", float),
    "angular-damping": ("angular_damping", float),
    "linear-damping": ("linear_damping", float),
    "contacts": ("persist_contacts", {"persist": True}.__getitem__),
    "heading": ("heading", {"scene": False, "random": True}.__getitem__),
}


def _parse_backward(texts) -> dict:
    """``--backward NAME=VALUE`` options as settings of :data:`BACKWARD_OPTIONS`."""
    out = {}
    for text in texts:
        name, _, value = text.partition("=")
        if name not in BACKWARD_OPTIONS:
            raise SceneError(
                "--backward", "", f"expected NAME=VALUE, NAME among {', '.join(BACKWARD_OPTIONS)};"
                f" got {text!r}"
            )  # fmt: skip
        key, read = BACKWARD_OPTIONS[name]
        try:
            out[key] = read(value)
        except (KeyError, ValueError):
            raise SceneError("--backward", "", f"{name}: unexpected value {value!r}") from None
    for key in ("restitution_blend", "angular_damping", "linear_damping"):
        check_positive(f"backward {key.replace('_', '-')}", out.get(key), allow_zero=True)
    return out


def _no_subcommand(parser) -> int:
    parser.print_help(sys.stderr)
    return 2


def cmd_markov_train(args) -> int:
    path, overrides, scene = load_scene_arguments(args)
    thrown_body(scene)  # exactly one moving body, before any work
    for name in ("dt", "duration"):
        check_positive(name, getattr(args, name), what="number of seconds")
    check_count("-n", args.n, "run")
    check_seed(args.seed)
    check_count("--workers", args.workers, "worker")
    dt = args.dt or scene.settings.dt
    duration = args.duration or scene.settings.duration
    problem = training_problem(args.n, duration, dt)  # refuses < 1 or uncountable steps too
    if problem and not args.force:
        raise SceneError("--duration", "", f"{problem}; pass --force to train anyway")
    entropy = seed_entropy(args.seed)
    out = Path(args.output or f"{path.stem}_markov.json")
    if not out.parent.is_dir():
        raise MarkovModelError(f"{out}: the directory {out.parent} does not exist")
    hold_output_lock(args, out)
    sets = "".join(f" --set {s}" for s in args.overrides)
    kind = "" if args.kind == "plain" else f" --kind {args.kind}"  # plain: as before
    command = (
        f"workbench markov train {args.scene} -n {args.n} --seed {entropy} --dt {dt!r} "
        f"--duration {duration!r}{kind}{sets}"
    )
    t0 = time.perf_counter()
    with progress_bar(args.n, "runs", delay=0.0, quiet=args.quiet) as advance:
        model, runs = train(
            path,
            args.n,
            entropy,
            overrides=overrides,
            dt=dt,
            duration=duration,
            workers=args.workers,
            command=command,
            progress=advance,
            kind=args.kind,
        )
    wall = time.perf_counter() - t0
    try:
        model.save(out)
    except OSError as exc:
        raise MarkovModelError(f"{out}: cannot write: {exc.strerror}") from None
    if not args.quiet:
        steps = sum(len(r.states) - 1 for r in runs)
        print(
            f"wrote {out}: {args.n} runs of {duration:g} s at dt = {dt:.6g} s ({steps} steps) "
            f"in {wall:.2f} s, seed {entropy}"
        )
        P = model.probabilities
        print("P(state at t - dt | state at t), per step:")
        print("  t \\ t-dt " + "".join(f"{s:>10}" for s in STATE_NAMES))
        for i, name in enumerate(STATE_NAMES):
            print(f"  {name:>8} " + "".join(f"{x:10.5f}" for x in P[i]))
        if model.hazards is not None:
            dwell = ", ".join(
                f"{kind} {STATE_NAMES[i]} {model.hazards.mean_dwell(kind, i):.3g} s"
                for kind, i in sorted(model.hazards.tables)
            )
            print(f"mean dwell until a drop (semi-Markov): {dwell}")
    return 0


def cmd_markov_compare(args) -> int:
    from reverse.pasts.measure import format_measurement
    from reverse.pasts.samplers import measure_plausibility
    from reverse.runs.run import check_reversible, plan_reverse_run
    from workbench.figures.plausibility import plot_measurement
    from workbench.scene.catalog import find_data

    path, overrides, scene = load_scene_arguments(args)
    thrown_body(scene)  # exactly one moving body, before any work
    check_reversible(scene)
    for name in ("dt", "duration"):
        check_positive(name, getattr(args, name), what="number of seconds")
    check_count("-n", args.n, "run")
    check_seed(args.seed)
    check_count("--workers", args.workers, "worker")
    if args.n < 2:
        raise SceneError("-n", "", f"expected at least 2 runs per sample, got {args.n}")
    backward = _parse_backward(args.backward)
    if args.bins < 2:
        raise SceneError("--bins", "", f"expected at least 2 bins, got {args.bins}")
    dt = args.dt or scene.settings.dt
    duration = args.duration or scene.settings.duration
    problem = training_problem(2 * args.n, duration, dt)
    if not problem:
        option = "--dt" if args.dt else "--duration"
        plan = plan_reverse_run(
            duration, dt, len(scene.bodies), runs=args.n, held=args.workers, option=option
        )
        problem = plan.problem()
    if problem and not args.force:
        raise SceneError("--duration", "", f"{problem}; pass --force to run it anyway")
    table = find_data(args.table, what="contact-transition table")
    if args.verify_budget is not None and not args.conditioned:
        raise SceneError("--verify-budget", "", "needs --conditioned")
    if args.conditioned:
        check_count("--verify-budget", CONDITIONED_BUDGET if args.verify_budget is None
                    else args.verify_budget, "PyBullet run")  # fmt: skip
    entropy = seed_entropy(args.seed)
    out = Path(args.output or f"{path.stem}_plausibility")
    if out.exists() and not out.is_dir():
        raise SceneError("-o", "", f"{out} exists and is not a folder")
    if not out.parent.is_dir():
        raise SceneError("-o", "", f"the folder {out.parent} does not exist")
    hold_output_lock(args, out)
    t0 = time.perf_counter()
    parts = 3 + int(args.conditioned)
    with progress_bar(parts * args.n, "runs", delay=0.0, quiet=args.quiet) as advance:
        run = measure_plausibility(
            path, scene, table, n=args.n, seed=entropy, dt=dt, duration=duration,
            overrides=tuple(overrides), hints=args.hints, backward=backward,
            conditioned=args.conditioned, verify_budget=args.verify_budget, bins=args.bins,
            workers=args.workers, progress=advance,
            names={"scene": args.scene, "table": args.table, "sets": args.overrides},
        )  # fmt: skip
    wall = time.perf_counter() - t0
    out.mkdir(exist_ok=True)
    (out / "plausibility.json").write_text(run.to_json(), encoding="utf-8")
    figures = ", ".join(plot_measurement(run.figure_samples(), run.comparison.values, dt, out))
    if not args.quiet:
        print(format_measurement(run))
        print(
            f"wrote {out}/plausibility.json, {figures}: {parts} x {args.n} runs "
            f"of {duration:g} s at dt = {dt:.6g} s in {wall:.1f} s, seed {entropy}"
        )
    return 0
