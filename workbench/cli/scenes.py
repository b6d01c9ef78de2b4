"""List what ships with the workbench, each with its description (wrapped to the terminal): the
scenes, the hints files for reverse runs, the inference and inverse specs, and the
contact-transition tables. Any of them is named on the command line by its name alone, from any
folder."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap
from pathlib import Path

from workbench.scene.catalog import (
    hints_summary,
    scene_summary,
    shipped_hints,
    shipped_scenes,
    shipped_specs,
    shipped_tables,
    spec_summary,
    table_summary,
)

__all__ = ["add_scenes_parser", "cmd_scenes"]

EPILOG = """\
examples:
  workbench scenes
  workbench scenes --json
  workbench run sliding_block -o sliding.h5
  workbench reverse reverse_landing --hints reverse_landing.hints.yaml --duration 0.5 -o rev.h5
  workbench infer falling_object_example1 --set case=3
  workbench inverse du_impact_analytic
  workbench reverse markov_block --markov markov_block --duration 1 -o block.h5

Set WORKBENCH_SCENES to a folder of your own scenes, hints and specs to list and find those first.
"""

#: Narrowest width the descriptions are wrapped to, even in a narrower terminal (a description
#: column narrower than ~30 characters reads as a word list).
MIN_COLUMNS = 60


def add_scenes_parser(sub) -> None:
    sc = sub.add_parser(
        "scenes",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sc.add_argument(
        "--json", action="store_true", help="machine-readable JSON on stdout (names, paths, text)"
    )
    sc.set_defaults(func=cmd_scenes)


def _sections() -> list[dict]:
    """Each section: its title, the command that uses its entries, and the entries."""
    specs = shipped_specs()

    def entries(files: list[Path], summary, strip: str = "") -> list[dict]:
        return [
            {
                "name": f.name.removesuffix(strip) if strip else f.stem,
                "path": str(f),
                "description": summary(f),
            }
            for f in files
        ]

    return [
        {
            "key": "scenes",
            "title": "scenes",
            "usage": "workbench run NAME -o NAME.h5",
            "entries": entries(shipped_scenes(), scene_summary),
        },
        {
            "key": "hints",
            "title": "hints files for reverse runs",
            "usage": "workbench reverse SCENE --hints NAME --duration T",
            "entries": entries(shipped_hints(), hints_summary, strip=".yaml"),
        },
        {
            "key": "inference_specs",
            "title": "inference specs",
            "usage": "workbench infer NAME; workbench design NAME --n 1..4",
            "entries": entries([f for f, k in specs if k == "inference"], spec_summary),
        },
        {
            "key": "inverse_specs",
            "title": "inverse specs",
            "usage": "workbench inverse NAME",
            "entries": entries([f for f, k in specs if k == "inverse"], spec_summary),
        },
        {
            "key": "markov_tables",
            "title": "contact-transition tables",
            "usage": "workbench reverse SCENE --markov NAME --duration T",
            "entries": entries(shipped_tables(), table_summary),
        },
    ]


def cmd_scenes(args) -> int:
    """``workbench scenes`` (the lists are :mod:`workbench.scene.catalog`'s ``shipped_*``)."""
    sections = _sections()
    if args.json:
        print(json.dumps({s["key"]: s["entries"] for s in sections}, indent=2))
        return 0
    if not sections[0]["entries"]:
        print(
            "no shipped scenes found (set WORKBENCH_SCENES to a folder of scene files)",
            file=sys.stderr,
        )
        return 1
    columns = max(MIN_COLUMNS, shutil.get_terminal_size().columns)
    blocks = []
    for s in sections:
        if not s["entries"]:
            continue
        folder = Path(s["entries"][0]["path"]).parent
        lines = textwrap.wrap(
            f"{s['title']} in {folder} (use: {s['usage']})",
            columns - 1,
            subsequent_indent="    ",
            break_on_hyphens=False,
        )
        width = max(len(e["name"]) for e in s["entries"])
        indent = " " * (width + 4)
        for e in s["entries"]:
            first = f"  {e['name']:<{width}}  "
            text = e["description"] or "(no description)"
            lines += textwrap.wrap(
                text,
                columns - 1,  # the last column makes some terminals wrap early
                initial_indent=first,
                subsequent_indent=indent,
                break_on_hyphens=False,
            )
        blocks.append("\n".join(lines))
    print("\n\n".join(blocks))
    return 0
