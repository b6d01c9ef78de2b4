"""Load a scene from a YAML file or a Python scene script into a validated :class:`Scene`.

A YAML scene is parsed, its ``${name}`` parameters substituted (``overrides`` replace declared
values, as ``--set name=value`` does on the command line) and validated. A scene script is a
Python file defining ``build(**parameters)`` that returns a :class:`Scene` or a plain dict in the
YAML layout; its keyword parameters (with defaults) are the scene's parameters.
"""

from __future__ import annotations

import inspect
import runpy
from pathlib import Path
from typing import Any

import yaml

from workbench.errors import SceneError
from workbench.scene.model import Scene, scene_from_dict

__all__ = ["load_scene", "parse_override", "scene_to_json", "scene_from_json", "line_index"]

SCENE_SUFFIXES = (".yaml", ".yml", ".py")


def parse_override(text: str) -> tuple[str, Any]:
    """``"name=value"`` -> ``("name", value)`` with the value read as YAML (numbers, lists...)."""
    if "=" not in text:
        raise SceneError("--set", text, "expected name=value")
    name, _, raw = text.partition("=")
    name = name.strip()
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return name, value


def load_scene(path: str | Path, overrides: dict[str, Any] | None = None) -> Scene:
    """Load and validate a scene file.

    Parameters
    ----------
    path : str or Path
        A ``.yaml``/``.yml`` scene file or a ``.py`` scene script.
    overrides : dict, optional
        Parameter values to use instead of the declared ones.

    Raises
    ------
    SceneError
        With the file, the field path, the line when known and what was expected.
    """
    path = Path(path)
    source = str(path)
    if not path.exists():
        raise SceneError(source, "", "file not found")
    if path.is_dir():
        raise SceneError(source, "", "is a folder; expected a scene file (.yaml or .py)")
    if path.suffix not in SCENE_SUFFIXES:
        raise SceneError(source, "", f"expected a scene file ending in {', '.join(SCENE_SUFFIXES)}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SceneError(source, "", f"cannot read the file ({exc})") from None
    if path.suffix == ".py":
        return _load_script(path, text, overrides)
    return _load_yaml(path, text, overrides)


def _load_yaml(path: Path, text: str, overrides) -> Scene:
    source = str(path)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        problem = (exc.problem or exc.context or "invalid YAML").replace("\n", " ")
        raise SceneError(source, "", f"YAML syntax error at {where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise SceneError(source, "", f"YAML error: {str(exc).splitlines()[0]}") from None
    if data is None:
        raise SceneError(source, "", "the file is empty; expected a scene mapping")
    spec_kinds = {"inverse": "workbench inverse", "inference": "workbench infer"}
    if isinstance(data, dict) and data.get("kind") in spec_kinds:
        raise SceneError(
            source,
            "kind",
            f"this is an {data['kind']} spec (kind: {data['kind']}), not a scene: run it with "
            f"`{spec_kinds[data['kind']]} {path}`",
        )
    lines = line_index(node)

    def line_of(loc: tuple) -> int | None:
        for k in range(len(loc), -1, -1):
            if loc[:k] in lines:
                return lines[loc[:k]]
        return None

    return scene_from_dict(
        data,
        source=source,
        base_dir=str(path.parent),
        overrides=overrides,
        source_text=text,
        line_of=line_of,
    )


def line_index(node) -> dict[tuple, int]:
    """Map every field path of a composed YAML document to its 1-based line."""
    out: dict[tuple, int] = {}

    def walk(n, path: tuple) -> None:
        out[path] = n.start_mark.line + 1
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                key = k.value
                out[path + (key,)] = k.start_mark.line + 1
                walk(v, path + (key,))
                out[path + (key,)] = k.start_mark.line + 1
        elif isinstance(n, yaml.SequenceNode):
            for i, v in enumerate(n.value):
                walk(v, path + (i,))

    if node is not None:
        walk(node, ())
    return out


def _load_script(path: Path, text: str, overrides) -> Scene:
    source = str(path)
    try:
        namespace = runpy.run_path(str(path), run_name="workbench_scene")
    except SceneError:
        raise
    except Exception as exc:  # the user's script failed: name the file and the error
        raise SceneError(source, "", f"the script raised {type(exc).__name__}: {exc}") from None
    build = namespace.get("build")
    if not callable(build):
        raise SceneError(source, "build", "a scene script must define build(**parameters)")
    sig = inspect.signature(build)
    accepted = [
        p.name
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    defaults = {
        p.name: p.default
        for p in sig.parameters.values()
        if p.default is not inspect.Parameter.empty
    }
    overrides = dict(overrides or {})
    for k in overrides:
        if k not in accepted:
            raise SceneError(
                source,
                f"--set {k}",
                f"unknown parameter '{k}'; build() accepts: {', '.join(accepted) or '(none)'}",
            )
    try:
        result = build(**overrides)
    except SceneError:
        raise
    except Exception as exc:
        raise SceneError(source, "build", f"raised {type(exc).__name__}: {exc}") from None
    params = {**defaults, **overrides}
    if isinstance(result, Scene):
        data = result.model_dump()
    elif isinstance(result, dict):
        data = dict(result)
    else:
        raise SceneError(
            source, "build", f"must return a Scene or a dict, got {type(result).__name__}"
        )
    data["parameters"] = {
        **(data.get("parameters") or {}),
        **{k: v for k, v in params.items() if _plain(v)},
    }
    return scene_from_dict(data, source=source, base_dir=str(path.parent), source_text=text)


def _plain(v: Any) -> bool:
    return isinstance(v, (int, float, str, bool, list, tuple)) or v is None


def scene_to_json(scene: Scene) -> str:
    """The resolved scene as JSON, with its source and folder, for storing beside results."""
    import json

    return json.dumps(
        {
            "source": scene.source,
            "base_dir": str(Path(scene.base_dir).resolve()) if scene.base_dir else None,
            "scene": scene.model_dump(mode="json"),
        }
    )


def scene_from_json(text: str, source: str = "<stored scene>") -> Scene:
    """Rebuild a :class:`Scene` from :func:`scene_to_json` output (parameters already applied)."""
    import json

    try:
        doc = json.loads(text)
        data, base_dir = doc["scene"], doc.get("base_dir")
    except (ValueError, KeyError, TypeError):
        raise SceneError(source, "scene_json", "a scene stored by this workbench") from None
    return scene_from_dict(data, source=doc.get("source") or source, base_dir=base_dir)
