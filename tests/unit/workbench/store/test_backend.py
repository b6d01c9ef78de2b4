"""The store's contract (:mod:`workbench.store.backend`): a realization's ``recorded`` cannot be
cut below the records present (issue 39, item 9: ``recorded`` edited to 0 or 1 on realizations
whose status is ``ok`` and whose records are present was read as a run of one record, without
remark)."""

from __future__ import annotations

import h5py
import pytest

from tests.unit.workbench.test_store import NT, make_trajectory
from workbench.errors import StoreError
from workbench.store import StoreSchema, TrajectoryStore, read_trajectory


@pytest.fixture
def ensemble(tmp_path):
    """Three realizations: two ``ok`` with all records, one stopped after 10 records."""
    trajs = [make_trajectory(1), make_trajectory(2), make_trajectory(3, nt=10, status="nonfinite")]
    path = tmp_path / "e.h5"
    schema = StoreSchema.from_trajectory(trajs[0])
    with TrajectoryStore.create(path, schema, 3) as store:
        store.write_many(list(enumerate(trajs)))
    return path


@pytest.mark.parametrize("value", [0, 1, NT - 1])
def test_recorded_cut_below_the_records_present_is_refused(ensemble, value):
    with h5py.File(ensemble, "r+") as f:
        f["recorded"][1] = value
    with pytest.raises(StoreError) as err:
        read_trajectory(ensemble, 1)
    assert str(err.value) == (
        f"{ensemble}: dataset /recorded[1] = {value}, but record {value} of /states/position "
        "holds values (a run stores NaN after its last record); the file is damaged"
    )


def test_a_run_stopped_early_reads_its_records(ensemble):
    assert read_trajectory(ensemble, 2).n_times == 10
    assert read_trajectory(ensemble, 0).n_times == NT
