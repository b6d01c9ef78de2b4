"""Siconos numerics, the optional side-by-side peer of the LCP benchmarks (lcp.py, island.py).

Siconos (Acary et al., INRIA; https://nonsmooth.gricad-pages.univ-grenoble-alpes.fr/siconos) is
packaged by Debian as ``python3-siconos`` for the system interpreter, built against the system
numpy (1.24 on bookworm). The project's environment has numpy 2, whose C API the Debian build
cannot load (``ImportError: numpy.core.multiarray failed to import``), so the peer runs in a
subprocess of an interpreter that imports it: ``$SICONOS_PYTHON`` if set (set and empty: no
peer, e.g. for timing our own solver alone), else this interpreter if ``import siconos.numerics``
works here, else ``/usr/bin/python3``. The problems go there as an
``.npz`` file, one subprocess per problem and solver (so that a timeout stops one solve), and
the answers come back the same way; timing is taken inside the subprocess,
around the solver call only (``linearComplementarity_driver``), as for the in-process peers. The
answers are verified here with :func:`reverse.lcp.solve.lcp_residual`, like every peer's.

Without an interpreter that imports siconos, :func:`available` is False and the benchmarks print
no Siconos rows (one line saying so). ``.ci/run`` installs ``python3-siconos`` where it can.

The solvers compared (``SOLVERS``; Siconos' names and their stopping rules, Siconos numerics
user manual, "Linear Complementarity Problems"):

- ``lemke``: ``SICONOS_LCP_LEMKE``, Lemke's method on a dense tableau; iteration cap set to
  ``50·n`` (ours), its tolerance ``1e-6`` left (it applies to its own complementarity error);
- ``newton-min``: ``SICONOS_LCP_NEWTONMIN``, semismooth Newton on the min-map, tolerance set to
  ``1e-10``, 1000 iterations;
- ``newton-fb``: ``SICONOS_LCP_NEWTON_FB_FBLSA``, semismooth Newton on the Fischer–Burmeister
  function with a line search, tolerance ``1e-10`` (its default), 1000 iterations;
- ``pgs``: ``SICONOS_LCP_PGS``, projected Gauss–Seidel, tolerance ``1e-6`` (its default) and
  10 000 sweeps.

The tolerances are Siconos' own error measures (``lcp_compute_error``: ``‖z − proj(z − w)‖ /
‖q‖``), not ours; an answer counts as verified only when our residual is ``≤ VERIFY_RTOL``.

Usage inside the subprocess (not by hand): ``python _siconos.py IN.npz OUT.npz SOLVER BUDGET
REPEATS``
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

#: name → (Siconos solver constant's name, tolerance or None for Siconos' default, iteration cap
#: per row or absolute (negative)). 50·n for Lemke is our own pivot cap
#: (reverse.lcp.solve.DEFAULT_PIVOTS_PER_ROW); the Newton tolerances 1e-10 ask for the accuracy
#: our verification needs (1e-9), PGS keeps its default (it converges linearly: 1e-10 would take
#: its whole sweep budget on these problems).
SOLVERS = {
    "lemke": ("SICONOS_LCP_LEMKE", None, 50),
    "newton-min": ("SICONOS_LCP_NEWTONMIN", 1e-10, -1000),
    "newton-fb": ("SICONOS_LCP_NEWTON_FB_FBLSA", 1e-10, -1000),
    "pgs": ("SICONOS_LCP_PGS", None, -10000),
}

_PROBE = "import siconos.numerics"


def _imports_siconos(python: str) -> bool:
    try:
        out = subprocess.run([python, "-c", _PROBE], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0


_FOUND: list = []


def interpreter() -> str | None:
    """The interpreter that runs the peer (module docstring), or None when none imports it."""
    if not _FOUND:
        given = os.environ.get("SICONOS_PYTHON")
        candidates = [given] if given is not None else [sys.executable, "/usr/bin/python3"]
        found = None
        for python in candidates:
            if python and shutil.which(python) and _imports_siconos(python):
                found = python
                break
        _FOUND.append(found)
    return _FOUND[0]


def available() -> bool:
    """True when some interpreter imports ``siconos.numerics``."""
    return interpreter() is not None


def solve_all(problems, solver: str, budget: float, repeats: int, timeout: float):
    """Solve every ``(M, q)`` of ``problems`` with Siconos' ``solver`` (a key of
    :data:`SOLVERS`) in the peer's interpreter, one subprocess per problem. Returns, per problem,
    ``(z or None, seconds, info, iterations)``: ``seconds`` the median solve time over up to
    ``repeats`` runs (at least one, more while within ``budget`` s), ``info`` Siconos' return
    code (0: converged by its own measure). A problem not solved within ``timeout`` s gets
    ``(None, nan, "timeout", 0)``."""
    python = interpreter()
    if python is None:
        raise RuntimeError("no interpreter imports siconos.numerics")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")}
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        for M, q in problems:
            np.savez(src, M=np.asarray(M, dtype=float), q=np.asarray(q, dtype=float))
            dst.unlink(missing_ok=True)
            args = [python, str(HERE / "_siconos.py"), str(src), str(dst), solver, str(budget)]
            try:
                subprocess.run(
                    args + [str(repeats)], timeout=timeout, check=True, capture_output=True, env=env
                )
            except subprocess.TimeoutExpired:
                out.append((None, float("nan"), "timeout", 0))
                continue
            with np.load(dst) as done:
                z = done["z"] if np.all(np.isfinite(done["z"])) else None
                out.append((z, float(done["t"]), int(done["info"]), int(done["it"])))
    return out


def _worker(src: str, dst: str, solver: str, budget: float, repeats: int) -> int:
    """The subprocess: solve the problem of ``src`` (``M``, ``q``), save the answer to ``dst``."""
    import siconos.numerics as sn

    name, tol, cap = SOLVERS[solver]
    with np.load(src) as data:
        M, q = np.ascontiguousarray(data["M"]), np.ascontiguousarray(data["q"])
    n = q.size
    problem = sn.LCP(M, q)
    times = []
    t_end = time.perf_counter() + budget
    while not times or (len(times) < repeats and time.perf_counter() < t_end):
        options = sn.SolverOptions(getattr(sn, name))
        options.iparam[sn.SICONOS_IPARAM_MAX_ITER] = cap * n if cap > 0 else -cap
        if tol is not None:
            options.dparam[sn.SICONOS_DPARAM_TOL] = tol
        z, w = np.zeros(n), np.zeros(n)
        t0 = time.perf_counter()
        info = sn.linearComplementarity_driver(problem, z, w, options)
        times.append(time.perf_counter() - t0)
    it = options.iparam[sn.SICONOS_IPARAM_ITER_DONE]
    np.savez(dst, z=z, t=np.median(times), info=info, it=it)
    return 0


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(_worker(a[0], a[1], a[2], float(a[3]), int(a[4])))
