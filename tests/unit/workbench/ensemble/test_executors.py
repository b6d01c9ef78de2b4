"""The ensemble's executors (:mod:`workbench.ensemble.executors`): ``bounded_map`` counts tasks
already started and keeps ``in_flight`` per worker; a late executor waits for its start and
raises its failure.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time

import pytest

from workbench.ensemble import executors as executors
from workbench.ensemble import run as run_module
from workbench.ensemble.executors import bounded_map
from workbench.errors import WorkbenchError


class _Counting(cf.ThreadPoolExecutor):
    """Records the most tasks not done at a submission (the new one included)."""

    def __init__(self):
        super().__init__(2)
        self.futures: list[cf.Future] = []
        self.peak = 0

    def submit(self, fn, /, *args, **kwargs):
        live = sum(not f.done() for f in self.futures) + 1
        self.peak = max(self.peak, live)
        fut = super().submit(fn, *args, **kwargs)
        self.futures.append(fut)
        return fut


def _square(x: int) -> int:
    time.sleep(0.002)  # long enough for tasks to pile up if the window let them
    return x * x


@pytest.mark.parametrize("in_flight", [None, 1])
def test_bounded_map_counts_started_futures_and_keeps_its_window(in_flight):
    with _Counting() as ex:
        started = [ex.submit(_square, 100), ex.submit(_square, 101)]
        out = sorted(
            bounded_map(ex, _square, (), range(20), 2, started=started, in_flight=in_flight)
        )
    assert out == sorted([x * x for x in range(20)] + [10000, 10201])
    per_worker = run_module.IN_FLIGHT_PER_WORKER if in_flight is None else in_flight
    assert ex.peak <= per_worker * 2


def test_late_executor_waits_for_its_start_and_raises_its_failure():
    gate = threading.Event()

    def start():
        gate.wait(5)
        return executors._Serial()

    late = executors._Late(start, 3)
    assert late.workbench_workers == 3 and not late.started
    gate.set()
    assert late.submit(pow, 2, 5).result() == 32 and late.started

    def broken():
        raise WorkbenchError("no Dask scheduler answered")

    late = executors._Late(broken, 2)
    late.join()
    with pytest.raises(WorkbenchError, match="no Dask scheduler answered"):
        late.submit(pow, 2, 5)


def _big_result(marker: str) -> bytes:
    """200 MB, after leaving ``marker``: its gather takes a while on 127.0.0.1."""
    data = b"x" * 200_000_000
    open(marker, "w").close()
    return data


@pytest.mark.slow
def test_a_dask_job_ends_without_a_traceback_while_a_result_is_gathered(tmp_path, capfd, caplog):
    """Issue 39, item 9: a ``--resume --scheduler local`` printed a ``CommClosedError`` traceback
    at the end, though it exited 0 with the right file: the client closed while it gathered the
    answer of a probe nobody waited for. Here the job ends right as its task's result starts on
    its way (every time on the previous code); results on their way now arrive first."""
    pytest.importorskip("distributed")
    from tests.conftest import cli_env
    from workbench.ensemble.cluster import local_dask_cluster

    marker = tmp_path / "returned"
    with local_dask_cluster(1, env=cli_env()) as address:  # its worker imports this module
        with executors._dask_executor(address) as ex:
            task = ex.submit(_big_result, str(marker))
            deadline = time.monotonic() + 60
            while not marker.exists():
                assert time.monotonic() < deadline and not task.done(), task
                time.sleep(0.01)
            time.sleep(0.2)  # the client told the task finished: its result on its way
    time.sleep(0.5)  # the cluster gone: a gather under way has failed and been printed by now
    printed = capfd.readouterr().err + caplog.text  # (pytest takes the log records)
    assert "CommClosedError" not in printed and "Traceback" not in printed, printed


def test_the_fork_server_started_ahead_is_the_one_the_pool_forks_its_workers_from():
    """:func:`start_fork_server` starts this process's fork server from a thread (its imports
    overlap the caller's work); a pool made afterwards forks its workers from that server."""
    import os
    from multiprocessing import forkserver

    executors.start_fork_server()
    deadline = time.monotonic() + 60
    while forkserver._forkserver._forkserver_pid is None:
        assert time.monotonic() < deadline, "the fork server did not start"
        time.sleep(0.05)
    server = forkserver._forkserver._forkserver_pid
    with executors.executor_for(2, None, None, 4) as ex:
        parents = {ex.submit(os.getppid).result() for _ in range(4)}
    assert parents == {server}
