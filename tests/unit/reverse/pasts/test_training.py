"""The throw law's releases (:func:`reverse.pasts.training.release_test`): a state could be a
throw's release when its height above the ground, its fall, its horizontal speed and its speed and
spin are within the training's throw law; conditioned pasts count their earliest states by it.
"""

from __future__ import annotations

import numpy as np

from reverse.pasts.training import THROW, release_test
from tests.conftest import SCENES
from workbench.ensemble.run import SceneRef
from workbench.sim.state import State

SCENE = SCENES / "markov_block.yaml"


def _throw_frame() -> tuple[float, float]:
    """``(ground_top, reach)`` measured as :func:`reverse.pasts.training.run_throw` measures
    them, in the training's world."""
    from reverse.pasts.training import box_ground, thrown_body
    from workbench.sim.engine import Engine
    from workbench.sim.frames import box_reach

    scene = box_ground(SceneRef(str(SCENE), ()).load())
    j = thrown_body(scene)
    eng = Engine(scene, visual=False)
    try:
        lo, hi = eng.aabb(j)
        top = max(float(eng.aabb(k)[1][2]) for k in range(eng.n_bodies) if k != j)
        return top, box_reach(lo, hi, eng.state().position[j])
    finally:
        eng.close()


def _state(z: float, v, w=(0.0, 0.0, 0.0), q=(0, 0, 0, 1.0)) -> State:
    """The scene's fixed plane and the block, its centre at height ``z``."""
    return State(
        position=np.array([[0.0, 0.0, 0.0], [0.3, -0.2, z]]),
        orientation=np.array([[0, 0, 0, 1.0], q], dtype=float),
        linear_velocity=np.array([[0, 0, 0.0], v], dtype=float),
        angular_velocity=np.array([[0, 0, 0.0], w], dtype=float),
    )


def test_releases_are_the_throw_laws_support():
    from reverse.pasts.training import sample_throw

    scene = SceneRef(str(SCENE), ()).load()
    assert [b.fixed for b in scene.bodies] == [True, False], "the test's states assume this order"
    top, reach = _throw_frame()
    assert reach > 0.12  # at least the block's half diagonal (0.135 m) less PyBullet's margins
    released = release_test(SceneRef(str(SCENE), ()), max_speed=3.8, max_spin=16.7)
    # every throw the trainer draws is a release (turned to any heading: components rotated)
    rng = np.random.default_rng(7)
    for _ in range(200):
        t = sample_throw(rng, (0.0, 0.0), top, reach)
        if np.linalg.norm(t.linear_velocity) > 3.8 or np.linalg.norm(t.angular_velocity) > 16.7:
            continue  # beyond the fastest throws given here
        c, s_ = np.cos(1.0), np.sin(1.0)
        v = np.array(
            [
                c * t.linear_velocity[0] - s_ * t.linear_velocity[1],
                s_ * t.linear_velocity[0] + c * t.linear_velocity[1],
                t.linear_velocity[2],
            ]
        )
        assert released(_state(t.position[2], v, t.angular_velocity, t.orientation))
    lo, hi = THROW["clearance"]
    mid = top + reach + (lo + hi) / 2
    assert released(_state(mid, [1.0, -1.0, -2.0], [5.0, 5.0, 5.0]))
    assert released(_state(mid, [0.0, 0.0, 0.0]))  # dropped from rest
    assert not released(_state(mid, [0.0, 0.0, 0.5]))  # rising: thrown downward or dropped only
    assert not released(_state(mid, [0.0, 0.0, -3.2]))  # faster down than any throw
    assert not released(_state(mid, [2.0, 2.1, 0.0]))  # horizontally > √2 · 2 m/s
    assert not released(_state(mid, [1.9, 1.9, -3.0]))  # within each bound, 4.0 > 3.8 m/s
    assert not released(_state(mid, [0.0, 0.0, -1.0], [10.0, 10.0, 10.0]))  # spin 17.3 > 16.7
    assert not released(_state(top + reach + lo - 0.001, [0.0, 0.0, -1.0]))  # too low
    assert not released(_state(top + reach + hi + 0.001, [0.0, 0.0, -1.0]))  # too high
    assert released(_state(top + reach + lo + 0.001, [0.0, 0.0, -1.0]))
    assert released(_state(top + reach + hi - 0.001, [0.0, 0.0, -1.0]))
    assert not released(_state(0.05, [0.0, 0.0, 0.0]))  # the scene's rest on the ground
