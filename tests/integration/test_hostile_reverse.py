"""Hostile inputs to ``workbench reverse`` and ``workbench markov train`` (issue 21, item 9):
unreadable hints, absurd durations and steps, negative numbers, degenerate contacts, absurd hint
speeds, interpenetrating starts, and runs whose LCPs were not solved. Each gets one line on
stderr, or a run marked not-ok with the states before the failure kept; none a traceback, a
hang or a silent ``ok``."""

from __future__ import annotations

import numpy as np
import pytest

from reverse.goals.hints import MAX_HINT_SPEED, parse_hints
from reverse.lcp.solve import LCPError, LCPResult
from reverse.runs import run as reverse_run
from reverse.runs.run import MAX_REVERSE_STEPS, run_reverse
from workbench.cli.main import main as workbench_main
from workbench.errors import SceneError
from workbench.scene.catalog import find_scene
from workbench.scene.loader import load_scene
from workbench.store import TrajectoryStore

LANDING_HINTS = find_scene("reverse_landing").with_name("reverse_landing.hints.yaml")


def main(argv) -> int:
    """``workbench ARGV`` in this process, paths turned into strings."""
    return workbench_main([str(a) for a in argv])


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def _no_run(monkeypatch):
    """Make any reverse run that starts fail the test at once (a refused run never starts)."""

    def started(*args, **kwargs):
        raise AssertionError("the reverse run started")

    # the task imports them when it runs
    monkeypatch.setattr("reverse.runs.run.run_reverse", started)
    monkeypatch.setattr("reverse.runs.sampling.sample_reverse_runs", started)


def _coincident_spheres(write_scene):
    """Two balls with the same centre on the ground, rolling friction on: the contact between
    them lies at both centres of mass (no lever arm for a rolling goal)."""
    ball = {
        "shape": {"type": "sphere", "radius": 0.1},
        "mass": 1.0,
        "position": [0, 0, 0.1],
        "material": {"friction": 1.0, "rolling_friction": 0.01},
    }
    return write_scene(
        {
            "settings": {"dt": 1.0e-3, "duration": 1.0},
            "bodies": [
                {
                    "name": "ground",
                    "shape": {"type": "box", "half_extents": [10, 10, 0.5]},
                    "position": [0, 0, -0.5],
                    "fixed": True,
                    "material": {"friction": 1.0},
                },
                {"name": "a", **ball},
                {"name": "b", **ball},
            ],
        },
        name="coincident.yaml",
    )


# ----------------------------------------------------------------------------- hints files
def test_a_binary_or_non_utf8_hints_file_is_one_line(tmp_path, capsys):
    out = tmp_path / "r.h5"
    binary = tmp_path / "binary.hints.yaml"
    binary.write_bytes(bytes(range(256)) * 4)
    latin = tmp_path / "latin.hints.yaml"
    latin.write_bytes(b"hints:\n  - {body: ball, bounce: 0.1}\n# caf\xe9\n")
    for path in (binary, latin):
        rc = main(
            ["reverse", "reverse_landing", "--hints", str(path), "--duration", "0.01", "-o", out]
        )
        line = _one_error_line(capsys)
        assert rc == 2 and path.name in line and "utf-8" in line.lower()
    assert not out.exists()


@pytest.mark.parametrize("speed", ["1.0e+200", "1.0e+4", ".inf"])
def test_an_absurd_hint_speed_is_refused_naming_the_hint(tmp_path, capsys, speed):
    hints = tmp_path / "fast.hints.yaml"
    hints.write_text(
        "hints:\n  - {body: ball, bounce: 0.1}\n"
        f"  - {{body: block, slide: {{direction: [1, 0, 0], speed: {speed}}}}}\n"
    )
    out = tmp_path / "r.h5"
    rc = main(["reverse", "reverse_landing", "--hints", hints, "--duration", "0.01", "-o", out])
    line = _one_error_line(capsys)
    assert rc == 2 and "fast.hints.yaml" in line and "hints[1].slide.speed" in line
    assert not out.exists()


def test_hint_speeds_up_to_the_bound_are_accepted():
    names = ("ground", "block")
    ok = {"hints": [{"body": "block", "slide": {"direction": [1, 0, 0], "speed": MAX_HINT_SPEED}}]}
    assert parse_hints(ok, names)[0].speed == MAX_HINT_SPEED
    for kind in ("slide", "roll"):
        bad = {"hints": [{"body": "block", kind: {"direction": [1, 0, 0], "speed": 2e3}}]}
        with pytest.raises(SceneError, match=rf"hints\[0\]\.{kind}\.speed: .*at most 1000 m/s"):
            parse_hints(bad, names)
    with pytest.raises(SceneError, match=r"hints\[0\]\.bounce: .*at most 1000 m/s"):
        parse_hints({"hints": [{"body": "block", "bounce": 1e200}]}, names)


def test_a_hint_after_the_end_of_the_run_is_warned_about(tmp_path, capsys):
    hints = tmp_path / "late.hints.yaml"
    hints.write_text(
        "hints:\n  - {body: ball, bounce: 0.1}\n  - {body: block, free: false, at: 5}\n"
        "  - {body: roller, roll: {direction: [0, 1, 0], speed: 1}, at: 0.0097}\n"
        "  - {body: block, slide: {direction: [1, 0, 0], speed: 1}, at: 2.0}\n"
    )
    out = tmp_path / "r.h5"
    rc = main(["reverse", "reverse_landing", "--hints", hints, "--duration", "0.01", "-o", out,
               "-q"])  # fmt: skip
    line = _one_error_line(capsys)
    assert rc == 0 and "warning" in line and "late.hints.yaml" in line
    assert "2 hint(s)" in line and "10 steps of 0.001 s" in line
    assert "hints[2].at = 0.0097 s" in line


# ----------------------------------------------------------------------------- sizes and numbers
@pytest.mark.parametrize(
    "args, numbers",
    [
        # too many to count: --force cannot help, and the message does not offer it
        (["--duration", "1e308"], ["--duration: 1e+308 s", "too many backward steps to count"]),
        (["--duration", "1e4"], ["--duration: 10000 s", "10,000,000 backward steps", "--force"]),
        (
            ["--duration", "0.5", "--dt", "1e-12"],
            ["--dt: 0.5 s at dt = 1e-12 s", "500,000,000,000 backward steps", "--force"],
        ),
    ],
)
def test_a_run_too_long_is_refused_with_the_numbers(monkeypatch, tmp_path, capsys, args, numbers):
    _no_run(monkeypatch)
    out = tmp_path / "r.h5"
    rc = main(["reverse", "reverse_landing", *args, "-o", out])
    line = _one_error_line(capsys)
    assert rc == 2 and f"{MAX_REVERSE_STEPS:,}" in line
    for text in numbers:
        assert text in line
    assert not out.exists()


def test_force_runs_above_the_bound(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(reverse_run, "MAX_REVERSE_STEPS", 5)
    out = tmp_path / "r.h5"
    argv = ["reverse", "reverse_landing", "--duration", "0.01", "-o", out, "-q"]
    assert main(argv) == 2
    line = _one_error_line(capsys)
    assert "10 backward steps" in line and "above the bound of 5" in line
    assert main([*argv, "--force"]) == 0
    with TrajectoryStore.open(out) as store:
        assert store.read(0).n_times == 11


def test_the_sampled_runs_are_bounded_too(monkeypatch, tmp_path, capsys):
    _no_run(monkeypatch)
    out = tmp_path / "r.h5"
    rc = main(["reverse", "reverse_landing", "--duration", "1e4", "--samples", "2", "-o", out])
    line = _one_error_line(capsys)
    assert rc == 2 and "backward steps" in line and "--force" in line


@pytest.mark.parametrize("option", ["--dt", "--duration", "--energy-limit"])
def test_a_negative_number_gets_a_clear_message(tmp_path, capsys, option):
    base = {"--dt": ["--duration", "0.01"], "--duration": [], "--energy-limit": ["--duration", "1"]}
    argv = ["reverse", "reverse_landing", *base[option], option, "-1e-3", "-o", tmp_path / "r.h5"]
    assert main(argv) == 2
    line = _one_error_line(capsys)
    assert line.startswith(f"workbench reverse: {option}: expected a positive")
    assert "-0.001" in line


def test_markov_train_refuses_negative_and_overflowing_numbers(tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["markov", "train", "markov_block", "-n", "2", "--dt", "-1e-3", "-o", out]) == 2
    assert "--dt: expected a positive" in _one_error_line(capsys)
    argv = ["markov", "train", "markov_block", "-n", "2", "--duration", "1e308", "-o", out]
    assert main(argv) == 2
    line = _one_error_line(capsys)
    assert "--duration: 1e+308 s" in line and "too many steps to count" in line
    assert not out.exists()


def test_markov_train_refuses_a_training_too_long(monkeypatch, tmp_path, capsys):
    def started(*args, **kwargs):
        raise AssertionError("the training started")

    monkeypatch.setattr("reverse.pasts.training.train", started)  # as the task imports it
    out = tmp_path / "m.json"
    assert main(["markov", "train", "markov_block", "-n", "5", "--duration", "1e4", "-o", out]) == 2
    line = _one_error_line(capsys)
    assert "12,000,000 steps" in line and "--force" in line  # 5 runs of 1e4 s at 1/240 s


# ----------------------------------------------------------------------------- degenerate contacts
def test_coincident_spheres_with_a_rolling_hint_run_and_warn(write_scene, tmp_path, capsys):
    scene = _coincident_spheres(write_scene)
    hints = tmp_path / "roll.hints.yaml"
    hints.write_text("hints:\n  - {body: a, roll: {direction: [1, 0, 0], speed: 1.0}}\n")
    out = tmp_path / "r.h5"
    rc = main(["reverse", scene, "--hints", hints, "--duration", "0.02", "-o", out, "-q"])
    err = capsys.readouterr().err
    assert rc == 0, err
    warning = [line for line in err.splitlines() if "overlap" in line]
    assert len(warning) == 1 and "'a'" in warning[0] and "'b'" in warning[0]
    with TrajectoryStore.open(out) as store:
        traj = store.read(0)
        assert store.attrs["start_overlap"] == pytest.approx(0.2)
    assert traj.n_times == 21
    assert np.all(np.isfinite(traj.position)) and np.all(np.isfinite(traj.linear_velocity))


def test_an_interpenetrating_start_is_warned_about_and_recorded(write_scene, tmp_path, capsys):
    box = {
        "name": "box",
        "shape": {"type": "box", "half_extents": [0.1, 0.1, 0.1]},
        "mass": 1.0,
        "position": [0, 0, 0.07],  # 3 cm into the ground
    }
    ground = {
        "name": "ground",
        "shape": {"type": "box", "half_extents": [10, 10, 0.5]},
        "position": [0, 0, -0.5],
        "fixed": True,
    }
    scene = write_scene({"settings": {"dt": 1e-3, "duration": 1.0}, "bodies": [ground, box]})
    out = tmp_path / "r.h5"
    assert main(["reverse", scene, "--duration", "0.01", "-o", out, "-q"]) == 0
    # one line on the overlap (and one that nothing moved: the box at rest has no hint)
    err = [line for line in capsys.readouterr().err.strip().splitlines() if "nothing" not in line]
    assert len(err) == 1 and "warning" in err[0] and "overlap" in err[0]
    assert "'box'" in err[0] and "'ground'" in err[0] and "0.03 m" in err[0]
    with TrajectoryStore.open(out) as store:
        assert store.attrs["start_overlap"] == pytest.approx(0.03, abs=1e-6)
    # the shipped final states touch without overlap: no warning, the attribute says 0
    assert main(["reverse", "reverse_landing", "--duration", "0.01", "-o", out, "-q"]) == 0
    assert "overlap" not in capsys.readouterr().err
    with TrajectoryStore.open(out) as store:
        assert store.attrs["start_overlap"] < 1e-9


# ----------------------------------------------------------------------------- failed LCPs
def test_an_lcp_error_mid_run_keeps_the_states_before(monkeypatch, tmp_path, capsys):
    from reverse.lcp.solve import solve_lcp as real_solve

    calls = {"n": 0}

    def breaks_on_the_fifth_call(M, q, **kw):
        calls["n"] += 1
        if calls["n"] == 5:
            raise LCPError("M and q must be finite (found NaN or inf)")
        return real_solve(M, q, **kw)

    monkeypatch.setattr("reverse.step.dynamics.solve_lcp", breaks_on_the_fifth_call)
    out = tmp_path / "r.h5"
    argv = ["reverse", "reverse_landing", "--hints", LANDING_HINTS, "--duration", "0.01"]
    rc = main([*argv, "-o", out, "-q"])
    err = _one_error_line(capsys)
    assert rc == 1 and "LCP" in err and "lcp_failed" in err and str(out) in err
    with TrajectoryStore.open(out) as store:
        assert store.statuses() == ["lcp_failed"]
        traj = store.read(0)
    # three islands per step (block, ball, roller): the fifth solve is in the second step back,
    # so the scene's state and the first step back are kept
    assert traj.n_times == 2
    assert np.all(np.isfinite(traj.position))


def test_an_unsolved_island_lcp_ends_the_run_not_ok(monkeypatch, tmp_path, capsys):
    def fails(M, q, **kw):
        n = len(q)
        return LCPResult(np.full(n, 1e9), q.copy(), "failed", 7, np.zeros(0, int), 1e9, "")

    monkeypatch.setattr("reverse.step.dynamics.solve_lcp", fails)
    scene = load_scene(find_scene("reverse_landing"))
    result = run_reverse(scene, duration=0.01, hints=[])
    assert result.trajectory.status == "ok"  # at rest and unhinted: no island, no LCP
    out = tmp_path / "r.h5"
    rc = main(["reverse", "reverse_landing", "--hints", LANDING_HINTS, "--duration", "0.01",
               "-o", out, "-q"])  # fmt: skip
    err = _one_error_line(capsys)
    assert rc == 1 and "not solved" in err and "0.001 s before the final state" in err
    with TrajectoryStore.open(out) as store:
        assert store.statuses() == ["lcp_failed"]
        traj = store.read(0)
        log = store.read_dataset("reverse/islands")
    assert traj.n_times == 1  # only the scene's state: the 1e9 iterate never reached the file
    assert np.abs(traj.linear_velocity).max() < 10.0
    assert len(log) == 3 and all(f.endswith(b"frictionless retry failed") for f in log["fallback"])


def test_a_reverse_run_beyond_the_coordinate_bound_stops_nonfinite(tmp_path):
    """A body thrown at 1e30 m/s leaves PyBullet's range (README: 1e15 m) in its first backward
    step: the run stops ``nonfinite`` with the records before it, never ``ok``, as a forward run
    does (workbench.sim.state.state_in_bounds)."""
    scene_file = tmp_path / "far.yaml"
    scene_file.write_text(
        "settings: {dt: 0.01, duration: 0.1}\n"
        "bodies:\n"
        "  - {name: ground, shape: {type: plane}, fixed: true}\n"
        "  - {name: ball, shape: {type: sphere, radius: 0.1}, mass: 1, position: [0, 0, 1],\n"
        "     linear_velocity: [1.0e30, 0, 0]}\n",
        encoding="utf-8",
    )
    traj = run_reverse(load_scene(scene_file), duration=0.05, dt=0.01).trajectory
    assert traj.status == "nonfinite" and "out-of-bounds" in traj.message
    assert np.all(np.abs(traj.position) <= 1e15)
