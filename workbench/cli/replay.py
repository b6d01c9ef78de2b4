"""Show a stored trajectory: play it in the PyBullet viewer (needs a display), or write it
headless as PNG frames (--frames), a video (--video) or a web page (--html).
"""

from __future__ import annotations

import argparse

import numpy as np

from workbench.camera import parse_camera
from workbench.cli.common import progress_bar
from workbench.errors import WorkbenchError
from workbench.scene.loader import scene_from_json
from workbench.store import TrajectoryStore
from workbench.viewer import (
    FOV_DEG,
    VIDEO_SUFFIXES,
    VIEWER_ASPECT,
    VIEWER_FOV_DEG,
    frame_camera,
    render_frames,
    replay,
    write_video,
)

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
    rp.add_argument("--speed", type=float, default=1.0, help="playback speed factor (default 1)")
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
        help="frames per second of run time for --frames and --video (default 30)",
    )
    rp.add_argument(
        "--size",
        default="640x480",
        help="image size WxH, pixels, for --frames and --video (default 640x480)",
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
    """``workbench replay`` (the work is :mod:`workbench.viewer` and :mod:`workbench.web`)."""
    size = _size(args.size)
    if args.video and not args.video.lower().endswith(VIDEO_SUFFIXES):
        raise WorkbenchError(
            f"--video {args.video}: expected a file name ending in " + " or ".join(VIDEO_SUFFIXES)
        )
    with TrajectoryStore.open(args.file) as store:
        scene = scene_from_json(store.attrs.get("scene_json", ""), source=args.file)
        traj = store.read(0 if args.realization is None else args.realization)
        runs = _page_runs(store, args.realization, traj) if args.html else None
    if not (args.frames or args.video or args.html):
        camera = _camera(args.camera, scene, [traj], VIEWER_ASPECT, VIEWER_FOV_DEG)
        replay(
            scene,
            traj,
            reverse=args.reverse,
            speed=args.speed,
            loop=args.loop,
            hold=args.hold,
            camera=camera,
        )
        return 0
    w, h = size
    outputs = (
        (args.frames, render_frames, lambda paths: f"wrote {len(paths)} frames to {args.frames}"),
        (args.video, write_video, lambda n: f"wrote {args.video} ({n} frames, {w}x{h})"),
    )
    for target, write, summary in outputs:
        if not target:
            continue
        camera = _camera(args.camera, scene, [traj], w / h, FOV_DEG)
        with progress_bar(traj.n_times, "frames", quiet=args.quiet) as advance:
            written = write(
                scene,
                traj,
                target,
                reverse=args.reverse,
                width=w,
                height=h,
                fps=args.fps,
                camera=camera,
                progress=advance,
            )
        print(summary(written))
    if args.html:
        from workbench.web import write_replay_page  # three.js page: only for --html

        camera = _camera(args.camera, scene, list(runs.values()), HTML_ASPECT, FOV_DEG)
        write_replay_page(
            args.html, scene, runs, camera=camera, reverse=args.reverse, speed=args.speed
        )
        print(f"wrote {args.html} ({_labels(runs)})")
    return 0


def _size(text: str) -> tuple[int, int]:
    """``--size WxH`` as (width, height), both >= 1."""
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise WorkbenchError(f"--size: expected WIDTHxHEIGHT, got {text!r}") from None
    if w < 1 or h < 1:
        raise WorkbenchError(f"--size: expected a positive width and height, got {text!r}")
    return w, h


def _camera(text, scene, trajectories, aspect: float, fov: float):
    """The camera ``--camera`` gives, or the framed one (:func:`frame_camera`)."""
    if text is None:
        return frame_camera(scene, trajectories, aspect, fov=fov)
    parts = text.split(",")
    if len(parts) not in (2, 4, 6):
        raise WorkbenchError(
            f"--camera: expected YAW,PITCH or X,Y,Z,DISTANCE[,YAW,PITCH], got {text!r}"
        )
    if len(parts) == 2:
        try:
            yaw, pitch = (float(x) for x in parts)
        except ValueError:
            raise WorkbenchError(f"--camera: expected YAW,PITCH in degrees, got {text!r}") from None
        if not (np.isfinite(yaw) and -90.0 < pitch < 90.0):
            raise WorkbenchError(
                f"--camera: expected a finite yaw and a pitch strictly between -90 and 90 "
                f"degrees, got {text!r}"
            )
        return frame_camera(scene, trajectories, aspect, fov=fov, view=(yaw, pitch))
    try:
        return parse_camera(text, fov=fov)
    except ValueError as exc:
        raise WorkbenchError(f"--camera: {exc}") from None


def _page_runs(store, realization: int | None, traj) -> dict:
    """The runs of the web page, label -> Trajectory, and a line on stdout naming what was left
    out: the one run of a single-run file or of ``--realization``; otherwise the nominal run (if
    stored) and the first :data:`HTML_MAX_RUNS` completed realizations."""
    nominal = store.read_nominal()
    if realization is not None or (store.n_realizations == 1 and nominal is None):
        label = "run" if store.n_realizations == 1 else f"realization {realization}"
        return {label: traj}
    runs = {} if nominal is None else {"nominal": nominal}
    completed = np.flatnonzero(store.completed)
    shown, left = completed[:HTML_MAX_RUNS], completed[HTML_MAX_RUNS:]
    for i in shown:
        runs[f"realization {i}"] = store.read(int(i))
    not_done = store.n_realizations - len(completed)
    if len(left) or not_done:
        parts = []
        if len(left):
            parts.append(f"{len(left)} completed realizations ({_ranges(left)})")
        if not_done:
            parts.append(f"{not_done} not completed")
        print(
            f"the page shows {len(shown)} of {store.n_realizations} realizations; left out: "
            + " and ".join(parts)
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
