"""The landing cut-off of backward steps (``StepSettings.landing_delta``, issue 15 item 3):
landings (the elastic branch of Twigg & James 2008 Eq. 7) that arrive slipping slowly stick (the
goal LCP of §3.2 Eq. 9–10) instead of sliding with maximal friction; every other contact, and
every run with the option off, is unchanged to the bit. Known contacts, no PyBullet."""

from __future__ import annotations

import numpy as np
import pytest

from reverse.dynamics import ContactSet, RigidBodies, tangent_basis
from reverse.stepper import BATCH_MIN_CONTACTS, Stepper, StepSettings
from workbench.sim.state import State

G = 9.81
DT = 1e-3
R = 0.1  # ball radius, m
MU = 0.5
ALPHA = 0.5  # restitution: a rebound of vn ≥ α ε = 0.1 m/s is a landing (elastic branch)


def balls(k: int) -> RigidBodies:
    """``k`` balls of 1 kg under gravity."""
    mass = np.ones(k)
    inertia = np.tile(0.4 * R**2 * np.eye(3), (k, 1, 1))
    weight = np.tile([0.0, 0.0, -G], (k, 1))
    return RigidBodies(tuple(f"b{i}" for i in range(k)), mass, inertia, weight, np.zeros((k, 3)))


def ground(position: np.ndarray) -> ContactSet:
    """Each ball touching the ground z = 0 below its centre."""
    k = len(position)
    n = np.tile([0.0, 0.0, 1.0], (k, 1))
    t = tangent_basis(n)
    point = position.copy()
    point[:, 2] = 0.0
    return ContactSet(
        body_a=np.arange(k),
        body_b=-np.ones(k, dtype=int),
        point=point,
        normal=n,
        distance=np.zeros(k),
        friction=np.full(k, MU),
        rolling=np.zeros(k),
        spinning=np.zeros(k),
        restitution=np.full(k, ALPHA),
        tangent=t,
        roll_axis=t.copy(),
    )


def at_ground(k: int, up: float, slip: float) -> State:
    """``k`` balls on the ground, 1 m apart, moving up at ``up`` and along x at ``slip`` m/s
    without spin (the contact point slips at ``slip``)."""
    x = np.column_stack([np.arange(k, dtype=float), np.zeros(k), np.full(k, R)])
    q = np.tile([0.0, 0.0, 0.0, 1.0], (k, 1))
    v = np.tile([slip, 0.0, up], (k, 1))
    return State(x, q, v, np.zeros((k, 3)))


def step_back(k: int, up: float, slip: float, landing_delta: float):
    stepper = Stepper(
        balls(k),
        lambda pos, orn: ground(pos),
        StepSettings(DT, epsilon=0.2, landing_delta=landing_delta),
    )
    return stepper, stepper.backward(at_ground(k, up, slip))


def contact_slip(state: State) -> np.ndarray:
    """Tangential speed of each ball's material point at the contact (on the ground below its
    centre, where the step's contacts are), m/s."""
    r = np.zeros_like(state.position)
    r[:, 2] = -state.position[:, 2]
    u = state.linear_velocity + np.cross(state.angular_velocity, r)
    return np.hypot(u[:, 0], u[:, 1])


@pytest.mark.parametrize("k", [1, BATCH_MIN_CONTACTS])  # one island; enough for the batch
def test_a_slowly_slipping_landing_sticks_with_the_landing_cut_off(k):
    # default δ = 1e-4: a landing slipping 0.1 m/s slides, and the backward friction impulse is
    # maximal (§3.2): the slip before the impact is far larger than after it
    _, (plain, rep0) = step_back(k, up=1.0, slip=0.1, landing_delta=0.0)
    assert set(rep0.branches) == {"elastic+slide"}
    assert np.all(contact_slip(plain) > 1.0)  # μ Δv_n (1 + m r²/I) = 0.5 · 3 · 3.5 m/s
    # with the landing cut-off 0.2 m/s it sticks: the goal LCP (Eq. 9–10, goal 0) leaves the
    # contact point at rest before the impact
    _, (stuck, rep) = step_back(k, up=1.0, slip=0.1, landing_delta=0.2)
    assert set(rep.branches) == {"elastic"}
    assert np.all(contact_slip(stuck) < 1e-12)  # round-off of an LCP solve of O(1) numbers
    # the normal law of Eq. 7 is the same: the contact approached at v⁺/α
    assert np.allclose(stuck.linear_velocity[:, 2], -1.0 / ALPHA, rtol=1e-12)
    assert np.allclose(plain.linear_velocity[:, 2], -1.0 / ALPHA, rtol=1e-12)


def test_the_forward_step_undoes_a_stuck_landing_up_to_the_cut_off():
    # the cut-off is a plausibility control, not Newton: forward from the stuck landing the ball
    # leaves with the same normal velocity and a slip of at most landing_delta off
    stepper, (back, rep) = step_back(1, up=1.0, slip=0.1, landing_delta=0.2)
    fwd, _ = stepper.forward(back, contacts=rep.contact_set)
    assert fwd.linear_velocity[0, 2] == pytest.approx(1.0, abs=1e-12)
    assert abs(contact_slip(fwd)[0] - 0.1) <= 0.2


@pytest.mark.parametrize(
    ("up", "slip"),
    [
        (1.0, 0.5),  # a landing slipping faster than the cut-off: slides as before
        (0.0, 0.1),  # a resting contact slipping slowly: not a landing, slides as before
        (0.05, 0.1),  # separating below α ε: no impulse ("free"), not a landing
    ],
)
@pytest.mark.parametrize("k", [1, BATCH_MIN_CONTACTS])
def test_other_contacts_are_unchanged_to_the_bit(up, slip, k):
    _, (a, rep_a) = step_back(k, up, slip, landing_delta=0.0)
    _, (b, rep_b) = step_back(k, up, slip, landing_delta=0.2)
    assert list(rep_a.branches) == list(rep_b.branches)
    for name in ("position", "orientation", "linear_velocity", "angular_velocity"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


@pytest.mark.parametrize("bad", [-0.1, float("nan")])
def test_a_negative_landing_cut_off_is_refused(bad):
    with pytest.raises(ValueError, match="landing_delta"):
        StepSettings(DT, landing_delta=bad)


@pytest.mark.parametrize("script", ["plausibility.py", "plausibility_landings.py"])
@pytest.mark.parametrize("bad", ["-0.1", "nan"])
def test_the_benchmarks_refuse_a_negative_landing_cut_off(script, bad):
    import subprocess
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / script
    out = subprocess.run(
        [sys.executable, str(path), "--landing-delta", bad],
        capture_output=True,
        text=True,
        timeout=120,  # an import of the reverse package, no run: seconds
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("--landing-delta: expected >= 0"), out.stderr


@pytest.mark.parametrize(("up", "slip"), [(1.0, 0.1), (1.0, 0.5), (0.0, 0.1)])
def test_the_batched_path_applies_the_landing_cut_off_as_solve_island_does(up, slip, monkeypatch):
    """Islands solved together (reverse.batched) and one by one (dynamics.solve_island) give
    the same answer to the bit with the landing cut-off, as they do without it."""
    import reverse.stepper as stepper_module

    _, (batched, rep_b) = step_back(BATCH_MIN_CONTACTS, up, slip, landing_delta=0.2)
    monkeypatch.setattr(stepper_module, "BATCH_MIN_CONTACTS", 10**9)  # every island alone
    _, (alone, rep_a) = step_back(BATCH_MIN_CONTACTS, up, slip, landing_delta=0.2)
    assert list(rep_a.branches) == list(rep_b.branches)
    for name in ("position", "orientation", "linear_velocity", "angular_velocity"):
        assert np.array_equal(getattr(alone, name), getattr(batched, name)), name
