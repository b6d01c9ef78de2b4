"""Crash safety of :mod:`workbench.store`: SIGKILL a writer at random moments, then check the file.

Property: after any kill, a file at the store's path opens, the completed realizations form a
prefix of the write order, and each of them equals exactly what the writer meant to write
(regenerated here from the realization's seed). A resumed writer then completes the file.
"""

from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from tests.unit.workbench.test_store import assert_same, make_trajectory
from workbench.sim.state import Trajectory
from workbench.store import TrajectoryStore, describe

REPO = Path(__file__).resolve().parents[2]
N_REAL = 40
N_KILLS = 12
KILL_SEED = 20240611


def make_realization(i: int) -> Trajectory:
    """Realization ``i`` (nt = 200), generated from seed ``i``; every 5th stops early."""
    if i % 5 != 3:
        return make_trajectory(i, nt=200)
    stopped = make_trajectory(i, nt=200, status="nonfinite", message="box non-finite at 120")
    return stopped.truncated(120)


CHILD = (
    textwrap.dedent(
        """
        import sys
        from tests.unit.workbench.test_store import make_trajectory
        from workbench.sim.state import Trajectory
        from workbench.store import StoreSchema, TrajectoryStore
        """
    )
    + inspect.getsource(make_realization)
    + textwrap.dedent(
        f"""
        path = sys.argv[1]
        schema = StoreSchema.from_trajectory(make_realization(0))
        print("ready", flush=True)
        sys.stdin.readline()  # "go": imports are done, the parent times only the writing
        with TrajectoryStore.create(path, schema, {N_REAL}, seed_entropy=1) as store:
            for i in range({N_REAL}):
                store.write(i, make_realization(i))
        print("done", flush=True)
        """
    )
)


def _spawn(path: Path) -> subprocess.Popen:
    """Start a writer for ``path``; it imports, then waits for :func:`_go`."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=path.parent,
    )


def _wait_ready(proc: subprocess.Popen) -> None:
    """Wait until the writer has imported everything."""
    line = proc.stdout.readline()
    if line.strip() != "ready":
        os.kill(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        pytest.fail(f"writer did not start: {line!r}\n{err}")


def _go(proc: subprocess.Popen) -> None:
    """Let a ready writer create and write its store."""
    proc.stdin.write("go\n")
    proc.stdin.flush()


def _check_file(path: Path) -> int:
    """Open the store, check every completed realization exactly; return how many completed."""
    with TrajectoryStore.open(path) as store:
        completed = store.completed
        k = int(completed.sum())
        assert completed[:k].all() and not completed[k:].any(), completed  # a prefix
        for i in range(k):
            assert_same(store.read(i), make_realization(i))
    # the summary reads only completed status elements (others may refer to lost heap objects)
    info = describe(path)
    assert info["n_completed"] == k
    assert [d["index"] for d in info["failed"]] == [i for i in range(k) if i % 5 == 3]
    return k


def _resume(path: Path) -> None:
    with TrajectoryStore.open(path, "r+") as store:
        for i in store.missing():
            store.write(i, make_realization(i))
    assert _check_file(path) == N_REAL


@pytest.mark.slow  # ~14 s
def test_sigkill_never_corrupts_completed_realizations(tmp_path):
    # all writers import concurrently, then run one at a time on an otherwise idle machine
    paths = [tmp_path / f"trial{trial}.h5" for trial in range(N_KILLS + 1)]
    procs = [_spawn(path) for path in paths]
    try:
        for proc in procs:
            _wait_ready(proc)
        # calibrate: one undisturbed run gives the time from "go" to the end of writing
        _go(procs[0])
        t0 = time.perf_counter()
        _, err = procs[0].communicate(timeout=60)
        duration = time.perf_counter() - t0
        assert procs[0].returncode == 0, err
        assert _check_file(paths[0]) == N_REAL

        rng = np.random.default_rng(KILL_SEED)
        delays = rng.uniform(0.0, duration, N_KILLS)
        delays[:2] *= 0.05  # aim two kills at create (initialisation, os.replace)
        outcomes = []
        for path, proc, delay in zip(paths[1:], procs[1:], delays, strict=True):
            _go(proc)
            time.sleep(delay)
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=60)
            if not path.exists():
                # killed before os.replace: no file at path is acceptable, a corrupt one is not
                outcomes.append(None)
                continue
            outcomes.append(_check_file(path))
            _resume(path)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.communicate()
    print("completed realizations at each kill:", outcomes)
    # the kills must have interrupted writing, not only landed before or after the run
    assert any(k is not None and k < N_REAL for k in outcomes), outcomes
