"""A long serial ensemble has its helper process run the realizations (``SERIAL_RUNNER``) and
compresses and writes them itself: the file's bytes are those of the in-process run, the
realizations ran in the helper, and a helper killed mid-run costs nothing (this process runs
the rest, the file is the same)."""

from __future__ import annotations

import hashlib
import os
import signal
from pathlib import Path

import pytest

import workbench.ensemble.executors as executors
import workbench.ensemble.run as run_module
from tests.conftest import SCENES
from workbench.ensemble.run import SceneRef, run_ensemble

SCENE = SCENES / "random_box.yaml"
#: Short realizations (≈ 2 ms of work each): these runs take a fraction of a second.
DURATION = 0.3

pytestmark = pytest.mark.skipif(
    executors.auto_workers() < 2, reason="a serial run has a helper process only with two cores"
)


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


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


def test_runner_runs_the_realizations_and_writes_the_in_process_bytes(
    in_process, tmp_path, monkeypatch
):
    out, result, pools, writes, here = _runner_run(tmp_path, monkeypatch, "runner.h5")
    assert len(pools) == 1 and result.ran == 120 and not result.failed
    assert sum(writes) == 120 and len(writes) > 3  # in many tasks
    # this process ran only the nominal realization: the runner ran every other
    assert here == [run_module.NOMINAL_INDEX]
    assert _sha(out) == _sha(in_process)


def test_killed_runner_costs_nothing(in_process, tmp_path, monkeypatch):
    out, result, pools, writes, here = _runner_run(tmp_path, monkeypatch, "killed.h5", kill=True)
    assert result.ran == 120 and not result.failed
    # the runner ran the first task; this process ran the rest (and the tasks the runner held,
    # again): every realization once in the file, its bytes those of the uninterrupted run
    ran_here = [i for i in here if i != run_module.NOMINAL_INDEX]
    assert 0 < len(ran_here) < 120 and len(set(ran_here)) == len(ran_here)
    assert _sha(out) == _sha(in_process)
