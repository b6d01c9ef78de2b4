"""Per-run statistics of the plausibility measure (reverse/pasts/measure.py) on hand-made runs,
the comparison's table and JSON, and the measure's seeded streams.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from reverse.pasts.measure import (
    STATISTICS,
    compare,
    dwell_times,
    format_table,
    run_features,
    run_statistics,
    stream_entropy,
)
from reverse.runs.sampler import RunRecord

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
