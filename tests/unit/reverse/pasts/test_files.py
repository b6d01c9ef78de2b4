"""The files of backward runs and pasts (``reverse/pasts/files.py``): what each writer puts beside
the trajectories, read back through the store."""

from __future__ import annotations

import json
import math

import h5py
import numpy as np
import pytest

from reverse.pasts.conditioned import ConditionedPast
from reverse.pasts.files import (
    CONDITIONED_DTYPE,
    FileParts,
    conditioned_table,
    reverse_attrs,
    verification_parts,
    write_conditioned_pasts,
    write_reverse_run,
)
from reverse.runs.run import run_reverse
from reverse.runs.verify import VERIFY_DTYPE
from reverse.step.stepper import StepSettings
from workbench.scene.model import scene_from_dict
from workbench.store import read_trajectory


def _ball_on_ground():
    return scene_from_dict(
        {
            "settings": {"dt": 1 / 120, "duration": 0.05},
            "bodies": [
                {"name": "ground", "shape": {"type": "plane"}, "fixed": True},
                {
                    "name": "ball",
                    "shape": {"type": "sphere", "radius": 0.1},
                    "mass": 2.0,
                    "position": [0.0, 0.0, 0.1],
                },
            ],
        },
        source="<ball>",
    )


class _Outcome:
    """A stand-in for :class:`reverse.runs.verify.VerifyOutcome`: its row and refined state."""

    def __init__(self, run: int, status: str, n_bodies: int = 2):
        self.run = run
        self.status = status
        self.state = np.full((n_bodies, 13), float(run))

    def row(self) -> tuple:
        return (self.run, self.run, self.status.encode(), True, 1e-3, 0.5, 0.1, 3.0, 7, 0.4,
                0.0, 0.0, 0.0, 0.0)  # fmt: skip


def test_verification_parts_count_refined_runs_and_store_the_tolerances_in_degrees():
    settings = {"budget": 30, "tolerance": (0.01, math.radians(5.0)), "radius": (0.2, 0.5)}
    parts = verification_parts(
        [_Outcome(0, "refined"), _Outcome(1, "not refined"), _Outcome(2, "refined")], settings, 7
    )
    assert parts.attrs["verified_runs"] == 2
    assert parts.attrs["verify_tolerance"] == [0.01, pytest.approx(5.0)]
    assert parts.attrs["verify_radius"] == [0.2, pytest.approx(math.degrees(0.5))]
    assert parts.attrs["verify_entropy"] == "7" and parts.attrs["verify_budget"] == 30
    assert parts.datasets["verify/outcomes"].dtype == VERIFY_DTYPE
    assert parts.datasets["verify/earliest"].shape == (3, 2, 13)
    described = parts.described["verify/outcomes"]
    assert len(described["field_units"]) == len(VERIFY_DTYPE.names)
    assert all(described["field_descriptions"])


def test_file_parts_add_later_parts_over_earlier_ones():
    a = FileParts({"x": 1}, {"x": {"units": "m"}}, {"share": 0.5})
    a.add(FileParts({"y": 2}, {}, {"share": 1.0}))
    assert a.datasets == {"x": 1, "y": 2} and a.attrs == {"share": 1.0}


def test_reverse_attrs_state_time_reversal_and_only_the_options_used():
    settings = StepSettings(0.01)
    attrs = reverse_attrs(dt=0.01, settings=settings, hints_text="[]\n", start_overlap=0.0)
    assert attrs["time_reversed"] == 1 and attrs["reverse_settings"] == repr(settings)
    assert not {"markov_table", "energy_limit", "persist_contacts", "sample_heading"} & set(attrs)
    more = reverse_attrs(
        dt=0.01, settings=settings, hints_text="", start_overlap=0.0, energy_limit=5.0,
        persist_contacts=True, sample_heading="random",
    )  # fmt: skip
    assert more["energy_limit"] == 5.0 and more["persist_contacts"] == 1
    assert more["sample_heading"] == "random"


def test_a_reverse_run_file_holds_the_run_its_island_log_audit_and_parts(tmp_path):
    scene = _ball_on_ground()
    result = run_reverse(scene, duration=0.05)
    out = tmp_path / "r.h5"
    attrs = reverse_attrs(
        dt=1 / 120, settings=StepSettings(1 / 120), hints_text="", start_overlap=0.0
    )
    parts = FileParts(
        {"extra/x": np.arange(3.0)},
        {"extra/x": {"units": "m", "description": "a part's dataset"}},
        {"confirmed_share": 1.0},
    )
    write_reverse_run(
        out, scene, result, result.trajectory, attrs=attrs, parts=parts, forward_from=0.05
    )
    back = read_trajectory(out)
    np.testing.assert_array_equal(back.position, result.trajectory.position)
    with h5py.File(out, "r") as f:
        assert f.attrs["time_reversed"] == 1 and f.attrs["forward_from"] == 0.05
        assert f.attrs["reverse_duration"] == pytest.approx(0.05)
        assert json.loads(f.attrs["audit"]) == result.audit.summary()
        assert f.attrs["confirmed_share"] == 1.0
        assert "reverse/islands" in f and "extra/x" in f
        assert "markov_seed" not in f.attrs  # no table, no draws to record


def _past(throw: int, status: str, n: int = 4) -> ConditionedPast:
    kept = status == "refined"
    traj = np.zeros((n, 2, 13))
    traj[:, :, 6] = 1.0  # unit quaternions
    traj[:, 1, 2] = np.linspace(1.0, 0.1, n)
    return ConditionedPast(
        throw,
        status,
        message="" if kept else "x" * 200,
        carry_position=0.01,
        carry_angle=math.radians(10.0),
        pybullet_runs=5,
        residual_position=1e-3 if kept else math.nan,
        residual_angle=math.radians(1.0) if kept else math.nan,
        rest_time=0.2 if kept else math.nan,
        release=traj[0] if kept else None,
        earliest=traj[0] if kept else None,
        states=np.zeros(n, dtype=np.int8) if kept else None,
        kinematics=np.zeros((n, 4)) if kept else None,
        trajectory=traj if kept else None,
    )


def test_the_conditioned_table_maps_kept_throws_to_realizations_and_truncates_messages():
    tried = [_past(0, "moving"), _past(1, "refined"), _past(2, "refined")]
    table = conditioned_table(tried, [tried[2], tried[1]])
    assert table.dtype == CONDITIONED_DTYPE
    assert table["realization"].tolist() == [-1, 1, 0]
    assert table["carry_angle"][0] == pytest.approx(10.0)
    assert len(table["message"][0]) == 120


def test_an_incomplete_conditioned_sample_is_marked_in_its_file(tmp_path):
    scene = _ball_on_ground()
    tried = [_past(0, "moving"), _past(1, "refined")]
    settings = {"budget": 10, "tolerance": (0.01, 0.1), "radius": (0.2, 0.5)}
    out = tmp_path / "p.h5"
    write_conditioned_pasts(
        out, scene, [tried[1]], tried, {"kept": 1}, body=1, dt=0.1, asked=2, max_throws=10,
        settings=settings, entropy=3, start_overlap=0.0,
    )  # fmt: skip
    with h5py.File(out, "r") as f:
        assert f.attrs["conditioned_complete"] == 0 and f.attrs["conditioned_kept"] == 1
        assert f.attrs["kept_throws"] == "1" and f.attrs["n_realizations"] == 1
        assert f["conditioned/outcomes"].shape == (2,)
        assert f["conditioned/earliest"].shape == (1, 2, 13)
    back = read_trajectory(out, realization=0)
    np.testing.assert_allclose(back.time, [0.0, 0.1, 0.2, 0.3])
    assert back.position[-1, 1, 2] == pytest.approx(0.1)


def test_a_refined_confirmation_stores_the_earliest_state_pybullet_played():
    from reverse.pasts.files import confirmation_parts
    from reverse.runs.confirm import Confirmation
    from workbench.sim.state import State

    z = np.zeros((2, 3))
    start = State(z + 1.0, np.tile([0.0, 0.0, 0.0, 1.0], (2, 1)), z, z)
    plain = Confirmation(["a", "b"], np.array([0.0, 0.2]), np.zeros(2), earliest=start)
    assert set(confirmation_parts(plain).datasets) == {"reverse/confirmation"}
    refined = Confirmation(
        ["a", "b"], np.zeros(2), np.zeros(2), earliest=start, refine_runs=3, refined=True
    )
    parts = confirmation_parts(refined)
    assert parts.attrs == {"confirmed_share": 1.0, "confirm_refine_runs": 3}
    stored = parts.datasets["reverse/confirmed_earliest"]
    assert stored.shape == (2, 13) and np.all(stored[:, :3] == 1.0) and np.all(stored[:, 6] == 1)
