"""Conditioned forward pasts (issue 15 items 3 and 4; ``reverse/pasts/conditioned.py``): throws
kept when they rest on the final pose's face, carried onto it by the flat ground's symmetry and
confirmed by PyBullet — the carry exact, the kept pasts resting at the final pose and starting
at a release of the throw law, the same bits for any number of workers, rejected throws counted,
a sample cut short by ``max_throws`` saying so, and ``markov compare --conditioned`` adding its
table without changing the rest of the file."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from reverse.pasts.conditioned import (
    REJECTED_FACE,
    REJECTED_MOVING,
    carry_state,
    conditioned_pasts,
    conditioned_summary,
)
from reverse.pasts.training import THROW, release_test
from reverse.runs.verify import (
    DEFAULT_TOLERANCE,
    gravity_correction,
    pose_residual,
    verify_settings,
)
from workbench.cli.main import main
from workbench.ensemble.run import SceneRef
from workbench.scene.catalog import find_scene
from workbench.sim.state import State

DT = 1.0 / 240.0
UP = np.array([0.0, 0.0, 1.0])


def _key():
    return ("training", (str(find_scene("markov_block")), (), DT))


def test_the_carry_puts_a_rest_pose_on_the_target_and_turns_the_velocities():
    """A pose on the target's face (a turn about the vertical and a shift away) is carried onto
    the target to rounding; speeds are kept, directions turned; other bodies are untouched."""
    rng = np.random.default_rng(3)
    target_q = Rotation.from_euler("z", 0.4).as_quat()
    target_p = np.array([0.2, -0.1, 0.05])
    yaw = Rotation.from_euler("z", 2.1)
    reached_q = (yaw * Rotation.from_quat(target_q)).as_quat()
    reached_p = np.array([1.3, 0.7, 0.05])
    turn, centre, shift = gravity_correction(reached_p, reached_q, target_p, target_q, UP)
    p = np.stack([np.zeros(3), reached_p])
    q = np.stack([[0.0, 0.0, 0.0, 1.0], reached_q])
    v, w = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    out = carry_state(State(p, q, v, w), 1, turn, centre, shift)
    dp, da = pose_residual(out.position[[1]], out.orientation[[1]], target_p[None], target_q[None])
    assert dp < 1e-12 and da < 1e-7  # rounding of quaternion products (1e-8 rad per product)
    assert np.linalg.norm(out.linear_velocity[1]) == pytest.approx(np.linalg.norm(v[1]))
    assert np.linalg.norm(out.angular_velocity[1]) == pytest.approx(np.linalg.norm(w[1]))
    assert out.linear_velocity[1, 2] == pytest.approx(v[1, 2])  # a turn about the vertical
    assert not np.allclose(out.linear_velocity[1], v[1])
    for a, b in ((out.position, p), (out.orientation, q), (out.linear_velocity, v)):
        assert np.array_equal(a[0], b[0])


@pytest.fixture(scope="module")
def block_pasts():
    """Three conditioned pasts of markov_block, 1.5 s, serially, with their trajectories."""
    return conditioned_pasts(
        _key(), 3, 11, duration=1.5, settings=verify_settings(60), trajectory=True, workers=1
    )


@pytest.mark.slow  # ~4 s: the module's `block_pasts`
def test_kept_pasts_rest_at_the_final_pose_and_start_at_a_release(block_pasts):
    kept, tried = block_pasts
    assert len(kept) == 3
    assert [r.throw for r in kept] == sorted(r.throw for r in kept)
    assert [r.throw for r in tried] == list(range(len(tried)))  # a prefix of the throws
    assert tried[-1].throw == kept[-1].throw  # nothing after the last kept one
    final = np.array([0.0, 0.0, 0.05])  # the scene's block, on the ground's top at z = 0
    tol_p, tol_a = DEFAULT_TOLERANCE
    released = release_test(
        SceneRef(str(find_scene("markov_block")), ()),
        math.sqrt(3 * THROW["vertical_speed"] ** 2),  # the law's bounds: no throw is faster
        math.sqrt(3) * THROW["angular_speed"],
    )
    for r in kept:
        assert r.status == "refined"
        assert r.residual_position <= tol_p and r.residual_angle <= tol_a
        traj = r.trajectory
        assert traj.shape == (int(round(1.5 / DT)) + 1, 2, 13)
        # the first record is the earliest state as PyBullet holds it: the quaternion
        # normalised again (1e-16) and of either sign
        first = traj[0]
        cols = [0, 1, 2, *range(7, 13)]
        assert np.allclose(first[:, cols], r.earliest[:, cols], rtol=0.0, atol=1e-15)
        dots = np.abs(np.sum(first[:, 3:7] * r.earliest[:, 3:7], axis=1))
        assert np.allclose(dots, 1.0, rtol=0.0, atol=1e-15)
        # the last record of the span: at rest at the final pose, within the tolerance
        last = traj[-1, 1]
        dp, da = pose_residual(
            last[None, :3], last[None, 3:7], final[None], np.array([[0, 0, 0, 1.0]])
        )
        assert (dp, da) == (r.residual_position, r.residual_angle)
        assert dp <= tol_p and da <= tol_a
        assert r.rest_time == pytest.approx(1.5)
        assert np.all(r.kinematics[-24:, 0] <= 5e-3)  # REST_SPEED held for REST_HOLD (24 steps)
        assert r.kinematics[0, 0] == pytest.approx(np.linalg.norm(r.earliest[1, 7:10]), rel=1e-9)
        assert r.states[-1] == 3  # on a face at the end
        e = r.earliest
        state = State(e[:, :3], e[:, 3:7], e[:, 7:10], e[:, 10:13])
        assert released(state)  # a release of the law at some heading
        # the carried release was the refinement's start: the earliest state moved within the
        # refinement's neighbourhood (0.2 m, 45°)
        dp0, _ = pose_residual(r.release[[1], :3], r.release[[1], 3:7], e[[1], :3], e[[1], 3:7])
        assert dp0 <= 0.2 + 1e-12
    statuses = {r.status for r in tried}
    assert statuses <= {"refined", "not refined", REJECTED_FACE, REJECTED_MOVING}
    summary = conditioned_summary(kept, tried, 3)
    assert summary["kept"] == 3 and summary["throws"] == len(tried)
    assert sum(summary["by_status"].values()) == len(tried)
    assert summary["pybullet_runs"] == sum(r.pybullet_runs for r in tried)


@pytest.mark.slow  # uses `block_pasts` (~4 s)
def test_the_carry_is_needed(block_pasts):
    """Uncarried, the kept throws rest elsewhere: the carry, not luck, puts them on the pose."""
    kept, _ = block_pasts
    moved = [np.linalg.norm(r.release[1, :2]) for r in kept]
    assert max(moved) > 0.01  # the carried releases are not above the scene's block


@pytest.mark.slow  # ~5 s
def test_same_bits_for_one_and_two_workers(block_pasts):
    kept1, tried1 = block_pasts
    kept2, tried2 = conditioned_pasts(
        _key(), 3, 11, duration=1.5, settings=verify_settings(60), trajectory=True, workers=2
    )
    assert [r.throw for r in tried2] == [r.throw for r in tried1]
    assert [r.status for r in tried2] == [r.status for r in tried1]
    for a, b in zip(kept1, kept2, strict=True):
        for name in ("earliest", "release", "states", "kinematics", "trajectory"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert a.pybullet_runs == b.pybullet_runs


def test_max_throws_cuts_the_sample_short():
    kept, tried = conditioned_pasts(
        _key(), 5, 11, duration=1.5, settings=verify_settings(5), max_throws=2, workers=1
    )
    assert len(tried) == 2 and len(kept) < 5
    with pytest.raises(ValueError, match="at least 1 past"):
        conditioned_pasts(_key(), 0, 11, duration=1.5)


@pytest.mark.slow  # ~16 s
def test_markov_compare_conditioned_adds_its_table_only(tmp_path, capsys):
    base = ["markov", "compare", "markov_block", "--table", "markov_block", "-n", "4", "--seed",
            "2", "--duration", "1.5", "--bins", "4", "-q"]  # fmt: skip
    assert main([*base, "-o", str(tmp_path / "plain")]) == 0
    assert main([*base, "--conditioned", "--verify-budget", "40", "-o", str(tmp_path / "c")]) == 0
    plain = json.loads((tmp_path / "plain" / "plausibility.json").read_text())
    cond = json.loads((tmp_path / "c" / "plausibility.json").read_text())
    assert "conditioned" not in plain
    c = cond.pop("conditioned")
    cond["meta"]["command"] = plain["meta"]["command"]  # the command names the option
    assert cond == plain  # the other samples and their table unchanged
    counts = c["counts"]["conditioned"]
    assert counts["asked"] == 4 and counts["kept"] == c["counts"]["backward"]
    assert counts["earliest_in_release_law"] <= counts["kept"]
    assert (tmp_path / "c" / "conditioned_sequences.png").stat().st_size > 0
    assert main([*base, "--verify-budget", "3", "-o", str(tmp_path / "x")]) == 2
    assert "--verify-budget" in capsys.readouterr().err
