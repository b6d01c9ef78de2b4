"""``workbench markov train``: train the contact-transition table of the reverse stepper's Markov
model (thin: parsing and output; the work is :func:`reverse.markov_training.train`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from reverse.markov import STATE_NAMES
from reverse.markov_training import MAX_TRAIN_STEPS, thrown_body, train, training_problem
from workbench.cli.common import (
    add_scene_arguments,
    check_count,
    check_positive,
    check_seed,
    load_scene_arguments,
    progress_bar,
)
from workbench.errors import MarkovModelError, SceneError

__all__ = ["add_markov_parser", "cmd_markov_train"]

DESCRIPTION = """\
Contact-transition Markov model of backward runs (Twigg & James 2008 §4, Figs. 9-10).

examples:
  workbench markov train SCENE -n 1000 -o table.json    throw SCENE's body N times, count
                                                        its contact-state transitions
  workbench reverse SCENE --markov table.json ...       use the table backward
  workbench markov train markov_block -n 1000 --seed 2008 -o markov_block.json
"""

TRAIN_DESCRIPTION = """\
Throw the one moving body of SCENE at the (fixed) ground N times in PyBullet, with a random
orientation, linear and angular velocity each time, record its contact state after every step
(0 free, 1 vertex, 2 edge, 3 three or more contact points: a face) and write the table of
P(state at t - dt | state at t) for drops to fewer contacts -- the only transitions a backward
step can cause -- with the counts, the landing speeds, and the command, seed, n and dt that
produced it (JSON).

Run i draws its throw from SeedSequence(seed, spawn_key=(i,)): the same seed writes the same
bytes whatever --workers. Planes are 1 m thick boxes, as in the reverse stepper.

examples:
  workbench markov train markov_block -n 1000 --seed 2008 --workers 2 \\
      -o data/markov_block.json
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
        "--force",
        action="store_true",
        help=f"train even above the bound of {MAX_TRAIN_STEPS:,} steps in all",
    )
    tr.set_defaults(func=cmd_markov_train)


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
    entropy = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy)
    out = Path(args.output or f"{path.stem}_markov.json")
    if not out.parent.is_dir():
        raise MarkovModelError(f"{out}: the directory {out.parent} does not exist")
    sets = "".join(f" --set {s}" for s in args.overrides)
    command = (
        f"workbench markov train {args.scene} -n {args.n} --seed {entropy} --dt {dt!r} "
        f"--duration {duration!r}{sets}"
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
    return 0
