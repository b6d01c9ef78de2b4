"""LCP solver cost on contact LCPs: the compiled path against the numpy reference and peers.

Each row is one seeded random contact configuration from
:func:`tests.lcp_problems.random_contact_lcp` (bodies of 0.5–2 kg touching the ground or each
other, about four contacts per body; per contact a normal row, 4 pyramid friction rows and the
slack row with μ ∈ [0.2, 1], so n = 6·contacts; dt = 10 ms, random body velocities plus a gravity
step). Columns:

- ``n``: problem size; ``status``: :attr:`reverse.lcp.solve.LCPResult.status` of the compiled path
  (``fallback`` is shown after it when a rung of the fallback ladder produced the answer);
  ``pivots``: Lemke pivots (including the first one, where the artificial variable enters);
  ``same``: ``=`` when the compiled path and the numpy reference return bit-identical ``z`` (and
  the same basis), ``~`` when they agree only to 1e-12, ``≠`` otherwise;
- ``compiled µs``: :func:`reverse.lcp.solve.solve_lcp` (numba kernel,
:mod:`reverse.lcp.lemke_kernel`),
  median of the repeats, *verification included* (equilibration, Lemke, the re-solve of the final
  basis and :func:`reverse.lcp.solve.lcp_residual` on the caller's problem);
- ``warm µs``: the same, warm-started from its own basis (no pivots: a principal solve and the
  verification);
- ``numpy µs``: ``solve_lcp(..., engine="numpy")``, the reference implementation, and ``×`` the
  ratio numpy / compiled;
- ``quantecon µs``: ``quantecon.optimize.lcp_lemke`` (numba, lexicographic Lemke on a full
  tableau), when quantecon is importable, solve only (its answer is checked with
  ``lcp_residual`` outside the timing; ``!`` marks one above ``VERIFY_RTOL``);
- ``drake µs``: ``pydrake.solvers.MobyLCPSolver.SolveLcpLemke``, when pydrake is importable,
  solve only (checked the same way);
- ``sic-lemke µs``, ``sic-newton-min µs``, ``sic-newton-fb µs``, ``sic-pgs µs``: Siconos
  numerics' Lemke, its semismooth Newton methods (min-map; Fischer–Burmeister with line search,
  both at tolerance 1e-10) and its projected Gauss–Seidel (tolerance 1e-6), when an interpreter
  imports Siconos (:mod:`benchmarks._siconos`: Debian's ``python3-siconos`` runs in a subprocess
  of the system python), solve only, timed in that process; ``!`` marks an answer that does not
  verify on our residual (``≤ VERIFY_RTOL``), ``?`` none (a non-finite ``z``), ``t`` a solve
  stopped after ``--siconos-timeout`` seconds;
- ``residual``: :func:`reverse.lcp.solve.lcp_residual` of the compiled answer.

Where Siconos is faster or slower, ``docs/studies/large-islands.md`` says why.

A constant row gives the published C++ anchor: DART's Dantzig solver, 2 µs at n = 12 and 18 µs at
n = 48 (a boxed-LCP pivoting solver without verification).

Warm-up (``--warmup``): the kernel is compiled on its first call with ``cache=True``; the script
then measures, each in a fresh process, the first solve with an empty numba cache (compilation)
and with the cache filled (loading).

OpenBLAS threads can dominate small solves on a loaded machine, so ``OPENBLAS_NUM_THREADS`` is set
to 1 unless given. Neither quantecon nor pydrake is a dependency: install them into the
environment to get their columns; Siconos: ``apt-get install python3-siconos`` (Debian), or
``SICONOS_PYTHON=/path/to/python`` naming an interpreter that imports it (``SICONOS_PYTHON=``,
empty, leaves Siconos out).

Usage: ``python benchmarks/lcp.py [--repeats 21] [--warmup] [--cpu] [--siconos-timeout 600]
[N ...]``
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks import _siconos  # noqa: E402
from benchmarks._table import print_head, timed  # noqa: E402
from reverse.lcp.solve import VERIFY_RTOL, lcp_residual, solve_lcp  # noqa: E402
from tests.lcp_problems import random_contact_lcp  # noqa: E402

SIZES = (12, 24, 48, 120, 300, 600, 1200)
ROWS_PER_CONTACT = 6  # normal + 4 friction directions + slack
#: DART's Dantzig boxed-LCP solver (C++), published timings, µs: the anchor row.
DART_DANTZIG_US = {12: 2.0, 48: 18.0}
#: Time budget per timing cell, s: small problems get many repeats, large ones ``--repeats``
#: at most (a cell never stops before 3 runs).
CELL_BUDGET = 2.0


def _cpu_timed(fn) -> float:
    """CPU time of this process for one call ``fn()``, s (``time.process_time``)."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def _median_us(fn, repeats: int, clock=timed) -> float:
    """Median time of ``fn()`` in µs (``clock``: wall or CPU) over up to ``repeats`` runs (at
    least 3) within :data:`CELL_BUDGET` seconds of wall time."""
    times, t_end = [], time.perf_counter() + CELL_BUDGET
    while len(times) < 3 or (len(times) < repeats and time.perf_counter() < t_end):
        times.append(clock(fn))
    return 1e6 * statistics.median(times)


def _peers():
    """The optional peer solvers that can be imported: name → solve(M, q) → z or None."""
    peers = {}
    try:
        from quantecon.optimize import lcp_lemke
    except ImportError:
        pass
    else:

        def quantecon_solve(M, q):
            res = lcp_lemke(M, q)
            return res.z if res.success else None

        peers["quantecon"] = quantecon_solve
    try:
        from pydrake.solvers import MobyLCPSolver
    except ImportError:
        pass
    else:
        moby = MobyLCPSolver()

        def drake_solve(M, q):
            out = moby.SolveLcpLemke(M, q)
            ok, z = (out[0], out[1]) if isinstance(out[0], (bool, np.bool_)) else (out[1], out[0])
            return np.asarray(z) if ok else None

        peers["drake"] = drake_solve
    return peers


def siconos_columns(problems, repeats: int, timeout: float) -> dict:
    """Siconos' answers to ``problems`` per solver of :data:`benchmarks._siconos.SOLVERS`
    (:func:`benchmarks._siconos.solve_all`), or ``{}`` with a line saying why when no interpreter
    imports Siconos."""
    if not _siconos.available():
        print(
            "Siconos: no interpreter imports siconos.numerics (apt-get install python3-siconos, "
            "or set SICONOS_PYTHON); its columns are left out"
        )
        return {}
    print(f"Siconos: {_siconos.interpreter()} (subprocess)")
    return {
        name: _siconos.solve_all(problems, name, CELL_BUDGET, repeats, timeout)
        for name in _siconos.SOLVERS
    }


def siconos_cell(M, q, row, width: int) -> str:
    """One Siconos cell: median µs and a mark (``!`` not verified by our residual, ``?`` no
    answer, ``t`` timed out; ``lcp.py``'s docstring)."""
    z, secs, info, _iters = row
    if info == "timeout":
        return f"{'t':>{width}} "
    if z is None:
        return f"{1e6 * secs:>{width}.1f}?"
    return f"{1e6 * secs:>{width}.1f}{' ' if lcp_residual(M, q, z) <= VERIFY_RTOL else '!'}"


def warmup() -> None:
    """First solve in a fresh process, with an empty numba cache and with the filled cache."""
    code = (
        "import time; t = time.perf_counter()\n"
        "import numpy as np\n"
        "from reverse.lcp.solve import solve_lcp\n"
        "r = solve_lcp(np.array([[2.0, 1.0], [1.0, 2.0]]), -np.ones(2))\n"
        "assert r.solved and r.start == 'cold'\n"
        "print(time.perf_counter() - t)\n"
    )
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as cache:
        env["NUMBA_CACHE_DIR"] = cache
        rows = []
        for label in ("empty cache (compile)", "filled cache (load)"):
            out = subprocess.run(
                [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
            )
            if out.returncode:
                raise RuntimeError(out.stderr)
            rows.append((label, float(out.stdout)))
    print_head("kernel warm-up: import + first solve in a fresh process", f"{'':<24}{'s':>8}")
    for label, secs in rows:
        print(f"{label:<24}{secs:>8.2f}")
    print()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", nargs="*", type=int, help=f"problem sizes n (default {SIZES})")
    ap.add_argument("--repeats", type=int, default=21, help="most solves per timing (median)")
    ap.add_argument("--warmup", action="store_true", help="measure compile and cache-load time")
    ap.add_argument(
        "--cpu",
        action="store_true",
        help="time with the process's CPU clock instead of the wall clock (a loaded machine "
        "preempts the solves: wall times of a few ms then scatter by 2-5x, CPU times do not)",
    )
    ap.add_argument(
        "--siconos-timeout", type=float, default=600.0,
        help="seconds per Siconos solve (default 600)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    clock = _cpu_timed if args.cpu else timed
    sizes = args.sizes or SIZES
    if args.warmup:
        warmup()
    t0 = time.perf_counter()
    solve_lcp(np.eye(2), -np.ones(2))  # compile or load the kernel outside the timings
    print(f"kernel ready in {time.perf_counter() - t0:.2f} s (this process)")
    peers = _peers()
    names = list(peers)
    problems = [
        random_contact_lcp(np.random.default_rng(1000 * n), max(1, n // ROWS_PER_CONTACT))
        for n in sizes
    ]
    sic = siconos_columns(problems, args.repeats, args.siconos_timeout)
    head = (
        f"{'n':>6}  {'status':<8}{'pivots':>7}{'same':>5}{'compiled µs':>13}{'warm µs':>10}"
        f"{'numpy µs':>11}{'×':>6}"
        + "".join(f"{p + ' µs':>14}" for p in names)
        + "".join(f"{'sic-' + p + ' µs':>19}" for p in sic)
        + f"{'residual':>10}"
    )
    print_head(
        f"contact LCPs (normal + 4 friction + slack rows), median {'CPU' if args.cpu else 'wall'} "
        "time, verification "
        f"included; OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}",
        head,
    )
    for i, (M, q) in enumerate(problems):
        res = solve_lcp(M, q)
        ref = solve_lcp(M, q, engine="numpy")
        same_basis = np.array_equal(res.basis, ref.basis) and res.status == ref.status
        if same_basis and np.array_equal(res.z, ref.z):
            same = "="
        elif same_basis and np.allclose(res.z, ref.z, rtol=1e-12, atol=1e-12 * np.abs(ref.z).max()):
            same = "~"
        else:
            same = "≠"
        reps = args.repeats
        t_c = _median_us(lambda M=M, q=q: solve_lcp(M, q), reps, clock)
        t_w = _median_us(lambda M=M, q=q, b=res.basis: solve_lcp(M, q, warm_start=b), reps, clock)
        t_n = _median_us(lambda M=M, q=q: solve_lcp(M, q, engine="numpy"), reps, clock)
        cells = ""
        for name in names:
            solve = peers[name]
            z = solve(M, q)
            ok = z is not None and lcp_residual(M, q, z) <= VERIFY_RTOL
            t_p = _median_us(lambda M=M, q=q, solve=solve: solve(M, q), reps, clock)
            cells += f"{t_p:>13.1f}{'' if ok else '!'}" + (" " if ok else "")
        for rows in sic.values():
            cells += siconos_cell(M, q, rows[i], 18)
        status = res.status + (f" ({res.fallback})" if res.fallback else "")
        print(
            f"{q.size:>6}  {status:<8}{res.pivots:>7}{same:>5}{t_c:>13.1f}{t_w:>10.1f}"
            f"{t_n:>11.1f}{t_n / t_c:>6.1f}{cells}{lcp_residual(M, q, res.z):>10.1e}",
            flush=True,
        )
    for n, us in DART_DANTZIG_US.items():
        print(f"{n:>6}  DART Dantzig (C++, published, no verification): {us:g} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
