"""The local cluster's launcher (:mod:`workbench.ensemble.forked_cluster`): it forks Dask's
scheduler and workers from one process, says their process ids, and its children run Dask's
command lines with the arguments given; a launcher that cannot start says so in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import cli_env
from workbench.errors import WorkbenchError

# each test starts Dask processes: a few seconds each
pytestmark = pytest.mark.slow


def test_the_launcher_forks_a_scheduler_and_workers_that_take_tasks():
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("psutil")
    import psutil

    from workbench.ensemble.cluster import _free_port, _read_pids, _wait_for_workers

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    spec = {
        "scheduler": ["--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        "worker": [address, "--nthreads", "1", "--no-nanny", "--host", "127.0.0.1"],
        "workers": 2,
    }
    launcher = subprocess.Popen(
        [sys.executable, "-m", "workbench.ensemble.forked_cluster", json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=cli_env(),
    )
    pids: list[int] = []
    try:
        pids = _read_pids(launcher, 3, 60.0)
        # the ids it says are its own children: forked, not started anew
        assert sorted(pids) == sorted(p.pid for p in psutil.Process(launcher.pid).children())
        _wait_for_workers(address, 2, 60.0, threading.Event())
        with distributed.Client(address) as client:
            workers = client.run(os.getpid)
            assert sorted(workers.values()) == sorted(pids[1:])  # the scheduler first
            assert client.submit(sum, [1, 2, 3]).result() == 6
    finally:
        for pid in [*pids, launcher.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        launcher.wait()
        launcher.stdout.close()


def test_a_launcher_that_cannot_start_is_reported_at_once():
    from workbench.ensemble.cluster import _read_pids

    launcher = subprocess.Popen(
        [sys.executable, "-m", "workbench.ensemble.forked_cluster", "not json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=cli_env(),
    )
    t0 = time.monotonic()
    with pytest.raises(WorkbenchError, match=r"did not start \(its launcher exited with 1\)"):
        _read_pids(launcher, 3, 60.0)
    assert time.monotonic() - t0 < 30  # not the 60 s timeout
    launcher.stdout.close()
