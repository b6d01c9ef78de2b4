"""Replay of recorded trajectories: live in the PyBullet viewer, or rendered headless as PNG
frames or a video (MP4 or GIF).

Nothing is simulated here. Each shown record is placed with :meth:`Engine.set_state` (bodies are
moved, never stepped), so a trajectory from any source (a forward run, a reverse run, a
realization read from a store) replays exactly as recorded, forward or time-reversed.

Every way of showing a run (the viewer, frames, videos, and the web page of
:mod:`workbench.replay.web`)
starts from the camera of :func:`frame_camera` (:mod:`workbench.replay.framing`, re-exported here):
it
fits the box the moving bodies sweep over the run into the image with a margin.

The links of URDF bodies are placed by their base and their recorded joint positions (PyBullet
places a multibody's links only through its joints: ``set_state`` with the joint positions);
their recorded rows are what the joints give back, since a run records both at each record.

The live viewer runs in a process of its own, which :func:`replay` watches, so a PyBullet
window that fails to open ends in one line instead of hanging (:func:`_run_viewer_process`).

The viewer window, the camera and the rendered images are the engine's
(:class:`~workbench.sim.engine.Engine`: :meth:`~workbench.sim.engine.Engine.set_view`,
:meth:`~workbench.sim.engine.Engine.render`, ...); this module decides what to show and when.
"""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from workbench.errors import WorkbenchError
from workbench.replay.camera import Camera
from workbench.replay.display import held_display
from workbench.replay.framing import (
    CAMERA_PITCH,
    CAMERA_YAW,
    FOV_DEG,
    FRAME_FILL,
    body_boxes,
    body_extent,
    frame_camera,
    tracked_rows,
)
from workbench.replay.session import POLL, play_frames
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
    "CAMERA_YAW",
    "CAMERA_PITCH",
    "FRAME_FILL",
    "VIEWER_FOV_DEG",
    "VIEWER_ASPECT",
    "FPS_RANGE",
    "SPEED_RANGE",
    "MAX_SIDE",
    "MAX_FRAMES",
]

#: The PyBullet viewer's own vertical field of view, degrees, and its window's width / height
#: (1024 x 768): read from ``getDebugVisualizerCamera``'s projection matrix under Xvfb
#: (PyBullet 3.2.7; ``resetDebugVisualizerCamera`` cannot change the field of view).
VIEWER_FOV_DEG = 90.0
VIEWER_ASPECT = 4.0 / 3.0

#: Suffixes :func:`write_video` writes.
VIDEO_SUFFIXES = (".mp4", ".gif")

#: GIF frame delays are whole hundredths of a second, and browsers show delays under 2/100 s as
#: 10/100 s: a GIF plays at 100/k frames per second, k >= 2.
_GIF_TICKS_PER_S = 100
_GIF_MIN_TICKS = 2

#: Most frames per second of wall time that :func:`replay` shows; denser records are skipped.
REPLAY_FPS = 60.0


#: Longest time, s, the viewer's process may go without a sign of life before :func:`replay`
#: gives up and kills it. It says it lives every :data:`_BEAT` s from a thread of its own, which
#: runs only while no C call holds the GIL: ``p.connect(p.GUI)`` holds it until PyBullet's window
#: is up, which took 1-2 s on an idle machine and up to 17 s with two busy loops and other work
#: on the two cores (report_viewer.md), and every later PyBullet call holds it for a frame or
#: so. A call that has not returned by then does not return (its GUI thread died or hangs).
VIEWER_SILENCE_TIMEOUT = 60.0

#: How often the viewer's process says it lives, s (:data:`VIEWER_SILENCE_TIMEOUT`).
_BEAT = 0.5

#: After Ctrl-C, how long the viewer's process may take to close its window and end, s, before
#: it is killed: it closes within one :data:`_POLL` once its window is open, but not inside
#: ``p.connect``, which nothing can cut short (the X server frees a killed client's window).
_CLOSE_GRACE = 3.0

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

    The window is PyBullet's in a process of its own (:func:`_run_viewer_process`), so a
    viewer that fails as it starts (PyBullet's window thread calling ``exit``, which hung this
    process for good when it had h5py loaded) or stops answering
    (:data:`VIEWER_SILENCE_TIMEOUT`) is a one-line :class:`WorkbenchError`, never a hang.

    Ctrl-C (SIGINT) at any time, the window's start included, closes the window and raises
    :class:`KeyboardInterrupt` (:func:`_interrupts_between_calls`): called from the main thread
    with Python's default SIGINT handler in place, the interrupt is noted here and passed on to
    the viewer's process, which raises it between PyBullet's calls and closes its window
    (killed after :data:`_CLOSE_GRACE` s when it cannot, as inside ``p.connect``).

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
        bodies, no display to open the viewer on
        (:func:`~workbench.replay.display.display_problem`),
        or a viewer whose window did not open (the message says why, and what to do instead);
        or a viewer's process that failed after its window opened.
    KeyboardInterrupt
        On Ctrl-C, once the window is closed.
    """
    speed = _check_range("speed", speed, SPEED_RANGE)
    order, tau = _playback(scene, traj, reverse)
    keep = np.unique(records_at_rate(tau, REPLAY_FPS / speed))
    shown, due = order[keep], tau[keep] / speed  # wall-clock time of each frame from the start
    if camera is None:
        camera = frame_camera(scene, [traj], VIEWER_ASPECT, fov=VIEWER_FOV_DEG)
    # the time, 80% of the way up the viewer's half-height at the target's depth
    half_height = camera.distance * math.tan(math.radians(VIEWER_FOV_DEG) / 2.0)
    text_at = np.asarray(camera.target, dtype=float) + 0.8 * half_height * camera.up()
    job = {
        "scene": scene,
        "mass_overrides": mass_overrides_from_params(traj.params),
        "position": np.asarray(traj.position)[shown],
        "orientation": np.asarray(traj.orientation)[shown],
        "joints": None if traj.joint_position is None else np.asarray(traj.joint_position)[shown],
        "time": np.asarray(traj.time, dtype=float)[shown],
        "due": due,
        "view": (np.asarray(camera.target, dtype=float), camera.distance, camera.yaw, camera.pitch),
        "text_at": text_at,
        "hold": hold,
        "loop": loop,
    }
    # the display's connection stays open until the session ends, so the X server cannot reset
    # between the check and PyBullet's own connection (workbench.replay.display.held_display)
    with held_display() as problem:
        if problem is not None:
            raise WorkbenchError(f"cannot open the viewer ({problem}); {NO_DISPLAY_HINT}")
        print("PyBullet viewer: close its window or press Ctrl-C to stop", flush=True)
        with _interrupts_between_calls() as check:
            _run_viewer_process(job, check)


def _run_viewer_process(job: dict, check) -> None:
    """Run the viewer's session (:func:`_session`) in a process of its own and wait for it;
    ``check()`` raises :class:`KeyboardInterrupt` once Ctrl-C was pressed.

    PyBullet's window is made by a thread of PyBullet's while ``p.connect(p.GUI)`` holds the
    GIL and waits for it. When that thread fails (no X server, a display that closes the
    connection, no OpenGL context) it prints why and calls ``exit``; in a process that has
    loaded h5py, whose HDF5 exit handler waits for the GIL, that ``exit`` never finishes, and
    the process hung for good, deaf to Ctrl-C (a display that passed
    :func:`~workbench.replay.display.held_display`'s checks and closed PyBullet's connection: killed
    after 20 s). The viewer's process is a new interpreter that loads neither h5py nor the
    store, so there ``exit`` ends it; this one, which never calls PyBullet's GUI, sees it end
    and says why in one line. A process silent for :data:`VIEWER_SILENCE_TIMEOUT` s (a
    PyBullet call that does not return: a display that never answers PyBullet, a GUI thread
    that hangs) is killed and reported the same way.

    The job goes in a temporary file on the process's stdin (a pipe could block on a process
    stuck before reading it). On its stdout the process writes a line every :data:`_BEAT` s
    and ``open`` once the window is up and the scene built (its file descriptor 1 is then
    ``/dev/null``: PyBullet's chatter goes nowhere); its stderr goes to a temporary file whose
    last line says why it stopped. On Ctrl-C it gets SIGINT and :data:`_CLOSE_GRACE` s to close
    its window (killed after that), and :class:`KeyboardInterrupt` is raised here.

    Raises
    ------
    WorkbenchError
        The viewer's process ended or fell silent before its window was open (a message
        ending in :data:`NO_DISPLAY_HINT`), or failed or fell silent after.
    KeyboardInterrupt
        On Ctrl-C, once the viewer's process has ended.
    """
    root = Path(__file__).resolve().parents[1]  # the folder holding this workbench package
    code = (
        f"import sys; sys.path.insert(0, {str(root)!r}); "
        "from workbench.replay.viewer import _viewer_process_main; _viewer_process_main()"
    )
    with tempfile.TemporaryFile() as job_file, tempfile.TemporaryFile() as err:
        pickle.dump(job, job_file, protocol=pickle.HIGHEST_PROTOCOL)
        job_file.seek(0)
        child = subprocess.Popen(
            [sys.executable, "-c", code], stdin=job_file, stdout=subprocess.PIPE, stderr=err
        )
        try:
            _watch(child, err, check)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            child.stdout.close()


def _watch(child: subprocess.Popen, err, check) -> None:
    """Wait for the viewer's process ``child`` to end (:func:`_run_viewer_process`)."""
    out = child.stdout.fileno()
    opened, heard, pending = False, time.monotonic(), b""
    while True:
        try:
            check()
        except KeyboardInterrupt:
            _stop(child)
            raise
        if time.monotonic() - heard > VIEWER_SILENCE_TIMEOUT:
            silent = f"did not answer for {VIEWER_SILENCE_TIMEOUT:g} s{_why(err)}"
            if opened:
                raise WorkbenchError(f"the viewer {silent}")
            raise WorkbenchError(
                f"cannot open the viewer (PyBullet's viewer {silent} as it started); "
                f"{NO_DISPLAY_HINT}"
            )
        if not select.select([out], [], [], POLL)[0]:
            continue
        data = os.read(out, 4096)
        if data:
            heard = time.monotonic()
            *lines, pending = (pending + data).split(b"\n")
            opened = opened or b"open" in lines
            if b"shown" in lines:
                print("PyBullet viewer: playing (the first frame is shown)", flush=True)
            continue
        # its stdout is closed: it is ending
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=_CLOSE_GRACE)
        status = child.poll()
        _check_interrupted(status, check)
        if status == 0 and opened:
            return
        if opened:
            raise WorkbenchError(f"the viewer stopped{_why(err, status)}")
        raise WorkbenchError(
            f"cannot open the viewer (PyBullet's viewer ended as it started"
            f"{_why(err, status)}); {NO_DISPLAY_HINT}"
        )


def _stop(child: subprocess.Popen) -> None:
    """SIGINT to the viewer's process, then :data:`_CLOSE_GRACE` s to close its window and end;
    killed after that (in ``p.connect`` it cannot end sooner)."""
    with contextlib.suppress(OSError):
        child.send_signal(signal.SIGINT)
    try:
        child.wait(timeout=_CLOSE_GRACE)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _check_interrupted(status: int | None, check) -> None:
    """:class:`KeyboardInterrupt` when Ctrl-C was pressed (``check()``) or ended the viewer's
    process (exit status 130, or killed by SIGINT before it could note it): a terminal's Ctrl-C
    reaches both processes, and the viewer's may end first."""
    check()
    if status in (130, -signal.SIGINT):
        raise KeyboardInterrupt


def _why(err, status: int | None = None) -> str:
    """``": "`` and the last line the viewer's process wrote on stderr (``err``, a file), or its
    exit status when it wrote none; ``""`` when there is neither."""
    err.seek(0)
    lines = [line.strip() for line in err.read().decode(errors="replace").splitlines()]
    lines = [line for line in lines if line]
    if lines:
        return ": " + lines[-1][:300]
    if status is not None and status < 0:
        return f": killed by signal {-status}"
    if status:
        return f": exit status {status}"
    return ""


def _viewer_process_main() -> None:
    """The viewer's process (:func:`_run_viewer_process`): read the job from stdin, run
    :func:`_session`, exit 0 when it ends, 130 on Ctrl-C or when the parent is gone, 1 with the
    error's line on stderr otherwise; meanwhile a line on stdout every :data:`_BEAT` s, and
    ``open`` once the window is up."""
    status = os.dup(1)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 1)  # PyBullet's start-up lines

    def beat() -> None:
        with contextlib.suppress(OSError):  # the replay is gone: check() below sees it
            while True:
                os.write(status, b"-\n")  # one write of a few bytes: whole on the pipe
                time.sleep(_BEAT)

    threading.Thread(target=beat, daemon=True).start()
    job = pickle.load(sys.stdin.buffer)
    parent = os.getppid()

    def opened() -> None:
        os.write(status, b"open\n")

    def shown() -> None:
        os.write(status, b"shown\n")

    code = 0
    try:
        with _interrupts_between_calls() as interrupted:

            def check() -> None:
                interrupted()
                if os.getppid() != parent:  # the replay that started this one is gone
                    raise KeyboardInterrupt

            _session(job, check, opened, shown)
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:  # its one line goes to the replay's message (_why)
        print(f"{type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr, flush=True)
        code = 1
    # the window is closed; the interpreter's exit (collecting PyBullet's, NumPy's and SciPy's
    # modules) would only add time to the replay's own
    sys.stderr.flush()
    os._exit(code)


def _session(job: dict, check, opened, shown) -> None:
    """The viewer's session: open the window with the scene built as replay shows it
    (``Engine(shown_only=True)``: massless visual bodies created in batches), call
    ``opened()``, play the frames of ``job`` (:func:`replay`;
    :func:`~workbench.replay.session.play_frames`), calling ``shown()`` once the first is on
    show; ``check()`` raises :class:`KeyboardInterrupt` once Ctrl-C was pressed."""
    engine = Engine(job["scene"], gui=True, shown_only=True, mass_overrides=job["mass_overrides"])
    try:
        opened()
        check()  # pressed while the window opened: the engine exists, so it is closed below
        engine.freeze()
        engine.set_view(*job["view"])
        play_frames(engine, job, check, shown)
    except engine.error:
        if engine.is_connected():
            raise
        # The window was closed between the check and the call: a normal way to stop.
    finally:
        engine.close()


@contextlib.contextmanager
def _interrupts_between_calls():
    """Within the block, Ctrl-C (SIGINT) is noted, and the ``check()`` it yields raises
    :class:`KeyboardInterrupt` once it was; after the block, a noted interrupt the block did not
    raise is raised.

    Python raises a :class:`KeyboardInterrupt` at the first bytecode after the C call the signal
    came during. After ``p.connect(p.GUI)`` (seconds under load) that is before its client id
    is stored, so nothing could close the window: it stayed open until the interpreter's exit,
    whose disconnect printed PyBullet's shut-down lines on stdout and took seconds (16 and 12
    of 42 interrupted starts under two busy loops). Noted instead, the interrupt is raised by the
    viewer between PyBullet calls, with the engine in hand to close.

    Both :func:`replay`'s process (which passes the interrupt on) and the viewer's (which
    closes its window) note it so.

    Outside the main thread, or when SIGINT has a handler other than Python's default, nothing
    is changed and ``check()`` does nothing.
    """
    noted: list[int] = []

    def note(signum, frame) -> None:
        noted.append(signum)

    def check() -> None:
        if noted:
            raise KeyboardInterrupt

    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield lambda: None
        return
    previous = signal.signal(signal.SIGINT, note)
    try:
        yield check
    finally:
        signal.signal(signal.SIGINT, previous)
    check()


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


# ---------------------------------------------------------------------------------- helpers
def _rendered(scene, traj, records, camera: Camera | None, width: int, height: int):
    """RGB images, shape (height, width, 3) uint8, of ``records`` (indices into ``traj``) in
    order, seen by ``camera`` (default :func:`frame_camera`); a repeated record renders once."""
    aspect = width / height
    if camera is None:
        camera = frame_camera(scene, [traj], aspect)
    engine = Engine(scene, shown_only=True, mass_overrides=mass_overrides_from_params(traj.params))
    try:
        view = engine.camera(
            camera.target, camera.distance, camera.yaw, camera.pitch, camera.fov, aspect
        )
        last_record, rgb = None, None
        for i in records:
            if i != last_record:
                engine.set_state(*_placement(traj, i))
                rgb = np.ascontiguousarray(engine.render(view, width, height))
                last_record = i
            yield rgb
    finally:
        engine.close()


def _check_size(width, height) -> None:
    """A :class:`WorkbenchError` unless both are integers from 1 to :data:`MAX_SIDE`."""
    for name, value in (("width", width), ("height", height)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise WorkbenchError(f"{name} must be an integer >= 1, got {value!r}")
        if value > MAX_SIDE:
            raise WorkbenchError(f"{name} must be at most {MAX_SIDE} pixels, got {value!r}")


def _playback(scene: Scene, traj: Trajectory, reverse: bool) -> tuple[np.ndarray, np.ndarray]:
    """Records to play, in playback order, and the trajectory time elapsed at each, s.

    Records whose positions or orientations are not finite are left out. The elapsed time is
    accumulated from absolute time differences, so it increases whichever way the trajectory's
    clock runs (reverse runs may record decreasing times).
    """
    if traj.n_times == 0:
        raise WorkbenchError("the trajectory has no records to show")
    check_same_bodies(traj, tracked_rows(scene, traj))
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


def _placement(traj: Trajectory, i: int) -> tuple[State, np.ndarray | None]:
    """Pose of record ``i`` with zero velocities (the viewer places bodies; it never steps), and
    the joint positions that place the links of URDF bodies (None without recorded joints)."""
    zeros = np.zeros_like(traj.position[i])
    joints = None if traj.joint_position is None else traj.joint_position[i]
    return State(traj.position[i], traj.orientation[i], zeros, zeros), joints
