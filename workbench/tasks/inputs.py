"""What the tasks take: a scene (a path, a shipped name or a :class:`Scene`), ``set=`` overrides,
``workers`` (where the runs go) and the checks of counts, seeds and positive numbers, each raising
:class:`~workbench.errors.OptionError` named as the command's option.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import OptionError, WorkbenchWarning

__all__ = [
    "note",
    "SceneInput",
    "scene_input",
    "Where",
    "where",
    "check_positive",
    "check_count",
    "check_seed",
    "seed_entropy",
    "resolve_workers",
    "MAX_COUNT",
    "pose_tolerances",
]

#: Largest count a task takes (-n, --workers, ...). A store preallocates per-realization
#: arrays (completed, recorded, parameters: about 20 bytes per realization and more per
#: parameter), so 1e8 realizations already need gigabytes before anything runs; beyond that a
#: count is a typo, and beyond 2**63 it would not even fit the file's integers.
MAX_COUNT = 10**8


def note(notes: list[str], text: str) -> None:
    """Keep ``text`` in a result's ``notes`` and issue it at once as a
    :class:`~workbench.errors.WorkbenchWarning` (a notebook shows it; the command line prints it
    as one line before the work goes on)."""
    notes.append(text)
    warnings.warn(text, WorkbenchWarning, stacklevel=3)


@dataclass(frozen=True)
class SceneInput:
    """A task's scene, resolved.

    Attributes
    ----------
    path : Path or None
        The scene file (None for a :class:`Scene` built in Python without one).
    overrides : tuple of (str, value)
        The ``set=`` pairs, in the order given.
    scene : Scene
        Loaded and validated, overrides applied.
    """

    path: Path | None
    overrides: tuple
    scene: Any

    @property
    def stem(self) -> str:
        """The name default output files start with."""
        return self.path.stem if self.path is not None else "scene"

    def ref(self, what: str, **settings):
        """A :class:`~workbench.ensemble.run.SceneRef` (what workers rebuild the scene from);
        a :class:`ValueError` naming ``what`` for a scene without a file."""
        from workbench.ensemble.run import SceneRef

        if self.path is None:
            raise ValueError(
                f"{what} rebuilds the scene in its workers from a file: pass the scene's path "
                "or shipped name (and set=...), not a Scene built in Python"
            )
        return SceneRef(str(self.path), self.overrides, **settings)


def scene_input(scene, overrides: Mapping[str, Any] | None = None) -> SceneInput:
    """Resolve ``scene`` (path, shipped name or :class:`Scene`) with ``overrides``.

    A :class:`Scene` keeps its file (so workers can rebuild it) when loading that file gives the
    same scene (no ``--set`` was applied, no settings changed); otherwise it has none, and the
    tasks that run in workers ask for the file.
    """
    from workbench.scene.model import Scene

    pairs = tuple((str(k), v) for k, v in dict(overrides or {}).items())
    if isinstance(scene, Scene):
        if pairs:
            raise ValueError("set= applies to a scene's file or name, not to a loaded Scene")
        return SceneInput(_file_of(scene), (), scene)
    if not isinstance(scene, (str, os.PathLike)):
        raise TypeError(f"scene: expected a path, a shipped scene name or a Scene, got {scene!r}")
    from workbench.scene.catalog import find_scene
    from workbench.scene.loader import load_scene

    path = find_scene(scene)
    return SceneInput(path, pairs, load_scene(path, dict(pairs)))


def _file_of(scene) -> Path | None:
    """The file ``scene`` was loaded from, if loading it again gives the same scene."""
    from workbench.scene.loader import load_scene, scene_to_json

    source = Path(scene.source)
    if not source.is_file():
        return None
    try:
        same = scene_to_json(load_scene(source)) == scene_to_json(scene)
    except Exception:  # the file changed or needs parameters: the Scene stands alone
        return None
    return source if same else None


@dataclass(frozen=True)
class Where:
    """Where a task's independent runs go: ``workers`` processes here (1: this process) or a
    Dask ``scheduler`` (an address, or ``"local"`` with ``workers`` Dask workers)."""

    workers: int
    scheduler: str | None


def where(workers: int | str | None = 1) -> Where:
    """The one ``workers`` argument of the tasks, split into processes and scheduler.

    Parameters
    ----------
    workers : int, str or None
        ``N`` processes on this machine (1, or None: this process), ``"auto"`` (one per core),
        ``"tcp://HOST:PORT"`` (a Dask scheduler) or ``"local:N"`` (N Dask workers on 127.0.0.1,
        started for the job; ``"local"``: one per core).

    Examples
    --------
    >>> where(2)
    Where(workers=2, scheduler=None)
    >>> where("local:3")
    Where(workers=3, scheduler='local')
    """
    if isinstance(workers, str) and workers != "auto" and not workers.strip().isdigit():
        if workers.startswith("local"):
            _, _, n = workers.partition(":")
            count = resolve_workers(n or "auto")
            check_count("--workers", count, "worker")
            return Where(count, "local")
        from workbench.ensemble.run import check_scheduler_address

        check_scheduler_address(workers)
        return Where(1, workers)
    count = resolve_workers(workers)
    check_count("--workers", count, "worker")
    return Where(count, None)


def resolve_workers(value: int | str | None, scheduler: str | None = None) -> int:
    """The number of workers ``value`` asks for (``"auto"``: the cores this process may use).

    Not given (None): one, this process, except with the scheduler ``"local"``, whose cluster
    gets a worker per core."""
    if value is None:
        value = "auto" if scheduler == "local" else 1
    if value == "auto":
        from workbench.ensemble.executors import auto_workers

        return auto_workers()
    try:
        return int(value)
    except (TypeError, ValueError):
        raise OptionError(
            "--workers", f"expected a number, 'auto', 'local:N' or tcp://HOST:PORT, got {value!r}"
        ) from None


def check_positive(
    option: str,
    value: float | None,
    *,
    what: str = "number",
    allow_zero: bool = False,
    finite: bool = True,
) -> None:
    """Raise :class:`OptionError` naming ``--option`` unless ``value`` is None or positive.

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
        raise OptionError(f"--{option}", f"expected {sign} {what}, got {value}")


def check_count(option: str, value: int, what: str) -> None:
    """Raise :class:`OptionError` naming ``option`` unless 1 <= ``value`` <= :data:`MAX_COUNT`
    (``what``: what is counted, singular)."""
    if value < 1:
        raise OptionError(option, f"expected at least 1 {what}, got {value}")
    if value > MAX_COUNT:
        raise OptionError(option, f"expected at most {MAX_COUNT:.0e} {what}s, got {value}")


def check_seed(value: int | None) -> None:
    """Raise :class:`OptionError` naming ``--seed`` unless it is None or a non-negative integer
    (numpy's ``SeedSequence`` takes no negative entropy)."""
    if value is not None and value < 0:
        raise OptionError("--seed", f"expected a non-negative integer, got {value}")


def seed_entropy(value: int | None) -> int:
    """``value``, or a fresh entropy drawn from the operating system (``SeedSequence().entropy``)
    that the result stores, so that the run can be made again."""
    if value is not None:
        return int(value)
    import numpy as np

    return int(np.random.SeedSequence().entropy)


def pose_tolerances(
    text, radius: tuple[float, float]
) -> tuple[tuple[float, float], tuple[float, float]]:
    """``--verify-tolerance``: ``"M,DEG[,M,DEG]"`` (or a tuple of those numbers) as the rest
    pose's tolerance and how far the earliest pose may move, each (m, rad); ``radius`` (m, rad)
    when only the first pair is given, read as the command line shows it (``M,DEG`` to 6
    digits, the default of ``--help``). A one-line :class:`OptionError` unless positive numbers.

    Examples
    --------
    >>> tol, rad = pose_tolerances("0.01,5", (0.05, math.radians(10)))
    >>> tol[0], round(tol[1], 6), rad[0], round(rad[1], 6)
    (0.01, 0.087266, 0.05, 0.174533)
    """
    if not isinstance(text, str):
        text = ",".join(f"{x:g}" for x in text)
    parts = text.split(",")
    if len(parts) == 4:
        return _pose_pair(",".join(parts[:2]), text), _pose_pair(",".join(parts[2:]), text)
    if len(parts) == 2:
        shown = f"{radius[0]:g},{math.degrees(radius[1]):g}"
        return _pose_pair(text, text), _pose_pair(shown, text)
    raise OptionError(
        "--verify-tolerance", f"expected M,DEG or M,DEG,M,DEG (e.g. 0.01,5), got {text!r}"
    )


def _pose_pair(pair: str, text: str) -> tuple[float, float]:
    """``"M,DEG"`` as (m, rad)."""
    try:
        a, b = (float(x) for x in pair.split(","))
    except ValueError:
        raise OptionError(
            "--verify-tolerance", f"expected numbers M,DEG[,M,DEG] (e.g. 0.01,5), got {text!r}"
        ) from None
    if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
        raise OptionError("--verify-tolerance", f"expected positive numbers, got {text!r}")
    return a, math.radians(b)
