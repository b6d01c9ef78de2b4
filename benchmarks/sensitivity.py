"""Cost of a sensitivity analysis against the plain ensemble of the same size, on one machine.

For the sliding block with random v0 and mu (``scenes/sliding_block_random.yaml``, output
``stop``) at Sobol' base size N (default 256, i.e. 4 N runs):

- ``ensemble``: ``run_ensemble`` of 4 N random realizations (the default sampler), serially;
- ``sensitivity 1``, ``sensitivity 2``: ``run_sensitivity`` (design, design-driven realizations,
  outputs evaluated from the stored runs, indices, ``/design`` and ``/sensitivity`` written) with
  1 and 2 workers; reported with the run and analysis parts separately;
- ratios from this one run: ``sensitivity 1 ÷ ensemble`` (the design's and the analysis' cost;
  1.00 = free) and ``sensitivity 1 ÷ sensitivity 2`` (the pool's speed-up; 2.00 = perfect).

Run it on an otherwise idle machine: ``python benchmarks/sensitivity.py [-n 256]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from workbench.analysis.sensitivity import run_sensitivity  # noqa: E402
from workbench.ensemble.run import SceneRef, run_ensemble  # noqa: E402

SCENE = REPO / "scenes" / "sliding_block_random.yaml"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=256, help="Sobol' base size N (a power of 2)")
    args = ap.parse_args(argv)
    ref = SceneRef(str(SCENE))
    rows = 4 * args.n
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run_ensemble(ref, rows, Path(tmp) / "e.h5", entropy=1)
        plain = time.perf_counter() - t0
        results = {}
        for workers in (1, 2):
            res = run_sensitivity(
                ref, Path(tmp) / f"s{workers}.h5", n=args.n, entropy=1, workers=workers
            )
            results[workers] = res
    print(f"sliding block, {rows} runs (N = {args.n})")
    print(f"  ensemble (random draws, 1 worker): {plain:8.2f} s")
    for workers, res in results.items():
        run = res.wall_seconds - res.analysis_seconds
        print(
            f"  sensitivity, {workers} worker(s):     {res.wall_seconds:8.2f} s "
            f"(runs {run:.2f} s, outputs + indices + write {res.analysis_seconds:.2f} s)"
        )
    s1, s2 = results[1].wall_seconds, results[2].wall_seconds
    print(f"  sensitivity 1 ÷ ensemble: {s1 / plain:.2f}")
    print(f"  sensitivity 1 ÷ sensitivity 2: {s1 / s2:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
