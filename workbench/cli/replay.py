"""Show a stored trajectory: play it in the PyBullet viewer (needs a display), or write it
headless as PNG frames (--frames), a video (--video) or a web page (--html).
"""

from __future__ import annotations

import argparse
import os
import sys

from workbench.cli.common import check_output, hold_output_lock, progress_bar
from workbench.tasks.replay import FPS_RANGE, HTML_MAX_RUNS, MAX_SIDE, SPEED_RANGE

__all__ = ["add_replay_parser", "cmd_replay", "HTML_MAX_RUNS"]

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
    """``workbench replay`` (the work is :func:`workbench.replay`)."""
    from workbench.tasks.replay import replay, replay_options

    options = replay_options(
        size=args.size, fps=args.fps, speed=args.speed, camera=args.camera, video=args.video
    )
    check_output(args.video)
    check_output(args.html)
    check_output(args.frames, folder=True)
    hold_output_lock(args, args.video, args.html, args.frames)
    shown = replay(args.file, realization=args.realization)
    # what is shown is read first, and what was left out said, before anything is written
    if args.frames or args.video or not args.html:
        shown.trajectory()
    runs = shown.page_runs() if args.html else None
    if shown.notes:
        print("\n".join(shown.notes))
    look = {"speed": options.speed, "camera": options.view, "reverse": args.reverse}
    if not (args.frames or args.video or args.html):
        try:
            shown.show(loop=args.loop, hold=args.hold, **look)
        except KeyboardInterrupt:
            # Ctrl-C: the window is closed and the file too; nothing is left to write. The
            # interpreter's exit (collecting PyBullet's, NumPy's, SciPy's and h5py's modules)
            # took 0.6 to 0.9 s more under load, of the 5 s a Ctrl-C may take: skipped.
            print("workbench replay: interrupted", file=sys.stderr, flush=True)
            sys.stdout.flush()
            os._exit(130)
        return 0
    w, h = options.size
    images = {**look, "size": options.size, "fps": options.fps}
    for target, write, summary in (
        (args.frames, shown.frames, lambda paths: f"wrote {len(paths)} frames to {args.frames}"),
        (args.video, shown.video, lambda n: f"wrote {args.video} ({n} frames, {w}x{h})"),
    ):
        if target:
            with progress_bar(0, "frames", quiet=args.quiet) as advance:
                written = write(target, progress=advance, **images)
            print(summary(written))
    if args.html:
        shown.page(args.html, runs=runs, **look)
        print(f"wrote {args.html} ({'1 run' if len(runs) == 1 else f'{len(runs)} runs'})")
    return 0
