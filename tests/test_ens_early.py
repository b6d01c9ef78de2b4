"""Ensemble start and flow (issue 16, third round): the first realizations run on the workers
before the store exists and are packed by the driver into the bytes a worker makes; an early
task that could not be submitted is run the usual way, none lost; ``bounded_map`` counts tasks
already started and keeps ``in_flight`` per worker; the compressing helper is not started when
compression is a negligible share of a realization."""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import threading
import time
from pathlib import Path

import pytest

import workbench.ensemble.run as run_module
from tests.conftest import SCENES
from workbench.ensemble.executors import bounded_map
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
