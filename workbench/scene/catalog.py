"""Shipped scenes: where they are and what each shows.

Looked up in order: ``$WORKBENCH_SCENES``, the ``scenes/`` folder of a source checkout, and
``<prefix>/share/rigid-workbench/scenes`` where ``pip install .`` puts them.
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from workbench.specs import INVALID, document_kind, peek

__all__ = [
    "scene_dirs",
    "is_scene_file",
    "shipped_scenes",
    "find_scene",
    "find_data",
    "find_spec",
    "scene_summary",
]


#: The source checkout (``scenes/``, ``specs/`` and ``data/`` sit at its top).
REPOSITORY = Path(__file__).resolve().parents[2]
#: Where ``pip install .`` puts them.
INSTALLED = Path(sys.prefix) / "share" / "rigid-workbench"


def _shipped_dirs(kind: str) -> list[Path]:
    """Existing folders named ``kind`` (scenes, specs, data) of the checkout, then installed."""
    return [d for d in (REPOSITORY / kind, INSTALLED / kind) if d.is_dir()]


def scene_dirs() -> list[Path]:
    """Existing folders that hold shipped scenes, in lookup order."""
    env = os.environ.get("WORKBENCH_SCENES")
    dirs = [Path(env)] if env and Path(env).is_dir() else []
    return dirs + _shipped_dirs("scenes")


def _find_shipped(name: str, kind: str, suffix: str, first: Sequence[Path] = ()) -> Path:
    """``name`` itself if it is a file or a path, else the file of that name (with or without
    ``suffix``) in the folders ``first``, then the shipped ``kind`` folders; ``Path(name)`` when
    nothing matches."""
    p = Path(name)
    if p.exists() or p.parent != Path("."):
        return p
    for d in [*first, *_shipped_dirs(kind)]:
        for candidate in (d / name, d / f"{name}{suffix}"):
            if candidate.is_file():
                return candidate
    return p


def is_scene_file(path: Path) -> bool:
    """A YAML file with ``bodies`` at the top level (specs beside the scenes have none), or a
    ``.py`` script defining ``build``; a file that is not valid YAML is listed too, so that
    `workbench check` can say what is wrong with it."""
    return document_kind(path) in ("scene", "invalid")


def shipped_scenes() -> list[Path]:
    """Scene files (``.yaml`` and ``.py`` scripts with ``build``) of the first scene folder."""
    for d in scene_dirs():
        files = [f for f in sorted(d.glob("*.yaml")) if is_scene_file(f)] + sorted(
            f for f in d.glob("*.py") if is_scene_file(f)
        )
        if files:
            return files
    return []


def find_scene(name: str) -> Path:
    """``name`` itself if it is a file, else the shipped scene of that name (with or without
    its suffix); ``Path(name)`` when nothing matches (the loader reports it)."""
    p = Path(name)
    if p.exists() or p.parent != Path("."):
        return p
    for f in shipped_scenes():
        if name in (f.name, f.stem):
            return f
    return p


def find_spec(name: str) -> Path:
    """``name`` itself if it is a file, else the spec of that name, with or without ``.yaml``, in
    ``$WORKBENCH_SCENES`` (a user's specs may sit beside their scenes) or the shipped ``specs/``;
    ``Path(name)`` when nothing matches."""
    env = os.environ.get("WORKBENCH_SCENES")
    return _find_shipped(name, "specs", ".yaml", [Path(env)] if env else [])


def find_data(name: str, suffix: str = ".json") -> Path:
    """``name`` itself if it is a file, else the shipped data file of that name (with or
    without ``suffix``: ``markov_block`` finds ``data/markov_block.json`` in the repository or
    ``<prefix>/share/rigid-workbench/data``); ``Path(name)`` when nothing matches."""
    return _find_shipped(name, "data", suffix)


def scene_summary(path: Path) -> str:
    """The scene's one-line ``description`` (YAML) or its docstring's first line (script)."""
    if path.suffix == ".py":
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        return doc.strip().splitlines()[0] if doc.strip() else ""
    data = peek(path)
    if data is INVALID:
        return "(invalid YAML)"
    return str(data.get("description", "")) if isinstance(data, dict) else ""
