"""Ensemble throughput: realizations/s serially, on a 2-process pool and on a 2-worker Dask
cluster, and the ensemble overhead.

For each scene (default: the cheap ``random_box`` and, when present, ``batou_soize_5body``):

- ``bare``: a plain in-process loop drawing each realization and running it (no executor, no
  HDF5); its per-realization times summed give the work to be shared;
- ``serial``, ``workers 2``, ``dask 2``: ``run_ensemble`` into a fresh HDF5 file;
- ``speed-up``: serial wall time ÷ this wall time;
- ``overhead``: wall time ÷ (sum of bare per-realization times ÷ workers); 1.00 = a perfect
  executor with free storage. Targets: 2-worker speed-up ≥ 1.7, overhead ≤ 1.10.

Each scene's ensemble size is chosen so that the bare loop takes about ``--seconds`` (default
40 s; at least 20 realizations): process-pool start-up (≈ 1 s) and Dask's per-task cost (≈ 2 ms)
are then amortized as in real use. Each number is one measurement in this run. Run it on an
otherwise idle machine: a 2-worker speed-up cannot be measured while something else uses a core.
Usage: ``python benchmarks/ensemble.py [--seconds 40] [SCENE ...]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from workbench.ensemble.cluster import local_dask_cluster  # noqa: E402
from workbench.ensemble.realization import sample_realization  # noqa: E402
from workbench.ensemble.run import SceneRef, realization_rng, run_ensemble  # noqa: E402
from workbench.sim.engine import Engine  # noqa: E402
from workbench.sim.forward import run_scene  # noqa: E402


def bare(ref: SceneRef, n: int, entropy: int) -> float:
    scene = ref.load()
    engine = Engine(scene)
    total = 0.0
    try:
        for i in range(n):
            t0 = time.perf_counter()
            real = sample_realization(scene, realization_rng(entropy, i))
            realized = scene.with_parameters(real.values) if real.values else scene
            run_scene(realized, engine=engine, mass_overrides=real.mass_overrides)
            total += time.perf_counter() - t0
    finally:
        engine.close()
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenes", nargs="*")
    ap.add_argument("-n", type=int, default=None, help="realizations (default: from --seconds)")
    ap.add_argument(
        "--seconds",
        default=40.0,
        type=float,
        help="size each ensemble so that the bare loop takes about this long",
    )
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask column")
    ap.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="scene parameters (the 5-body scene defaults to case=4)",
    )
    args = ap.parse_args(argv)
    files = [Path(s) for s in args.scenes] or [
        f
        for f in (REPO / "scenes" / "random_box.yaml", REPO / "scenes" / "batou_soize_5body.py")
        if f.exists()
    ]
    head = (
        f"{'scene':<20}{'n':>6}{'executor':>11}{'wall s':>9}{'real/s':>9}{'speed-up':>10}"
        f"{'overhead':>10}"
    )
    print(head)
    print("-" * len(head))
    entropy = 12345
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            from workbench.scene.loader import parse_override

            overrides = dict(parse_override(o) for o in args.overrides)
            if f.stem == "batou_soize_5body":
                overrides.setdefault("case", 4)  # everything random, as the paper's Case 4
            ref = SceneRef(str(f), tuple(sorted(overrides.items())))
            n = args.n
            if n is None:  # calibrate on 5 realizations
                per = bare(ref, 5, entropy + 1) / 5
                n = max(20, int(round(args.seconds / per)))
            bare_total = bare(ref, n, entropy)
            print(
                f"{f.stem:<20}{n:>6}{'bare':>11}{bare_total:>9.2f}{n / bare_total:>9.1f}"
                f"{'':>10}{'':>10}"
            )
            rows = [("serial", 1, None), ("workers 2", 2, None)]
            if not args.no_dask:
                rows.append(("dask 2", 2, "dask"))
            serial_wall = None
            for label, workers, kind in rows:
                out = Path(tmp) / f"{f.stem}-{label.replace(' ', '')}.h5"
                if kind == "dask":
                    with local_dask_cluster(workers) as address:
                        res = run_ensemble(ref, n, out, entropy=entropy, scheduler=address)
                else:
                    res = run_ensemble(ref, n, out, entropy=entropy, workers=workers)
                wall = res.wall_seconds
                serial_wall = serial_wall or wall
                print(
                    f"{'':<20}{n:>6}{label:>11}{wall:>9.2f}{n / wall:>9.1f}"
                    f"{serial_wall / wall:>10.2f}{wall / (bare_total / workers):>10.2f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
