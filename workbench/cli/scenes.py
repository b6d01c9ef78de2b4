"""List the shipped scenes with a one-line description."""

from __future__ import annotations

import sys

from workbench.scene.catalog import scene_summary, shipped_scenes

__all__ = ["add_scenes_parser", "cmd_scenes"]


def add_scenes_parser(sub) -> None:
    sc = sub.add_parser("scenes", description=__doc__)
    sc.set_defaults(func=cmd_scenes)


def cmd_scenes(args) -> int:
    """``workbench scenes`` (the list is :func:`workbench.scene.catalog.shipped_scenes`)."""
    files = shipped_scenes()
    if not files:
        print(
            "no shipped scenes found (set WORKBENCH_SCENES to a folder of scene files)",
            file=sys.stderr,
        )
        return 1
    width = max(len(f.stem) for f in files)
    print(f"shipped scenes in {files[0].parent}:")
    for f in files:
        print(f"  {f.stem:<{width}}  {scene_summary(f)}")
    print("run one with: workbench run NAME -o NAME.h5")
    return 0
