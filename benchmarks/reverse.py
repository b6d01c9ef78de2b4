"""Reverse-step cost: backward steps/s for N spheres settled in a bin, with the time split.

For each N (default 10, 100, 1000) the spheres (radius 5 cm, 0.1 kg, friction 0.5, rolling
friction 0.001) are dropped from a loose grid (about eight layers, seeded horizontal jitter) into
a bin (fixed box ground and four fixed box walls) and settled by PyBullet
(:func:`workbench.sim.forward.run_scene`, dt = 1/240 s, ``--settle`` seconds; its wall time and the
largest and median speed left are printed separately). The settled poses with zero velocities are
the *final* state of a reverse scene, which :meth:`reverse.step.stepper.Stepper.backward` steps back
(dt = 1 ms) up to ``--steps`` times in three regimes:

- ``resting``: no hints. Every sphere is at rest with resting neighbours, hence asleep; no island
  is solved, so this is the cost of contact detection and bookkeeping;
- ``active``: bounce hints (0.1 m/s, at reverse time 0, i.e. in the first step) on the top 10%
  of the spheres (highest z). They and their neighbours wake up and real LCPs are solved. The
  first step's impulses also set some neighbours moving (N = 100: 23 unhinted spheres, up to
  0.16 m/s), so the awake set spreads (42 spheres in the first step, 98 of 100 by step 15);
- ``awake``: no hints, ``StepSettings(sleep=False)``: every sphere is stepped every step, in one
  island per connected group (in practice one LCP holding nearly all of the bin's contacts).

A regime stops early once its steps have taken ``--budget`` seconds (at least one step runs).

Columns: ``hints``: spheres given a hint; ``steps`` taken; ``step/s`` = 1 / median wall time of a
backward step; ``first``: wall time of the first step, ms (the hints act there, and no LCP basis
exists yet to warm-start from); ``contacts``: mean contact points per step; ``islands``: mean
islands solved per step; ``awake``: mean awake spheres per step; ``rows``: largest LCP (rows) of
any island; ``fail``: islands whose LCP did not solve; ``fb``: islands answered by a rung of the
solver's fallback ladder; then the split of :attr:`reverse.step.stepper.StepReport.timing` summed
over
the steps, in ms per step and percent of the steps' wall time: ``contacts`` (PyBullet collision
detection, tangent alignment, the hint goals), ``assembly`` (mass matrices, Jacobians, the LCP
matrix, the new velocities), ``lcp`` (:func:`reverse.lcp.solve.solve_lcp`), ``integration`` (the
backward
configuration and the new state); ``other`` is the rest of the wall time (sleeping and island
bookkeeping: :mod:`reverse.step.islands`, ``Stepper._solve``).

Each contact has 11 LCP rows (normal, 4 friction directions and their slack, 4 rolling directions
and their slack), and a dense Lemke solve grows about as rows³, so two cases are skipped by
default (measured on a 2-core box, seed 0):

- ``active`` for N = 1000 (``--active-max 100``): the woken top layer is one island of 413 spheres,
  1114 contacts, 12254 rows; the first step took 1150 s (1133 s in the LCP, solved);
- ``awake`` for N = 100 (``--awake-max 10``): one island of 97 spheres, 248 contacts, 2695 rows;
  one step took 106 s (105.6 s in the LCP, solved). The same bin settled at dt = 1 ms instead
  gave a 2651-row LCP that did not solve: plain Lemke ended after 15730 pivots (108 s) on an
  answer that does not verify (residual 1.1e-6 > 1e-9), the regularized retries failed too,
  461 s for the step.

The forward engine on the same scene: PyBullet runs each settled bin forward from the same
state at the same dt (:func:`workbench.sim.forward.run_scene`, every state recorded, at least
``FORWARD_STEPS`` steps), its cost per step taken without start-up (``benchmarks/_pace.py``);
columns ``fwd ms`` (PyBullet ms per step) and ``×fwd`` (the regime's median backward step ÷
PyBullet's step; issue 17 asks ≤ 3 on the spelling scene, ``benchmarks/spelling.py``).

``OPENBLAS_NUM_THREADS`` is set to 1 unless given (see ``benchmarks/lcp.py``: OpenBLAS threads
make small solves slow and noisy on a loaded machine).

Usage: ``python benchmarks/reverse.py [--sizes 10 100 1000] [--steps 50] [--seed 0]``
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._pace import Pace  # noqa: E402
from benchmarks._table import print_head  # noqa: E402
from reverse.goals.hints import Hint, HintPolicy  # noqa: E402
from reverse.runs.run import build_stepper  # noqa: E402
from reverse.step.stepper import StepSettings  # noqa: E402
from workbench.scene.model import Scene, scene_from_dict  # noqa: E402
from workbench.scene.parts import bin_walls  # noqa: E402
from workbench.sim.forward import run_scene  # noqa: E402

SIZES = (10, 100, 1000)
RADIUS = 0.05  # m
MASS = 0.1  # kg
SPACING = 2.4 * RADIUS  # m, centre distance in the drop grid (loose: 0.4 r gaps)
JITTER = 0.1 * RADIUS  # m, largest horizontal offset from the grid
LAYERS = 8  # the grid's side is about sqrt(N / 8), so about eight layers are dropped
WALL = 0.05  # m, half thickness of the walls
SETTLE_DT = 1 / 240  # s, PyBullet's default step: settling 1000 spheres takes ~35 s, not ~100 s
DT = 1e-3  # s, the backward steps (as scenes/reverse_landing.yaml)
BOUNCE_SPEED = 0.1  # m/s, below the restitution cut-off 0.2 m/s
TOP_FRACTION = 0.1  # spheres given a bounce hint in the "active" regime
REGIMES = ("resting", "active", "awake")
SPLIT = ("contacts", "assembly", "lcp", "integration")
#: Fewest PyBullet steps timed for the forward cost: 100 progress marks need ≥ 100 steps, and
#: 0.1 s of simulated time at 1 ms keeps the timing noise of a loaded machine below ~10%.
FORWARD_STEPS = 100


def bin_scene(n: int, rng: np.random.Generator, settle: float) -> dict:
    """Scene data: ``n`` spheres on a jittered grid above a walled bin, run for ``settle`` s."""
    side = max(2, math.ceil(math.sqrt(n / LAYERS)))
    layers = math.ceil(n / side**2)
    half = 0.5 * side * SPACING  # inner half width of the bin
    top = RADIUS + layers * SPACING
    bodies = [
        {
            "name": "ground",
            "shape": {"type": "box", "half_extents": [half + 2 * WALL, half + 2 * WALL, 0.5]},
            "position": [0.0, 0.0, -0.5],
            "fixed": True,
        }
    ]
    bodies += bin_walls(half, WALL, 0.0, top)
    for i in range(n):
        layer, cell = divmod(i, side**2)
        row, col = divmod(cell, side)
        x = -half + (col + 0.5) * SPACING + rng.uniform(-JITTER, JITTER)
        y = -half + (row + 0.5) * SPACING + rng.uniform(-JITTER, JITTER)
        z = 1.2 * RADIUS + layer * SPACING
        bodies.append(
            {
                "name": f"s{i}",
                "shape": {"type": "sphere", "radius": RADIUS},
                "mass": MASS,
                "position": [x, y, z],
                "material": {"friction": 0.5, "rolling_friction": 0.001},
            }
        )
    n_steps = max(1, round(settle / SETTLE_DT))
    return {
        "description": f"{n} spheres dropped into a bin",
        "settings": {"dt": SETTLE_DT, "duration": n_steps * SETTLE_DT, "record_every": n_steps},
        "bodies": bodies,
    }


def settle(data: dict) -> tuple[Scene, float, np.ndarray]:
    """Settle the spheres of ``data``; the reverse scene (settled poses, zero velocities), the
    wall time (s) and the spheres' final speeds (m/s)."""
    scene = scene_from_dict(data, source="<bench>")
    t0 = time.perf_counter()
    traj = run_scene(scene)
    wall = time.perf_counter() - t0
    if traj.status != "ok":
        raise RuntimeError(f"settling run failed: {traj.message}")
    spheres = [k for k, b in enumerate(data["bodies"]) if b["shape"]["type"] == "sphere"]
    bodies = [dict(b) for b in data["bodies"]]
    for k in spheres:
        bodies[k]["position"] = traj.position[-1, k].tolist()
        bodies[k]["quaternion"] = traj.orientation[-1, k].tolist()
    reverse = dict(data, settings={"dt": DT, "duration": 1.0}, bodies=bodies)
    speed = np.linalg.norm(traj.linear_velocity[-1, spheres], axis=1)
    return scene_from_dict(reverse, source="<bench>"), wall, speed


def forward_per_step(scene: Scene, steps: int) -> float:
    """PyBullet's wall time per step (s) running ``scene`` forward from its state at ``DT``,
    without start-up (``benchmarks/_pace.py``)."""
    pace = Pace()
    n = max(steps, FORWARD_STEPS)
    run_scene(scene.with_settings(dt=DT, duration=n * DT, record_every=1), progress=pace)
    return pace.per_step()


def measure(scene: Scene, regime: str, steps: int, budget: float, seed: int) -> dict:
    """Backward steps of ``scene`` in one regime: per-step wall times and report sums."""
    settings = StepSettings(DT, sleep=regime != "awake")
    stepper, detector, state = build_stepper(scene, settings, seed=seed)
    names = scene.body_names
    hints = []
    if regime == "active":
        spheres = np.flatnonzero(stepper.rigid.moving)
        n_top = max(1, round(TOP_FRACTION * len(spheres)))
        top = spheres[np.argsort(state.position[spheres, 2])[::-1][:n_top]]
        hints = [Hint(names[k], "bounce", np.zeros(3), BOUNCE_SPEED) for k in top]
    policy = HintPolicy(hints, names, DT, settings.epsilon)
    n_moving = int(np.sum(stepper.rigid.moving))
    walls, split = [], dict.fromkeys(SPLIT, 0.0)
    contacts, islands, awake, rows, failed, fallbacks = [], [], [], 0, 0, 0
    note = ""
    try:
        for k in range(steps):
            policy.reverse_time = k * DT
            t0 = time.perf_counter()
            state, rep = stepper.backward(state, policy)
            walls.append(time.perf_counter() - t0)
            for key in SPLIT:
                split[key] += rep.timing[key]
            contacts.append(rep.contacts)
            islands.append(len(rep.islands))
            awake.append(n_moving - rep.sleeping)
            rows = max(rows, max((r.n_rows for r in rep.islands), default=0))
            failed += rep.failed
            fallbacks += rep.fallbacks
            if not np.all(state.is_finite()):
                note = f"non-finite state after step {k + 1}: stopped"
                break
            if sum(walls) > budget and k + 1 < steps:
                note = f"{k + 1} steps took {sum(walls):.0f} s > --budget {budget:g} s: stopped"
                break
    finally:
        detector.close()
    return {
        "hints": len(hints),
        "walls": walls,
        "split": split,
        "contacts": float(np.mean(contacts)),
        "islands": float(np.mean(islands)),
        "awake": float(np.mean(awake)),
        "rows": rows,
        "failed": failed,
        "fallbacks": fallbacks,
        "note": note,
    }


def _row(n: int, regime: str, res: dict, fwd: float) -> str:
    walls = res["walls"]
    k, total = len(walls), sum(walls)
    parts = [res["split"][name] for name in SPLIT]
    parts.append(total - sum(parts))
    cells = "".join(f"{1e3 * t / k:>10.2f} ({100 * t / total:>2.0f}%)" for t in parts)
    med = statistics.median(walls)
    return (
        f"{n:>5} {regime:<8}{res['hints']:>6}{k:>6}{1 / med:>9,.1f}"
        f"{1e3 * walls[0]:>9.1f}{res['contacts']:>9.0f}{res['islands']:>8.1f}"
        f"{res['awake']:>7.1f}{res['rows']:>7}{res['failed']:>5}{res['fallbacks']:>4}{cells}"
        f"{1e3 * fwd:>9.2f}{med / fwd:>7.1f}"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="See the module docstring (top of the file) for the columns and measured limits.",
    )
    ap.add_argument(
        "--sizes", nargs="+", type=int, default=list(SIZES), help=f"sphere counts (default {SIZES})"
    )
    ap.add_argument("--steps", type=int, default=50, help="backward steps per regime (default 50)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the drop-grid jitter (default 0)")
    ap.add_argument(
        "--settle", type=float, default=3.0, help="settling time (simulated), s (default 3)"
    )
    ap.add_argument(
        "--budget",
        type=float,
        default=60.0,
        help="stop a regime once its steps took this long, s (default 60; one step always runs)",
    )
    for option, regime, default, why in (
        ("--active-max", "active", 100, "N = 1000 takes ~20 min per step"),
        ("--awake-max", "all-awake", 10, "N = 100: ~13 s its first step"),
    ):
        ap.add_argument(
            option,
            type=int,
            default=default,
            help=f"largest N for the {regime} regime (default {default}: {why})",
        )
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    limit = {"resting": None, "active": args.active_max, "awake": args.awake_max}
    why = {
        "active": "the woken top layer is one LCP of ~12000 rows (see the docstring)",
        "awake": "one LCP of all contacts; N = 100: ~2700 rows, ~13 s its first step",
    }
    print(
        f"backward steps of spheres (r = {RADIUS} m) settled in a bin, dt = {DT:g} s, "
        f"seed {args.seed}, OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}"
    )
    results = []
    fwd = {}
    for n in args.sizes:
        data = bin_scene(n, np.random.default_rng(args.seed), args.settle)
        scene, wall, speed = settle(data)
        fwd[n] = forward_per_step(scene, args.steps)
        steps = round(args.settle / SETTLE_DT)
        print(
            f"N = {n:>4}: settled {args.settle:g} s in {wall:5.1f} s wall "
            f"({steps / wall:,.0f} PyBullet steps/s at dt = 1/240 s); speed left: "
            f"largest {speed.max():.1e} m/s, median {np.median(speed):.1e} m/s; PyBullet "
            f"forward at dt = {DT:g} s: {1e3 * fwd[n]:.2f} ms/step",
            flush=True,
        )
        for regime in REGIMES:
            if limit[regime] is not None and n > limit[regime]:
                flag = f"--{regime}-max {limit[regime]}"
                results.append((n, regime, None, f"skipped, N > {flag}: {why[regime]}"))
                continue
            res = measure(scene, regime, args.steps, args.budget, args.seed)
            results.append((n, regime, res, res["note"]))
    print()
    head = (
        f"{'N':>5} {'regime':<8}{'hints':>6}{'steps':>6}{'step/s':>9}{'first':>9}"
        f"{'contacts':>9}{'islands':>8}{'awake':>7}{'rows':>7}{'fail':>5}{'fb':>4}"
        + "".join(f"{name:>16}" for name in (*SPLIT, "other"))
        + f"{'fwd ms':>9}{'×fwd':>7}"
    )
    print_head(
        "step/s = 1 / median step wall time; split: ms/step (% of the steps' wall time); "
        "fwd ms: PyBullet forward ms/step; ×fwd: median backward step ÷ forward step",
        head,
    )
    notes = []
    for n, regime, res, note in results:
        if res is None:
            print(f"{n:>5} {regime:<8}{'-':>6}{'-':>6}")
        else:
            print(_row(n, regime, res, fwd[n]))
        if note:
            notes.append(f"N = {n} {regime}: {note}")
    for note in notes:
        print(note)
    print(f"total {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
