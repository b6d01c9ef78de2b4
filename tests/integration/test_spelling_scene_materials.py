"""The spelling scene's materials (``scenes/spelling_balls.py``): ``ground_friction`` and
``ground_restitution`` keep the ball–ground contact's materials and make ball–ball contacts
spin-free and elastic.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SCENES
from workbench.errors import SceneError
from workbench.scene.loader import load_scene


# --------------------------------------------------------------------------- the scene's materials
def test_spelling_balls_pair_materials():
    """``ground_friction``/``ground_restitution`` keep the ball–ground contact's materials and make
    ball–ball contacts spin-free and elastic (PyBullet's product rule, and ρ_A μ_B + ρ_B μ_A)."""
    path = SCENES / "spelling_balls.py"
    # neutral: the ground and walls PyBullet's neutral materials; the scene's defaults: ROLLING
    default = load_scene(
        path,
        {"text": "I", "per_side": 2, "ground_friction": 1.0, "ground_restitution": 1.0,
         "wall_friction": 1.0},
    )  # fmt: skip
    scene = load_scene(path, {"text": "I", "per_side": 2})

    def mats(s):
        by = {b.name: b.material for b in s.bodies}
        wall = next(m for n, m in by.items() if n.startswith("wall"))
        return by["ground"], by["ball0"], wall

    def pair(a, b):
        return (
            a.friction * b.friction,
            a.restitution * b.restitution,
            a.rolling_friction * b.friction + b.rolling_friction * a.friction,
        )

    g0, b0, w0 = mats(default)
    g, b, w = mats(scene)
    # ball on the ground: the same contact as the default scene's (to round-off of the division)
    np.testing.assert_allclose(pair(b, g), pair(b0, g0), rtol=1e-15)
    assert pair(b0, g0) == (0.1, 0.9, 0.001)
    # ball on ball: friction 1e-4, restitution 1, rolling friction 2e-6 m (neutral 0.01, 0.81, 2e-4)
    np.testing.assert_allclose(pair(b, b), (1e-4, 1.0, 2e-6), rtol=1e-12)
    np.testing.assert_allclose(pair(b0, b0), (0.01, 0.81, 2e-4), rtol=1e-12)
    # ball on wall: frictionless, no rolling friction
    assert pair(b, w)[0] == 0.0 and pair(b, w)[2] == 0.0
    with pytest.raises(SceneError, match="ground_restitution: expected at least restitution"):
        load_scene(path, {"text": "I", "per_side": 2, "ground_restitution": 0.5})
