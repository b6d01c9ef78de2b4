"""Ensemble throughput: the bare loop, then ``run_ensemble`` serially, on a 2-process pool and on
a 2-worker Dask cluster, with their ratios from one run.

For each scene (names as the CLI takes them, or paths; default: the cheap ``random_box`` and
the Batou–Soize five-body scene ``batou_soize_5body``, Case 4):

- ``bare``: a plain in-process loop drawing each realization and running it on one kept engine
  (no executor, no HDF5); its per-realization times summed give the work;
- ``serial``, ``pool 2``, ``dask 2``: ``run_ensemble`` into a fresh HDF5 file (gzip, the
  default), each in a fresh Python process, as the CLI runs it: the nominal run, the file's
  creation and the start of the processes it starts (the pool's fork server and its imports,
  a serial run's compressing helper) are counted; the driver's own imports are not (nor are the
  bare loop's). The Dask cluster (127.0.0.1, one thread per worker) is started before the clock
  and stopped after it;
- ``÷ bare``: wall time ÷ (bare time ÷ workers); 1.00 = a perfect executor with free storage.
  Target (issue 16): serial ≤ 1.05;
- ``× serial``: serial wall time ÷ this wall time. Targets: pool 2 ≥ 1.85, dask 2 ≥ 1.8;
- ``thread`` (with ``--thread-row``): serial without the helper process that compresses for a
  serial run, as before it existed (its writer thread compresses).

Each scene's ensemble size is chosen so that the bare loop takes about ``--seconds`` (default
40 s; at least 20 realizations). Fixed costs (start-up, the nominal run, the last uneven tasks)
weigh less in longer runs: compare ``--seconds 15`` and ``--seconds 60``. Each number is one
measurement in this run. Run it on an otherwise idle machine: a 2-worker speed-up cannot be
measured while something else uses a core.
Usage: ``python benchmarks/ensemble.py [--seconds 40] [--no-dask] [--thread-row]
[--compression none] [SCENE ...]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import workbench.ensemble.run as run_module  # noqa: E402
from workbench.ensemble.cluster import local_dask_cluster  # noqa: E402
from workbench.ensemble.realization import sample_realization  # noqa: E402
from workbench.ensemble.run import SceneRef, realization_rng, run_ensemble  # noqa: E402
from workbench.scene.catalog import find_scene  # noqa: E402
from workbench.sim.engine import Engine  # noqa: E402
from workbench.sim.forward import run_scene  # noqa: E402

DEFAULT_SCENES = ("random_box", "batou_soize_5body")


def bare(ref: SceneRef, n: int, entropy: int) -> float:
    """Seconds the ``n`` realizations take in a plain loop (summed per realization)."""
    scene = ref.load()
    engine = None
    total = 0.0
    try:
        for i in range(n):
            t0 = time.perf_counter()
            real = sample_realization(scene, realization_rng(entropy, i))
            realized = scene.with_parameters(real.values) if real.values else scene
            if engine is None:
                engine = Engine(realized, mass_overrides=real.mass_overrides)
            run_scene(realized, engine=engine, mass_overrides=real.mass_overrides)
            total += time.perf_counter() - t0
    finally:
        if engine is not None:
            engine.close()
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "scenes", nargs="*", help=f"names or paths (default: {' '.join(DEFAULT_SCENES)})"
    )
    ap.add_argument("-n", type=int, default=None, help="realizations (default: from --seconds)")
    ap.add_argument(
        "--seconds",
        default=40.0,
        type=float,
        help="size each ensemble so that the bare loop takes about this long",
    )
    ap.add_argument("--workers", type=int, default=2, help="pool and Dask workers (default 2)")
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask row")
    ap.add_argument(
        "--thread-row",
        action="store_true",
        help="also run serially without the compressing helper process (its thread compresses)",
    )
    ap.add_argument(
        "--compression",
        choices=("gzip", "none"),
        default="gzip",
        help="of the ensemble files (default gzip, as the CLI)",
    )
    ap.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="scene parameters (the 5-body scene defaults to case=4)",
    )
    args = ap.parse_args(argv)
    names = args.scenes or [s for s in DEFAULT_SCENES if _exists(s)]
    files = [find_scene(s) for s in names]
    head = (
        f"{'scene':<20}{'n':>7}{'executor':>10}{'wall s':>9}{'real/s':>9}{'÷ bare':>9}"
        f"{'× serial':>10}"
    )
    print(head)
    print("-" * len(head))
    entropy = 12345
    w = args.workers
    comp = None if args.compression == "none" else args.compression
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
            print(f"{f.stem:<20}{n:>7}{'bare':>10}{bare_total:>9.2f}{n / bare_total:>9.1f}")
            rows = [("serial", 1, None), (f"pool {w}", w, None)]
            if args.thread_row:
                rows.insert(1, ("thread", 1, "thread"))
            if not args.no_dask:
                rows.append((f"dask {w}", w, "dask"))
            serial_wall = None
            for label, workers, kind in rows:
                out = Path(tmp) / f"{f.stem}-{label.replace(' ', '')}.h5"
                job = {
                    "ref": [ref.path, [list(kv) for kv in ref.overrides]],
                    "n": n,
                    "out": str(out),
                    "entropy": entropy,
                    "workers": workers,
                    "dask": kind == "dask",
                    "helper": kind != "thread",
                    "compression": comp,
                }
                wall = _in_fresh_process(job)
                serial_wall = serial_wall or wall
                print(
                    f"{'':<20}{n:>7}{label:>10}{wall:>9.2f}{n / wall:>9.1f}"
                    f"{wall / (bare_total / workers):>9.3f}{serial_wall / wall:>10.2f}",
                    flush=True,
                )
                out.unlink()
    return 0


def _in_fresh_process(job: dict) -> float:
    """Wall seconds of ``run_ensemble`` for ``job``, run by :func:`_run_job` in a new Python
    process (so that no fork server or import is left from an earlier row)."""
    done = subprocess.run(
        [sys.executable, __file__, "--job", json.dumps(job)],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def _run_job(text: str) -> int:
    job = json.loads(text)
    path, overrides = job["ref"]
    ref = SceneRef(path, tuple((k, v) for k, v in overrides))
    kwargs = {"entropy": job["entropy"], "compression": job["compression"]}
    if not job["helper"]:
        run_module.HELPER_MIN_SECONDS = float("inf")
    # this module imported PyBullet; run_ensemble imports the store (h5py) and the scene loader
    # before its clock starts
    if job["dask"]:
        with local_dask_cluster(job["workers"]) as address:
            res = run_ensemble(ref, job["n"], job["out"], scheduler=address, **kwargs)
    else:
        res = run_ensemble(ref, job["n"], job["out"], workers=job["workers"], **kwargs)
    print(res.wall_seconds)
    return 0


def _exists(name: str) -> bool:
    try:
        find_scene(name)
    except Exception:  # noqa: BLE001 - a default scene not shipped is skipped
        return False
    return True


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--job":
        sys.exit(_run_job(sys.argv[2]))
    sys.exit(main())
