"""The local Dask cluster (:mod:`workbench.ensemble.cluster`): its workers run without Dask's
statistical profiler (it samples every thread's stack each 10 ms, holding the GIL PyBullet's
steps need) unless the user's environment sets it; a cancelled start stops waiting; its
processes are killed at its end and its scratch space is gone with them.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import cli_env
from workbench.errors import WorkbenchError

# each test starts a local Dask cluster: 2-7 s each, ~25 s for the module
pytestmark = pytest.mark.slow


def _profiling(dask_worker) -> bool:
    """Whether a worker samples its threads' stacks: its profiler's periodic callback runs."""
    callback = dask_worker.periodic_callbacks.get("profile")
    return callback is not None and callback.is_running()


def _profiler_on_workers(env) -> list:
    distributed = pytest.importorskip("distributed")
    from workbench.ensemble.cluster import local_dask_cluster

    with local_dask_cluster(1, env=env) as address, distributed.Client(address) as client:
        return list(client.run(_profiling).values())


def test_the_local_clusters_workers_run_without_the_profiler():
    env = cli_env()
    env.pop("DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED", None)
    assert _profiler_on_workers(env) == [False]


def test_a_users_profiler_setting_wins():
    env = {**cli_env(), "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "True"}
    assert _profiler_on_workers(env) == [True]


def _readme_dask_recipe() -> list[str]:
    """The README's two command lines that start a Dask scheduler and a worker on one machine."""
    text = (Path(__file__).parents[4] / "README.md").read_text()
    block = text.split("bind the scheduler and the workers to 127.0.0.1", 1)[1]
    block = block.split("```text\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("dask ")]


def test_the_readme_recipes_workers_run_without_the_profiler_and_with_the_imports_done():
    """The README's recipe, as a user types it (on a free port instead of 8786, and without the
    variable that would turn the profiler off otherwise): its worker has no profiler running and
    has imported what a realization needs before its first task."""
    import os
    import shlex
    import signal
    import subprocess

    distributed = pytest.importorskip("distributed")
    from workbench.ensemble.cluster import _free_port, _wait_for_workers, dask_command

    scheduler_line, worker_line = _readme_dask_recipe()
    port = str(_free_port())
    env = cli_env()
    env.pop("DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED", None)
    procs = []
    try:
        for line in (scheduler_line, worker_line):
            argv = shlex.split(line.replace("8786", port).replace("8787", "0"))
            argv[0] = dask_command()
            if argv[1] == "scheduler":  # the recipe's scheduler takes Dask's default port, 8786
                argv += ["--port", port]
            procs.append(
                subprocess.Popen(
                    argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
            )
        address = f"tcp://127.0.0.1:{port}"
        _wait_for_workers(address, 1, 60.0, threading.Event())

        def state(dask_worker):
            import sys

            return _profiling(dask_worker), "workbench.sim.forward" in sys.modules

        with distributed.Client(address) as client:
            assert list(client.run(state).values()) == [(False, True)]
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


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


def _launched(launcher_pid: int, n: int, deadline: float) -> list:
    """The scheduler and ``n`` workers forked by the local cluster's launcher
    (:mod:`workbench.ensemble.forked_cluster`), the scheduler first, once all run."""
    import psutil

    while time.monotonic() < deadline:
        kids = sorted(psutil.Process(launcher_pid).children(), key=lambda p: p.pid)
        if len(kids) == n + 1:
            return kids
        time.sleep(0.1)
    raise AssertionError("the local cluster did not start")


def test_local_cluster_ends_its_processes_and_scratch_space():
    """The local cluster's processes are killed at its end (asked to stop, they took ≈ 3 s
    inside every ``--scheduler local`` run), whatever ended it, and Dask's scratch space (lock
    files, the scheduler's and the workers' directories) was ours and is gone with them."""
    pytest.importorskip("distributed")
    pytest.importorskip("psutil")
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
                forked = _launched(made[0][0].pid, 1, time.monotonic() + 10)
                assert all(_alive(p) for p in forked)
                raise RuntimeError("the run failed")
    # one launcher, which forked the scheduler and the worker (Dask's client, imported by
    # the driver, runs `uname -p` through subprocess too)
    launchers = [p for p, _ in made if "workbench.ensemble.forked_cluster" in p.args]
    assert launchers == [made[0][0]]
    # its scheduler and worker killed; it reaped them and ended by itself (reaped by us)
    assert not [p.pid for p in forked if _alive(p)]
    assert made[0][0].returncode == 0
    assert not scratch.exists()


def _cluster_of(driver, n: int, deadline: float) -> list:
    """The driver's local-cluster launcher, its scheduler and its ``n`` workers, once all run."""
    import psutil

    while time.monotonic() < deadline:
        launchers = [
            p
            for p in psutil.Process(driver.pid).children()
            if "workbench.ensemble.forked_cluster" in p.cmdline()
        ]
        if launchers:
            return [launchers[0], *_launched(launchers[0].pid, n, deadline)]
        assert driver.poll() is None, "the ensemble ended before its cluster was up"
        time.sleep(0.2)
    raise AssertionError("the local cluster did not start")


def _alive(proc) -> bool:
    import psutil

    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _port_open(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_a_killed_drivers_local_cluster_ends_with_it(tmp_path):
    """Issue 39, case 4: SIGKILL of ``workbench ensemble --scheduler local`` mid-run leaves no
        process of its cluster (checked by pid) and no scheduler listening, within 10 s (before,
        all three were alive after 90 s). The lifeline ends them (measured 0.10 s), and their
    scratch space with them."""
    pytest.importorskip("distributed")
    pytest.importorskip("psutil")
    import os
    import signal
    import subprocess

    from tests.conftest import SCENES, WORKBENCH

    out = tmp_path / "box.h5"
    driver = subprocess.Popen(
        [*WORKBENCH, "ensemble", str(SCENES / "random_box.yaml"), "-n", "100000", "-q"]
        + ["--seed", "1", "-o", str(out), "--scheduler", "local", "--workers", "2"],
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    kids = []
    try:
        kids = _cluster_of(driver, 2, time.monotonic() + 120)
        import json

        spec = json.loads(kids[0].cmdline()[-1])  # the launcher's: scheduler and worker args
        args = spec["scheduler"]
        port = int(args[args.index("--port") + 1])
        scratch = Path(kids[1].environ()["DASK_TEMPORARY_DIRECTORY"])
        deadline = time.monotonic() + 120
        while not _port_open(port):  # forked before it listens
            assert time.monotonic() < deadline and driver.poll() is None
            time.sleep(0.2)
        while not out.exists() or out.stat().st_size < 200_000:  # mid-run: records written
            assert time.monotonic() < deadline and driver.poll() is None
            time.sleep(0.2)
        assert all(_alive(p) for p in kids) and _port_open(port)
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        t0 = time.monotonic()
        while any(_alive(p) for p in kids) and time.monotonic() - t0 < 10:
            time.sleep(0.05)
        gone = time.monotonic() - t0
        assert not [p.pid for p in kids if _alive(p)], f"alive {gone:.1f} s after the kill"
        assert not _port_open(port)
        assert not scratch.exists()  # the driver's clean-up would have removed it
        print(f"cluster gone {gone:.2f} s after the driver's SIGKILL")
    finally:
        for p in [driver, *kids]:
            with contextlib.suppress(ProcessLookupError, OSError):
                os.kill(p.pid, signal.SIGKILL)
