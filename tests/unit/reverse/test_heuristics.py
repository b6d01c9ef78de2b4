"""The heuristics of Twigg & James §4 in the backward step (known contacts, no PyBullet): the
free-to-bounce test, the "attraction" of constrained bodies, the restitution blend after elastic
collisions and the backward damping."""

from __future__ import annotations

import numpy as np
import pytest

from reverse.step.dynamics import ContactSet, RigidBodies, tangent_basis
from reverse.step.stepper import Stepper, StepSettings, blend_weight, free_bodies
from tests.unit.reverse.test_stepper import goals_fn, sphere_rigid, state1
from workbench.sim.state import State

G = 9.81
DT = 1e-3


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
    from reverse.goals.hints import HintPolicy, free_overrides, parse_hints

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


def test_hints_files_are_read_by_the_one_spec_reader(tmp_path):
    """``load_hints`` reads through :func:`workbench.specs.read_document`: a YAML mistake names
    its line and column, a spec given as hints names the command that runs it."""
    from reverse.goals.hints import load_hints
    from workbench.errors import SceneError

    names = ("floor", "block")
    good = tmp_path / "h.yaml"
    good.write_text("hints:\n  - {body: block, bounce: 0.1, at: 0.2}\n")
    (hint,) = load_hints(good, names)
    assert (hint.body, hint.kind, hint.speed, hint.at) == ("block", "bounce", 0.1, 0.2)
    bad = tmp_path / "bad.yaml"
    bad.write_text("hints:\n  - {body: block, free: true\n")
    with pytest.raises(SceneError, match="YAML syntax error at line 3, column 1"):
        load_hints(bad, names)
    spec = tmp_path / "spec.yaml"
    spec.write_text("kind: inverse\n")
    with pytest.raises(SceneError, match="not a hints file: run it with `workbench inverse"):
        load_hints(spec, names)
    with pytest.raises(SceneError, match="file not found"):
        load_hints(tmp_path / "none.yaml", names)
