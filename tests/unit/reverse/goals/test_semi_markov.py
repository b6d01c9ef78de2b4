"""Semi-Markov contact model (reverse/goals/semi_markov.py and its use in reverse/goals/markov.py):
exact
hazard counts of hand sequences, recovery of a known dwell-time law that a Markov table cannot
reproduce, rate-preserving rescaling to another step, storage round trip with the plain table's
bytes unchanged, the policy's segment tracking, and one-line errors for bad files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from reverse.goals.markov import FORMATS, QUANTILE_LEVELS, TransitionModel, load_model
from reverse.goals.policy import MarkovPolicy
from reverse.goals.semi_markov import DwellHazards, estimate_hazards
from reverse.step.dynamics import ContactSet, Goals, tangent_basis
from workbench.errors import MarkovModelError

DT = 1.0 / 240.0
UP = np.array([0.0, 0.0, 1.0])
SQUARE = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0.0]]) * 0.1


def test_hazard_counts_of_a_hand_sequence():
    # forward: flight, vertex 2 steps, flight, face 3 steps (the final rest)
    seq = np.array([0, 1, 1, 0, 3, 3, 3])
    hz = estimate_hazards([seq], DT, min_at_risk=1)
    # reversed: 3 3 3 0 1 1 0 — rest face at ages 0, 1 (stay), 2 (drop to 0); the tumble vertex
    # at ages 0 (stay), 1 (drop to 0); the final flight step is never at risk (nothing to drop)
    a, d = hz.tables[("rest", 3)]
    np.testing.assert_array_equal(a, [1, 1, 1, 0])
    np.testing.assert_array_equal(d, [[0, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    a, d = hz.tables[("tumble", 1)]
    np.testing.assert_array_equal(a, [1, 1, 0])
    np.testing.assert_array_equal(d, [[0, 1, 0]])
    assert set(hz.tables) == {("rest", 3), ("tumble", 1)}
    np.testing.assert_allclose(hz.row("rest", 3, 2), [1.0, 0, 0, 0])
    np.testing.assert_allclose(hz.row("rest", 3, 0), [0, 0, 0, 1.0])
    # a rise ends a segment without a drop: at risk, then censored
    hz = estimate_hazards([np.array([3, 1, 1])], DT, min_at_risk=1)  # reversed 1 1 3
    a, d = hz.tables[("rest", 1)]
    np.testing.assert_array_equal(a, [1, 1, 0])
    np.testing.assert_array_equal(d, [[0, 0, 0]])


def test_rare_ages_pool_into_the_tail():
    seqs = [np.array([0] + [3] * n) for n in (2, 3, 4, 5)]  # final rests of 2..5 steps
    hz = estimate_hazards(seqs, DT, min_at_risk=3)
    a, d = hz.tables[("rest", 3)]
    # ages 0, 1 have 4 runs at risk, age 2 has 3, ages ≥ 3 (2 + 1 steps at risk) pooled
    np.testing.assert_array_equal(a, [4, 4, 3, 3])
    np.testing.assert_array_equal(d[0], [0, 1, 1, 2])
    assert hz.row("rest", 3, 50)[0] == pytest.approx(2 / 3)  # ages beyond: the tail's hazard
    a, d = estimate_hazards(seqs, DT, min_at_risk=5).tables[("rest", 3)]  # too few at any age
    np.testing.assert_array_equal(a, [4 + 4 + 3 + 2 + 1])  # one constant hazard: Markov
    np.testing.assert_array_equal(d[0], [4])


def rest_then_tumble(rng, n_runs):
    """Forward sequences whose final rest lasts 80–120 steps (uniform), preceded by a flight of
    5 steps and a tumble of brief one-step flat landings between flights."""
    out = []
    for _ in range(n_runs):
        rest = int(rng.integers(80, 121))
        tumble = []
        for _ in range(int(rng.integers(2, 6))):
            tumble += [0] * int(rng.integers(3, 8)) + [3]
        out.append(np.array(tumble + [0] * 5 + [3] * rest, dtype=np.int8))
    return out


def sample_rest(model, rng, n, first=True):
    """Backward dwell (steps) of the first face segment drawn from a model's rows."""
    out = []
    for _ in range(n):
        age = 0
        while model.sample_target(3, rng, DT, age=age, first=first) == 3:
            age += 1
        out.append(age + 1)
    return np.array(out)


def sample_plain_rest(model, rng):
    age = 0
    while model.sample_target(3, rng, DT) == 3:
        age += 1
    return age + 1


def test_semi_markov_reproduces_a_dwell_law_the_markov_table_cannot():
    rng = np.random.default_rng(4)
    seqs = rest_then_tumble(rng, 400)
    from reverse.goals.markov import count_transitions

    counts = count_transitions(seqs)
    semi = TransitionModel(counts, DT, hazards=estimate_hazards(seqs, DT))
    plain = TransitionModel(counts, DT)
    truth = np.array([len(s) - 1 - np.flatnonzero(s != 3)[-1] for s in seqs])  # rest lengths
    got = sample_rest(semi, np.random.default_rng(5), 300)
    assert got.min() >= 80  # no rest shorter than any forward one
    assert np.quantile(got, 0.99) <= 125  # beyond the forward ones only by the pooled tail
    assert abs(np.median(got) - np.median(truth)) <= 3
    # the Markov table mixes the brief landings in: its rests are geometric, mostly short
    flat = np.array([sample_plain_rest(plain, rng) for _ in range(300)])
    assert np.mean(flat < 80) > 0.5
    # the tumble's face segments: one step, drawn from the tumble hazards
    assert np.all(sample_rest(semi, np.random.default_rng(6), 100, first=False) == 1)


def test_rows_at_another_step_keep_the_rate():
    hz = DwellHazards(DT, {("tumble", 2): (np.array([100, 100]), np.array([[10, 20], [10, 20]]))})
    row = hz.row("tumble", 2, 0)
    np.testing.assert_allclose(row, [0.1, 0.1, 0.8])
    half = hz.row("tumble", 2, 1, dt=DT / 2)  # age 1 of DT/2 is training age 0
    np.testing.assert_allclose(half[2], 0.8**0.5)
    np.testing.assert_allclose(half[:2], [(1 - 0.8**0.5) / 2] * 2)
    np.testing.assert_allclose(hz.row("tumble", 2, 2, dt=DT / 2)[2], 0.6**0.5)
    assert hz.row("rest", 2, 0) is not None  # rest falls back to the tumble hazards
    assert hz.row("rest", 3, 0) is None  # a state no run visited: the caller's Markov row


def table(hazards=True) -> TransitionModel:
    counts = np.array([[5, 0, 0, 0], [3, 4, 0, 0], [1, 1, 6, 0], [0, 1, 2, 90]])
    hz = estimate_hazards([np.array([0, 1, 0, 2, 2, 3, 3, 3, 3])], DT, min_at_risk=1)
    speeds = {(-1, -1): list(np.linspace(0.1, 0.3, len(QUANTILE_LEVELS)))}
    meta = {"command": "test", "seed": 1, "n": 1, "scene": "x.yaml"}
    return TransitionModel(counts, DT, speeds, meta, hz if hazards else None)


def test_round_trip_and_plain_bytes_unchanged(tmp_path):
    semi = table()
    path = semi.save(tmp_path / "semi.json")
    doc = json.loads(path.read_text())
    assert doc["format"] == FORMATS["semi-markov"] and doc["kind"] == "semi-markov"
    back = load_model(path)
    assert back.kind == "semi-markov" and back.to_json() == semi.to_json()
    for key, (a, d) in semi.hazards.tables.items():
        np.testing.assert_array_equal(back.hazards.tables[key][0], a)
        np.testing.assert_array_equal(back.hazards.tables[key][1], d)
    plain = table(hazards=False)
    text = plain.to_json()
    assert "dwell_hazards" not in text and '"kind"' not in text
    assert json.loads(text)["format"] == "rigid-workbench contact-transition table"
    assert load_model(plain.save(tmp_path / "p.json")).kind == "plain"


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda d: d.pop("dwell_hazards"), "dwell_hazards: missing"),
        (lambda d: d["dwell_hazards"].update({"rest x": {}}), "dwell_hazards.rest x"),
        (lambda d: d["dwell_hazards"]["rest 3"].pop("drops_to_2"), "dwell_hazards.rest 3"),
        (
            lambda d: d["dwell_hazards"]["rest 3"].update(at_risk=[0] * 5),
            "drops <= at_risk",
        ),
        (lambda d: d.update(format="something else"), "format 'something else'"),
    ],
)
def test_bad_semi_markov_files_are_one_line_errors(tmp_path, edit, words):
    doc = json.loads(table().to_json())
    edit(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(MarkovModelError) as err:
        load_model(path)
    assert words in str(err.value) and "\n" not in str(err.value)


def contacts(n_points) -> ContactSet:
    k = n_points
    n = np.tile(UP, (k, 1))
    t = tangent_basis(n)
    return ContactSet(
        body_a=np.zeros(k, dtype=int),
        body_b=np.full(k, -1),
        point=SQUARE[:k],
        normal=n,
        distance=np.zeros(k),
        friction=np.full(k, 0.5),
        rolling=np.zeros(k),
        spinning=np.zeros(k),
        restitution=np.full(k, 0.5),
        tangent=t,
        roll_axis=t.copy(),
    )


def no_hints(c, position, velocity):
    k = len(c)
    return Goals.zeros(k), np.zeros((k, 3)), np.zeros((k, 3))


def test_policy_tracks_segments_and_draws_from_the_rest_hazard():
    # a rest that always lasts exactly 3 steps, then drops to flight; tumbles never drop
    at_risk = np.array([10, 10, 10, 0])
    rest = (at_risk, np.array([[0, 0, 10, 0], [0, 0, 0, 0], [0, 0, 0, 0]]))
    tumble = (np.array([10]), np.zeros((3, 1), dtype=np.int64))
    hz = DwellHazards(DT, {("rest", 3): rest, ("tumble", 3): tumble})
    model = TransitionModel(np.diag([1, 1, 1, 1]), DT, {}, {}, hz)
    policy = MarkovPolicy(model, no_hints, np.random.default_rng(0), DT, 0.2)
    pos = np.zeros((1, 3))
    for age in range(3):
        goals, _, _ = policy(contacts(4), pos, None)
        assert policy.segments[0] == [3, age, True]
        assert (goals.normal > 0).all() == (age == 2) and goals.normal.any() == (age == 2)
    policy(contacts(0), pos, None)  # in flight: a new segment
    assert policy.segments[0] == [0, 0, False]
    for age in range(5):  # a flat landing later in the run: the tumble hazard (never drops)
        goals, _, _ = policy(contacts(4), pos, None)
        assert policy.segments[0] == [3, age, False] and not goals.normal.any()
    assert policy.transitions == 1
    # the Markov table's policy keeps no segments (and draws as before)
    rng = np.random.default_rng(0)
    plain = MarkovPolicy(TransitionModel(np.diag([1, 1, 1, 1]), DT), no_hints, rng, DT, 0.2)
    plain(contacts(4), pos, None)
    assert plain.segments == {}
