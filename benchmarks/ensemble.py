"""Ensemble throughput: the bare loop, then ``run_ensemble`` serially, on a 2-process pool and on
a 2-worker Dask cluster, with their ratios from one run, and what this machine allows them.

For each scene (names as the CLI takes them, or paths; default: the cheap ``random_box`` and
the Batou–Soize five-body scene ``batou_soize_5body``, Case 4):

- ``bare``: a plain loop drawing each realization and running it on one kept engine (no
  executor, no HDF5), in a fresh Python process; the same work as an ensemble: the nominal run
  (which an ensemble stores, and which for the five-body scene is one realization of 21, ≈ 5%)
  and the ``n`` realizations, their times summed. It runs before the rows of each repetition
  and once more after the last (``bare'``); each row is compared with the bare time
  interpolated linearly to that row's middle between the bare rows around it: a machine whose
  speed drifts by 10-30% in minutes (measured: docs/ensembles.md) otherwise moves every ratio;
  the drift between consecutive bare rows is printed;
- ``pair 2`` (unless ``--no-pair``): the same ``n`` realizations split in ``--workers``
  consecutive parts, each a bare loop in a process of its own, all started together (each
  process loads the scene, then waits for the others; one done with its part runs its
  realizations again, untimed, until all are done, so that every part runs beside the others).
  Each realization is compared with its time in the bare loop (interpolated to the row's
  middle; a process's first realization, which makes its engine, left out): a process's
  ``speed`` is its realizations' bare time ÷ their time here, 1.00 when the other cores take
  nothing from it. The sum ``S`` of the speeds is what ``workers`` processes do of
  one process's work per second, so no executor of that many processes gets more than ``S`` ×
  the bare loop's rate from this machine: the ``ceiling`` of a pool or Dask row is
  ``S × (serial ÷ bare)`` (its ``× serial`` cannot exceed it), and ``1.05 × S`` is the most a
  pool can be over a serial run that meets its target (≤ 1.05 × bare). Speeds are printed by
  wall time and by CPU time (which a busy machine distorts less);
- ``serial``, ``pool 2``, ``dask 2``: ``run_ensemble`` into a fresh HDF5 file (gzip, the
  default), each in a fresh Python process, as the CLI runs it: the nominal run, the file's
  creation and the start of the processes it starts (the pool's fork server and its imports,
  a serial run's helper process) are counted; the driver's own imports are not (nor are the
  bare loop's). The Dask cluster (127.0.0.1, one thread per worker) is started before the clock
  and stopped after it;
- ``÷ bare``: wall time ÷ (bare time ÷ workers); 1.00 = a perfect executor with free storage.
  Target (issue 16): serial ≤ 1.05;
- ``cpu ÷ bare``: the CPU time of the driver process (all its threads; not its workers', its
  helper's or the Dask scheduler's) ÷ the bare loop's. One process: its realizations and what
  it spends besides, readable on a busy machine, where wall times are not; pool and Dask: what
  the driver takes from the workers' cores (writing, and a pool's driver runs the first tasks
  itself while its workers start); pair: all its processes' CPU;
- ``× serial``: serial wall time ÷ this wall time (the serial row of the same repetition).
  Targets: pool 2 ≥ 1.85, dask 2 ≥ 1.8;
- ``steal``: CPUs' worth of time the hypervisor gave to others during the row (``/proc/stat``;
  0.10: a tenth of one CPU on average), a cause of drift that nothing in the guest shows
  otherwise;
- ``local 2`` (with ``--local-row``): Dask as ``workbench ensemble --scheduler local`` runs it:
  ``run_ensemble`` starts the cluster (on a thread, while the driver runs the nominal
  realization and the first tasks) and stops it, both in the clock;
- ``thread`` (with ``--thread-row``): serial without any helper process (its writer thread
  compresses).

- ``--cli``: instead of the rows above, the command line as a user runs it, one run each, one
  after the other, in one table: ``workbench ensemble SCENE -n N --seed 7`` serially, with
  ``--workers W``, with ``--scheduler local`` (its default workers: one per core), and on the
  README's Dask recipe (its scheduler and W workers, started as the README's lines say before
  the clock, stopped after it). Each row is the command's wall time from its start to its exit,
  Python's start-up and imports included; ``× serial`` is the serial row's ÷ this. Targets
  (issue 36, idle 2-core machine, random_box, n = 1200): ``--workers 2`` ≥ 1.8, ``--scheduler
  local`` ≥ 1.6, the recipe ≥ 1.6.

``--repeat K`` runs the rows K times, interleaved (bare, pair, serial, ..., bare, pair, serial,
..., bare'), and ends with the median of each ratio over the repetitions. Each scene's ensemble
size is chosen so that the bare loop takes about ``--seconds`` (default 40 s; at least 20
realizations). Fixed costs (start-up, the last uneven tasks) weigh less in longer runs: compare
``--seconds 15`` and ``--seconds 60``. Run it on an otherwise idle machine: a 2-worker speed-up
cannot be measured while something else uses a core.
Usage: ``python benchmarks/ensemble.py [--seconds 40] [--repeat K] [--no-dask] [--no-pair]
[--local-row] [--thread-row] [--compression none] [--cli]
[SCENE ...]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from workbench.ensemble import run as run_module  # noqa: E402
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


#: Serial overhead target of issue 16 (serial ÷ bare), for the pool's ceiling over such a run.
SERIAL_TARGET = 1.05


def bare_stamps(
    ref: SceneRef, indices: list[int], entropy: int, then=None
) -> list[tuple[float, ...]]:
    """Run realizations ``indices`` (``NOMINAL_INDEX``: the nominal run) in a plain loop on one
    kept engine; per realization ``(start, end, cpu)``: ``time.monotonic`` stamps (one clock for
    every process of the machine) and the CPU seconds of this thread. ``then()``, if given, is
    called after them, and the same realizations are run again, not timed, while it returns
    True (after each)."""
    scene = ref.load()
    engine = None
    stamps = []
    order = list(indices)
    try:
        for k in itertools.count():
            if k >= len(indices) and (then is None or not then()):
                break
            i = order[k % len(order)]
            t0, c0 = time.monotonic(), time.thread_time()
            if i == NOMINAL_INDEX:
                real = nominal_realization(scene)
            else:
                real = sample_realization(scene, realization_rng(entropy, i))
            realized = scene.with_parameters(real.values) if real.values else scene
            if engine is None:
                engine = Engine(realized, mass_overrides=real.mass_overrides)
            run_scene(realized, engine=engine, mass_overrides=real.mass_overrides)
            if k < len(indices):
                stamps.append((t0, time.monotonic(), time.thread_time() - c0))
    finally:
        if engine is not None:
            engine.close()
    return stamps


def bare(ref: SceneRef, n: int, entropy: int, nominal: bool = True) -> tuple[float, float]:
    """``(wall, cpu)`` seconds of the nominal run (if ``nominal``) and ``n`` realizations in a
    plain loop on one kept engine, each timed and summed (the scene's loading excluded)."""
    stamps = bare_stamps(ref, ([NOMINAL_INDEX] if nominal else []) + list(range(n)), entropy)
    return sum(b - a for a, b, _ in stamps), sum(c for *_, c in stamps)


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
    ap.add_argument(
        "--repeat", type=int, default=1, help="repetitions of the rows, interleaved (medians)"
    )
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask row")
    ap.add_argument(
        "--local-row",
        action="store_true",
        help="also run on a Dask cluster started by run_ensemble (--scheduler local, in the clock)",
    )
    ap.add_argument(
        "--no-pair", action="store_true", help="skip the concurrent bare loops (the ceiling)"
    )
    ap.add_argument(
        "--thread-row",
        action="store_true",
        help="also run serially without any helper process (its writer thread compresses)",
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
    ap.add_argument(
        "--cli",
        action="store_true",
        help="time the command line instead: serial, --workers W, --scheduler local and the "
        "README's Dask recipe (default n: 1200)",
    )
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.workers < 1:
        ap.error("--repeat and --workers: at least 1")
    if args.cli:
        for name in args.scenes or ["random_box"]:
            _cli_table(name, args.n or 1200, args.workers)
        return 0
    names = args.scenes or [s for s in DEFAULT_SCENES if _exists(s)]
    files = [find_scene(s) for s in names]
    head = (
        f"{'scene':<20}{'n':>7}{'executor':>10}{'wall s':>9}{'real/s':>9}{'÷ bare':>9}"
        f"{'cpu ÷ bare':>12}{'× serial':>10}{'ceiling':>9}{'steal':>7}"
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
            if n is None:  # calibrate on 5 realizations, after the one that makes the engine
                # (≈ 40 ms for random_box, 3 of its realizations: with it, n came out ≈ 0.4 ×
                # the --seconds asked for)
                stamps = bare_stamps(ref, list(range(6)), entropy + 1)[1:]
                per = sum(b - a for a, b, _ in stamps) / len(stamps)
                n = max(20, int(round(args.seconds / per)))
            common = {"ref": [ref.path, [list(kv) for kv in ref.overrides]], "n": n}
            common |= {"entropy": entropy, "compression": comp}
            rows = [("serial", 1, None)]
            if args.thread_row:
                rows.append(("thread", 1, "thread"))
            rows.append((f"pool {w}", w, None))
            if not args.no_dask:
                rows.append((f"dask {w}", w, "dask"))
            if args.local_row:
                rows.append((f"local {w}", w, "local"))
            pair = [] if args.no_pair or w < 2 else [(f"pair {w}", w, "pair")]
            plan = []
            for r in range(args.repeat):
                plan += [(r, "bare", 1, "bare"), *[(r, *row) for row in pair + rows]]
            plan.append((args.repeat, "bare'", 1, "bare"))
            done = []
            for r, label, workers, kind in plan:
                out = Path(tmp) / f"{f.stem}-{label.replace(' ', '')}.h5"
                job = common | {"out": str(out), "workers": workers, "kind": kind}
                t0, s0 = time.monotonic(), _steal()
                res = _pair(job) if kind == "pair" else _in_fresh_process(job)
                res |= {"rep": r, "label": label, "workers": workers}
                res["middle"] = (t0 + time.monotonic()) / 2
                res["steal"] = (_steal() - s0) / (time.monotonic() - t0)
                done.append(res)
                out.unlink(missing_ok=True)
            _print_scene(f.stem, n, done, w)
    return 0


def _readme_dask_recipe() -> list[str]:
    """The README's command lines that start a Dask scheduler and a worker on one machine."""
    text = (REPO / "README.md").read_text()
    block = text.split("bind the scheduler and the workers to 127.0.0.1", 1)[1]
    block = block.split("```text\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("dask ")]


def _cli_table(scene: str, n: int, w: int) -> None:
    """One table of ``workbench ensemble SCENE -n n`` run as a user runs it (``--cli``)."""
    import shlex
    import signal
    import threading

    from workbench.ensemble.cluster import _free_port, _wait_for_workers, dask_command

    workbench = str(Path(sys.executable).with_name("workbench"))
    head = f"{'scene':<14}{'n':>6}  {'command line':<44}{'wall s':>8}{'× serial':>10}{'load':>6}"
    print(head)
    print("-" * len(head))
    serial = None
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "cli.h5")
        base = [workbench, "ensemble", scene, "-n", str(n), "--seed", "7", "-o", out, "-q"]
        port = str(_free_port())
        rows = [
            ("", []),
            (f"--workers {w}", ["--workers", str(w)]),
            ("--scheduler local", ["--scheduler", "local"]),
            (f"README recipe, {w} workers", ["--scheduler", f"tcp://127.0.0.1:{port}"]),
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
        for label, extra in rows:
            procs = []
            try:
                if label.startswith("README"):  # started before the clock, as a user would
                    scheduler_line, worker_line = _readme_dask_recipe()
                    for line in [scheduler_line] + [worker_line] * w:
                        argv = shlex.split(line.replace("8786", port).replace("8787", "0"))
                        argv[0] = dask_command()
                        if argv[1] == "scheduler":  # the recipe's takes the default port
                            argv += ["--port", port]
                        procs.append(
                            subprocess.Popen(
                                argv, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL,
                            )
                        )
                        if argv[1] == "scheduler":
                            time.sleep(1.0)
                    _wait_for_workers(f"tcp://127.0.0.1:{port}", w, 60.0, threading.Event())
                Path(out).unlink(missing_ok=True)
                t0 = time.monotonic()
                subprocess.run(base + extra, env=env, check=True)
                wall = time.monotonic() - t0
            finally:
                for proc in procs:  # by process id (a worker may hang in its own shutdown)
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
            serial = serial or wall
            cmd = f"workbench ensemble {label}".strip() if label else "workbench ensemble"
            print(
                f"{scene:<14}{n:>6}  {cmd:<44}{wall:>8.1f}{serial / wall:>10.2f}"
                f"{os.getloadavg()[0]:>6.1f}",
                flush=True,
            )


def _print_scene(stem: str, n: int, done: list[dict], w: int) -> None:
    """The rows of one scene, each against the bare rows around it; then, with more than one
    repetition, the medians."""
    bares = [d for d in done if d["label"].startswith("bare")]
    ratios: dict[str, dict[str, list[float]]] = {}

    def keep(label: str, key: str, value: float) -> None:
        ratios.setdefault(label, {}).setdefault(key, []).append(value)

    first = True
    for d in done:
        before = [b for b in bares if b["middle"] <= d["middle"]][-1]
        after = next((b for b in bares if b["middle"] > d["middle"]), before)
        span = after["middle"] - before["middle"]
        x = (d["middle"] - before["middle"]) / span if span > 0 else 0.0
        bare_wall = before["wall"] + (after["wall"] - before["wall"]) * x
        bare_cpu = before["cpu"] + (after["cpu"] - before["cpu"]) * x
        d["bare_wall"] = bare_wall
        label, is_bare = d["label"], d["label"].startswith("bare")
        serial = (
            next(s for s in done if s["label"] == "serial" and s["rep"] == d["rep"])
            if (not is_bare)
            else None
        )
        cells = {"ratio": "", "speed": "", "ceiling": ""}
        if not is_bare:
            ratio = d["wall"] / (bare_wall / d["workers"])
            cells["ratio"] = f"{ratio:.3f}"
            keep(label, "÷ bare", ratio)
        if serial is not None and not label.startswith("pair"):
            speed = serial["wall"] / d["wall"]
            cells["speed"] = f"{speed:.2f}"
            keep(label, "× serial", speed)
            pair = next((p for p in done if "S" in p and p["rep"] == d["rep"]), None)
            if d["workers"] > 1 and pair is not None and "bare_wall" in serial:
                ceiling = pair["S"] * serial["wall"] / serial["bare_wall"]
                cells["ceiling"] = f"{ceiling:.2f}"
                keep(label, "ceiling", ceiling)
        cpu_ratio = d["cpu"] / bare_cpu
        keep(label, "cpu ÷ bare", cpu_ratio)
        print(
            f"{stem if first else '':<20}{n:>7}{label:>10}{d['wall']:>9.2f}{n / d['wall']:>9.1f}"
            f"{cells['ratio']:>9}{cpu_ratio:>12.3f}{cells['speed']:>10}{cells['ceiling']:>9}"
            f"{d['steal']:>7.2f}",
            flush=True,
        )
        first = False
        if label.startswith("pair"):
            _pair_speeds(d, before, after, x, w)
            keep(label, "S", d["S"])
            keep(label, "S by cpu", d["S_cpu"])
    drifts = [100 * (b1["wall"] / b0["wall"] - 1) for b0, b1 in zip(bares, bares[1:], strict=False)]
    print(
        f"{'':<20}bare drift between consecutive bare rows: "
        + ", ".join(f"{v:+.1f}%" for v in drifts)
    )
    if len(bares) > 2:
        print(f"{'':<20}medians over {len(bares) - 1} repetitions:")
        for label, keys in ratios.items():
            text = ", ".join(f"{k} {statistics.median(v):.3f}" for k, v in keys.items())
            print(f"{'':<20}  {label:>8}: {text}")


def _pair_speeds(d: dict, before: dict, after: dict, x: float, w: int) -> None:
    """Each process's speed in the pair row against the bare rows (module docstring), printed;
    sets ``d["S"]`` and ``d["S_cpu"]``, their sums by wall and by CPU time."""
    alone = {}  # realization -> (wall, cpu) in the bare loop, interpolated to the pair's middle
    for key, (ta, tb) in enumerate(zip(before["stamps"], after["stamps"], strict=True)):
        wall = (1 - x) * (ta[1] - ta[0]) + x * (tb[1] - tb[0])
        alone[before["indices"][key]] = (wall, (1 - x) * ta[2] + x * tb[2])
    speeds, cpu_speeds, counts = [], [], []
    for indices, stamps in zip(d["indices"], d["stamps"], strict=True):
        inside = list(zip(indices[1:], stamps[1:], strict=True))
        counts.append(len(inside))
        if not inside:
            speeds.append(float("nan"))
            cpu_speeds.append(float("nan"))
            continue
        speeds.append(sum(alone[i][0] for i, _ in inside) / sum(s[1] - s[0] for _, s in inside))
        cpu_speeds.append(sum(alone[i][1] for i, _ in inside) / sum(s[2] for _, s in inside))
    d["S"], d["S_cpu"] = sum(speeds), sum(cpu_speeds)
    print(
        f"{'':<20}  {w} bare loops at once: speed of each ÷ alone "
        + " / ".join(f"{v:.3f}" for v in speeds)
        + " (by CPU "
        + " / ".join(f"{v:.3f}" for v in cpu_speeds)
        + ";"
        + f" realizations compared: {' / '.join(map(str, counts))});"
        + f" S = {d['S']:.2f} (by CPU {d['S_cpu']:.2f}):"
        + f" a {w}-process run ≤ {d['S']:.2f} × bare, ≤ {SERIAL_TARGET * d['S']:.2f} × a serial"
        + f" run at {SERIAL_TARGET} × bare",
        flush=True,
    )


def _steal() -> float:
    """Seconds of CPU the hypervisor has taken from this machine's CPUs since boot (the
    ``steal`` field of ``/proc/stat``; 0 where there is none)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _pair(job: dict) -> dict:
    """The ``pair`` row: ``job["n"]`` realizations split into ``job["workers"]`` consecutive
    parts, each run by a bare loop in a process of its own, started together."""
    n, w = job["n"], job["workers"]
    cuts = [round(k * n / w) for k in range(w + 1)]
    procs = []
    try:
        for k in range(w):
            part = job | {"kind": "part", "indices": list(range(cuts[k], cuts[k + 1]))}
            procs.append(
                subprocess.Popen(
                    [sys.executable, __file__, "--job", json.dumps(part)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )
        for p in procs:  # each has loaded the scene
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError("a bare loop of the pair row did not start")
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:  # a process done with its part goes on (untimed) until all are done
            if p.stdout.readline().strip() != "done":
                raise RuntimeError("a bare loop of the pair row failed")
        Path(job["out"]).touch()  # stop
        results = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    stamps = [r["stamps"] for r in results]
    wall = max(s[-1][1] for s in stamps) - min(s[0][0] for s in stamps)
    cpu = sum(r["cpu"] for r in results)
    return {"wall": wall, "cpu": cpu, "stamps": stamps, "indices": [r["indices"] for r in results]}


def _in_fresh_process(job: dict) -> dict:
    """What ``job`` (:func:`_run_job`) measured, run in a new Python process (so that no fork
    server or import is left from an earlier row)."""
    done = subprocess.run(
        [sys.executable, __file__, "--job", json.dumps(job)],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _run_job(text: str) -> int:
    job = json.loads(text)
    path, overrides = job["ref"]
    ref = SceneRef(path, tuple((k, v) for k, v in overrides))
    if job["kind"] in ("bare", "part"):
        ref.load()  # as run_ensemble, which loads the scene before its clock starts
        then = None
        if job["kind"] == "part":  # wait for the other processes of the pair row
            print("ready", flush=True)
            sys.stdin.readline()
            indices = job["indices"]
            stop = Path(job["out"])
            stop.unlink(missing_ok=True)
            said: list[int] = []

            def then() -> bool:  # the others still run their parts: keep them company
                if not said:
                    print("done", flush=True)
                    said.append(1)
                return not stop.exists()

        else:
            indices = [NOMINAL_INDEX, *range(job["n"])]
        stamps = bare_stamps(ref, indices, job["entropy"], then)
        wall, cpu = sum(b - a for a, b, _ in stamps), sum(c for *_, c in stamps)
        print(json.dumps({"wall": wall, "cpu": cpu, "stamps": stamps, "indices": indices}))
        return 0
    kwargs = {"entropy": job["entropy"], "compression": job["compression"]}
    if job["kind"] == "thread":
        run_module.HELPER_MIN_SECONDS = float("inf")
    # this module imported PyBullet; run_ensemble imports the store (h5py) and the scene loader
    # before its clock starts
    if job["kind"] == "dask":
        with local_dask_cluster(job["workers"]) as address:
            res = run_ensemble(ref, job["n"], job["out"], scheduler=address, **kwargs)
    elif job["kind"] == "local":  # the CLI's --scheduler local: the cluster's start and stop count
        res = run_ensemble(
            ref, job["n"], job["out"], scheduler="local", workers=job["workers"], **kwargs
        )
    else:
        res = run_ensemble(ref, job["n"], job["out"], workers=job["workers"], **kwargs)
    print(json.dumps({"wall": res.wall_seconds, "cpu": res.cpu_seconds}))
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
