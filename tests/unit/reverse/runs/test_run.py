"""Reverse runs (:mod:`reverse.runs.run`): the preallocated records give the trajectory and kinetic
energy of the list of states they replaced (issue 17, fourth round); the scene's own state has
real contact diagnostics; the cost plan and the refusals before a run starts.
"""

from __future__ import annotations

import numpy as np
import pytest

import reverse.runs.run as run_module
from reverse.runs.run import check_reversible, plan_reverse_run, reverse_steps, run_reverse
from reverse.step.dynamics import RigidBodies
from tests.conftest import SCENES
from workbench.errors import SceneError
from workbench.scene.loader import load_scene
from workbench.scene.model import scene_from_dict
from workbench.sim.state import State


def test_preallocated_records_are_the_stacked_states():
    from reverse.runs.run import _trajectory

    class _Scene:
        body_names = ("a", "b", "c")

    rng = np.random.default_rng(7)
    n, T = 3, 70  # more records than one kinetic-energy chunk
    q = rng.normal(size=(T, n, 4))
    q /= np.linalg.norm(q, axis=2, keepdims=True)
    states = [State(rng.normal(size=(n, 3)), q[t], rng.normal(size=(n, 3)),
                    rng.normal(size=(n, 3))) for t in range(T)]  # fmt: skip
    rigid = RigidBodies(("a", "b", "c"), np.array([1.0, 0.0, 2.0]),
                        np.stack([np.diag(rng.uniform(0.1, 1, 3)) for _ in range(n)]),
                        np.zeros((n, 3)), np.zeros((n, 3)))  # fmt: skip
    rows = [[0.0] * (len(run_module.DIAGNOSTICS) - 1)] * T
    fields = ("position", "orientation", "linear_velocity", "angular_velocity")
    stacked = {f: np.stack([getattr(s, f) for s in states]) for f in fields}
    from workbench.sim.observers import kinetic_energy

    orn, lin, ang = (stacked[f] for f in fields[1:])
    whole = kinetic_energy(rigid.mass, rigid.inertia, orn, lin, ang).sum(axis=1)
    a = _trajectory(_Scene, rigid, states, rows, np.arange(T), "ok", "")
    b = _trajectory(_Scene, rigid, stacked, rows, np.arange(T), "ok", "")
    for f in fields:
        assert getattr(a, f).tobytes() == getattr(b, f).tobytes()
    assert a.diagnostics["kinetic_energy"].tobytes() == whole.tobytes()
    assert b.diagnostics["kinetic_energy"].tobytes() == whole.tobytes()


def test_the_scene_state_record_has_real_contact_diagnostics():
    """Issue 15: the final record read ``contact_count`` 0 for a box resting on four corners."""
    scene = scene_from_dict(
        {
            "settings": {"dt": 1e-3, "duration": 0.01},
            "bodies": [
                {
                    "name": "ground",
                    "shape": {"type": "box", "half_extents": [1.0, 1.0, 0.5]},
                    "position": [0.0, 0.0, -0.5],
                    "fixed": True,
                },
                {
                    "name": "box",
                    "shape": {"type": "box", "half_extents": [0.125, 0.125, 0.0625]},
                    "mass": 1.0,
                    "position": [0.0, 0.0, 0.0625],
                },
            ],
        },
        source="<box>",
    )
    traj = run_reverse(scene, duration=0.005).trajectory
    d = traj.diagnostics
    assert traj.status == "ok"
    assert d["contact_count"][-1] == 4  # the four corners
    assert d["sleeping_bodies"][-1] == 1  # at rest, no goals: asleep
    assert d["islands"][-1] == 0  # asleep: no island to solve
    # the same as the step into it sees (asleep there too)
    for name in ("contact_count", "sleeping_bodies", "islands"):
        assert d[name][-1] == d[name][-2]


# ----------------------------------------------------------------------------- before a run
def test_steps_are_the_duration_rounded_to_whole_steps():
    assert reverse_steps(0.1, 0.01) == 10.0
    assert reverse_steps(0.026, 0.01) == 3.0
    assert reverse_steps(1e6, 1e-6) == 1e12  # astronomically many: counted, not refused here
    with pytest.raises(SceneError, match="--samples-duration.*at least one step of 0.01 s"):
        reverse_steps(0.004, 0.01, option="--samples-duration")
    with pytest.raises(SceneError, match="too many backward steps to count"):
        reverse_steps(1e308, 1e-300)


def test_the_plan_is_the_measured_rates_times_the_run():
    plan = plan_reverse_run(1.0, 0.01, 3, runs=4, held=2)
    assert (plan.steps, plan.runs) == (100.0, 4)
    per_step = run_module.SECONDS_PER_STEP + 3 * run_module.SECONDS_PER_BODY_STEP
    assert plan.seconds == pytest.approx(4 * 100 * per_step, rel=1e-15)
    per_record = run_module.BYTES_PER_STEP + 3 * run_module.BYTES_PER_BODY_STEP
    assert plan.memory == pytest.approx(2 * 101 * per_record, rel=1e-15)
    assert plan.problem() == ""


def test_a_plan_past_a_bound_is_refused_with_its_sizes():
    steps = run_module.MAX_REVERSE_STEPS + 1
    long = plan_reverse_run(steps, 1.0, 1).problem()
    assert long.startswith(f"{steps:,} backward steps, about ")
    assert long.endswith(f"above the bound of {run_module.MAX_REVERSE_STEPS:,} steps")
    many = plan_reverse_run(1.0, 0.01, 10**6, runs=2, held=2)  # 10⁶ bodies: 24 GB of records
    assert many.steps <= run_module.MAX_REVERSE_STEPS
    assert many.problem().endswith("of records: above the bound of 2.15 GB of records")
    assert "backward steps each" in many.problem() and "in all" in many.problem()
    assert (
        plan_reverse_run(steps, 1.0, 1).problem("forward").startswith(f"{steps:,} forward steps, ")
    )


def test_what_cannot_be_reversed_is_refused_naming_the_field():
    check_reversible(load_scene(SCENES / "markov_block.yaml"))  # nothing to refuse
    with pytest.raises(SceneError, match=r"bodies\[0\]\.drag.*velocity dependent"):
        check_reversible(load_scene(SCENES / "falling_object.yaml"))


def test_the_contact_rules_are_the_scene_models_and_each_sets_one_setting():
    from reverse.runs.run import CONTACT_RULES, contact_rules
    from workbench.scene.model import CONTACT_RULES as SCENE_RULES

    assert tuple(CONTACT_RULES) == SCENE_RULES
    off = contact_rules([])
    assert off == {
        "persist_contacts": False,
        "joint_unit_restitution": False,
        "free_to_bounce": True,
        "bounce_apart": False,
        "separate": False,
        "cap_bounces": False,
    }
    on = contact_rules(["bounce-apart", "no-free-to-bounce"])
    assert on == {**off, "bounce_apart": True, "free_to_bounce": False}
    with pytest.raises(ValueError, match="got 'keep-apart'"):
        contact_rules(["keep-apart"])


@pytest.mark.slow
def test_capped_bounces_keep_a_stack_coming_apart_slower():
    from reverse.goals.markov import load_model
    from reverse.step.types import StepSettings

    scene = load_scene(SCENES / "box_stack5.yaml")
    model = load_model(SCENES.parent / "data" / "markov_block.json")
    peak = {}
    for cap in (False, True):
        res = run_reverse(
            scene, duration=1.0, seed=2, markov=model, cap_bounces=cap,
            settings=StepSettings(1e-3, attract=True),
        )  # fmt: skip
        peak[cap] = np.linalg.norm(res.trajectory.linear_velocity, axis=2).max()
    assert peak[True] < 0.5 * peak[False]


def test_moved_bodies_names_the_bodies_that_leave_their_pose_or_have_speed():
    from reverse.runs.run import moved_bodies

    scene = load_scene(SCENES / "reverse_landing.yaml")
    still = run_reverse(scene, duration=0.02).trajectory
    assert moved_bodies(still) == []
    still.linear_velocity[0, 1, 0] = 1e-6  # one body with a speed at the earliest record
    assert moved_bodies(still) == [still.body_names[1]]


def test_step_settings_split_the_rules_between_the_step_and_the_run():
    from reverse.runs.run import step_settings

    settings, run = step_settings(
        0.01, ["separate", "cap-bounces", "persist"], angular_damping=2.0, attract=True
    )
    assert settings.separate and settings.attract and settings.angular_damping == 2.0
    assert not settings.bounce_apart and settings.free_to_bounce
    assert run == {"persist_contacts": True, "cap_bounces": True}
    assert step_settings(0.01)[1] == {}
    with pytest.raises(ValueError, match="got 'apart'"):
        step_settings(0.01, ["apart"])
