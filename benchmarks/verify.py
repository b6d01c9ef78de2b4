"""Forward verification (issue 15, item 4): share of kept ``markov_block`` reverse runs whose
earliest state :mod:`reverse.runs.verify` refines so that PyBullet, played forward, rests within 1
cm
and 5° of the final pose, with the PyBullet runs and seconds it took per run.

For each configuration (``--config``; default both):

- ``docs``: the docs' sampling example, ``--duration 1 --samples 50 --keep 5 --energy-limit 20``;
- ``wide``: the scene's duration (1.5 s), ``--samples 200 --keep 20`` and no energy limit, so
  that energetic pasts (many bounces) are kept too;

``--seeds`` sampling seeds are run (default 1 2 3), each through
:func:`reverse.runs.sampling.sample_reverse_runs` then :func:`reverse.runs.verify.verify_runs` with
the
default budget, tolerance and neighbourhood (``--budget`` to change the budget), on
``--workers`` processes. Columns: ``kept`` runs, ``refined`` (count and share), ``rest`` (of the
kept runs, how many the reverse run's own earliest state already brings to rest within the
tolerance), median and largest PyBullet runs per refined run, median and largest residual of the
refined runs (mm, deg), the median pose shift (mm) and turn (deg) of the refined earliest states,
wall seconds of the verification per kept run (all workers together: wall × workers ÷ runs) and
of one PyBullet run. The failures are listed with their residuals.

Run: ``python benchmarks/verify.py [--config docs wide] [--seeds 1 2 3] [--workers 2]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # before benchmarks/, whose reverse.py would shadow the package

from benchmarks._table import print_head  # noqa: E402
from reverse.goals.markov import load_model  # noqa: E402
from reverse.runs.sampling import sample_reverse_runs  # noqa: E402
from reverse.runs.verify import DEFAULT_BUDGET, verify_runs  # noqa: E402
from reverse.step.stepper import StepSettings  # noqa: E402
from workbench.ensemble.run import SceneRef  # noqa: E402
from workbench.scene.catalog import find_data, find_scene  # noqa: E402
from workbench.scene.loader import load_scene  # noqa: E402

CONFIGS = {
    "docs": {"duration": 1.0, "samples": 50, "keep": 5, "energy_limit": 20.0},
    "wide": {"duration": 1.5, "samples": 200, "keep": 20, "energy_limit": None},
}


def run_config(name: str, seed: int, workers: int, budget: int):
    cfg = CONFIGS[name]
    path = find_scene("markov_block")
    scene = load_scene(path)
    dt = scene.settings.dt
    options = {
        "duration": cfg["duration"],
        "dt": dt,
        "hints": [],
        "settings": StepSettings(dt),
        "markov": load_model(find_data("markov_block")),
        "energy_limit": cfg["energy_limit"],
        "on_energy": "stop",
    }
    ref = SceneRef(str(path))
    res = sample_reverse_runs(ref, samples=cfg["samples"], keep=cfg["keep"], options=options,
                              entropy=seed, workers=workers)  # fmt: skip
    runs = [(o.index, traj) for o, traj, _ in res.kept]
    t0 = time.perf_counter()
    out = verify_runs(ref, runs, entropy=seed, budget=budget, workers=workers)
    return out, time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
    args = ap.parse_args(argv)
    head = (
        f"{'config':>6} {'seed':>4} {'kept':>4} {'refined':>12} {'rest':>4} {'runs med':>8} "
        f"{'runs max':>8} {'res mm':>7} {'max mm':>7} {'res deg':>7} {'max deg':>7} "
        f"{'shift mm':>8} {'turn deg':>8} {'s/run':>6} {'ms/PyB':>7}"
    )
    print_head(f"forward verification of kept markov_block runs (budget {args.budget})", head)
    failures = []
    totals = {}
    for name in args.config:
        for seed in args.seeds:
            out, _ = run_config(name, seed, args.workers, args.budget)
            ok = np.array([o.status == "refined" for o in out])
            runs = np.array([o.pybullet_runs for o in out])
            dp = np.array([o.residual_position for o in out]) * 1e3
            da = np.degrees([o.residual_angle for o in out])
            shift = np.array([o.pose_shift for o in out]) * 1e3
            turn = np.degrees([o.pose_turn for o in out])
            at_once = int(np.sum(runs[ok] == 1))
            busy = sum(o.seconds for o in out)
            t = totals.setdefault(name, [0, 0, 0, 0.0])
            t[0] += ok.size
            t[1] += int(ok.sum())
            t[2] += int(runs.sum())
            t[3] += busy

            def med(a):
                return float(np.median(a)) if a.size else float("nan")

            def top(a):
                return float(np.max(a)) if a.size else float("nan")

            print(
                f"{name:>6} {seed:>4} {ok.size:>4} {ok.sum():>4} ({ok.mean():>5.0%}) "
                f"{at_once:>4} {med(runs[ok]):>8.0f} {top(runs[ok]):>8.0f} "
                f"{med(dp[ok]):>7.1f} {top(dp[ok]):>7.1f} {med(da[ok]):>7.2f} {top(da[ok]):>7.2f} "
                f"{med(shift[ok]):>8.0f} {med(turn[ok]):>8.1f} "
                f"{busy / max(ok.size, 1):>6.2f} {1e3 * busy / max(runs.sum(), 1):>7.1f}"
            )
            for o in out:
                if o.status != "refined":
                    failures.append(
                        f"  {name} seed {seed} run {o.run} (sample {o.index}): {o.status}, "
                        f"{o.residual_position * 1e3:.1f} mm, {np.degrees(o.residual_angle):.1f}"
                        f" deg after {o.pybullet_runs} runs ({o.message}); reverse state "
                        f"{o.initial_position * 1e3:.0f} mm, {np.degrees(o.initial_angle):.0f} deg"
                    )
    print()
    for name, (n, k, r, busy) in totals.items():
        print(f"{name}: {k} of {n} kept runs refined ({k / max(n, 1):.0%}); {r / max(n, 1):.1f} "
              f"PyBullet runs and {busy / max(n, 1):.2f} s per kept run")  # fmt: skip
    if failures:
        print("not refined:")
        print("\n".join(failures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
