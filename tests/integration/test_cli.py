"""Every CLI subcommand in a subprocess, bad input as one line with exit 2, and determinism of
every shipped scene (two runs, separate processes, bit-identical HDF5 datasets).

The parametrized bad-input cases run the command in this process (``run_main``: the same exit
status and lines, without starting an interpreter per case); each of their commands also runs in
its own process in a test here."""

from __future__ import annotations

import json
import subprocess
import sys

import h5py
import numpy as np
import pytest

from tests.conftest import SCENES, WORKBENCH, cli_env, run_main
from tests.conftest import run_workbench as wb
from workbench.scene.catalog import is_scene_file


@pytest.fixture(scope="module")
def falling_h5(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "falling.h5"
    r = wb("run", "falling_object", "-o", out, "--set", "c=0.2", "--duration", "2")
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout
    assert r.stderr == "", "no banner or warnings on stderr for a clean run"
    return out


@pytest.mark.slow  # ~13 s
def test_help_lists_every_subcommand():
    import argparse

    from workbench.cli.main import build_parser

    r = wb("--help")
    assert r.returncode == 0
    (sub_action,) = [
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    ]
    commands = list(sub_action.choices)
    assert {"run", "check", "reverse", "markov", "inverse", "ensemble"} <= set(commands)
    for cmd in commands:
        assert cmd in r.stdout
    # every subcommand's --help runs in a fresh process (an import a command's module lacks is
    # not hidden by another command's); the processes start together, the cores share them
    procs = {
        cmd: subprocess.Popen(
            [*WORKBENCH, cmd, "--help"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
        )
        for cmd in commands
    }
    for cmd, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0 and "usage:" in out, (cmd, err)


def test_help_imports_no_command_module():
    """`workbench --help` lists the commands from main's table: it imports none of their modules
    (nor numpy, h5py, pydantic or PyBullet), so it stays fast."""
    code = (
        "import sys\n"
        "from workbench.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = ('numpy', 'h5py', 'pydantic', 'pybullet')\n"
        "print(sorted(m for m in sys.modules if m.startswith('workbench.cli.') or m in heavy))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(), check=True
    )
    assert r.stdout.splitlines()[-1] == "['workbench.cli.main']"


def test_scenes_lists_shipped_scenes():
    r = wb("scenes")
    assert r.returncode == 0
    for f in filter(is_scene_file, SCENES.glob("*.yaml")):  # inference specs are not listed
        assert f.stem in r.stdout


def test_run_applies_overrides(falling_h5):
    with h5py.File(falling_h5) as f:
        scene = json.loads(f.attrs["scene_json"])["scene"]
        assert scene["bodies"][0]["drag"]["c"] == 0.2
        assert f["time"][-1] == pytest.approx(2.0)


def test_inspect_text_and_json(falling_h5):
    r = wb("inspect", falling_h5)
    assert r.returncode == 0 and "ball" in r.stdout and "height" in r.stdout
    r = wb("inspect", falling_h5, "--json")
    info = json.loads(r.stdout)
    assert info["n_completed"] == 1 and info["bodies"] == ["ball"]


@pytest.mark.slow  # ~2 s
def test_plot_writes_png(falling_h5, tmp_path):
    out = tmp_path / "h.png"
    r = wb("plot", falling_h5, "--observer", "height", "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_replay_frames_headless(falling_h5, tmp_path):
    frames = tmp_path / "frames"
    r = wb("replay", falling_h5, "--frames", frames, "--fps", "5", "--size", "160x120")
    assert r.returncode == 0, r.stderr
    pngs = sorted(frames.glob("*.png"))
    assert len(pngs) == 11  # 2 s at 5 frames/s, both ends included


@pytest.mark.parametrize(
    "args, words",
    [
        (("run", "missing.yaml"), "file not found"),
        (("run", "falling_object", "--set", "cc=1"), "unknown parameter 'cc'"),
        (("run", "falling_object", "--dt", "-1"), "positive"),
        (("inspect", "missing.h5"), "missing.h5"),
        (("plot", "missing.h5", "--observer", "x"), "missing.h5"),
        (("replay", "missing.h5", "--frames", "x"), "missing.h5"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, words, tmp_path):
    r = run_main(*args, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_bad_scene_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("bodies:\n  - name: b\n    shape: {type: sphere, radius: 1}\n    mass: -2\n")
    r = wb("run", bad, "-o", tmp_path / "o.h5")
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"workbench run: {bad}:4: bodies[0].mass: expected greater than 0, got -2"
    )
    assert not (tmp_path / "o.h5").exists()


def test_failed_run_keeps_partial_file(tmp_path):
    scene = tmp_path / "blowup.yaml"
    scene.write_text(
        "settings: {dt: 0.001, duration: 1.0, record_every: 10}\n"
        "gravity: [0, 0, 0]\n"
        "bodies:\n"
        "  - {name: calm, shape: {type: sphere, radius: 0.1}, mass: 1}\n"
        "  - {name: rocket, shape: {type: sphere, radius: 0.1}, mass: 1, position: [5, 0, 0],\n"
        "     linear_velocity: [1.0e300, 0, 0]}\n"
    )
    out = tmp_path / "b.h5"
    r = wb("run", scene, "-o", out)
    assert r.returncode == 1
    assert "'rocket'" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    with h5py.File(out) as f:
        assert f["status"][0].decode() == "nonfinite"
        assert f["completed"][0]
        n = f["recorded"][0]
        assert np.all(np.isfinite(f["states/position"][0, :n]))


def _datasets(path):
    out = {}
    with h5py.File(path) as f:
        f.visititems(
            lambda name, obj: (
                out.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None
            )
        )
    return out


@pytest.mark.slow  # ~28 s for the 18 shipped scenes (1-3 s each)
@pytest.mark.parametrize(
    "scene", [p for p in sorted(SCENES.glob("*.yaml")) if is_scene_file(p)], ids=lambda p: p.stem
)
def test_shipped_scene_runs_are_bit_identical(scene, tmp_path):
    """One run in a fresh process, one in this one (after whatever ran in it before): two
    processes still, and the second's PyBullet and numpy have been used before it."""
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    for out, run in ((a, wb), (b, run_main)):
        r = run("run", scene, "-o", out, "-q")
        assert r.returncode == 0, r.stderr
    da, db = _datasets(a), _datasets(b)
    assert da.keys() == db.keys()
    for name in da:
        x, y = np.asarray(da[name]), np.asarray(db[name])
        if x.dtype.kind == "f":
            assert x.tobytes() == y.tobytes(), name  # bit for bit, NaN included
        else:
            assert np.array_equal(x, y), name


@pytest.mark.slow  # ~2.2 s: here to keep the fast tier short
def test_check_valid_and_invalid(tmp_path):
    r = wb("check", "pendulum_chain")
    assert r.returncode == 0 and "valid" in r.stdout and "hinge1" in r.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("bodies:\n  - {name: b, shape: {type: sphere, radius: 1}, mas: 1}\n")
    r = wb("check", bad)
    assert r.returncode == 2
    assert "did you mean 'mass'" in r.stderr and len(r.stderr.strip().splitlines()) == 1


BOX_BODY = (
    "bodies:\n"
    "  - name: b\n"
    "    shape: {type: box, half_extents: [0.2, 0.1, 0.05]}\n"
    "    mass: 2.0\n"
    "    uncertainty: UNCERTAINTY\n"
)


@pytest.mark.parametrize(
    "uncertainty, field, words",
    [
        ("{mass: {dispersion: 0.71}}", "uncertainty.mass.dispersion", "1/sqrt(2)"),
        ("{inertia: {model: sg0, dispersion: 0.8}}", "uncertainty.inertia", "1/sqrt(2)"),
        (
            "{com: {domain: box, center: [1, 0, 0], size: [0.1, 0.1, 0.1]}}",
            "uncertainty.com",
            "strictly inside",
        ),
        (
            "{com: {domain: ball, center: [0, 0, 0.5], radius: 0.1}}",
            "uncertainty.com",
            "strictly inside",
        ),
        (
            "{inertia: {model: bounded, lambda_l: -5, lambda_u: -5, "
            "z_max: [[0.001, 0, 0], [0, 0.001, 0], [0, 0, 0.001]]}}",
            "z_max",
            "positive definite",
        ),
        ("{inertia: {model: gaussian}}", "uncertainty.inertia.model", "sg0"),
    ],
)
def test_bad_uncertainty_specs_are_one_line(tmp_path, uncertainty, field, words):
    scene = tmp_path / "u.yaml"
    scene.write_text(BOX_BODY.replace("UNCERTAINTY", uncertainty))
    r = run_main("check", scene)
    assert r.returncode == 2, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and words in lines[0], r.stderr


def test_unknown_distribution_is_one_line(tmp_path):
    scene = tmp_path / "d.yaml"
    scene.write_text(
        "parameters: {mu: {dist: normall, mean: 0.4, std: 0.1}}\n"
        + BOX_BODY.replace("    uncertainty: UNCERTAINTY\n", "")
    )
    r = run_main("check", scene)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "parameters.mu" in lines[0] and "did you mean 'normal'" in lines[0]
