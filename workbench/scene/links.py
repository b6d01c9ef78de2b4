"""The tracked links of a scene's URDF bodies: which rows a run records after the scene's bodies.

Every link of a URDF body other than its base (the root link, which is the body's own row) is a
tracked row named ``"<body>/<link>"``. Rows follow the scene's bodies, body by body in scene
order, links in PyBullet's order (link index 0, 1, ...: :func:`workbench.scene.urdf.read_urdf`),
so the rows of the scene's bodies keep their indices, and a scene without URDF links records
exactly the rows it recorded before links were tracked. The state convention of a link row is a
body's (``workbench/sim/state.py``): centre-of-mass position, URDF link frame orientation,
centre-of-mass velocity, world angular velocity. The moving joints (revolute, continuous,
prismatic) are recorded too, one column each, named ``"<body>/<joint>"``.

Pure: reads URDF files (cached by path, scaling and modification time), no engine.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.scene.bodies import Body, resolve_file
from workbench.scene.urdf import UrdfModel, read_urdf

__all__ = [
    "MOVING_JOINTS",
    "TrackedLink",
    "TrackedJoint",
    "tracked_links",
    "tracked_joints",
    "urdf_model",
    "link_names_of",
]

#: Joint types whose coordinate PyBullet reports and sets (one degree of freedom each).
MOVING_JOINTS = ("revolute", "continuous", "prismatic")


@dataclass(frozen=True)
class TrackedLink:
    """One tracked link row.

    Attributes
    ----------
    name : str
        Row name, ``"<body>/<link>"``.
    body : str
        The scene body (a URDF model).
    body_index : int
        Its index in the scene's bodies (its own row: the base link).
    link : str
        The link's name in the URDF file.
    index : int
        PyBullet's link index (>= 0; the base is -1).
    parent : str
        Row name of the parent link: ``"<body>"`` when it is the base.
    joint : str
        The URDF joint from the parent link to this one.
    joint_type : str
        Its type (revolute, continuous, prismatic, fixed, ...).
    """

    name: str
    body: str
    body_index: int
    link: str
    index: int
    parent: str
    joint: str
    joint_type: str

    def info(self) -> dict:
        """The row's description as a trajectory and a store hold it (``link_info``)."""
        keys = ("body", "link", "index", "parent", "joint", "joint_type")
        return {key: getattr(self, key) for key in keys}


@dataclass(frozen=True)
class TrackedJoint:
    """One moving joint: ``name`` ``"<body>/<joint>"``, the link row it moves, its type."""

    name: str
    link: TrackedLink
    type: str

    def info(self) -> dict:
        unit = "m" if self.type == "prismatic" else "rad"
        return {"link": self.link.name, "type": self.type, "unit": unit}


@functools.lru_cache(maxsize=64)
def _read(path: str, scaling: float, mtime_ns: int) -> UrdfModel:
    return read_urdf(path, scaling)


def urdf_model(body: Body, base_dir: str | None) -> UrdfModel | None:
    """The URDF model of ``body`` (None for other shapes or a file that is not found, which the
    scene's validation reports)."""
    if body.shape.type != "urdf":
        return None
    path = resolve_file(body.shape.file, base_dir)
    if path is None:
        return None
    return _read(str(path), float(body.shape.global_scaling), os.stat(path).st_mtime_ns)


def tracked_links(bodies: Sequence[Body], base_dir: str | None) -> tuple[TrackedLink, ...]:
    """The link rows of ``bodies`` (a scene's, in order): see the module docstring."""
    out = []
    for k, body in enumerate(bodies):
        model = urdf_model(body, base_dir)
        if model is None:
            continue
        base = model.base.name
        for link in model.links[1:]:
            joint = link.joint
            parent = body.name if joint.parent == base else f"{body.name}/{joint.parent}"
            out.append(
                TrackedLink(
                    name=f"{body.name}/{link.name}",
                    body=body.name,
                    body_index=k,
                    link=link.name,
                    index=link.index,
                    parent=parent,
                    joint=joint.name,
                    joint_type=joint.type,
                )
            )
    return tuple(out)


def tracked_joints(links: Sequence[TrackedLink]) -> tuple[TrackedJoint, ...]:
    """The moving joints of ``links``, in link order (PyBullet's joint i moves link i)."""
    return tuple(
        TrackedJoint(f"{link.body}/{link.joint}", link, link.joint_type)
        for link in links
        if link.joint_type in MOVING_JOINTS
    )


def link_names_of(body: Body, base_dir: str | None) -> tuple[str, ...]:
    """All link names of a URDF body, base first (empty for other shapes)."""
    model = urdf_model(body, base_dir)
    return () if model is None else model.link_names
