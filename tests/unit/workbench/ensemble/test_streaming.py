"""The streamed statistics of an observer (:mod:`workbench.ensemble.streaming`) read one set of
realizations, whatever a writer completes meanwhile (issue 39: ``workbench stats`` of an ensemble
being written died with ``IndexError: boolean index did not match`` when the driver completed
realizations between its two passes over the file)."""

from __future__ import annotations

import numpy as np

from tests.unit.workbench.test_store import make_trajectory
from workbench.ensemble.streaming import observer_statistics
from workbench.store import StoreSchema, TrajectoryStore, backend


def test_realizations_completed_during_the_read_are_left_to_the_next_read(tmp_path, monkeypatch):
    trajs = [make_trajectory(400 + i) for i in range(6)]
    schema = StoreSchema.from_trajectory(trajs[0])
    with TrajectoryStore.create(tmp_path / "s.h5", schema, 6) as store:
        store.write_many([(i, t) for i, t in enumerate(trajs)])
    with TrajectoryStore.open(tmp_path / "s.h5") as store:
        at_start = store.completed.copy()
        at_start[4:] = False
        reads = iter([at_start])
        # the first read of /completed sees 4 realizations, later ones all 6 (a driver at work)
        monkeypatch.setattr(
            backend.Store, "completed", property(lambda self: next(reads, np.ones(6, bool)))
        )
        mean, _, _, conv = observer_statistics(store, "observers/tip", 0.9)
    tips = np.stack([t.observers["tip"] for t in trajs[:4]])
    np.testing.assert_allclose(mean, tips.mean(axis=0).reshape(mean.shape))
    assert conv.shape == (4,)
