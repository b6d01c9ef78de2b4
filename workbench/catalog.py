"""Shipped scenes: where they are and what each shows.

Looked up in order: ``$WORKBENCH_SCENES``, the ``scenes/`` folder of a source checkout, and
``<prefix>/share/rigid-workbench/scenes`` where ``pip install .`` puts them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

__all__ = [
    "scene_dirs",
    "is_scene_file",
    "shipped_scenes",
    "find_scene",
    "find_data",
    "find_spec",
    "scene_summary",
]


def scene_dirs() -> list[Path]:
    """Existing folders that hold shipped scenes, in lookup order."""
    dirs = []
    if os.environ.get("WORKBENCH_SCENES"):
        dirs.append(Path(os.environ["WORKBENCH_SCENES"]))
    dirs.append(Path(__file__).resolve().parent.parent / "scenes")
    dirs.append(Path(sys.prefix) / "share" / "rigid-workbench" / "scenes")
    return [d for d in dirs if d.is_dir()]


def is_scene_file(path: Path) -> bool:
    """A YAML file with ``bodies`` at the top level (inference specs beside the scenes have
    none), or a ``.py`` script defining ``build``."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        return "def build" in text
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return True  # listed, so that `workbench check` can say what is wrong with it
    return isinstance(data, dict) and "bodies" in data


def shipped_scenes() -> list[Path]:
    """Scene files (``.yaml`` and ``.py`` scripts with ``build``) of the first scene folder."""
    for d in scene_dirs():
        files = [f for f in sorted(d.glob("*.yaml")) if is_scene_file(f)] + sorted(
            f for f in d.glob("*.py") if "def build" in f.read_text(encoding="utf-8")
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
    """``name`` itself if it is a file, else the shipped spec (inference or inverse, beside the
    scenes) of that name, with or without ``.yaml``; ``Path(name)`` when nothing matches."""
    p = Path(name)
    if p.exists() or p.parent != Path("."):
        return p
    for d in scene_dirs():
        for candidate in (d / name, d / f"{name}.yaml"):
            if candidate.is_file():
                return candidate
    return p


def find_data(name: str, suffix: str = ".json") -> Path:
    """``name`` itself if it is a file, else the shipped data file of that name (with or
    without ``suffix``: ``markov_block`` finds ``data/markov_block.json`` in the repository or
    ``<prefix>/share/rigid-workbench/data``); ``Path(name)`` when nothing matches."""
    p = Path(name)
    if p.exists() or p.parent != Path("."):
        return p
    dirs = [
        Path(__file__).resolve().parent.parent / "data",
        Path(sys.prefix) / "share" / "rigid-workbench" / "data",
    ]
    for d in dirs:
        for candidate in (d / name, d / f"{name}{suffix}"):
            if candidate.is_file():
                return candidate
    return p


def scene_summary(path: Path) -> str:
    """The scene's one-line ``description`` (YAML) or its docstring's first line (script)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        import ast

        doc = ast.get_docstring(ast.parse(text)) or ""
        return doc.strip().splitlines()[0] if doc.strip() else ""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return "(invalid YAML)"
    return str(data.get("description", "")) if isinstance(data, dict) else ""
