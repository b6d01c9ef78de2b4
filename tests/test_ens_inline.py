"""A serial ensemble without its writer thread (``SERIAL_WRITER_THREAD = False``: each task
compressed and written by the thread that ran it, the ``inline`` row of
``benchmarks/ensemble.py``) writes the bytes of the threaded run, with gzip and without, and
starts no thread; the switch interval of a serial run's writer thread
(``SERIAL_SWITCH_SECONDS``, the ``switch`` row) is set while it runs and restored after; the
compression share that decides the serial helper leaves out the making of the engine."""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from pathlib import Path

import pytest

import workbench.ensemble.run as run_module
from tests.conftest import SCENES
from workbench.ensemble.run import SceneRef, run_ensemble

SCENE = SCENES / "random_box.yaml"
#: Short realizations (≈ 2 ms of work each): these runs take a fraction of a second.
DURATION = 0.3


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.mark.parametrize("compression", ["gzip", None])
def test_serial_without_writer_thread_writes_the_same_bytes(tmp_path, monkeypatch, compression):
    ref = SceneRef(str(SCENE), duration=DURATION)
    # 40 realizations: more than one write batch (32) and several tasks
    threaded = run_ensemble(ref, 40, tmp_path / "thread.h5", entropy=5, compression=compression)
    seen = []

    def progress(done: int, total: int) -> None:
        seen.append([t.name for t in threading.enumerate() if t.name.startswith("workbench")])

    monkeypatch.setattr(run_module, "SERIAL_WRITER_THREAD", False)
    monkeypatch.setattr(run_module, "TASK_SECONDS", 0.01)  # other task sizes than the first run
    inline = run_ensemble(
        ref, 40, tmp_path / "inline.h5", entropy=5, compression=compression, progress=progress
    )
    assert threaded.ran == inline.ran == 40 and not threaded.failed and not inline.failed
    assert _sha(tmp_path / "thread.h5") == _sha(tmp_path / "inline.h5")
    assert len(seen) > 2 and not any(seen)  # progress after each batch; no writer thread


def test_serial_switch_interval_is_set_while_the_writer_runs_and_restored(tmp_path, monkeypatch):
    ref = SceneRef(str(SCENE), duration=DURATION)
    plain = run_ensemble(ref, 40, tmp_path / "plain.h5", entropy=6)
    before = sys.getswitchinterval()
    seen = []
    monkeypatch.setattr(run_module, "SERIAL_SWITCH_SECONDS", 2e-4)
    short = run_ensemble(
        ref,
        40,
        tmp_path / "short.h5",
        entropy=6,
        progress=lambda d, t: seen.append(sys.getswitchinterval()),
    )
    assert plain.ran == short.ran == 40
    # the first call (0 done) comes before the writer starts; the others after each batch
    assert len(seen) > 2 and all(s == pytest.approx(2e-4) for s in seen[1:])
    assert sys.getswitchinterval() == before != pytest.approx(2e-4)
    assert _sha(tmp_path / "plain.h5") == _sha(tmp_path / "short.h5")


def test_helper_share_leaves_out_the_making_of_the_engine(tmp_path, monkeypatch):
    """The nominal run makes the driver's engine: a slow one (here 0.4 s, 100 × a
    realization) must not make the compression look negligible (it is ≈ 2 ms of work here
    against ≈ 0.1 ms of compression: ≥ HELPER_MIN_SHARE)."""
    import workbench.sim.engine as engine_module

    class SlowEngine(engine_module.Engine):
        def __init__(self, *args, **kwargs):
            time.sleep(0.4)
            super().__init__(*args, **kwargs)

    asked = []
    monkeypatch.setattr(engine_module, "Engine", SlowEngine)
    monkeypatch.setattr(run_module, "HELPER_MIN_SECONDS", 0.0)  # this run is ≈ 0.1 s
    monkeypatch.setattr(run_module, "helper_process", lambda: asked.append(1))  # no process
    monkeypatch.setattr(run_module, "_ENGINE", [])  # the nominal run makes one
    out = run_ensemble(SceneRef(str(SCENE), duration=DURATION), 8, tmp_path / "s.h5", entropy=7)
    assert out.ran == 8 and asked == [1]
    assert run_module._ENGINE_SECONDS[0] >= 0.4
