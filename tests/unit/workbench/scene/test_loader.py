"""Scenes stored beside results (:func:`workbench.scene.loader.scene_from_json`): a stored scene
that is no longer valid (a damaged file) is refused naming the file read, not the scene file it
came from (found by the fuzz suite, issue 39: ``workbench replay`` of a damaged reverse file
named only ``scenes/reverse_landing.yaml``)."""

from __future__ import annotations

import pytest

from tests.conftest import SCENES
from workbench.errors import SceneError
from workbench.scene.loader import load_scene, scene_from_json, scene_to_json


def test_a_damaged_stored_scene_names_the_file_read():
    text = scene_to_json(load_scene(SCENES / "reverse_landing.yaml"))
    damaged = text.replace('"density"', '"de\\u0000sity"', 1)
    assert damaged != text
    with pytest.raises(SceneError) as err:
        scene_from_json(damaged, source="damaged.h5")
    assert str(err.value).startswith("damaged.h5: scene_json: the stored scene is not valid (")


def test_a_stored_scene_reads_back():
    scene = load_scene(SCENES / "reverse_landing.yaml")
    assert scene_from_json(scene_to_json(scene), source="x.h5") == scene


def test_a_stored_scene_with_a_lone_surrogate_is_one_line():
    """Was a UnicodeEncodeError traceback from pydantic's message (fuzz seed 39, case 19): a
    flipped byte in a damaged file's scene_json made a key "s\\udc8b..."."""
    text = scene_to_json(load_scene(SCENES / "reverse_landing.yaml"))
    damaged = text.replace('"shape"', '"s\\udc8bape"', 1)
    with pytest.raises(SceneError) as err:
        scene_from_json(damaged, source="damaged.h5")
    assert str(err.value) == "damaged.h5: scene_json: a scene stored by this workbench"
