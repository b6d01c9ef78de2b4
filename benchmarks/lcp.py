"""Lemke solver cost on contact LCPs: solve time and pivots vs problem size n.

Each row is one seeded random contact configuration from
:func:`tests.lcp_problems.random_contact_lcp` (bodies of 0.5–2 kg touching the ground or each
other, about four contacts per body; per contact a normal row, 4 pyramid friction rows and the
slack row with μ ∈ [0.2, 1], so n = 6·contacts; dt = 10 ms, random body velocities plus a gravity
step). Columns:

- ``n``, ``contacts``, ``bodies``: problem size;
- ``status``: :attr:`reverse.lcp.LCPResult.status` (``fallback`` is shown after it when a rung of
  the fallback ladder produced the answer);
- ``pivots``: Lemke pivots (including the first one, where the artificial variable enters), and
  ``piv/n``;
- ``active``: number of basic z (contact impulses and slacks in the final basis);
- ``solve``: wall time of :func:`reverse.lcp.solve_lcp`, median of ``--repeats`` runs, with
  ``ms/piv`` = solve / pivots;
- ``warm``: wall time of the same solve warm-started from its own basis (no pivots: the
  verification and the principal re-solve alone);
- ``residual``: :func:`reverse.lcp.lcp_residual` of the answer (dimensionless; verified against
  ``VERIFY_RTOL`` = 1e-9).

The work per pivot runs in numpy's own (single-threaded) loops; only the equilibration, the final
re-solve of the basis and the verification call BLAS/LAPACK. On a loaded machine OpenBLAS's
threads can then dominate small solves (measured on a shared 2-core box: n = 300 in 250 ms
instead of 14 ms); ``OPENBLAS_NUM_THREADS=1 python benchmarks/lcp.py`` gives stable timings.

Usage: ``python benchmarks/lcp.py [--repeats 5] [--seeds 1] [N ...]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._table import print_head, timed  # noqa: E402
from reverse.lcp import lcp_residual, solve_lcp  # noqa: E402
from tests.lcp_problems import random_contact_lcp  # noqa: E402

SIZES = (12, 24, 48, 120, 300, 600, 1200)
ROWS_PER_CONTACT = 6  # normal + 4 friction directions + slack


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", nargs="*", type=int, help=f"problem sizes n (default {SIZES})")
    ap.add_argument("--repeats", type=int, default=5, help="solves per timing (median)")
    ap.add_argument("--seeds", type=int, default=1, help="contact configurations per size")
    args = ap.parse_args(argv)
    sizes = args.sizes or SIZES
    head = (
        f"{'n':>6}{'contacts':>10}{'bodies':>8}  {'status':<10}{'pivots':>8}{'piv/n':>7}"
        f"{'active':>8}{'solve ms':>11}{'ms/piv':>8}{'warm ms':>9}{'residual':>10}"
    )
    print_head(
        f"contact LCPs (normal + 4 friction + slack rows), median of {args.repeats} solves", head
    )
    for n in sizes:
        k = max(1, n // ROWS_PER_CONTACT)
        for s in range(args.seeds):
            rng = np.random.default_rng(1000 * n + s)
            M, q = random_contact_lcp(rng, k)
            bodies = max(1, k // 4)
            res = solve_lcp(M, q)
            t_cold = statistics.median(
                timed(lambda M=M, q=q: solve_lcp(M, q)) for _ in range(args.repeats)
            )
            t_warm = statistics.median(
                timed(lambda M=M, q=q, b=res.basis: solve_lcp(M, q, warm_start=b))
                for _ in range(args.repeats)
            )
            status = res.status + (f" ({res.fallback})" if res.fallback else "")
            print(
                f"{q.size:>6}{k:>10}{bodies:>8}  {status:<10}{res.pivots:>8}"
                f"{res.pivots / q.size:>7.2f}{res.basis.size:>8}{1e3 * t_cold:>11.2f}"
                f"{1e3 * t_cold / max(res.pivots, 1):>8.3f}{1e3 * t_warm:>9.2f}"
                f"{lcp_residual(M, q, res.z):>10.1e}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
