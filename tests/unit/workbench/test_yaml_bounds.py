"""The bounds of the one YAML reader (``workbench.specs``): size, nesting depth and nodes with
aliases expanded, each refused with a located one-line error; documents within them read as
before."""

from __future__ import annotations

import time

import pytest

from tests.conftest import SCENES, SPECS
from workbench import specs
from workbench.errors import SceneError, SpecError
from workbench.scene.loader import load_scene
from workbench.specs import (
    INVALID,
    MAX_DEPTH,
    MAX_DOCUMENT_BYTES,
    MAX_NODES,
    parse_override,
    parse_yaml,
    peek,
    read_document,
)

#: Wall-time bound of one refused document, s: each is refused after reading a few hundred
#: nodes (measured: under 10 ms); unbounded, the alias bomb below runs for minutes at 2 GB.
REFUSAL_SECONDS = 2.0


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """The "billion laughs" scene of issue 21: ``a0: &a0 [x, x]``, each level ``width`` aliases
    of the one before (9 levels of 9: 2 * 9^9 = 7.7e8 leaves, 500 bytes)."""
    lines = ["a0: &a0 [x, x]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\nbodies: []\n"


def nested(depth: int) -> str:
    """``x: [[...[]...]]``, ``depth`` levels below the top mapping (top-level mapping: level 1)."""
    return "x: " + "[" * (depth - 1) + "]" * (depth - 1) + "\n"


def test_alias_bomb_is_refused_at_its_line_quickly(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    assert len(path.read_bytes()) < 600
    t0 = time.perf_counter()
    with pytest.raises(SceneError) as info:
        load_scene(path)
    assert time.perf_counter() - t0 < REFUSAL_SECONDS
    err = info.value
    # nodes so far: a0..a4 are 3 + 28 + 253 + 2278 + 20503; the fourth alias in a5 passes 1e5
    assert (err.line, err.field) == (6, "a5[3]")
    assert f"more than {MAX_NODES:,} nodes with aliases expanded" in err.expected
    assert "\n" not in str(err)


def test_ten_thousand_deep_nesting_is_a_located_error(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text(nested(10_000))
    with pytest.raises(SceneError) as info:
        read_document(path, "scene", SceneError)
    err = info.value
    assert err.line == 1 and err.field.startswith("x[0][0]") and "..." in err.field
    assert f"nested more than {MAX_DEPTH} levels deep" in err.expected
    assert len(str(err)) < 300


def test_depth_bound_is_exact():
    parse_yaml(nested(MAX_DEPTH), "ok.yaml")
    with pytest.raises(SpecError, match=f"nested more than {MAX_DEPTH} levels"):
        parse_yaml(nested(MAX_DEPTH + 1), "deep.yaml")


def test_an_alias_inside_its_own_anchor_is_refused():
    """PyYAML builds a recursive list (``a: &a [*a]``) that every later walk follows forever."""
    with pytest.raises(SpecError) as info:
        parse_yaml("bodies: []\na: &a [1, [*a]]\n", "rec.yaml")
    assert (info.value.line, info.value.field) == (2, "a[1]")
    assert "alias inside its own anchor" in info.value.expected


def test_a_file_beyond_the_size_bound_is_refused_with_its_size(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("# " + "x" * MAX_DOCUMENT_BYTES + "\nbodies: []\n")
    with pytest.raises(SceneError) as info:
        load_scene(path)
    size = path.stat().st_size
    assert info.value.expected.startswith(f"a document of {size:,} bytes; expected at most")
    with pytest.raises(SpecError, match="bytes; expected at most"):
        parse_yaml(path.read_text(), "text")


def test_node_bound_counts_plain_nodes_too(monkeypatch):
    """Exact at the bound (lowered to 1 000 here: a flat list of 10^5 numbers reads in ~4 s)."""
    monkeypatch.setattr(specs, "MAX_NODES", 1000)
    ok = "x: [" + ",".join(["1"] * 997) + "]\n"  # + the mapping, 'x' and the list: 1 000
    assert len(parse_yaml(ok, "ok.yaml")[0]["x"]) == 997
    with pytest.raises(SpecError, match="more than 1,000 nodes"):
        parse_yaml(ok.replace("[1,", "[1,1,"), "many.yaml")


def test_shared_anchors_within_the_bound_still_work(write_scene):
    """Aliases are legitimate YAML: a material shared by two bodies reads as before, and the
    aliased fields have the anchor's line."""
    text = (
        "bodies:\n"
        "  - name: a\n"
        "    shape: {type: sphere, radius: 0.1}\n"
        "    mass: 1\n"
        "    material: &steel {friction: 0.4, restitution: 0.2}\n"
        "  - {name: b, shape: {type: sphere, radius: 0.1}, mass: 1, material: *steel}\n"
    )
    data, lines = parse_yaml(text, "s.yaml")
    assert lines[("bodies", 1, "material", "friction")] == 5
    scene = load_scene(write_scene(text))
    assert scene.bodies[1].material.restitution == 0.2


def test_set_values_and_listings_go_through_the_bounds(tmp_path):
    with pytest.raises(SceneError) as info:
        parse_override("v=" + "[" * 500 + "]" * 500)
    assert info.value.source == "--set" and "nested more than" in info.value.expected
    assert parse_override("v=[1, 2]") == ("v", [1, 2])
    assert parse_override("v=a: b: c") == ("v", "a: b: c")  # not YAML: the text itself
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    t0 = time.perf_counter()
    assert peek(path) is INVALID
    assert time.perf_counter() - t0 < REFUSAL_SECONDS


def test_bounds_leave_a_wide_margin_over_the_shipped_documents():
    """The reasons given for the bounds: every shipped document is at least 64 times smaller,
    8 times shallower and 500 times smaller in nodes (measured: 3.1 kB, 7 levels, 191 nodes)."""
    docs = sorted(SCENES.glob("*.yaml")) + sorted(SPECS.glob("*.yaml"))
    assert len(docs) >= 15
    for path in docs:
        text = path.read_text()
        assert len(text.encode()) * 64 <= MAX_DOCUMENT_BYTES, path
        depth = _depth(parse_yaml(text, str(path))[0])
        assert depth * 8 <= MAX_DEPTH, path
        assert len(parse_yaml(text, str(path))[1]) * 500 <= MAX_NODES, path


def _depth(node) -> int:
    if isinstance(node, dict):
        return 1 + max((_depth(v) for v in node.values()), default=0)
    if isinstance(node, list):
        return 1 + max((_depth(v) for v in node), default=0)
    return 1


def test_parameter_splicing_is_bounded_like_aliases(tmp_path):
    """``${p}`` references act like aliases: a 2 kB parameter spliced 200 times into one string,
    or a 1000-item list referenced 200 times, would build far more than the document holds."""
    long_text = tmp_path / "splice.yaml"
    long_text.write_text(
        "parameters: {p: " + "x" * 2000 + "}\n"
        "description: " + "${p}" * 200 + "\n"
        "bodies:\n  - {name: ground, shape: {type: plane}, fixed: true}\n"
    )
    t0 = time.perf_counter()
    with pytest.raises(SceneError, match=r"splice\.yaml:2: description: with its \$\{\.\.\.\}"):
        load_scene(long_text)
    many = tmp_path / "many.yaml"
    many.write_text(
        "parameters: {q: [" + ", ".join(["1"] * 1000) + "]}\n"
        "description: ok\n"
        "bodies:\n  - {name: ground, shape: {type: plane}, fixed: true}\n"
        "extra: [" + ", ".join(['"${q}"'] * 200) + "]\n"
    )
    with pytest.raises(SceneError, match=r"would pass 262,144 characters or 100,000 values"):
        load_scene(many)
    assert time.perf_counter() - t0 < 5.0
