"""Executors of parallel jobs (ensembles, reverse sampling, Markov training): this process, a
forkserver process pool whose workers end with their driver, or a Dask cluster (an existing one
at ``tcp://HOST:PORT``, or one started on 127.0.0.1 for the job); and :func:`bounded_map`, which
keeps a few tasks per worker in flight."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import re
import select
import signal
import sys
import threading
import time
from collections.abc import Iterable

from workbench.errors import WorkbenchError

__all__ = [
    "IN_FLIGHT_PER_WORKER",
    "LOCAL_SCHEDULER",
    "executor_for",
    "helper_process",
    "Starting",
    "in_process",
    "auto_workers",
    "start_fork_server",
    "check_scheduler_address",
    "bounded_map",
]

#: Tasks kept in flight per worker: enough to hide scheduling latency, few enough that a huge
#: ensemble does not hold all its pending results in memory.
IN_FLIGHT_PER_WORKER = 4

#: ``--scheduler local``: a Dask cluster on 127.0.0.1 started for the run and stopped after it.
LOCAL_SCHEDULER = "local"

#: Seconds to wait for a Dask scheduler to answer: a scheduler on a LAN answers in milliseconds,
#: and a user who mistyped an address should hear so in seconds, not after distributed's 30 s.
CONNECT_TIMEOUT_SECONDS = 10.0

#: Most seconds the end of a Dask job waits for the results already on their way to the client
#: (a probe's bool, a chunk of realizations: milliseconds on 127.0.0.1) before it closes the
#: client; a client closed under a gather printed a ``CommClosedError`` traceback (issue 39).
SETTLE_SECONDS = 10.0

#: What a ``--scheduler`` address must look like (distributed's ``[protocol://]host:port``):
#: checked before anything runs, so "notaurl" fails at once instead of after a connect timeout.
_SCHEDULER_ADDRESS = re.compile(
    r"^(?:(?P<scheme>tcp|tls|ucx|ws|wss)://)?"
    r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)"
    r":(?P<port>[0-9]{1,5})$"
)

#: Seconds between checks that the driver is alive, in pool workers where ``os.pidfd_open`` is
#: missing (not Linux >= 5.3): an orphan lingers at most this long.
WATCH_SECONDS = 1.0


class _Serial(cf.Executor):
    """Runs tasks in this process when submitted (the default for one worker)."""

    def submit(self, fn, /, *args, **kwargs):
        fut: cf.Future = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - delivered through the future
            fut.set_exception(exc)
        return fut


def in_process(ex) -> bool:
    """Whether ``ex`` runs its tasks in this process, when they are submitted."""
    return isinstance(ex, _Serial)


def executor_for(
    workers: int,
    scheduler: str | None,
    executor,
    n_tasks: int,
    *,
    dashboard: str | None = None,
    background: bool = False,
):
    """A context manager giving the executor of a parallel job: the caller's ``executor``
    (not shut down), a Dask cluster's at ``scheduler`` (``"local"``: one of ``workers``
    workers started on 127.0.0.1 for the job, with a dashboard at ``dashboard`` if given), this
    process for one worker or task, or a forkserver process pool of ``workers``.

    A Dask executor carries ``workbench_workers``, the cluster's worker threads, and
    ``workbench_dask`` (True): its workers are up once it exists (or, when ``background``, once
    its ``started`` is true).

    ``background``: a local Dask cluster starts on a thread (:class:`_Late`), as a pool's
    processes do, so that the caller works meanwhile (``submit`` waits for it; a failed start
    is raised there); otherwise entering waits for it."""
    if executor is not None:
        return _Borrowed(executor)
    if scheduler == LOCAL_SCHEDULER:
        return _local_dask_executor(workers, dashboard, background)
    if scheduler is not None:
        return _dask_executor(scheduler)
    if workers == 1 or n_tasks <= 1:
        return _Serial()
    return _pool(workers)


class Starting:
    """Starts the workers of ``ex`` from a thread: ``fn`` submitted ``count`` times.

    The first task submitted to a forkserver pool blocks the caller until the fork server has
    imported its preload (≈ 0.7 s of CPU: ``multiprocessing`` reads the new worker's pid from
    the server, which answers only once the imports are done), and each later one until its
    worker is forked. From a thread, this process does other work meanwhile: the thread waits
    in a read, without the GIL.

    ``then``: more calls ``(fn, *args)`` submitted by the thread after those, without
    waiting for them (work for the workers once they are up); their futures are in
    :attr:`then_futures`, in order.
    """

    def __init__(self, ex, count: int, fn, then: tuple = ()):
        self.futures: list[cf.Future] = []
        self.then_futures: list[cf.Future] = []
        self._thread = threading.Thread(
            target=self._submit,
            args=(ex, count, fn, then),
            name="workbench-pool-start",
            daemon=True,
        )
        self._thread.start()

    def _submit(self, ex, count: int, fn, then: tuple) -> None:
        with contextlib.suppress(BaseException):  # a broken pool says so at its next use
            for _ in range(count):
                self.futures.append(ex.submit(fn))
            for call in then:
                self.then_futures.append(ex.submit(*call))

    def join(self) -> None:
        """Wait until every call is submitted."""
        self._thread.join()

    @property
    def submitting(self) -> bool:
        """Whether the thread is still submitting (the executor is then busy: its lock is held)."""
        return self._thread.is_alive()

    def done(self) -> bool:
        """Whether every worker is up (or failed to start)."""
        return not self.submitting and all(f.done() for f in self.futures)


def helper_process() -> cf.Executor | None:
    """A pool of one process, for work that should not hold this process's GIL (a serial
    ensemble's compression), made like :func:`executor_for`'s pools; None when this process may
    use only one core (the work is then better done here)."""
    if auto_workers() < 2:
        return None
    return _pool(1)


def _forkserver_context():
    import multiprocessing as mp

    # forkserver: workers fork from a clean server process, never from a driver that holds an
    # open HDF5 file or had a PyBullet client
    ctx = mp.get_context("forkserver")
    # what every task needs, imported once in the server (≈ 0.7 s of CPU, preload's docstring);
    # the same list for every pool of this process, which share the server
    ctx.set_forkserver_preload(["workbench.ensemble.preload"])
    return ctx


def start_fork_server() -> None:
    """Start, from a thread, the fork server that this process's pools fork their workers from,
    so that its imports (:mod:`workbench.ensemble.preload`, ≈ 1.5 s idle) overlap what the
    caller does before its pool exists (loading the scene, the nominal run). A pool made later
    uses the same server (``multiprocessing`` keeps one per process); without this call its
    first task starts it. Measured (2026-12-08, idle 2-core machine, ``workbench ensemble
    random_box -n 1200 --workers 2``): docs/ensembles.md."""
    from multiprocessing import forkserver

    _forkserver_context()
    threading.Thread(
        target=forkserver.ensure_running, name="workbench-fork-server", daemon=True
    ).start()


def _pool(workers: int) -> cf.ProcessPoolExecutor:
    ctx = _forkserver_context()
    return cf.ProcessPoolExecutor(
        max_workers=workers,
        mp_context=ctx,
        initializer=_die_with_driver,
        initargs=(os.getpid(),),
    )


def auto_workers() -> int:
    """Worker processes for ``--workers auto``: the cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_scheduler_address(address: str) -> None:
    """Raise :class:`WorkbenchError` unless ``address`` looks like a Dask scheduler address
    (``[tcp://]HOST:PORT``); it is not contacted."""
    if address == LOCAL_SCHEDULER:
        return
    match = _SCHEDULER_ADDRESS.match(address)
    if match is None or not 0 < int(match["port"]) < 65536:
        raise WorkbenchError(
            f"--scheduler {address}: expected a Dask scheduler address tcp://HOST:PORT, "
            "e.g. tcp://127.0.0.1:8786, or 'local'"
        )


def _die_with_driver(driver_pid: int) -> None:
    """Initializer of pool workers: end this worker when the driver process ends, however it
    ends (SIGKILL included).

    A forkserver worker is a child of the forkserver, not of the driver, and blocks on a queue
    whose write end it holds itself, so it would outlive a killed driver forever; the forkserver
    and multiprocessing's resource tracker stay alive as long as any worker holds their pipes,
    and end on their own once the workers are gone. So each worker watches the driver: a daemon
    thread blocks on a pidfd of the driver (readable when it exits; polls where pidfds are
    missing) and then ends the process. The parent-death signal (Linux) also ends the worker if
    the forkserver dies.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    try:
        fd: int | None = os.pidfd_open(driver_pid)
    except ProcessLookupError:  # the driver is already gone
        os._exit(1)
    except (AttributeError, OSError):
        fd = None
    threading.Thread(
        target=_watch_driver, args=(driver_pid, fd), name="workbench-driver-watch", daemon=True
    ).start()


def _watch_driver(driver_pid: int, fd: int | None) -> None:
    if fd is not None:
        select.select([fd], [], [])  # a pidfd turns readable when its process exits
    else:
        while True:
            try:
                os.kill(driver_pid, 0)
            except ProcessLookupError:
                break
            except PermissionError:  # another user's process: the driver's pid was reused
                break
            time.sleep(WATCH_SECONDS)
    os._exit(1)


class _Borrowed:
    """A caller's executor: used, not shut down."""

    def __init__(self, ex):
        self.ex = ex

    def __enter__(self):
        return self.ex

    def __exit__(self, *exc):
        return False


class _dask_executor:
    def __init__(self, address: str):
        try:
            from distributed import Client
        except ImportError:
            raise WorkbenchError(
                "--scheduler needs Dask: pip install 'rigid-workbench[dask]'"
            ) from None
        self._executor = None
        try:
            _probe_scheduler(address)
            self.client = Client(address, timeout=CONNECT_TIMEOUT_SECONDS, set_as_default=False)
        except Exception as exc:  # noqa: BLE001 - whatever answered (or not), one line
            reason = " ".join(str(exc).split())[:200] or type(exc).__name__
            raise WorkbenchError(f"--scheduler {address}: cannot connect ({reason})") from None

    def __enter__(self):
        from workbench.ensemble.settling import SettlingExecutor

        # pure=False: tasks with equal arguments are distinct realizations, never merged
        ex = self._executor = SettlingExecutor(self.client, pure=False)
        workers = self.client.scheduler_info().get("workers", {})
        ex.workbench_workers = max(1, sum(int(w.get("nthreads", 1)) for w in workers.values()))
        ex.workbench_dask = True  # its workers are up: registered, their preload imported
        return ex

    def __exit__(self, *exc):
        # tasks still pending (a probe of Starting, whose answer nobody waits for) cancelled,
        # results on their way let arrive: closed under a gather, the client printed a
        # CommClosedError traceback after a successful run (issue 39, item 9)
        if self._executor is not None:
            self._executor.settle(SETTLE_SECONDS)
        self.client.close()
        return False


class _local_dask_executor:
    """A Dask cluster on 127.0.0.1 for one job (:func:`~workbench.ensemble.cluster.
    local_dask_cluster`), and an executor on it; both stopped at the end.

    ``background``: entering returns at once a :class:`_Late` executor while a thread starts
    the cluster (measured 2026-11-27, 2 workers, lightly loaded machine: 4.4-6.8 s until both
    workers registered, their preload included, during which the caller would wait idle)."""

    def __init__(self, workers: int, dashboard: str | None, background: bool = False):
        from workbench.ensemble.cluster import dask_command, local_dask_cluster

        dask_command()  # a missing Dask says so now, before anything runs
        self._cancelled = threading.Event()
        self._cluster = local_dask_cluster(workers, dashboard=dashboard, cancelled=self._cancelled)
        self._workers = workers
        self._background = background
        self._dask: _dask_executor | None = None
        self._up = False  # the cluster's context entered (its processes run)
        self._late: _Late | None = None

    def _start(self):
        address = self._cluster.__enter__()
        self._up = True
        self._dask = _dask_executor(address)
        return self._dask.__enter__()

    def __enter__(self):
        if self._background:
            # the local cluster's workers: single-threaded, as many as asked
            self._late = _Late(self._start, self._workers)
            self._late.workbench_dask = True  # its workers are up once it is started
            return self._late
        try:
            return self._start()
        except BaseException:
            self._stop(*sys.exc_info())
            raise

    def __exit__(self, *exc):
        if self._late is not None:
            self._cancelled.set()  # a start still waiting for its workers stops waiting
            self._late.join()
        self._stop(*exc)
        return False

    def _stop(self, *exc):
        try:
            if self._dask is not None:
                self._dask.__exit__(*exc)
        finally:
            if self._up:
                self._cluster.__exit__(*exc)


class _Late(cf.Executor):
    """An executor made by ``start()`` on a thread: :meth:`submit` waits until it is made and
    raises what its making raised. ``workbench_workers`` is known beforehand."""

    workbench_dask = False

    def __init__(self, start, workers: int):
        self.workbench_workers = workers
        self._ex = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._make, args=(start,), name="workbench-dask-start", daemon=True
        )
        self._thread.start()

    def _make(self, start) -> None:
        try:
            self._ex = start()
        except BaseException as exc:  # noqa: BLE001 - raised by submit, in the caller
            self._error = exc

    def join(self) -> None:
        """Wait until the executor is made (or its making failed)."""
        self._thread.join()

    @property
    def started(self) -> bool:
        """Whether the executor is made (or its making failed)."""
        return not self._thread.is_alive()

    def submit(self, fn, /, *args, **kwargs):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._ex.submit(fn, *args, **kwargs)


def _probe_scheduler(address: str) -> None:
    """Raise unless a Dask scheduler answers at ``address`` within
    :data:`CONNECT_TIMEOUT_SECONDS`.

    Before :class:`distributed.Client`, which retries a refused connection until its timeout
    (losing the reason) and, when something else answers (an HTTP port, say), fails in ways
    that leave a half-made client whose clean-up blocks the exit for 20 s more.
    """
    import asyncio
    import socket

    from distributed.comm import connect

    match = _SCHEDULER_ADDRESS.match(address)
    if match is not None and match["scheme"] in (None, "tcp", "tls"):
        host = match["host"].strip("[]")
        # the reason, at once: "Connection refused", "No route to host", "timed out"
        with socket.create_connection((host, int(match["port"])), CONNECT_TIMEOUT_SECONDS):
            pass

    async def handshake() -> None:  # distributed's connect reads the scheduler's handshake
        comm = await connect(address, timeout=CONNECT_TIMEOUT_SECONDS)
        await comm.close()

    try:
        asyncio.run(asyncio.wait_for(handshake(), CONNECT_TIMEOUT_SECONDS))
    except TimeoutError:
        raise OSError(
            f"no Dask handshake within {CONNECT_TIMEOUT_SECONDS:g} s: is it a scheduler's port?"
        ) from None
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - a foreign protocol fails in many ways
        raise OSError(f"what answered is not a Dask scheduler ({type(exc).__name__})") from None


def bounded_map(
    ex, fn, args: tuple, todo: Iterable, workers: int, *, started=(), in_flight: int | None = None
):
    """Submit ``fn(*args, i)`` for each item ``i`` of ``todo`` with at most ``in_flight`` (default
    :data:`IN_FLIGHT_PER_WORKER`) per worker in flight; yield the results as they complete.

    ``started``: futures already submitted (counted in flight); their results are yielded too.
    """
    per_worker = IN_FLIGHT_PER_WORKER if in_flight is None else in_flight
    window = max(1, per_worker * max(workers, 1))
    pending: set = set(started)
    try:
        for i in todo:
            while len(pending) >= window:
                finished, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    yield fut.result()
            pending.add(ex.submit(fn, *args, i))
        while pending:
            finished, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for fut in finished:
                yield fut.result()
    finally:
        for fut in pending:
            fut.cancel()
