"""What the replay page says about its run (``workbench/replay/web/caption.py``): the kind of
run from the file's attributes, the parameters as run, the run shown."""

from __future__ import annotations

import pytest

from workbench.replay.web.caption import page_caption, page_title, run_kind
from workbench.scene.model import scene_from_dict
from workbench.sim.forward import run_scene

SCENE = {
    "parameters": {"mu": 0.4, "size": [0.1, 0.2, 0.3]},
    "settings": {"dt": 0.01, "duration": 0.02},
    "bodies": [
        {"name": "ground", "shape": {"type": "plane"}, "fixed": True},
        {"name": "box", "shape": {"type": "box", "size": "${size}"}, "mass": 1.0,
         "position": [0, 0, 0.5], "material": {"friction": "${mu}"}},
    ],
    "description": "a box, mu = 0.4",
}  # fmt: skip


@pytest.mark.parametrize(
    "attrs, kind",
    [
        ({"kind": "run"}, "run"),
        ({"kind": "ensemble"}, "ensemble"),
        ({"kind": "run", "time_reversed": 1}, "reverse run"),
        ({"kind": "ensemble", "time_reversed": 1}, "pasts"),
        ({"kind": "ensemble", "time_reversed": 1, "verified_runs": 2}, "verified pasts"),
        ({"kind": "ensemble", "reverse_sampler": "conditioned"}, "conditioned pasts"),
    ],
)
def test_the_kind_of_run_comes_from_the_files_attributes(attrs, kind):
    assert run_kind(attrs) == kind


def test_the_caption_gives_the_parameters_as_run_not_the_scenes_description():
    scene = scene_from_dict(SCENE, source="scenes/box.yaml", overrides={"mu": 0.3})
    traj = run_scene(scene)
    assert page_title(scene, {"kind": "run"}) == "box: run"
    caption = page_caption(scene, {"realization 3": traj})
    assert caption == "mu = 0.3, size = [0.1, 0.2, 0.3] · realization 3"
    traj.status = "implausible"
    assert page_caption(scene, {"run": traj}).endswith("· run (implausible)")
    assert page_caption(scene, {"a": traj, "b": traj}).endswith("· 2 runs")
