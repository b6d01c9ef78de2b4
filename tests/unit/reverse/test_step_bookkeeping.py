"""The step's bookkeeping made array-wise (issue 17): the orientation fixed point's round-off
cycles of any period, the restitution blend's look-up of elastic pairs, the hints' time
look-up — each the same numbers, to the bit, as the plain loop it replaced."""

from __future__ import annotations

import numpy as np

from reverse.goals.hints import Hint, HintPolicy
from reverse.step.dynamics import ContactSet, RigidBodies, quat_exp, quat_multiply, world_inertia
from reverse.step.integration import FIXED_POINT_TOL, backward_configuration
from reverse.step.stepper import Stepper, StepReport, StepSettings, blend_weight
from workbench.sim.state import State


def _balls(n: int, seed: int, spin: float):
    rng = np.random.default_rng(seed)
    inertia = np.tile(4.8e-6 * np.eye(3), (n, 1, 1))  # the spelling scene's balls,
    # one moment one ulp off: exactly isotropic balls are not iterated at all
    # (reverse/step/integration.py), and these tests are about the loop's round-off cycles
    inertia[:, 0, 0] = np.nextafter(4.8e-6, 1.0)
    rigid = RigidBodies(tuple(f"b{i}" for i in range(n)), np.full(n, 0.03), inertia,
                        np.zeros((n, 3)), np.zeros((n, 3)))  # fmt: skip
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    state = State(np.zeros((n, 3)), q, np.zeros((n, 3)), rng.normal(size=(n, 3)) * spin)
    return rigid, state


def _plain_fixed_point(state, rigid, dt, max_iter=50):
    """Every body iterated together until the largest change is ≤ 1e-15 or the cap (the first
    implementation), with each body's history of iterates."""
    L = np.einsum("nij,nj->ni", world_inertia(rigid.inertia, state.orientation),
                  state.angular_velocity)  # fmt: skip
    q = quat_multiply(quat_exp(-dt * state.angular_velocity), state.orientation)
    history = [q]
    k = 0
    while k < max_iter:
        k += 1
        w = np.linalg.solve(world_inertia(rigid.inertia, q), L[..., None])[..., 0]
        q_new = quat_multiply(quat_exp(-dt * w), state.orientation)
        change = np.max(np.abs(q_new - q), axis=1)
        q = q_new
        history.append(q)
        if np.max(change) <= FIXED_POINT_TOL:
            break
    return q, w, k, change, np.array(history)


def _periods(history: np.ndarray) -> np.ndarray:
    """Each body's period: the distance from its first repeated iterate back to the copy."""
    bits = history.view(np.int64)
    out = np.zeros(bits.shape[1], dtype=int)
    for j in range(bits.shape[1]):
        seen: dict[bytes, int] = {}
        for k, row in enumerate(bits[:, j]):
            key = row.tobytes()
            if key in seen:
                out[j] = k - seen[key]
                break
            seen[key] = k
    return out


def test_round_off_cycles_of_any_period_give_the_plain_iteration_bit_for_bit():
    """Fast-spinning balls: the change wanders in round-off above 1e-15 to the cap, in cycles
    longer than 8 iterations for some; the early exit gives the plain loop's numbers."""
    rigid, state = _balls(300, seed=5, spin=200.0)
    dt = 1 / 120
    q, w, iters, change, history = _plain_fixed_point(state, rigid, dt)
    assert iters == 50 and np.max(change) > FIXED_POINT_TOL  # the case: round-off to the cap
    periods = _periods(history)
    assert periods.max() > 8  # cycles a search of periods ≤ 8 would not have seen
    cfg = backward_configuration(state, rigid, dt)
    assert cfg.iterations == iters and cfg.newton_bodies == 0 and cfg.converged
    assert np.array_equal(cfg.orientation.view(np.int64), q.view(np.int64))
    assert np.array_equal(cfg.angular_velocity.view(np.int64), w.view(np.int64))
    assert cfg.residual == np.max(change)


def test_the_fixed_point_still_stops_where_the_plain_one_converges():
    rigid, state = _balls(50, seed=6, spin=2.0)
    q, w, iters, change, _ = _plain_fixed_point(state, rigid, 1e-3)
    assert iters < 50
    cfg = backward_configuration(state, rigid, 1e-3)
    assert cfg.iterations == iters
    assert np.array_equal(cfg.orientation.view(np.int64), q.view(np.int64))
    assert np.array_equal(cfg.angular_velocity.view(np.int64), w.view(np.int64))


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


def test_active_hints_are_those_of_the_linear_scan_in_their_order():
    dt = 1 / 120
    rng = np.random.default_rng(1)
    names = tuple(f"b{i}" for i in range(40))
    times = np.round(rng.uniform(0, 0.5, 40) / dt) * dt  # on step starts, several per step
    times[:5] = [0.0, 0.0, dt / 2, 3 * dt, 0.5 * dt - 1e-18]  # boundaries and ties
    kinds = ["bounce", "slide", "roll", "free"]
    hints = [Hint(names[i], kinds[i % 4], np.array([1.0, 0, 0]), 0.1, float(t))
             for i, t in enumerate(times)]  # fmt: skip
    policy = HintPolicy(hints[::-1], names, dt, 0.2)  # not sorted by time
    for k in range(70):
        policy.reverse_time = k * dt
        t, h = policy.reverse_time, dt
        expected = [x for x in policy.hints
                    if x.kind != "free" and t - 0.5 * h <= x.at < t + 0.5 * h]  # fmt: skip
        assert [id(x) for x in policy.active()] == [id(x) for x in expected]
