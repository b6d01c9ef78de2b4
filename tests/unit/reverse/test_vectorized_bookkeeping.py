"""Issue 17, "LO" spelling scene: per-contact and per-body Python work replaced by array code —
the hints' goals (:class:`reverse.goals.hints.HintPolicy`), the quaternion product and rotation
matrices (:mod:`reverse.step.dynamics`) — with the same numbers to the bit as the loops and stacked
forms they replaced (kept here as the references)."""

from __future__ import annotations

import numpy as np
import pytest

from reverse.goals.hints import MIN_ROLL_ARM, Hint, HintPolicy
from reverse.step.dynamics import ContactSet, Goals, quat_multiply, rotation_matrix, tangent_basis

NAMES = tuple(f"b{i}" for i in range(12))


def reference_goals(policy: HintPolicy, contacts: ContactSet, position):
    """The loop over (hint, contact) pairs that ``HintPolicy.__call__`` was before issue 17."""
    k = len(contacts)
    goals = Goals.zeros(k)
    goals.explicit = np.zeros(k, dtype=bool)
    pref = np.zeros((k, 3))
    pref_roll = np.zeros((k, 3))
    body_a, body_b = contacts.body_a, contacts.body_b
    for hint in policy.active():
        j = policy.index[hint.body]
        for i in np.flatnonzero((body_a == j) | (body_b == j)).tolist():
            sign = 1.0 if body_a[i] == j else -1.0
            n = contacts.normal[i] * sign
            r = np.linalg.norm(contacts.point[i] - position[j])
            if hint.kind == "roll" and r < MIN_ROLL_ARM:
                continue
            goals.explicit[i] = True
            if hint.kind == "bounce":
                speed = hint.speed
                if contacts.restitution[i] > 0 and speed >= policy.epsilon:
                    speed = np.nextafter(policy.epsilon, 0.0)
                goals.normal[i] = speed
            elif hint.kind == "slide":
                v = hint.speed * (hint.direction - (hint.direction @ n) * n)
                goals.tangential[i] = sign * v
                pref[i] = v
            else:
                v = hint.speed * (hint.direction - (hint.direction @ n) * n)
                w = np.cross(n, v) / r
                goals.rolling[i] = sign * w
                pref_roll[i] = w
    return goals, pref, pref_roll


def random_case(rng):
    nc = int(rng.integers(0, 30))
    a = rng.integers(0, 12, nc)
    b = np.where(rng.random(nc) < 0.5, -1, rng.integers(0, 12, nc))
    normal = rng.normal(size=(nc, 3))
    normal /= np.maximum(np.linalg.norm(normal, axis=1, keepdims=True), 1e-300)
    position = rng.normal(size=(12, 3))
    point = position[a] + rng.normal(size=(nc, 3)) * 0.1
    if nc > 2:
        point[0] = position[a[0]]  # a contact at the centre of mass: no rolling goal
    t1 = tangent_basis(normal) if nc else np.zeros((0, 3))
    contacts = ContactSet(a, b, point, normal, np.zeros(nc), np.full(nc, 0.3),
                          np.full(nc, 0.01), np.zeros(nc), rng.choice([0.0, 0.9], nc), t1,
                          t1.copy())  # fmt: skip
    hints = []
    for _ in range(int(rng.integers(1, 8))):  # several hints often share a body (overwrites)
        kind = str(rng.choice(["slide", "bounce", "roll", "free"]))
        d = rng.normal(size=3)
        d /= np.linalg.norm(d)
        direction = d if kind in ("slide", "roll") else np.zeros(3)
        speed, at = float(rng.choice([0.1, 0.25, 1.3])), float(rng.choice([0.0, 0.01]))
        hints.append(Hint(str(rng.choice(NAMES)), kind, direction, speed, at))
    return contacts, position, hints


def test_hint_goals_are_bit_identical_to_the_loop_over_pairs():
    rng = np.random.default_rng(17)
    acted = 0
    for _ in range(300):
        contacts, position, hints = random_case(rng)
        policy = HintPolicy(hints, NAMES, 0.01, 0.2)
        got = policy(contacts, position, np.zeros((12, 6)))
        ref = reference_goals(policy, contacts, position)
        (g, p, pr), (g0, p0, pr0) = got, ref
        pairs = [(g.normal, g0.normal), (g.tangential, g0.tangential), (g.rolling, g0.rolling),
                 (g.explicit, g0.explicit), (p, p0), (pr, pr0)]  # fmt: skip
        for x, y in pairs:
            assert x.shape == y.shape and x.dtype == y.dtype
            assert np.array_equal(x.view(np.uint8), y.view(np.uint8))
        acted += int(g0.explicit.sum())
    assert acted > 500  # the cases exercise many hinted contacts


@pytest.mark.parametrize("shape", [(4,), (7, 4), (3, 5, 4), (0, 4)])
def test_quaternion_product_and_rotation_matrix_match_the_stacked_forms(shape):
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=shape), rng.normal(size=shape)
    ax, ay, az, aw = np.moveaxis(a, -1, 0)
    bx, by, bz, bw = np.moveaxis(b, -1, 0)
    product = np.stack(
        [aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
         aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz],
        axis=-1,
    )  # fmt: skip
    x, y, z, w = ax, ay, az, aw
    R = np.stack(
        [np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
         np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
         np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)],
        axis=-2,
    )  # fmt: skip
    got_p, got_r = quat_multiply(a, b), rotation_matrix(a)
    assert got_p.shape == product.shape and got_r.shape == R.shape
    assert np.array_equal(got_p.view(np.int64), product.view(np.int64))
    assert np.array_equal(got_r.view(np.int64), R.view(np.int64))
    # broadcasting one quaternion against many, as the stepper does
    one = rng.normal(size=4)
    many = rng.normal(size=(5, 4))
    assert np.array_equal(quat_multiply(one, many), np.stack([quat_multiply(one, m) for m in many]))


def test_a_failed_batch_island_is_retried_as_one_by_one(monkeypatch):
    """The stepper writes the batch islands' answers at once and sends an island whose LCP
    failed to the frictionless retry: the states and island reports are those of solving every
    island one by one, failures and retries included."""
    import reverse.step.stepper as stepper_module
    from reverse.lcp.solve import LCPResult
    from reverse.lcp.solve import solve_lcp as real_solve

    from .test_batched import _balls_on_ground

    def friction_fails(M, q, **kw):
        if len(q) > 2 and not np.allclose(M, M.T):  # friction rows make M unsymmetric
            n = len(q)
            return LCPResult(np.full(n, 1e9), q.copy(), "ray", 7, np.zeros(0, int), 1e9, "")
        return real_solve(M, q, **kw)

    monkeypatch.setattr("reverse.step.dynamics.solve_lcp", friction_fails)
    runs = []
    for limit in (0, 10**9):  # everything batched; nothing batched
        monkeypatch.setattr(stepper_module, "BATCH_MIN_CONTACTS", limit)
        st, s = _balls_on_ground()
        reports = []
        for _ in range(4):
            s, rep = st.backward(s)
            reports += [(r.n_bodies, r.n_contacts, r.n_rows, r.status, r.pivots, r.fallback,
                         r.residual, r.verified) for r in rep.islands]  # fmt: skip
        runs.append((s, reports))
    (s0, r0), (s1, r1) = runs
    assert r0 == r1
    assert sum(r[3] == "ray" for r in r0) >= 5  # failures happened, and were retried
    assert all(r[5].endswith("frictionless retry solved") for r in r0 if r[3] == "ray")
    for name in ("position", "orientation", "linear_velocity", "angular_velocity"):
        a, b = getattr(s0, name), getattr(s1, name)
        assert np.array_equal(a.view(np.int64), b.view(np.int64)), name
