"""The physical audit of a reverse run (:mod:`reverse.runs.audit`): the discrete mechanical energy
is kept exactly in free flight, a rise of it is energy from nowhere, overlaps and speeds beyond
their limits are named, and a run that breaks one is marked ``implausible`` with its records kept.
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.runs.audit import (
    SPEED_FLOOR,
    AuditLimits,
    allowed_speeds,
    audit_run,
    body_radii,
    largest_rise,
    mechanical_energy,
)
from reverse.runs.run import run_reverse
from workbench.scene.model import scene_from_dict

G = np.array([0.0, 0.0, -9.81])


def _free_flight(n_steps=200, dt=1 / 120, v0=(1.0, 0.5, 3.0), x0=(0.0, 0.0, 1.0), m=2.0):
    """Records of one body in free flight by semi-implicit Euler (v⁺ = v⁻ + h g, x⁺ = x⁻ + h v⁺),
    as the forward mirror of a backward step moves it."""
    x, v = np.array(x0, float), np.array(v0, float)
    xs, vs = [x.copy()], [v.copy()]
    for _ in range(n_steps):
        v = v + dt * G
        x = x + dt * v
        xs.append(x.copy())
        vs.append(v.copy())
    pos, vel = np.array(xs)[:, None, :], np.array(vs)[:, None, :]
    ke = 0.5 * m * np.einsum("tni,tni->tn", vel, vel)
    return pos, vel, ke, np.array([m]), dt


def test_the_discrete_energy_is_kept_exactly_in_free_flight():
    pos, vel, ke, mass, dt = _free_flight()
    e = mechanical_energy(mass, ke, mass[:, None] * G, pos, vel, dt)
    assert np.ptp(e) <= 1e-12 * np.max(np.abs(e))
    # without the ½h f·v term the same flight loses ½ h² |g|² m a step: the audit would call
    # every free flight a loss, and hide a gain of the same size
    naive = ke.sum(axis=1) - np.einsum("nk,tnk->t", mass[:, None] * G, pos)
    drift = 0.5 * dt**2 * 9.81**2 * mass[0]
    assert np.diff(naive) == pytest.approx(np.full(len(naive) - 1, -drift), rel=1e-6)


def test_the_largest_rise_is_between_a_low_and_a_later_high():
    assert largest_rise(np.array([5.0, 4.0, 3.0])) == (0.0, 0, 0)
    assert largest_rise(np.array([5.0, 1.0, 4.0, 0.5, 2.0])) == (3.0, 1, 2)
    assert largest_rise(np.array([])) == (0.0, 0, 0)


def test_a_body_falling_at_the_earliest_state_was_dropped_from_higher_up():
    pos = np.zeros((2, 2, 3))
    v0 = np.array([[0.0, 0.0, -3.0], [3.0, 0.0, 0.0]])  # falling; sliding sideways
    got = allowed_speeds(pos, G, np.zeros(2), v0)
    assert got == pytest.approx([3.0 + SPEED_FLOOR, SPEED_FLOOR])


def test_a_body_is_allowed_the_speed_of_its_fall_and_its_hints():
    pos = np.zeros((3, 2, 3))
    pos[:, 0, 2] = [2.0, 1.0, 0.5]  # falls 1.5 m
    pos[:, 1, 2] = [0.0, 1.0, 0.0]  # thrown up 1 m, falls 1 m
    got = allowed_speeds(pos, G, np.array([0.0, 3.0]))
    assert got == pytest.approx(
        [np.sqrt(2 * 9.81 * 1.5) + SPEED_FLOOR, np.sqrt(9 + 2 * 9.81) + SPEED_FLOOR]
    )


def test_body_radii_are_a_sphere_radius_and_scale_with_a_box():
    m = np.array([3.0, 2.0, 0.0])
    sphere = 0.4 * 3.0 * 0.02**2 * np.eye(3)
    a = 0.1
    cube = 2.0 * (2 * a**2) / 3 * np.eye(3)  # half edge a: I = m (b² + c²) / 3
    r = body_radii(m, np.stack([sphere, cube, np.eye(3)]))
    assert r[0] == pytest.approx(0.02)
    assert r[1] == pytest.approx(a * np.sqrt(2 / 1.2))
    assert r[2] == np.inf


def _audit_of(pos, vel, ke, mass, dt, **kw):
    nt, n = ke.shape
    kw.setdefault("overlap_bodies", np.zeros(nt))
    kw.setdefault("overlap_static", np.zeros(nt))
    kw.setdefault("control_energy", np.zeros(nt))
    return audit_run(
        body_names=[f"b{j}" for j in range(n)],
        time=np.arange(nt) * dt,
        position=pos,
        linear_velocity=vel,
        angular_velocity=np.zeros_like(vel),
        kinetic=ke,
        mass=mass,
        inertia=np.stack([0.4 * m * 0.05**2 * np.eye(3) for m in mass]),
        force=mass[:, None] * G,
        gravity=G,
        dt=dt,
        **kw,
    )


def test_a_thrown_body_in_free_flight_passes_only_with_its_throw_allowed():
    pos, vel, ke, mass, dt = _free_flight(n_steps=40)  # up to the top of the throw
    passed = _audit_of(pos, vel, ke, mass, dt, hint_speed=np.array([3.3]))
    assert passed.passed, passed.problems
    assert passed.energy_gain <= 1e-12 * passed.peak_kinetic
    # the same flight with no throw allowed: it starts at 3.2 m/s upward and falls little
    failed = _audit_of(pos, vel, ke, mass, dt)
    assert any("b0 reaches a speed" in p for p in failed.problems), failed.problems


def test_energy_from_nowhere_and_overlaps_are_named_with_their_times():
    pos, vel, ke, mass, dt = _free_flight(n_steps=40)
    vel2 = vel.copy()
    vel2[20:] *= 1.2  # a kick half way: 44 % more kinetic energy from nowhere
    ke2 = 0.5 * mass[0] * np.einsum("tni,tni->tn", vel2, vel2)
    ob = np.zeros(41)
    ob[0] = 0.004
    a = _audit_of(pos, vel2, ke2, mass, dt, hint_speed=np.array([4.0]), overlap_bodies=ob,
                  limits=AuditLimits(overlap=0.002, earliest_overlap=0.001))  # fmt: skip
    text = " | ".join(a.problems)
    assert "energy from nowhere" in text and "and 0.1667 s" in text  # up to record 20
    assert "two bodies inside each other by 4 mm at t = 0 s" in text
    assert "earliest state overlaps by 4 mm" in text
    assert not a.passed
    assert a.summary()["passed"] is False and a.lines()[0] == "audit: FAILED"


def _scene_two_blocks():
    return scene_from_dict(
        {
            "settings": {"dt": 1 / 120, "duration": 0.5},
            "bodies": [
                {
                    "name": "ground",
                    "shape": {"type": "box", "half_extents": [2.0, 2.0, 0.5]},
                    "position": [0.0, 0.0, -0.5],
                    "fixed": True,
                    "material": {"friction": 0.6},
                },
                {
                    "name": "block",
                    "shape": {"type": "box", "half_extents": [0.125, 0.125, 0.0625]},
                    "mass": 1.0,
                    "position": [0.0, 0.0, 0.0625],
                    "material": {"friction": 0.5},
                },
            ],
        },
        source="<blocks>",
    )


def _two_balls(overlap: float, vz: float = 0.0, vx: float = 0.0):
    """Balls a and b side by side along x, ``overlap`` into each other (negative: a gap), both
    moving at ``vz`` along z, a at −``vx`` and b at +``vx`` along x (apart)."""
    r = 0.05
    return scene_from_dict(
        {
            "settings": {"dt": 1 / 120, "duration": 0.5},
            "bodies": [
                {
                    "name": "a",
                    "shape": {"type": "sphere", "radius": r},
                    "mass": 1.0,
                    "position": [0.0, 0.0, 1.0],
                    "linear_velocity": [-vx, 0.0, vz],
                },
                {
                    "name": "b",
                    "shape": {"type": "sphere", "radius": r},
                    "mass": 1.0,
                    "position": [2 * r - overlap, 0.0, 1.0],
                    "linear_velocity": [vx, 0.0, vz],
                },
            ],
        },
        source="<balls>",
    )


def test_a_run_whose_bodies_pass_through_each_other_is_implausible_and_keeps_its_records():
    # 2 mm apart and flying apart at 3 m/s each: backward they close 50 mm in a 1/120 s step,
    # and the step's configuration is placed before its contacts are found
    res = run_reverse(_two_balls(-0.002, vx=3.0), duration=0.05)
    traj = res.trajectory
    assert traj.status == "implausible"
    assert "a inside b" in traj.message or "b inside a" in traj.message
    assert len(traj.time) == 7  # every record kept
    assert np.max(traj.diagnostics["overlap_bodies"]) > 0.01
    assert traj.diagnostics["overlap_bodies"][-1] == 0.0  # the scene's own state is apart
    assert not res.audit.passed


def test_the_overlap_of_the_scenes_own_state_is_the_users_and_counted_as_given():
    res = run_reverse(_two_balls(0.02), duration=0.05)
    assert res.audit.given_overlap == pytest.approx(0.02, abs=1e-6)
    assert res.trajectory.status == "ok", res.trajectory.message
    assert any("scene's own state overlaps by 20 mm" in line for line in res.audit.lines())


def test_a_free_fall_backward_is_plausible_and_stores_its_energy():
    # half a metre apart, no contact, falling at 2.45 m/s: dropped from rest 0.25 s before
    res = run_reverse(_two_balls(-0.5, vz=-9.81 * 0.25), duration=0.25)
    traj = res.trajectory
    assert traj.status == "ok", traj.message
    assert res.audit.passed
    e = traj.diagnostics["mechanical_energy"]
    assert np.ptp(e) <= 1e-9 * np.max(np.abs(e))
    assert np.all(traj.diagnostics["overlap_bodies"] == 0.0)
