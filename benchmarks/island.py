"""Large-island LCP cost: backward steps of N spheres settled in a bin, all awake (one island).

The scene and the settling are those of ``benchmarks/reverse.py`` (its ``bin_scene`` and
``settle``: spheres of radius 5 cm, 0.1 kg, friction 0.5, rolling friction 0.001, dropped into a
walled bin and settled by PyBullet at dt = 1/240 s); the reverse steps run at dt = 1 ms with
``StepSettings(sleep=False)``, so every sphere is stepped every step and the connected pile is one
island (N = 100, seed 0: 97 spheres, ≈ 248 contacts, ≈ 2700 rows; 106 s per step with the
numpy Lemke of before issue 17).

Every LCP the stepper solves is intercepted (the ``solve_lcp`` that :mod:`reverse.dynamics`
calls is wrapped, not changed) and timed. Columns per step: ``rows`` of the largest island,
``pivots``, ``method`` (how the answer was reached: ``trivial``, ``warm`` — the previous step's
basis verified —, ``advanced`` — Lemke's path started from that basis —, ``cold`` — Lemke from
the standard start —, or ``ladder``), ``status`` (with the fallback rung, if any), ``lcp s``
(wall time of that solve), ``step s`` (wall time of the whole backward step).

``--save FILE.npz`` stores every intercepted LCP (``M0, q0, M1, q1, …``, plus the basis each
solve returned as ``J0, J1, …``) so that the solver can be studied without PyBullet:
``--load FILE.npz`` re-solves the stored problems in sequence (cold, then warm-started from the
previous problem's basis) and prints the same columns; with ``--dense`` each cold solve is run
twice, interleaved: as shipped (the blocked path of :mod:`reverse.lemke_kernel` from
``reverse.lcp.BLOCKED_MIN_ROWS`` rows) and with the dense path forced (``method`` then reads
``dense``), and whether the two answers are the same to the bit. ``lcp s`` is wall time;
on a loaded machine compare the pivots and the CPU time printed after each pair.

``OPENBLAS_NUM_THREADS`` is set to 1 unless given (see ``benchmarks/lcp.py``).

Usage: ``python benchmarks/island.py [--n 100] [--steps 5] [--settle 3] [--save F | --load F
[--dense]]``
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._table import print_head  # noqa: E402
from reverse import lcp  # noqa: E402

HEAD = (
    f"{'step':>5}{'rows':>7}{'pivots':>8}  {'method':<10}{'status':<28}{'lcp s':>9}{'step s':>9}"
    f"{'residual':>10}"
)


def _line(step, res, t_lcp, t_step) -> str:
    """One table row; ``method`` is :attr:`reverse.lcp.LCPResult.start` (``trivial``, ``warm``,
    ``advanced``, ``cold``) or ``ladder`` when the fallback ladder gave (or failed to give) the
    answer."""
    status = res.status + (f" ({res.fallback})" if res.fallback else "")
    method = res.start or "ladder"
    return (
        f"{step:>5}{res.z.size:>7}{res.pivots:>8}  {method:<10}{status:<28}"
        f"{t_lcp:>9.3f}{t_step:>9.3f}{res.residual:>10.1e}"
    )


def run_scene_steps(n: int, steps: int, settle_s: float, seed: int, save: str | None) -> None:
    """Settle the bin, then ``steps`` backward steps with every sphere awake."""
    from benchmarks.reverse import DT, bin_scene, settle
    from reverse import dynamics
    from reverse.hints import HintPolicy
    from reverse.run import build_stepper
    from reverse.stepper import StepSettings

    data = bin_scene(n, np.random.default_rng(seed), settle_s)
    scene, wall, _ = settle(data)
    print(f"N = {n}: settled {settle_s:g} s in {wall:.1f} s wall", flush=True)
    settings = StepSettings(DT, sleep=False)
    stepper, detector, state = build_stepper(scene, settings, seed=seed)
    policy = HintPolicy([], scene.body_names, DT, settings.epsilon)
    log: list[tuple] = []
    real = dynamics.solve_lcp

    def recording(M, q, **kw):
        t0 = time.perf_counter()
        res = real(M, q, **kw)
        log.append((M.copy(), q.copy(), res, time.perf_counter() - t0, kw.get("warm_start")))
        return res

    dynamics.solve_lcp = recording
    stored = {}
    print_head(f"backward steps, dt = {DT:g} s, all awake: the largest island's LCP", HEAD)
    try:
        for k in range(steps):
            policy.reverse_time = k * DT
            log.clear()
            t0 = time.perf_counter()
            state, _ = stepper.backward(state, policy)
            t_step = time.perf_counter() - t0
            if not log:
                print(f"{k + 1:>5}  (no LCP)")
                continue
            M, q, res, t_lcp, ws = max(log, key=lambda e: e[1].size)
            print(_line(k + 1, res, t_lcp, t_step), flush=True)
            stored[f"M{k}"], stored[f"q{k}"], stored[f"J{k}"] = M, q, res.basis
    finally:
        dynamics.solve_lcp = real
        detector.close()
    if save:
        np.savez_compressed(save, **stored)
        print(f"saved {len(stored) // 3} LCPs to {save}")


def _timed(M, q, dense: bool):
    """One cold :func:`reverse.lcp.solve_lcp`, optionally with the dense path forced; returns
    the result, wall and CPU seconds."""
    shipped = lcp.BLOCKED_MIN_ROWS
    if dense:
        lcp.BLOCKED_MIN_ROWS = q.size + 1
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        res = lcp.solve_lcp(M, q)
        return res, time.perf_counter() - t0, time.process_time() - c0
    finally:
        lcp.BLOCKED_MIN_ROWS = shipped


def run_stored(path: str, dense: bool = False) -> None:
    """Re-solve the stored LCPs in sequence: cold, and warm from the previous basis; with
    ``dense``, each cold solve also with the dense path forced (interleaved)."""
    data = np.load(path)
    keys = sorted(int(k[1:]) for k in data.files if k.startswith("M"))
    print_head(f"stored LCPs of {path}: cold, then warm-started from the previous basis", HEAD)
    prev = None
    for k in keys:
        M, q = data[f"M{k}"], data[f"q{k}"]
        res, wall, cpu = _timed(M, q, False)
        print(_line(k + 1, res, wall, float("nan")), flush=True)
        if dense:
            ref, wall_d, cpu_d = _timed(M, q, True)
            line = _line(k + 1, ref, wall_d, float("nan"))
            print(line.replace(f"  {ref.start:<10}", f"  {'dense':<10}"), flush=True)
            same = np.array_equal(res.z, ref.z) and np.array_equal(res.basis, ref.basis)
            print(
                f"      CPU s: {cpu:.3f} as shipped, {cpu_d:.3f} dense; same z and basis to the "
                f"bit: {same}",
                flush=True,
            )
        if prev is not None and prev.size and prev.max() < q.size:
            t0 = time.perf_counter()
            res = lcp.solve_lcp(M, q, warm_start=prev)
            print(_line(k + 1, res, time.perf_counter() - t0, float("nan")), flush=True)
        prev = res.basis


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100, help="spheres (default 100)")
    ap.add_argument("--steps", type=int, default=5, help="backward steps (default 5)")
    ap.add_argument("--settle", type=float, default=3.0, help="settling time, s (default 3)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the drop-grid jitter")
    ap.add_argument("--save", help="store the intercepted LCPs in this .npz file")
    ap.add_argument("--load", help="re-solve the LCPs stored in this .npz file (no PyBullet)")
    ap.add_argument(
        "--dense", action="store_true", help="with --load: also each cold solve on the dense path"
    )
    args = ap.parse_args(argv)
    if args.load:
        run_stored(args.load, args.dense)
    else:
        run_scene_steps(args.n, args.steps, args.settle, args.seed, args.save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
