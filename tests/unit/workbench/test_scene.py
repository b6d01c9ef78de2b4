"""Scene validation: valid files load, every kind of bad input is one actionable line."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import SCENES
from workbench.cli.main import main
from workbench.errors import SceneError
from workbench.scene.catalog import is_scene_file
from workbench.scene.loader import load_scene, parse_override, scene_from_json, scene_to_json
from workbench.scene.model import scene_from_dict

BALL = {
    "parameters": {"r": 0.1},
    "settings": {"dt": 0.001, "duration": 0.1},
    "bodies": [
        {"name": "ground", "shape": {"type": "plane"}, "fixed": True},
        {
            "name": "ball",
            "shape": {"type": "sphere", "radius": "${r}"},
            "mass": 2.0,
            "position": [0, 0, 1],
        },
    ],
    "joints": [],
    "observers": [{"name": "h", "quantity": "com_position", "body": "ball"}],
}


def bad(write_scene, data, overrides=None) -> SceneError:
    path = write_scene(data)
    with pytest.raises(SceneError) as info:
        load_scene(path, overrides)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(str(path))
    return info.value


@pytest.mark.parametrize(
    "path",
    [p for p in sorted(SCENES.glob("*.yaml")) if is_scene_file(p)],  # not inference specs
    ids=lambda p: p.stem,
)
def test_shipped_scenes_load(path):
    scene = load_scene(path)
    assert scene.description, "every shipped scene says what it shows"
    for body in scene.bodies:
        if not body.fixed:
            assert body.mass_properties.mass > 0


def test_parameters_substitute_and_override(write_scene):
    path = write_scene(BALL)
    assert load_scene(path).bodies[1].shape.radius == 0.1
    assert load_scene(path, {"r": 0.25}).bodies[1].shape.radius == 0.25
    m = load_scene(path).bodies[1].mass_properties
    assert np.allclose(np.array(m.inertia), np.eye(3) * 0.4 * 2.0 * 0.1**2, rtol=1e-15)


def test_missing_file(tmp_path):
    with pytest.raises(SceneError, match="file not found"):
        load_scene(tmp_path / "nope.yaml")


def test_yaml_syntax_error_gives_line_and_column(write_scene):
    err = bad(write_scene, "bodies:\n  - name: ball\n    shape: {type: sphere, radius: 1\n")
    assert "line" in err.expected and "column" in err.expected


def test_unknown_field_suggests_closest(write_scene):
    data = copy.deepcopy(BALL)
    data["bodies"][1]["masss"] = data["bodies"][1].pop("mass")
    path = write_scene(data)
    with pytest.raises(SceneError) as info:
        load_scene(path)
    err = info.value
    assert err.field == "bodies[1].masss"
    assert "did you mean 'mass'" in err.expected
    lines = path.read_text().splitlines()
    assert "masss" in lines[err.line - 1], "the line number points at the unknown key"


def test_wrong_type(write_scene):
    data = copy.deepcopy(BALL)
    data["bodies"][1]["mass"] = "heavy"
    err = bad(write_scene, data)
    assert err.field == "bodies[1].mass" and "number" in err.expected


def test_negative_mass(write_scene):
    data = copy.deepcopy(BALL)
    data["bodies"][1]["mass"] = -1
    err = bad(write_scene, data)
    assert err.field == "bodies[1].mass" and "greater than 0" in err.expected


@pytest.mark.parametrize(
    "J, words",
    [
        ([[1, 0, 0], [0, -1, 0], [0, 0, 1]], "positive definite"),
        ([[1, 0, 0], [0, 1, 0], [0, 0, 5]], "triangle"),
        ([[1, 0.5, 0], [0, 1, 0], [0, 0, 1]], "symmetric"),
    ],
)
def test_inadmissible_inertia(write_scene, J, words):
    data = copy.deepcopy(BALL)
    data["bodies"][1]["inertia"] = J
    err = bad(write_scene, data)
    assert err.field == "bodies[1]" and words in err.expected


def test_joint_naming_unknown_body(write_scene):
    data = copy.deepcopy(BALL)
    data["joints"] = [
        {"name": "j", "type": "ball", "parent": "world", "child": "bal", "anchor": [0, 0, 1]}
    ]
    err = bad(write_scene, data)
    assert err.field == "joints[0].child" and "did you mean 'ball'" in err.expected


def test_set_unknown_parameter(write_scene):
    err = bad(write_scene, BALL, {"radius": 1})
    assert "--set radius" in err.field and "unknown parameter" in err.expected


def test_unknown_parameter_reference(write_scene):
    data = copy.deepcopy(BALL)
    data["bodies"][1]["mass"] = "${m}"
    err = bad(write_scene, data)
    assert err.field == "bodies[1].mass" and "unknown parameter" in err.expected


def test_unknown_shape_type(write_scene):
    data = copy.deepcopy(BALL)
    data["bodies"][1]["shape"] = {"type": "sphre", "radius": 1}
    err = bad(write_scene, data)
    assert err.field == "bodies[1].shape" and "did you mean 'sphere'" in err.expected


def test_parse_override_reads_yaml_values():
    assert parse_override("c=0.2") == ("c", 0.2)
    assert parse_override("v=[1, 2, 3]") == ("v", [1, 2, 3])
    with pytest.raises(SceneError):
        parse_override("novalue")


def test_scene_json_round_trip():
    scene = load_scene(SCENES / "mesh_tumble.yaml")
    again = scene_from_json(scene_to_json(scene))
    assert again.model_dump() == scene.model_dump()
    assert again.bodies[0].mass_properties == scene.bodies[0].mass_properties


def test_mesh_mass_properties_match_trimesh():
    import trimesh

    scene = load_scene(SCENES / "mesh_tumble.yaml")
    mesh = trimesh.load(SCENES / "meshes" / "tumbler.obj", force="mesh")
    mesh.density = 1000.0
    props = scene.bodies[0].mass_properties
    assert props.mass == pytest.approx(mesh.mass, rel=1e-12)
    assert np.allclose(props.com, mesh.center_mass, atol=1e-15)
    J = np.array(props.inertia)
    assert np.allclose(J, mesh.moment_inertia, rtol=1e-12)
    assert abs(J[0, 1]) > 0.1 * J[0, 0], "the shipped tumbler has real off-diagonal inertia"


def test_python_scene_script(tmp_path):
    script = tmp_path / "scene.py"
    script.write_text(
        "def build(radius=0.1, height=1.0):\n"
        "    return {'bodies': [{'name': 'b', 'shape': {'type': 'sphere', 'radius': radius},\n"
        "             'mass': 1.0, 'position': [0, 0, height]}]}\n"
    )
    scene = load_scene(script, {"height": 3.0})
    assert scene.bodies[0].position == (0, 0, 3.0)
    assert scene.parameters == {"radius": 0.1, "height": 3.0}
    with pytest.raises(SceneError, match="unknown parameter 'h'"):
        load_scene(script, {"h": 1})


# ---------------------------------------------------------------- random mutations (hypothesis)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _get(node, path):
    for p in path:
        node = node[p]
    return node


BASES = [
    yaml.safe_load((SCENES / f).read_text())
    for f in ("sliding_block.yaml", "pendulum_chain.yaml", "bouncing_ball.yaml")
]
WRONG_VALUES = st.one_of(
    st.just(None),
    st.just("oops"),
    st.just(-1.0),
    st.just(0),
    st.just([1, 2]),
    st.just({"x": 1}),
    st.just(float("nan")),
    st.just("${nope}"),
    st.just(True),
    st.just([]),
)


@pytest.mark.slow  # ~4 s
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(base=st.sampled_from(range(len(BASES))), data=st.data())
def test_mutated_scenes_fail_with_one_line(tmp_path, capsys, base, data):
    doc = copy.deepcopy(BASES[base])
    paths = [p for p in _paths(doc) if p]
    path = data.draw(st.sampled_from(paths))
    parent = _get(doc, path[:-1])
    action = data.draw(st.sampled_from(["replace", "delete", "rename", "add"]))
    key = path[-1]
    if action == "replace":
        parent[key] = data.draw(WRONG_VALUES)
    elif action == "delete":
        del parent[key]
    elif action == "rename" and isinstance(parent, dict):
        parent[str(key) + "x"] = parent.pop(key)
    elif action == "add" and isinstance(parent, dict):
        parent["unexpected_" + str(key)] = 1
    file = tmp_path / "mutant.yaml"
    file.write_text(yaml.safe_dump(doc, sort_keys=False))
    capsys.readouterr()
    code = main(["check", str(file)])
    out, err = capsys.readouterr()
    # valid (0) or exactly one line naming the file and a field, exit status 2: nothing else;
    # a valid scene may warn in one line that its bodies start inside each other
    assert code in (0, 2)
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith(f"workbench check: {file}")
        assert "Traceback" not in err
    else:
        assert err == "" or (
            len(err.strip().splitlines()) == 1
            and err.startswith(f"workbench check: warning: {file}: bodies ")
        ), err
        load_scene(file)  # the API agrees that it is valid


def test_scene_from_dict_reports_source():
    with pytest.raises(SceneError, match=r"^<scene>: bodies"):
        scene_from_dict({"bodies": "none"})


def test_one_reader_tells_documents_apart(tmp_path):
    """``workbench.specs.document_kind``: the catalog lists scenes (and broken YAML, so that
    `workbench check` can explain it), not specs or hints files."""
    from workbench.specs import document_kind

    docs = {
        "s.yaml": "bodies: []\n",
        "i.yaml": "kind: inference\n",
        "v.yaml": "kind: inverse\nbodies: []\n",
        "h.yaml": "hints: []\n",
        "b.yaml": "bodies: [\n",
        "p.py": "def build():\n    return {}\n",
        "n.py": "x = 1\n",
    }
    for name, text in docs.items():
        (tmp_path / name).write_text(text)
    kinds = {name: document_kind(tmp_path / name) for name in docs}
    assert kinds == {
        "s.yaml": "scene",
        "i.yaml": "inference",
        "v.yaml": "inverse",
        "h.yaml": "hints",
        "b.yaml": "invalid",
        "p.py": "scene",
        "n.py": None,
    }
    listed = {name for name in docs if is_scene_file(tmp_path / name)}
    assert listed == {"s.yaml", "b.yaml", "p.py"}


def test_user_code_errors_name_the_file(tmp_path):
    """Scene scripts and ``module:name`` / ``file.py:name`` references are loaded by one
    function, :func:`workbench.specs.load_user_object`."""
    from workbench.errors import UserCodeError
    from workbench.specs import load_user_object

    script = tmp_path / "s.py"
    script.write_text("raise ValueError('boom')\n")
    with pytest.raises(SceneError, match=r"s\.py: the script raised ValueError: boom"):
        load_scene(script)
    (tmp_path / "f.py").write_text("def f(x):\n    return x\n")
    assert load_user_object("f.py:f", base_dir=tmp_path)(3) == 3
    assert load_user_object("f.py:g", base_dir=tmp_path) is None
    assert load_user_object("math:sqrt") is __import__("math").sqrt
    for ref, words in (
        ("nocolon", "expected 'module:name' or 'file.py:name'"),
        ("g.py:f", "g.py: file not found"),
        ("no_such_module_x:f", "cannot import no_such_module_x (ModuleNotFoundError"),
    ):
        with pytest.raises(UserCodeError, match=re.escape(words)):
            load_user_object(ref, base_dir=tmp_path)
