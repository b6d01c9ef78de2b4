"""``workbench.replay``: a stored run shown again, in the PyBullet viewer, as PNG frames, a video
or a self-contained web page (three.js); the task of ``workbench replay``.

The file is read when a view asks for it: the one run shown (``realization``, 0 by default), or,
for the page of a file of many runs without a ``realization``, the nominal run and the first
:data:`HTML_MAX_RUNS` realizations. What is left out, or shown although marked, is said in the
result's ``notes``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import WorkbenchError
from workbench.replay.viewer import FPS_RANGE, MAX_SIDE, SPEED_RANGE
from workbench.replay.web.caption import page_caption, page_title
from workbench.tasks.result import TaskResult

__all__ = [
    "replay",
    "Replay",
    "ReplayOptions",
    "replay_options",
    "HTML_MAX_RUNS",
    "HTML_ASPECT",
    "FPS_RANGE",
    "MAX_SIDE",
    "SPEED_RANGE",
]

#: Most realizations of an ensemble put on one web page (plus the nominal run): each is a full
#: trajectory in the page, and beyond a few dozen overlaid runs the page is slow and unreadable.
HTML_MAX_RUNS = 20

#: Width / height the web page's camera is framed for (a landscape browser window).
HTML_ASPECT = 16.0 / 9.0

#: The first bytes of every HDF5 file (its superblock signature at offset 0, where the workbench
#: writes it; HDF5 spec, "Format Signature").
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"

#: Statuses of runs that ran to their end with every record and were only marked: a reverse
#: run whose physical audit failed (reverse/runs/run.py).
_MARKS = ("implausible",)


@dataclass(frozen=True)
class ReplayOptions:
    """The options of a view, checked: ``size`` (width, height) px, ``fps``, ``speed`` and the
    ``view`` of ``camera`` (a Camera, a (yaw, pitch) view, or None: framed)."""

    size: tuple[int, int]
    fps: float
    speed: float
    view: Any


def replay_options(
    *,
    size: str | tuple[int, int] = "640x480",
    fps: float = 30.0,
    speed: float = 1.0,
    camera=None,
    video: str | os.PathLike | None = None,
) -> ReplayOptions:
    """Check the options of a view before anything is read or written (one line naming the
    option): ``size`` ``"WxH"``, ``fps`` and ``speed`` within the viewer's ranges, ``camera``
    ``"X,Y,Z,D[,YAW,PITCH]"`` or ``"YAW,PITCH"``, a ``video`` name's suffix."""
    from workbench.replay.camera import Camera
    from workbench.replay.viewer import FOV_DEG, FPS_RANGE, SPEED_RANGE, VIDEO_SUFFIXES

    wh = _size(size)
    fps = _within("--fps", fps, FPS_RANGE)
    speed = _within("--speed", speed, SPEED_RANGE)
    if video is not None and not str(video).lower().endswith(VIDEO_SUFFIXES):
        raise WorkbenchError(
            f"--video {video}: expected a file name ending in " + " or ".join(VIDEO_SUFFIXES)
        )
    view = camera if isinstance(camera, Camera) else _camera_option(camera, FOV_DEG)
    return ReplayOptions(wh, fps, speed, view)


@dataclass
class Replay(TaskResult):
    """A stored file ready to be shown.

    Attributes
    ----------
    file : Path
    scene : Scene
        The scene stored with the run(s).
    attrs : dict
        The file's root attributes.
    realization : int or None
    notes : list of str
        What a view said of the runs (left out of the page, shown although marked or failed).
    """

    file: Path
    scene: Any
    attrs: dict
    realization: int | None = None
    notes: list[str] = field(default_factory=list)
    _run: Any = None

    def trajectory(self):
        """The one run shown: realization ``realization`` (default 0), read once."""
        from workbench.store import TrajectoryStore

        if self._run is None:
            with TrajectoryStore.open(self.file) as store:
                self._run = _one_run(store, self.realization, self.notes)
        return self._run

    def page_runs(self) -> dict:
        """The runs of the web page, label -> Trajectory: with no ``realization``, a file of
        many runs gives its nominal run and first :data:`HTML_MAX_RUNS` realizations."""
        from workbench.store import TrajectoryStore

        with TrajectoryStore.open(self.file) as store:
            nominal = store.read_nominal() if self.realization is None else None
            if self.realization is None and (store.n_realizations > 1 or nominal is not None):
                return _page_runs(store, nominal, self.notes)
            label = "run" if store.n_realizations == 1 else f"realization {self.realization or 0}"
        return {label: self.trajectory()}

    def page(self, path: str | os.PathLike, *, speed: float = 1.0, reverse: bool = False,
             camera=None, runs: dict | None = None) -> Path:  # fmt: skip
        """Write the self-contained web page that plays the run(s) (``--html``; ``runs``:
        :meth:`page_runs` by default)."""
        from workbench.replay.viewer import FOV_DEG, body_extent
        from workbench.replay.web import write_replay_page

        options = replay_options(speed=speed, camera=camera)
        runs = self.page_runs() if runs is None else runs
        shown = list(runs.values())
        return write_replay_page(
            path, self.scene, runs, camera=_camera(options.view, self.scene, shown, HTML_ASPECT,
            FOV_DEG), title=page_title(self.scene, self.attrs),
            caption=page_caption(self.scene, runs),
            # the page fits the framed box to its canvas; a camera the user set stays as set
            frame=None if _is_camera(options.view) else body_extent(self.scene, shown),
            reverse=reverse, speed=options.speed,
        )  # fmt: skip

    def save(self, path: str | os.PathLike) -> Path:
        """The web page (:meth:`page`), the file ``workbench replay --html`` writes."""
        return self.page(path)

    def to_xarray(self):
        """The stored file (:func:`workbench.store.open_dataset`)."""
        from workbench.store import open_dataset

        return open_dataset(self.file)

    def frames(self, folder, *, progress=None, reverse: bool = False, **options) -> list[Path]:
        """PNG frames of the run in ``folder`` (``--frames``); ``options`` as
        :func:`replay_options` (``size``, ``fps``, ``speed``, ``camera``)."""
        from workbench.replay.viewer import render_frames

        return self._images(render_frames, folder, progress, reverse, options)

    def video(self, path, *, progress=None, reverse: bool = False, **options) -> int:
        """A video of the run (``--video``: ``.mp4`` or ``.gif``); returns its frame count."""
        from workbench.replay.viewer import write_video

        return self._images(write_video, path, progress, reverse, {**options, "video": path})

    def show(self, *, reverse: bool = False, loop: bool = False, hold: bool = True,
             speed: float = 1.0, camera=None) -> None:  # fmt: skip
        """Play the run in the PyBullet viewer (needs a display)."""
        from workbench.replay.viewer import VIEWER_ASPECT, VIEWER_FOV_DEG
        from workbench.replay.viewer import replay as play

        options = replay_options(speed=speed, camera=camera)
        traj = self.trajectory()
        view = _camera(options.view, self.scene, [traj], VIEWER_ASPECT, VIEWER_FOV_DEG)
        play(self.scene, traj, reverse=reverse, speed=options.speed, loop=loop, hold=hold,
             camera=view)  # fmt: skip

    def _images(self, write, target, progress, reverse, options):
        from workbench.replay.viewer import FOV_DEG

        checked = replay_options(**options)
        traj = self.trajectory()
        w, h = checked.size
        camera = _camera(checked.view, self.scene, [traj], w / h, FOV_DEG)
        return write(
            self.scene, traj, target, reverse=reverse, width=w, height=h, fps=checked.fps,
            speed=checked.speed, camera=camera, progress=progress,
        )  # fmt: skip


def replay(file: str | os.PathLike, *, realization: int | None = None) -> Replay:
    """A stored run (``workbench run``, ``ensemble``, ``reverse``, ``pasts``) ready to be shown
    (``workbench replay``): :meth:`Replay.page`, :meth:`Replay.video`, :meth:`Replay.frames`,
    :meth:`Replay.show`.

    Parameters
    ----------
    file : path
        An HDF5 result file.
    realization : int, optional
        The realization to show (default 0; a page of a file of many runs shows the first
        :data:`HTML_MAX_RUNS` and the nominal run unless one is asked for).

    Returns
    -------
    Replay

    Examples
    --------
    >>> import workbench
    >>> _ = workbench.run("falling_object", duration=0.2).save("fall.h5")
    >>> page = workbench.replay("fall.h5").page("fall.html")
    >>> page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    True
    """
    from workbench.scene.loader import scene_from_json
    from workbench.store import TrajectoryStore

    _refuse_a_scene(str(file))
    with TrajectoryStore.open(file) as store:
        scene = scene_from_json(store.attrs.get("scene_json", ""), source=str(file))
        attrs = dict(store.attrs)
    return Replay(Path(file), scene, attrs, realization)


def _is_camera(view) -> bool:
    from workbench.replay.camera import Camera

    return isinstance(view, Camera)


def _refuse_a_scene(name: str) -> None:
    """A one-line error when ``name`` is not an HDF5 file but a scene (a shipped scene's name
    or a scene file): replay shows a stored run, and the error says which command makes one."""
    path = Path(name)
    if path.is_file():
        with path.open("rb") as f:
            if f.read(len(_HDF5_SIGNATURE)) == _HDF5_SIGNATURE:
                return
    from workbench.scene.catalog import find_scene, is_scene_file

    try:
        scene = find_scene(name)
    except WorkbenchError:
        return  # neither: the store says what is wrong with it
    if scene.is_file() and is_scene_file(scene):
        raise WorkbenchError(
            f"{name}: a scene, not a result file; replay shows a stored run: make one with "
            f"`workbench run {name} -o run.h5` (or `workbench reverse` or `workbench ensemble`) "
            "and replay run.h5"
        )


def _size(size) -> tuple[int, int]:
    """``size`` (``"WxH"`` or a pair) as (width, height), each from 1 to
    :data:`~workbench.replay.viewer.MAX_SIDE`."""
    from workbench.replay.viewer import MAX_SIDE

    text = size if isinstance(size, str) else "x".join(str(int(v)) for v in size)
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise WorkbenchError(f"--size: expected WIDTHxHEIGHT, got {text!r}") from None
    if not (1 <= w <= MAX_SIDE and 1 <= h <= MAX_SIDE):
        raise WorkbenchError(
            f"--size: expected a width and height from 1 to {MAX_SIDE} pixels, got {text!r}"
        )
    return w, h


def _within(option: str, value: float, bounds: tuple[float, float]) -> float:
    """``value`` unless outside ``bounds`` (NaN included): then a one-line error."""
    lo, hi = bounds
    if not lo <= value <= hi:
        raise WorkbenchError(f"{option}: expected a number from {lo:g} to {hi:g}, got {value:g}")
    return value


def _camera_option(text, fov: float):
    """``--camera`` as a Camera, a (yaw, pitch) view, or None (:func:`parse_camera_option`); a
    view already read is returned as it is."""
    from workbench.replay.camera import parse_camera_option

    if text is None or not isinstance(text, str):
        return text  # none, or a (yaw, pitch) view already read
    try:
        return parse_camera_option(text, fov=fov)
    except ValueError as exc:
        raise WorkbenchError(f"--camera: {exc}") from None


def _camera(view, scene, trajectories, aspect: float, fov: float):
    """The camera ``--camera`` gave (with this output's ``fov``), or the one
    :func:`frame_camera` frames, from the view ``--camera YAW,PITCH`` gave if it did."""
    from workbench.replay.viewer import frame_camera

    if _is_camera(view):
        return replace(view, fov=fov)
    return frame_camera(scene, trajectories, aspect, fov=fov, view=view)


def _one_run(store, realization: int | None, notes: list[str]):
    """Realization ``realization`` (default 0) of ``store``, or a one-line error saying why it
    cannot be shown: out of range, not completed, or failed with no finite record. A failed run
    with records (a non-finite state stops a run and keeps the records before it) is shown,
    with a note saying so.
    """
    from workbench.sim.state import finite_records

    i = 0 if realization is None else realization
    if not 0 <= i < store.n_realizations:
        raise WorkbenchError(
            f"{store.path}: --realization {i}: the file holds realizations 0 to "
            f"{store.n_realizations - 1}"
        )
    name = "the run" if store.n_realizations == 1 else f"realization {i}"
    if not store.completed[i]:
        done = np.flatnonzero(store.completed)
        hint = f"completed: {_ranges(done)}" if len(done) else "none is completed"
        raise WorkbenchError(f"{store.path}: {name} is not completed ({hint}; --realization I)")
    traj = store.read(i)
    if traj.status != "ok":
        failure = f"{name} failed ({traj.status}: {traj.message})"
        kept = len(finite_records(traj))
        if not kept:
            raise WorkbenchError(f"{store.path}: {failure}")
        if traj.status in _MARKS:
            notes.append(
                f"{name} is marked '{traj.status}' ({traj.message}); showing all its {kept} records"
            )
        else:
            notes.append(f"{failure}; showing its {kept} records before the failure")
    return traj


def _page_runs(store, nominal, notes: list[str]) -> dict:
    """The runs of an ensemble's web page, label -> Trajectory: the ``nominal`` run (if any) and
    the first :data:`HTML_MAX_RUNS` realizations that completed with status ok and have a
    finite record, and a note naming what was left out. The nominal run alone when no
    realization qualifies; a one-line error when there is nothing to show."""
    from workbench.sim.state import finite_records

    runs = {} if nominal is None else {"nominal": nominal}
    completed = np.flatnonzero(store.completed)
    statuses = store.statuses()  # of the completed realizations, in order
    failed, empty, extra = [], [], []
    shown = 0
    for i, status in zip(completed.tolist(), statuses, strict=True):
        if status != "ok":
            failed.append(i)
        elif shown >= HTML_MAX_RUNS:
            extra.append(i)
        else:
            traj = store.read(i)
            if len(finite_records(traj)) == 0:
                empty.append(i)
                continue
            runs[f"realization {i}"] = traj
            shown += 1
    if not runs:
        raise WorkbenchError(
            f"{store.path}: nothing to show: no nominal run, and none of the "
            f"{store.n_realizations} realizations completed with a finite record "
            f"({len(completed)} completed, {len(failed)} of them failed)"
        )
    not_done = store.n_realizations - len(completed)
    parts = []
    if extra:
        parts.append(f"{len(extra)} completed realizations ({_ranges(extra)})")
    if failed:
        parts.append(f"{len(failed)} failed ({_ranges(failed)})")
    if empty:
        parts.append(f"{len(empty)} without a finite record ({_ranges(empty)})")
    if not_done:
        parts.append(f"{not_done} not completed")
    if parts:
        notes.append(
            f"the page shows {shown} of {store.n_realizations} realizations"
            + (" and the nominal run" if nominal is not None else "")
            + "; left out: "
            + ", ".join(parts)
            + " (--realization I shows realization I)"
        )
    return runs


def _ranges(indices) -> str:
    """``[20, 21, 22, 25]`` -> ``"20-22, 25"``."""
    out, start, prev = [], None, None
    for i in map(int, indices):
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            out.append(f"{start}-{prev}" if prev > start else f"{start}")
            start = prev = i
    if start is not None:
        out.append(f"{start}-{prev}" if prev > start else f"{start}")
    return ", ".join(out)
