"""``workbench reverse``: step a scene backward from its final state (thin: parsing and output;
the work is :func:`reverse.runs.run.run_reverse`)."""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from reverse.goals.hints import (
    late_hints,
    load_hint_distribution,
    load_hints,
    script_hints,
    script_takes_seed,
)
from reverse.goals.markov import load_model
from reverse.pasts.conditioned import CONDITIONED_BUDGET, MAX_THROWS_PER_PAST
from reverse.runs import run as reverse_run
from reverse.runs.run import (
    plan_reverse_run,
    run_reverse,
    start_overlap,
    stitch_forward,
)
from reverse.runs.sampling import RunVariation, sample_reverse_runs
from reverse.runs.verify import DEFAULT_BUDGET, DEFAULT_RADIUS
from reverse.step.stepper import StepSettings
from workbench.cli.common import (
    add_scene_arguments,
    add_timestamp_argument,
    check_positive,
    load_scene_arguments,
    parse_overrides,
    progress_bar,
)
from workbench.cli.reverse_conditioned import check_conditioned_options, run_conditioned
from workbench.ensemble.run import SceneRef
from workbench.errors import SceneError
from workbench.scene.catalog import find_data, find_hints
from workbench.scene.loader import scene_to_json
from workbench.store import StoreSchema, TrajectoryStore, write_trajectory

__all__ = ["add_reverse_parser", "cmd_reverse"]

DESCRIPTION = """\
Step SCENE backward in time (Twigg & James 2008) from its state, which is taken as the FINAL
state of the motion (bodies at rest unless the scene gives velocities), and write the motion that
would have led to it, in forward time order, to HDF5. `workbench replay OUT.h5` plays it; the
file's attribute time_reversed = 1 says how it was made.

A body at rest stays at rest backward unless a hint says how it arrived: --hints FILE (YAML)
lists per body a sliding direction and speed, a bounce (landing speed), or rolling:

  hints:
    - {body: block, slide: {direction: [1, 0, 0], speed: 2.0}}
    - {body: ball, bounce: 0.15}
    - {body: roller, roll: {direction: [0, 1, 0], speed: 1.0}, at: 0.1}

`at` is the reverse time (s before the final state) of the step the hint acts on (default 0);
{body: NAME, free: false} keeps a body from ever starting to move (§4 "Stacking"). A scene script
may make its own hints with a function hints(**parameters): pass --hints script.
Per-step diagnostics (kinetic energy, contact count, islands, LCP rows, pivots, failures and
fallbacks) are stored under /diagnostics, one row per island and step under /reverse/islands.

Plausibility controls (Twigg & James §4; all off by default, which keeps the steps exact mirrors
of the forward ones): --restitution-blend S sets a pair's restitution to 1 after an elastic
collision and blends it back over S seconds; --angular-damping / --linear-damping C damp
velocities backward at rate C (1/s); --slip-damping C makes the slip of round bodies (balls)
at their static supports decay backward at rate C (1/s; inf: they roll without slipping, sec. 4
"Rolling"); --attract lets constrained bodies of a stack pull on their
supports; --joint-unit-restitution makes contacts between jointed bodies elastic; goals only
start bodies that are free to bounce (--no-free-to-bounce turns the test
off); --energy-limit J stops (or, with --on-energy flag, marks) a run whose kinetic energy
exceeds J joules.

--samples K runs K seeded reverse runs (--workers W or --scheduler ADDR in parallel; run i uses
SeedSequence(seed, spawn_key=(i,)), so the result does not depend on the worker count), rejects
those that fail, exceed --energy-limit or have failed LCPs, and keeps the --keep k with the lowest
peak kinetic energy in one ensemble file (replay one with --realization i); every run's outcome
and why it was rejected are in /sampling/outcomes. Each sampled run may draw its own past:
--heading random turns the moving bodies as one about the vertical by a random angle, a hints
file may give ranges and random directions (a hints distribution:
`slide: {direction: random, speed: {uniform: [0.0, 1.5]}}`), and --hints script calls the scene
script's hints(seed=..., ...) with each run's own seed; these draws use
SeedSequence(seed, spawn_key=(i, 1)).

--duration defaults to the scene's settings.duration when the scene sets one.

--verify refines each kept run's earliest state (its velocities, and its pose within
--verify-radius M,DEG of the reverse run's) until PyBullet, played forward from it for the run's
duration and then until it rests, comes to rest within --verify-tolerance M,DEG (default 1 cm,
5 deg) of the final pose; at most --verify-budget PyBullet runs per run, seeded, in parallel
over --workers. Per run, /verify/outcomes holds the status (refined / not refined), the
residual position (m) and angle (deg), the PyBullet runs it took, and /verify/earliest the
refined earliest state; the trajectory itself stays the reverse run's.

--conditioned K samples K pasts forward instead of stepping backward, for a scene whose one
moving body rests, in the scene's state, on a flat ground (a plane or a fixed box): throws of the
training's throw law (`workbench markov train`; throw i draws from SeedSequence(seed,
spawn_key=(i,))) are kept when PyBullet brings them to rest by the end of --duration on the face
the final pose rests on; the turn about the vertical and the horizontal shift that carry the rest
pose onto the final one carry the whole throw, and its release is refined as --verify refines an
earliest state (--verify-budget, --verify-tolerance, --verify-radius) until PyBullet, played
forward from it, rests within the tolerance of the final pose by the end of --duration. The
realizations are PyBullet's own motions from the refined releases, earliest state first: the
first K confirmed in throw order, the same bits for any --workers. At most --max-throws throws
are tried (default 20 K); /conditioned/outcomes holds one row per throw (status, residuals,
PyBullet runs); fewer than K pasts are written, marked (attribute conditioned_complete = 0), and
end with exit status 1. It does not use the backward stepper and takes none of its options
(--markov, --hints, --samples, --verify, the plausibility controls); stacks, several moving
bodies and final states in motion need the backward stepper.

--then-forward T appends T seconds of PyBullet forward simulation from the scene's state, so an
intermediate frame becomes one trajectory: the reverse run leading to it, then the forward run
from it (the CRASH example of §5).

Limits (docs/reverse.md, "Limits"): a run of more than 100,000 backward steps or 2 GiB of
records is refused with the estimate (steps, time, memory) unless --force; a hint speed above
1000 m/s is refused; bodies overlapping by more than 1 mm in the scene's state are warned about
(attribute start_overlap). A step whose contact LCP was not solved (nor its frictionless retry)
ends the run like a non-finite state: the earlier records are written, exit status 1.

SCENE, a --hints file and a --markov table may be paths or names: a name is looked up next to
the scene (hints) and among the shipped files, which `workbench scenes` lists.

examples:
  workbench reverse reverse_landing --hints reverse_landing.hints.yaml \\
      --duration 0.5 -o landing.h5 && workbench replay landing.h5
  workbench reverse my_scene.yaml --hints my_hints.yaml --duration 0.5 -o mine.h5
  workbench reverse markov_block --markov markov_block --duration 1 \\
      --samples 50 --keep 5 --workers 2 --energy-limit 20 --seed 1 -o block_runs.h5
  workbench reverse markov_block --markov markov_block --samples 50 --heading random \\
      --hints slides.hints.yaml --workers 2 --seed 1 -o block_pasts.h5
  workbench reverse markov_block --markov markov_block --samples 50 --keep 5 --workers 2 \\
      --seed 1 --verify -o verified_pasts.h5
  workbench reverse markov_block --conditioned 20 --seed 1 --workers 2 -o pasts.h5
  workbench reverse spelling_balls --hints script --duration 3 \\
      --restitution-blend 0.2 --angular-damping 2 --linear-damping 0.3 -o spelling.h5
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
        help="seed for the orientation of the friction pyramids of unhinted contacts "
        "(default: a fixed world-aligned choice) and for the --markov draws; with --samples "
        "or --conditioned, the entropy of all runs (default: fresh, stored in the file)",
    )
    rv.add_argument(
        "--markov",
        metavar="TABLE",
        help="contact-transition table (JSON from `workbench markov train`, or the name of a "
        "shipped one: markov_block): bodies at rest or "
        "in contact leave the ground backward as often as forward runs land (Twigg & James "
        "2008 sec. 4); without --seed the draws use fresh entropy, stored in the file",
    )
    g = rv.add_argument_group("plausibility controls (Twigg & James sec. 4)")
    g.add_argument(
        "--restitution-blend",
        type=float,
        default=0.0,
        metavar="S",
        help="after an elastic collision, restitution 1 blended back over S s (0)",
    )
    g.add_argument(
        "--angular-damping",
        type=float,
        default=0.0,
        metavar="C",
        help="backward angular damping rate, 1/s (0)",
    )
    g.add_argument(
        "--linear-damping",
        type=float,
        default=0.0,
        metavar="C",
        help="backward linear damping rate, 1/s (0)",
    )
    g.add_argument(
        "--slip-damping",
        type=float,
        default=0.0,
        metavar="C",
        help="round bodies' slip at their static supports decays backward at rate C, 1/s "
        "(inf: they roll without slipping; 0)",
    )
    g.add_argument(
        "--attract",
        action="store_true",
        help="constrained bodies may take a negative normal force (stacks hold)",
    )
    g.add_argument(
        "--joint-unit-restitution",
        action="store_true",
        help="restitution 1 between bodies connected by joints (articulated bodies)",
    )
    g.add_argument(
        "--no-free-to-bounce",
        dest="free_to_bounce",
        action="store_false",
        help="let goals start any body, not only those free to bounce",
    )
    g.add_argument(
        "--energy-limit", type=float, metavar="J", help="guard on the total kinetic energy, J"
    )
    g.add_argument(
        "--persist-contacts",
        action="store_true",
        help="a moving box whose contacts with a fixed box (the ground) vanish keeps those "
        "within the touch tolerance (PyBullet reports none for any positive box-box gap)",
    )
    g.add_argument(
        "--on-energy",
        choices=("stop", "flag"),
        default="stop",
        help="what the guard does: end the run there (default) or mark it",
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
    m.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="W",
        help="worker processes for --samples or --conditioned (1)",
    )
    m.add_argument(
        "--scheduler", metavar="ADDR", help="Dask scheduler address for --samples or --conditioned"
    )
    m.add_argument(
        "--heading",
        choices=("scene", "random"),
        default="scene",
        help="with --samples: keep the scene's heading (default) or turn the moving bodies by a "
        "random angle about the vertical in each run",
    )
    c = rv.add_argument_group("conditioned forward pasts (one body at rest on a flat ground)")
    c.add_argument(
        "--conditioned",
        type=int,
        metavar="K",
        help="sample K pasts forward: throws resting on the final pose's face at the end of "
        "--duration, carried onto the final pose and refined until PyBullet rests there (not "
        "the backward stepper; --workers, --seed and the --verify-* settings apply)",
    )
    c.add_argument(
        "--max-throws",
        type=int,
        metavar="N",
        help=f"with --conditioned: most throws to try ({MAX_THROWS_PER_PAST} K)",
    )
    v = rv.add_argument_group("forward verification by PyBullet")
    v.add_argument(
        "--verify",
        action="store_true",
        help="refine each kept run's earliest state so that PyBullet, played forward from it, "
        "comes to rest at the scene's pose; residuals and PyBullet runs in /verify/outcomes",
    )
    v.add_argument(
        "--verify-budget",
        type=int,
        default=None,
        metavar="N",
        help=f"most PyBullet forward runs per run ({DEFAULT_BUDGET}; with --conditioned "
        f"{CONDITIONED_BUDGET}: a smaller budget is faster but keeps the less chaotic throws)",
    )
    v.add_argument(
        "--verify-tolerance",
        default="0.01,5",
        metavar="M,DEG",
        help="rest pose tolerance: position m, angle degrees (0.01,5)",
    )
    v.add_argument(
        "--verify-radius",
        default=f"{DEFAULT_RADIUS[0]:g},{math.degrees(DEFAULT_RADIUS[1]):g}",
        metavar="M,DEG",
        help="how far the earliest pose may move: position m, angle degrees "
        f"({DEFAULT_RADIUS[0]:g},{math.degrees(DEFAULT_RADIUS[1]):g})",
    )
    rv.add_argument(
        "--then-forward",
        type=float,
        metavar="T",
        help="append T s of PyBullet forward simulation from the scene's state",
    )
    rv.add_argument(
        "--force",
        action="store_true",
        help=f"run even above the bounds on steps ({reverse_run.MAX_REVERSE_STEPS:,} per run) "
        "and record memory (2 GiB) that refuse runs too long to be meant",
    )
    rv.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    rv.set_defaults(func=cmd_reverse)  # fmt: skip


def cmd_reverse(args) -> int:
    path, overrides, scene = load_scene_arguments(args)
    if args.duration is None:
        if "duration" not in scene.settings.model_fields_set:
            raise SceneError(
                "--duration",
                "",
                "expected how far back to step, s (the scene sets no settings.duration)",
            )
        args.duration = scene.settings.duration
    for name in ("dt", "duration", "energy_limit", "then_forward"):
        check_positive(name.replace("_", "-"), getattr(args, name))
    for name in ("restitution_blend", "angular_damping", "linear_damping"):
        check_positive(name.replace("_", "-"), getattr(args, name), allow_zero=True)
    check_positive("slip-damping", args.slip_damping, allow_zero=True, finite=False)
    if args.seed is not None and args.seed < 0:
        raise SceneError("--seed", "", f"expected a non-negative integer, got {args.seed}")
    if args.conditioned is not None:
        check_conditioned_options(args)
    elif args.max_throws is not None:
        raise SceneError("--max-throws", "", "needs --conditioned")
    if args.samples is not None:
        if args.samples < 1:
            raise SceneError("--samples", "", f"expected at least 1, got {args.samples}")
        if not 1 <= args.keep <= args.samples:
            raise SceneError("--keep", "", f"expected 1 ≤ k ≤ --samples {args.samples}")
        if args.workers < 1:
            raise SceneError("--workers", "", f"expected at least 1, got {args.workers}")
        if args.then_forward:
            raise SceneError("--then-forward", "", "cannot be combined with --samples")
    elif args.heading != "scene":
        raise SceneError("--heading", "", "a random heading needs --samples")
    args.verify_tolerance = _pair("--verify-tolerance", args.verify_tolerance)
    args.verify_radius = _pair("--verify-radius", args.verify_radius)
    if args.verify_budget is None:
        args.verify_budget = CONDITIONED_BUDGET if args.conditioned is not None else DEFAULT_BUDGET
    if args.verify_budget < 1:
        raise SceneError("--verify-budget", "", f"expected at least 1, got {args.verify_budget}")
    if args.verify and args.then_forward:
        raise SceneError("--verify", "", "cannot be combined with --then-forward")
    if args.conditioned is not None:
        return run_conditioned(args, path, overrides, scene)
    dt = args.dt or scene.settings.dt
    _check_size(args, scene, dt)
    variation = None
    if args.hints == "script" and args.samples is not None and script_takes_seed(path):
        # each sampled run calls hints(seed=...) itself; check the script once here
        hints, hints_text = script_hints(path, scene.parameters, scene.body_names, seed=0)
        hints_text = f"# drawn per run by hints(seed=...); this is seed 0's\n{hints_text}"
        hints_source = f"{path}: hints(seed=...)"
        variation = RunVariation(script=str(path))
    elif args.hints == "script":
        hints, hints_text = script_hints(path, scene.parameters, scene.body_names)
        hints_source = f"{path}: hints()"
    elif args.hints:
        hints_path = find_hints(args.hints, path)
        dist = load_hint_distribution(hints_path, scene.body_names)
        if dist.is_random and args.samples is not None:
            hints = dist.draw(np.random.default_rng(0))  # checks only: each run draws its own
            variation = RunVariation(hints=dist)
        else:
            hints = load_hints(hints_path, scene.body_names)  # refuses drawn values
        hints_text = hints_path.read_text(encoding="utf-8")
        hints_source = str(hints_path)
    else:
        hints, hints_text, hints_source = [], "", ""
    if args.heading == "random":
        variation = RunVariation(
            heading=True,
            hints=variation.hints if variation else None,
            script=variation.script if variation else None,
        )
    n_steps = int(round(args.duration / dt))
    late = late_hints(hints, n_steps, dt)
    if late and variation is None:
        first = min(late, key=lambda h: h.at)
        print(
            f"workbench reverse: warning: {hints_source}: {len(late)} hint(s) act after the last "
            f"backward step of the run ({n_steps} steps of {dt:g} s) and are not used; the "
            f"earliest: {first.where or first.body}.at = {first.at:g} s",
            file=sys.stderr,
        )
    table = find_data(args.markov, what="contact-transition table") if args.markov else None
    markov = load_model(table) if table is not None else None
    settings = StepSettings(
        dt,
        free_to_bounce=args.free_to_bounce,
        attract=args.attract,
        restitution_blend=args.restitution_blend,
        angular_damping=args.angular_damping,
        linear_damping=args.linear_damping,
        joint_unit_restitution=args.joint_unit_restitution,
        slip_damping=args.slip_damping,
    )
    options = {
        "duration": args.duration,
        "dt": dt,
        "hints": hints,
        "settings": settings,
        "markov": markov,
        "energy_limit": args.energy_limit,
        "on_energy": args.on_energy,
        **({"persist_contacts": True} if args.persist_contacts else {}),
    }
    overlap = start_overlap(scene)
    if overlap.warning(path):
        print(f"workbench reverse: {overlap.warning(path)}", file=sys.stderr)
    attrs = {
        "time_reversed": 1,
        "reverse_dt": dt,
        "hints": hints_text,
        "start_overlap": overlap.depth,
        "reverse_settings": repr(settings),
        **({"markov_table": markov.to_json()} if markov is not None else {}),
        **({"energy_limit": args.energy_limit} if args.energy_limit else {}),
        **({"persist_contacts": 1} if args.persist_contacts else {}),
        **({"sample_heading": args.heading} if args.samples is not None else {}),
    }
    out = Path(args.output or f"{path.stem}_reverse.h5")
    if args.samples is not None:
        if variation is not None:
            options["hints"] = []  # each run draws its own
        return _sample(args, path, overrides, scene, options, attrs, out, variation)
    return _single(args, path, scene, options, attrs, out)


def _pair(option: str, text: str) -> tuple[float, float]:
    """``"M,DEG"`` as (m, rad); a one-line error unless two positive numbers."""
    try:
        a, b = (float(x) for x in str(text).split(","))
    except ValueError:
        raise SceneError(
            option, "", f"expected two numbers M,DEG (e.g. 0.01,5), got {text!r}"
        ) from None
    if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
        raise SceneError(option, "", f"expected two positive numbers M,DEG, got {text!r}")
    return a, math.radians(b)


def _verify(args, path, overrides, runs, entropy, scene) -> tuple[dict, dict, dict]:
    """Refine the kept runs' earliest states (:func:`reverse.runs.verify.verify_runs`); the
    datasets,
    their attributes and the root attributes to store, and a summary printed unless quiet."""
    from reverse.runs.verify import verify_dataset_attrs, verify_runs, verify_states, verify_table

    ref = SceneRef(str(path), tuple(sorted(dict(overrides).items())), dt=args.dt)
    done = [0]
    workers = 1 if args.samples is None else args.workers
    scheduler = None if args.samples is None else args.scheduler
    with progress_bar(len(runs), "verified", quiet=args.quiet) as advance:

        def count(outcome) -> None:
            done[0] += 1
            if advance is not None:
                advance(done[0], len(runs))

        t0 = time.perf_counter()
        outcomes = verify_runs(
            ref,
            runs,
            entropy=entropy,
            budget=args.verify_budget,
            tolerance=args.verify_tolerance,
            radius=args.verify_radius,
            workers=workers,
            scheduler=scheduler,
            progress=count,
        )
        wall = time.perf_counter() - t0
    table = verify_table(outcomes)
    datasets = {"verify/outcomes": table, "verify/earliest": verify_states(outcomes)}
    attrs = {
        "verify_budget": args.verify_budget,
        "verify_tolerance": [args.verify_tolerance[0], math.degrees(args.verify_tolerance[1])],
        "verify_radius": [args.verify_radius[0], math.degrees(args.verify_radius[1])],
        "verify_entropy": str(entropy),
        "verified_runs": int(np.sum(table["status"] == b"refined")),
    }
    if not args.quiet:
        n_ok = attrs["verified_runs"]
        runs_total = int(np.sum(table["pybullet_runs"]))
        print(
            f"forward verification: {n_ok} of {len(outcomes)} run(s) refined to rest within "
            f"{args.verify_tolerance[0]:g} m and {math.degrees(args.verify_tolerance[1]):g} deg "
            f"of the final pose; {runs_total} PyBullet runs in {wall:.1f} s "
            f"({runs_total / max(len(outcomes), 1):.1f} per run)"
        )
        for row in table:
            print(
                f"  run {row['run']}: {row['status'].decode()}, residual "
                f"{row['residual_position']:.4g} m, {row['residual_angle']:.3g} deg after "
                f"{row['pybullet_runs']} PyBullet runs (reverse state: "
                f"{row['initial_position']:.3g} m, {row['initial_angle']:.3g} deg)"
            )
    return datasets, verify_dataset_attrs(), attrs


def _check_size(args, scene, dt) -> None:
    """Refuse, unless ``--force``, a run whose estimated steps or record memory exceed the bounds
    of :mod:`reverse.runs.run` (one line with the numbers); a step count too large to count is
    refused
    even with ``--force``."""
    option = "--dt" if args.dt else "--duration"
    n_bodies = len(scene.bodies)
    if args.samples is not None:
        held = args.keep + (1 if args.scheduler else args.workers)  # kept + in flight here
        plan = plan_reverse_run(
            args.duration, dt, n_bodies, runs=args.samples, held=held, option=option
        )
        what = f"{args.samples} runs of {args.duration:g} s at dt = {dt:g} s are"
    else:
        plan = plan_reverse_run(args.duration, dt, n_bodies, option=option)
        what = f"{args.duration:g} s at dt = {dt:g} s is"
    problem = plan.problem()
    if not problem and args.then_forward:
        plan = plan_reverse_run(args.then_forward, dt, n_bodies, option="--then-forward")
        problem = plan.problem("forward")
        option, what = "--then-forward", f"{args.then_forward:g} s at dt = {dt:g} s is"
    if problem and not args.force:
        raise SceneError(option, "", f"{what} {problem}; pass --force to run it anyway")


def _single(args, path, scene, options, attrs, out) -> int:
    n_steps = int(round(args.duration / options["dt"]))
    t0 = time.perf_counter()
    with progress_bar(n_steps, "steps", quiet=args.quiet) as advance:
        result = run_reverse(scene, seed=args.seed, progress=advance, **options)
    traj = result.trajectory
    attrs = {**attrs, "reverse_duration": float(traj.time[-1])}
    if options["markov"] is not None:
        attrs["markov_seed"] = str(result.markov_entropy)
        attrs["markov_transitions"] = result.markov_transitions
    if args.then_forward and traj.status == "ok":
        traj = stitch_forward(traj, scene, args.then_forward, options["dt"])
        attrs["forward_from"] = float(result.trajectory.time[-1])
    wall = time.perf_counter() - t0
    datasets, described = {"reverse/islands": result.island_log}, {}
    if args.verify and traj.status == "ok":
        entropy = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy)
        more, described, more_attrs = _verify(
            args, path, parse_overrides(args), [(0, traj)], entropy, scene
        )
        datasets.update(more)
        attrs.update(more_attrs)
    write_trajectory(
        out,
        traj,
        scene_text=scene.source_text,
        scene_json=scene_to_json(scene),
        seed_entropy=args.seed,
        extra_attrs=attrs,
        extra_datasets=datasets,
        extra_dataset_attrs=described or None,
        timestamp=args.timestamp,
    )
    failed = int(np.sum(traj.diagnostics["lcp_failed"]))
    fallbacks = int(np.sum(traj.diagnostics["lcp_fallbacks"]))
    if traj.status != "ok":
        print(
            f"workbench reverse: {path}: {traj.message}; wrote {out} with {traj.n_times} states "
            f"(marked '{traj.status}')",
            file=sys.stderr,
        )
        return 1
    if failed:
        print(
            f"workbench reverse: warning: {failed} island LCP(s) failed and were solved again "
            f"without friction for that step (see /reverse/islands in {out})",
            file=sys.stderr,
        )
    if traj.message:  # e.g. the energy guard in flag mode
        print(f"workbench reverse: warning: {traj.message}", file=sys.stderr)
    if not args.quiet:
        extra = f", {fallbacks} LCP fallback(s)" if fallbacks else ""
        fwd = f" and {args.then_forward:g} s forward" if args.then_forward else ""
        print(
            f"wrote {out}: {traj.n_times} states of {traj.n_bodies} bodies, "
            f"{result.trajectory.time[-1]:g} s back from the final state{fwd} in {wall:.2f} s"
            f"{extra}"
        )
    return 0


def _sample(args, path, overrides, scene, options, attrs, out, variation=None) -> int:
    ref = SceneRef(str(path), tuple(sorted(dict(overrides).items())))
    done = [0]
    with progress_bar(args.samples, "runs", quiet=args.quiet) as advance:

        def count(outcome) -> None:
            done[0] += 1
            if advance is not None:
                advance(done[0], args.samples)

        result = sample_reverse_runs(
            ref,
            samples=args.samples,
            keep=args.keep,
            options=options,
            entropy=args.seed,
            workers=args.workers,
            scheduler=args.scheduler,
            progress=count,
            variation=variation,
        )
    table = result.table()
    if not result.kept:
        print(
            f"workbench reverse: {path}: none of the {args.samples} runs was accepted "
            f"({_reasons(table)}); nothing written",
            file=sys.stderr,
        )
        return 1
    first = result.kept[0][1]
    datasets = {"sampling/outcomes": table}
    for r, (_, _, log) in enumerate(result.kept):
        datasets[f"reverse/islands_{r}"] = log
    described, verified = {}, {}
    if args.verify:
        runs = [(o.index, traj) for o, traj, _ in result.kept]
        more, described, verified = _verify(args, path, overrides, runs, result.entropy, scene)
        datasets.update(more)
    with TrajectoryStore.create(
        out,
        StoreSchema.from_trajectory(first),
        len(result.kept),
        scene_text=scene.source_text,
        scene_json=scene_to_json(scene),
        seed_entropy=result.entropy,
        kind="ensemble",
        timestamp=args.timestamp,
        extra_attrs={
            **attrs,
            "reverse_duration": float(first.time[-1]),
            "samples": args.samples,
            "kept_runs": ",".join(str(o.index) for o, _, _ in result.kept),
            **verified,
        },
        extra_datasets=datasets,
        extra_dataset_attrs=described or None,
    ) as store:
        store.write_many((r, traj) for r, (_, traj, _) in enumerate(result.kept))
    if not args.quiet:
        print(_summary(table, args.energy_limit))
        order = "lowest peak kinetic energy first"
        print(
            f"wrote {out}: {len(result.kept)} of {args.samples} runs kept ({order}; replay one "
            f"with --realization i) in {result.wall_seconds:.1f} s"
        )
    return 0


def _reasons(table) -> str:
    c = Counter(r.decode().split(":")[0] for r in table["reason"])
    return ", ".join(f"{n} {k}" for k, n in c.most_common())


def _summary(table, limit) -> str:
    """A few lines: peak energies of all runs and why runs were rejected."""
    peak = table["peak_energy"][np.isfinite(table["peak_energy"])]
    lines = []
    if peak.size:
        q = np.percentile(peak, [0, 50, 90, 100])
        lines.append(
            "peak kinetic energy of the runs (J): min {:.4g}, median {:.4g}, 90% {:.4g}, "
            "max {:.4g}".format(*q)
            + (f"; limit {limit:g}" if limit else "")
        )
    kept = table[table["kept"]]
    lines.append(
        "kept: "
        + ", ".join(
            f"run {r['index']} ({r['peak_energy']:.4g} J)" for r in np.sort(kept, order="rank")
        )
    )
    rejected = table[~table["kept"]]
    if rejected.size:
        lines.append(f"not kept: {_reasons(rejected)}")
    return "\n".join(lines)
