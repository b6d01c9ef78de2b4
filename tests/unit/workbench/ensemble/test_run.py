"""Ensemble runs (:func:`workbench.ensemble.run.run_ensemble`), issue 16: the first realizations
run on the workers before the store exists and are packed by the driver into the bytes a worker
makes; an early task that could not be submitted is run the usual way, none lost; the
compressing helper is not started when compression is a negligible share of a realization; a
``--scheduler local`` cluster starts on a thread while the driver runs realizations itself, the
same bytes; a Dask executor's workers count as up without waiting for probes; and a long serial
ensemble has its helper process run the realizations (``SERIAL_RUNNER``), the in-process run's
bytes, a helper killed mid-run costing nothing.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import SCENES
from workbench.ensemble import executors as executors
from workbench.ensemble import run as run_module
from workbench.ensemble.run import SceneRef, run_ensemble
from workbench.scene.loader import scene_to_json
from workbench.store import StoreSchema
from workbench.store.schema import ChunkFilters

SCENE = SCENES / "random_box.yaml"


#: Short realizations (≈ 2 ms of work each): these runs take a fraction of a second.
DURATION = 0.3


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    out = tmp_path_factory.mktemp("early") / "serial.h5"
    run_ensemble(SceneRef(str(SCENE), duration=DURATION), 12, out, entropy=3)
    return out


def test_unpacked_realizations_pack_to_the_workers_bytes():
    ref = SceneRef(str(SCENE), duration=DURATION)
    scene = ref.load()
    key = hashlib.sha256(scene_to_json(scene).encode()).hexdigest()
    _, nominal, _ = run_module.run_realization(ref, 3, run_module.NOMINAL_INDEX)
    schema = StoreSchema.from_trajectory(nominal)
    filters = ChunkFilters(shuffle=True, level=4)
    early = run_module.Recipe(scene, key, False, 3, None, None, None)
    full = run_module.Recipe(scene, key, False, 3, schema, filters, None)
    raw = run_module.run_chunk(early, (4, 5))
    assert isinstance(raw, run_module.Unpacked) and [i for i, _ in raw.items] == [4, 5]
    mine, theirs = raw.pack(schema, filters), run_module.run_chunk(full, (4, 5))
    assert mine.seconds == raw.seconds > 0
    assert mine.indices.tolist() == theirs.indices.tolist() == [4, 5]
    assert mine.chunks.keys() == theirs.chunks.keys() and mine.chunks == theirs.chunks
    assert mine.status == theirs.status == ["ok", "ok"]
    for name, arr in theirs.arrays.items():
        assert mine.arrays[name].tobytes() == arr.tobytes()


class _Here(cf.Executor):
    """Runs tasks in this process when submitted, but is not the serial executor (so the run
    takes it for workers); refuses the early tasks (submitted from the start thread) to see
    that they are run later the usual way."""

    def __init__(self):
        self.refused = 0
        self.unpacked = 0

    def submit(self, fn, /, *args, **kwargs):
        early = fn is run_module.run_chunk and args[0].schema is None
        if early and threading.current_thread() is not threading.main_thread():
            self.refused += 1
            raise RuntimeError("cannot schedule new futures")
        self.unpacked += early
        fut: cf.Future = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - delivered through the future
            fut.set_exception(exc)
        return fut


def test_an_early_task_not_submitted_is_run_later(serial, tmp_path):
    ex = _Here()
    ex.workbench_workers = 2
    out = tmp_path / "here.h5"
    result = run_ensemble(SceneRef(str(SCENE), duration=DURATION), 12, out, entropy=3, executor=ex)
    assert ex.refused == 1  # the thread stops at the first refusal
    assert ex.unpacked == 0  # run later with the store's recipe, not unpacked
    assert result.ran == 12 and not result.failed
    assert _sha(out) == _sha(serial)


def test_pool_with_early_tasks_and_one_task_in_flight_gives_the_serial_bytes(
    serial, tmp_path, monkeypatch
):
    # every realization counts as long: one task in flight per worker
    monkeypatch.setattr(run_module, "LONG_TASK_SECONDS", 0.0)
    out = tmp_path / "pool.h5"
    ref = SceneRef(str(SCENE), duration=DURATION)
    result = run_ensemble(ref, 12, out, entropy=3, workers=2)
    assert result.ran == 12 and not result.failed
    assert _sha(out) == _sha(serial)


def test_no_helper_when_compression_is_a_negligible_share(serial, tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(run_module, "HELPER_MIN_SECONDS", 0.0)
    monkeypatch.setattr(run_module, "HELPER_MIN_SHARE", 2.0)  # twice the realization: never
    monkeypatch.setattr(run_module, "helper_process", lambda: asked.append(1))
    out = tmp_path / "alone.h5"
    run_ensemble(SceneRef(str(SCENE), duration=DURATION), 12, out, entropy=3)
    assert not asked and _sha(out) == _sha(serial)
    # the share measured is the compression's: with a share threshold of 0 the helper is asked
    monkeypatch.setattr(run_module, "HELPER_MIN_SHARE", 0.0)
    run_ensemble(SceneRef(str(SCENE), duration=DURATION), 12, tmp_path / "b.h5", entropy=3)
    assert asked == [1]


#: How long the stand-in cluster takes to start: long against a realization (≈ 2 ms), so the
#: driver runs many meanwhile if (and only if) it does not wait for the start.
START_SECONDS = 1.5


@pytest.fixture(scope="module")
def serial_40(tmp_path_factory):
    out = tmp_path_factory.mktemp("late") / "serial.h5"
    run_ensemble(SceneRef(str(SCENE), duration=DURATION), 40, out, entropy=3)
    return out


@pytest.mark.slow  # ~3 s
def test_local_cluster_start_overlaps_the_drivers_realizations(serial_40, tmp_path, monkeypatch):
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
    assert _sha(out) == _sha(serial_40)


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


class UpAtOnce(executors.Starting):
    """The run's check that its helper is up answers before the first task (the test waits for
    the helper's start), so that the helper runs every realization, even on a loaded machine."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.join()
        for future in self.futures:
            future.exception()  # waits; a failed start shows as realizations run here


def _runner_run(tmp_path, monkeypatch, name: str, *, kill: bool = False):
    """A serial run that has a runner (the thresholds for a helper at 0), up before the first
    task; ``kill``: the runner is SIGKILLed once this process wrote its first task. Returns
    (path, result, pools made, realizations per write, realizations run here)."""
    pools = []
    here = []
    run_one = run_module._run_one

    def counted(scene, force, entropy, i, sampler):
        here.append(i)
        return run_one(scene, force, entropy, i, sampler)

    def helper_process():
        pool = executors.helper_process()
        pools.append(pool)
        return pool

    writes = []
    original = run_module.Sink._write

    def write(self, packed):
        original(self, packed)
        writes.append(len(packed))
        if kill and len(writes) == 1:
            for pid in list(pools[0]._processes):
                os.kill(pid, signal.SIGKILL)

    monkeypatch.setattr(run_module, "helper_process", helper_process)
    monkeypatch.setattr(run_module, "Starting", UpAtOnce)
    monkeypatch.setattr(run_module, "_run_one", counted)  # here only: the runner has the original
    monkeypatch.setattr(run_module, "HELPER_MIN_SECONDS", 0.0)  # this run takes ≈ 0.2 s
    monkeypatch.setattr(run_module, "HELPER_MIN_SHARE", 0.0)  # whatever the share measures
    monkeypatch.setattr(run_module, "TASK_SECONDS", 0.01)  # many tasks: the kill comes mid-run
    monkeypatch.setattr(run_module.Sink, "_write", write)
    out = tmp_path / name
    ref = SceneRef(str(SCENE), duration=DURATION)
    result = run_ensemble(ref, 120, out, entropy=3)
    return out, result, pools, writes, here


@pytest.fixture(scope="module")
def in_process(tmp_path_factory):
    """The same ensemble with no helper: realizations run here, a thread writes them."""
    out = tmp_path_factory.mktemp("runner") / "here.h5"
    run_ensemble(SceneRef(str(SCENE), duration=DURATION), 120, out, entropy=3)
    return out


@pytest.mark.skipif(
    executors.auto_workers() < 2, reason="a serial run has a helper process only with two cores"
)
def test_runner_runs_the_realizations_and_writes_the_in_process_bytes(
    in_process, tmp_path, monkeypatch
):
    out, result, pools, writes, here = _runner_run(tmp_path, monkeypatch, "runner.h5")
    assert len(pools) == 1 and result.ran == 120 and not result.failed
    assert sum(writes) == 120 and len(writes) > 3  # in many tasks
    # this process ran only the nominal realization: the runner ran every other
    assert here == [run_module.NOMINAL_INDEX]
    assert _sha(out) == _sha(in_process)


@pytest.mark.skipif(
    executors.auto_workers() < 2, reason="a serial run has a helper process only with two cores"
)
def test_killed_runner_costs_nothing(in_process, tmp_path, monkeypatch):
    out, result, pools, writes, here = _runner_run(tmp_path, monkeypatch, "killed.h5", kill=True)
    assert result.ran == 120 and not result.failed
    # the runner ran the first task; this process ran the rest (and the tasks the runner held,
    # again): every realization once in the file, its bytes those of the uninterrupted run
    ran_here = [i for i in here if i != run_module.NOMINAL_INDEX]
    assert 0 < len(ran_here) < 120 and len(set(ran_here)) == len(ran_here)
    assert _sha(out) == _sha(in_process)
