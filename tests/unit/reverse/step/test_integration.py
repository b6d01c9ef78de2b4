"""The backward orientation solve (issue 15 item 0, :mod:`reverse.step.integration`): torque-free
flight conserves angular momentum at any ``h|ω|``, a solve that does not converge ends a run
with a status that is not ``ok``, and the fixed point's results are unchanged where it
converges.
:func:`~reverse.step.integration.backward_configuration`, which no longer iterates static bodies
and computes ``L`` for the moving ones only, returns what iterating every body of the scene until
the largest change is within the tolerance returns, to the bit; the fixed point's round-off
cycles of any period give the plain iteration's numbers (issue 17).
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.runs.run import run_reverse
from reverse.step.dynamics import ContactSet, RigidBodies, quat_exp, quat_multiply, world_inertia
from reverse.step.integration import FIXED_POINT_TOL, NEWTON_TOL, backward_configuration
from reverse.step.stepper import Stepper, StepSettings
from workbench.scene.model import scene_from_dict
from workbench.sim.state import State

#: A thin plank, 1 × 0.1 × 0.02 m, 1 kg: principal moments 1 : 120 : 121 (the issue's case).
PLANK = (1.0, 0.1, 0.02)


def plank_rigid(mass=1.0):
    a, b, c = PLANK
    inertia = mass / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    return RigidBodies(("plank",), np.array([mass]), inertia[None], np.zeros((1, 3)),
                       np.zeros((1, 3)))  # fmt: skip


def momentum(rigid, s: State) -> np.ndarray:
    return world_inertia(rigid.inertia, s.orientation)[0] @ s.angular_velocity[0]


def spinning(w_dt: float, dt: float, seed: int) -> State:
    """A random orientation and a random spin axis with ``|ω| dt = w_dt``."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=3)
    w *= w_dt / dt / np.linalg.norm(w)
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    return State(np.zeros((1, 3)), q[None], np.zeros((1, 3)), w[None])


def free_stepper(rigid, dt, **kw):
    return Stepper(rigid, lambda p, q: ContactSet.empty(), StepSettings(dt, **kw))


@pytest.mark.parametrize("w_dt", [0.1, 0.5, 1.0, 1.5, 2.0])
def test_torque_free_plank_conserves_angular_momentum_backward(w_dt):
    """Issue 15: at ``h|ω|`` ≳ 0.5 rad the fixed point alone returned an iterate whose ``ω``
    belonged to the previous one (angular momentum 0.239 → 3.0 → 62 → … → 2.7e57)."""
    rigid, dt = plank_rigid(), 0.01
    for seed in range(3):
        s = spinning(w_dt, dt, seed)
        L0 = momentum(rigid, s)
        st = free_stepper(rigid, dt)
        for _ in range(40):
            prev = s
            s, rep = st.backward(s)
            assert rep.orientation_converged
            assert rep.orientation_residual <= NEWTON_TOL
            L = momentum(rigid, s)
            assert np.linalg.norm(L - L0) <= 1e-9 * np.linalg.norm(L0)
        # the forward step from the last state returns to the one before it: the backward
        # orientation solves the forward step's equation
        fwd, _ = st.forward(s)
        sign = np.sign(np.dot(fwd.orientation[0], prev.orientation[0]))
        assert np.max(np.abs(sign * fwd.orientation - prev.orientation)) <= 1e-13
        assert np.max(np.abs(fwd.angular_velocity - prev.angular_velocity)) <= 1e-9 * (w_dt / dt)


def test_newton_is_used_only_where_the_fixed_point_does_not_converge():
    rigid, dt = plank_rigid(), 0.01
    slow = backward_configuration(spinning(0.1, dt, 0), rigid, dt)
    assert slow.converged and slow.newton_bodies == 0 and slow.iterations < 50
    fast = backward_configuration(spinning(2.0, dt, 0), rigid, dt)
    assert fast.converged and fast.newton_bodies == 1 and fast.iterations > 50
    assert fast.residual <= NEWTON_TOL


def reference_backward_configuration(state, rigid, dt, max_iter=50):
    """The first implementation (issue 15's reference): every body iterated, static ones too,
    until the largest change of any body is within :data:`FIXED_POINT_TOL` or the cap. Results
    must be unchanged where it converges; returns ``(x, q, w, iterations, last change)``."""
    moving = rigid.moving
    x = state.position - dt * state.linear_velocity * moving[:, None]
    q_plus = state.orientation
    L = np.einsum("nij,nj->ni", world_inertia(rigid.inertia, q_plus), state.angular_velocity)
    w = state.angular_velocity * moving[:, None]
    q = quat_multiply(quat_exp(-dt * w), q_plus)
    iters, change = 0, 0.0
    for _ in range(max_iter):
        iters += 1
        Iw = world_inertia(rigid.inertia, q)
        w_new = np.zeros_like(w)
        w_new[moving] = np.linalg.solve(Iw[moving], L[moving][..., None])[..., 0]
        q_new = quat_multiply(quat_exp(-dt * w_new), q_plus)
        change = float(np.max(np.abs(q_new - q))) if len(q) else 0.0
        q, w = q_new, w_new
        if change <= FIXED_POINT_TOL:
            break
    return x, q, w, iters, change


def test_results_are_bit_identical_where_the_fixed_point_converges():
    rng = np.random.default_rng(7)
    n = 20
    inertia = np.stack([np.diag(rng.uniform(0.1, 1.0, 3)) for _ in range(n)])
    mass = rng.uniform(0.5, 2.0, n)
    mass[3] = 0.0  # a static body
    rigid = RigidBodies(tuple(f"b{i}" for i in range(n)), mass, inertia, np.zeros((n, 3)),
                        np.zeros((n, 3)))  # fmt: skip
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    s = State(rng.normal(size=(n, 3)), q, rng.normal(size=(n, 3)), rng.normal(size=(n, 3)) * 30)
    new = backward_configuration(s, rigid, 1e-3)
    old = reference_backward_configuration(s, rigid, 1e-3)[:4]
    assert new.converged and new.newton_bodies == 0
    for a, b in zip(new[:4], old, strict=True):
        assert np.array_equal(a, b)


def _plank_scene(spin: float):
    """A plank in free flight (the final state of a reverse run), spinning about a tilted axis."""
    return scene_from_dict(
        {
            "gravity": [0.0, 0.0, -9.81],
            "settings": {"dt": 0.01, "duration": 0.1},
            "bodies": [
                {
                    "name": "plank",
                    "shape": {"type": "box", "half_extents": [0.5 * e for e in PLANK]},
                    "mass": 1.0,
                    "position": [0.0, 0.0, 5.0],
                    "angular_velocity": list(spin * np.array([0.3, 1.0, 0.5])),
                }
            ],
        },
        source="<plank>",
    )


def test_a_fast_spinning_plank_reverse_run_is_ok_and_conserves_momentum():
    scene = _plank_scene(100.0)  # |ω| dt ≈ 1.16 rad per step: beyond the fixed point's reach
    res = run_reverse(scene, duration=0.1)
    traj = res.trajectory
    # the numerics hold (no stop, no energy gained, no overlap); the audit only says that nothing
    # in the scene threw or spun the plank
    assert traj.status in ("ok", "implausible")
    assert all("reaches a sp" in p for p in res.audit.problems), res.audit.problems
    it = traj.diagnostics["orientation_iterations"]
    assert np.all(it[:-1] > 50) and it[-1] == 0  # Newton every step; none into the scene's state
    assert np.all(traj.diagnostics["orientation_residual"] <= NEWTON_TOL)
    L = [
        world_inertia(np.asarray(traj.params["plank/inertia"])[None], traj.orientation[k])[0]
        @ traj.angular_velocity[k, 0]
        for k in range(traj.n_times)
    ]
    assert np.max(np.abs(np.array(L) - L[-1])) <= 1e-9 * np.linalg.norm(L[-1])


def test_a_forced_non_convergence_ends_the_run_not_ok():
    scene = _plank_scene(100.0)
    res = run_reverse(scene, duration=0.1, settings=StepSettings(0.01, max_fixed_point=1))
    traj = res.trajectory
    assert traj.status == "unconverged"
    assert "orientation solve" in traj.message and "did not converge" in traj.message
    assert traj.n_times == 1  # only the scene's state: the unconverged step is not kept


def test_non_strict_stops_at_round_off_for_fast_spinning_balls():
    """Balls spinning fast: the strict fixed point's change wanders in round-off just above
    1e-15 and runs to the cap; ``strict=False`` stops at NEWTON_TOL, and both conserve L.
    (Exactly isotropic balls are not iterated at all: one moment one ulp off keeps them in the
    loop, whose round-off is the same.)"""
    rng = np.random.default_rng(3)
    n = 400
    inertia = np.tile(4.8e-6 * np.eye(3), (n, 1, 1))
    inertia[:, 0, 0] = np.nextafter(4.8e-6, 1.0)
    rigid = RigidBodies(tuple(f"b{i}" for i in range(n)), np.full(n, 0.03), inertia,
                        np.zeros((n, 3)), np.zeros((n, 3)))  # fmt: skip
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    s = State(np.zeros((n, 3)), q, np.zeros((n, 3)), rng.normal(size=(n, 3)) * 150.0)
    strict = backward_configuration(s, rigid, 1 / 120)
    loose = backward_configuration(s, rigid, 1 / 120, strict=False)
    assert strict.converged and loose.converged
    assert loose.iterations < strict.iterations
    assert loose.residual <= NEWTON_TOL
    L0 = np.einsum("nij,nj->ni", world_inertia(rigid.inertia, q), s.angular_velocity)
    for cfg in (strict, loose):
        L = np.einsum("nij,nj->ni", world_inertia(rigid.inertia, cfg.orientation),
                      cfg.angular_velocity)  # fmt: skip
        assert np.max(np.abs(L - L0)) <= 1e-12 * np.max(np.abs(L0))


def test_isotropic_bodies_are_solved_explicitly():
    """Balls (I_body = c·1): no iteration — ``ω_m = ω⁺`` and ``q⁻ = exp(−h ω⁺) ⊗ q⁺`` to the
    bit, so ``I_w(q⁻) ω_m`` is ``L⁺`` exactly at any ``h|ω|``; the iterated answer (the first
    implementation's loop) is within round-off of it; a body one ulp from isotropic, and an
    anisotropic one beside the balls, are still iterated to the loop's tolerance."""
    rng = np.random.default_rng(5)
    n, h, c = 60, 1 / 120, 4.8e-6
    inertia = np.tile(c * np.eye(3), (n, 1, 1))
    inertia[-2, 0, 0] = np.nextafter(c, 1.0)  # one ulp off: a (barely) precessing body
    inertia[-1] = np.diag([1e-6, 3e-6, 4e-6])  # a box's
    rigid = RigidBodies(tuple(f"b{i}" for i in range(n)), np.full(n, 0.03), inertia,
                        np.zeros((n, 3)), np.zeros((n, 3)))  # fmt: skip
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w = rng.normal(size=(n, 3)) * 150.0  # h|ω| up to ≈ 3 rad
    s = State(np.zeros((n, 3)), q, np.zeros((n, 3)), w)
    cfg = backward_configuration(s, rigid, h)
    balls = slice(0, n - 2)
    assert cfg.converged
    assert np.array_equal(cfg.angular_velocity[balls], w[balls])
    assert np.array_equal(cfg.orientation[balls], quat_multiply(quat_exp(-h * w[balls]), q[balls]))
    ref_q = reference_backward_configuration(s, rigid, h)[1]
    # the loop's iterates of a ball wander in round-off around q₀: a few ulps of a unit
    # quaternion's components (2.2e-16 each), bounded here by 1e-14
    # (the box at h|ω| ≈ 3 rad is left out: that loop does not converge, Newton solves it)
    assert np.max(np.abs(cfg.orientation[: n - 1] - ref_q[: n - 1])) <= 1e-14
    # the two iterated bodies meet the fixed point's own tolerance: q = G(q) within it
    for j in (n - 2, n - 1):
        Iw = world_inertia(inertia[j][None], cfg.orientation[j][None])[0]
        L = world_inertia(inertia[j][None], q[j][None])[0] @ w[j]
        g = quat_multiply(quat_exp(-h * np.linalg.solve(Iw, L))[None], q[j][None])[0]
        assert np.max(np.abs(g - cfg.orientation[j])) <= NEWTON_TOL


def _random_scene(rng, n, static_share, spin):
    moving = rng.random(n) >= static_share
    mass = np.where(moving, rng.uniform(0.1, 3.0, n), 0.0)
    inertia = np.zeros((n, 3, 3))
    for j in range(n):
        if rng.random() < 0.5:  # a sphere: isotropic (the spelling balls)
            inertia[j] = np.eye(3) * rng.uniform(1e-4, 1e-2)
        else:  # a box: anisotropic, turned
            d = np.diag(rng.uniform(1e-3, 1e-1, 3))
            R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
            inertia[j] = R @ d @ R.T
    rigid = RigidBodies(
        tuple(f"b{j}" for j in range(n)),
        mass,
        inertia,
        np.zeros((n, 3)),
        np.zeros((n, 3)),
    )
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w = rng.normal(size=(n, 3)) * spin
    w[rng.random(n) < 0.3] = 0.0  # bodies at rest
    w[~moving] = rng.normal(size=(int((~moving).sum()), 3))  # ignored for static bodies
    state = State(rng.normal(size=(n, 3)), q, rng.normal(size=(n, 3)), w)
    return rigid, state


@pytest.mark.parametrize("seed", range(6))
def test_backward_configuration_is_the_plain_loop(seed):
    rng = np.random.default_rng(100 + seed)
    dt = 1.0 / 120.0
    checked = 0
    for n, static_share, spin in ((1, 0.0, 5.0), (7, 0.5, 20.0), (40, 0.2, 60.0), (90, 0.9, 5.0)):
        rigid, state = _random_scene(rng, n, static_share, spin)
        # the spheres one ulp from isotropic, so that every moving body is iterated: exactly
        # isotropic ones are solved explicitly (test_isotropic_bodies_are_solved_explicitly),
        # the loop's answer to round-off
        inertia = rigid.inertia.copy()
        iso = np.all(inertia == inertia[:, :1, :1] * np.eye(3), axis=(1, 2))
        inertia[iso, 0, 0] = np.nextafter(inertia[iso, 0, 0], 1.0)
        rigid = RigidBodies(rigid.names, rigid.mass, inertia, rigid.force, rigid.torque)
        got = backward_configuration(state, rigid, dt)
        x, q, w, iters, residual = reference_backward_configuration(state, rigid, dt)
        if not got.converged or got.newton_bodies:
            continue  # Newton took over: not the plain loop's answer (tested elsewhere)
        checked += 1
        assert got.position.tobytes() == x.tobytes()
        assert got.orientation.tobytes() == q.tobytes()
        assert got.angular_velocity.tobytes() == w.tobytes()
        assert got.iterations == iters
        assert got.residual == residual
    assert checked >= 2  # the scenes above converge (a test that cannot fail is no test)


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
