"""Forward-run overhead: steps/s of a workbench run vs a bare PyBullet loop over the same world.

For every shipped scene (or the scenes named on the command line) this prints one table row:

- ``bare``: ``stepSimulation`` in a plain loop on the world the engine built (plus, for scenes
  that need them, the same per-step Python forces, since the physics would differ without);
- ``bare+rec``: the bare loop that also reads every body's state at the scene's record stride
  (what any script needs to get a trajectory out);
- ``workbench``: :func:`workbench.run_scene` (recording, contact diagnostic, observers, frame
  conversion), and ``+h5`` the same plus writing the HDF5 file, i.e. ``workbench run``;
- ``ratio``: bare time / workbench time (1.00 = no overhead); ``overhead`` = workbench / bare − 1.

Each timing is the median of ``--repeats`` runs measured in this one process. Shipped scenes
last a few milliseconds of wall time, where fixed costs (building the world ≈ 1 ms, creating the
HDF5 file ≈ 10 ms) would read as per-step overhead; so each scene's duration is stretched until
the bare loop takes about ``--seconds`` (default 0.5 s), and the fixed costs are reported in their
own columns (``build``, ``file``, ms). The target is overhead ≤ 10% for scenes without per-step
Python forces (column ``py-forces`` = no).

Usage: ``python benchmarks/forward.py [--repeats 5] [SCENE ...]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._table import timed as _timed  # noqa: E402
from workbench.scene.loader import load_scene, scene_to_json  # noqa: E402
from workbench.sim.engine import Engine  # noqa: E402
from workbench.sim.forward import run_scene  # noqa: E402
from workbench.store import write_trajectory  # noqa: E402


def bare(scene, engine: Engine, record: bool) -> float:
    """A plain loop (:meth:`Engine.reference_loop`: ``stepSimulation`` plus, with ``record``,
    every body's pose and velocity at the record stride); the world is built inside the timing,
    as ``workbench run`` builds it."""
    t0 = time.perf_counter()
    engine.rebuild(scene)
    s = scene.settings
    engine.reference_loop(s.n_steps, s.record_every if record else 0)
    return time.perf_counter() - t0


def workbench_run(scene, engine: Engine, write: bool, tmp: Path) -> float:
    t0 = time.perf_counter()
    traj = run_scene(scene, engine=engine)
    if write:
        write_trajectory(
            tmp / "bench.h5", traj, scene_text=scene.source_text, scene_json=scene_to_json(scene)
        )
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenes", nargs="*", help="scene files (default: every shipped scene)")
    ap.add_argument("--repeats", type=int, default=5, help="runs per measurement (median)")
    ap.add_argument(
        "--seconds",
        type=float,
        default=0.5,
        help="stretch each scene until the bare loop takes about this long",
    )
    args = ap.parse_args(argv)
    files = [Path(s) for s in args.scenes] or sorted((REPO / "scenes").glob("*.yaml"))
    head = (
        f"{'scene':<16}{'steps':>9}{'py-forces':>10}{'bare':>11}{'bare+rec':>11}"
        f"{'workbench':>11}{'+h5':>11}{'ratio':>7}{'overhead':>10}{'vs rec':>8}"
        f"{'build':>8}{'file':>7}"
    )
    print(f"steps/s, median of {args.repeats} runs each; build/file in ms")
    print(head)
    print("-" * len(head))
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for f in files:
            scene = load_scene(f)
            with Engine(scene) as engine:
                t_build = statistics.median(
                    _timed(lambda scene=scene: engine.rebuild(scene)) for _ in range(5)
                )
                traj = run_scene(scene, engine=engine)
                t_file = statistics.median(
                    _timed(
                        lambda scene=scene, traj=traj: write_trajectory(
                            tmp / "f.h5",
                            traj,
                            scene_text=scene.source_text,
                            scene_json=scene_to_json(scene),
                        )
                    )
                    for _ in range(5)
                )
                t_own = bare(scene, engine, False)
                stretch = max(1.0, args.seconds / max(t_own, 1e-9))
                long = scene.with_settings(duration=scene.settings.duration * stretch)
                n = long.settings.n_steps
                forces = engine.has_step_forces
                med = {}
                for name, fn in (
                    ("bare", lambda long=long: bare(long, engine, False)),
                    ("rec", lambda long=long: bare(long, engine, True)),
                    ("wb", lambda long=long: workbench_run(long, engine, False, tmp)),
                    ("h5", lambda long=long: workbench_run(long, engine, True, tmp)),
                ):
                    fn()  # warm-up
                    med[name] = statistics.median(fn() for _ in range(args.repeats))
            rate = {k: n / v for k, v in med.items()}
            print(
                f"{f.stem:<16}{n:>9}{'yes' if forces else 'no':>10}{rate['bare']:>11,.0f}"
                f"{rate['rec']:>11,.0f}{rate['wb']:>11,.0f}{rate['h5']:>11,.0f}"
                f"{med['bare'] / med['h5']:>7.2f}{100 * (med['h5'] / med['bare'] - 1):>9.1f}%"
                f"{100 * (med['h5'] / med['rec'] - 1):>7.1f}%"
                f"{1e3 * t_build:>8.2f}{1e3 * t_file:>7.1f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
