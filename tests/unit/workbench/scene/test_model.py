"""The scene model (:mod:`workbench.scene.model`): what a scene file may declare.

A random parameter in a setting that fixes the record times (``dt``, ``duration``,
``record_every``) is refused when the scene is read, naming the file, line and field (issue 39,
case 8). Fails on the code before: such a scene passed ``check`` and ``run``, and ``ensemble -n
3`` refused only after writing ("realization 1: record times differ from the store's /time"),
leaving the output file behind.
"""

from __future__ import annotations

import contextlib
import io

import pytest

from workbench.cli.main import main
from workbench.errors import SceneError
from workbench.scene.loader import load_scene
from workbench.scene.model import TIME_GRID_SETTINGS

SETTINGS = {
    "dt": ("1.0e-3", "{dist: uniform, low: 1.0e-3, high: 2.0e-3}"),
    "duration": ("0.05", "{dist: uniform, low: 0.05, high: 0.06}"),
    "record_every": ("1", "{dist: uniform, low: 1, high: 3}"),
}


def _scene(tmp_path, random_field: str, spliced: bool = False):
    """A falling box whose ``random_field`` setting is the random parameter ``p`` (spliced into
    a longer string with ``spliced``)."""
    settings = {k: v[0] for k, v in SETTINGS.items()}
    settings[random_field] = '"${p}"' if not spliced else '"${p}0"'
    lines = [f"  {k}: {v}" for k, v in settings.items()]
    text = (
        f"parameters:\n  p: {SETTINGS[random_field][1]}\n"
        "settings:\n" + "\n".join(lines) + "\n"
        "bodies:\n"
        "  - name: box\n"
        "    shape: {type: box, half_extents: [0.1, 0.1, 0.1]}\n"
        "    mass: 1.0\n"
        "    position: [0, 0, 1]\n"
    )
    path = tmp_path / f"random_{random_field}.yaml"
    path.write_text(text)
    line = 1 + text.splitlines().index(
        next(s for s in text.splitlines() if s.startswith(f"  {random_field}:"))
    )
    return path, line


def _workbench(*args) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, err.getvalue()


@pytest.mark.parametrize("field", TIME_GRID_SETTINGS)
def test_a_random_parameter_in_a_time_grid_setting_is_refused_naming_the_field(tmp_path, field):
    path, line = _scene(tmp_path, field)
    with pytest.raises(SceneError) as err:
        load_scene(path)
    assert str(err.value).startswith(
        f"{path}:{line}: settings.{field}: refers to the random parameter 'p'"
    )


def test_a_random_parameter_spliced_into_a_setting_is_refused(tmp_path):
    path, _ = _scene(tmp_path, "duration", spliced=True)
    with pytest.raises(SceneError, match="settings.duration: refers to the random parameter"):
        load_scene(path)


def test_a_random_time_step_fixed_by_set_is_accepted(tmp_path):
    path, _ = _scene(tmp_path, "dt")
    assert load_scene(path, {"p": 2.0e-3}).settings.dt == 2.0e-3


@pytest.mark.parametrize("field", ["dt", "duration"])
def test_check_and_ensemble_refuse_a_random_time_grid_before_writing(tmp_path, field):
    path, line = _scene(tmp_path, field)
    out = tmp_path / "out.h5"
    for args in (["check", path], ["ensemble", path, "-n", "3", "-q", "-o", out]):
        rc, err = _workbench(*args)
        assert rc == 2, err
        assert err.count("\n") == 1 and f"{path}:{line}: settings.{field}:" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
