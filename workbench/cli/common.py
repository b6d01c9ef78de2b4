"""What the commands of ``workbench`` share: the SCENE, SPEC and ``--set`` arguments, loading the
scene they name, checks of numeric options, report output (JSON or text), and the progress bar
on stderr."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tqdm import tqdm

from workbench.errors import SceneError
from workbench.scene.catalog import find_scene
from workbench.scene.loader import load_scene, parse_override
from workbench.scene.model import Scene

__all__ = [
    "add_set_argument",
    "add_scene_arguments",
    "add_spec_arguments",
    "parse_overrides",
    "load_scene_arguments",
    "check_positive",
    "add_report_arguments",
    "write_report",
    "print_written",
    "Progress",
    "ProgressBar",
    "progress_bar",
]

#: ``progress(done, total)``, the callback the library's long runs take.
Progress = Callable[[int, int], None]


def add_set_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    """The repeatable ``--set NAME=VALUE`` option, collected in ``args.overrides``."""
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE", help=help_text
    )


def add_scene_arguments(parser: argparse.ArgumentParser, settings: bool = True) -> None:
    """SCENE and --set (and --dt, --duration, -q for commands that run it)."""
    parser.add_argument("scene", help="scene file, scene script, or shipped scene name")
    add_set_argument(parser, "override a scene parameter (repeatable); values are read as YAML")
    if settings:
        parser.add_argument("--dt", type=float, help="time step, s (overrides the scene)")
        parser.add_argument(
            "--duration", type=float, help="simulated time, s (overrides the scene)"
        )
        parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")


def add_spec_arguments(parser: argparse.ArgumentParser, spec_help: str, set_help: str) -> None:
    """SPEC (an inference or inverse spec) and --set."""
    parser.add_argument("spec", help=spec_help)
    add_set_argument(parser, set_help)


def parse_overrides(args: argparse.Namespace) -> tuple[tuple[str, Any], ...]:
    """The ``--set`` options as ``(name, value)`` pairs in the order given, values read as YAML."""
    return tuple(parse_override(s) for s in args.overrides)


def load_scene_arguments(
    args: argparse.Namespace,
) -> tuple[Path, tuple[tuple[str, Any], ...], Scene]:
    """The scene that SCENE and ``--set`` name, validated.

    Returns
    -------
    path : Path
        The scene file (a shipped scene's name resolved).
    overrides : tuple of (str, value)
        The ``--set`` pairs in the order given.
    scene : Scene
    """
    overrides = parse_overrides(args)
    path = find_scene(args.scene)
    return path, overrides, load_scene(path, dict(overrides))


def check_positive(
    option: str,
    value: float | None,
    *,
    what: str = "number",
    allow_zero: bool = False,
    finite: bool = True,
) -> None:
    """Raise :class:`SceneError` naming ``--option`` unless ``value`` is None or positive.

    Parameters
    ----------
    option : str
        The option's name without the dashes.
    value : float or None
        None (not given) always passes.
    what : str
        What was expected after "a positive", e.g. ``"number of seconds"``.
    allow_zero : bool
        Accept 0 ("a non-negative ...").
    finite : bool
        Also reject infinity; ``run`` and ``ensemble`` leave it to the scene's settings, whose
        message names the field.
    """
    if value is None:
        return
    ok = (value >= 0 if allow_zero else value > 0) and (not finite or math.isfinite(value))
    if not ok:
        sign = "a non-negative" if allow_zero else "a positive"
        raise SceneError(f"--{option}", "", f"expected {sign} {what}, got {value}")


def add_report_arguments(parser: argparse.ArgumentParser, plot_help: str) -> None:
    """--json, -o OUT.json and --plot DIR, for commands that print a report (infer, design)."""
    parser.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    parser.add_argument("-o", "--output", metavar="OUT.json", help="also write the JSON to a file")
    parser.add_argument("--plot", metavar="DIR", help=plot_help)


def write_report(
    args: argparse.Namespace, report: dict, format_text: Callable[[dict], str]
) -> None:
    """``report`` as JSON to ``-o`` if given, and to stdout as JSON (``--json``) or as text."""
    if args.output:
        Path(args.output).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2) if args.json else format_text(report))


def print_written(args: argparse.Namespace, paths: list[Path]) -> None:
    """Say which files were written, unless stdout is JSON."""
    if not args.json:
        print("wrote " + ", ".join(map(str, paths)))


#: k/M units, the terminal's width, and no trace left when done.
_BAR_STYLE = {"unit_scale": True, "dynamic_ncols": True, "leave": False}


class ProgressBar:
    """tqdm bar on stderr: done/total, rate and ETA; by default it appears only for work lasting
    more than a couple of seconds."""

    def __init__(self, total: int, unit: str, delay: float = 2.0):
        self._bar = tqdm(total=total, unit=unit, delay=delay, file=sys.stderr, **_BAR_STYLE)
        self._done = 0

    def advance(self, done: int, total: int) -> None:
        """Show ``done`` of ``total`` (a :data:`Progress` callback)."""
        if self._bar.total != total:  # e.g. frames at --fps: fewer than records
            self._bar.total = total
        self._bar.update(done - self._done)
        self._done = done

    def close(self) -> None:
        """Remove the bar."""
        self._bar.close()


@contextmanager
def progress_bar(
    total: int, unit: str, *, delay: float = 2.0, quiet: bool = False
) -> Iterator[Progress | None]:
    """A :class:`ProgressBar` for the ``with`` block, removed when it ends.

    Yields its ``advance`` callback for the library's ``progress=`` argument, or None when
    ``quiet``.
    """
    if quiet:
        yield None
        return
    bar = ProgressBar(total, unit, delay)
    try:
        yield bar.advance
    finally:
        bar.close()
