"""``workbench markov compare --verify`` (issue 15 items 1 and 4; ``reverse/verified_pasts.py``):
the backward runs' forward-verified pasts as a sample of the plausibility measure — recorded as
throws are (same world, dt, contact-state rule and length), the refinement's own forward run bit
for bit, unrefined runs left out and counted, the same bytes for any number of workers, the file
unchanged without ``--verify``, and bad input one line with exit status 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

from reverse.markov_training import run_throws
from reverse.verified_pasts import (
    BACKWARD_NOT_OK,
    close_world,
    record_verified,
    training_world,
    verified_pasts,
    verified_summary,
    verify_settings,
)
from reverse.verify import forward_to_rest, verify_in
from workbench.cli.main import main
from workbench.scene.catalog import find_scene
from workbench.sim.state import State

DT = 1.0 / 240.0


def _recipe():
    return (str(find_scene("markov_block")), (), DT)


def _ends(scene, block_start: np.ndarray) -> np.ndarray:
    """(2, bodies, 13): the block from ``block_start`` to the scene's rest (ground: the scene's
    plane at the origin, as a backward run records it)."""
    rest = np.zeros((len(scene.bodies), 13))
    rest[:, 6] = 1.0  # identity quaternions
    rest[1, :3] = (0.0, 0.0, 0.05)
    first = rest.copy()
    first[1] = block_start
    return np.stack([first, rest])


def test_a_throw_replayed_from_its_first_record_is_recorded_as_the_throw():
    """The recording is a throw's: PyBullet from a throw's initial state, recorded by
    :func:`record_verified`, gives the throw's contact states and kinematics. The throw detects
    collisions before its first step, the recording does not (it steps the refinement's run), so
    the two runs may part after contact; they agree exactly until the first landing."""
    recipe = _recipe()
    throw = run_throws(recipe[0], 1, 7, dt=DT, duration=0.5, kinematics=True)[0]
    try:
        scene, engine, body = training_world(recipe)
        from reverse.markov_training import throw_release

        _, release = throw_release(engine, scene, body, 7, 0)
        states, kin, fwd, _ = record_verified(engine, scene, body, release, 0.5)
    finally:
        close_world()
    assert states.shape == throw.states.shape == (121,)
    assert kin.shape == throw.kinematics.shape == (121, 4)
    free = int(np.argmax(throw.states > 0))  # first record in contact
    assert free > 5
    np.testing.assert_array_equal(states[: free + 1], throw.states[: free + 1])
    np.testing.assert_allclose(kin[:free], throw.kinematics[:free], rtol=1e-12, atol=1e-12)
    assert fwd.time >= 0.5


def test_recording_does_not_change_the_forward_run():
    """``observe`` only reads: the recorded run rests where the plain forward run does, bit for
    bit (the refinement's run is the past recorded)."""
    recipe = _recipe()
    try:
        scene, engine, body = training_world(recipe)
        engine.rebuild()
        base = engine.state()
        x, q = base.position.copy(), base.orientation.copy()
        v, w = base.linear_velocity.copy(), base.angular_velocity.copy()
        x[body] = (0.1, -0.2, 0.4)
        v[body], w[body] = (1.0, 0.5, -2.0), (3.0, -4.0, 6.0)
        start = State(x, q, v, w)
        plain = forward_to_rest(engine, start, [body], 1.0)
        _, _, recorded, _ = record_verified(engine, scene, body, start, 1.0)
    finally:
        close_world()
    np.testing.assert_array_equal(plain.position, recorded.position)
    np.testing.assert_array_equal(plain.orientation, recorded.orientation)
    assert plain.time == recorded.time and plain.at_rest == recorded.at_rest


def test_unrefined_and_not_ok_runs_are_left_out_and_counted():
    """A run that cannot be refined within its budget (one PyBullet run from a block spinning
    far from its rest) is ``not refined``; a backward run that was not ``ok`` is not tried; a
    block dropped flat from 2 mm above its rest is refined at once and recorded."""
    recipe = _recipe()
    scene, _, _ = training_world(recipe)
    close_world()
    near = np.zeros(13)
    near[:3], near[6] = (0.0, 0.0, 0.052), 1.0
    far = near.copy()
    far[:3], far[7:10], far[10:13] = (0.15, 0.0, 0.3), (1.5, 0.0, -1.0), (8.0, -5.0, 3.0)
    ends = [_ends(scene, near), _ends(scene, far), None]
    settings = verify_settings(budget=1)
    runs = verified_pasts(recipe, ends, 11, duration=0.5, settings=settings)
    assert [r.status for r in runs] == ["refined", "not refined", BACKWARD_NOT_OK]
    assert runs[0].states is not None and runs[0].states.shape == (121,)
    assert runs[0].states[-1] == 3  # at rest on a face
    assert runs[1].states is None and runs[2].pybullet_runs == 0
    s = verified_summary(runs, settings, DT, 0.5)
    assert (s["attempted"], s["refined"], s["pybullet_runs"]) == (2, 1, 2)
    assert s["by_status"] == {BACKWARD_NOT_OK: 1, "not refined": 1, "refined": 1}
    assert s["refined_share_of_attempted"] == 0.5 and s["distinct_pasts"] == 1


def test_the_ground_is_the_training_worlds_not_the_records():
    """A backward run records the scene's plane at the origin; the training world's ground is a
    box body whose centre is half its depth lower. Placed from the records, the block would start
    inside the box and never rest (the bug this guards against: residuals of 0.5 m)."""
    recipe = _recipe()
    scene, engine, _ = training_world(recipe)
    near = np.zeros(13)
    near[:3], near[6] = (0.0, 0.0, 0.052), 1.0
    ends = _ends(scene, near)
    item = (0, 0, ends[0], ends[1], 0.5)
    naive = verify_in(
        lambda: (scene, engine), verify_settings(budget=1) | {"duration": 0.5}, 3, item
    )
    close_world()
    assert naive.status == "not refined" and naive.residual_position > 0.1
    (run,) = verified_pasts(recipe, [ends], 3, duration=0.5, settings=verify_settings(budget=1))
    assert run.status == "refined" and run.residual_position < 0.01


def test_verify_settings_refuses_a_budget_below_one():
    with pytest.raises(ValueError, match="--verify-budget"):
        verify_settings(budget=0)


def _compare(out, *extra):
    argv = ["markov", "compare", "markov_block", "--table", "markov_block_semi", "-n", "6",
            "--duration", "1", "--seed", "2", "-q", "-o", str(out)]  # fmt: skip
    return main([*argv, *extra])


@pytest.mark.slow  # three comparisons of 6 v 6 runs, 36 refinements: 40 s idle, 2 min loaded
def test_compare_verify_same_bytes_for_any_workers_and_unchanged_without_it(tmp_path):
    docs = {}
    for name, extra in {
        "plain": ("--workers", "2"),
        "w1": ("--workers", "1", "--verify", "--verify-budget", "40"),
        "w2": ("--workers", "2", "--verify", "--verify-budget", "40"),
    }.items():
        assert _compare(tmp_path / name, *extra) == 0
        docs[name] = (tmp_path / name / "plausibility.json").read_text()
    assert docs["w1"] == docs["w2"]
    assert (tmp_path / "w1" / "verified_sequences.png").is_file()
    assert not (tmp_path / "plain" / "verified_sequences.png").exists()
    plain, verified = json.loads(docs["plain"]), json.loads(docs["w1"])
    assert "verified" not in plain
    assert verified["meta"]["command"].endswith(" --verify --verify-budget 40")
    # the backward rows are the plain comparison's, byte for byte
    for key in ("counts", "statistics", "classifier", "classifier_floor", "earliest_state_range"):
        assert verified[key] == plain[key], key
    v = verified["verified"]
    s = v["counts"]["verify"]
    assert s["budget"] == 40 and s["backward_runs"] == 6
    assert s["attempted"] == plain["counts"]["backward_ok"]
    assert v["counts"]["backward_ok"] == s["refined"] >= 1  # a verified sample to compare
    assert sum(s["by_status"].values()) == 6
    not_ok = v["counts"]["backward_not_ok"]
    assert sum(not_ok.values()) == 6 - s["refined"]  # left out, and counted by reason
    assert v["classifier_floor"] == verified["classifier_floor"]  # the same forward samples
    assert [r["floor"] for r in v["statistics"]] == [r["floor"] for r in plain["statistics"]]


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--verify", "--verify-budget", "0"], "--verify-budget"),
        (["--verify", "--verify-budget", "-3"], "--verify-budget"),
        (["--verify-budget", "10"], "--verify-budget"),  # without --verify
    ],
)
def test_compare_verify_bad_input_is_one_line_exit_2(extra, words, tmp_path, capsys):
    assert _compare(tmp_path / "r", *extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err
    assert not (tmp_path / "r").exists()


def test_compare_help_explains_verify(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["markov", "compare", "--help"])
    assert exc.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    for words in ("--verify-budget", "verified pasts vs forward", "recorded as a throw"):
        assert words in out, words
