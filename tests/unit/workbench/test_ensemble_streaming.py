"""The bounded-memory statistics of a stored observer equal the in-memory ones."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.workbench.test_store import make_trajectory
from workbench.ensemble import streaming as streaming
from workbench.ensemble.statistics import (
    confidence_band,
    mean_response,
    mean_square_convergence,
)
from workbench.store import StoreSchema, TrajectoryStore, backend


def test_streamed_statistics_equal_the_in_memory_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(streaming, "BLOCK_REALIZATIONS", 3)
    monkeypatch.setattr(backend, "READ_BLOCK", 2)
    monkeypatch.setattr(backend, "WINDOW_BYTES", 8 * 3 * 8 * 4)  # 4 records per window
    trajs = [make_trajectory(200 + i) for i in range(9)]
    bad = make_trajectory(300)
    bad.observers["tip"][4, 1] = np.nan  # a realization with a non-finite record is left out
    trajs[5] = bad
    schema = StoreSchema.from_trajectory(trajs[0])
    with TrajectoryStore.create(tmp_path / "s.h5", schema, 10) as store:
        store.write_many([(i, t) for i, t in enumerate(trajs)])  # 9 is never written
        assert len(list(store.iter_time_windows("observers/tip"))) > 5  # many windows
        for name in ("observers/tip", "diagnostics/" + schema.diagnostics[0]):
            Y = store.read_array(name)[:9]
            mean, lo, hi, conv = streaming.observer_statistics(store, name, 0.8)
            assert np.array_equal(mean, mean_response(Y))
            want_lo, want_hi = confidence_band(Y, 0.8)
            assert np.array_equal(lo, want_lo) and np.array_equal(hi, want_hi)
            np.testing.assert_allclose(conv, mean_square_convergence(Y, schema.time), rtol=1e-15)
        with pytest.raises(ValueError, match="probability"):
            streaming.observer_statistics(store, "observers/tip", 1.0)
