"""Sampled reverse runs' draws (:mod:`reverse.runs.sampling`): the per-run heading turn keeps the
centre of mass and the contact with the ground; the variation draws and run seeds are seeded per
run, independent of one another and of executors.
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.runs.sampling import (
    RunVariation,
    _utf8_prefix,
    sample_seed,
    turn_moving_bodies,
    variation_rng,
)
from tests.conftest import REPO
from workbench.scene.loader import load_scene


# ----------------------------------------------------------------------------- heading
def test_turning_keeps_the_centre_of_mass_and_the_contact_with_the_ground():
    scene = load_scene(REPO / "scenes" / "markov_block.yaml")
    turned = turn_moving_bodies(scene, np.pi / 3)
    yawed = load_scene(REPO / "scenes" / "markov_block.yaml", {"yaw": 60.0})
    b, t, y = scene.body("block"), turned.body("block"), yawed.body("block")
    np.testing.assert_array_equal(t.position, b.position)
    np.testing.assert_allclose(t.rotation.as_matrix(), y.rotation.as_matrix(), atol=1e-15)
    assert turned.body("ground") == scene.body("ground")


def test_variation_draws_are_seeded_per_run():
    scene = load_scene(REPO / "scenes" / "markov_block.yaml")
    var = RunVariation(heading=True)
    a = [var.draw(scene, 9, i)[2] for i in range(3)]
    assert a == [var.draw(scene, 9, i)[2] for i in range(3)] and len(set(a)) == 3
    assert a[0] == variation_rng(9, 0).uniform(0.0, 2.0 * np.pi)


# ----------------------------------------------------------------------------- seeds
def test_run_seeds_are_fixed_per_run_and_distinct():
    seeds = [sample_seed(5, i) for i in range(50)]
    assert seeds == [sample_seed(5, i) for i in range(50)]  # whatever ran them, in any order
    assert len(set(seeds)) == 50
    assert sample_seed(6, 0) != sample_seed(5, 0)
    assert all(0 <= s < 2**32 for s in seeds)


def test_variation_draws_do_not_share_the_runs_stream():
    """A run's variation (heading, hints) is drawn from its own stream: not the run's seed's."""
    for i in range(5):
        own = variation_rng(5, i).random(4)
        np.testing.assert_array_equal(own, variation_rng(5, i).random(4))
        assert not np.array_equal(own, np.random.default_rng(sample_seed(5, i)).random(4))
        assert not np.array_equal(own, variation_rng(5, i + 1).random(4))


@pytest.mark.parametrize(
    ("text", "size", "cut"),
    [
        ("abc", 2, b"ab"),
        ("h\u00e9llo", 2, b"h"),
        ("h\u00e9llo", 3, "h\u00e9".encode()),
        ("", 4, b""),
    ],
)
def test_messages_are_cut_on_character_boundaries(text, size, cut):
    assert _utf8_prefix(text, size) == cut
