"""Backward/forward steps with known contacts (no PyBullet): the round trips of issue 4 and the
behaviours of Twigg & James §4 for single bodies on a flat ground."""

from __future__ import annotations

import numpy as np
import pytest

from reverse.step.dynamics import ContactSet, Goals, RigidBodies, tangent_basis
from reverse.step.stepper import Stepper, StepSettings, backward_configuration
from workbench.sim.state import State

G = 9.81
DT = 1e-3


def one_body(name, mass, inertia):
    """A single body under gravity: ``inertia`` (3, 3), kg m², no torque."""
    weight = np.array([[0.0, 0.0, -mass * G]])
    return RigidBodies((name,), np.array([mass]), inertia[None], weight, np.zeros((1, 3)))


def box_rigid(mass=2.0, half=(0.1, 0.15, 0.05)):
    hx, hy, hz = half
    inertia = mass / 3.0 * np.diag([hy**2 + hz**2, hx**2 + hz**2, hx**2 + hy**2])
    return one_body("box", mass, inertia)


def sphere_rigid(mass=1.0, r=0.1):
    return one_body("ball", mass, 0.4 * mass * r**2 * np.eye(3))


def ground_contacts(points, mu=0.5, rho=0.0, spin=0.0, alpha=0.0):
    """Contacts of body 0 with the static ground z = 0 at the given world points."""
    points = np.atleast_2d(np.asarray(points, dtype=float))
    k = len(points)
    n = np.tile([0.0, 0.0, 1.0], (k, 1))
    t = tangent_basis(n)
    return ContactSet(
        body_a=np.zeros(k, dtype=int),
        body_b=-np.ones(k, dtype=int),
        point=points,
        normal=n,
        distance=np.zeros(k),
        friction=np.full(k, mu),
        rolling=np.full(k, rho),
        spinning=np.full(k, spin),
        restitution=np.full(k, alpha),
        tangent=t,
        roll_axis=t.copy(),
    )


def box_corners(x, half=(0.1, 0.15, 0.05)):
    hx, hy, hz = half
    return np.array([[x[0] + sx * hx, x[1] + sy * hy, 0.0] for sx in (-1, 1) for sy in (-1, 1)])


def state1(x, v=(0, 0, 0), w=(0, 0, 0), q=(0, 0, 0, 1)):
    return State(
        np.array([x], float), np.array([q], float), np.array([v], float), np.array([w], float)
    )


def contacts_at(fn):
    """A contact source from a function of the position of body 0."""
    return lambda pos, orn: fn(pos[0])


def goals_fn(normal=0.0, tangential=(0, 0, 0), rolling=(0, 0, 0), direction=None):
    def f(contacts, x, u):
        k = len(contacts)
        g = Goals(
            np.full(k, normal),
            np.tile(np.asarray(tangential, float), (k, 1)),
            np.tile(np.asarray(rolling, float), (k, 1)),
        )
        pref = None if direction is None else np.tile(np.asarray(direction, float), (k, 1))
        return g, pref, None

    return f


def round_trip(stepper, state, goals=None):
    """Backward then forward with the contacts the backward step used."""
    back, rep = stepper.backward(state, goals)
    fwd, _ = stepper.forward(back, contacts=rep.contact_set)
    return back, fwd, rep


def rel_err(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


def assert_round_trip(fwd: State, state: State):
    for name in ("linear_velocity", "angular_velocity"):
        a, b = getattr(fwd, name), getattr(state, name)
        scale = max(np.max(np.abs(b)), 1.0)
        assert np.max(np.abs(a - b)) <= 1e-9 * scale, (name, a, b)
    assert np.max(np.abs(fwd.position - state.position)) <= 1e-9
    assert np.max(np.abs(fwd.orientation - state.orientation)) <= 1e-9


# ----------------------------------------------------------------------------- branches
def test_resting_box_stays_at_rest_and_round_trips():
    rigid = box_rigid()
    st = Stepper(
        rigid, contacts_at(lambda x: ground_contacts(box_corners(x))), StepSettings(DT, sleep=False)
    )
    s0 = state1([0, 0, 0.05])
    back, fwd, rep = round_trip(st, s0)
    assert np.allclose(back.linear_velocity, 0, atol=1e-12)
    assert rep.islands[0].status == "solved"
    assert_round_trip(fwd, s0)


def test_sliding_hint_accelerates_backward_at_mu_g_and_round_trips():
    mu = 0.4
    rigid = box_rigid()
    st = Stepper(
        rigid, contacts_at(lambda x: ground_contacts(box_corners(x), mu=mu)), StepSettings(DT)
    )
    s = state1([0, 0, 0.05])
    hint = goals_fn(tangential=(1.0, 0, 0), direction=(1, 0, 0))
    speeds = []
    for k in range(200):
        back, fwd, rep = round_trip(st, s, hint if k == 0 else None)
        assert_round_trip(fwd, s)
        s = back
        speeds.append(s.linear_velocity[0, 0])
    acc = np.diff(speeds) / DT
    # backward in time the block speeds up at μg along the hint: forward it decelerates at μg
    assert np.allclose(acc, mu * G, rtol=1e-9)
    assert np.allclose(s.linear_velocity[0, 1:], 0, atol=1e-12)
    assert s.position[0, 0] < 0  # it came from −x, sliding along +x


def test_bounce_hint_leaves_the_ground_and_elastic_branch_round_trips():
    alpha = 0.5
    rigid = sphere_rigid()
    r = 0.1

    def contacts(x):
        if x[2] - r > 1e-9:
            return ContactSet.empty()
        return ground_contacts([[x[0], x[1], 0.0]], mu=0.5, alpha=alpha)

    st = Stepper(rigid, contacts_at(contacts), StepSettings(DT, epsilon=0.2))
    s = state1([0, 0, r])
    back, fwd, rep = round_trip(st, s, goals_fn(normal=0.15))
    assert back.linear_velocity[0, 2] == pytest.approx(-0.15, rel=1e-12)
    assert_round_trip(fwd, s)
    # step back until the ball returns to the ground moving up (forward time): an elastic bounce
    s = back
    elastic = 0
    for _ in range(200):
        back, fwd, rep = round_trip(st, s)
        assert_round_trip(fwd, s)
        if rep.branches is not None and any(b.startswith("elastic") for b in rep.branches):
            elastic += 1
            assert back.linear_velocity[0, 2] == pytest.approx(-s.linear_velocity[0, 2] / alpha)
        s = back
    assert elastic >= 1


def test_rolling_hint_starts_rolling_without_slipping_and_round_trips():
    rho, r = 0.01, 0.1
    rigid = sphere_rigid(r=r)
    st = Stepper(
        rigid,
        contacts_at(lambda x: ground_contacts([[x[0], x[1], 0.0]], mu=1.0, rho=rho)),
        StepSettings(DT),
    )
    s = state1([0, 0, r])
    n = np.array([0, 0, 1.0])
    v_goal = np.array([1.0, 0, 0])
    w_goal = np.cross(n, v_goal) / r
    hint = goals_fn(rolling=w_goal)
    for k in range(300):
        back, fwd, rep = round_trip(st, s, hint if k == 0 else None)
        assert_round_trip(fwd, s)
        s = back
    v, w = s.linear_velocity[0], s.angular_velocity[0]
    slip = v + np.cross(w, np.array([0, 0, -r]))
    assert np.linalg.norm(slip) < 1e-9 * np.linalg.norm(v)
    # forward-time deceleration (5/7) ρ g / r: the rolling-friction law of PyBullet too
    a = v[0] / (300 * DT)
    assert a == pytest.approx(5 / 7 * rho * G / r, rel=2e-3)
    assert v[0] > 0


def test_without_rolling_friction_a_rolling_hint_cannot_start_rolling():
    r = 0.1
    rigid = sphere_rigid(r=r)
    st = Stepper(
        rigid,
        contacts_at(lambda x: ground_contacts([[x[0], x[1], 0.0]], mu=1.0, rho=0.0)),
        StepSettings(DT),
    )
    s = state1([0, 0, r])
    w_goal = np.cross([0, 0, 1.0], [1.0, 0, 0]) / r
    for k in range(50):
        s, _ = st.backward(s, goals_fn(rolling=w_goal) if k == 0 else None)
    assert np.allclose(s.linear_velocity, 0, atol=1e-12)
    assert np.allclose(s.angular_velocity, 0, atol=1e-12)


# ----------------------------------------------------------------------------- rotation
def test_torque_free_rotation_round_trips_and_conserves_momentum():
    rigid = RigidBodies(
        ("b",), np.array([1.0]), np.diag([0.1, 0.2, 0.3])[None], np.zeros((1, 3)), np.zeros((1, 3))
    )
    st = Stepper(rigid, lambda p, q: ContactSet.empty(), StepSettings(DT))
    q0 = np.array([0.1, 0.2, 0.3, 0.9])
    q0 /= np.linalg.norm(q0)
    s0 = state1([0, 0, 1], v=(0.1, 0, 0), w=(1.0, 5.0, 0.3), q=q0)
    back, fwd, _ = round_trip(st, s0)
    assert_round_trip(fwd, s0)
    # many forward steps: angular momentum L = I_w ω is conserved exactly (Eq. 12, τ = 0)
    from reverse.step.dynamics import world_inertia

    def L(s):
        return world_inertia(rigid.inertia, s.orientation)[0] @ s.angular_velocity[0]

    s = s0
    for _ in range(500):
        s, _ = st.forward(s)
    assert np.allclose(L(s), L(s0), rtol=1e-12, atol=1e-14)


def test_backward_configuration_inverts_the_forward_rotation_exactly():
    rigid = RigidBodies(
        ("b",), np.array([1.0]), np.diag([0.1, 0.2, 0.3])[None], np.zeros((1, 3)), np.zeros((1, 3))
    )
    q0 = np.array([0.3, -0.2, 0.1, 0.9])
    q0 /= np.linalg.norm(q0)
    s = state1([0, 0, 0], w=(20.0, -3.0, 7.0), q=q0)
    x, q, w, iters, residual, converged, newton = backward_configuration(s, rigid, 1e-3)
    assert 1 < iters < 20 and converged and newton == 0 and residual <= 1e-15
    st = Stepper(rigid, lambda p, q: ContactSet.empty(), StepSettings(1e-3))
    back = State(x, q, np.zeros((1, 3)), w)  # ω⁻ = ω_m without torque
    fwd, _ = st.forward(back)
    assert np.max(np.abs(fwd.orientation - s.orientation)) < 1e-14
    assert np.max(np.abs(fwd.angular_velocity - s.angular_velocity)) < 1e-12


def test_rotating_box_on_ground_round_trip_error_is_reported_small():
    """A spinning box sliding on the ground (rotating body with contacts): round trip exact up to
    the LCP's round-off because the configuration at t − h is solved before the LCP."""
    rigid = box_rigid()
    st = Stepper(
        rigid, contacts_at(lambda x: ground_contacts(box_corners(x), mu=0.3)), StepSettings(DT)
    )
    s0 = state1([0, 0, 0.05], v=(1.0, 0.5, 0), w=(0, 0, 2.0))
    # box corners only valid for q ≈ identity; the spin is about z so the corners stay on z = 0
    back, fwd, rep = round_trip(st, s0)
    assert rep.islands[0].status == "solved"
    err = max(
        rel_err(fwd.linear_velocity, s0.linear_velocity),
        rel_err(fwd.angular_velocity, s0.angular_velocity),
    )
    assert err < 1e-9


# ----------------------------------------------------------------------------- memory
def test_memory_and_restore_replay_steps_to_the_bit():
    """``Stepper.memory()`` copies the warm starts, elastic collisions and reverse time, and
    ``restore`` puts them back: the same steps taken again give the same states to the bit,
    and steps taken after ``memory()`` do not change the copy."""
    rigid = box_rigid()
    source = contacts_at(lambda x: ground_contacts(box_corners(x), mu=0.4))
    st = Stepper(rigid, source, StepSettings(DT, sleep=False))
    goals = goals_fn(normal=0.0, tangential=(0.3, 0.1, 0.0))
    state = state1([0, 0, 0.05], v=(0.5, 0.2, 0.0))
    for _ in range(3):
        state, _ = st.backward(state, goals)
        st.reverse_time += DT
    saved = st.memory()
    assert saved.warm, "a solved island leaves a warm start: the copy must not be empty"
    frozen = {k: v.copy() for k, v in saved.warm.items()}

    def three(s):
        out = []
        for _ in range(3):
            s, _ = st.backward(s, goals)
            st.reverse_time += DT
            out.append(np.concatenate([s.position, s.orientation, s.linear_velocity,
                                       s.angular_velocity], axis=None))  # fmt: skip
        return np.array(out)

    first = three(state)
    assert st.reverse_time > saved.reverse_time
    for k, v in frozen.items():  # the copy did not follow the stepper
        assert np.array_equal(saved.warm[k], v)
    st.restore(saved)
    assert st.reverse_time == saved.reverse_time
    second = three(state)
    assert np.array_equal(first.view(np.int64), second.view(np.int64))
