"""Per-run statistics of the plausibility measure (reverse/pasts/measure.py) on hand-made runs,
the comparison's table and JSON, hints distributions and the per-run heading turn
(reverse/goals/hints.py, reverse/runs/sampling.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from reverse.goals.hints import load_hints, parse_hint_distribution
from reverse.pasts.measure import (
    STATISTICS,
    RunRecord,
    compare,
    dwell_times,
    format_table,
    run_features,
    run_statistics,
    stream_entropy,
)
from reverse.runs.sampling import RunVariation, turn_moving_bodies, variation_rng
from tests.conftest import REPO
from workbench.errors import SceneError
from workbench.scene.loader import load_scene

DT = 0.25


def record(states, speeds=None):
    states = np.asarray(states, dtype=np.int8)
    kin = np.zeros((states.size, 3)) if speeds is None else np.asarray(speeds, dtype=float)
    return RunRecord(states, kin)


def test_dwell_times_leave_out_the_censored_first_and_last_stays():
    # stays: 0 0 | 1 | 3 3 3 | 0 | 3 3 → inner stays: vertex 1 step, face 3, free 1
    d = dwell_times([0, 0, 1, 3, 3, 3, 0, 3, 3], DT)
    assert d[1].tolist() == [0.25] and d[3].tolist() == [0.75] and d[0].tolist() == [0.25]
    assert d[2].size == 0
    assert all(v.size == 0 for v in dwell_times([3, 3, 3], DT).values())


def test_run_statistics_by_hand():
    kin = np.array([[4.0, 10.0, 8.0], [5.0, 2.0, 9.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    runs = [record([0, 1, 3, 3], kin), record([0, 0, 2, 3]), record([0, 3], None)]
    runs[2].status = "nonfinite: left out"
    s = run_statistics(runs, DT)
    # reverse.goals.markov.time_to_first_liftoff: records in the final state before the first other
    # one
    np.testing.assert_array_equal(s["liftoff"], [0.5, 0.25])
    np.testing.assert_array_equal(s["transitions"], [2, 2])
    np.testing.assert_array_equal(s["share_free"], [0.25, 0.5])
    np.testing.assert_array_equal(s["share_face"], [0.5, 0.25])
    np.testing.assert_array_equal(s["dwell_vertex"], [0.25])
    np.testing.assert_array_equal(s["dwell_edge"], [0.25])
    assert np.isnan(s["mean_dwell_vertex"][1])
    np.testing.assert_array_equal(s["earliest_speed"], [4.0, 0.0])
    np.testing.assert_array_equal(s["peak_speed"], [5.0, 0.0])
    np.testing.assert_array_equal(s["earliest_spin"], [10.0, 0.0])
    np.testing.assert_array_equal(s["peak_energy"], [9.0, 0.0])
    f = run_features(s)
    assert f.shape == (2, 15) and np.all(np.isfinite(f))
    assert f[0, -1] == pytest.approx(np.log1p(9.0))


def test_features_stay_finite_for_runaway_runs():
    s = run_statistics([record([0, 3], [[1e300, np.inf, 1e308], [0, 0, 0]])], DT)
    assert np.all(np.isfinite(run_features(s)))


def _sample(rng, n, flight):
    out = []
    for _ in range(n):
        k = int(rng.integers(5, 20))
        states = np.concatenate([np.zeros(k if flight else 3), np.full(20, 3)]).astype(np.int8)
        kin = np.column_stack([np.full(states.size, rng.uniform(1, 2))] * 3)
        out.append(record(states, kin))
    return out


def test_compare_tells_different_samples_apart_and_alike_ones_not():
    rng = np.random.default_rng(0)
    fwd, fwd2, alike = (_sample(rng, 60, True) for _ in range(3))
    c = compare(fwd, fwd2, alike, DT, classifier_entropy=1)
    assert c.classifier.accuracy < 0.7 and c.classifier_floor.accuracy < 0.7
    different = _sample(rng, 60, False)
    d = compare(fwd, fwd2, different, DT, classifier_entropy=1)
    row = {r["key"]: r for r in d.rows}
    assert row["share_free"]["tv"] == 1.0 and row["share_free"]["ratio"] > 2
    assert d.classifier.accuracy > 0.95
    assert [r["key"] for r in d.rows] == [k for k, _, _ in STATISTICS]
    doc = json.loads(d.to_json())
    assert doc["counts"]["backward_ok"] == 60 and doc["classifier"]["n"] == 120
    text = format_table(d)
    assert "time to first liftoff" in text and "classifier" in text
    assert d.to_json() == compare(fwd, fwd2, different, DT, classifier_entropy=1).to_json()


def test_streams_are_distinct_and_seeded():
    keys = [stream_entropy(3, s) for s in ("forward", "forward2", "backward", "classifier")]
    assert len(set(keys)) == 4 and keys == [
        stream_entropy(3, s) for s in ("forward", "forward2", "backward", "classifier")
    ]


# ----------------------------------------------------------------------------- hints distributions
BODIES = ("ground", "block")


def test_hint_distribution_draws_in_its_ranges_and_is_seeded():
    data = {
        "hints": [
            {"body": "block", "slide": {"direction": "random", "speed": {"uniform": [0.0, 1.5]}}},
            {"body": "block", "bounce": {"uniform": [0.1, 0.2]}, "at": {"uniform": [0.0, 0.5]}},
        ]
    }
    dist = parse_hint_distribution(data, BODIES)
    assert dist.is_random
    draws = [dist.draw(np.random.default_rng(k), up=(0, 0, 1)) for k in range(200)]
    slides = np.array([d[0].speed for d in draws])
    dirs = np.array([d[0].direction for d in draws])
    assert 0 <= slides.min() and slides.max() <= 1.5 and slides.std() > 0.3
    np.testing.assert_allclose(dirs[:, 2], 0.0, atol=1e-15)  # horizontal
    np.testing.assert_allclose(np.linalg.norm(dirs, axis=1), 1.0)
    assert abs(np.mean(np.arctan2(dirs[:, 1], dirs[:, 0]) > 0) - 0.5) < 0.12
    bounce = np.array([d[1].speed for d in draws])
    at = np.array([d[1].at for d in draws])
    assert 0.1 <= bounce.min() and bounce.max() <= 0.2 and 0 <= at.min() and at.max() <= 0.5
    a = dist.draw(np.random.default_rng(5))
    b = dist.draw(np.random.default_rng(5))
    assert [(h.speed, h.at, tuple(h.direction)) for h in a] == [
        (h.speed, h.at, tuple(h.direction)) for h in b
    ]
    fixed = parse_hint_distribution({"hints": [{"body": "block", "bounce": 0.1}]}, BODIES)
    assert not fixed.is_random


@pytest.mark.parametrize(
    "item, words",
    [
        ({"body": "block", "bounce": {"uniform": [0.2, 0.1]}}, "low ≤ high"),
        ({"body": "block", "bounce": {"normal": [0.2, 0.1]}}, r"or \{uniform: \[low, high\]\}"),
        ({"body": "block", "bounce": {"uniform": [0.1, 1e9]}}, "at most"),
        ({"body": "block", "slide": {"direction": "up", "speed": 1.0}}, "3 numbers"),
    ],
)
def test_bad_distributions_are_located_errors(item, words):
    with pytest.raises(SceneError, match=words):
        parse_hint_distribution({"hints": [item]}, BODIES)


def test_a_single_run_refuses_drawn_hints(tmp_path):
    f = tmp_path / "d.hints.yaml"
    f.write_text("hints:\n  - {body: block, bounce: {uniform: [0.1, 0.2]}}\n", encoding="utf-8")
    with pytest.raises(SceneError, match="needs --samples"):
        load_hints(f, BODIES)


# ----------------------------------------------------------------------------- heading
def test_turning_keeps_the_centre_of_mass_and_the_contact_with_the_ground():
    scene = load_scene(REPO / "scenes" / "markov_block.yaml")
    turned = turn_moving_bodies(scene, np.pi / 3)
    yawed = load_scene(REPO / "scenes" / "markov_block.yaml", {"yaw": 60.0})
    b, t, y = scene.body("block"), turned.body("block"), yawed.body("block")
    np.testing.assert_array_equal(t.position, b.position)
    np.testing.assert_allclose(t.rotation.as_matrix(), y.rotation.as_matrix(), atol=1e-15)
    assert turned.body("ground") == scene.body("ground")


def test_variation_draws_are_seeded_per_run():
    scene = load_scene(REPO / "scenes" / "markov_block.yaml")
    var = RunVariation(heading=True)
    a = [var.draw(scene, 9, i)[2] for i in range(3)]
    assert a == [var.draw(scene, 9, i)[2] for i in range(3)] and len(set(a)) == 3
    assert a[0] == variation_rng(9, 0).uniform(0.0, 2.0 * np.pi)
