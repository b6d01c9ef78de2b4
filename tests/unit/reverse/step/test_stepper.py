"""Backward/forward steps of :class:`reverse.step.stepper.Stepper` with known contacts (no
PyBullet): the round trips of issue 4 and the behaviours of Twigg & James §4 for single bodies
on a flat ground; the heuristics of §4 (the free-to-bounce test, the "attraction" of
constrained bodies, the restitution blend after elastic collisions — its look-up of elastic
pairs the per-contact loop's, to the bit — and the backward damping); and a face → edge drop of
the Markov model, where the LCP keeps the kept edge in touch (the block pivots about it exactly)
and the next step's configuration lifts the edge only by the second-order gap of the linear
position update (docs/reverse.md, "Energy-consistent pasts", cause 2).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from reverse.goals.hints import HintPolicy
from reverse.step.dynamics import ContactSet, Goals, RigidBodies, tangent_basis, world_inertia
from reverse.step.separation import SLOP as SEPARATION_SLOP
from reverse.step.stepper import (
    Stepper,
    StepReport,
    StepSettings,
    backward_configuration,
    blend_weight,
    free_bodies,
)
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


def contact_set(body_a, body_b, points, normals, mu=1.0, alpha=0.0):
    points = np.atleast_2d(np.asarray(points, dtype=float))
    normals = np.atleast_2d(np.asarray(normals, dtype=float))
    k = len(points)
    normals = np.broadcast_to(normals, (k, 3)).copy()
    t = tangent_basis(normals)
    return ContactSet(
        body_a=np.broadcast_to(np.asarray(body_a), (k,)).astype(int).copy(),
        body_b=np.broadcast_to(np.asarray(body_b), (k,)).astype(int).copy(),
        point=points,
        normal=normals,
        distance=np.zeros(k),
        friction=np.full(k, mu),
        rolling=np.zeros(k),
        spinning=np.zeros(k),
        restitution=np.full(k, alpha),
        tangent=t,
        roll_axis=t.copy(),
    )


def concat(*sets):
    return ContactSet(
        **{k: np.concatenate([getattr(s, k) for s in sets]) for k in sets[0].__dict__}
    )


def box_inertia(m, hx, hy, hz):
    return m / 3.0 * np.diag([hy**2 + hz**2, hx**2 + hz**2, hx**2 + hy**2])


# ------------------------------------------------------------------------ free to bounce
def corners(cx, cy, z, hx, hy):
    return [[cx + sx * hx, cy + sy * hy, z] for sx in (-1, 1) for sy in (-1, 1)]


def test_free_to_bounce_test_of_section_4():
    up = [0.0, 0.0, 1.0]
    ground = contact_set(0, -1, corners(0, 0, 0, 0.1, 0.1), up)  # box 0 on the ground
    stacked = contact_set(1, 0, corners(0, 0, 0.2, 0.1, 0.1), up)  # box 1 on box 0
    free = free_bodies(concat(ground, stacked), 3)
    # the top box and a body without contacts are free; the box pressed from both sides is not
    assert free.tolist() == [False, True, True]
    # a ball in a corner (floor and wall: perpendicular normals) does not oppose anything
    corner = concat(
        contact_set(0, -1, [[0, 0, 0]], up), contact_set(0, -1, [[0.1, 0, 0.1]], [-1, 0, 0])
    )
    assert free_bodies(corner, 1).tolist() == [True]
    # squeezed between two walls: opposing normals
    squeezed = concat(
        contact_set(0, -1, [[0.1, 0, 0]], [-1, 0, 0]), contact_set(0, -1, [[-0.1, 0, 0]], [1, 0, 0])
    )
    assert free_bodies(squeezed, 1).tolist() == [False]


def _two_box_stack(hx=0.1, hz=0.1, m=(1.0, 1.0), mu=1.0):
    inertia = np.stack([box_inertia(mk, hx, hx, hz) for mk in m])
    rigid = RigidBodies(
        ("bottom", "top"),
        np.array(m),
        inertia,
        np.array([[0.0, 0.0, -m[0] * G], [0.0, 0.0, -m[1] * G]]),
        np.zeros((2, 3)),
    )
    up = [0.0, 0.0, 1.0]
    cs = concat(
        contact_set(0, -1, corners(0, 0, 0, hx, hx), up, mu=1.0),
        contact_set(1, 0, corners(0, 0, 2 * hz, hx, hx), up, mu=mu),
    )
    state = State(
        np.array([[0, 0, hz], [0, 0, 3 * hz]], float),
        np.tile([0.0, 0.0, 0.0, 1.0], (2, 1)),
        np.zeros((2, 3)),
        np.zeros((2, 3)),
    )
    return rigid, cs, state


@pytest.mark.parametrize("free_to_bounce", [True, False])
def test_goals_start_only_free_bodies_moving(free_to_bounce):
    """A bounce goal on every contact of a two-box stack: with the test, only the top box
    leaves (it landed on the bottom one); without it the bottom box leaves the ground too."""
    rigid, cs, state = _two_box_stack()
    st = Stepper(rigid, lambda p, q: cs, StepSettings(DT, free_to_bounce=free_to_bounce))
    back, rep = st.backward(state, goals_fn(normal=0.15))
    v_bottom, v_top = back.linear_velocity[:, 2]
    if free_to_bounce:
        assert rep.constrained == 1 and rep.goals_dropped == 4
        assert abs(v_bottom) <= 1e-12
        assert v_top == pytest.approx(-0.15, rel=1e-9)  # approached the bottom box at 0.15 m/s
    else:
        assert v_bottom == pytest.approx(-0.15, rel=1e-9)
        assert v_top < -0.15


def _tall_stack_with_sliding_top(attract):
    """A thin, tall bottom block with a heavy top block sliding over it at 1 m/s: the friction
    the bottom block received forward tips it; stepped backward, it rocks unless its resting
    contacts may pull (§4 "Stacking", Fig. 6)."""
    hx, hz = 0.05, 0.3
    rigid, cs, state = _two_box_stack(hx=hx, hz=hz, m=(1.0, 5.0), mu=1.0)
    state = State(
        state.position, state.orientation, np.array([[0, 0, 0], [1.0, 0, 0]]), np.zeros((2, 3))
    )
    st = Stepper(rigid, lambda p, q: cs, StepSettings(DT, attract=attract))
    return st.backward(state)


def test_without_attraction_the_stack_problem_has_no_solution():
    """Backward, the friction of the sliding top block tips the thin one, whose ground contacts
    may only approach (v_n⁻ ≤ 0): the LCP with friction is infeasible — Lemke ends on a ray —
    and the island falls back to a frictionless solve (reported)."""
    back, rep = _tall_stack_with_sliding_top(attract=False)
    assert rep.constrained == 1
    (island,) = rep.islands
    assert island.status == "ray"
    assert island.fallback.endswith("frictionless retry solved")
    assert np.all(np.isfinite(back.linear_velocity))


def test_attraction_keeps_a_constrained_body_at_rest():
    back, rep = _tall_stack_with_sliding_top(attract=True)
    assert all(i.status == "solved" for i in rep.islands)
    # the bottom block's resting contacts hold with v_n = 0 exactly (round-off of the LCP)
    assert np.linalg.norm(back.angular_velocity[0]) <= 1e-9
    assert np.linalg.norm(back.linear_velocity[0]) <= 1e-9
    # the top block (free, not attracted) still slid faster before: maximal friction, at least
    # μ g h = 0.0098 m/s per step (more, as the friction's moment also tips it)
    assert back.linear_velocity[1, 0] >= 1.0 + 1.0 * G * DT


# --------------------------------------------------------------------- restitution blend
def test_blend_weight_is_a_raised_cosine():
    assert blend_weight(0.0, 0.2) == 1.0
    assert blend_weight(0.1, 0.2) == pytest.approx(0.5)
    assert blend_weight(0.2, 0.2) == 0.0 and blend_weight(0.5, 0.2) == 0.0
    assert blend_weight(0.0, 0.0) == 0.0


def _rattle(blend, steps=200):
    """A ball rattling between a floor and a ceiling 1 cm above it (restitution 0.5), moving up
    at 1 m/s at the final state; stepped back 0.2 s."""
    r, gap = 0.1, 0.01
    rigid = sphere_rigid(r=r)

    def contacts(pos, orn):
        z = pos[0, 2]
        out = []
        if z - r <= 1e-9:
            out.append(contact_set(0, -1, [[pos[0, 0], pos[0, 1], 0.0]], [0, 0, 1], alpha=0.5))
        if z + r >= 2 * r + gap - 1e-9:
            out.append(
                contact_set(0, -1, [[pos[0, 0], pos[0, 1], 2 * r + gap]], [0, 0, -1], alpha=0.5)
            )
        return concat(*out) if out else ContactSet.empty()

    st = Stepper(rigid, contacts, StepSettings(DT, restitution_blend=blend))
    s = state1([0, 0, r + 1e-12], v=[0, 0, 1.0])
    for _ in range(steps):
        s, _ = st.backward(s)
    return np.linalg.norm(s.linear_velocity[0])


def test_restitution_blend_stops_micro_collision_energy_growth():
    plain = _rattle(0.0)
    blended = _rattle(0.2)
    # Newton's law doubles the speed at each of the ~10 backward collisions; with the blend the
    # first collision doubles it (α = 0.5), the later ones find α ≈ 1
    assert plain > 50.0
    assert blended <= 2.0 * 1.0 + G * 0.2 + 1e-6


# --------------------------------------------------------------------------- damping
def test_backward_angular_damping_decays_spin_exponentially():
    rigid = sphere_rigid()
    st = Stepper(rigid, lambda p, q: ContactSet.empty(), StepSettings(DT, angular_damping=0.5))
    s = state1([0, 0, 5.0], w=[0, 0, 10.0])
    for _ in range(100):
        s, _ = st.backward(s)
    assert s.angular_velocity[0, 2] == pytest.approx(10.0 * np.exp(-0.5 * 100 * DT), rel=1e-12)


# ------------------------------------------------------------------------------- joints
def test_contacts_between_jointed_bodies_get_unit_restitution():
    """Three boxes: 0 and 1 hinged together, 2 free. With the option, the 0-1 contact becomes
    elastic (α = 1) and the others keep theirs (§4 "Joints and constraints")."""
    from reverse.step.joints import JointModel

    m = np.ones(3)
    inertia = np.stack([box_inertia(1.0, 0.1, 0.1, 0.1)] * 3)
    rigid = RigidBodies(("a", "b", "c"), m, inertia, np.zeros((3, 3)), np.zeros((3, 3)))
    pos = np.array([[0.0, 0, 0], [0.2, 0, 0], [0.0, 0.5, 0]])
    orn = np.tile([0.0, 0, 0, 1], (3, 1))
    joints = JointModel.from_definitions(
        [("revolute", 1, 0, np.array([0.1, 0, 0.1]), (0.0, 1.0, 0.0))],
        pos,
        orn,
        np.zeros(3, dtype=bool),
    )
    cs = concat(
        contact_set(1, 0, [[0.1, 0, -0.1]], [1, 0, 0], alpha=0.2),
        contact_set(2, 0, [[0.0, 0.4, 0]], [0, 1, 0], alpha=0.2),
        contact_set(0, -1, [[0.0, 0, -0.1]], [0, 0, 1], alpha=0.2),
    )
    for flag, expected in ((False, [0.2, 0.2, 0.2]), (True, [1.0, 0.2, 0.2])):
        st = Stepper(rigid, lambda p, q: cs, StepSettings(DT, joint_unit_restitution=flag), joints)
        seen: list[np.ndarray] = []

        def record(c, x, u, seen=seen):
            seen.append(c.restitution.copy())
            return None, None, None

        st.backward(State(pos, orn, np.zeros((3, 3)), np.zeros((3, 3))), record)
        np.testing.assert_array_equal(seen[0], expected)


@pytest.mark.parametrize("declared", [None, False])
def test_a_hint_overrides_the_free_to_bounce_test_unless_the_body_is_pinned(declared):
    """A bounce hint on the bottom box of a two-box stack (constrained by the test) is the
    user's override and lifts it; ``free: false`` on it blocks the hint."""
    from reverse.goals.hints import free_overrides, parse_hints

    rigid, cs, state = _two_box_stack()
    items = [{"body": "bottom", "bounce": 0.15}]
    if declared is not None:
        items.append({"body": "bottom", "free": declared})
    hints = parse_hints({"hints": items}, rigid.names)
    policy = HintPolicy(hints, rigid.names, DT, 0.2)
    st = Stepper(rigid, lambda p, q: cs, StepSettings(DT), free_override=free_overrides(
        hints, rigid.names))  # fmt: skip
    back, rep = st.backward(state, policy)
    v_bottom = back.linear_velocity[0, 2]
    if declared is None:
        assert v_bottom == pytest.approx(-0.15, rel=1e-9) and rep.goals_dropped == 0
    else:
        assert abs(v_bottom) <= 1e-12 and rep.goals_dropped == 4


HALF = (0.1, 0.075, 0.05)  # the markov_block scene's block, m


DROP_DT = 1.0 / 240.0  # the scene's step, s


SPEED = 0.15  # normal goal of the separating corners, m/s (a drawn landing speed)


def _quat_to_matrix(q):
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def test_face_to_edge_drop_pivots_about_the_kept_edge():
    rigid = box_rigid(mass=1.0, half=HALF)
    centre = np.array([0.0, 0.0, HALF[2]])
    points = box_corners(centre, HALF)  # the four corners of the bottom face, z = 0
    cs = ground_contacts(points, mu=0.5, alpha=0.5)
    sep = points[:, 0] > 0  # the +x edge separates (the drop's goals), the −x edge stays

    def goals(contacts, x, u):
        k = len(contacts)
        return Goals(np.where(sep, SPEED, 0.0), np.zeros((k, 3)), np.zeros((k, 3))), None, None

    st = Stepper(rigid, lambda p, q: cs, StepSettings(DROP_DT))
    back, rep = st.backward(state1(centre), goals)
    v, w = back.linear_velocity[0], back.angular_velocity[0]
    point_velocity = v + np.cross(w, points - centre)  # pre-step velocity of each corner
    # the separating corners approached at their goal (Eq. 8 met with equality: they carry the
    # impulse); the kept ones had no normal velocity: rounding of an O(1) LCP, 1e-12 m/s
    np.testing.assert_allclose(point_velocity[sep, 2], -SPEED, rtol=1e-9)
    np.testing.assert_allclose(point_velocity[~sep, 2], 0.0, atol=1e-12)
    assert set(rep.branches.tolist()) == {"resting"}
    # a rotation about the kept edge (the y axis through x = −hx): no spin about x or z, and
    # the centre moves as ω × (centre − edge)
    # (the +x corners, 2 hx from the edge, approached at SPEED: |ω| = SPEED / 2hx)
    np.testing.assert_allclose(abs(w[1]), SPEED / (2 * HALF[0]), rtol=1e-9)
    np.testing.assert_allclose(w[[0, 2]], 0.0, atol=1e-12)
    edge = np.array([-HALF[0], 0.0, 0.0])
    np.testing.assert_allclose(v, np.cross(w, centre - edge), atol=1e-12)
    # the next step's configuration: the kept corners are lifted only by the second-order gap
    # of the linear update of the centre, h²|ω|²|r|/2 with r the corner's arm about the edge
    # (here 0.24 µm); a lift at first order, h·SPEED, would be 0.6 mm
    cfg = backward_configuration(back, rigid, DROP_DT)
    R = _quat_to_matrix(cfg.orientation[0])
    kept = cfg.position[0] + (R @ (points[~sep] - centre).T).T
    gap = kept[:, 2]
    arm = np.linalg.norm(centre - edge)
    bound = (DROP_DT * abs(w[1])) ** 2 * arm  # twice the leading term: higher orders are smaller
    assert np.all(gap > 0.0) and np.all(gap < bound), (gap, bound)
    # the gap is (hω)·|r| / (h·SPEED): the bound is 0.2% of it
    assert bound < 1e-2 * DROP_DT * SPEED


def test_restitution_blend_looks_up_pairs_as_the_per_contact_loop():
    """Pairs recorded in either order and with the world (−1), blends running and ended:
    the restitutions are those of the per-contact rule, bit for bit."""
    n, T = 6, 0.2
    rigid = RigidBodies(tuple("abcdef"), np.ones(n), np.tile(np.eye(3), (n, 1, 1)),
                        np.zeros((n, 3)), np.zeros((n, 3)))  # fmt: skip
    st = Stepper(rigid, lambda p, q: ContactSet.empty(), StepSettings(1e-3, restitution_blend=T))
    st.reverse_time = 0.5
    hits = {(0, 1): 0.45, (2, -1): 0.4, (3, 4): 0.2, (1, 5): 0.5}  # (3, 4) ended
    for (a, b), t in hits.items():
        st._elastic[int(st._pair_codes(np.array([a]), np.array([b]))[0])] = t
    rng = np.random.default_rng(0)
    body_a = np.array([1, 0, 2, 3, 5, 4, 0, 1, -1])
    body_b = np.array([0, 1, -1, 4, 1, 3, 2, 5, 2])
    k = len(body_a)
    cs = ContactSet(body_a=body_a, body_b=body_b, point=np.zeros((k, 3)),
                    normal=np.tile([0.0, 0.0, 1.0], (k, 1)), distance=np.zeros(k),
                    friction=np.ones(k), rolling=np.zeros(k), spinning=np.zeros(k),
                    restitution=rng.uniform(0, 1, k), tangent=np.tile([1.0, 0, 0], (k, 1)),
                    roll_axis=np.tile([1.0, 0, 0], (k, 1)))  # fmt: skip
    rep = StepReport()
    out = st._blend_restitution(cs, rep)
    expected = cs.restitution.copy()
    blended = 0
    for i, (a, b) in enumerate(zip(body_a.tolist(), body_b.tolist(), strict=True)):
        t_hit = hits.get((a, b), hits.get((b, a)))
        if t_hit is not None:
            w = blend_weight(st.reverse_time - t_hit, T)
            if w > 0:
                expected[i] = expected[i] + (1.0 - expected[i]) * w
                blended += 1
    assert blended == 6 and rep.blended == blended
    assert np.array_equal(out.restitution.view(np.int64), expected.view(np.int64))


# ------------------------------------------------------------------------ bouncing apart
def _slow_lift(bounce_apart: bool, alpha: float = 0.5, up: float = 0.05):
    """A ball touching the ground, moving up at ``up`` m/s (below α ε = 0.1 m/s), stepped back
    once with 1/120 s steps."""
    rigid = sphere_rigid(r=0.1)
    h = 1.0 / 120.0
    contacts = contacts_at(lambda p: ground_contacts([[p[0], p[1], 0.0]], mu=0.0, alpha=alpha))
    st = Stepper(rigid, contacts, StepSettings(h, bounce_apart=bounce_apart))
    back, rep = st.backward(state1([0, 0, 0.1], v=[0, 0, up]))
    return back, rep, h


def test_a_slow_separation_moves_on_into_the_ground_without_bounce_apart():
    back, rep, h = _slow_lift(False)
    # Eq. 7 leaves the contact without impulse: the ball kept rising before, so one more step
    # back puts it below the ground
    assert rep.bounced_apart == 0
    assert back.linear_velocity[0, 2] > 0
    assert back.position[0, 2] - h * back.linear_velocity[0, 2] < 0.1


def test_bounce_apart_makes_a_slow_separation_a_collision_at_the_cut_off():
    back, rep, h = _slow_lift(True)
    eps = StepSettings(h).epsilon
    assert rep.bounced_apart == 1
    # it approached at the cut-off ε before the step (Eq. 7 with restitution v_n / ε) ...
    assert back.linear_velocity[0, 2] == pytest.approx(-eps, rel=1e-6)
    # ... so the step before leaves it above the ground
    assert back.position[0, 2] - h * back.linear_velocity[0, 2] > 0.1


def test_bounce_apart_leaves_a_bounce_its_restitution_can_give_alone():
    # 0.3 m/s up with α = 0.5: a bounce from 0.6 m/s (≥ ε): Eq. 7 already collides
    back, rep, _ = _slow_lift(True, up=0.3)
    assert rep.bounced_apart == 0
    assert back.linear_velocity[0, 2] == pytest.approx(-0.6, rel=1e-6)


# ------------------------------------------------------------------------ separating
def _rising_fast(separate: bool):
    """A 0.1 m ball just above the ground, rising at 2 m/s, stepped back once with 1/120 s
    steps: the backward configuration puts it 16 mm into the ground (a plane contact source
    that reports the true signed distance)."""
    rigid = sphere_rigid(r=0.1)
    h = 1.0 / 120.0

    def source(p):
        c = ground_contacts([[p[0], p[1], 0.0]], mu=0.0, alpha=0.9)
        return replace(c, distance=np.array([p[2] - 0.1]))

    st = Stepper(rigid, contacts_at(source), StepSettings(h, separate=separate))
    return st.backward(state1([0, 0, 0.1001], v=[0, 0, 2.0]))


def test_separate_pushes_the_backward_configuration_out_of_the_ground():
    back, rep = _rising_fast(True)
    assert rep.separated == pytest.approx(2.0 / 120.0 - 1e-4 - SEPARATION_SLOP)
    assert rep.separation_sweeps == 1
    assert back.position[0, 2] == pytest.approx(0.1 - SEPARATION_SLOP)
    assert rep.overlap_static == pytest.approx(SEPARATION_SLOP)  # the stored state's overlap
    # the velocities are solved at the separated configuration: the bounce of restitution 0.9
    assert back.linear_velocity[0, 2] == pytest.approx(-2.0 / 0.9, rel=1e-3)


def test_without_separate_the_backward_configuration_keeps_its_overlap():
    back, rep = _rising_fast(False)
    assert rep.separated == 0.0 and rep.separation_sweeps == 0
    assert back.position[0, 2] == pytest.approx(0.1001 - 2.0 / 120.0)
    assert rep.overlap_static == pytest.approx(2.0 / 120.0 - 1e-4)


# ------------------------------------------------------------------------ capped bounces
def _bounce_back(cap: float, up: float = 3.0, alpha: float = 0.5):
    """A 0.1 m ball leaving the ground at ``up`` m/s after a bounce of restitution ``alpha``,
    stepped back once."""
    rigid = sphere_rigid(r=0.1)
    contacts = contacts_at(lambda p: ground_contacts([[p[0], p[1], 0.0]], mu=0.0, alpha=alpha))
    st = Stepper(rigid, contacts, StepSettings(DT, bounce_cap=cap))
    return st.backward(state1([0, 0, 0.1], v=[0, 0, up]))


def test_a_backward_bounce_faster_than_the_cap_approaches_at_the_cap():
    back, rep = _bounce_back(cap=4.0)
    assert rep.bounces_capped == 1
    # restitution raised to 3 / 4 for the step: the approach is the cap, not 3 / 0.5 = 6 m/s
    assert back.linear_velocity[0, 2] == pytest.approx(-4.0, rel=1e-6)


def test_a_bounce_the_cap_allows_or_an_infinite_cap_keeps_newtons_law():
    for cap in (7.0, np.inf):
        back, rep = _bounce_back(cap=cap)
        assert rep.bounces_capped == 0
        assert back.linear_velocity[0, 2] == pytest.approx(-6.0, rel=1e-6)


def test_a_separation_faster_than_the_cap_bounces_elastically():
    back, rep = _bounce_back(cap=2.0)  # already leaving at 3 m/s: restitution 1, not above
    assert rep.bounces_capped == 1
    assert back.linear_velocity[0, 2] == pytest.approx(-3.0, rel=1e-6)


def test_under_a_bounce_cap_a_slipping_contact_loses_its_friction_backward():
    rigid = sphere_rigid(r=0.1)
    contacts = contacts_at(lambda p: ground_contacts([[p[0], p[1], 0.0]], mu=0.5))
    floor = 2.0 * G * DT  # the slip gravity gives in two steps: below it a contact sticks
    for slip in (3.0, 2.0 * floor):  # above the cap, and a slow slip below it
        sliding = state1([0, 0, 0.1], v=[slip, 0, 0])
        plain = Stepper(rigid, contacts, StepSettings(DT)).backward(sliding)[0]
        capped = Stepper(rigid, contacts, StepSettings(DT, bounce_cap=2.0)).backward(sliding)[0]
        # backward, friction adds μ g h to the slide; under the cap it does not act
        assert plain.linear_velocity[0, 0] == pytest.approx(slip + 0.5 * G * DT, rel=1e-6)
        assert capped.linear_velocity[0, 0] == pytest.approx(slip, rel=1e-12)
    # a contact that sticks (a ball rolling without slip, and one slipping below the floor)
    # keeps its friction: the same step as without a cap
    for w in (30.0, 30.0 - 0.5 * floor / 0.1):
        rolling = state1([0, 0, 0.1], v=[3.0, 0, 0], w=[0, w, 0])
        a = Stepper(rigid, contacts, StepSettings(DT)).backward(rolling)[0]
        b = Stepper(rigid, contacts, StepSettings(DT, bounce_cap=2.0)).backward(rolling)[0]
        assert np.array_equal(a.linear_velocity, b.linear_velocity)
        assert np.array_equal(a.angular_velocity, b.angular_velocity)
