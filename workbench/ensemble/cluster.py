"""Start and stop a local Dask cluster as separate processes (scheduler + workers on 127.0.0.1).

For tests, benchmarks and trying ``workbench ensemble --scheduler`` on one machine. The processes
run Dask's ``dask scheduler`` / ``dask worker`` command lines, forked from one process that has
done their imports once (:mod:`workbench.ensemble.forked_cluster`), with the settings found right
for PyBullet (docs/architecture.md, "Dask"):
one thread per worker (PyBullet holds the GIL and a client shared across threads gives wrong
results), no dashboard, no nanny (the nanny's default MALLOC_TRIM_THRESHOLD_ made PyBullet tasks
about 45% slower), bound to 127.0.0.1, their HTTP servers too. They are stopped by process id,
and they end by themselves when the driver does, however it ends (:mod:`workbench.ensemble.
lifeline`: a pipe whose write end only the driver holds).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator

from workbench.ensemble.lifeline import FD_VARIABLE, SCRATCH_VARIABLE
from workbench.errors import WorkbenchError

__all__ = ["dask_command", "local_dask_cluster"]

#: Where the scheduler's and the workers' HTTP servers listen: ``--no-dashboard`` alone still
#: leaves one (health, metrics, info pages) on 0.0.0.0 (measured with distributed 2026.8.0,
#: docs/trust.md); port 0 lets the system pick a free one.
LOCAL_HTTP = ["--dashboard-address", "127.0.0.1:0"]


#: Dask's configuration variable of the workers' statistical profiler (set off for the local
#: cluster's workers; set it so for your own cluster's workers, docs/ensembles.md).
PROFILER_VARIABLE = "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dask_command() -> str:
    """The path of the ``dask`` command (next to this Python first); :class:`WorkbenchError`
    when there is none."""
    dask = shutil.which("dask", path=os.path.dirname(sys.executable)) or shutil.which("dask")
    if dask is None:
        raise WorkbenchError("the 'dask' command is missing: pip install 'rigid-workbench[dask]'")
    return dask


@contextlib.contextmanager
def local_dask_cluster(
    n_workers: int = 2,
    *,
    timeout: float = 60.0,
    env=None,
    dashboard: str | None = None,
    cancelled: threading.Event | None = None,
) -> Iterator[str]:
    """Run a scheduler and ``n_workers`` single-threaded workers; yield the scheduler address.

    ``dashboard``: ``HOST:PORT`` of the scheduler's dashboard (none by default; it needs
    ``bokeh``). ``cancelled``: set (from another thread) to stop waiting for the workers: the
    processes are then stopped and :class:`WorkbenchError` raised.

    Raises
    ------
    WorkbenchError
        Dask is not installed, the workers did not register within ``timeout`` seconds, or
        ``cancelled`` was set before they did.
    """
    dask_command()  # a missing Dask says so here
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    # the processes' scratch space (Dask's temporary-directory: lock files, the workers' spill
    # directories, the scheduler's): ours, removed at the end, so killed processes leave
    # nothing in the system's temporary folder
    scratch = tempfile.mkdtemp(prefix="workbench-dask-")
    env = {**(os.environ if env is None else env), "DASK_TEMPORARY_DIRECTORY": scratch}
    # Dask's statistical profiler samples every thread's stack each 10 ms, holding the GIL that
    # PyBullet's steps need: off, 2-worker random_box runs of 1200 took 2-18% less time (4 A/B
    # pairs, idle, 2026-11-27: 11.5 s against 9.4-10.4, 11.8 against 11.2; docs/ensembles.md).
    # A user's own setting wins.
    env.setdefault(PROFILER_VARIABLE, "False")
    # the lifeline: each process reads the pipe's read end until the driver's write end closes
    # (with the driver, whatever kills it), then ends (workbench.ensemble.lifeline)
    lifeline_read, lifeline_write = os.pipe()
    env[FD_VARIABLE] = str(lifeline_read)
    env[SCRATCH_VARIABLE] = scratch
    scheduler_args = (
        ["--host", "127.0.0.1", "--port", str(port)]
        # what unpickling a task needs, before the first (scheduler_preload's docstring)
        + ["--preload", "workbench.ensemble.scheduler_preload"]
        + (
            ["--no-dashboard", *LOCAL_HTTP]
            if dashboard is None
            else ["--dashboard", "--dashboard-address", dashboard]
        )
    )
    worker_args = [
        address,
        "--nthreads",
        "1",
        "--no-nanny",
        "--no-dashboard",
        "--host",
        "127.0.0.1",
        # imports before the first task, not in it, and no profiler (docs/ensembles.md)
        "--preload",
        "workbench.ensemble.preload",
        *LOCAL_HTTP,
    ]
    spec = {"scheduler": scheduler_args, "worker": worker_args, "workers": n_workers}
    # one process imports Dask and the preloads, then forks the scheduler and the workers
    # (workbench.ensemble.forked_cluster: the imports once, not once a process)
    launcher = subprocess.Popen(
        [sys.executable, "-m", "workbench.ensemble.forked_cluster", json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        pass_fds=(lifeline_read,),
    )
    pids: list[int] = []  # the forked scheduler and workers, once the launcher has said them
    try:
        os.close(lifeline_read)  # the children hold it; the driver keeps the write end only
        lifeline_read = -1
        pids = _read_pids(launcher, n_workers + 1, timeout, cancelled)
        _wait_for_workers(address, n_workers, timeout, cancelled)
        yield address
    finally:
        # Killed, not asked to stop: whatever brings us here (the run's end, an error, Ctrl-C),
        # the driver holds every result it will use, and the processes hold nothing of ours.
        # Asked (SIGTERM), the workers closed gracefully in ≈ 1.9 s and the scheduler in ≈ 0.9 s
        # (measured on the loaded machine, 2026-11-27), inside every `--scheduler local` run;
        # a worker told to stop after its scheduler went away even retried the connection for
        # 20 s. Killed, they end at once; their scratch space goes with them.
        # The launcher's children first: it reaps them and ends by itself. Killed first, it
        # would leave them to the init process, whose reaping took 1.4-1.9 s here.
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            launcher.wait(timeout=10 if pids else 0)
        except subprocess.TimeoutExpired:
            launcher.kill()
            launcher.wait()
        launcher.stdout.close()
        for fd in (lifeline_read, lifeline_write):
            if fd >= 0:
                os.close(fd)
        shutil.rmtree(scratch, ignore_errors=True)


def _read_pids(
    launcher: subprocess.Popen,
    n: int,
    timeout: float,
    cancelled: threading.Event | None = None,
) -> list[int]:
    """The ``n`` process ids the launcher (:mod:`workbench.ensemble.forked_cluster`) prints once
    it has forked them; :class:`WorkbenchError` if it ends or says nothing within ``timeout``,
    or ``cancelled`` is set first (a run whose scene failed to load while its cluster started)."""
    import selectors

    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(launcher.stdout, selectors.EVENT_READ)
        while not sel.select(0.1):
            if cancelled is not None and cancelled.is_set():
                raise WorkbenchError("the start of the local Dask cluster was cancelled")
            if time.monotonic() > deadline:
                raise WorkbenchError(
                    f"the local Dask cluster did not start within {timeout:g} s"
                )
    line = launcher.stdout.readline()
    try:
        pids = [int(p) for p in json.loads(line)]
    except (ValueError, TypeError):
        pids = []
    if len(pids) != n:
        try:  # it closed its output: it is ending
            code = launcher.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        raise WorkbenchError(
            f"the local Dask cluster did not start (its launcher exited with {code})"
        )
    return pids


def _wait_for_workers(
    address: str, n: int, timeout: float, cancelled: threading.Event | None = None
) -> None:
    from distributed import Client

    cancelled = cancelled or threading.Event()
    deadline = time.monotonic() + timeout
    while True:
        try:
            with Client(address, timeout=5) as client:
                while len(client.scheduler_info()["workers"]) < n:
                    if time.monotonic() > deadline:
                        raise WorkbenchError(f"{n} Dask workers did not register at {address}")
                    if cancelled.wait(0.2):
                        raise WorkbenchError(
                            f"the start of the Dask cluster at {address} was cancelled"
                        )
                return
        except OSError:
            if time.monotonic() > deadline:
                raise WorkbenchError(f"no Dask scheduler answered at {address}") from None
            if cancelled.wait(0.3):
                raise WorkbenchError(
                    f"the start of the Dask cluster at {address} was cancelled"
                ) from None
