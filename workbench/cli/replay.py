"""Show a stored trajectory: play it in the PyBullet viewer (needs a display), or write it
headless as PNG frames (--frames), a video (--video) or a web page (--html).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from workbench.cli.common import check_output, hold_output_lock, progress_bar
from workbench.errors import WorkbenchError
from workbench.replay.camera import Camera, parse_camera_option
from workbench.replay.viewer import (
    FOV_DEG,
    FPS_RANGE,
    MAX_SIDE,
    SPEED_RANGE,
    VIDEO_SUFFIXES,
    VIEWER_ASPECT,
    VIEWER_FOV_DEG,
    body_extent,
    frame_camera,
    render_frames,
    replay,
    write_video,
)
from workbench.scene.loader import scene_from_json
from workbench.sim.state import finite_records
from workbench.store import TrajectoryStore

__all__ = ["add_replay_parser", "cmd_replay", "HTML_MAX_RUNS"]

#: Most realizations of an ensemble put on one web page (plus the nominal run): each is a full
#: trajectory in the page, and beyond a few dozen overlaid runs the page is slow and unreadable.
HTML_MAX_RUNS = 20

#: Width / height the web page's camera is framed for (a landscape browser window).
HTML_ASPECT = 16.0 / 9.0

EPILOG = """\
The viewer starts framed on the moving bodies' extent over the run (fixed bodies and planes
left out), from the view that shows it largest; frames, videos and the web page start from the
same framing. --camera x,y,z,distance[,yaw,pitch] sets the camera instead: it looks at the
point (x, y, z), m, from distance m, turned yaw degrees about z and tilted pitch degrees
(negative looks down; default 45 and -30); --camera yaw,pitch keeps the framing but fixes the
view.

examples:
  workbench run falling_object -o fall.h5
  workbench replay fall.h5                         # the PyBullet viewer (needs a display)
  workbench replay fall.h5 --reverse --speed 0.5 --loop
  xvfb-run workbench replay fall.h5 --no-hold      # the viewer on a virtual display
  workbench replay fall.h5 --frames frames/ --fps 30 --size 640x480
  workbench replay fall.h5 --video fall.mp4        # H.264 MP4; --video fall.gif for a GIF
  workbench replay fall.h5 --html fall.html        # a page to open in any browser
  workbench replay fall.h5 --video fall.mp4 --camera 0,0,50,120,0,-10
  workbench replay fall.h5 --video slow.mp4 --speed 0.25   # a quarter of real time
  workbench ensemble random_box -n 30 --seed 1 -o boxes.h5
  workbench replay boxes.h5 --html boxes.html      # the first 20 realizations and the nominal
  workbench replay boxes.h5 --realization 3 --video box3.gif --size 320x240
"""


def add_replay_parser(sub) -> None:
    rp = sub.add_parser(
        "replay",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rp.add_argument("file", help="HDF5 file written by run, ensemble or reverse")
    rp.add_argument(
        "--realization",
        type=int,
        help="realization to show (default 0; with --html, every realization up to "
        f"{HTML_MAX_RUNS} and the nominal run)",
    )
    rp.add_argument("--reverse", action="store_true", help="play time backwards")
    rp.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help=f"playback speed factor, {SPEED_RANGE[0]:g} to {SPEED_RANGE[1]:g} (default 1): of "
        "the viewer and the page; frames and videos take a frame every SPEED/FPS s of run time",
    )
    rp.add_argument("--loop", action="store_true", help="repeat until the window is closed")
    rp.add_argument(
        "--no-hold",
        dest="hold",
        action="store_false",
        help="close the window when playback ends (default: keep it until you close it)",
    )
    rp.add_argument("--frames", metavar="DIR", help="write PNG frames to DIR (headless)")
    rp.add_argument(
        "--video",
        metavar="FILE",
        help="write a video (headless): FILE.mp4 (H.264) or FILE.gif",
    )
    rp.add_argument(
        "--html", metavar="FILE", help="write a web page (three.js) that plays the run(s)"
    )
    rp.add_argument(
        "--fps",
        type=float,
        default=30.0,
        help=f"frames per second of playback for --frames and --video, {FPS_RANGE[0]:g} to "
        f"{FPS_RANGE[1]:g} (default 30; of run time at --speed 1)",
    )
    rp.add_argument(
        "--size",
        default="640x480",
        help=f"image size WxH, pixels, each side at most {MAX_SIDE}, for --frames and --video "
        "(default 640x480)",
    )
    rp.add_argument(
        "--camera",
        metavar="X,Y,Z,D[,YAW,PITCH]",
        help="camera target (m), distance (m) and view (degrees), or only YAW,PITCH "
        "(default: framed on the bodies)",
    )
    rp.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bar for --frames and --video"
    )
    rp.set_defaults(func=cmd_replay)


def cmd_replay(args) -> int:
    """``workbench replay`` (the work is :mod:`workbench.replay.viewer` and
    :mod:`workbench.replay.web`)."""
    size = _size(args.size)
    fps = _within("--fps", args.fps, FPS_RANGE)
    speed = _within("--speed", args.speed, SPEED_RANGE)
    if args.video and not args.video.lower().endswith(VIDEO_SUFFIXES):
        raise WorkbenchError(
            f"--video {args.video}: expected a file name ending in " + " or ".join(VIDEO_SUFFIXES)
        )
    view = _camera_option(args.camera)
    check_output(args.video)
    check_output(args.html)
    check_output(args.frames, folder=True)
    _refuse_a_scene(args.file)
    hold_output_lock(args, args.video, args.html, args.frames)
    with TrajectoryStore.open(args.file) as store:
        scene = scene_from_json(store.attrs.get("scene_json", ""), source=args.file)
        attrs = dict(store.attrs)
        nominal = store.read_nominal() if args.html and args.realization is None else None
        # an ensemble's page (the file holds more than one run) needs no realization 0
        page_of_many = (
            bool(args.html)
            and args.realization is None
            and (store.n_realizations > 1 or nominal is not None)
        )
        traj = None
        if not page_of_many or args.frames or args.video:
            traj = _one_run(store, args.realization)
        runs = None
        if args.html:
            if page_of_many:
                runs = _page_runs(store, nominal)
            else:
                runs = {_label(store, args.realization): traj}
    if not (args.frames or args.video or args.html):
        camera = _camera(view, scene, [traj], VIEWER_ASPECT, VIEWER_FOV_DEG)
        try:
            replay(
                scene,
                traj,
                reverse=args.reverse,
                speed=speed,
                loop=args.loop,
                hold=args.hold,
                camera=camera,
            )
        except KeyboardInterrupt:
            # Ctrl-C: the window is closed and the file too; nothing is left to write. The
            # interpreter's exit (collecting PyBullet's, NumPy's, SciPy's and h5py's modules)
            # took 0.6 to 0.9 s more under load, of the 5 s a Ctrl-C may take: skipped.
            print("workbench replay: interrupted", file=sys.stderr, flush=True)
            sys.stdout.flush()
            os._exit(130)
        return 0
    w, h = size
    outputs = (
        (args.frames, render_frames, lambda paths: f"wrote {len(paths)} frames to {args.frames}"),
        (args.video, write_video, lambda n: f"wrote {args.video} ({n} frames, {w}x{h})"),
    )
    for target, write, summary in outputs:
        if not target:
            continue
        camera = _camera(view, scene, [traj], w / h, FOV_DEG)
        with progress_bar(traj.n_times, "frames", quiet=args.quiet) as advance:
            written = write(
                scene,
                traj,
                target,
                reverse=args.reverse,
                width=w,
                height=h,
                fps=fps,
                speed=speed,
                camera=camera,
                progress=advance,
            )
        print(summary(written))
    if args.html:
        from workbench.replay.web import write_replay_page  # three.js page: only for --html
        from workbench.replay.web.caption import page_caption, page_title

        shown = list(runs.values())
        camera = _camera(view, scene, shown, HTML_ASPECT, FOV_DEG)
        write_replay_page(
            args.html,
            scene,
            runs,
            camera=camera,
            title=page_title(scene, attrs),
            caption=page_caption(scene, runs),
            # the page fits the framed box to its canvas; a camera the user set stays as set
            frame=None if isinstance(view, Camera) else body_extent(scene, shown),
            reverse=args.reverse,
            speed=speed,
        )
        print(f"wrote {args.html} ({_labels(runs)})")
    return 0


#: The first bytes of every HDF5 file (its superblock signature at offset 0, where the workbench
#: writes it; HDF5 spec, "Format Signature").
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


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


def _size(text: str) -> tuple[int, int]:
    """``--size WxH`` as (width, height), each from 1 to
    :data:`~workbench.replay.viewer.MAX_SIDE`."""
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


def _camera_option(text):
    """``--camera`` as a Camera, a (yaw, pitch) view, or None (:func:`parse_camera_option`)."""
    if text is None:
        return None
    try:
        return parse_camera_option(text, fov=FOV_DEG)
    except ValueError as exc:
        raise WorkbenchError(f"--camera: {exc}") from None


def _camera(view, scene, trajectories, aspect: float, fov: float) -> Camera:
    """The camera ``--camera`` gave (with this output's ``fov``), or the one
    :func:`frame_camera` frames, from the view ``--camera YAW,PITCH`` gave if it did."""
    if isinstance(view, Camera):
        return replace(view, fov=fov)
    return frame_camera(scene, trajectories, aspect, fov=fov, view=view)


def _label(store, realization: int | None) -> str:
    """The page's label of the one run shown."""
    return "run" if store.n_realizations == 1 else f"realization {realization or 0}"


#: Statuses of runs that ran to their end with every record and were only marked: a reverse
#: run whose physical audit failed (reverse/runs/run.py).
_MARKS = ("implausible",)


def _one_run(store, realization: int | None):
    """Realization ``realization`` (default 0) of ``store``, or a one-line error saying why it
    cannot be shown: out of range, not completed, or failed with no finite record. A failed run
    with records (a non-finite state stops a run and keeps the records before it) is shown,
    with a line saying so.
    """
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
            print(
                f"{name} is marked '{traj.status}' ({traj.message}); showing all its {kept} records"
            )
        else:
            print(f"{failure}; showing its {kept} records before the failure")
    return traj


def _page_runs(store, nominal) -> dict:
    """The runs of an ensemble's web page, label -> Trajectory: the ``nominal`` run (if any) and
    the first :data:`HTML_MAX_RUNS` realizations that completed with status ok and have a
    finite record, and a line on stdout naming what was left out. The nominal run alone when no
    realization qualifies; a one-line error when there is nothing to show."""
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
        print(
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


def _labels(runs: dict) -> str:
    n = len(runs)
    return "1 run" if n == 1 else f"{n} runs"
