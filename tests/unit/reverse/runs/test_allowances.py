"""What a reverse run's bodies may reach (:mod:`reverse.runs.allowances`): what friction took
before a hint, one collision before the scene's own velocity, a Markov table's throws, and the
bounce cap of the arrangement's height."""

from __future__ import annotations

import numpy as np
import pytest

from reverse.goals.hints import Hint
from reverse.runs.allowances import (
    bounce_cap,
    final_state_allowances,
    hint_allowances,
    table_allowance,
)
from tests.conftest import SCENES
from tests.unit.reverse.runs.test_audit import _scene_two_blocks
from workbench.scene.loader import load_scene
from workbench.scene.model import scene_from_dict


def test_a_slide_hint_allows_what_friction_took_before_it():
    scene = _scene_two_blocks()
    hint = Hint("block", "slide", np.array([1.0, 0.0, 0.0]), 2.0, at=0.25)
    allowed = hint_allowances(scene, [hint], 1.25, np.full(2, 0.1))
    # μ = 0.5 × 0.6 on the ground, 1 s of sliding before the hint's moment
    assert allowed[1] == pytest.approx(2.0 + 0.3 * 9.81 * 1.0)
    assert allowed[0] == 0.0


def test_the_scenes_own_velocity_allows_one_collision_before_it():
    """A pair separating at 0.5 m/s after a collision of restitution 0.3 × 0.3 approached at
    5.6 m/s (``scenes/crash.py``); a body at rest allows nothing; restitution 0 any speed."""
    scene = scene_from_dict(
        {
            "bodies": [
                {
                    "name": n,
                    "shape": {"type": "box", "half_extents": [0.1, 0.1, 0.1]},
                    "mass": 1.0,
                    "position": [0.0, 0.3 * k, 1.0],
                    "material": {"restitution": e},
                }
                for k, (n, e) in enumerate((("a", 0.3), ("b", 0.3), ("c", 0.0)))
            ],
        },
        source="<pair>",
    )
    allowed = final_state_allowances(scene, np.array([0.5, 0.0, 0.2]))
    # a meets b (0.09) or c (0): restitution 0 with c allows any speed
    assert np.isinf(allowed[0]) and allowed[1] == 0.0 and np.isinf(allowed[2])
    scene2 = scene_from_dict(
        {
            **scene.model_dump(mode="json", exclude={"reverse"}),
            "bodies": [b.model_dump(mode="json") for b in scene.bodies[:2]],
        },
        source="<pair>",
    )
    allowed = final_state_allowances(scene2, np.array([0.5, 0.25]))
    assert allowed == pytest.approx([0.5 / 0.09, 0.25 / 0.09])


def test_the_bounce_cap_is_a_fall_from_the_top_of_the_arrangement_to_its_bottom():
    from reverse.runs.audit import SPEED_FLOOR, body_radii
    from reverse.runs.run import build_stepper
    from reverse.step.types import StepSettings

    scene = load_scene(SCENES / "box_stack5.yaml")  # five boxes at rest, tops at 0.25 ... 1.25 m
    rigid = build_stepper(scene, StepSettings(1e-3))[0].rigid
    r = body_radii(rigid.mass, rigid.inertia)[1:]  # the same for every box
    height = (1.125 + r[0]) - (0.125 - r[0])
    cap = bounce_cap(scene, rigid, [], 2.0)
    assert cap == pytest.approx(np.sqrt(2 * 9.81 * height) + SPEED_FLOOR)
    assert 5.0 < cap < 6.0


def test_hints_raise_the_bounce_cap_by_their_speed():
    from reverse.goals.hints import resolve_hints
    from reverse.runs.run import build_stepper
    from reverse.step.types import StepSettings

    path = SCENES / "reverse_landing.yaml"
    scene = load_scene(path)
    rigid = build_stepper(scene, StepSettings(1e-3))[0].rigid
    option = str(SCENES / "reverse_landing.hints.yaml")
    hints = resolve_hints(option, path, scene, sampled=False).hints
    plain, hinted = bounce_cap(scene, rigid, [], 0.5), bounce_cap(scene, rigid, hints, 0.5)
    assert hinted > plain > 0
    assert hinted >= max(h.speed for h in hints)


def test_a_markov_table_allows_the_fastest_release_of_its_throws():
    from dataclasses import replace

    from reverse.goals.markov import load_model
    from tests.conftest import REPO

    table = load_model(REPO / "data" / "markov_block.json")
    throw = table.meta["throw"]  # horizontal components within ±2 m/s, falling at most 3 m/s
    fastest = np.sqrt(2 * throw["horizontal_speed"] ** 2 + throw["vertical_speed"] ** 2)
    assert table_allowance(table) == pytest.approx(fastest)
    assert table_allowance(table) == pytest.approx(np.sqrt(17.0))
    assert table_allowance(None) == 0.0
    # a table that does not say how it was made allows nothing
    assert table_allowance(replace(table, meta={})) == 0.0
    assert table_allowance(replace(table, meta={"throw": {"horizontal_speed": "fast"}})) == 0.0


def test_a_tables_throws_raise_the_bounce_cap_as_a_throw_at_that_speed():
    from reverse.runs.audit import SPEED_FLOOR
    from reverse.runs.run import build_stepper
    from reverse.step.types import StepSettings

    scene = load_scene(SCENES / "box_stack5.yaml")
    rigid = build_stepper(scene, StepSettings(1e-3))[0].rigid
    plain = bounce_cap(scene, rigid, [], 2.0)
    thrown = bounce_cap(scene, rigid, [], 2.0, thrown=4.0)
    fall = (plain - SPEED_FLOOR) ** 2  # 2 |g| H
    assert thrown == pytest.approx(np.sqrt(16.0 + fall) + SPEED_FLOOR)
