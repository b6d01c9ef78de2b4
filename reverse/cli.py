"""``workbench reverse``: step a scene backward from its final state (thin: parsing and output;
the work is :func:`reverse.run.run_reverse`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

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

`at` is the reverse time (s before the final state) of the step the hint acts on (default 0).
Per-step diagnostics (kinetic energy, contact count, islands, LCP rows, pivots, failures and
fallbacks) are stored under /diagnostics, one row per island and step under /reverse/islands.

example:
  workbench reverse reverse_landing --hints scenes/reverse_landing.hints.yaml \\
      --duration 0.5 -o landing.h5 && workbench replay landing.h5
"""


def add_reverse_parser(sub) -> None:
    rv = sub.add_parser(
        "reverse",
        help="step a scene backward from its final state (reverse run)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rv.add_argument("scene", help="scene file, scene script, or shipped scene name")
    rv.add_argument(
        "--duration", type=float, required=True, help="how far back to step, s (required)"
    )
    rv.add_argument("-o", "--output", help="HDF5 file to write (default: <scene>_reverse.h5)")
    rv.add_argument("--dt", type=float, help="time step, s (default: the scene's)")
    rv.add_argument("--hints", metavar="FILE", help="hints file (YAML), see above")
    rv.add_argument(
        "--seed",
        type=int,
        help="seed for the orientation of the friction pyramids of unhinted contacts "
        "(default: a fixed world-aligned choice) and for the --markov draws",
    )
    rv.add_argument(
        "--markov",
        metavar="TABLE",
        help="contact-transition table (JSON, from `workbench markov train`): bodies at rest or "
        "in contact leave the ground backward as often as forward runs land (Twigg & James "
        "2008 sec. 4); without --seed the draws use fresh entropy, stored in the file",
    )
    rv.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a scene parameter (repeatable); values are read as YAML",
    )
    rv.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    rv.set_defaults(func=cmd_reverse)


def cmd_reverse(args) -> int:
    import time

    import numpy as np

    from reverse.hints import load_hints
    from reverse.markov import load_model
    from reverse.run import run_reverse
    from workbench.catalog import find_scene
    from workbench.cli import _progress_bar
    from workbench.errors import SceneError
    from workbench.loader import load_scene, parse_override, scene_to_json
    from workbench.store import write_trajectory

    overrides = dict(parse_override(s) for s in args.overrides)
    path = find_scene(args.scene)
    scene = load_scene(path, overrides)
    for name in ("dt", "duration"):
        value = getattr(args, name)
        if value is not None and not (np.isfinite(value) and value > 0):
            raise SceneError(f"--{name}", "", f"expected a positive number of seconds, got {value}")
    if args.seed is not None and args.seed < 0:
        raise SceneError("--seed", "", f"expected a non-negative integer, got {args.seed}")
    dt = args.dt or scene.settings.dt
    hints = load_hints(args.hints, scene.body_names) if args.hints else []
    hints_text = Path(args.hints).read_text() if args.hints else ""
    markov = load_model(args.markov) if args.markov else None
    out = Path(args.output or f"{path.stem}_reverse.h5")
    n_steps = int(round(args.duration / dt))
    bar = None if args.quiet else _progress_bar(n_steps, "steps")
    t0 = time.perf_counter()
    try:
        result = run_reverse(
            scene,
            duration=args.duration,
            dt=dt,
            hints=hints,
            seed=args.seed,
            progress=None if bar is None else bar.advance,
            markov=markov,
        )
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - t0
    traj = result.trajectory
    write_trajectory(
        out,
        traj,
        scene_text=scene.source_text,
        scene_json=scene_to_json(scene),
        seed_entropy=args.seed,
        extra_attrs={
            "time_reversed": 1,
            "reverse_dt": dt,
            "reverse_duration": float(traj.time[-1]),
            "hints": hints_text,
            **(
                {
                    "markov_table": markov.to_json(),
                    "markov_seed": str(result.markov_entropy),
                    "markov_transitions": result.markov_transitions,
                }
                if markov is not None
                else {}
            ),
        },
        extra_datasets={"reverse/islands": result.island_log},
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
            f"workbench reverse: warning: {failed} island LCP(s) failed (see /reverse/islands "
            f"in {out}); their bodies moved with Lemke's last iterate",
            file=sys.stderr,
        )
    if not args.quiet:
        extra = f", {fallbacks} LCP fallback(s)" if fallbacks else ""
        print(
            f"wrote {out}: {traj.n_times} states of {traj.n_bodies} bodies, "
            f"{traj.time[-1]:g} s back from the final state in {wall:.2f} s{extra}"
        )
    return 0
