"""Ensemble throughput: the bare loop, then ``run_ensemble`` serially, on a 2-process pool and on
a 2-worker Dask cluster, with their ratios from one run.

For each scene (names as the CLI takes them, or paths; default: the cheap ``random_box`` and
the Batou–Soize five-body scene ``batou_soize_5body``, Case 4):

- ``bare``: a plain loop drawing each realization and running it on one kept engine (no
  executor, no HDF5), in a fresh Python process; the same work as an ensemble: the nominal run
  (which an ensemble stores, and which for the five-body scene is one realization of 21, ≈ 5%)
  and the ``n`` realizations, their times summed. It runs twice, before and after the
  executors' rows (``bare`` and ``bare'``), and each row is compared with the bare time
  interpolated linearly to that row's middle: a machine whose speed drifts by 10-30% in minutes
  (measured: docs/ensembles.md) otherwise moves every ratio; the two bare rows show the drift;
- ``serial``, ``pool 2``, ``dask 2``: ``run_ensemble`` into a fresh HDF5 file (gzip, the
  default), each in a fresh Python process, as the CLI runs it: the nominal run, the file's
  creation and the start of the processes it starts (the pool's fork server and its imports,
  a serial run's compressing helper) are counted; the driver's own imports are not (nor are the
  bare loop's). The Dask cluster (127.0.0.1, one thread per worker) is started before the clock
  and stopped after it;
- ``÷ bare``: wall time ÷ (bare time ÷ workers); 1.00 = a perfect executor with free storage.
  Target (issue 16): serial ≤ 1.05;
- ``cpu ÷ bare``: the CPU time of the driver process (all its threads; not its workers', its
  helper's or the Dask scheduler's) ÷ the bare loop's. One process: its realizations and what
  it spends besides, readable on a busy machine, where wall times are not; pool and Dask: what
  the driver takes from the workers' cores (writing, and a pool's driver runs the first tasks
  itself while its workers start);
- ``× serial``: serial wall time ÷ this wall time. Targets: pool 2 ≥ 1.85, dask 2 ≥ 1.8;
- ``thread`` (with ``--thread-row``): serial without the helper process that compresses for a
  serial run, as before it existed (its writer thread compresses);

Each scene's ensemble size is chosen so that the bare loop takes about ``--seconds`` (default
40 s; at least 20 realizations). Fixed costs (start-up, the last uneven tasks) weigh less in
longer runs: compare ``--seconds 15`` and ``--seconds 60``. Each number is one measurement in
this run. Run it on an otherwise idle machine: a 2-worker speed-up cannot be measured while
something else uses a core.
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
from workbench.ensemble.realization import (  # noqa: E402
    nominal_realization,
    sample_realization,
)
from workbench.ensemble.run import (  # noqa: E402
    NOMINAL_INDEX,
    SceneRef,
    realization_rng,
    run_ensemble,
)
from workbench.scene.catalog import find_scene  # noqa: E402
from workbench.sim.engine import Engine  # noqa: E402
from workbench.sim.forward import run_scene  # noqa: E402

DEFAULT_SCENES = ("random_box", "batou_soize_5body")


def bare(ref: SceneRef, n: int, entropy: int, nominal: bool = True) -> tuple[float, float]:
    """``(wall, cpu)`` seconds of the nominal run (if ``nominal``) and ``n`` realizations in a
    plain loop on one kept engine, each timed and summed (the scene's loading excluded)."""
    scene = ref.load()
    engine = None
    total = 0.0
    cpu0 = time.process_time()
    try:
        for i in ([NOMINAL_INDEX] if nominal else []) + list(range(n)):
            t0 = time.perf_counter()
            if i == NOMINAL_INDEX:
                real = nominal_realization(scene)
            else:
                real = sample_realization(scene, realization_rng(entropy, i))
            realized = scene.with_parameters(real.values) if real.values else scene
            if engine is None:
                engine = Engine(realized, mass_overrides=real.mass_overrides)
            run_scene(realized, engine=engine, mass_overrides=real.mass_overrides)
            total += time.perf_counter() - t0
    finally:
        if engine is not None:
            engine.close()
    return total, time.process_time() - cpu0


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
        f"{'cpu ÷ bare':>12}{'× serial':>10}"
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
                per = bare(ref, 5, entropy + 1, nominal=False)[0] / 5
                n = max(20, int(round(args.seconds / per)))
            common = {"ref": [ref.path, [list(kv) for kv in ref.overrides]], "n": n}
            common |= {"entropy": entropy, "compression": comp}
            rows = [("serial", 1, None), (f"pool {w}", w, None)]
            if args.thread_row:
                rows.insert(1, ("thread", 1, "thread"))
            if not args.no_dask:
                rows.append((f"dask {w}", w, "dask"))
            done = []  # (label, workers, wall, cpu, middle time)
            for label, workers, kind in [("bare", 1, "bare"), *rows, ("bare'", 1, "bare")]:
                out = Path(tmp) / f"{f.stem}-{label.replace(' ', '')}.h5"
                job = common | {"out": str(out), "workers": workers, "kind": kind}
                t0 = time.monotonic()
                wall, cpu = _in_fresh_process(job)
                done.append((label, workers, wall, cpu, (t0 + time.monotonic()) / 2))
                out.unlink(missing_ok=True)
            (_, _, b0, c0, m0), (_, _, b1, c1, m1) = done[0], done[-1]

            serial_wall = done[1][2]
            for k, (label, workers, wall, cpu, m) in enumerate(done):
                is_bare = label.startswith("bare")
                x = (m - m0) / (m1 - m0)  # the bare times, linear in time between the two
                bare_wall, bare_cpu = b0 + (b1 - b0) * x, c0 + (c1 - c0) * x
                ratio = "" if is_bare else f"{wall / (bare_wall / workers):.3f}"
                cpu_ratio = f"{cpu / bare_cpu:.3f}"
                speed = "" if is_bare else f"{serial_wall / wall:.2f}"
                print(
                    f"{f.stem if k == 0 else '':<20}{n:>7}{label:>10}{wall:>9.2f}{n / wall:>9.1f}"
                    f"{ratio:>9}{cpu_ratio:>12}{speed:>10}",
                    flush=True,
                )
            print(f"{'':<20}bare drift during the rows: {100 * (b1 / b0 - 1):+.1f}%")
    return 0


def _in_fresh_process(job: dict) -> tuple[float, float]:
    """``(wall, cpu)`` seconds of ``job`` (:func:`_run_job`) run in a new Python process (so that
    no fork server or import is left from an earlier row)."""
    done = subprocess.run(
        [sys.executable, __file__, "--job", json.dumps(job)],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    wall, cpu = done.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def _run_job(text: str) -> int:
    job = json.loads(text)
    path, overrides = job["ref"]
    ref = SceneRef(path, tuple((k, v) for k, v in overrides))
    if job["kind"] == "bare":
        ref.load()  # as run_ensemble, which loads the scene before its clock starts
        wall, cpu = bare(ref, job["n"], job["entropy"])
        print(wall, cpu)
        return 0
    kwargs = {"entropy": job["entropy"], "compression": job["compression"]}
    if job["kind"] == "thread":
        run_module.HELPER_MIN_SECONDS = float("inf")
    # this module imported PyBullet; run_ensemble imports the store (h5py) and the scene loader
    # before its clock starts
    if job["kind"] == "dask":
        with local_dask_cluster(job["workers"]) as address:
            res = run_ensemble(ref, job["n"], job["out"], scheduler=address, **kwargs)
    else:
        res = run_ensemble(ref, job["n"], job["out"], workers=job["workers"], **kwargs)
    print(res.wall_seconds, res.cpu_seconds)
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
