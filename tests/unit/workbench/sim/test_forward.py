"""A forward run says ``ok`` only for records that are all motions (issue 39, case 2).

Fails on the code before issue 39: ``run_scene`` returned whatever the recording loop said, so a
record the loop's batched check missed (or a non-finite kinetic energy from masses that are not
numbers: URDF links of mass nan ended ``ok`` with NaN energy in every record) was written ``ok``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from workbench.errors import SceneError
from workbench.scene.model import scene_from_dict
from workbench.sim import forward

SCENE = {
    "settings": {"dt": 0.01, "duration": 0.05},
    "bodies": [{"name": "ball", "shape": {"type": "sphere", "radius": 0.1}, "mass": 1.0}],
}


def run_with_record_spoiled(monkeypatch, spoil):
    real = forward._run

    def spoiled(scene, engine, progress):
        traj = real(scene, engine, progress)
        assert traj.status == "ok"
        spoil(traj)
        return traj

    monkeypatch.setattr(forward, "_run", spoiled)
    return forward.run_scene(scene_from_dict(SCENE))


def test_an_ok_run_with_a_record_beyond_the_bound_ends_nonfinite(monkeypatch):
    traj = run_with_record_spoiled(monkeypatch, lambda t: t.position.__setitem__((3, 0, 0), -1e29))
    assert traj.status == "nonfinite"
    assert traj.n_times == 3
    assert "beyond 1e+15 m" in traj.message


def test_an_ok_run_with_non_finite_kinetic_energy_ends_nonfinite(monkeypatch):
    def spoil(t):
        t.diagnostics["kinetic_energy"][2] = np.nan

    traj = run_with_record_spoiled(monkeypatch, spoil)
    assert traj.status == "nonfinite"
    assert traj.n_times == 2
    assert "kinetic energy" in traj.message


def test_a_first_record_that_is_no_motion_is_the_scenes_fault(monkeypatch):
    with pytest.raises(SceneError, match="initial state"):
        run_with_record_spoiled(monkeypatch, lambda t: t.position.__setitem__((0, 0, 0), np.inf))


def test_a_plain_run_stays_ok():
    traj = forward.run_scene(scene_from_dict(SCENE))
    assert traj.status == "ok" and dataclasses.is_dataclass(traj)
