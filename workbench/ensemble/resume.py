"""Whether an ensemble file belongs to this run (``--resume``): the provenance a file records
(the scene's text, hashed, and the versions of the code that decides a realization's bits) and
the check that the realizations a resumed run adds equal those the interrupted run would have
made — else one line naming the first difference (a setting, a parameter, a version)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from workbench.errors import WorkbenchError

__all__ = ["PROVENANCE_ATTRS", "asset_files", "assets_sha256", "check_resume", "provenance_of"]

#: Root attributes that, with the resolved scene (``scene_json``), ``n_realizations``,
#: ``seed_entropy`` and ``workbench_version``, decide the bits of a realization; ``--resume``
#: refuses a file whose values differ from this run's. numpy and scipy draw the random inputs,
#: PyBullet integrates them; ``assets_sha256`` hashes the mesh and URDF files the scene's
#: bodies are made of (the scene names them; their bytes decide the shapes and masses).
PROVENANCE_ATTRS = (
    "scene_sha256",
    "assets_sha256",
    "pybullet_version",
    "numpy_version",
    "scipy_version",
)


def provenance_of(scene) -> dict[str, str]:
    """The :data:`PROVENANCE_ATTRS` of this run (versions from package metadata: PyBullet is
    imported by the engine only)."""
    from importlib.metadata import PackageNotFoundError, version

    def dist(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "unknown"

    text = str(scene.source_text).encode("utf-8", "surrogateescape")
    return {
        "scene_sha256": hashlib.sha256(text).hexdigest(),
        "assets_sha256": assets_sha256(scene),
        "pybullet_version": dist("pybullet"),
        "numpy_version": np.__version__,
        "scipy_version": dist("scipy"),
    }


def asset_files(scene) -> list[Path]:
    """The files the scene's bodies are read from, in body order: each ``mesh`` or ``urdf``
    body's file, and a URDF's collision meshes after it (visual meshes decide nothing a
    realization stores). Files that cannot be found are left out (building the scene reports
    them)."""
    from workbench.scene.bodies import resolve_file
    from workbench.scene.urdf import read_urdf

    out: list[Path] = []
    for body in scene.bodies:
        shape = body.shape
        if shape.type not in ("mesh", "urdf"):
            continue
        path = resolve_file(shape.file, scene.base_dir)
        if path is None:
            continue
        out.append(Path(path))
        if shape.type == "urdf":
            for link in read_urdf(path, shape.global_scaling).links:
                out.extend(Path(c.filename) for c in link.collisions if c.filename)
    return [p for p in out if p.is_file()]


def assets_sha256(scene) -> str:
    """SHA-256 over the SHA-256 of each of :func:`asset_files` (in order): a mesh or URDF
    edited between an interrupted run and its ``--resume`` changes it."""
    h = hashlib.sha256()
    for path in asset_files(scene):
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def check_resume(store, scene, n: int, entropy: int | None, provenance: dict[str, str]) -> int:
    """The stored seed entropy, after checking that the realizations this run would add equal
    those it would have made when the file was created; else a one-line error naming the first
    difference."""
    from workbench import __version__
    from workbench.scene.loader import scene_to_json

    attrs = store.attrs
    path = store.path
    if attrs.get("kind") != "ensemble":
        raise WorkbenchError(
            f"{path}: --resume needs an ensemble file, this is a {attrs.get('kind')}"
        )
    if store.n_realizations != n:
        raise WorkbenchError(
            f"{path}: --resume with -n {n}, but the file was created for {store.n_realizations}"
        )
    stored = int(attrs["seed_entropy"])
    if entropy is not None and entropy != stored:
        raise WorkbenchError(f"{path}: --resume with --seed {entropy}, the file used {stored}")
    difference = _scene_difference(str(attrs.get("scene_json", "")), scene_to_json(scene))
    if difference:
        raise WorkbenchError(f"{path}: --resume: the file was made with {difference}")
    if "scene_sha256" in attrs:
        same_source = str(attrs["scene_sha256"]) == provenance["scene_sha256"]
    else:
        same_source = attrs.get("scene", "") == scene.source_text
    if not same_source:
        raise WorkbenchError(
            f"{path}: --resume with a scene file whose text differs from the one stored "
            "(the resolved scene is the same: compare with `workbench inspect`)"
        )
    versions = {"workbench_version": __version__, **provenance}
    if "assets_sha256" in attrs and str(attrs["assets_sha256"]) != provenance["assets_sha256"]:
        raise WorkbenchError(
            f"{path}: --resume: the scene's mesh or URDF files differ from those the file was "
            "made with; its realizations would not match the new ones"
        )
    for key, now in versions.items():
        if key in attrs and str(attrs[key]) != now:
            name = key.removesuffix("_version")
            raise WorkbenchError(
                f"{path}: --resume: the file was made with {name} {attrs[key]}, this is "
                f"{name} {now}; its realizations would not match the new ones"
            )
    missing = [key for key in versions if key not in attrs]
    if missing:
        raise WorkbenchError(
            f"{path}: --resume: the file was written by an older workbench that did not record "
            f"{', '.join(missing)}, so it cannot be checked against this run; run it again "
            "without --resume"
        )
    return stored


def _scene_difference(stored: str, now: str) -> str:
    """The first difference between two :func:`scene_to_json` texts, as "what then, now"
    ("duration 1.0 s, now 0.5 s"); "" when the resolved scenes are equal. The scene file's
    location (``source``, ``base_dir``) is not compared: the same file may be named differently."""
    try:
        old = json.loads(stored)["scene"]
    except (ValueError, KeyError, TypeError):
        return "a resolved scene (scene_json) this workbench cannot read"
    new = json.loads(now)["scene"]
    where = _first_difference(old, new, ())
    if where is None:
        return ""
    keys, a, b = where
    if len(keys) == 2 and keys[0] == "settings" and keys[1] in ("dt", "duration"):
        return f"{keys[1]} {a} s, now {b} s"
    if len(keys) == 2 and keys[0] == "settings":
        return f"{keys[1]} {a}, now {b}"
    if len(keys) == 2 and keys[0] == "parameters":
        return f"parameter {keys[1]} = {a}, now {b}"
    dotted = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys).lstrip(".")
    return f"{dotted or 'the scene'} = {a}, now {b}"


_ABSENT = "(absent)"


def _first_difference(a, b, keys: tuple):
    """``(keys, a_value, b_value)`` at the first place two JSON values differ, else None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in [*a, *(k for k in b if k not in a)]:
            found = _first_difference(a.get(k, _ABSENT), b.get(k, _ABSENT), (*keys, k))
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_difference(x, y, (*keys, k))
            if found is not None:
                return found
        return None
    if a == b and type(a) is type(b):
        return None
    return keys, *_shown(a, b)


#: Characters of a value a refused resume shows, and of the common text kept before the first
#: difference when it must cut: both values are cut at the same place, so the cut shows where
#: they differ (issue 39: two long texts cut at 57 characters looked equal).
SHOWN_CHARS = 60
CONTEXT_CHARS = 20


def _shown(a, b) -> tuple[str, str]:
    """``a`` and ``b`` as text of at most about :data:`SHOWN_CHARS` characters each, cut alike
    around the first character where they differ."""
    ta, tb = (v if isinstance(v, str) else json.dumps(v) for v in (a, b))
    if max(len(ta), len(tb)) <= SHOWN_CHARS:
        return ta, tb
    common = next(
        (k for k, (x, y) in enumerate(zip(ta, tb, strict=False)) if x != y), min(len(ta), len(tb))
    )
    start = max(0, common - CONTEXT_CHARS)
    stop = start + SHOWN_CHARS - 6  # room for the two "..."

    def cut(text: str) -> str:
        return ("..." if start else "") + text[start:stop] + ("..." if len(text) > stop else "")

    return cut(ta), cut(tb)
