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

from reverse.goals.hints import late_hints, resolve_hints
from reverse.goals.markov import load_model
from reverse.pasts.files import (
    FileParts,
    confirmation_parts,
    reverse_attrs,
    verification_parts,
    write_reverse_run,
    write_sampled_runs,
)
from reverse.runs import run as reverse_run
from reverse.runs.confirm import refine_confirmation
from reverse.runs.run import (
    contact_rules,
    moved_bodies,
    plan_reverse_run,
    run_reverse,
    start_overlap,
    step_settings,
    stitch_forward,
)
from reverse.runs.sampling import RunVariation, sample_reverse_runs
from reverse.runs.verify import DEFAULT_BUDGET, DEFAULT_RADIUS
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
    parse_overrides,
    parse_verify_tolerance,
    progress_bar,
    seed_entropy,
)
from workbench.ensemble.run import SceneRef
from workbench.errors import SceneError
from workbench.scene.catalog import find_data

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
        help=f"run even above the bounds on steps ({reverse_run.MAX_REVERSE_STEPS:,} per run) "
        "and record memory (2 GiB) that refuse runs too long to be meant",
    )
    rv.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    rv.set_defaults(func=cmd_reverse)  # fmt: skip


def _scene_defaults(args, scene) -> None:
    """Options the command line leaves unset take the scene's ``reverse:`` section
    (:class:`workbench.scene.model.ReverseDefaults`), then the defaults (controls off)."""
    given = scene.reverse
    if args.duration is None:
        args.duration = given.duration
    if args.dt is None:
        args.dt = given.dt
    if args.hints is None:
        args.hints = given.hints
    for name in ("restitution_blend", "angular_damping", "linear_damping", "slip_damping"):
        if getattr(args, name) is None:
            setattr(args, name, getattr(given, name))
    if args.attract is None:
        args.attract = given.attract
    if args.contacts is None:
        args.contacts = ",".join(given.contacts)


def cmd_reverse(args) -> int:
    path, overrides, scene = load_scene_arguments(args)
    _scene_defaults(args, scene)
    if args.duration is None:
        if "duration" not in scene.settings.model_fields_set:
            raise SceneError(
                "--duration",
                "",
                "expected how far back to step, s (the scene sets neither reverse.duration nor "
                "settings.duration)",
            )
        args.duration = scene.settings.duration
    _parse_energy_limit(args)
    _parse_contacts(args)
    for name in ("dt", "duration", "energy_limit", "then_forward"):
        check_positive(name.replace("_", "-"), getattr(args, name))
    for name in ("restitution_blend", "angular_damping", "linear_damping"):
        check_positive(name.replace("_", "-"), getattr(args, name), allow_zero=True)
    check_positive("slip-damping", args.slip_damping, allow_zero=True, finite=False)
    check_seed(args.seed)
    if args.samples is not None:
        check_count("--samples", args.samples, "run")
        if not 1 <= args.keep <= args.samples:
            raise SceneError("--keep", "", f"expected 1 ≤ k ≤ --samples {args.samples}")
        check_count("--workers", args.workers, "worker")
        if args.then_forward:
            raise SceneError("--then-forward", "", "cannot be combined with --samples")
    elif args.heading != "scene":
        raise SceneError("--heading", "", "a random heading needs --samples")
    parse_verify_tolerance(args)
    args.verify_budget = args.verify
    if args.verify is not None:
        check_count("--verify", args.verify, "PyBullet run")
    if args.verify is not None and args.then_forward:
        raise SceneError("--verify", "", "cannot be combined with --then-forward")
    dt = args.dt or scene.settings.dt
    _check_size(args, scene, dt)
    table = find_data(args.markov, what="contact-transition table") if args.markov else None
    markov = load_model(table) if table is not None else None
    sampled = args.samples is not None
    resolved = resolve_hints(args.hints, path, scene, sampled=sampled, table=markov)
    hints, hints_text, hints_source = resolved.hints, resolved.text, resolved.source
    variation = RunVariation.of(resolved, args.heading == "random") if sampled else None
    n_steps = int(round(args.duration / dt))
    late = late_hints(hints, n_steps, dt)
    if late and not resolved.draws:
        first = min(late, key=lambda h: h.at)
        print(
            f"workbench reverse: warning: {hints_source}: {len(late)} hint(s) act after the last "
            f"backward step of the run ({n_steps} steps of {dt:g} s) and are not used; the "
            f"earliest: {first.where or first.body}.at = {first.at:g} s",
            file=sys.stderr,
        )
    settings, run_rules = step_settings(
        dt,
        args.contacts,
        restitution_blend=args.restitution_blend,
        angular_damping=args.angular_damping,
        linear_damping=args.linear_damping,
        slip_damping=args.slip_damping,
        attract=args.attract,
    )
    options = {
        "duration": args.duration,
        "dt": dt,
        "hints": hints,
        "settings": settings,
        "markov": markov,
        "energy_limit": args.energy_limit,
        "on_energy": args.on_energy,
        **run_rules,
    }
    overlap = start_overlap(scene)
    if overlap.warning(path):
        print(f"workbench reverse: {overlap.warning(path)}", file=sys.stderr)
    attrs = reverse_attrs(
        dt=dt,
        settings=settings,
        hints_text=hints_text,
        start_overlap=overlap.depth,
        markov=markov,
        energy_limit=args.energy_limit,
        persist_contacts="persist_contacts" in run_rules,
        cap_bounces="cap_bounces" in run_rules,
        sample_heading=args.heading if args.samples is not None else None,
    )
    out = Path(args.output or f"{path.stem}_reverse.h5")
    hold_output_lock(args, out)
    if args.samples is not None:
        if resolved.draws:
            options["hints"] = []  # each run draws its own
        return _sample(args, path, overrides, scene, options, attrs, out, variation)
    return _single(args, path, scene, options, attrs, out)


def _parse_contacts(args) -> None:
    """``--contacts RULE[,RULE]`` as a list of rules (``args.contacts``), checked
    (:func:`reverse.runs.run.contact_rules`): a one-line error naming an unknown rule."""
    args.contacts = [r.strip() for r in args.contacts.split(",") if r.strip()]
    try:
        contact_rules(args.contacts)
    except ValueError as exc:
        raise SceneError("--contacts", "", str(exc)) from None


def _parse_energy_limit(args) -> None:
    """``--energy-limit J[,flag]`` as ``args.energy_limit`` (J or None) and ``args.on_energy``
    (``stop`` or ``flag``)."""
    args.on_energy = "stop"
    if args.energy_limit is None:
        return
    text = str(args.energy_limit)
    value, _, mode = text.partition(",")
    if mode and mode not in ("stop", "flag"):
        raise SceneError("--energy-limit", "", f"expected J or J,flag, got {text!r}")
    try:
        args.energy_limit = float(value)
    except ValueError:
        raise SceneError(
            "--energy-limit", "", f"expected a number of joules, got {text!r}"
        ) from None
    args.on_energy = mode or "stop"


def _verify(args, path, overrides, runs, entropy) -> FileParts:
    """Refine the kept runs' earliest states (:func:`reverse.runs.verify.verify_runs`); what
    they add to the file (:func:`reverse.pasts.files.verification_parts`), and a summary printed
    unless quiet."""
    from reverse.runs.verify import verify_runs, verify_settings

    ref = SceneRef(str(path), tuple(sorted(dict(overrides).items())), dt=args.dt)
    settings = verify_settings(args.verify_budget, args.verify_tolerance, args.verify_radius)
    workers = 1 if args.samples is None else args.workers
    scheduler = None if args.samples is None else args.scheduler
    with progress_bar(len(runs), "verified", quiet=args.quiet) as advance:
        t0 = time.perf_counter()
        outcomes = verify_runs(
            ref, runs, entropy=entropy, **settings, workers=workers, scheduler=scheduler,
            progress=advance,
        )  # fmt: skip
        wall = time.perf_counter() - t0
    parts = verification_parts(outcomes, settings, entropy)
    if not args.quiet:
        table = parts.datasets["verify/outcomes"]
        runs_total = int(np.sum(table["pybullet_runs"]))
        print(
            f"forward verification: {parts.attrs['verified_runs']} of {len(outcomes)} run(s) "
            f"refined to rest within {args.verify_tolerance[0]:g} m and "
            f"{math.degrees(args.verify_tolerance[1]):g} deg of the final pose; {runs_total} "
            f"PyBullet runs in {wall:.1f} s ({runs_total / max(len(outcomes), 1):.1f} per run)"
        )
        for row in table:
            print(
                f"  run {row['run']}: {row['status'].decode()}, residual "
                f"{row['residual_position']:.4g} m, {row['residual_angle']:.3g} deg after "
                f"{row['pybullet_runs']} PyBullet runs (reverse state: "
                f"{row['initial_position']:.3g} m, {row['initial_angle']:.3g} deg)"
            )
    return parts


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
    forward_from = None
    if args.then_forward and traj.status == "ok":
        traj = stitch_forward(traj, scene, args.then_forward, options["dt"])
        forward_from = float(result.trajectory.time[-1])
    wall = time.perf_counter() - t0
    parts, confirmation = FileParts(), None
    past = result.trajectory
    if past.status in ("ok", "implausible") and len(past.time) > 1:
        confirmation = refine_confirmation(
            scene, past.state(0), past.state(len(past.time) - 1), float(past.time[-1]),
            budget=scene.reverse.confirm_refine,
        )  # fmt: skip
        parts.add(confirmation_parts(confirmation))
    if args.verify is not None and traj.status == "ok":
        parts.add(_verify(args, path, parse_overrides(args), [(0, traj)], seed_entropy(args.seed)))
    write_reverse_run(
        out, scene, result, traj, attrs=attrs, parts=parts, forward_from=forward_from,
        seed_entropy=args.seed, timestamp=args.timestamp,
    )  # fmt: skip
    failed = int(np.sum(traj.diagnostics["lcp_failed"]))
    fallbacks = int(np.sum(traj.diagnostics["lcp_fallbacks"]))
    if not args.quiet and result.audit is not None:
        print("\n".join(result.audit.lines()))
    if not args.quiet and confirmation is not None:
        print(confirmation.line())
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
    if not moved_bodies(result.trajectory):
        print(
            f"workbench reverse: warning: nothing moved in the {result.trajectory.time[-1]:g} s "
            "back: the bodies rest and nothing starts one backward; give hints (--hints FILE, "
            "--hints script, or the scene's reverse: hints) or a table (--markov TABLE)",
            file=sys.stderr,
        )
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
    with progress_bar(args.samples, "runs", quiet=args.quiet) as advance:
        result = sample_reverse_runs(
            ref,
            samples=args.samples,
            keep=args.keep,
            options=options,
            entropy=args.seed,
            workers=args.workers,
            scheduler=args.scheduler,
            progress=advance,
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
    parts = None
    if args.verify is not None:
        runs = [(o.index, traj) for o, traj, _ in result.kept]
        parts = _verify(args, path, overrides, runs, result.entropy)
    write_sampled_runs(
        out, scene, result, attrs=attrs, samples=args.samples, parts=parts,
        timestamp=args.timestamp,
    )  # fmt: skip
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
