"""Drops that pivot (``MarkovPolicy(pivot=True)``, issue 15 item 3): a backward drop that keeps
one corner or an edge turns the body about the kept contacts, which stick (Twigg & James 2008
§3.1 Eq. 8, §3.2 Eq. 9–10), where by default a face dropped to one corner is lifted flat. Known
contacts, no PyBullet, except one subprocess call of the benchmark."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from reverse.dynamics import ContactSet, Goals, RigidBodies, quat_rotate, tangent_basis
from reverse.markov_policy import MarkovPolicy, goal_speed, pivot_axis, pivot_goals
from reverse.stepper import Stepper, StepSettings
from workbench.sim.state import State

ROOT = Path(__file__).resolve().parents[1]
G = 9.81
DT = 1.0 / 240.0
EPS = 0.2  # restitution cut-off ε, m/s
ALPHA = 0.5  # restitution: goals in [α ε, ε) = [0.1, 0.2) m/s
MU = 0.5
HALF = np.array([0.1, 0.075, 0.05])  # markov_block's half extents, m
SPEED = 0.15  # the drawn landing speed of the stub's drops, m/s (inside [α ε, ε): not clamped)


def block() -> RigidBodies:
    """The 1 kg block of ``markov_block`` under gravity."""
    hx, hy, hz = HALF
    inertia = np.diag([hy**2 + hz**2, hx**2 + hz**2, hx**2 + hy**2]) / 3.0
    return RigidBodies(("block",), np.ones(1), inertia[None], np.array([[0.0, 0.0, -G]]),
                       np.zeros((1, 3)))  # fmt: skip


def face_contacts(position: np.ndarray, orientation: np.ndarray) -> ContactSet:
    """The block's four bottom corners on the ground z = 0 (body 0 is A, the ground −1)."""
    corners = np.array([[sx * HALF[0], sy * HALF[1], -HALF[2]] for sx in (-1, 1) for sy in (-1, 1)])
    point = position[0] + np.array([quat_rotate(orientation[0], c) for c in corners])
    n = np.tile([0.0, 0.0, 1.0], (4, 1))
    t = tangent_basis(n)
    return ContactSet(
        body_a=np.zeros(4, dtype=int),
        body_b=-np.ones(4, dtype=int),
        point=point,
        normal=n,
        distance=np.zeros(4),
        friction=np.full(4, MU),
        rolling=np.zeros(4),
        spinning=np.zeros(4),
        restitution=np.full(4, ALPHA),
        tangent=t,
        roll_axis=t.copy(),
    )


class DropTo:
    """A table that always drops to ``target`` at the landing speed :data:`SPEED` (the
    interface :func:`reverse.markov_policy.sample_separation` calls)."""

    hazards = None

    def __init__(self, target: int):
        self.target = target

    def sample_target(self, state, rng, dt=None, **history):
        return self.target

    def sample_speed(self, state, target, rng):
        return SPEED


def no_hints(contacts, position, velocity):
    return Goals.zeros(len(contacts)), None, None


def at_rest() -> State:
    return State(np.array([[0.0, 0.0, HALF[2]]]), np.array([[0.0, 0.0, 0.0, 1.0]]),
                 np.zeros((1, 3)), np.zeros((1, 3)))  # fmt: skip


def drop_step(target: int, pivot: bool, seed: int = 3):
    """One backward step of the block at rest on its face with a drop to ``target``; returns
    the contacts, the goals the policy set, the state before the step and the step's report."""
    seen = {}

    def policy_and_record(contacts, position, velocity):
        out = policy(contacts, position, velocity)
        seen["goals"] = out[0]
        return out

    policy = MarkovPolicy(DropTo(target), no_hints, np.random.default_rng(seed), DT, EPS,
                          pivot=pivot)  # fmt: skip
    stepper = Stepper(block(), face_contacts, StepSettings(DT, epsilon=EPS))
    state = at_rest()
    before, rep = stepper.backward(state, policy_and_record)
    contacts = face_contacts(state.position, state.orientation)
    return contacts, seen["goals"], before, rep


def point_velocity(state: State, contacts: ContactSet) -> np.ndarray:
    """Velocity of the block's material points at the contacts, m/s."""
    r = contacts.point - state.position[0]
    return state.linear_velocity[0] + np.cross(state.angular_velocity[0], r)


# ----------------------------------------------------------------------------- goals
def test_pivot_goals_are_a_rigid_rotation_about_the_kept_corner():
    c = face_contacts(*(lambda s: (s.position, s.orientation))(at_rest()))
    separate = np.array([True, True, True, False])  # keep corner 3 (+x, +y)
    goals = Goals.zeros(4)
    mine = np.arange(4)
    pivot_goals(goals, c, mine, np.ones(4), separate, SPEED, EPS)
    kept = c.point[3]
    # kept: Eq. 8 (normal 0) and Eq. 9–10 (tangential 0) goals, rolling goal in the plane
    assert goals.normal[3] == 0.0 and np.all(goals.tangential[3] == 0.0)
    assert goals.rolling[3, 2] == 0.0 and np.linalg.norm(goals.rolling[3]) > 0.0
    # separating: the normal goals a rotation ω about the kept corner gives them (Eq. 8)
    w = goals.rolling[3]
    v = np.cross(w, c.point[:3] - kept)
    assert np.allclose(goals.normal[:3], -v[:, 2], rtol=0.0, atol=1e-15)
    # the farthest (the diagonal corner) approaches at the drawn speed, the others slower
    assert goals.normal[0] == pytest.approx(goal_speed(SPEED, ALPHA, EPS), rel=1e-14)
    assert np.all(goals.normal[:3] > 0.0) and np.all(goals.normal[:3] < EPS)
    assert np.all(goals.tangential == 0.0)


def test_the_pivot_axis_runs_along_a_kept_edge_and_lowers_the_far_side():
    kept = np.array([[0.1, -0.075, 0.0], [0.1, 0.075, 0.0]])
    far = np.array([-0.1, 0.0, 0.0])
    a = pivot_axis(kept, far, np.array([0.0, 0.0, 1.0]))
    assert np.allclose(np.abs(a), [0.0, 1.0, 0.0], atol=0.0)
    assert np.cross(a, far - kept[0])[2] < 0.0  # a positive turn about a moves far down


# ----------------------------------------------------------------------------- one step
def test_a_face_to_corner_drop_pivots_about_the_kept_corner():
    c, goals, before, rep = drop_step(target=1, pivot=True)
    assert list(rep.branches) == ["resting"] * 4
    kept = np.flatnonzero(goals.normal == 0.0)
    assert len(kept) == 1
    v = point_velocity(before, c)
    # the kept corner is at rest before the step (sticking, not lifted, not slipping): the
    # LCP solves Eq. 8–10 to round-off of O(0.1) numbers
    assert np.max(np.abs(v[kept[0]])) < 1e-12
    # the body turns about it, about an axis in the ground plane, ω ≈ 0.15 / 0.25 m = 0.6 rad/s
    w = before.angular_velocity[0]
    assert abs(w[2]) < 1e-12 and 0.5 < np.linalg.norm(w) < 0.8
    # the separating corners approach at their goals (Eq. 8 holds with equality: they carry
    # the impulses that stop the pivot in forward time), the farthest at the drawn speed
    sep = np.flatnonzero(goals.normal > 0.0)
    assert np.allclose(-v[sep, 2], goals.normal[sep], rtol=0.0, atol=1e-12)
    assert np.max(goals.normal) == pytest.approx(SPEED, rel=1e-14)


def test_without_the_pivot_the_same_drop_lifts_the_face_flat():
    # today's policy: the three separating corners share the drawn speed, and the LCP lifts the
    # whole face (the kept corner leaves with them): the "flat lift" of docs/reverse.md
    c, goals, before, _ = drop_step(target=1, pivot=False)
    v = point_velocity(before, c)
    assert np.allclose(v[:, 2], -SPEED, rtol=0.0, atol=1e-12)
    assert np.linalg.norm(before.angular_velocity[0]) < 1e-12


def test_a_face_to_edge_drop_is_the_same_pivot_either_way():
    # both separating corners are equally far from the kept edge: the pivot's goals are the
    # drawn speed at both (to round-off), as without the option
    c, g1, b1, _ = drop_step(target=2, pivot=True, seed=7)
    _, g0, b0, _ = drop_step(target=2, pivot=False, seed=7)
    assert np.array_equal(g1.normal > 0, g0.normal > 0)
    assert np.allclose(g1.normal, g0.normal, rtol=1e-14, atol=0.0)
    assert np.allclose(b1.angular_velocity, b0.angular_velocity, rtol=1e-12, atol=1e-15)
    kept = np.flatnonzero(g1.normal == 0.0)
    assert np.max(np.abs(point_velocity(b1, c)[kept])) < 1e-12


def test_off_is_the_default_policy_to_the_bit():
    # pivot=False is the policy without the option: the same draws and goals, step after step
    # (the default path of every run; the determinism and hash tests cover whole runs)
    for target in (1, 2, 0):
        _, g0, b0, _ = drop_step(target=target, pivot=False)
        policy = MarkovPolicy(DropTo(target), no_hints, np.random.default_rng(3), DT, EPS)
        stepper = Stepper(block(), face_contacts, StepSettings(DT, epsilon=EPS))
        b1, _ = stepper.backward(at_rest(), policy)
        for name in ("position", "orientation", "linear_velocity", "angular_velocity"):
            assert np.array_equal(getattr(b0, name), getattr(b1, name)), (target, name)


def test_a_drop_to_free_is_unchanged_by_the_pivot():
    _, g1, b1, _ = drop_step(target=0, pivot=True)
    _, g0, b0, _ = drop_step(target=0, pivot=False)
    assert np.array_equal(g1.normal, g0.normal)
    assert np.array_equal(b1.angular_velocity, b0.angular_velocity)
    assert np.array_equal(b1.linear_velocity, b0.linear_velocity)


# ----------------------------------------------------------------------------- benchmark
def test_the_benchmark_refuses_pivot_without_the_filter():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "plausibility.py"), "--pivot", "-n", "2"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("--pivot: needs --smc")


# ----------------------------------------------------------------------------- CLI
def test_compare_refuses_pivot_without_the_filter(tmp_path, capsys):
    from workbench.cli.main import main

    argv = ["markov", "compare", "markov_block", "--table", "markov_block_energy", "-n", "4",
            "-q", "--pivot", "-o", str(tmp_path / "r")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--pivot" in err[0] and "--smc" in err[0], err


@pytest.mark.slow  # a comparison with PyBullet throws and the filter: 16 s on a shared machine
def test_compare_with_pivot_runs_and_names_it(tmp_path):
    import json

    from workbench.cli.main import main

    argv = ["markov", "compare", "markov_block", "--table", "markov_block_energy", "-n", "2",
            "--duration", "0.1", "--seed", "3", "-q", "--smc", "--pivot", "--workers", "1",
            "-o", str(tmp_path / "r")]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads((tmp_path / "r" / "plausibility.json").read_text())
    assert doc["meta"]["command"].endswith(" --pivot")
    assert doc["counts"]["backward"] == 2
