"""Driver memory of ``workbench ensemble`` against the number of realizations (issue 16: flat in
n, ≤ 500 MB at 10^5 for ``random_box``), and of ``workbench stats`` reading the file.

Each size runs in a fresh process (``ru_maxrss`` of the driver alone: pool workers are other
processes) and prints its peak resident memory and wall time; then ``workbench stats`` reads the
file in a fresh process, and the file is opened with plain h5py.
Usage: ``python benchmarks/ensemble_memory.py [-n 1000 10000 100000] [--workers 2] [SCENE]``
(10^5 realizations of random_box take ≈ 15 min of CPU).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: Runs the CLI in this fresh process and prints its own peak resident memory, MB.
_CHILD = (
    "import resource, sys, time\n"
    "from workbench.cli.main import main\n"
    "t = time.perf_counter()\n"
    "rc = main(sys.argv[1:])\n"
    "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
    "print(f'{rc} {time.perf_counter() - t:.1f} {peak:.0f}')\n"
)


def _run(*args: str) -> tuple[int, float, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0 or not out.stdout.strip():
        raise SystemExit(f"workbench {' '.join(args)} failed:\n{out.stderr}")
    rc, wall, peak = out.stdout.strip().splitlines()[-1].split()
    return int(rc), float(wall), float(peak)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scene", nargs="?", default="random_box")
    ap.add_argument("-n", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--workers", default="2", help="as the CLI's (default 2)")
    args = ap.parse_args(argv)
    print(f"{'n':>8}{'wall s':>9}{'driver MB':>11}{'stats s':>9}{'stats MB':>10}{'file MB':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.n:
            out = Path(tmp) / f"e{n}.h5"
            _, wall, peak = _run(
                "ensemble", args.scene, "-n", str(n), "--seed", "1", "-q", "-o", str(out),
                "--workers", args.workers,
            )  # fmt: skip
            _, stats_wall, stats_peak = _run("stats", str(out))
            import h5py  # plain h5py opens the file

            with h5py.File(out, "r") as f:
                assert bool(f["completed"][()].all())
            size = out.stat().st_size / 2**20
            print(
                f"{n:>8}{wall:>9.1f}{peak:>11.0f}{stats_wall:>9.1f}{stats_peak:>10.0f}{size:>9.0f}"
            )
            out.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
