"""Play a stored trajectory in the PyBullet viewer (needs a display), or with --frames render PNG
frames headless instead.
"""

from __future__ import annotations

from workbench.cli.common import progress_bar
from workbench.errors import WorkbenchError
from workbench.scene.loader import scene_from_json
from workbench.store import TrajectoryStore
from workbench.viewer import render_frames, replay

__all__ = ["add_replay_parser", "cmd_replay"]


def add_replay_parser(sub) -> None:
    rp = sub.add_parser("replay", description=__doc__)
    rp.add_argument("file")
    rp.add_argument("--realization", type=int, default=0, help="realization index (default 0)")
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
    rp.add_argument("--fps", type=float, default=30.0, help="frame rate for --frames (default 30)")
    rp.add_argument("--size", default="640x480", help="frame size WxH for --frames")
    rp.set_defaults(func=cmd_replay)


def cmd_replay(args) -> int:
    """``workbench replay`` (the work is :mod:`workbench.viewer`)."""
    with TrajectoryStore.open(args.file) as store:
        traj = store.read(args.realization)
        scene = scene_from_json(store.attrs.get("scene_json", ""), source=args.file)
    if not args.frames:
        replay(scene, traj, reverse=args.reverse, speed=args.speed, loop=args.loop, hold=args.hold)
        return 0
    try:
        w, h = (int(x) for x in args.size.lower().split("x"))
    except ValueError:
        raise WorkbenchError(f"--size: expected WIDTHxHEIGHT, got {args.size!r}") from None
    with progress_bar(traj.n_times, "frames") as advance:
        paths = render_frames(
            scene,
            traj,
            args.frames,
            reverse=args.reverse,
            width=w,
            height=h,
            fps=args.fps,
            progress=advance,
        )
    print(f"wrote {len(paths)} frames to {args.frames}")
    return 0
