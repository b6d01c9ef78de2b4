"""Load a scene from a YAML file or a Python scene script into a validated :class:`Scene`.

A YAML scene is parsed, its ``${name}`` parameters substituted (``overrides`` replace declared
values, as ``--set name=value`` does on the command line) and validated. A scene script is a
Python file defining ``build(**parameters)`` that returns a :class:`Scene` or a plain dict in the
YAML layout; its keyword parameters (with defaults) are the scene's parameters.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

from workbench.errors import SceneError, UserCodeError
from workbench.scene.model import Scene, scene_from_dict
from workbench.specs import (
    line_index,
    load_user_object,
    parse_override,
    read_document,
)

__all__ = ["load_scene", "parse_override", "scene_to_json", "scene_from_json", "line_index"]

SCENE_SUFFIXES = (".yaml", ".yml", ".py")


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
    if path.suffix == ".py":
        return _load_script(path, overrides)
    doc = read_document(path, "scene", SceneError)
    return scene_from_dict(
        doc.data,
        source=source,
        base_dir=str(path.parent),
        overrides=overrides,
        source_text=doc.text,
        line_of=doc.line_of,
    )


def _load_script(path: Path, overrides) -> Scene:
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
        build = load_user_object(path, name="build")
    except (OSError, UnicodeDecodeError) as exc:
        raise SceneError(source, "", f"cannot read the file ({exc})") from None
    except UserCodeError as exc:
        raise SceneError(source, "", str(exc)) from None
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
    return json.dumps(
        {
            "source": scene.source,
            "base_dir": str(Path(scene.base_dir).resolve()) if scene.base_dir else None,
            "scene": scene.model_dump(mode="json"),
        }
    )


def scene_from_json(text: str, source: str = "<stored scene>") -> Scene:
    """Rebuild a :class:`Scene` from :func:`scene_to_json` output (parameters already applied)."""
    try:
        doc = json.loads(text)
        data, base_dir = doc["scene"], doc.get("base_dir")
        json.dumps(doc, ensure_ascii=False).encode("utf-8")  # no lone surrogate ("\udc8b")
    except (ValueError, KeyError, TypeError, RecursionError):  # RecursionError: nested 1000 deep
        raise SceneError(source, "scene_json", "a scene stored by this workbench") from None
    try:
        return scene_from_dict(data, source=doc.get("source") or source, base_dir=base_dir)
    except SceneError as exc:
        # the scene stored in a file (damaged, or of files since moved): the file read is named
        raise SceneError(source, "scene_json", f"the stored scene is not valid ({exc})") from None
