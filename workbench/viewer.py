"""Replay of recorded trajectories: live in the PyBullet viewer, or as PNG frames rendered headless.

Nothing is simulated here. Each shown record is placed with :meth:`Engine.set_state` (bodies are
moved, never stepped), so a trajectory from any source (a forward run, a reverse run, a
realization read from a store) replays exactly as recorded, forward or time-reversed.

Both entry points frame the whole trajectory with the same camera (:func:`_camera_for`): it looks
at the centre of the bounding box of every recorded centre of mass, from far enough away that the
box's bounding sphere fits the field of view.

The viewer window, the camera and the rendered images are the engine's
(:class:`~workbench.sim.engine.Engine`: :meth:`~workbench.sim.engine.Engine.set_view`,
:meth:`~workbench.sim.engine.Engine.render`, ...); this module decides what to show and when.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from workbench.errors import WorkbenchError
from workbench.scene.model import Scene
from workbench.sim.engine import Engine
from workbench.sim.frames import mass_overrides_from_params
from workbench.sim.state import State, Trajectory

__all__ = ["replay", "render_frames", "display_problem"]

#: Vertical field of view of the camera, degrees (the PyBullet viewer's own default is 60 too).
FOV_DEG = 60.0

#: Camera yaw and pitch, degrees: a three-quarter view from above, with z up.
CAMERA_YAW = 45.0
CAMERA_PITCH = -30.0

#: Smallest radius framed, m. The bounding box holds centres of mass only, so a body resting in
#: place has a box of size 0; this keeps the body and some of its surroundings in view.
MIN_FRAME_RADIUS = 0.5

#: Factor on the framed radius: room for the bodies' own extent around their centres of mass.
FRAME_MARGIN = 1.25

#: Most frames per second of wall time that :func:`replay` shows; denser records are skipped.
REPLAY_FPS = 60.0

#: Pause between repetitions of a looped replay, s, so the restart is visible.
LOOP_PAUSE = 0.5

#: Longest single sleep during replay, s: how quickly a closed window is noticed.
_POLL = 0.1

#: How long to wait for an X server to accept a connection, s, before calling it unreachable.
DISPLAY_TIMEOUT = 1.0

#: What :func:`replay` tells a user whose display cannot be opened.
NO_DISPLAY_HINT = (
    "write PNG frames instead with --frames DIR, or run the viewer under a virtual display "
    "(xvfb-run workbench replay ...)"
)

#: Slack, in frames, when counting how many frames of a given rate fit in a trajectory:
#: record times are sums of float steps (6 * (1/240) is not exactly 0.025), so a last frame due
#: exactly at the end must not be lost to rounding.
_FRAME_SLACK = 1e-6


# ---------------------------------------------------------------------------------- public API
def display_problem(env: dict | None = None) -> str | None:
    """Why the viewer could not open a window, or None when it can (or we cannot tell).

    On Linux PyBullet's GUI needs an X server, and ``p.connect(p.GUI)`` without one does not fail:
    it prints "cannot connect to X server" and hangs, deaf to Ctrl-C. So before connecting, the
    X server named by ``DISPLAY`` (``[host]:N[.screen]``) is asked for a connection: the socket
    ``/tmp/.X11-unix/XN`` (and its abstract twin) for a local display, TCP port 6000 + N on
    ``host`` otherwise, each with :data:`DISPLAY_TIMEOUT`. Other systems need no ``DISPLAY``.
    """
    if not sys.platform.startswith("linux"):
        return None
    display = (os.environ if env is None else env).get("DISPLAY", "")
    if not display:
        return "no display: DISPLAY is not set"
    host, _, rest = display.rpartition(":")
    number = rest.split(".")[0]
    if not number.isdigit():
        return f"no display: DISPLAY={display!r} is not of the form [host]:N"
    if host in ("", "unix"):
        addresses = [(socket.AF_UNIX, f"/tmp/.X11-unix/X{number}")]
        addresses.append((socket.AF_UNIX, f"\0/tmp/.X11-unix/X{number}"))  # abstract socket
    else:
        addresses = [(socket.AF_INET, (host, 6000 + int(number)))]
    for family, address in addresses:
        try:
            with socket.socket(family, socket.SOCK_STREAM) as sock:
                sock.settimeout(DISPLAY_TIMEOUT)
                sock.connect(address)
            return None
        except OSError:
            continue
    return f"no display: cannot connect to the X server of DISPLAY={display!r}"


def replay(
    scene: Scene,
    traj: Trajectory,
    *,
    reverse: bool = False,
    speed: float = 1.0,
    loop: bool = False,
    hold: bool = False,
) -> None:
    """Play ``traj`` in the PyBullet viewer in real time (scaled by ``speed``).

    The bodies are placed at each shown record; the simulation is never stepped. Records denser
    than :data:`REPLAY_FPS` frames per second of wall time are skipped, and frames that fall
    behind the clock are dropped, so playback keeps real time. The record's time is shown as text
    above the scene. Returns when playback ends (or, with ``loop``, when the window is closed);
    closing the window at any time stops playback cleanly.

    Parameters
    ----------
    scene : Scene
        The scene the trajectory was run on (its bodies, in the trajectory's order).
    traj : Trajectory
        Recorded states. Realized mass properties in ``traj.params`` are used, so a body whose
        centre of mass was sampled is drawn where it was simulated.
    reverse : bool
        Play time backwards, from the last record to the first.
    speed : float
        Playback speed factor (2 plays twice as fast as real time); must be > 0.
    loop : bool
        Repeat until the window is closed.
    hold : bool
        After the last frame, keep the window open (showing it) until the user closes it.

    Raises
    ------
    WorkbenchError
        For a non-positive speed, an empty trajectory, a trajectory of other bodies, or no display
        to open the viewer on (:func:`display_problem`; the message says what to do instead).
    """
    if not _positive(speed):
        raise WorkbenchError(f"speed must be a finite number > 0, got {speed!r}")
    speed = float(speed)
    order, tau = _playback(scene, traj, reverse)
    keep = np.unique(_frames_at_rate(tau, REPLAY_FPS / speed))
    shown, due = order[keep], tau[keep] / speed  # wall-clock time of each frame from the start
    target, distance, yaw, pitch = _camera_for(traj.position[order])
    radius = distance * math.sin(math.radians(FOV_DEG) / 2.0)  # the framed radius
    text_at = target + np.array([0.0, 0.0, 0.8 * radius])  # above the scene, inside the view

    problem = display_problem()
    if problem is not None:
        raise WorkbenchError(f"cannot open the viewer ({problem}); {NO_DISPLAY_HINT}")
    with _quiet_c_stdout():
        _replay(scene, traj, shown, due, (target, distance, yaw, pitch), text_at, hold, loop)


def _replay(scene, traj, shown, due, view, text_at, hold: bool, loop: bool) -> None:
    """The viewer's session of :func:`replay`: open the window, show the frames when due."""
    print("PyBullet viewer: close its window or press Ctrl-C to stop", flush=True)
    engine = Engine(
        scene, gui=True, visual=True, mass_overrides=mass_overrides_from_params(traj.params)
    )
    try:
        target, distance, yaw, pitch = view
        engine.freeze()
        engine.set_view(target, distance, yaw, pitch)
        text_id = -1
        while True:
            start = time.perf_counter()
            for k, i in enumerate(shown):
                now = time.perf_counter() - start
                if k + 1 < len(shown) and due[k + 1] <= now:
                    continue  # behind the clock: the next frame is already due
                if not _wait(engine, start + due[k]):
                    return
                engine.set_state(_placement(traj, i))
                text_id = engine.show_text(f"t = {traj.time[i]:.3f} s", text_at, text_id)
            if hold and not loop:
                _wait(engine, math.inf)  # until the window is closed
                return
            if not loop or not _wait(engine, time.perf_counter() + LOOP_PAUSE):
                return
    except engine.error:
        if engine.is_connected():
            raise
        # The window was closed between the check and the call: a normal way to stop.
    finally:
        engine.close()


@contextlib.contextmanager
def _quiet_c_stdout():
    """Silence what C code writes to the process's stdout while Python's ``print`` still reaches
    the terminal.

    PyBullet's GUI prints dozens of start-up lines (threads, argv, the GL context) to file
    descriptor 1, some from its own thread after ``connect`` has returned. For the viewer's
    lifetime descriptor 1 points at ``/dev/null``, and ``sys.stdout`` writes to a duplicate of the
    original descriptor; both are restored afterwards.
    """
    sys.stdout.flush()
    saved = os.dup(1)
    python_stdout = sys.stdout
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
        sys.stdout = os.fdopen(
            os.dup(saved), "w", buffering=1, encoding=getattr(python_stdout, "encoding", None)
        )
        yield
    finally:
        quiet, sys.stdout = sys.stdout, python_stdout
        if quiet is not python_stdout:
            quiet.close()
        os.dup2(saved, 1)
        os.close(saved)


def render_frames(
    scene: Scene,
    traj: Trajectory,
    out_dir: str | Path,
    *,
    reverse: bool = False,
    width: int = 640,
    height: int = 480,
    every: int = 1,
    fps: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Path]:
    """Render records of ``traj`` headless into ``out_dir/frame_00000.png``, ``frame_00001.png``...

    Uses PyBullet's software renderer (``ER_TINY_RENDERER``) in a DIRECT client, so no display is
    needed. The camera frames the whole trajectory and stays fixed for all frames.

    Parameters
    ----------
    scene : Scene
        The scene the trajectory was run on.
    traj : Trajectory
        Recorded states (realized mass properties in ``traj.params`` are used).
    out_dir : str or Path
        Folder for the frames; created if needed. Existing frames of the same names are replaced.
    reverse : bool
        Render time backwards: the first frame is the last record.
    width, height : int
        Image size, pixels.
    every : int
        Render every ``every``-th record (counted from the first one played).
    fps : float, optional
        Instead of ``every``: one frame per ``1/fps`` s of trajectory time, each showing the record
        nearest that time, so the frames play back in real time at ``fps``. A record is repeated
        when records are sparser than ``fps``.
    progress : callable, optional
        ``progress(frames_done, frames_total)``, called after each frame.

    Returns
    -------
    list of Path
        The written files, in playback order.

    Raises
    ------
    WorkbenchError
        For ``every < 1``, a non-positive ``fps`` or size, an empty trajectory, or a trajectory of
        other bodies.
    """
    if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
        raise WorkbenchError(f"every must be an integer >= 1, got {every!r}")
    if fps is not None and not _positive(fps):
        raise WorkbenchError(f"fps must be a finite number > 0, got {fps!r}")
    for name, value in (("width", width), ("height", height)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise WorkbenchError(f"{name} must be an integer >= 1, got {value!r}")
    order, tau = _playback(scene, traj, reverse)
    if fps is not None:
        picks = _frames_at_rate(tau, float(fps))
    else:
        picks = np.arange(0, len(order), every)
    records = order[picks]

    from PIL import Image

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    aspect = width / height
    target, distance, yaw, pitch = _camera_for(traj.position[order], aspect=aspect)
    engine = Engine(
        scene, gui=False, visual=True, mass_overrides=mass_overrides_from_params(traj.params)
    )
    try:
        camera = engine.camera(target, distance, yaw, pitch, FOV_DEG, aspect)
        paths: list[Path] = []
        last_record, rgb = None, None
        for k, i in enumerate(records):
            if i != last_record:  # a repeated record (fps above the record rate) renders once
                engine.set_state(_placement(traj, i))
                rgb = engine.render(camera, width, height)
                last_record = i
            path = out / f"frame_{k:05d}.png"
            Image.fromarray(np.ascontiguousarray(rgb), "RGB").save(path)
            paths.append(path)
            if progress is not None:
                progress(k + 1, len(records))
        return paths
    finally:
        engine.close()


# ---------------------------------------------------------------------------------- helpers
def _camera_for(positions, *, aspect: float = 1.0) -> tuple[np.ndarray, float, float, float]:
    """Camera that frames a set of points.

    Parameters
    ----------
    positions : array_like, shape (..., 3)
        Points to frame, m (e.g. every recorded centre of mass, shape (nt, n, 3)); non-finite
        points are ignored.
    aspect : float
        Image width / height; a portrait image moves the camera back so the points fit across.

    Returns
    -------
    target : ndarray, shape (3,)
        Centre of the points' axis-aligned bounding box, m.
    distance : float
        Camera distance from ``target``, m: the box's bounding sphere (radius at least
        :data:`MIN_FRAME_RADIUS`, times :data:`FRAME_MARGIN`) fits the narrower field of view.
    yaw, pitch : float
        Degrees (:data:`CAMERA_YAW`, :data:`CAMERA_PITCH`), PyBullet's convention with z up.
    """
    pts = np.asarray(positions, dtype=float).reshape(-1, 3)
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    if len(pts) == 0:
        raise WorkbenchError("no finite positions to frame")
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    target = 0.5 * (lo + hi)
    radius = FRAME_MARGIN * max(0.5 * float(np.linalg.norm(hi - lo)), MIN_FRAME_RADIUS)
    half_v = math.radians(FOV_DEG) / 2.0
    half = math.atan(math.tan(half_v) * min(1.0, aspect))  # the narrower half-angle
    distance = radius / math.sin(half)
    return target, distance, CAMERA_YAW, CAMERA_PITCH


def _playback(scene: Scene, traj: Trajectory, reverse: bool) -> tuple[np.ndarray, np.ndarray]:
    """Records to play, in playback order, and the trajectory time elapsed at each, s.

    Records whose positions or orientations are not finite are left out. The elapsed time is
    accumulated from absolute time differences, so it increases whichever way the trajectory's
    clock runs (reverse runs may record decreasing times).
    """
    if traj.n_times == 0:
        raise WorkbenchError("the trajectory has no records to show")
    if tuple(traj.body_names) != tuple(scene.body_names):
        raise WorkbenchError(
            f"the trajectory's bodies ({', '.join(traj.body_names)}) are not the "
            f"scene's ({', '.join(scene.body_names)})"
        )
    ok = (
        np.all(np.isfinite(traj.position), axis=(1, 2))
        & np.all(np.isfinite(traj.orientation), axis=(1, 2))
        & np.isfinite(traj.time)
    )
    order = np.flatnonzero(ok)
    if len(order) == 0:
        raise WorkbenchError("the trajectory has no finite records to show")
    if reverse:
        order = order[::-1]
    t = np.asarray(traj.time, dtype=float)[order]
    tau = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(t)))])
    return order, tau


def _frames_at_rate(tau: np.ndarray, rate: float) -> np.ndarray:
    """For frames every ``1/rate`` s of elapsed time ``tau`` (increasing, from 0), the position
    in ``tau`` of the nearest record (earlier one on ties); consecutive repeats are possible."""
    n_frames = int(math.floor(tau[-1] * rate + _FRAME_SLACK)) + 1
    at = np.arange(n_frames) / rate
    j = np.clip(np.searchsorted(tau, at), 1, max(len(tau) - 1, 1))
    if len(tau) == 1:
        return np.zeros(n_frames, dtype=int)
    earlier = (at - tau[j - 1]) <= (tau[j] - at)
    return np.where(earlier, j - 1, j)


def _positive(x) -> bool:
    """True for a finite real number > 0."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return False
    return math.isfinite(x) and x > 0


def _placement(traj: Trajectory, i: int) -> State:
    """Pose of record ``i`` with zero velocities (the viewer places bodies; it never steps)."""
    zeros = np.zeros_like(traj.position[i])
    return State(traj.position[i], traj.orientation[i], zeros, zeros)


def _wait(engine: Engine, until: float) -> bool:
    """Sleep until ``time.perf_counter() >= until``, in short naps; False once the viewer window
    has been closed."""
    while True:
        if not engine.is_connected():
            return False
        left = until - time.perf_counter()
        if left <= 0:
            return True
        time.sleep(min(left, _POLL))
