"""``workbench check`` (``workbench/cli/check.py``): what a scene holds, in a screen."""

from __future__ import annotations

from tests.conftest import SCENES, run_main
from workbench.cli.check import BODY_LINES, body_summary
from workbench.scene.loader import load_scene


def test_a_large_scene_is_summarised_by_shape_and_lists_its_bodies_with_verbose():
    r = run_main("check", "spelling_balls", "--set", "text=I", "--set", "per_side=3")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) <= 6  # valid, steps, bodies, parameters: a screen, not a body per line
    # "I": 11 bins of 3 × 3 balls, 0.03 kg each
    assert "99 moving spheres (2.97 kg in all)" in r.stdout and "--verbose" in r.stdout
    r = run_main("check", "spelling_balls", "--set", "text=I", "--set", "per_side=3", "-v")
    assert sum(line.startswith("  body ball") for line in r.stdout.splitlines()) == 99


def test_a_small_scene_lists_every_body():
    r = run_main("check", "pendulum_chain")
    assert r.returncode == 0
    scene = load_scene(SCENES / "pendulum_chain.yaml")
    assert len(scene.bodies) <= BODY_LINES
    assert sum(line.startswith("  body ") for line in r.stdout.splitlines()) == len(scene.bodies)


def test_the_summary_counts_bodies_by_shape_and_motion():
    scene = load_scene(SCENES / "box_stack5.yaml")
    assert body_summary(scene) == "6: 1 fixed box, 5 moving boxes (5 kg in all)"
