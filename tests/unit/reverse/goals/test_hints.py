"""Hints (:mod:`reverse.goals.hints`): the one spec reader's errors, the time look-up of active
hints (the linear scan's, in its order), the goals of :class:`~reverse.goals.hints.HintPolicy`
(bit-identical to the loop over pairs they replaced, kept here as the reference), and hints
distributions (drawn in their ranges, seeded, located errors; refused by a single run).
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.goals.hints import MIN_ROLL_ARM, Hint, HintPolicy, load_hints, parse_hint_distribution
from reverse.step.dynamics import (
    ContactSet,
    Goals,
    tangent_basis,
)
from workbench.errors import SceneError


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


# ----------------------------------------------------------------------------- hints distributions
BODIES = ("ground", "block")


def test_hint_distribution_draws_in_its_ranges_and_is_seeded():
    data = {
        "hints": [
            {"body": "block", "slide": {"direction": "random", "speed": {"uniform": [0.0, 1.5]}}},
            {"body": "block", "bounce": {"uniform": [0.1, 0.2]}, "at": {"uniform": [0.0, 0.5]}},
        ]
    }
    dist = parse_hint_distribution(data, BODIES)
    assert dist.is_random
    draws = [dist.draw(np.random.default_rng(k), up=(0, 0, 1)) for k in range(200)]
    slides = np.array([d[0].speed for d in draws])
    dirs = np.array([d[0].direction for d in draws])
    assert 0 <= slides.min() and slides.max() <= 1.5 and slides.std() > 0.3
    np.testing.assert_allclose(dirs[:, 2], 0.0, atol=1e-15)  # horizontal
    np.testing.assert_allclose(np.linalg.norm(dirs, axis=1), 1.0)
    assert abs(np.mean(np.arctan2(dirs[:, 1], dirs[:, 0]) > 0) - 0.5) < 0.12
    bounce = np.array([d[1].speed for d in draws])
    at = np.array([d[1].at for d in draws])
    assert 0.1 <= bounce.min() and bounce.max() <= 0.2 and 0 <= at.min() and at.max() <= 0.5
    a = dist.draw(np.random.default_rng(5))
    b = dist.draw(np.random.default_rng(5))
    assert [(h.speed, h.at, tuple(h.direction)) for h in a] == [
        (h.speed, h.at, tuple(h.direction)) for h in b
    ]
    fixed = parse_hint_distribution({"hints": [{"body": "block", "bounce": 0.1}]}, BODIES)
    assert not fixed.is_random


@pytest.mark.parametrize(
    "item, words",
    [
        ({"body": "block", "bounce": {"uniform": [0.2, 0.1]}}, "low ≤ high"),
        ({"body": "block", "bounce": {"normal": [0.2, 0.1]}}, r"or \{uniform: \[low, high\]\}"),
        ({"body": "block", "bounce": {"uniform": [0.1, 1e9]}}, "at most"),
        ({"body": "block", "slide": {"direction": "up", "speed": 1.0}}, "3 numbers"),
        # an int beyond float's range: was a TypeError traceback (issue 39's fuzz suite)
        ({"body": "block", "bounce": 10**400}, "expected a number"),
        ({"body": "block", "bounce": 10**30}, "at most"),
        ({"body": "block", "bounce": float("nan")}, "expected a number"),
    ],
)
def test_bad_distributions_are_located_errors(item, words):
    with pytest.raises(SceneError, match=words):
        parse_hint_distribution({"hints": [item]}, BODIES)


def test_a_single_run_refuses_drawn_hints(tmp_path):
    f = tmp_path / "d.hints.yaml"
    f.write_text("hints:\n  - {body: block, bounce: {uniform: [0.1, 0.2]}}\n", encoding="utf-8")
    with pytest.raises(SceneError, match="needs --samples"):
        load_hints(f, BODIES)


# ----------------------------------------------------------------------------- --hints, resolved
def test_hints_are_resolved_one_way_for_single_and_sampled_runs():
    from reverse.goals.hints import resolve_hints
    from reverse.goals.markov import load_model
    from tests.conftest import REPO
    from workbench.scene.loader import load_scene

    path = REPO / "scenes" / "markov_block.yaml"
    scene = load_scene(path)
    slide = {"body": "block", "slide": {"direction": "random", "speed": {"uniform": [0, 1]}}}
    assert resolve_hints(None, path, scene, sampled=True).hints == []
    fixed = {"hints": [{"body": "block", "slide": {"direction": [1, 0, 0], "speed": 1.0}}]}
    one = resolve_hints(fixed, path, scene, sampled=True)
    assert not one.draws and one.hints[0].speed == 1.0  # nothing drawn: every run's hints
    with pytest.raises(SceneError, match="needs --samples"):
        resolve_hints({"hints": [slide]}, path, scene, sampled=False)
    rest = {"hints": [{**slide, "at": "rest"}]}
    with pytest.raises(SceneError, match="at: rest needs a semi-Markov table"):
        resolve_hints(
            rest, path, scene, sampled=True, table=load_model(REPO / "data" / "markov_block.json")
        )
    semi = load_model(REPO / "data" / "markov_block_semi.json")
    drawn = resolve_hints(rest, path, scene, sampled=True, table=semi)
    assert drawn.draws and drawn.rest is not None and drawn.hints[0].at > 0
