"""Issue 16, fourth stop: a ``--scheduler local`` cluster starts on a thread while the driver
runs realizations itself (:class:`workbench.ensemble.executors._Late`), the same bytes; its
start stops waiting when cancelled; the store looks its datasets up once and drops them when it
closes or a write fails, and writes the bytes of row writes whatever the packing."""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import threading
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

import workbench.ensemble.executors as executors
import workbench.ensemble.run as run_module
from tests.conftest import SCENES
from workbench.ensemble.run import SceneRef, run_ensemble
from workbench.errors import WorkbenchError
from workbench.store import StoreSchema, TrajectoryStore
from workbench.store.failures import StoreWriteError

SCENE = SCENES / "random_box.yaml"
#: Short realizations (≈ 2 ms of work each): these runs take a fraction of a second.
DURATION = 0.3
#: How long the stand-in cluster takes to start: long against a realization (≈ 2 ms), so the
#: driver runs many meanwhile if (and only if) it does not wait for the start.
START_SECONDS = 1.5


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    out = tmp_path_factory.mktemp("late") / "serial.h5"
    run_ensemble(SceneRef(str(SCENE), duration=DURATION), 40, out, entropy=3)
    return out


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


def test_local_cluster_start_overlaps_the_drivers_realizations(serial, tmp_path, monkeypatch):
    """A slow-starting "local cluster" (a process pool that takes START_SECONDS to be made):
    the driver runs realizations before it is up, and the file is the serial one's."""
    pytest.importorskip("distributed")
    up: list[float] = []
    pools = []

    def start(self):
        time.sleep(START_SECONDS)
        pool = executors._pool(2)
        pools.append(pool)
        up.append(time.perf_counter())
        return pool

    def stop(self, *exc):
        for pool in pools:
            pool.shutdown(wait=True)

    monkeypatch.setattr(executors._local_dask_executor, "_start", start)
    monkeypatch.setattr(executors._local_dask_executor, "_stop", stop)
    here: list[float] = []
    run_chunk = run_module.run_chunk

    def recorded(recipe, indices):  # the driver's own tasks (the workers' use the original)
        here.append(time.perf_counter())
        return run_chunk(recipe, indices)

    recorded.__qualname__, recorded.__module__ = run_chunk.__qualname__, run_chunk.__module__
    monkeypatch.setattr(run_module, "run_chunk", recorded)
    out = tmp_path / "local.h5"
    run_ensemble(
        SceneRef(str(SCENE), duration=DURATION), 40, out, entropy=3, workers=2, scheduler="local"
    )
    assert len(up) == 1
    assert any(t < up[0] for t in here), "the driver waited for the cluster to start"
    assert _sha(out) == _sha(serial)


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


def _store_and_packs(tmp_path: Path, name: str, n: int):
    ref = SceneRef(str(SCENE), duration=DURATION)
    _, nominal, _ = run_module.run_realization(ref, 3, run_module.NOMINAL_INDEX)
    trajs = [run_module.run_realization(ref, 3, i)[1] for i in range(n)]
    store = TrajectoryStore.create(tmp_path / name, StoreSchema.from_trajectory(nominal), n)
    return store, trajs


def test_store_keeps_its_handles_until_close_and_drops_them_on_failure(tmp_path):
    n = 6
    store, trajs = _store_and_packs(tmp_path, "a.h5", n)
    assert store._handles is None
    store.write(0, trajs[0])
    handles = store._handles
    assert handles is not None
    store.write(1, trajs[1])
    assert store._handles is handles  # looked up once
    store.write_many([(i, trajs[i]) for i in range(2, n)])
    store.write(2, trajs[2])  # a realization written again: unmarked, rewritten, marked
    store.close()
    assert store._handles is None and handles.slabs == {} and handles.file is None
    # the same bytes as writes one realization at a time through h5py's own calls: values
    with h5py.File(tmp_path / "a.h5") as f:
        assert f["completed"][()].all()
        assert f["recorded"][()].tolist() == [len(t.time) for t in trajs]
        assert [s.decode() for s in f["status"][()]] == ["ok"] * n
        pos = f["states/position"][()]
        for i, t in enumerate(trajs):
            assert np.array_equal(pos[i, : len(t.time)], t.position)
    # a refused write (no room on the disk) drops them before the file closes
    store, trajs = _store_and_packs(tmp_path, "b.h5", 2)
    store.write(0, trajs[0])
    assert store._handles is not None
    with pytest.raises(StoreWriteError):
        store._fail(1, disk_full=True, reason="", broken=False)
    assert store._handles is None and not store.is_open
    with pytest.raises(StoreWriteError):  # nothing touches the file after a failure
        store.write(1, trajs[1])


def test_dask_workers_count_as_up_without_waiting_for_the_probes():
    """A Dask executor's workers are up once it exists (or its start ended): the driver does
    not keep running realizations until its probes come back through Dask."""
    never = threading.Event()

    class Stuck(executors._Serial):  # probes that never come back
        def submit(self, fn, /, *args, **kwargs):
            return cf.Future()

    pool_like = Stuck()
    ready = executors.Starting(pool_like, 2, run_module.worker_ready)
    ready.join()
    assert not run_module._workers_up(pool_like, ready)  # a pool: its probes decide
    dask_like = Stuck()
    dask_like.workbench_dask = True
    assert run_module._workers_up(dask_like, ready)
    late = executors._Late(lambda: never.wait(5) or dask_like, 2)
    late.workbench_dask = True
    assert not run_module._workers_up(late, ready)  # still starting
    never.set()
    late.join()
    assert run_module._workers_up(late, ready)


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
