"""Contact-transition Markov model (reverse/goals/markov.py): estimation against chains with known
probabilities, storage round trip, reproducible sampling, the statistics of Fig. 9, and one-line
errors for bad files.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from reverse.goals.markov import (
    FORMAT_VERSION,
    QUANTILE_LEVELS,
    TransitionModel,
    classify,
    contact_states,
    count_distinct,
    count_transitions,
    load_model,
    number_of_transitions,
    speed_quantiles,
    time_to_first_liftoff,
    transition_probabilities,
)
from workbench.errors import MarkovModelError

#: A drop-only chain (rows: state at t, columns: state at t − dt), as the model assumes.
P_TRUE = np.array(
    [
        [1.0, 0.0, 0.0, 0.0],
        [0.2, 0.8, 0.0, 0.0],
        [0.05, 0.1, 0.85, 0.0],
        [0.002, 0.004, 0.014, 0.98],
    ]
)


DT = 1.0 / 240.0


def backward_chain(P, n_runs, n_steps, rng, start=3) -> np.ndarray:
    """Sequences of the chain P run backward from ``start``, returned in forward time order."""
    out = np.empty((n_runs, n_steps), dtype=np.int8)
    cum = np.cumsum(P, axis=1)
    for r in range(n_runs):
        s = start
        seq = [s]
        for _ in range(n_steps - 1):
            s = int(min(np.searchsorted(cum[s], rng.random(), side="right"), s))
            seq.append(s)
        out[r] = seq[::-1]
    return out


def simple_model(P=None, speeds=None) -> TransitionModel:
    """A model whose probabilities are exactly P (counts = 10⁶ P, P in multiples of 1e-6)."""
    P = P_TRUE if P is None else P
    counts = np.round(np.asarray(P) * 1_000_000).astype(np.int64)
    speeds = (
        {(-1, -1): list(np.linspace(0.1, 0.3, len(QUANTILE_LEVELS)))} if speeds is None else speeds
    )
    return TransitionModel(counts, DT, speeds, {"command": "test", "seed": 1, "n": 3})


# ----------------------------------------------------------------------------- estimation
def test_counts_and_probabilities_of_a_hand_sequence():
    # forward: 0 0 1 2 3 3 2 3 → backward steps 0←0, 1←0 ... (row = state at t, col = at t−dt)
    seq = [0, 0, 1, 2, 3, 3, 2, 3]
    N = count_transitions(seq)
    expected = np.zeros((4, 4), dtype=int)
    for a, b in zip(seq[:-1], seq[1:], strict=True):
        expected[b, a] += 1
    np.testing.assert_array_equal(N, expected)
    P = transition_probabilities(N)
    # state 3: 3 steps (3←2, 3←3, 3←2): drops 3→2 twice of 3; 3→3 once
    assert P[3, 2] == pytest.approx(2 / 3) and P[3, 3] == pytest.approx(1 / 3)
    # state 2: steps 2←1 and 2←3; the rise 2→3 (backward) is "no transition"
    assert P[2, 1] == pytest.approx(0.5) and P[2, 2] == pytest.approx(0.5) and P[2, 3] == 0
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    assert np.all(np.triu(P, 1) == 0)


def test_unvisited_state_stays():
    P = transition_probabilities(np.zeros((4, 4)))
    np.testing.assert_array_equal(P, np.eye(4))


def test_estimate_recovers_known_probabilities():
    """Statistical bound under a fixed seed: |p̂ − p| ≤ 5 standard errors."""
    rng = np.random.default_rng(2008)
    seqs = backward_chain(P_TRUE, 400, 300, rng)
    N = count_transitions(seqs)
    P_hat = transition_probabilities(N)
    for i in range(1, 4):
        n_i = N[i].sum()
        for j in range(i + 1):
            se = np.sqrt(P_TRUE[i, j] * (1 - P_TRUE[i, j]) / n_i)
            assert abs(P_hat[i, j] - P_TRUE[i, j]) <= 5 * se + 1e-12, (i, j)


def test_rises_count_as_staying():
    """Adding forward liftoffs (backward rises) to a sequence does not create drops."""
    N = count_transitions([3, 3, 0, 3, 3])  # forward: rest, jump, land, rest
    P = transition_probabilities(N)
    assert P[3, 0] == pytest.approx(1 / 3) and P[0, 0] == 1.0


def test_states_and_distinct_points():
    np.testing.assert_array_equal(classify([0, 1, 2, 3, 4, 8]), [0, 1, 2, 3, 3, 3])
    np.testing.assert_array_equal(contact_states([[0, 5], [2, 1]]), [[0, 3], [2, 1]])
    pts = np.array([[0, 0, 0], [0, 0, 1e-4], [0.1, 0, 0], [0.1, 0.1, 0]])
    assert count_distinct(pts) == 3
    with pytest.raises(ValueError):
        classify([-1])
    with pytest.raises(ValueError):
        count_transitions([0, 4])


# ----------------------------------------------------------------------------- storage
def test_save_load_round_trip(tmp_path):
    model = simple_model()
    path = model.save(tmp_path / "t.json")
    back = load_model(path)
    np.testing.assert_array_equal(back.counts, model.counts)
    assert back.dt == model.dt and back.meta == model.meta
    assert back.speeds.keys() == model.speeds.keys()
    np.testing.assert_allclose(back.speeds[(-1, -1)], model.speeds[(-1, -1)], rtol=0, atol=1e-9)
    np.testing.assert_array_equal(back.probabilities, model.probabilities)
    assert back.to_json() == path.read_text()  # a loaded table writes the same bytes
    doc = json.loads(path.read_text())
    assert doc["format_version"] == FORMAT_VERSION
    assert doc["counts"] == model.counts.tolist() and len(doc["probabilities"]) == 4
    assert {"command", "seed", "n", "dt"} <= doc.keys()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "no format_version"),
        ('{"format_version": 99}', "format_version 99"),
        ('{"format_version": 1, "dt": 0.01, "counts": [[1, 2]]}', "counts"),
        (
            '{"format_version": 1, "dt": 0.01,'
            ' "counts": [[0,0,0,0],[0,0,0,0],[0,0,0,0],[-1,0,0,0]]}',
            "counts",
        ),
        (
            '{"format_version": 1, "dt": -1, "counts": [[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0]]}',
            "dt",
        ),
        (
            '{"format_version": 1, "dt": 0.01, "counts": [[0,0,0,0],[0,0,0,0],[0,0,0,0],[0,0,0,0]],'
            ' "goal_speeds": {"3->2": [1, 0]}}',
            "goal_speeds.3->2",
        ),
    ],
)
def test_bad_files_are_one_line_errors(tmp_path, text, words):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(MarkovModelError) as err:
        load_model(path)
    msg = str(err.value)
    assert "\n" not in msg and str(path) in msg and words in msg


def test_missing_file_is_one_line_error(tmp_path):
    with pytest.raises(MarkovModelError, match="cannot read") as err:
        load_model(tmp_path / "none.json")
    assert "\n" not in str(err.value)


# ----------------------------------------------------------------------------- sampling
def test_sampling_is_reproducible_and_follows_the_table():
    model = simple_model()
    a = [model.sample_target(3, np.random.default_rng(7)) for _ in range(3)]
    draws = [model.sample_target(3, r) for r in [np.random.default_rng(7)] * 1]
    assert a[0] == draws[0]
    rng1, rng2 = np.random.default_rng(11), np.random.default_rng(11)
    s1 = [model.sample_target(2, rng1) for _ in range(20000)]
    s2 = [model.sample_target(2, rng2) for _ in range(20000)]
    assert s1 == s2
    freq = np.bincount(s1, minlength=4) / len(s1)
    se = np.sqrt(P_TRUE[2] * (1 - P_TRUE[2]) / len(s1))
    assert np.all(np.abs(freq - P_TRUE[2]) <= 5 * se + 1e-12)
    assert all(model.sample_target(0, rng1) == 0 for _ in range(100))  # free stays free


def test_step_probabilities_keep_holding_times():
    model = simple_model()
    np.testing.assert_array_equal(model.step_probabilities(DT), model.probabilities)
    P2 = model.step_probabilities(2 * DT)
    P = model.probabilities
    assert P2[3, 3] == pytest.approx(P[3, 3] ** 2, rel=1e-14)
    leave = 1 - P[3, 3]
    np.testing.assert_allclose(P2[3, :3], P[3, :3] / leave * (1 - P[3, 3] ** 2), rtol=1e-14)
    np.testing.assert_allclose(P2.sum(axis=1), 1.0, rtol=0, atol=1e-15)


def test_speed_draws_come_from_the_quantiles():
    model = simple_model(speeds={(3, 2): list(np.linspace(1.0, 2.0, len(QUANTILE_LEVELS)))})
    rng = np.random.default_rng(3)
    s = np.array([model.sample_speed(3, 2, rng) for _ in range(5000)])
    assert s.min() >= 1.0 and s.max() <= 2.0
    assert abs(s.mean() - 1.5) < 5 * (1 / np.sqrt(12)) / np.sqrt(len(s))  # uniform on [1, 2]
    assert model.sample_speed(3, 0, rng) == 0.0  # no landings of that kind, none pooled
    assert speed_quantiles([]) is None


# ----------------------------------------------------------------------------- statistics
def test_time_to_first_liftoff_and_transitions():
    dt = 0.1
    seqs = [[0, 0, 1, 3, 3, 3], [3, 3, 3], [0, 2, 0, 2]]
    # reverse time of the first state that differs from the final one; unchanged: the duration
    np.testing.assert_allclose(time_to_first_liftoff(seqs, dt), [0.3, 0.2, 0.1], atol=1e-15)
    assert time_to_first_liftoff([0, 3, 3], dt) == pytest.approx(0.2)
    np.testing.assert_array_equal(number_of_transitions(seqs), [2, 0, 3])
    assert number_of_transitions(np.array([1, 1, 2])) == 1
