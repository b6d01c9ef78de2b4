"""`workbench validate` on real `workbench ensemble` / `workbench run` files: the
streamed HDF5 result equals the in-memory metrics bit for bit, CSV experiments and --interpolate
give the expected values, and every kind of bad input is one line on stderr with exit 2.

The files are tiny (6 realizations of 0.5 s of the validation pendulum) so the module runs in
well under a minute. The commands run in this process (``run_main``), but for ``--help`` and
the first validation of ``test_validate_text_json_file_and_plot``, which start the command's own
process (``run_workbench``): its exit status and streams.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from tests.conftest import run_main, run_workbench
from uncertainty.validation import validation_metrics
from workbench.store import StoreSchema, TrajectoryStore, read_trajectory, write_trajectory

SCENE = "validation_pendulum"
EPS = 0.01  # m, absolute threshold on the tip x position: about the model's spread at 0.5 s


def wb(*args, cwd=None):
    return run_main(*args, cwd=cwd)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("validate")
    out = {"dir": d, "model": d / "model.h5", "e1": d / "e1.h5", "e2": d / "e2.h5"}
    r = wb("ensemble", SCENE, "-n", 6, "--seed", 5, "--duration", 0.5, "-q", "-o", out["model"])
    assert r.returncode == 0, r.stderr
    for name, theta in (("e1", 59.5), ("e2", 60.6)):
        r = wb("run", SCENE, "--duration", 0.5, "--set", f"theta0={theta}", "-q", "-o", out[name])
        assert r.returncode == 0, r.stderr
    return out


def _model_x(path) -> np.ndarray:
    with TrajectoryStore.open(path) as store:
        return store.read_array("observers/tip")[:, :, 0]


def _exp_x(*paths) -> np.ndarray:
    return np.stack([read_trajectory(p).observers["tip"][:, 0] for p in paths])


def _write_csv(path, time, rows, header=True) -> None:
    names = ",".join("abcdefgh"[: rows.shape[0]])
    lines = ["# tip x of the runs", f"time,{names}"] if header else []
    lines += [
        ",".join(repr(float(v)) for v in (t, *col)) for t, col in zip(time, rows.T, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")


def test_help():
    r = run_workbench("validate", "--help", timeout=120)
    assert r.returncode == 0 and "usage: workbench validate" in r.stdout
    assert "validate" in wb("--help").stdout


@pytest.mark.slow  # ~3 s
def test_validate_text_json_file_and_plot(files, tmp_path):
    args = ("validate", "--model", files["model"], "--experiments", files["e1"], files["e2"])
    args += ("--observer", "tip", "--component", "x", "--epsilon", EPS)
    r = run_workbench(
        *args, "-o", tmp_path / "v.json", "--plot", tmp_path / "v.png", "--chunk-size", 4,
        timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    for word in ("6 model realizations", "2 experiments", "first-passage", "accumulated"):
        assert word in r.stdout
    assert (tmp_path / "v.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = wb(*args, "--json", "--chunk-size", 4)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info == json.loads((tmp_path / "v.json").read_text())
    # the streamed HDF5 result (chunks of 4 realizations) equals the in-memory metrics exactly
    ref = validation_metrics(
        _model_x(files["model"]), _exp_x(files["e1"], files["e2"]), epsilon=EPS
    )
    for name in ("instantaneous", "first_passage", "accumulated"):
        assert np.array_equal(np.array(info["metrics"][name]), ref.metric(name)), name
        assert np.array_equal(np.array(info["per_experiment"][name]), ref.per_experiment[0][name])
    assert info["n_model"] == 6 and info["n_excluded"] == 0 and info["unit"] == "m"
    assert info["experiments"] == ["e1.h5", "e2.h5"]
    assert info["threshold"] == {"epsilon": EPS, "unit": "m"}


def test_relative_threshold_and_single_metric(files):
    r = wb(
        "validate", "--model", files["model"], "--experiments", files["e1"], "--observer",
        "tip", "--component", "0", "--lambda", 0.05, "--metric", "first-passage", "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert list(info["metrics"]) == ["first_passage"]
    ref = validation_metrics(_model_x(files["model"]), _exp_x(files["e1"]), lam=0.05)
    assert np.array_equal(np.array(info["metrics"]["first_passage"]), ref.first_passage)


def test_csv_experiments_and_interpolation(files, tmp_path):
    model = _model_x(files["model"])
    exps = _exp_x(files["e1"], files["e2"])
    time = read_trajectory(files["e1"]).time
    same = tmp_path / "same.csv"
    _write_csv(same, time, exps)
    base = ("validate", "--model", files["model"], "--observer", "tip", "--component", "x")
    r = wb(*base, "--experiments", same, "--epsilon", EPS, "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    ref = validation_metrics(model, exps, epsilon=EPS)
    assert np.array_equal(np.array(info["metrics"]["accumulated"]), ref.accumulated)
    assert info["experiments"] == ["same.csv:a", "same.csv:b"]
    # every other instant: a different grid, refused without --interpolate ...
    coarse = tmp_path / "coarse.csv"
    _write_csv(coarse, time[::2], exps[:, ::2], header=False)
    r = wb(*base, "--experiments", coarse, "--epsilon", EPS)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "--interpolate" in lines[0], r.stderr
    # ... and with it the model is read at the experiment instants: on grid points linear
    # interpolation has weight 0 and returns the stored values exactly
    r = wb(*base, "--experiments", coarse, "--epsilon", EPS, "--interpolate", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    ref = validation_metrics(model[:, ::2], exps[:, ::2], epsilon=EPS)
    assert info["interpolated"] and len(info["time"]) == time[::2].size
    for name in ("instantaneous", "first_passage", "accumulated"):
        assert np.array_equal(np.array(info["metrics"][name]), ref.metric(name)), name


def test_incomplete_model_realizations_are_left_out(files, tmp_path):
    traj = read_trajectory(files["e1"])
    partial = tmp_path / "partial.h5"
    with TrajectoryStore.create(partial, StoreSchema.from_trajectory(traj), 5) as store:
        for i in (0, 2, 3):
            tip = traj.observers["tip"] + 1e-3 * i
            store.write(i, dataclasses.replace(traj, observers={**traj.observers, "tip": tip}))
    r = wb(
        "validate", "--model", partial, "--experiments", files["e2"], "--observer", "tip",
        "--component", "x", "--epsilon", EPS, "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["n_model"] == 3 and info["n_excluded"] == 2


def _one_component_store(files, path):
    """A store whose observer 'tip' has one component: shapes that do not match the model."""
    traj = read_trajectory(files["e1"])
    tip = traj.observers["tip"][:, :1]
    info = {**traj.observer_info["tip"], "components": ["x"]}
    write_trajectory(
        path,
        dataclasses.replace(
            traj,
            observers={"tip": tip},
            observer_info={"tip": info},
        ),
    )


@pytest.mark.parametrize(
    "case, words",
    [
        ("shape", "shape mismatch"),
        ("ragged_csv", "columns, expected"),
        ("nan_csv", "NaN"),
        ("lambda_zero", "--lambda: expected a relative threshold > 0"),
        ("lambda_negative", "--lambda: expected a relative threshold > 0"),
        ("epsilon_negative", "--epsilon: expected a threshold >= 0"),
        ("unknown_observer", "no observer 'nope'; the file has tip, angles"),
        ("unknown_component", "no component 'w'"),
        ("component_needed", "choose one with --component"),
        ("time_grid", "differs from the model's"),
        ("missing_file", "no such file"),
        ("csv_only_time", "at least one experiment column"),
    ],
)
def test_bad_input_is_one_line_exit_2(files, tmp_path, case, words):
    exp, obs, comp, thr = files["e1"], "tip", "x", ("--epsilon", EPS)
    time = read_trajectory(files["e1"]).time
    if case == "shape":
        exp = tmp_path / "one.h5"
        _one_component_store(files, exp)
    elif case == "ragged_csv":
        exp = tmp_path / "ragged.csv"
        exp.write_text("time,a\n0.0,1.0\n0.01,1.0,2.0\n")
    elif case == "nan_csv":
        exp = tmp_path / "nan.csv"
        values = _exp_x(files["e1"])
        values[0, 7] = np.nan
        _write_csv(exp, time, values)
    elif case == "lambda_zero":
        thr = ("--lambda", 0)
    elif case == "lambda_negative":
        thr = ("--lambda", -0.1)
    elif case == "epsilon_negative":
        thr = ("--epsilon", -1)
    elif case == "unknown_observer":
        obs = "nope"
    elif case == "unknown_component":
        comp = "w"
    elif case == "component_needed":
        comp = None
    elif case == "time_grid":
        exp = tmp_path / "short.h5"
        r = wb("run", SCENE, "--duration", 0.4, "-q", "-o", exp)
        assert r.returncode == 0, r.stderr
    elif case == "missing_file":
        exp = tmp_path / "absent.h5"
    elif case == "csv_only_time":
        exp = tmp_path / "time.csv"
        exp.write_text("0.0\n0.01\n")
    args = ["validate", "--model", files["model"], "--experiments", exp, "--observer", obs]
    args += [] if comp is None else ["--component", comp]
    r = wb(*args, *thr)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and words in lines[0], r.stderr
    assert lines[0].startswith("workbench validate: ")
    assert "Traceback" not in r.stderr
