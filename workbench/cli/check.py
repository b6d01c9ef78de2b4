"""Load and validate SCENE (with --set overrides) and print what it holds; exit 2 with one line
naming the field if it is invalid, or if `workbench run` would refuse it as too large (steps or
recorded memory; --force checks it as `run --force` would run it).
"""

from __future__ import annotations

import argparse
import sys

from workbench.cli.common import add_scene_arguments, load_scene_arguments
from workbench.sim.forward import check_run_size, start_overlap

__all__ = ["add_check_parser", "cmd_check"]


EPILOG = """\
examples:
  workbench check falling_object
  workbench check my_scene.yaml --set c=0.2
"""


def add_check_parser(sub) -> None:
    ck = sub.add_parser(
        "check",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_scene_arguments(ck, settings=False)
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
    for b in scene.bodies:
        props = b.mass_properties
        what = "fixed" if b.fixed else (f"{props.mass:.6g} kg" if props else "from URDF")
        print(f"  body {b.name}: {b.shape.type}, {what}")
    for kind in ("joints", "springs", "prescribed", "observers"):
        items = getattr(scene, kind)
        if items:
            names = [getattr(x, "name", None) or x.body or x.joint for x in items]
            print(f"  {kind}: {', '.join(names)}")
    if scene.parameters:
        print("  parameters: " + ", ".join(f"{k}={v}" for k, v in scene.parameters.items()))
    return 0
