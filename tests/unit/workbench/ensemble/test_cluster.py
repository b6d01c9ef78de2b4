"""The local Dask cluster (:mod:`workbench.ensemble.cluster`): its workers run without Dask's
statistical profiler (it samples every thread's stack each 10 ms, holding the GIL PyBullet's
steps need) unless the user's environment sets it; a cancelled start stops waiting; its
processes are killed at its end and its scratch space is gone with them.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.conftest import cli_env
from workbench.errors import WorkbenchError


def _profiler_on_workers(env) -> list:
    distributed = pytest.importorskip("distributed")
    from workbench.ensemble.cluster import local_dask_cluster

    def enabled():
        import dask

        return bool(dask.config.get("distributed.worker.profile.enabled"))

    with local_dask_cluster(1, env=env) as address, distributed.Client(address) as client:
        return list(client.run(enabled).values())


def test_the_local_clusters_workers_run_without_the_profiler():
    env = cli_env()
    env.pop("DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED", None)
    assert _profiler_on_workers(env) == [False]


def test_a_users_profiler_setting_wins():
    env = {**cli_env(), "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "True"}
    assert _profiler_on_workers(env) == [True]


def test_cancelled_cluster_start_stops_waiting():
    pytest.importorskip("distributed")
    from workbench.ensemble.cluster import _free_port, _wait_for_workers

    cancelled = threading.Event()
    cancelled.set()
    t0 = time.monotonic()
    with pytest.raises(WorkbenchError, match="cancelled"):
        # nothing listens there: without the cancel, this waits for its 60 s timeout
        _wait_for_workers(f"tcp://127.0.0.1:{_free_port()}", 2, 60.0, cancelled)
    assert time.monotonic() - t0 < 30


def test_local_cluster_ends_its_processes_and_scratch_space():
    """The local cluster's processes are killed at its end (asked to stop, they took ≈ 3 s
    inside every ``--scheduler local`` run), whatever ended it, and Dask's scratch space (lock
    files, the scheduler's and the workers' directories) was ours and is gone with them."""
    pytest.importorskip("distributed")
    import signal

    from workbench.ensemble import cluster

    made: list = []
    real_popen = cluster.subprocess.Popen

    def popen(*args, **kwargs):
        made.append((real_popen(*args, **kwargs), kwargs))
        return made[-1][0]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cluster.subprocess, "Popen", popen)
        with pytest.raises(RuntimeError, match="the run failed"):
            with cluster.local_dask_cluster(1):
                scratch = Path(made[0][1]["env"]["DASK_TEMPORARY_DIRECTORY"])
                assert scratch.is_dir() and any(scratch.iterdir())  # Dask used it
                raise RuntimeError("the run failed")
    assert len(made) == 2  # the scheduler and one worker
    assert [p.returncode for p, _ in made] == [-signal.SIGKILL] * 2  # killed and reaped
    assert not scratch.exists()
