"""A scene carries the reverse settings its pasts need (``reverse:``,
``workbench.scene.model.ReverseDefaults``): ``workbench reverse`` uses them where its command
line gives none, and the command line wins."""

from __future__ import annotations

import pytest

from workbench.cli.main import main
from workbench.store import TrajectoryStore

BALL_ON_GROUND = {
    "settings": {"dt": 0.01, "duration": 1.0},
    "bodies": [
        {
            "name": "ground",
            "shape": {"type": "box", "half_extents": [2, 2, 0.5]},
            "position": [0, 0, -0.5],
            "fixed": True,
        },
        {
            "name": "ball",
            "shape": {"type": "sphere", "radius": 0.1},
            "mass": 1.0,
            "position": [0, 0, 0.1],
            "linear_velocity": [0.0, 0.0, 0.05],
            "material": {"restitution": 0.5},
        },
    ],
}


def _settings_of(out) -> tuple[str, float]:
    with TrajectoryStore.open(out) as store:
        return store.attrs["reverse_settings"], float(store.attrs["reverse_duration"])


def test_the_scenes_reverse_settings_are_the_commands_defaults(write_scene, tmp_path):
    scene = {
        **BALL_ON_GROUND,
        "reverse": {"duration": 0.05, "restitution_blend": 0.3, "contacts": ["bounce-apart"]},
    }
    out = tmp_path / "r.h5"
    assert main(["reverse", str(write_scene(scene)), "-o", str(out), "-q"]) == 0
    settings, duration = _settings_of(out)
    assert "restitution_blend=0.3" in settings and "bounce_apart=True" in settings
    assert duration == pytest.approx(0.05)


def test_the_command_line_wins_over_the_scene(write_scene, tmp_path):
    scene = {
        **BALL_ON_GROUND,
        "reverse": {"duration": 0.05, "restitution_blend": 0.3, "attract": True},
    }
    out = tmp_path / "r.h5"
    args = ["--duration", "0.02", "--restitution-blend", "0", "--no-attract", "--contacts", ""]
    assert main(["reverse", str(write_scene(scene)), *args, "-o", str(out), "-q"]) == 0
    settings, duration = _settings_of(out)
    assert "restitution_blend=0.0" in settings and "attract=False" in settings
    assert "bounce_apart=False" in settings
    assert duration == pytest.approx(0.02)


def test_without_a_reverse_section_the_controls_are_off(write_scene, tmp_path):
    out = tmp_path / "r.h5"
    path = write_scene(BALL_ON_GROUND)
    assert main(["reverse", str(path), "--duration", "0.02", "-o", str(out), "-q"]) == 0
    settings, _ = _settings_of(out)
    for off in ("restitution_blend=0.0", "angular_damping=0.0", "attract=False"):
        assert off in settings


@pytest.mark.parametrize(
    ("reverse", "text"),
    [
        ({"contacts": ["keep-apart"]}, "reverse.contacts"),
        ({"slip_damping": -1.0}, "reverse.slip_damping"),
        ({"angular_damping": ".nan"}, "reverse.angular_damping"),
        ({"hint": "script"}, "reverse.hint"),
    ],
)
def test_a_bad_reverse_section_is_one_line_naming_the_field(
    write_scene, tmp_path, capsys, reverse, text
):
    path = write_scene({**BALL_ON_GROUND, "reverse": reverse})
    assert main(["reverse", str(path), "-o", str(tmp_path / "r.h5"), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and text in err and str(path) in err, err
