"""Ensembles in tasks of many realizations (issue 16): the task size, the executor and the
sampler hook leave the file's bytes alone; SIGKILL + --resume with multi-realization tasks in
flight loses nothing; what waits in the driver is bounded; the progress callback counts every
realization once; ``--scheduler local`` stops its cluster; ``--workers auto``."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
import uuid
from pathlib import Path

import h5py
import numpy as np
import pytest

from tests.conftest import SCENES, WORKBENCH, cli_env, kill_and_resume, run_workbench
from tests.integration.test_ensemble import assert_same_file
from workbench.ensemble import run as run_module
from workbench.ensemble.realization import sample_realization
from workbench.ensemble.run import SceneRef, realization_rng, run_ensemble

SCENE = SCENES / "random_box.yaml"
#: Short realizations (≈ 2 ms of work each): many fit in one task.
DURATION = 0.3


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def heavier_box(scene, entropy: int, i: int):
    """A sampler (module level: picklable): the scene's own law with the box 10% heavier."""
    real = sample_realization(scene, realization_rng(entropy, i))
    over = real.mass_overrides["box"]
    over["mass"] = over["mass"] * 1.1
    over["inertia"] = over["inertia"] * 1.1
    return real


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    out = tmp_path_factory.mktemp("chunks") / "serial.h5"
    run_ensemble(SceneRef(str(SCENE), duration=DURATION), 60, out, entropy=3)
    return out


@pytest.mark.parametrize("task_seconds", [1e-9, 1e9], ids=["one-per-task", "largest-tasks"])
def test_task_size_does_not_change_the_bytes(serial, tmp_path, monkeypatch, task_seconds):
    monkeypatch.setattr(run_module, "TASK_SECONDS", task_seconds)
    out = tmp_path / "x.h5"
    run_ensemble(SceneRef(str(SCENE), duration=DURATION), 60, out, entropy=3)
    assert _sha(out) == _sha(serial)


@pytest.mark.slow  # ~3 s
def test_pool_bytes_equal_serial_and_waiting_is_bounded(serial, tmp_path):
    out = tmp_path / "pool.h5"
    result = run_ensemble(SceneRef(str(SCENE), duration=DURATION), 60, out, entropy=3, workers=2)
    assert _sha(out) == _sha(serial)
    # at most the tasks in flight wait for an earlier one: a few tasks per worker
    window = run_module.IN_FLIGHT_PER_WORKER * 2
    assert 0 <= result.peak_waiting <= window * run_module.MAX_TASK_REALIZATIONS
    assert result.peak_waiting < 60


@pytest.mark.slow  # ~4 s
def test_sampler_hook_reaches_the_workers(serial, tmp_path):
    ref = SceneRef(str(SCENE), duration=DURATION)
    default = tmp_path / "default.h5"
    run_ensemble(ref, 60, default, entropy=3, sampler=None)
    assert _sha(default) == _sha(serial)  # None is the scene's own law
    files = []
    for workers in (1, 2):
        out = tmp_path / f"heavy{workers}.h5"
        run_ensemble(ref, 60, out, entropy=3, workers=workers, sampler=heavier_box)
        files.append(out)
    assert _sha(files[0]) == _sha(files[1])
    with h5py.File(serial) as a, h5py.File(files[0]) as b:
        np.testing.assert_allclose(b["params/box/mass"][()], 1.1 * a["params/box/mass"][()])
        # the nominal run is the scene's mean whatever the sampler
        assert b["nominal/params/box/mass"][0] == a["nominal/params/box/mass"][0] == 2.0
        assert not np.array_equal(b["states/position"][()], a["states/position"][()])


@pytest.mark.slow  # ~3 s
def test_progress_counts_each_realization_once_and_resume_starts_where_it_stopped(tmp_path):
    ref = SceneRef(str(SCENE), duration=DURATION)
    out = tmp_path / "p.h5"
    seen: list[tuple[int, int]] = []
    run_ensemble(ref, 30, out, entropy=4, progress=lambda d, t: seen.append((d, t)))
    done = [d for d, _ in seen]
    assert seen[0] == (0, 30) and seen[-1] == (30, 30)
    assert all(b > a for a, b in zip(done, done[1:], strict=False))
    with h5py.File(out, "r+") as f:  # forget realizations 5..11 and 20
        f["completed"][5:12] = False
        f["completed"][20] = False
    seen.clear()
    result = run_ensemble(
        ref, 30, out, entropy=4, resume=True, progress=lambda d, t: seen.append((d, t))
    )
    assert result.ran == 8
    assert seen[0] == (22, 30) and seen[-1] == (30, 30)


@pytest.mark.slow
def test_sigkill_with_multi_realization_tasks_then_resume(tmp_path):
    """Kill a 2-worker run while tasks of many realizations are in flight and waiting; the
    resumed file equals the serial one."""
    n = 300
    common = ["ensemble", SCENE, "-n", n, "--seed", 13, "-q", "--duration", DURATION]
    ref = tmp_path / "ref.h5"
    r = run_workbench(*common, "-o", ref)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "killed.h5"

    def inspect(path) -> bool:
        with h5py.File(path) as f:
            done = f["completed"][()]
            assert np.all(f["recorded"][()][done] == f["time"].shape[0])
            assert list(f["status"][done]) == [b"ok"] * int(done.sum())
            return bool(done.all())

    r = kill_and_resume(
        [*common, "--workers", 2],
        out,
        kills=5,
        seconds=(1.0, 3.0),
        seed=16,
        max_attempts=30,
        inspect=inspect,
    )
    assert r.returncode == 0, r.stderr
    assert_same_file(ref, out)


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.slow  # ~10 s
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_local_scheduler_flag_runs_on_dask_and_stops_it(serial, tmp_path):
    pytest.importorskip("distributed")
    marker = f"WORKBENCH_TEST_MARK={uuid.uuid4().hex}"
    env = {**cli_env(), marker.split("=")[0]: marker.split("=")[1]}
    out = tmp_path / "local.h5"
    args = ["ensemble", SCENE, "-n", 60, "--seed", 3, "--duration", DURATION, "-q", "-o", out,
            "--scheduler", "local", "--workers", 2]  # fmt: skip
    r = subprocess.run(
        [*WORKBENCH, *map(str, args)], env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert _sha(out) == _sha(serial)
    assert _processes_with(marker) == [], "the local Dask cluster outlived the run"


@pytest.mark.slow  # ~7 s
def test_workers_auto_and_bad_workers(serial, tmp_path):
    out = tmp_path / "auto.h5"
    r = run_workbench("ensemble", SCENE, "-n", 60, "--seed", 3, "--duration", DURATION, "-q",
                      "-o", out, "--workers", "auto")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert _sha(out) == _sha(serial)
    r = run_workbench("ensemble", SCENE, "-n", 2, "--workers", "many", "-o", tmp_path / "y.h5")
    assert r.returncode == 2 and "auto" in r.stderr
    r = run_workbench("ensemble", SCENE, "-n", 2, "--dashboard", "127.0.0.1:0",
                      "-o", tmp_path / "y.h5")  # fmt: skip
    assert r.returncode == 2 and "--scheduler local" in r.stderr


def test_progress_bar_rate_counts_only_this_runs_work(capsys):
    """A resumed ensemble reports the realizations already done first: they are the bar's
    starting count, so rate and ETA measure this run's work."""
    from workbench.cli.common import ProgressBar

    bar = ProgressBar(100, "realizations", delay=0.0)
    try:
        bar.advance(60, 100)
        time.sleep(0.2)  # tqdm redraws at most every 0.1 s
        bar.advance(70, 100)
        assert bar._bar.n == 70 and bar._bar.initial == 60
    finally:
        bar.close()
    assert "70/100" in capsys.readouterr().err
