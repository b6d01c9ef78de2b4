"""Replay of recorded trajectories: live in the PyBullet viewer, or rendered headless as PNG
frames or a video (MP4 or GIF).

Nothing is simulated here. Each shown record is placed with :meth:`Engine.set_state` (bodies are
moved, never stepped), so a trajectory from any source (a forward run, a reverse run, a
realization read from a store) replays exactly as recorded, forward or time-reversed.

Every way of showing a run (the viewer, frames, videos, and the web page of :mod:`workbench.web`)
starts from the camera of :func:`frame_camera`: it fits the box the moving bodies sweep over the
run (each body's bounding sphere around every recorded centre of mass; planes and fixed bodies,
the stage, are left out) into the image with a margin, from the view among a few that shows the
box largest.

The viewer window, the camera and the rendered images are the engine's
(:class:`~workbench.sim.engine.Engine`: :meth:`~workbench.sim.engine.Engine.set_view`,
:meth:`~workbench.sim.engine.Engine.render`, ...); this module decides what to show and when.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from workbench.camera import Camera
from workbench.display import display_problem
from workbench.errors import WorkbenchError
from workbench.scene.bodies import shape_hull_vertices
from workbench.scene.model import Scene
from workbench.sim.engine import Engine
from workbench.sim.frames import mass_overrides_from_params
from workbench.sim.state import (
    FRAME_SLACK,
    State,
    Trajectory,
    check_same_bodies,
    finite_records,
    records_at_rate,
)

__all__ = [
    "replay",
    "render_frames",
    "write_video",
    "frame_camera",
    "body_extent",
    "body_boxes",
    "VIDEO_SUFFIXES",
    "FOV_DEG",
    "VIEWER_FOV_DEG",
    "VIEWER_ASPECT",
    "FPS_RANGE",
    "SPEED_RANGE",
    "MAX_SIDE",
    "MAX_FRAMES",
]

#: Vertical field of view of rendered frames and videos, degrees.
FOV_DEG = 60.0

#: The PyBullet viewer's own vertical field of view, degrees, and its window's width / height
#: (1024 x 768): read from ``getDebugVisualizerCamera``'s projection matrix under Xvfb
#: (PyBullet 3.2.7; ``resetDebugVisualizerCamera`` cannot change the field of view).
VIEWER_FOV_DEG = 90.0
VIEWER_ASPECT = 4.0 / 3.0

#: Default camera yaw and pitch, degrees: a three-quarter view from above, with z up.
CAMERA_YAW = 45.0
CAMERA_PITCH = -30.0

#: Pitches, degrees, :func:`frame_camera` chooses from (the first is the default's).
CANDIDATE_PITCHES = (CAMERA_PITCH, -45.0, -60.0)

#: Pitches steeper than the default are tried only for a flat extent, whose height is below this
#: fraction of its longer horizontal side: looking down on a tall motion (a fall) would
#: foreshorten the very direction it moves in.
FLAT_RATIO = 0.5

#: A horizontal extent this many times longer than wide is seen square on from its long side
#: (yaw 0 or 90): a line of text reads left to right, a slide runs across the image. Seen
#: diagonally it could fill more of the image, slanted.
ELONGATED_RATIO = 2.0

#: A pitch other than the default must cover this many times more of the image to be chosen.
VIEW_PREFERENCE = 1.15

#: Largest fraction of the image's half-width and half-height the framed box may reach from the
#: centre: a 5% margin on each side.
FRAME_FILL = 0.9

#: Half-size, m, of the box framed when no body is worth framing (only planes): some ground.
EMPTY_FRAME_HALF = 1.0

#: Suffixes :func:`write_video` writes.
VIDEO_SUFFIXES = (".mp4", ".gif")

#: GIF frame delays are whole hundredths of a second, and browsers show delays under 2/100 s as
#: 10/100 s: a GIF plays at 100/k frames per second, k >= 2.
_GIF_TICKS_PER_S = 100
_GIF_MIN_TICKS = 2

#: Most frames per second of wall time that :func:`replay` shows; denser records are skipped.
REPLAY_FPS = 60.0

#: Pause between repetitions of a looped replay, s, so the restart is visible.
LOOP_PAUSE = 0.5

#: Longest single sleep during replay, s: how quickly a closed window is noticed.
_POLL = 0.1

#: What :func:`replay` tells a user whose display cannot be opened.
NO_DISPLAY_HINT = (
    "instead write PNG frames (--frames DIR), a video (--video FILE.mp4) or a web page "
    "(--html FILE.html), or run the viewer under a virtual display (xvfb-run workbench replay ...)"
)

#: Frames per second of frames and videos, least and most. Below 0.1 (a frame per 10 s of run)
#: frames no longer show motion, and the formats break further down: a GIF frame's delay is a
#: 16-bit count of hundredths of a second (at most 655.35 s: 0.0015 fps), and imageio's ffmpeg
#: fails near 1e-9. Above 1000 frames would only repeat records (PyBullet's default step is
#: 1/240 s, and runs record at most every step) while each costs a render (about 0.1 s here).
FPS_RANGE = (0.1, 1000.0)

#: Playback speed factors, least and most, of the viewer, frames and videos. Frames are taken
#: every speed / fps s of run time, so at 0.01 a 1 s run is 100 s of playback (3000 frames at
#: 30 fps); beyond 100 a run of seconds is over in one or two frames.
SPEED_RANGE = (0.01, 100.0)

#: Largest width or height of frames and videos, pixels: 8K video's width. PyBullet's software
#: renderer keeps colour, depth and segmentation buffers of 4 bytes a pixel each, so an 8192 x
#: 8192 frame already takes 0.8 GB and tens of seconds; 100000 x 100000 would never finish.
MAX_SIDE = 8192

#: Most frames one call renders: 100000 frames are nearly an hour of video at 30 fps and hours
#: of rendering at the ~10 frames/s measured here (docs/replay.md); more is a slip of --fps or
#: --speed.
MAX_FRAMES = 100_000


# ---------------------------------------------------------------------------------- public API
def replay(
    scene: Scene,
    traj: Trajectory,
    *,
    reverse: bool = False,
    speed: float = 1.0,
    loop: bool = False,
    hold: bool = False,
    camera: Camera | None = None,
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
        Playback speed factor (2 plays twice as fast as real time), within
        :data:`SPEED_RANGE`.
    loop : bool
        Repeat until the window is closed.
    hold : bool
        After the last frame, keep the window open (showing it) until the user closes it.
    camera : Camera, optional
        Where the viewer's camera starts (its ``fov`` is ignored: the viewer's is
        :data:`VIEWER_FOV_DEG`); default :func:`frame_camera`. The user can move it.

    Raises
    ------
    WorkbenchError
        For a speed outside :data:`SPEED_RANGE`, an empty trajectory, a trajectory of other
        bodies, or no display to open the viewer on (:func:`display_problem`; the message says
        what to do instead).
    """
    speed = _check_range("speed", speed, SPEED_RANGE)
    order, tau = _playback(scene, traj, reverse)
    keep = np.unique(records_at_rate(tau, REPLAY_FPS / speed))
    shown, due = order[keep], tau[keep] / speed  # wall-clock time of each frame from the start
    problem = display_problem()
    if problem is not None:
        raise WorkbenchError(f"cannot open the viewer ({problem}); {NO_DISPLAY_HINT}")
    if camera is None:
        camera = frame_camera(scene, [traj], VIEWER_ASPECT, fov=VIEWER_FOV_DEG)
    # the time, 80% of the way up the viewer's half-height at the target's depth
    half_height = camera.distance * math.tan(math.radians(VIEWER_FOV_DEG) / 2.0)
    text_at = np.asarray(camera.target, dtype=float) + 0.8 * half_height * camera.up()
    with _quiet_c_stdout():
        _replay(scene, traj, shown, due, camera, text_at, hold, loop)


def _replay(scene, traj, shown, due, camera: Camera, text_at, hold: bool, loop: bool) -> None:
    """The viewer's session of :func:`replay`: open the window, show the frames when due."""
    print("PyBullet viewer: close its window or press Ctrl-C to stop", flush=True)
    engine = Engine(
        scene, gui=True, visual=True, mass_overrides=mass_overrides_from_params(traj.params)
    )
    try:
        engine.freeze()
        engine.set_view(np.asarray(camera.target), camera.distance, camera.yaw, camera.pitch)
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
    speed: float = 1.0,
    camera: Camera | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Path]:
    """Render records of ``traj`` headless into ``out_dir/frame_00000.png``, ``frame_00001.png``...

    Uses PyBullet's software renderer (``ER_TINY_RENDERER``) in a DIRECT client, so no display is
    needed. The camera stays fixed for all frames.

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
        Image size, pixels, each at most :data:`MAX_SIDE`.
    every : int
        Render every ``every``-th record (counted from the first one played).
    fps : float, optional
        Instead of ``every``: one frame per ``speed / fps`` s of trajectory time, each showing
        the record nearest that time, so the frames played at ``fps`` show the run at ``speed``
        times real time. A record is repeated when records are sparser. Within
        :data:`FPS_RANGE`.
    speed : float
        Playback speed factor of the frames taken with ``fps``, within :data:`SPEED_RANGE`; must
        stay 1 without ``fps``.
    camera : Camera, optional
        Default: :func:`frame_camera` for this image's aspect.
    progress : callable, optional
        ``progress(frames_done, frames_total)``, called after each frame.

    Returns
    -------
    list of Path
        The written files, in playback order.

    Raises
    ------
    WorkbenchError
        For ``every < 1``, an ``fps``, ``speed`` or size out of range, a ``speed`` without
        ``fps``, more than :data:`MAX_FRAMES` frames, an empty trajectory, or a trajectory of
        other bodies.
    """
    if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
        raise WorkbenchError(f"every must be an integer >= 1, got {every!r}")
    speed = _check_range("speed", speed, SPEED_RANGE)
    if fps is not None:
        fps = _check_range("fps", fps, FPS_RANGE)
    elif speed != 1.0:
        raise WorkbenchError("speed applies to frames taken at a rate: give fps too")
    _check_size(width, height)
    order, tau = _playback(scene, traj, reverse)
    if fps is not None:
        picks = _frame_picks(tau, fps / speed)
    else:
        picks = np.arange(0, len(order), every)

    from PIL import Image

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for k, rgb in enumerate(_rendered(scene, traj, order[picks], camera, width, height)):
        path = out / f"frame_{k:05d}.png"
        Image.fromarray(rgb, "RGB").save(path)
        paths.append(path)
        if progress is not None:
            progress(k + 1, len(picks))
    return paths


def write_video(
    scene: Scene,
    traj: Trajectory,
    path: str | Path,
    *,
    reverse: bool = False,
    width: int = 640,
    height: int = 480,
    fps: float = 30.0,
    speed: float = 1.0,
    camera: Camera | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Render ``traj`` headless into a video that plays at ``speed`` times real time: MP4 or GIF
    by suffix.

    The frames are those of :func:`render_frames` at ``fps`` and ``speed``. MP4 is H.264 in
    yuv420p (plays in browsers and common players; the chroma planes are half size, so width and
    height must be even), written by imageio through imageio-ffmpeg's bundled ffmpeg. A GIF's
    frame delays are whole hundredths of a second (at least 2, the least browsers honour), so a
    GIF's rate is 100/k frames per second: ``fps`` 30 becomes 33.3, and at most 50.

    Parameters
    ----------
    scene, traj, reverse, width, height, speed, camera, progress
        As for :func:`render_frames`.
    path : str or Path
        ``.mp4`` or ``.gif`` file (replaced if it exists); its folder must exist.
    fps : float
        Frames per second of playback, within :data:`FPS_RANGE`; at ``speed`` 1 also of
        trajectory time.

    Returns
    -------
    int
        Frames written.

    Raises
    ------
    WorkbenchError
        An unknown suffix, a missing folder, odd sizes for MP4, the errors of
        :func:`render_frames`, or a writer that failed or wrote no file (the message says why).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in VIDEO_SUFFIXES:
        raise WorkbenchError(
            f"{path}: unknown video format {path.suffix or '(no suffix)'!r}; expected "
            + " or ".join(VIDEO_SUFFIXES)
        )
    fps = _check_range("fps", fps, FPS_RANGE)
    speed = _check_range("speed", speed, SPEED_RANGE)
    _check_size(width, height)
    if suffix == ".mp4" and (width % 2 or height % 2):
        raise WorkbenchError(
            f"{path}: an MP4 (H.264, yuv420p) needs an even width and height, got {width}x{height}"
        )
    if not path.parent.is_dir():
        raise WorkbenchError(f"{path}: folder {path.parent} does not exist")
    if suffix == ".gif":
        ticks = max(_GIF_MIN_TICKS, round(_GIF_TICKS_PER_S / fps))
        fps = _GIF_TICKS_PER_S / ticks
    order, tau = _playback(scene, traj, reverse)
    picks = _frame_picks(tau, fps / speed)

    import imageio.v2 as imageio

    if suffix == ".mp4":
        # macro_block_size 2: keep the even size as given (imageio would pad to multiples of 16)
        writer = imageio.get_writer(
            path,
            format="FFMPEG",
            fps=fps,
            codec="libx264",
            pixelformat="yuv420p",
            macro_block_size=2,
            ffmpeg_log_level="error",
        )
    else:
        writer = imageio.get_writer(path, format="GIF", mode="I", duration=1000.0 / fps, loop=0)
    try:
        with writer:
            for k, rgb in enumerate(_rendered(scene, traj, order[picks], camera, width, height)):
                writer.append_data(rgb)
                if progress is not None:
                    progress(k + 1, len(picks))
    except (OSError, RuntimeError, ValueError, OverflowError) as exc:  # ffmpeg's or Pillow's
        lines = str(exc).strip().splitlines() or [type(exc).__name__]
        raise WorkbenchError(f"{path}: the video writer failed: {lines[-1]}") from None
    if not path.is_file() or path.stat().st_size == 0:
        raise WorkbenchError(f"{path}: the video writer wrote no file")
    return len(picks)


def frame_camera(
    scene: Scene,
    trajectories: Trajectory | Iterable[Trajectory],
    aspect: float = 4.0 / 3.0,
    *,
    fov: float = FOV_DEG,
    view: tuple[float, float] | None = None,
) -> Camera:
    """The camera that starts every replay: the bodies' extent over the run, filling the image.

    Unless ``view`` is given, the view of the box of :func:`body_extent` is the three-quarter
    view (:data:`CAMERA_YAW`, :data:`CAMERA_PITCH`), except that an elongated extent
    (:data:`ELONGATED_RATIO`) is seen square on from its long side, so that a line of text reads
    across the image and a slide runs across it rather than towards the camera, and that a flat
    extent (:data:`FLAT_RATIO`) is seen from the pitch of :data:`CANDIDATE_PITCHES` whose
    silhouette of the box, without perspective and scaled to fit the image, covers most of it
    (:func:`_silhouette_fill`; the default unless another covers :data:`VIEW_PREFERENCE` times
    more). Then the camera
    looks at the box from the nearest distance at which all 8 corners project within
    :data:`FRAME_FILL` of the image's half-width and half-height, with the target moved so that
    the projected box is centred (:func:`_fit_box`).

    The viewer's window, frames and videos all start this way; the web page gets the camera too.

    Parameters
    ----------
    scene : Scene
        The scene the trajectories were run on.
    trajectories : Trajectory or iterable of Trajectory
        Runs to frame together (e.g. the realizations of an ensemble).
    aspect : float
        Image width / height.
    fov : float
        Vertical field of view, degrees.
    view : (yaw, pitch), optional
        Use this view, degrees, instead of choosing one.

    Returns
    -------
    Camera
    """
    lo, hi = body_extent(scene, trajectories)
    if not _positive(aspect):
        raise WorkbenchError(f"aspect must be a finite number > 0, got {aspect!r}")
    if view is not None:
        yaw, pitch = (float(v) for v in view)
    else:
        size = hi - lo
        yaw = CAMERA_YAW
        if size[0] > ELONGATED_RATIO * size[1]:  # long along x: look along y
            yaw = 0.0
        elif size[1] > ELONGATED_RATIO * size[0]:  # long along y: look along x
            yaw = 90.0
        pitch = CAMERA_PITCH
        if size[2] < FLAT_RATIO * max(size[0], size[1]):
            fills = [_silhouette_fill(lo, hi, yaw, p, aspect) for p in CANDIDATE_PITCHES]
            fills[0] *= VIEW_PREFERENCE
            pitch = CANDIDATE_PITCHES[int(np.argmax(fills))]  # the first of equals
    return _fit_box(lo, hi, yaw, pitch, fov, aspect)


def body_extent(
    scene: Scene, trajectories: Trajectory | Iterable[Trajectory]
) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper corners, shape (3,), m, of the box the framed bodies sweep over the runs.

    At every finite record each framed body contributes its world bounding box: its body-frame
    box (:func:`body_boxes`) turned by the recorded orientation (half-sizes ``|R| h``; a
    sphere's is its radius whatever the orientation). The framed bodies are the moving ones (not
    ``fixed``: the ground, walls and bins are the stage); a scene in which nothing moves frames
    its fixed bodies other than planes; one with planes only frames a cube of half-size
    :data:`EMPTY_FRAME_HALF` on the origin.
    """
    runs = [trajectories] if isinstance(trajectories, Trajectory) else list(trajectories)
    if not runs:
        raise WorkbenchError("no trajectory to frame")
    moving = np.array([not body.fixed for body in scene.bodies])
    solid = np.array([body.shape.type != "plane" for body in scene.bodies])
    framed = moving if moving.any() else solid
    if not framed.any():
        return np.full(3, -EMPTY_FRAME_HALF), np.full(3, EMPTY_FRAME_HALF)
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for traj in runs:
        check_same_bodies(traj, scene.body_names)
        records = finite_records(traj)
        if not len(records):
            continue
        centre, half, round_ = (x[framed] for x in body_boxes(scene, traj.params))
        pos = np.asarray(traj.position, dtype=float)[records][:, framed, :]  # (k, m, 3)
        rot = _rotation_matrices(np.asarray(traj.orientation, dtype=float)[records][:, framed, :])
        body = np.broadcast_to(np.arange(len(centre)), pos.shape[:2]).ravel()
        pos, rot = pos.reshape(-1, 3), rot.reshape(-1, 3, 3)  # every (record, body) pair
        mid = pos + np.einsum("kij,kj->ki", rot, centre[body])
        reach = np.where(
            round_[body][:, None], half[body], np.einsum("kij,kj->ki", np.abs(rot), half[body])
        )
        lo = np.minimum(lo, (mid - reach).min(axis=0))
        hi = np.maximum(hi, (mid + reach).max(axis=0))
    if not np.all(np.isfinite(lo)):
        raise WorkbenchError("no finite positions to frame")
    return lo, hi


def body_boxes(
    scene: Scene, params: dict | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each body's bounding box in its body frame, relative to its centre of mass.

    Returns
    -------
    centre : ndarray, shape (n_bodies, 3)
        The box's centre minus the centre of mass (the realized one when ``params`` hold
        ``<body>/com``), body frame, m.
    half : ndarray, shape (n_bodies, 3)
        Half-sizes, m: of the box around a cylinder, capsule or a mesh's convex hull; a box's
        own; for a sphere its radius three times, and for a URDF body the radius of the sphere
        around PyBullet's bounding box at the initial pose (both flagged by ``round_``).
        NaN for planes.
    round_ : ndarray of bool, shape (n_bodies,)
        True where ``half`` is a radius, the same in every orientation.
    """
    params = params or {}
    n = len(scene.bodies)
    centre, half, round_ = np.zeros((n, 3)), np.full((n, 3), np.nan), np.zeros(n, dtype=bool)
    urdf = []
    for j, body in enumerate(scene.bodies):
        shape = body.shape
        if shape.type == "plane":
            continue
        if shape.type == "urdf":
            urdf.append(j)
            continue
        props = body.mass_properties
        com = params.get(f"{body.name}/com", props.com if props is not None else (0.0, 0.0, 0.0))
        centre[j] = -np.asarray(com, dtype=float).reshape(3)  # the shapes are centred on 0
        if shape.type == "sphere":
            half[j], round_[j] = shape.radius, True
        elif shape.type == "box":
            half[j] = shape.halves
        elif shape.type == "cylinder":
            half[j] = (shape.radius, shape.radius, shape.length / 2)
        elif shape.type == "capsule":
            half[j] = (shape.radius, shape.radius, shape.length / 2 + shape.radius)
        else:  # mesh: its convex hull's box (the hull need not be centred on 0)
            v = shape_hull_vertices(shape, scene.base_dir)
            centre[j] += 0.5 * (v.min(axis=0) + v.max(axis=0))
            half[j] = 0.5 * (v.max(axis=0) - v.min(axis=0))
    if urdf:
        with Engine(scene, gui=False, visual=False) as engine:
            com = engine.state().position
            for j in urdf:
                lo, hi = engine.aabb(j)
                far = np.maximum(np.abs(lo - com[j]), np.abs(hi - com[j]))
                half[j], round_[j] = np.linalg.norm(far), True
    return centre, half, round_


# ---------------------------------------------------------------------------------- helpers
def _rendered(scene, traj, records, camera: Camera | None, width: int, height: int):
    """RGB images, shape (height, width, 3) uint8, of ``records`` (indices into ``traj``) in
    order, seen by ``camera`` (default :func:`frame_camera`); a repeated record renders once."""
    aspect = width / height
    if camera is None:
        camera = frame_camera(scene, [traj], aspect)
    engine = Engine(
        scene, gui=False, visual=True, mass_overrides=mass_overrides_from_params(traj.params)
    )
    try:
        view = engine.camera(
            camera.target, camera.distance, camera.yaw, camera.pitch, camera.fov, aspect
        )
        last_record, rgb = None, None
        for i in records:
            if i != last_record:
                engine.set_state(_placement(traj, i))
                rgb = np.ascontiguousarray(engine.render(view, width, height))
                last_record = i
            yield rgb
    finally:
        engine.close()


def _rotation_matrices(q: np.ndarray) -> np.ndarray:
    """Rotation matrices, shape (..., 3, 3), of unit quaternions (x, y, z, w), shape (..., 4)."""
    x, y, z, w = np.moveaxis(q, -1, 0)
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ]
    return np.stack([np.stack(row, -1) for row in rows], -2)


def _check_size(width, height) -> None:
    """A :class:`WorkbenchError` unless both are integers from 1 to :data:`MAX_SIDE`."""
    for name, value in (("width", width), ("height", height)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise WorkbenchError(f"{name} must be an integer >= 1, got {value!r}")
        if value > MAX_SIDE:
            raise WorkbenchError(f"{name} must be at most {MAX_SIDE} pixels, got {value!r}")


def _box_corners(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The 8 corners, shape (8, 3), of the box ``lo``..``hi``."""
    return np.array(
        [[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    )


def _fit_box(lo, hi, yaw: float, pitch: float, fov: float, aspect: float) -> Camera:
    """The nearest camera at ``yaw``/``pitch`` in which the box's projection is centred and
    reaches :data:`FRAME_FILL` of the image's half-width or half-height.

    For a corner at ``a`` right, ``b`` up and ``c`` back (towards the eye) of the target, the
    camera at distance ``d`` sees it at depth ``d - c``, inside the filled part of the image when
    ``|a| <= FRAME_FILL tan(fov/2) aspect (d - c)`` and ``|b| <= FRAME_FILL tan(fov/2) (d - c)``:
    the smallest ``d`` meeting both for every corner. Perspective shifts the projected box off
    centre (near corners spread more), so the target is then moved across the view to centre
    it and ``d`` fitted again; a few rounds settle it (each leaves less than half the shift).
    """
    tan_v = math.tan(math.radians(fov) / 2.0)
    limits = np.array([FRAME_FILL * tan_v * aspect, FRAME_FILL * tan_v])
    corners = _box_corners(lo, hi)
    target = 0.5 * (np.asarray(lo) + np.asarray(hi))
    camera = Camera(tuple(target), 1.0, yaw, pitch, fov)
    right, up, back = camera.axes()
    for _ in range(_CENTRING_ROUNDS):
        rel = corners - target
        a, b, c = rel @ right, rel @ up, rel @ back
        distance = float(np.max(c + np.maximum(np.abs(a) / limits[0], np.abs(b) / limits[1])))
        camera = Camera(tuple(target), distance, yaw, pitch, fov)
        xy = camera.project(corners, aspect)[:, :2]
        centre = 0.5 * (xy.min(axis=0) + xy.max(axis=0))  # of the projection, image units
        target = target + distance * tan_v * (centre[0] * aspect * right + centre[1] * up)
    rel = corners - target
    a, b, c = rel @ right, rel @ up, rel @ back
    distance = float(np.max(c + np.maximum(np.abs(a) / limits[0], np.abs(b) / limits[1])))
    return Camera(tuple(float(v) for v in target), distance, yaw, pitch, fov)


#: Rounds of re-centring in :func:`_fit_box`.
_CENTRING_ROUNDS = 4


def _silhouette_fill(lo, hi, yaw: float, pitch: float, aspect: float) -> float:
    """Fraction of an image of width / height ``aspect`` that the box ``lo``..``hi`` covers
    when seen from ``yaw``/``pitch`` without perspective and scaled to just fit: the area of the
    convex hull of its projected corners over the area of the smallest such image around them.
    Perspective is left out so that a view is not rewarded for looking along a long box (its near
    end then looks large)."""
    right, up, _ = Camera((0.0, 0.0, 0.0), 1.0, yaw, pitch).axes()
    corners = _box_corners(lo, hi)
    xy = np.stack([corners @ right, corners @ up], axis=-1)
    width, height = np.ptp(xy, axis=0)
    scale = max(width / aspect, height)  # the image's height when the box just fits
    if scale <= 0:
        return 0.0
    return _hull_area(xy) / (aspect * scale * scale)


def _hull_area(points: np.ndarray) -> float:
    """Area of the convex hull of 2-D ``points`` (k, 2): Andrew's monotone chain, then the
    shoelace formula."""
    pts = sorted(map(tuple, points))

    def half(seq):
        chain: list[tuple[float, float]] = []
        for p in seq:
            while len(chain) >= 2:
                (x1, y1), (x2, y2) = chain[-2], chain[-1]
                if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) > 0:
                    break
                chain.pop()
            chain.append(p)
        return chain

    hull = half(pts)[:-1] + half(pts[::-1])[:-1]
    x = np.array([p[0] for p in hull])
    y = np.array([p[1] for p in hull])
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def _playback(scene: Scene, traj: Trajectory, reverse: bool) -> tuple[np.ndarray, np.ndarray]:
    """Records to play, in playback order, and the trajectory time elapsed at each, s.

    Records whose positions or orientations are not finite are left out. The elapsed time is
    accumulated from absolute time differences, so it increases whichever way the trajectory's
    clock runs (reverse runs may record decreasing times).
    """
    if traj.n_times == 0:
        raise WorkbenchError("the trajectory has no records to show")
    check_same_bodies(traj, scene.body_names)
    order = finite_records(traj)
    if len(order) == 0:
        raise WorkbenchError("the trajectory has no finite records to show")
    if reverse:
        order = order[::-1]
    t = np.asarray(traj.time, dtype=float)[order]
    tau = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(t)))])
    return order, tau


def _frame_picks(tau: np.ndarray, rate: float) -> np.ndarray:
    """:func:`~workbench.sim.state.records_at_rate` of the elapsed times ``tau`` at ``rate``
    frames per second of trajectory time, refused beyond :data:`MAX_FRAMES` frames."""
    n_frames = math.floor(tau[-1] * rate + FRAME_SLACK) + 1
    if n_frames > MAX_FRAMES:
        raise WorkbenchError(
            f"{n_frames} frames ({tau[-1]:g} s of run at {rate:g} frames per second of run time) "
            f"exceed the {MAX_FRAMES}-frame limit: lower fps or raise speed"
        )
    return records_at_rate(tau, rate)


def _check_range(name: str, value, bounds: tuple[float, float]) -> float:
    """``value`` as a float, or a :class:`WorkbenchError` unless ``bounds[0] <= value <=
    bounds[1]`` (NaN and non-numbers included)."""
    lo, hi = bounds
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if not lo <= x <= hi:
        raise WorkbenchError(f"{name} must be a number from {lo:g} to {hi:g}, got {value!r}")
    return x


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
