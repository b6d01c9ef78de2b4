"""Ensembles: bit-identical results across executors (serial, process pool, a real Dask
cluster), SIGKILL + --resume equals an uninterrupted run, failures recorded, stats and plots."""

from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest

from tests.conftest import SCENES, cli_env, kill_and_resume, run_main, run_workbench

SCENE = SCENES / "random_box.yaml"


def wb(*args, timeout=600):
    return run_workbench(*args, timeout=timeout)


def _datasets(path) -> dict:
    out = {}
    with h5py.File(path) as f:
        f.visititems(
            lambda name, obj: (
                out.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None
            )
        )
        out["@seed_entropy"] = f.attrs["seed_entropy"]
    return out


def assert_same_file(a, b):
    da, db = _datasets(a), _datasets(b)
    assert da.keys() == db.keys()
    for name in da:
        x, y = np.asarray(da[name]), np.asarray(db[name])
        if x.dtype.kind == "f":
            assert x.tobytes() == y.tobytes(), name
        else:
            assert np.array_equal(x, y), name


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("ens") / "serial.h5"
    r = wb("ensemble", SCENE, "-n", 12, "--seed", 7, "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    return out


def test_ensemble_file_contents(reference):
    with h5py.File(reference) as f:
        assert f["completed"][()].all()
        assert f.attrs["seed_entropy"] == "7"
        mass = f["params/box/mass"][()]
        assert mass.shape == (12,) and np.unique(mass).size == 12
        assert f["params/box/G"].shape == (12, 3, 3)
        assert f["params/parameters/mu"].shape == (12,)
        assert "nominal" in f and f["nominal/completed"][0]
        assert f["nominal/params/box/mass"][0] == 2.0
        # the realized inertia is what the engine used: J = M (tr(Z) I − Z)
        J = f["params/box/inertia"][()]
        assert np.all(np.linalg.eigvalsh(J) > 0)


@pytest.mark.slow  # ~5 s
def test_two_workers_bit_identical(reference, tmp_path):
    out = tmp_path / "w2.h5"
    r = wb("ensemble", SCENE, "-n", 12, "--seed", 7, "-o", out, "-q", "--workers", 2)
    assert r.returncode == 0, r.stderr
    assert_same_file(reference, out)


@pytest.mark.slow  # ~10 s
def test_dask_cluster_bit_identical(reference, tmp_path):
    pytest.importorskip("distributed")
    from workbench.ensemble.cluster import local_dask_cluster

    with local_dask_cluster(2, env=cli_env()) as address:
        out = tmp_path / "dask.h5"
        r = wb("ensemble", SCENE, "-n", 12, "--seed", 7, "-o", out, "-q", "--scheduler", address)
        assert r.returncode == 0, r.stderr
    assert_same_file(reference, out)


@pytest.mark.slow  # ~22 s
def test_sigkill_and_resume_equal_uninterrupted_run(tmp_path):
    n, duration = 150, 0.3
    common = ["ensemble", SCENE, "-n", n, "--seed", 11, "-q", "--duration", duration]
    ref = tmp_path / "ref.h5"
    r = wb(*common, "-o", ref)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "killed.h5"

    def inspect(path) -> bool:  # whatever was killed, the file opens and its rows are valid
        with h5py.File(path) as f:
            done = f["completed"][()]
            assert np.all(f["recorded"][()][done] == f["time"].shape[0])
            return bool(done.all())  # finished before the kill: start over to keep killing

    r = kill_and_resume(
        common, out, kills=10, seconds=(0.3, 2.5), seed=2026, max_attempts=40, inspect=inspect
    )
    assert r.returncode == 0, r.stderr
    assert_same_file(ref, out)


@pytest.mark.slow  # ~4 s
def test_failing_realizations_are_recorded(tmp_path):
    scene = tmp_path / "sometimes.yaml"
    scene.write_text(
        "parameters:\n  m: {dist: uniform, low: -1.0, high: 1.0}\n"
        "settings: {dt: 0.001, duration: 0.05, record_every: 10}\n"
        "bodies:\n"
        "  - {name: b, shape: {type: sphere, radius: 0.1}, mass: 2.0, position: [0, 0, 1]}\n"
        "  - {name: c, shape: {type: sphere, radius: 0.1}, mass: '${m}', position: [1, 0, 1]}\n"
    )
    # the nominal mass (the mean, 0) is invalid: the ensemble refuses to start, one line
    r = wb("ensemble", scene, "-n", 10, "--seed", 1, "-o", tmp_path / "x.h5")
    assert r.returncode == 2 and "c" in r.stderr and len(r.stderr.strip().splitlines()) <= 2
    scene.write_text(scene.read_text().replace("low: -1.0, high: 1.0", "low: -0.5, high: 1.5"))
    out = tmp_path / "s.h5"
    r = wb("ensemble", scene, "-n", 10, "--seed", 1, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "failed" in r.stderr
    with h5py.File(out) as f:
        status = f["status"].asstr()[()]
        m = f["params/parameters/m"][()]
        assert f["completed"][()].all()
        assert set(status) == {"ok", "error"}
        assert np.all((status == "error") == (m <= 0))
        assert "mass" in f["message"].asstr()[int(np.argmax(status == "error"))]


@pytest.mark.slow  # ~4 s
def test_stats_and_plots(reference, tmp_path):
    r = wb("stats", reference)
    assert r.returncode == 0, r.stderr
    assert "box/mass" in r.stdout and "com.x" in r.stdout
    r = run_main("stats", reference, "--json")  # in this process: stats ran in one above
    import json

    info = json.loads(r.stdout)
    assert info["n_completed"] == 12 and info["status_counts"] == {"ok": 12}
    for k, args in enumerate(
        (
            ["--observer", "com", "--band", "0.9"],
            ["--param", "box/mass"],
            ["--param", "box/G"],
            ["--param", "box/com"],
            ["--observer", "omega", "--convergence"],
        )
    ):
        out = tmp_path / ("_".join(a.strip("-").replace("/", "") for a in args) + ".png")
        # the first plot in its own process, the others in this one (the same command)
        r = (wb if k == 0 else run_main)("plot", reference, *args, "-o", out)
        assert r.returncode == 0, r.stderr
        assert out.read_bytes()[:4] == b"\x89PNG"
    r = run_main("plot", reference, "--param", "box/nope")
    assert r.returncode == 2 and "box/mass" in r.stderr


def test_resume_refuses_a_different_scene_or_size(reference, tmp_path):
    copy = tmp_path / "copy.h5"
    shutil.copy(reference, copy)
    r = run_main("ensemble", SCENE, "-n", 13, "--seed", 7, "-o", copy, "--resume")
    assert r.returncode == 2 and "-n 13" in r.stderr
    r = run_main("ensemble", SCENE, "-n", 12, "--seed", 8, "-o", copy, "--resume")
    assert r.returncode == 2 and "--seed 8" in r.stderr
