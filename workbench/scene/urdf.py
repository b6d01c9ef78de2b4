"""What the workbench reads of a URDF file: its links, their inertials, and the joints between them.

Pure (``xml.etree``, numpy, scipy's rotations): no PyBullet. The scene uses it to name a URDF body's
links before any engine exists (uncertain links, tracked links, observers), and the engine checks
its link order against PyBullet's own (``getJointInfo``).

Conventions, as the URDF specification (https://wiki.ros.org/urdf/XML) and PyBullet's importer:

- A link's ``<inertial>`` has an ``<origin xyz rpy>`` placing the inertial frame in the link frame
  (its xyz is the centre of mass), a ``<mass value>`` and an ``<inertia ixx ixy ixz iyy iyz izz>``
  about the centre of mass in the inertial frame. A link without ``<inertial>`` gets PyBullet's
  defaults: mass 1 kg, centre of mass at the link origin, inertia diag(1, 1, 1) kg m² (with a
  warning from PyBullet; ``UrdfLink.inertial_given`` says which).
- ``rpy`` is roll, pitch, yaw about the fixed x, y, z axes: R = Rz(yaw) Ry(pitch) Rx(roll).
- Links are numbered as PyBullet numbers them: the root link is -1 (the "base"), then the child
  links depth first, children in the order their joints appear in the file; link i is the child of
  joint i.
- ``global_scaling`` s multiplies lengths: the centre of mass by s; the mass and the file's
  inertia tensor are kept, as PyBullet's importer does with ``URDF_USE_INERTIA_FROM_FILE``
  (measured with PyBullet 3.2.7: at s = 2 ``getDynamicsInfo`` reports the file's principal
  moments unchanged and the centre of mass doubled; without the flag PyBullet computes the
  tensor from the scaled collision shapes instead).

:func:`urdf_with_inertials` writes a copy of a file with some links' ``<inertial>`` replaced:
how random links reach PyBullet, which cannot move a link's inertial frame after loading.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from workbench.errors import WorkbenchError
from workbench.scene.inertia import principal_frame

__all__ = [
    "UrdfError",
    "UrdfInertial",
    "UrdfJoint",
    "UrdfLink",
    "UrdfCollision",
    "UrdfModel",
    "resolve_filename",
    "read_urdf",
    "urdf_with_inertials",
]

#: PyBullet's inertial for a link that declares none (BulletUrdfImporter: mass 1, unit inertia).
DEFAULT_MASS = 1.0
DEFAULT_INERTIA = (1.0, 1.0, 1.0)


class UrdfError(WorkbenchError, ValueError):
    """A URDF file that cannot be read as a tree of links, or whose numbers are not physical;
    the message names file and element. A :class:`~workbench.errors.WorkbenchError`, so that one
    escaping the scene's validation is still one line (the scene reports it first, located)."""


@dataclass(frozen=True)
class UrdfInertial:
    """A link's mass properties in its link frame (the centre of mass scaled by
    ``global_scaling``).

    Attributes
    ----------
    mass : float
        kg.
    com : ndarray, shape (3,)
        Centre of mass in the link frame, m.
    inertia : ndarray, shape (3, 3)
        Inertia tensor about the centre of mass, expressed in the link frame (R I Rᵀ with R the
        inertial origin's rotation), kg m².
    """

    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass(frozen=True)
class UrdfJoint:
    """A joint: its type, the links it connects, its axis (in the child link frame) and the
    dynamics and limits the file declares (``None`` where it declares none)."""

    name: str
    type: str  # revolute, continuous, prismatic, fixed, floating, planar
    parent: str
    child: str
    axis: np.ndarray
    damping: float | None = None
    friction: float | None = None
    lower: float | None = None
    upper: float | None = None
    effort: float | None = None
    velocity: float | None = None

    @property
    def moves(self) -> bool:
        """True for a joint with one degree of freedom PyBullet drives (revolute, continuous,
        prismatic)."""
        return self.type in ("revolute", "continuous", "prismatic")


@dataclass(frozen=True)
class UrdfCollision:
    """One ``<collision>`` geometry of a link, scaled by ``global_scaling``.

    Attributes
    ----------
    geometry : str
        ``box``, ``sphere``, ``cylinder``, ``capsule`` or ``mesh``.
    xyz, rpy : tuple of 3 floats
        Its origin in the link frame: m, and fixed-axis roll, pitch, yaw, rad (tuples: the
        collisions are hashable, to cache what is computed from them).
    size : tuple of float
        ``box``: full sizes (3); ``sphere``: (radius,); ``cylinder``, ``capsule``: (radius,
        length) along the geometry's z; ``mesh``: the scale (3).
    filename : str
        A mesh's file, absolute where it was found (:func:`resolve_filename`); "" otherwise.
    """

    geometry: str
    xyz: tuple[float, float, float]
    rpy: tuple[float, float, float]
    size: tuple[float, ...]
    filename: str = ""


@dataclass(frozen=True)
class UrdfLink:
    """A link: its name, PyBullet index (-1 for the base), parent joint, inertial and collision
    geometries."""

    name: str
    index: int
    joint: UrdfJoint | None
    inertial: UrdfInertial
    inertial_given: bool
    collisions: tuple[UrdfCollision, ...] = ()


@dataclass(frozen=True)
class UrdfModel:
    """A URDF file's tree: links in PyBullet's order (base first) and the joints."""

    path: Path
    robot: str
    links: tuple[UrdfLink, ...]

    @property
    def base(self) -> UrdfLink:
        return self.links[0]

    @property
    def link_names(self) -> tuple[str, ...]:
        return tuple(link.name for link in self.links)

    @property
    def joints(self) -> tuple[UrdfJoint, ...]:
        """The joints, joint i having child link i (PyBullet's joint index)."""
        return tuple(link.joint for link in self.links[1:])  # type: ignore[misc]

    def link(self, name: str) -> UrdfLink:
        for link in self.links:
            if link.name == name:
                return link
        raise KeyError(name)

    def joint(self, name: str) -> UrdfJoint:
        for j in self.joints:
            if j.name == name:
                return j
        raise KeyError(name)


def read_urdf(path: str | Path, global_scaling: float = 1.0) -> UrdfModel:
    """Read a URDF file's links, inertials and joints (see the module docstring for conventions).

    Raises
    ------
    UrdfError
        For a file that is not XML, whose root is not ``<robot>``, with links or joints without
        names, a joint naming a link that does not exist, or a tree without exactly one root.
    """
    path = Path(path)
    try:
        robot = ET.parse(path).getroot()
    except (ET.ParseError, OSError, ValueError) as exc:
        problem = " ".join(str(exc).split())
        raise UrdfError(f"'{path.name}' cannot be read as URDF: not XML ({problem})") from None
    if robot.tag != "robot":
        raise UrdfError(f"'{path.name}': root element <{robot.tag}>, expected <robot>")
    s = float(global_scaling)
    elements = {}
    for link in robot.findall("link"):
        name = link.get("name")
        if not name:
            raise UrdfError(f"'{path.name}': a <link> without a name")
        if name in elements:
            raise UrdfError(f"'{path.name}': link '{name}' declared twice")
        elements[name] = link
    joints: list[UrdfJoint] = []
    for j in robot.findall("joint"):
        try:
            joints.append(_joint(path, j, elements))
        except UrdfError as exc:
            if str(exc).startswith(f"'{path.name}'"):
                raise
            raise UrdfError(f"'{path.name}': joint '{j.get('name')}': {exc}") from None
    children = {j.child for j in joints}
    roots = [name for name in elements if name not in children]
    if not elements:
        raise UrdfError(f"'{path.name}': no <link>; expected at least one")
    if len(roots) != 1:
        found = f"{len(roots)} ({', '.join(roots)})" if roots else "none (a loop)"
        raise UrdfError(f"'{path.name}': expected one root link, found {found}")
    by_parent: dict[str, list[UrdfJoint]] = {}
    for j in joints:
        by_parent.setdefault(j.parent, []).append(j)
    links: list[UrdfLink] = []

    def visit(name: str, joint: UrdfJoint | None) -> None:  # depth first, file order
        try:
            inertial, given = _inertial(path, elements[name], s)
            collisions = _collisions(path, elements[name], s)
        except UrdfError as exc:
            raise UrdfError(f"'{path.name}': link '{name}': {exc}") from None
        links.append(UrdfLink(name, len(links) - 1, joint, inertial, given, collisions))
        for child_joint in by_parent.get(name, ()):
            visit(child_joint.child, child_joint)

    visit(roots[0], None)
    if len(links) != len(elements):
        raise UrdfError(
            f"'{path.name}': its joints do not form a tree (a loop or a repeated child)"
        )
    return UrdfModel(path=path, robot=robot.get("name", path.stem), links=tuple(links))


def _joint(path: Path, j: ET.Element, links: dict) -> UrdfJoint:
    name = j.get("name")
    if not name:
        raise UrdfError(f"'{path.name}': a <joint> without a name")
    parent, child = j.find("parent"), j.find("child")
    if parent is None or child is None:
        raise UrdfError(f"'{path.name}': joint '{name}' needs <parent> and <child>")
    for end in (parent.get("link"), child.get("link")):
        if end not in links:
            raise UrdfError(
                f"'{path.name}': joint '{name}' names link '{end}', which is not declared"
            )
    axis = j.find("axis")
    a = _floats(axis.get("xyz") if axis is not None else None, 3, default=None)
    dyn, lim = j.find("dynamics"), j.find("limit")
    return UrdfJoint(
        name=name,
        type=j.get("type", "fixed"),
        parent=parent.get("link"),
        child=child.get("link"),
        axis=np.array([1.0, 0.0, 0.0]) if a is None else a,
        damping=_attr(dyn, "damping"),
        friction=_attr(dyn, "friction"),
        lower=_attr(lim, "lower"),
        upper=_attr(lim, "upper"),
        effort=_attr(lim, "effort"),
        velocity=_attr(lim, "velocity"),
    )


def _inertial(path: Path, link: ET.Element, s: float) -> tuple[UrdfInertial, bool]:
    el = link.find("inertial")
    if el is None:
        return UrdfInertial(DEFAULT_MASS, np.zeros(3), np.diag(DEFAULT_INERTIA)), False
    mass_el = el.find("mass")
    mass = _attr(mass_el, "value")
    # A mass of 0 is PyBullet's static link (17 links of pybullet_data's files declare it);
    # a negative or non-finite one is no mass at all: PyBullet loads it and the body hangs in
    # the air or its state turns NaN (issue 39).
    if mass is not None and not (math.isfinite(mass) and mass >= 0.0):
        raise UrdfError(f"<mass value='{mass_el.get('value')}'>: expected a finite mass >= 0 kg")
    origin = el.find("origin")
    xyz = _floats(origin.get("xyz") if origin is not None else None, 3, 0.0)
    rpy = _floats(origin.get("rpy") if origin is not None else None, 3, 0.0)
    i = el.find("inertia")
    names = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    v = {k: (_attr(i, k) or 0.0) for k in names}
    local = np.array(
        [
            [v["ixx"], v["ixy"], v["ixz"]],
            [v["ixy"], v["iyy"], v["iyz"]],
            [v["ixz"], v["iyz"], v["izz"]],
        ]
    )
    if not (np.all(np.isfinite(xyz)) and np.all(np.isfinite(rpy))):
        raise UrdfError("<inertial><origin>: expected finite xyz and rpy")
    bad = [k for k in names if not math.isfinite(v[k])]
    if bad:
        raise UrdfError(f"<inertia {bad[0]}='{i.get(bad[0])}'>: expected a finite number")
    R = Rotation.from_euler("xyz", rpy).as_matrix()  # fixed-axis roll, pitch, yaw
    inertia = R @ local @ R.T  # not scaled: the module docstring
    return UrdfInertial(float(mass or 0.0), xyz * s, inertia), True


def _collisions(path: Path, link: ET.Element, s: float) -> tuple[UrdfCollision, ...]:
    """The link's ``<collision>`` geometries PyBullet's importer knows (others are skipped)."""
    folder = path.resolve().parent
    out = []
    for col in link.findall("collision"):
        geometry = col.find("geometry")
        if geometry is None or len(geometry) == 0:
            continue
        g = geometry[0]
        origin = col.find("origin")
        given = origin is not None  # (an Element without children is falsy)
        xyz = tuple(float(x) * s for x in _floats(origin.get("xyz") if given else None, 3))
        rpy = tuple(float(x) for x in _floats(origin.get("rpy") if given else None, 3))
        if g.tag == "box":
            size = tuple(float(x) * s for x in _floats(g.get("size"), 3, 0.0))
        elif g.tag == "sphere":
            size = ((_attr(g, "radius") or 0.0) * s,)
        elif g.tag in ("cylinder", "capsule"):
            size = ((_attr(g, "radius") or 0.0) * s, (_attr(g, "length") or 0.0) * s)
        elif g.tag == "mesh":
            scale = tuple(float(x) * s for x in _floats(g.get("scale"), 3, 1.0))
            name = resolve_filename(g.get("filename") or "", folder)
            out.append(UrdfCollision("mesh", xyz, rpy, scale, name))
            continue
        else:
            continue
        out.append(UrdfCollision(g.tag, xyz, rpy, size))
    return tuple(out)


def _attr(el: ET.Element | None, name: str) -> float | None:
    if el is None or el.get(name) is None:
        return None
    try:
        return float(el.get(name))
    except ValueError:
        raise UrdfError(f"<{el.tag} {name}='{el.get(name)}'>: expected a number") from None


def _floats(text: str | None, n: int, default: float | None = 0.0) -> np.ndarray | None:
    """``n`` floats from an attribute such as ``"0 0.1 0"``; ``default`` everywhere if missing."""
    if not text:
        return None if default is None else np.full(n, float(default))
    try:
        values = np.array([float(x) for x in text.split()], dtype=float)
    except ValueError:
        raise UrdfError(f"'{text}': expected {n} numbers") from None
    if len(values) != n:
        raise UrdfError(f"'{text}': expected {n} numbers")
    return values


def urdf_with_inertials(path: str | Path, inertials: dict, global_scaling: float = 1.0) -> str:
    """The text of the URDF file ``path`` with the ``<inertial>`` of some links replaced, and
    every relative ``filename`` (meshes, textures) made absolute, so that the text loads from
    any folder.

    Parameters
    ----------
    path : str or Path
        The URDF file.
    inertials : dict of str to tuple
        Link name -> ``(mass, com, inertia)``: kg, (3,) m and (3, 3) kg m² about the centre of
        mass, in the link frame, scaled as :func:`read_urdf` reports them (so divided here by
        ``global_scaling``, which PyBullet multiplies back; the inertia is not scaled, see the
        module docstring).
    global_scaling : float

    Notes
    -----
    Each inertia J is written in its principal frame: J = R diag(m1, m2, m3) Rᵀ with det R = +1
    (:func:`~workbench.scene.inertia.principal_frame`, the frame primitive bodies use too), as
    ``<origin rpy>`` (fixed-axis roll, pitch, yaw) and a diagonal ``<inertia>``, every float
    written with ``repr`` (shortest round-trip): PyBullet, loading with
    ``URDF_USE_INERTIA_FROM_FILE``, then holds exactly the given mass, centre of mass (for
    ``global_scaling`` 1) and principal moments, and needs no diagonalisation of its own.
    """
    path = Path(path)
    try:
        tree = ET.parse(path)
    except (ET.ParseError, OSError) as exc:
        raise UrdfError(f"'{path.name}' cannot be read as URDF: {exc}") from None
    robot = tree.getroot()
    s = float(global_scaling)
    found = set()
    for link in robot.findall("link"):
        name = link.get("name")
        if name not in inertials:
            continue
        found.add(name)
        mass, com, J = inertials[name]
        moments, q = principal_frame(np.asarray(J, dtype=float))
        rpy = Rotation.from_quat(q).as_euler("xyz") if q[3] != 1.0 else np.zeros(3)
        old = link.find("inertial")
        if old is not None:
            link.remove(old)
        el = ET.Element("inertial")
        ET.SubElement(el, "origin", xyz=_text(np.asarray(com, dtype=float) / s), rpy=_text(rpy))
        ET.SubElement(el, "mass", value=repr(float(mass)))
        m = np.asarray(moments, dtype=float)
        zero = "0"
        ET.SubElement(
            el,
            "inertia",
            ixx=repr(float(m[0])),
            ixy=zero,
            ixz=zero,
            iyy=repr(float(m[1])),
            iyz=zero,
            izz=repr(float(m[2])),
        )
        link.insert(0, el)
    missing = sorted(set(inertials) - found)
    if missing:
        raise UrdfError(f"'{path.name}': no link named {', '.join(missing)}")
    folder = path.resolve().parent
    for el in robot.iter():
        name = el.get("filename")
        if name:
            el.set("filename", resolve_filename(name, folder))
    return ET.tostring(robot, encoding="unicode")


def _text(values) -> str:
    return " ".join(repr(float(x)) for x in values)


def resolve_filename(name: str, folder: Path) -> str:
    """A ``filename`` of a URDF in ``folder`` as an absolute path where the file exists there
    (``package://pkg/x`` is looked for as ``x`` and ``pkg/x`` in the folder and its parents, as
    PyBullet strips the scheme and searches); unchanged otherwise (PyBullet's search paths)."""
    if name.startswith("package://"):
        rest = name[len("package://") :]
        tails = [rest, rest.split("/", 1)[1] if "/" in rest else rest]
        for base in (folder, *folder.parents):
            for tail in tails:
                if (base / tail).is_file():
                    return str(base / tail)
        return name
    p = Path(name)
    if p.is_absolute():
        return name
    return str((folder / p).resolve()) if (folder / p).exists() else name
