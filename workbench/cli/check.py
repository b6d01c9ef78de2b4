"""Load and validate SCENE (with --set overrides) and print what it holds; exit 2 with one line
naming the field if it is invalid, or if `workbench run` would refuse it as too large (steps or
recorded memory; --force checks it as `run --force` would run it).
"""

from __future__ import annotations

import argparse
import sys

from workbench.cli.common import add_scene_arguments, load_scene_arguments
from workbench.sim.forward import check_run_size, start_overlap

__all__ = ["add_check_parser", "cmd_check", "body_summary"]


EPILOG = """\
examples:
  workbench check falling_object
  workbench check my_scene.yaml --set c=0.2
  workbench check spelling_balls --set text=LO --verbose    # one line per body
"""

#: Bodies listed one per line without --verbose; above, a summary by shape.
BODY_LINES = 20


def add_check_parser(sub) -> None:
    ck = sub.add_parser(
        "check",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_scene_arguments(ck, settings=False)
    ck.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help=f"list every body (without it, a scene of more than {BODY_LINES} bodies is "
        "summarised by shape)",
    )
    ck.add_argument(
        "--force",
        action="store_true",
        help="accept a run estimated beyond the step or record-memory limit (as run --force)",
    )
    ck.set_defaults(func=cmd_check)


def cmd_check(args) -> int:
    """``workbench check``: the settings, bodies, joints, springs, observers and parameters."""
    _, _, scene = load_scene_arguments(args)
    check_run_size(scene, force=args.force)
    st = scene.settings
    overlap = start_overlap(scene)
    print(f"{scene.source}: valid. {scene.description}".rstrip())
    if overlap.warning(scene.source):
        print(f"workbench check: {overlap.warning(scene.source)}", file=sys.stderr)
    print(
        f"  {st.n_steps} steps of {st.dt:g} s ({st.duration:g} s), "
        f"{st.n_steps // st.record_every + 1} records"
    )
    if args.verbose or len(scene.bodies) <= BODY_LINES:
        for b in scene.bodies:
            props = b.mass_properties
            what = "fixed" if b.fixed else (f"{props.mass:.6g} kg" if props else "from URDF")
            print(f"  body {b.name}: {b.shape.type}, {what}")
    else:
        print(f"  bodies: {body_summary(scene)} (--verbose lists each)")
    for kind in ("joints", "springs", "prescribed", "observers"):
        items = getattr(scene, kind)
        if items:
            names = [getattr(x, "name", None) or x.body or x.joint for x in items]
            print(f"  {kind}: {', '.join(names)}")
    if scene.parameters:
        print("  parameters: " + ", ".join(f"{k}={v}" for k, v in scene.parameters.items()))
    return 0


def body_summary(scene) -> str:
    """``762: 675 moving spheres (20.25 kg in all), 87 fixed boxes``: the bodies counted by
    shape and whether they move, in the order they first appear."""
    groups: dict[tuple[str, bool], list] = {}
    for b in scene.bodies:
        groups.setdefault((b.shape.type, bool(b.fixed)), []).append(b)
    parts = []
    for (shape, fixed), members in groups.items():
        n = len(members)
        plural = "" if n == 1 else "es" if shape == "box" else "s"
        text = f"{n} {'fixed' if fixed else 'moving'} {shape}{plural}"
        masses = [m.mass_properties.mass for m in members if m.mass_properties and not fixed]
        if masses and len(masses) == n:
            text += f" ({sum(masses):.6g} kg in all)"
        parts.append(text)
    return f"{len(scene.bodies)}: " + ", ".join(parts)
