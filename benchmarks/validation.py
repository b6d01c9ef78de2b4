"""Time-domain validation metrics streamed from HDF5: wall time and peak memory at scale.

The model is the beam of Ao, Hu & Mahadevan (2017), Eq. 29 / Table 1: M = 1e5 realizations of the
mid-span deflection at n_t = 500 instants on [0, 5) s, written to a store in the workbench layout
(``/observers/deflection`` of shape (M, 500, 1), one chunk per realization, shuffle + gzip, as
``workbench ensemble`` writes it; 400 MB of data, 340 MB on disk) by the store's bulk write
(:meth:`~workbench.store.backend.Store.write_block`, blocks of 5000 realizations). The
experiments are 3 noisy realizations in a second store. Each row runs in a fresh process (so
peak memory is that row's alone) and calls :func:`workbench.analysis.validation.validate_files`
with λ = 0.16; the last row runs the CLI (``workbench validate``) end to end, process start-up
included. Columns:

- ``metrics``: which metrics were computed (``all`` = instantaneous, first-passage, accumulated);
- ``chunk``: realizations read and processed at once (``--chunk-size``);
- ``wall s``: time of the call (reading, decompressing and counting);
- ``peak RSS MB``: the process's peak resident set size (``VmHWM``), including the interpreter
  and the imports of the workbench package (PyBullet, scipy, h5py: about 100 MB on their own);
- ``numpy peak MB``: the largest amount of memory held by Python/numpy allocations during the
  call (``tracemalloc``), i.e. what the chunking bounds.

The reference row ``in memory`` reads the whole dataset first and calls
:func:`uncertainty.validation.validation_metrics`: what streaming avoids.

Targets (issue 8): all three metrics in < 20 s and < 1 GB peak memory.

Usage: ``python benchmarks/validation.py [--n 100000] [--nt 500] [--dir DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SEED = 2017
LAMBDA = 0.16
TARGET_SECONDS = 20.0
TARGET_MB = 1024.0


def _write_store(path: Path, time_: np.ndarray, n: int, fill) -> None:
    """A store in the workbench layout with one observer ``deflection`` (1 component), filled
    block by block by ``fill(start, stop) -> (m, nt)`` so the data never sit in memory at once."""
    from workbench.sim.state import Trajectory
    from workbench.store import StoreSchema, TrajectoryStore

    nt = time_.size
    template = Trajectory(
        time=time_,
        body_names=("beam",),
        position=np.zeros((nt, 1, 3)),
        orientation=np.tile([0.0, 0.0, 0.0, 1.0], (nt, 1, 1)),
        linear_velocity=np.zeros((nt, 1, 3)),
        angular_velocity=np.zeros((nt, 1, 3)),
        observers={"deflection": np.zeros((nt, 1))},
        observer_info={"deflection": {"quantity": "deflection", "unit": "m", "components": ["z"]}},
    )
    schema = StoreSchema.from_trajectory(template)
    # bulk write of the observer only (the states stay unallocated fill values): each block is
    # written, flushed, then marked completed (recorded = nt, status "ok") and flushed, instead
    # of two flushes per realization
    with TrajectoryStore.create(path, schema, n, seed_entropy=SEED) as store:
        block = 5000
        for start in range(0, n, block):
            stop = min(start + block, n)
            store.write_block(start, {"observers/deflection": fill(start, stop)[:, :, None]})


def make_files(directory: Path, n: int, nt: int) -> tuple[Path, Path]:
    from uncertainty.examples.validation import BeamProblem, beam_experiments

    t = np.arange(nt) * (5.0 / nt)
    problem = BeamProblem.build(t)

    def model_block(start: int, stop: int) -> np.ndarray:
        rng = np.random.default_rng(np.random.SeedSequence(SEED, spawn_key=(start,)))
        return problem.sample(rng, stop - start)

    good, _ = beam_experiments(problem, np.random.default_rng(SEED), 3, noise_std=0.001)
    model, exps = directory / "beam_model.h5", directory / "beam_experiments.h5"
    _write_store(model, t, n, model_block)
    _write_store(exps, t, 3, lambda a, b: good[a:b])
    return model, exps


def child(model: str, exps: str, metrics: str, chunk: int) -> None:
    """One measurement in this (fresh) process; prints a JSON line."""
    from uncertainty.validation import METRICS, validation_metrics
    from workbench.analysis.validation import validate_files
    from workbench.store import TrajectoryStore

    names = METRICS if metrics == "all" else (metrics,)
    tracemalloc.start()
    t0 = time.perf_counter()
    if chunk == 0:  # in memory
        with TrajectoryStore.open(model) as s:
            Y = s.read_array("observers/deflection")[:, :, 0]
        with TrajectoryStore.open(exps) as s:
            D = s.read_array("observers/deflection")[:, :, 0]
        res = validation_metrics(Y, D, lam=LAMBDA, metrics=names)
        final = {k: float(res.metric(k)[-1]) for k in names}
    else:
        rep = validate_files(
            model, [exps], "deflection", lam=LAMBDA, metrics=names, chunk_size=chunk
        )
        final = {k: float(v[-1]) for k, v in rep.metrics.items()}
    wall = time.perf_counter() - t0
    _, numpy_peak = tracemalloc.get_traced_memory()
    print(
        json.dumps(
            {"wall": wall, "rss": _peak_rss_mb(), "numpy": numpy_peak / 2**20, "final": final}
        )
    )


def _peak_rss_mb() -> float:
    """Peak resident set size of this process image, MB: ``VmHWM`` of /proc/self/status.

    Not ``ru_maxrss``: on Linux that counter survives ``exec`` and so includes the RSS of the
    parent at ``fork`` time (here the process that generated the 400 MB file)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_child(args: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run(
        [sys.executable, __file__, "--child", *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(r.stdout.strip().splitlines()[-1])


def child_cli(model: str, exps: str) -> None:
    """Run ``workbench validate`` as this process's only child; print its wall time and peak
    RSS (``RUSAGE_CHILDREN`` of this small, freshly exec'd process covers that one child, forked
    after the exec, alone)."""
    cmd = [sys.executable, "-m", "workbench.cli", "validate", "--model", model]
    cmd += ["--experiments", exps, "--observer", "deflection", "--lambda", str(LAMBDA)]
    t0 = time.perf_counter()
    subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    print(json.dumps({"wall": wall, "rss": rss, "numpy": float("nan"), "final": {}}))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="model realizations M")
    ap.add_argument("--nt", type=int, default=500, help="instants n_t")
    ap.add_argument("--dir", help="keep the HDF5 files here (default: a temporary directory)")
    ap.add_argument("--child", nargs=4, metavar=("MODEL", "EXP", "METRICS", "CHUNK"))
    args = ap.parse_args(argv)
    if args.child:
        model, exps, metrics, chunk = args.child
        if metrics == "cli":
            child_cli(model, exps)
        else:
            child(model, exps, metrics, int(chunk))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(args.dir or tmp)
        directory.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        model, exps = make_files(directory, args.n, args.nt)
        size = model.stat().st_size / 2**20
        print(
            f"beam model: M = {args.n}, n_t = {args.nt}, 3 experiments, λ = {LAMBDA}; "
            f"model file {size:.0f} MB (gzip + shuffle), "
            f"written in {time.perf_counter() - t0:.1f} s"
        )
        rows = [
            ("all", 4096),
            ("instantaneous", 4096),
            ("first_passage", 4096),
            ("accumulated", 4096),
            ("all", 1024),
            ("all", 16384),
            ("all", 0),
        ]
        head = f"{'metrics':<15}{'chunk':>10}{'wall s':>9}{'peak RSS MB':>13}{'numpy peak MB':>15}"
        print(head)
        print("-" * len(head))
        ok = True
        for metrics, chunk in rows:
            res = run_child([str(model), str(exps), metrics, str(chunk)])
            label = "in memory" if chunk == 0 else str(chunk)
            print(
                f"{metrics:<15}{label:>10}{res['wall']:>9.2f}{res['rss']:>13.0f}"
                f"{res['numpy']:>15.1f}"
            )
            if metrics == "all" and chunk == 4096:
                final = res["final"]
                ok = res["wall"] < TARGET_SECONDS and res["rss"] < TARGET_MB
        cli = run_child([str(model), str(exps), "cli", "4096"])
        print(f"{'all (CLI)':<15}{'4096':>10}{cli['wall']:>9.2f}{cli['rss']:>13.0f}{'':>15}")
        print(
            "r(t_end) at λ = 0.16: "
            + ", ".join(f"{k.replace('_', '-')} {v:.4f}" for k, v in final.items())
        )
        verdict = "met" if ok else "NOT met"
        print(f"targets (< {TARGET_SECONDS:g} s, < {TARGET_MB:g} MB, all metrics): {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
