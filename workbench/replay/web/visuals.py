"""What the web replay page draws of each body: its shapes in the body frame, their colours, and
where the body's centre of mass sits in its frame. Pure (numpy, the scene model, the standard
library's XML reader); the engine is not built.

The page must look like PyBullet's frames, so the rules follow the engine
(:mod:`workbench.sim.engine`, :mod:`workbench.sim.arguments`):

- A shape is drawn in the body (link) frame the scene defines: a box about its centre, a sphere,
  a cylinder or a capsule along the body z axis (``length`` between the cap centres), a mesh
  file's triangles times its ``scale``. A plane is a thin slab whose top face is the plane; the
  page sizes it to the scene (PyBullet draws 20 m × 20 m).
- Colours: the engine's (:func:`workbench.sim.arguments.body_colour`; a plane is
  ``PLANE_COLOUR``); a URDF keeps its own materials.
- A trajectory records each centre of mass, so the page places the body frame at
  ``position - R(orientation) @ com`` with the centre of mass ``com`` (body frame) the run was
  made with: ``<body>/com`` from the run's ``params`` (a sampled realization) or the scene's.
- A URDF body is drawn from its base link's ``<visual>`` elements (box, sphere, cylinder, mesh),
  its centre of mass from ``<inertial>``, both scaled by ``global_scaling``. With ``links``,
  every other link is drawn the same way as a row of its own (the tracked links of
  ``workbench/scene/links.py``, after the scene's bodies): a link row records the link's centre
  of mass and its URDF link frame, the frame of its ``<visual>`` and ``<inertial>`` origins.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from workbench.errors import SceneError
from workbench.scene.bodies import mesh_triangles, resolve_file
from workbench.scene.model import Body, Scene
from workbench.sim.arguments import PLANE_COLOUR, SLAB_DEPTH, body_colour
from workbench.sim.frames import z_to

__all__ = [
    "Part",
    "BodyVisual",
    "body_visuals",
]

#: Colour of a URDF visual without a material, RGB (PyBullet draws those white).
_URDF_DEFAULT_COLOUR = (1.0, 1.0, 1.0)


@dataclass
class Part:
    """One drawn solid of a body, in the body frame.

    Attributes
    ----------
    kind : str
        ``sphere``, ``box``, ``cylinder``, ``capsule``, ``plane`` or ``mesh``.
    size : tuple of float
        Sphere ``(r,)``; box ``(sx, sy, sz)`` full sides; cylinder and capsule ``(r, length)``;
        plane ``()`` (sized by the page); mesh ``()`` (its vertices are in metres).
    colour : tuple of float
        RGB in [0, 1], sRGB as PyBullet takes ``rgbaColor``.
    offset : ndarray, shape (3,)
        Position of the part's frame in the body frame, m.
    rotation : ndarray, shape (4,)
        Quaternion (x, y, z, w) of the part's frame in the body frame.
    vertices, faces : ndarray or None
        A mesh's triangles: vertices (k, 3), m, and faces (m, 3) indices.
    """

    kind: str
    size: tuple
    colour: tuple
    offset: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rotation: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 0.0, 1.0]))
    vertices: np.ndarray | None = None
    faces: np.ndarray | None = None

    def reach(self) -> float:
        """Largest distance of the part's solid from the body origin, m (a plane: 0)."""
        if self.kind == "sphere":
            r = self.size[0]
        elif self.kind == "box":
            r = 0.5 * math.hypot(*self.size)
        elif self.kind == "cylinder":
            r = math.hypot(self.size[0], 0.5 * self.size[1])
        elif self.kind == "capsule":
            r = self.size[0] + 0.5 * self.size[1]
        elif self.kind == "mesh":
            r = float(np.max(np.linalg.norm(self.vertices, axis=1)))
        else:
            return 0.0
        return r + float(np.linalg.norm(self.offset))


@dataclass
class BodyVisual:
    """What is drawn of one body and where its centre of mass is.

    Attributes
    ----------
    parts : list of Part
        The solids, in the body frame.
    com : ndarray, shape (3,)
        The scene's centre of mass in the body frame, m (a run's ``<body>/com`` replaces it).
    is_sphere : bool
        One uniformly coloured sphere centred on the origin: its orientation cannot be seen, so
        the page stores no quaternions for it.
    """

    parts: list[Part]
    com: np.ndarray
    is_sphere: bool = False


def body_visuals(scene: Scene, links: bool = False) -> list[BodyVisual]:
    """The :class:`BodyVisual` of every body of ``scene``, in the scene's order, then, with
    ``links``, of every tracked link of its URDF bodies (rows ``Scene.tracked_names``).

    Raises
    ------
    SceneError
        For a mesh or URDF file that cannot be found or read.
    """
    out = []
    for k, body in enumerate(scene.bodies):
        colour = (PLANE_COLOUR if body.shape.type == "plane" else body_colour(k, body))[:3]
        if body.shape.type == "urdf":
            out.append(_urdf_visual(scene, body))
            continue
        props = body.mass_properties
        com = np.zeros(3) if props is None else np.asarray(props.com, dtype=float)
        part = _shape_part(scene, body, colour)
        out.append(BodyVisual([part], com, is_sphere=part.kind == "sphere"))
    for link in scene.links if links else ():
        out.append(_urdf_visual(scene, scene.bodies[link.body_index], link.link))
    return out


def _shape_part(scene: Scene, body: Body, colour) -> Part:
    """The one :class:`Part` of a body's (non-URDF) shape."""
    shape = body.shape
    if shape.type == "sphere":
        return Part("sphere", (shape.radius,), colour)
    if shape.type == "box":
        return Part("box", tuple(2.0 * h for h in shape.halves), colour)
    if shape.type in ("cylinder", "capsule"):
        return Part(shape.type, (shape.radius, shape.length), colour)
    if shape.type == "plane":
        normal = np.asarray(shape.normal, dtype=float)
        normal = normal / np.linalg.norm(normal)
        # the slab's top face is the plane, as the engine draws it (sim/arguments.py)
        return Part("plane", (), colour, -SLAB_DEPTH * normal, z_to(normal).as_quat())
    if shape.type == "mesh":
        where = f"bodies.{body.name}.shape.file"
        path = resolve_file(shape.file, scene.base_dir)
        if path is None:
            raise SceneError(scene.source, where, f"mesh file '{shape.file}' not found")
        vertices, faces = _triangles(scene, where, path, shape.scale3)
        return Part("mesh", (), colour, vertices=vertices, faces=faces)
    raise AssertionError(shape.type)  # pragma: no cover - the schema allows no other


def _triangles(scene: Scene, where: str, path: Path, scale) -> tuple[np.ndarray, np.ndarray]:
    try:
        return mesh_triangles(path, scale)
    except ValueError as exc:
        raise SceneError(scene.source, where, str(exc)) from None


# ------------------------------------------------------------------------------------ URDF
def _urdf_visual(scene: Scene, body: Body, link_name: str | None = None) -> BodyVisual:
    """A link of a URDF body (its base link by default): its visuals and centre of mass, in the
    link frame, scaled."""
    where = f"bodies.{body.name}.shape.file"
    path = resolve_file(body.shape.file, scene.base_dir)
    if path is None:
        raise SceneError(scene.source, where, f"URDF '{body.shape.file}' not found")
    try:
        robot = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        raise SceneError(scene.source, where, f"cannot read URDF '{path.name}': {exc}") from None
    s = float(body.shape.global_scaling)
    links = {link.get("name"): link for link in robot.findall("link")}
    children = {
        j.find("child").get("link") for j in robot.findall("joint") if j.find("child") is not None
    }
    base = next((link for name, link in links.items() if name not in children), None)
    if base is None:
        raise SceneError(scene.source, where, f"URDF '{path.name}' has no base link")
    if link_name is not None:
        base = links[link_name]
    named = {}  # robot-level materials by name
    for m in robot.findall("material"):
        rgba = m.find("color")
        if rgba is not None:
            named[m.get("name")] = _floats(rgba.get("rgba"), 4)[:3]
    com = np.zeros(3)
    inertial = base.find("inertial")
    if inertial is not None and inertial.find("origin") is not None:
        com = s * _floats(inertial.find("origin").get("xyz"), 3)
    parts = []
    for visual in base.findall("visual"):
        geometry = visual.find("geometry")
        if geometry is None or len(geometry) == 0:
            continue
        offset, rotation = np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0])
        origin = visual.find("origin")
        if origin is not None:
            offset = s * _floats(origin.get("xyz"), 3)
            # URDF rpy: fixed-axis roll, pitch, yaw, R = Rz(y) Ry(p) Rx(r)
            rotation = Rotation.from_euler("xyz", _floats(origin.get("rpy"), 3)).as_quat()
        colour = _URDF_DEFAULT_COLOUR
        material = visual.find("material")
        if material is not None:
            rgba = material.find("color")
            if rgba is not None:
                colour = tuple(_floats(rgba.get("rgba"), 4)[:3])
            else:
                colour = tuple(named.get(material.get("name"), colour))
        g = geometry[0]
        if g.tag == "box":
            part = Part("box", tuple(s * _floats(g.get("size"), 3)), colour)
        elif g.tag == "sphere":
            part = Part("sphere", (s * float(g.get("radius")),), colour)
        elif g.tag in ("cylinder", "capsule"):
            part = Part(g.tag, (s * float(g.get("radius")), s * float(g.get("length"))), colour)
        elif g.tag == "mesh":
            mesh_path = resolve_file(g.get("filename", ""), str(path.parent))
            if mesh_path is None:
                raise SceneError(
                    scene.source, where, f"mesh '{g.get('filename')}' of '{path.name}' not found"
                )
            scale = s * _floats(g.get("scale"), 3, default=1.0)
            vertices, faces = _triangles(scene, where, mesh_path, scale)
            part = Part("mesh", (), colour, vertices=vertices, faces=faces)
        else:
            continue  # a geometry PyBullet's URDF reader would not draw either
        part.offset, part.rotation = offset, rotation
        parts.append(part)
    return BodyVisual(parts, com)


def _floats(text: str | None, n: int, default: float = 0.0) -> np.ndarray:
    """``n`` floats from a URDF attribute such as ``"0 0.1 0"`` (missing: ``default``)."""
    if not text:
        return np.full(n, default)
    values = np.array([float(x) for x in text.split()], dtype=float)
    return values if len(values) == n else np.resize(values, n)
