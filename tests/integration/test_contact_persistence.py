"""Contact persistence of the reverse stepper's detection (``reverse/runs/contacts.py``,
``persist``):
PyBullet's box–box test reports no point for any positive gap, so a block pivoting backward about
a kept edge loses that edge to a second-order 0.2 µm lift (docs/reverse.md, "Energy-consistent
pasts", cause 2). With persistence the edge stays; where it does not apply (balls, stacks) runs
are bit-identical to runs without it, and without the option the detector is today's.
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.goals.hints import load_hints
from reverse.goals.markov import QUANTILE_LEVELS, TransitionModel, load_model
from reverse.runs.run import run_reverse
from reverse.step.stepper import StepSettings
from tests.conftest import REPO
from workbench.scene.loader import load_scene

BLOCK = REPO / "scenes" / "markov_block.yaml"


DT = 1.0 / 240.0  # the block scene's step, s


_FIELDS = ("position", "orientation", "linear_velocity", "angular_velocity")


def _face_to_edge_model() -> TransitionModel:
    """A table that drops face → edge at the first face step and never drops an edge: the
    docs' forced drop (goal speeds 0.1–0.3 m/s)."""
    counts = np.diag([1, 1, 1, 0])
    counts[3, 2] = 1
    speeds = {(-1, -1): list(np.linspace(0.1, 0.3, len(QUANTILE_LEVELS)))}
    return TransitionModel(counts, DT, speeds, {"command": "test", "seed": 1, "n": 1})


def _same(a, b) -> bool:
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in _FIELDS)


@pytest.mark.parametrize("seed", [3, 4])
def test_the_pivot_edge_of_a_forced_drop_persists(seed):
    """Reverse time: face, face (the drop's step), then the edge. Without persistence the step
    after the drop finds no contact (the block flies a step) — the defect; with it the two
    kept corners stay for several steps."""
    scene = load_scene(BLOCK)
    model = _face_to_edge_model()
    counts = {}
    for persist in (False, True):
        res = run_reverse(scene, duration=8 * DT, seed=seed, markov=model, persist_contacts=persist)
        assert res.trajectory.status == "ok"
        counts[persist] = np.asarray(res.trajectory.diagnostics["contact_count"])[::-1]
    assert counts[False][:3].tolist() == [4, 4, 0], counts[False]
    assert counts[True][:8].tolist() == [4, 4, 2, 2, 2, 2, 2, 2], counts[True]


def test_balls_and_a_sliding_block_are_bit_identical_with_persistence():
    """Where persistence does not apply the run does not change: the landing demo (a block
    sliding on a box ground, a bouncing and a rolling ball) with its hints."""
    scene = load_scene(REPO / "scenes" / "reverse_landing.yaml")
    hints = load_hints(REPO / "scenes" / "reverse_landing.hints.yaml", scene.body_names)
    a, b = (
        run_reverse(scene, duration=0.2, hints=hints, seed=1, persist_contacts=p).trajectory
        for p in (False, True)
    )
    assert _same(a, b)


@pytest.mark.slow
def test_a_stack_is_bit_identical_with_persistence():
    """The five-box stack with the Markov table and attraction, seed 2, 0.4 s back (50 s): box5
    leaves box4 at 9.5 µm after a step at 0.34 s, within the touch tolerance — a pair of two
    moving boxes, which does not persist (it did in a first version, and the run changed)."""
    stack = load_scene(REPO / "scenes" / "box_stack5.yaml")
    settings = StepSettings(stack.settings.dt, attract=True)
    model = load_model(REPO / "data" / "markov_block.json")
    a, b = (
        run_reverse(
            stack, duration=0.4, seed=2, markov=model, settings=settings, persist_contacts=p
        ).trajectory
        for p in (False, True)
    )
    assert _same(a, b)
