"""Batched island assembly (issue 17 item 2): :func:`reverse.step.batched.solve_islands` gives
:func:`reverse.step.dynamics.solve_island`'s numbers to the bit, island by island — velocities,
branches, LCP answers — in both directions, with goals, sliding, rolling and spinning contacts,
attraction, contacts with sleeping partners, and islands of one, two and many bodies."""

from __future__ import annotations

import numpy as np
import pytest

from reverse.step.batched import solve_islands
from reverse.step.dynamics import (
    ContactSet,
    Goals,
    RigidBodies,
    solve_island,
    tangent_basis,
    world_inertia,
)
from reverse.step.islands import find_islands


def random_problem(seed: int, n: int = 40, nc: int = 90):
    rng = np.random.default_rng(seed)
    mass = rng.uniform(0.2, 3.0, n)
    mass[rng.random(n) < 0.1] = 0.0  # a few static bodies
    inertia = np.stack([np.diag(rng.uniform(0.01, 0.2, 3)) for _ in range(n)])
    force = mass[:, None] * np.array([0.0, 0.0, -9.81]) + rng.normal(size=(n, 3)) * 0.1
    torque = rng.normal(size=(n, 3)) * 0.01
    rigid = RigidBodies(tuple(f"b{i}" for i in range(n)), mass, inertia, force, torque)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    x = rng.normal(size=(n, 3))
    # velocities: some at rest (resting/sticking rows), some fast (elastic, sliding, spinning)
    vel = rng.normal(size=(n, 6)) * rng.choice([0.0, 1e-6, 0.05, 2.0], size=(n, 1))
    vel[mass == 0] = 0.0
    # contacts: bodies 0–7 touch each other (islands of many bodies), 8–19 in pairs (2k, 2k+1),
    # the others only the world (islands of one body); half of all contacts are with the world
    a = rng.integers(0, n, nc)
    partner = np.where(a < 8, rng.integers(0, 8, nc), np.where(a < 20, a ^ 1, -1))
    b = np.where((rng.random(nc) < 0.5) | (partner == a), -1, partner)
    normal = rng.normal(size=(nc, 3))
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    t1 = tangent_basis(normal)
    contacts = ContactSet(
        body_a=a,
        body_b=b,
        point=x[a] + rng.normal(size=(nc, 3)) * 0.1,
        normal=normal,
        distance=np.zeros(nc),
        friction=rng.choice([0.0, 0.1, 0.5], nc),
        rolling=rng.choice([0.0, 0.002, 0.01], nc),
        spinning=rng.choice([0.0, 0.001], nc),
        restitution=rng.choice([0.0, 0.5, 0.9], nc),
        tangent=t1,
        roll_axis=t1.copy(),
    )
    goals = Goals(
        np.where(rng.random(nc) < 0.3, rng.uniform(0, 0.5, nc), 0.0),
        rng.normal(size=(nc, 3)) * (rng.random((nc, 1)) < 0.3),
        rng.normal(size=(nc, 3)) * (rng.random((nc, 1)) < 0.2),
    )
    attract = rng.random(nc) < 0.2
    return rigid, x, q, vel, contacts, goals, attract, rng


def contact_islands(n, islands, contacts):
    """Each contact's island (``c_island``; −1 for none) and the islands of its two bodies
    (``la``, ``lb``; −1 for the world or a body in no island), as the stepper labels them."""
    label = np.full(n, -1)
    for k, bodies in enumerate(islands):
        label[bodies] = k
    a, b = contacts.body_a, contacts.body_b
    la = np.where(a >= 0, label[np.maximum(a, 0)], -1)
    lb = np.where(b >= 0, label[np.maximum(b, 0)], -1)
    return la, lb, np.where(la >= 0, la, lb)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("direction", ["backward", "forward"])
def test_batched_islands_are_bit_identical_to_one_by_one(seed, direction):
    rigid, x, q, vel, contacts, goals, attract, rng = random_problem(seed)
    n = len(rigid.mass)
    moving = rigid.moving
    awake = moving & (rng.random(n) < 0.85)  # some sleeping bodies act as the world
    pairs = np.column_stack([contacts.body_a, contacts.body_b])
    islands = find_islands(n, awake, pairs)
    la, lb, c_island = contact_islands(n, islands, contacts)
    sets = [np.flatnonzero(c_island == k) for k in range(len(islands))]
    keep = [k for k in range(len(islands)) if len(sets[k])]
    Iw = world_inertia(rigid.inertia, q)
    att = attract if direction == "backward" else None
    g = goals if direction == "backward" else Goals.zeros(len(contacts))
    common = dict(direction=direction, rigid=rigid, position=x, inertia_world=Iw, velocity=vel,
                  dt=1e-3, epsilon=0.2, delta=1e-4, delta_angular=1e-4)  # fmt: skip
    batched = solve_islands(
        islands=[islands[k] for k in keep],
        contact_sets=[sets[k] for k in keep],
        contacts=contacts,
        in_island_a=la == c_island,
        in_island_b=lb == c_island,
        goals=g,
        attract=att,
        **common,
    )
    sizes = {len(islands[k]) for k in keep}
    assert 1 in sizes and 2 in sizes and max(sizes) >= 3  # the case mix the test is about
    rows = 0
    for k, sol in zip(keep, batched, strict=True):
        sel = sets[k]
        sub = contacts.subset(sel)
        sub = ContactSet(**{**sub.__dict__, "body_a": np.where(la[sel] == k, sub.body_a, -1),
                            "body_b": np.where(lb[sel] == k, sub.body_b, -1)})  # fmt: skip
        ref = solve_island(
            bodies=islands[k],
            contacts=sub,
            goals=Goals(g.normal[sel], g.tangential[sel], g.rolling[sel]),
            attract=None if att is None else att[sel],
            **common,
        )
        assert np.array_equal(sol.velocity, ref.velocity), k
        assert sol.branch.tolist() == ref.branch.tolist()
        assert sol.n_rows == ref.n_rows
        assert (sol.lcp is None) == (ref.lcp is None)
        if ref.lcp is not None:
            assert np.array_equal(sol.lcp.z, ref.lcp.z)
            assert sol.lcp.status == ref.lcp.status
            rows += ref.n_rows
    assert rows > 0


def test_no_islands():
    rigid, x, q, vel, contacts, goals, attract, _ = random_problem(0)
    assert solve_islands(direction="backward", islands=[], contact_sets=[], contacts=contacts,
                         in_island_a=np.zeros(len(contacts), bool),
                         in_island_b=np.zeros(len(contacts), bool), rigid=rigid, position=x,
                         inertia_world=world_inertia(rigid.inertia, q), velocity=vel, dt=1e-3,
                         goals=goals) == []  # fmt: skip


def _balls_on_ground(n=30, seed=0):
    """``n`` balls (radius 0.1 m) on the ground z = 0, some pairs touching, moving in random
    directions: many small islands, sliding, rolling and bouncing contacts."""
    from reverse.step.stepper import Stepper, StepSettings
    from workbench.sim.state import State

    rng = np.random.default_rng(seed)
    r = 0.1
    mass = np.full(n, 0.5)
    inertia = np.tile(0.4 * 0.5 * r * r * np.eye(3), (n, 1, 1))
    rigid = RigidBodies(tuple(f"b{i}" for i in range(n)), mass, inertia,
                        mass[:, None] * np.array([0.0, 0.0, -9.81]), np.zeros((n, 3)))  # fmt: skip
    x = np.zeros((n, 3))
    x[:, 0] = np.arange(n) * 0.25
    x[1::3, 0] = x[0::3, 0][: len(x[1::3])] + 2 * r  # every third pair touches
    x[:, 2] = r

    def contacts(pos, orn):
        a_list, b_list, pts, nrm = [], [], [], []
        for i in range(n):
            if pos[i, 2] <= r + 1e-9:  # on the ground
                a_list.append(i), b_list.append(-1)
                pts.append([pos[i, 0], pos[i, 1], 0.0]), nrm.append([0.0, 0.0, 1.0])
            for j in range(i + 1, n):
                d = pos[i] - pos[j]
                if np.linalg.norm(d) <= 2 * r + 1e-9:
                    a_list.append(i), b_list.append(j)
                    pts.append(0.5 * (pos[i] + pos[j])), nrm.append(d / np.linalg.norm(d))
        k = len(a_list)
        normal = np.array(nrm, dtype=float).reshape(k, 3)
        t1 = tangent_basis(normal)
        return ContactSet(np.array(a_list, dtype=int), np.array(b_list, dtype=int),
                          np.array(pts, dtype=float).reshape(k, 3), normal, np.zeros(k),
                          np.full(k, 0.3), np.full(k, 0.002), np.full(k, 0.001), np.full(k, 0.8),
                          t1, t1.copy())  # fmt: skip

    v = np.zeros((n, 3))
    v[:, :2] = rng.normal(size=(n, 2)) * 0.5
    w = rng.normal(size=(n, 3)) * 3.0
    state = State(x, np.tile([0.0, 0.0, 0.0, 1.0], (n, 1)), v, w)
    return Stepper(rigid, contacts, StepSettings(1e-3)), state


def test_the_stepper_batched_and_one_by_one_give_the_same_states(monkeypatch):
    import reverse.step.stepper as stepper_module

    runs = []
    for limit in (0, 10**9):  # everything batched; nothing batched
        monkeypatch.setattr(stepper_module, "BATCH_MIN_CONTACTS", limit)
        st, s = _balls_on_ground()
        islands = 0
        for _ in range(5):
            s, rep = st.backward(s)
            islands += len(rep.islands)
            b, _ = st.forward(s, contacts=rep.contact_set)
        runs.append((s, b, islands))
    (s0, b0, n0), (s1, b1, n1) = runs
    assert n0 == n1 > 20
    for name in ("position", "orientation", "linear_velocity", "angular_velocity"):
        for x, y in ((s0, s1), (b0, b1)):
            a1, a2 = getattr(x, name), getattr(y, name)
            assert np.array_equal(a1.view(np.int64), a2.view(np.int64)), name
