"""What the commands of ``workbench`` share: the SCENE, SPEC and ``--set`` arguments, loading the
scene they name, checks of numeric options and output paths, report output (JSON or text), and
the progress bar on stderr.

Commands check every argument (counts, workers, seeds, output paths, the scene) before they draw
a progress bar, so a bad argument gives one line on stderr and nothing else; the bar itself is
drawn only once the library reports progress (:class:`ProgressBar`).
"""

from __future__ import annotations

import argparse
import json
import math
import operator
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tqdm import tqdm

from workbench.errors import StoreError
from workbench.scene.catalog import find_scene
from workbench.scene.loader import load_scene, parse_override
from workbench.scene.model import Scene
from workbench.tasks.inputs import (
    MAX_COUNT,
    check_count,
    check_positive,
    check_seed,
    resolve_workers,
    seed_entropy,
    where,
)

__all__ = [
    "add_set_argument",
    "add_scene_arguments",
    "add_spec_arguments",
    "add_workers_arguments",
    "add_verify_arguments",
    "parse_overrides",
    "load_scene_arguments",
    "MAX_COUNT",
    "check_positive",
    "check_count",
    "check_seed",
    "seed_entropy",
    "check_sampling_options",
    "interrupted",
    "task_workers",
    "check_output",
    "hold_output_lock",
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


def add_timestamp_argument(parser: argparse.ArgumentParser) -> None:
    """--timestamp, for commands that write an HDF5 file."""
    parser.add_argument(
        "--timestamp",
        action="store_true",
        help="record the creation time in the file (attribute 'created'); without it the same "
        "inputs give the same bytes",
    )


def add_workers_arguments(parser, what: str) -> None:
    """--workers W and --scheduler ADDR: where the independent runs of ``what`` go."""
    parser.add_argument(
        "--workers", type=int, default=1, metavar="W", help=f"worker processes for {what} (1)"
    )
    parser.add_argument("--scheduler", metavar="ADDR", help=f"Dask scheduler address for {what}")


def add_verify_arguments(
    parser, budget: tuple[str, int], radius: tuple[float, float], tolerance: str = "0.01,5"
) -> None:
    """The settings of the forward verification by PyBullet: the budget option (``budget`` =
    its name and default) and --verify-tolerance M,DEG[,M,DEG] (the rest pose's tolerance, then
    how far the refined earliest pose may move: ``radius`` = (m, rad) by default)."""
    option, default = budget
    if option == "--verify":
        parser.add_argument(
            "--verify",
            nargs="?",
            type=int,
            const=default,
            metavar="N",
            help="refine each kept run's earliest state until PyBullet, played forward from it, "
            f"comes to rest at the scene's pose, at most N PyBullet runs per run ({default}); "
            "residuals and PyBullet runs in /verify/outcomes",
        )
    else:
        parser.add_argument(
            option,
            type=int,
            default=default,
            metavar="N",
            help=f"most PyBullet runs of one refinement ({default})",
        )
    m, deg = radius[0], math.degrees(radius[1])
    parser.add_argument(
        "--verify-tolerance",
        default=tolerance,
        metavar="M,DEG[,M,DEG]",
        help=f"rest pose tolerance, position m and angle degrees ({tolerance}); then how far "
        f"the earliest pose may move ({m:g},{deg:g})",
    )
    parser.set_defaults(verify_radius=f"{m:g},{deg:g}")


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


def workers_value(text: str) -> int | str:
    """``--workers``: a whole number or ``auto`` (one per core; its count is checked with the
    other options by :func:`check_count` after :func:`resolve_workers`)."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of workers or 'auto', got {text!r}"
        ) from None


def check_sampling_options(args: argparse.Namespace, what: str) -> tuple[tuple[str, Any], ...]:
    """The checks of the commands that run ``-n`` realizations over workers or a scheduler
    (``ensemble``, ``sensitivity``), before the scene loads: ``--scheduler`` (a typo fails at
    once), ``-n`` (counting ``what``), ``--workers`` (``auto`` resolved in ``args``), ``--seed``,
    ``--dt`` and ``--duration``. Returns the parsed ``--set`` overrides."""
    if args.scheduler is not None:
        where(args.scheduler)  # a malformed address fails here, before the scene loads
    overrides = parse_overrides(args)
    check_count("-n", args.n, what)
    args.workers = resolve_workers(args.workers, args.scheduler)
    check_count("--workers", args.workers, "worker")
    check_seed(args.seed)
    for name in ("dt", "duration"):
        check_positive(name, getattr(args, name), what="number of seconds", finite=False)
    return overrides


def task_workers(args: argparse.Namespace) -> int | str:
    """``--workers`` and ``--scheduler`` as the tasks' one ``workers`` argument
    (:func:`workbench.tasks.inputs.where`): N, a scheduler's address, or ``"local:N"``."""
    if args.scheduler is None:
        return args.workers
    if args.scheduler == "local":
        return "local" if args.workers is None else f"local:{args.workers}"
    return args.scheduler


def interrupted(command: str, out: Path) -> int:
    """Say on stderr that ``command`` was interrupted and that ``out`` keeps what was completed
    (``--resume`` continues it); the exit status of an interrupt, 130."""
    print(
        f"workbench {command}: interrupted; completed realizations are kept in {out}; "
        "continue with --resume",
        file=sys.stderr,
    )
    return 130


def check_output(path: str | Path | None, *, folder: bool = False) -> None:
    """Raise :class:`StoreError` unless a file (or, with ``folder``, a folder) can be written at
    ``path``; None (not asked for) passes.

    A file needs an existing, writable directory and must not be a directory itself. A folder is
    created with its parents when the figures are written, so it needs its nearest existing
    ancestor to be a writable directory, and must not be a file.
    """
    if path is None:
        return
    path = Path(path)
    try:
        path.exists()
    except OSError as exc:  # a name the system cannot take (ENAMETOOLONG)
        raise StoreError(f"{path}: not a usable file name ({exc.strerror})") from None
    if folder:
        if path.exists() and not path.is_dir():
            raise StoreError(f"{path}: is a file, expected a folder")
        existing = next(p for p in (path, *path.parents) if p.exists())
        if not existing.is_dir():
            raise StoreError(f"{path}: {existing} is a file, expected a folder")
    else:
        if path.is_dir():
            raise StoreError(f"{path}: is a directory")
        existing = path.parent
        if not existing.is_dir():
            raise StoreError(f"{path}: directory {existing} does not exist")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise StoreError(f"{path}: directory {existing} is not writable")


def hold_output_lock(args: argparse.Namespace, *paths: str | Path | None) -> None:
    """Hold the one write lock of each output in ``paths`` (None: not asked for) until the
    command ends (:func:`workbench.store.lock.output_lock`): another command writing one of them,
    of any kind, is refused naming its pid, and this one refuses them. ``main`` releases it.
    Call it once the output paths are known, before the work.

    Raises
    ------
    StoreError
        Another process writes one of ``paths``.
    """
    from workbench.store.lock import output_lock

    held = getattr(args, "held_locks", None)
    if held is None:
        raise TypeError("hold_output_lock: the command was not started by workbench.cli.main")
    for path in paths:
        if path is not None:
            held.enter_context(output_lock(path))


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


#: Whole counts (no k/M scaling: tqdm's ``unit_scale`` shows 32 as "32.0"), the terminal's
#: width, and no trace left when done.
_BAR_STYLE = {"unit_scale": False, "dynamic_ncols": True, "leave": False}


class ProgressBar:
    """tqdm bar on stderr: done/total as integers, rate and ETA; by default it appears only for
    work lasting more than a couple of seconds.

    The bar is created at the first :meth:`advance`, when the library reports that the work has
    started: an error raised before (a bad argument, a scene that does not load, a file that
    cannot be written) leaves nothing on stderr but its one line.

    Parameters
    ----------
    total : int
        Whole items of work: records, steps, realizations, runs or frames; 0 when the end is
        not known (the bar then counts, with a rate and no ETA).
    unit : str
        Their name, plural (``"steps"``).
    delay : float
        Seconds before the bar appears (tqdm's ``delay``), s.
    """

    def __init__(self, total: int, unit: str, delay: float = 2.0):
        self._total = _whole(total, "total")
        self._unit = unit
        self._delay = delay
        self._bar = None
        self._done = 0

    def advance(self, done: int, total: int) -> None:
        """Show ``done`` of ``total`` (a :data:`Progress` callback)."""
        done, total = _whole(done, "done"), _whole(total, "total")
        if self._bar is not None and done < self._done:  # a new phase (runs, then verified)
            self._bar.close()
            self._bar = None
        if self._bar is None:
            # what was done before the work started (a resumed ensemble's realizations) is the
            # bar's initial count, not progress: the rate and ETA count only this run's work
            self._bar = tqdm(
                total=total or None,  # 0: a count without a known end (model calls)
                initial=done,
                # without a total tqdm writes "542model calls": the space is the unit's
                unit=self._unit if total else f" {self._unit}",
                delay=self._delay,
                file=sys.stderr,
                **_BAR_STYLE,
            )
            self._done = done
        if self._bar.total != (total or None):  # e.g. frames at --fps: fewer than records
            self._bar.total = total or None
        self._bar.update(done - self._done)
        self._done = done

    def close(self) -> None:
        """Remove the bar (if it was drawn)."""
        if self._bar is not None:
            self._bar.close()


def _whole(count, what: str) -> int:
    """``count`` as an int; a programming error (not a user's) if it is not a whole number."""
    if isinstance(count, float):
        if count.is_integer():
            return int(count)
    else:
        try:
            return operator.index(count)  # int, numpy integers
        except TypeError:
            pass
    raise TypeError(f"progress {what} must be a whole number of items, got {count!r}")


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
