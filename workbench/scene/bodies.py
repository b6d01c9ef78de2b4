"""A rigid body of a scene: its shape, contact material, air drag and resolved mass properties.

Mass properties (mass, centre of mass, inertia about it in the body frame) come from the shape
and ``mass`` or ``density`` (closed forms in :mod:`workbench.scene.inertia`, meshes through
trimesh), unless the body gives them. Units are SI. See ``docs/architecture.md`` (the scene wing).
"""

from __future__ import annotations

import functools
import math
import stat
import warnings
from pathlib import Path
from typing import Annotated, Any, Literal
from xml.etree import ElementTree

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError
from scipy.spatial.transform import Rotation

from workbench.scene import inertia as _inertia
from workbench.scene.fields import (
    PARAMETERS_GROUP,
    WORLD,
    Name,
    NonNegFloat,
    PosFloat,
    StrictModel,
    Vec3,
    Vec4,
)
from workbench.scene.random_inputs import BodyUncertainty
from workbench.scene.urdf import UrdfModel
from workbench.scene.urdf_body import RandomLink, checked_urdf_model, resolve_urdf

__all__ = [
    "Sphere",
    "Box",
    "Cylinder",
    "Capsule",
    "Plane",
    "Mesh",
    "Urdf",
    "UrdfJointSettings",
    "JointControl",
    "UrdfLinkSettings",
    "Shape",
    "Material",
    "Drag",
    "MassProperties",
    "Body",
    "resolve_file",
    "shape_hull_vertices",
    "urdf_link_hull_vertices",
    "mesh_triangles",
]

# --------------------------------------------------------------------------------------------
# Shapes


class Sphere(StrictModel):
    """Solid sphere of ``radius`` m."""

    type: Literal["sphere"]
    radius: PosFloat


class Box(StrictModel):
    """Solid box given by ``half_extents`` or full ``size`` (m), axes along the body frame."""

    type: Literal["box"]
    half_extents: tuple[PosFloat, PosFloat, PosFloat] | None = None
    size: tuple[PosFloat, PosFloat, PosFloat] | None = None

    @model_validator(mode="after")
    def _one_size(self) -> Box:
        if (self.half_extents is None) == (self.size is None):
            raise ValueError("give exactly one of 'half_extents' or 'size'")
        return self

    @property
    def halves(self) -> tuple[float, float, float]:
        if self.half_extents is not None:
            return self.half_extents
        return tuple(0.5 * s for s in self.size)  # type: ignore[return-value]


class Cylinder(StrictModel):
    """Solid cylinder along the body z axis."""

    type: Literal["cylinder"]
    radius: PosFloat
    length: PosFloat


class Capsule(StrictModel):
    """Capsule along z: ``length`` is the distance between the hemisphere centres."""

    type: Literal["capsule"]
    radius: PosFloat
    length: PosFloat


class Plane(StrictModel):
    """Infinite static plane through the body origin with the given normal (body frame)."""

    type: Literal["plane"]
    normal: Vec3 = (0.0, 0.0, 1.0)


class Mesh(StrictModel):
    """Triangle mesh from an OBJ/STL file (path relative to the scene file).

    Mass properties come from the closed mesh (trimesh); collision uses its convex hull unless
    ``collision: concave`` (static bodies only, as in PyBullet).
    """

    type: Literal["mesh"]
    file: str
    scale: PosFloat | tuple[PosFloat, PosFloat, PosFloat] = 1.0
    collision: Literal["convex_hull", "concave"] = "convex_hull"

    @property
    def scale3(self) -> tuple[float, float, float]:
        s = self.scale
        return (s, s, s) if isinstance(s, (int, float)) else tuple(s)  # type: ignore[return-value]


class JointControl(StrictModel):
    """A motor on a URDF joint (PyBullet's ``setJointMotorControl2``): ``position`` holds
    ``target`` (rad or m) with a PD law of gains ``position_gain`` and ``velocity_gain``
    (PyBullet's defaults 0.1 and 1 when not given), ``velocity`` drives the joint at ``target``
    (rad/s or m/s); both with at most ``max_force`` (N·m or N)."""

    mode: Literal["position", "velocity"]
    target: float = 0.0
    max_force: PosFloat
    position_gain: NonNegFloat | None = None
    velocity_gain: NonNegFloat | None = None


class UrdfJointSettings(StrictModel):
    """What the scene sets on one joint of a URDF body, over the URDF's own values.

    ``damping`` (N·m·s/rad or N·s/m, PyBullet's ``jointDamping``), ``friction`` (N·m or N: a
    velocity motor of target 0 and that maximum force, as PyBullet users model joint friction;
    ignored under ``control``), ``lower``/``upper`` limits (rad or m), ``initial_position`` at
    t = 0 (rad or m) and a ``control`` motor. ``${param}`` makes any of them uncertain.
    """

    damping: NonNegFloat | None = None
    friction: NonNegFloat | None = None
    lower: float | None = None
    upper: float | None = None
    initial_position: float | None = None
    control: JointControl | None = None


class UrdfLinkSettings(StrictModel):
    """What the scene sets on one link of a URDF body: its contact ``material`` (the body's
    otherwise)."""

    material: Material | None = None


class Urdf(StrictModel):
    """A URDF model (path relative to the scene file, or a file of PyBullet's bundled data).

    ``inertia``: ``collision`` (PyBullet's default: the inertia tensors of the file are replaced
    by ones computed from the collision shapes, mass and centre of mass kept) or ``file`` (the
    file's tensors, PyBullet's ``URDF_USE_INERTIA_FROM_FILE``; random links need it, so that
    the URDF's values are the nominal ones). ``joints`` and ``links`` set joints and links by
    name (:class:`UrdfJointSettings`, :class:`UrdfLinkSettings`).
    """

    type: Literal["urdf"]
    file: str
    global_scaling: PosFloat = 1.0
    inertia: Literal["collision", "file"] = "collision"
    joints: dict[str, UrdfJointSettings] = {}
    links: dict[str, UrdfLinkSettings] = {}

    @model_serializer(mode="wrap")
    def _without_defaults_of_new_fields(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        # a URDF body that sets none of inertia, joints, links dumps as before they existed:
        # the same scene_json, so the same file bytes
        data = handler(self)
        for key, default in (("inertia", "collision"), ("joints", {}), ("links", {})):
            if data.get(key) == default:
                data.pop(key, None)
        return data


Shape = Annotated[
    Sphere | Box | Cylinder | Capsule | Plane | Mesh | Urdf, Field(discriminator="type")
]


# --------------------------------------------------------------------------------------------
# Bodies


class Material(StrictModel):
    """Contact material of one body.

    PyBullet combines the two bodies of a contact by *product* for friction and restitution,
    μ = μ_A μ_B and e = e_A e_B, but rolling and spinning friction by ρ = ρ_A μ_B + ρ_B μ_A
    (measured in 8 combinations; see ``reverse/runs/contacts.py``). The workbench default friction
    is 1 (not PyBullet's 0.5), the neutral element of the product, so the μ you give one body is
    the effective μ against a body that does not say. Restitution defaults to 0 (inelastic) as in
    PyBullet; a bounce needs restitution on *both* bodies (e.g. ground 1, ball 0.6 → 0.6).
    Rolling and spinning friction give a torque = coefficient × normal force.
    """

    friction: NonNegFloat = 1.0
    rolling_friction: NonNegFloat = 0.0
    spinning_friction: NonNegFloat = 0.0
    restitution: Annotated[float, Field(ge=0, le=1)] = 0.0


class Drag(StrictModel):
    """Quadratic air drag F = −m c |v| v on the centre of mass.

    Give ``c`` (1/m) directly, or ``cd``, ``area`` (m²) and ``air_density`` (kg/m³), from which
    c = ρ C_d A / (2 m).
    """

    c: NonNegFloat | None = None
    cd: NonNegFloat | None = None
    area: PosFloat | None = None
    air_density: PosFloat = 1.225

    @model_validator(mode="after")
    def _one_form(self) -> Drag:
        if self.c is None and (self.cd is None or self.area is None):
            raise ValueError("give 'c' (1/m), or both 'cd' and 'area' (m^2)")
        if self.c is not None and (self.cd is not None or self.area is not None):
            raise ValueError("give either 'c' or 'cd' and 'area', not both")
        return self

    def coefficient(self, mass: float) -> float:
        """c in 1/m for a body of ``mass`` kg."""
        if self.c is not None:
            return self.c
        return self.air_density * self.cd * self.area / (2.0 * mass)  # type: ignore[operator]


class MassProperties(BaseModel):
    """Resolved mass, centre of mass (body frame, m) and inertia about it (body frame, kg·m²)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    mass: float
    com: tuple[float, float, float]
    inertia: tuple[Vec3, Vec3, Vec3]

    @property
    def inertia_matrix(self) -> np.ndarray:
        return np.array(self.inertia, dtype=float)


class Body(StrictModel):
    """One rigid body. Pose and velocities are of the body frame at t = 0 (world frame)."""

    name: Name
    shape: Shape
    mass: PosFloat | None = None
    density: PosFloat | None = None
    com: Vec3 | None = None
    inertia: tuple[Vec3, Vec3, Vec3] | Vec3 | None = None
    position: Vec3 = (0.0, 0.0, 0.0)
    quaternion: Vec4 | None = None
    euler_deg: Vec3 | None = None
    linear_velocity: Vec3 = (0.0, 0.0, 0.0)
    angular_velocity: Vec3 = (0.0, 0.0, 0.0)
    fixed: bool = False
    collision: bool = True
    material: Material = Material()
    drag: Drag | None = None
    force: Vec3 | None = None
    torque: Vec3 | None = None
    uncertainty: BodyUncertainty | None = None
    description: str = ""

    @field_validator("name")
    @classmethod
    def _not_world(cls, v: str) -> str:
        if v == WORLD:
            raise ValueError(f"'{WORLD}' is reserved for the fixed world frame")
        if v == PARAMETERS_GROUP:
            raise ValueError(f"'{PARAMETERS_GROUP}' is reserved for sampled scene parameters")
        return v

    @field_validator("quaternion")
    @classmethod
    def _unit_quaternion(cls, v: Vec4 | None) -> Vec4 | None:
        if v is not None:
            n = math.sqrt(sum(x * x for x in v))
            if not 0.999 < n < 1.001:  # a typo, not rounding: normalise only near-unit input
                raise ValueError(f"a unit quaternion (x, y, z, w), got norm {n:.6g}")
            v = tuple(x / n for x in v)  # type: ignore[assignment]
        return v

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> Body:
        if self.quaternion is not None and self.euler_deg is not None:
            raise ValueError("give at most one of 'quaternion' and 'euler_deg'")
        static_shape = self.shape.type in ("plane",)
        if static_shape and not self.fixed:
            raise ValueError("a plane must be 'fixed: true'")
        if self.mass is not None and self.density is not None:
            raise ValueError("give 'mass' or 'density', not both")
        if self.shape.type == "urdf":
            if self.mass is not None or self.density is not None or self.inertia is not None:
                raise ValueError("a urdf body takes its mass and inertia from the URDF")
        elif not self.fixed and self.mass is None and self.density is None:
            raise ValueError("a moving body needs 'mass' (kg) or 'density' (kg/m^3)")
        if self.inertia is not None:
            problem = _inertia.inertia_problem(self._inertia_given())
            if problem is not None:
                raise PydanticCustomError(
                    "inertia", "inertia: expected {problem}", {"problem": problem}
                )
        base_dir = (info.context or {}).get("base_dir")
        if self.shape.type == "urdf":
            path = _check_urdf(self.shape, base_dir)
            model, links = resolve_urdf(self, path)
            object.__setattr__(self, "_urdf", model)
            object.__setattr__(self, "_random_links", links)
            object.__setattr__(self, "_props", None)
            return self
        props = _mass_properties(self, base_dir) if not static_shape else None
        object.__setattr__(self, "_props", props)
        if self.uncertainty is not None:
            if self.uncertainty.links is not None:
                raise PydanticCustomError(
                    "uncertainty",
                    "uncertainty.links: only URDF bodies have links; a {shape} body is one "
                    "rigid part (give its mass, com and inertia blocks directly)",
                    {"shape": self.shape.type},
                )
            if self.fixed or props is None:
                raise PydanticCustomError(
                    "uncertainty",
                    "uncertainty: only moving bodies with mass properties can be random",
                    {},
                )
            self.uncertainty.check_nominal(props.mass, props.com, props.inertia_matrix)
        return self

    def _inertia_given(self) -> np.ndarray:
        J = np.asarray(self.inertia, dtype=float)
        return np.diag(J) if J.shape == (3,) else J

    @property
    def mass_properties(self) -> MassProperties | None:
        """Resolved mass properties (``None`` for planes and URDF bodies)."""
        return self.__dict__.get("_props")

    @property
    def urdf(self) -> UrdfModel | None:
        """The URDF file's links and joints (:func:`~workbench.scene.urdf.read_urdf`), for a
        URDF body whose scene names its links or joints (``uncertainty``, ``shape.joints``,
        ``shape.links``); ``None`` otherwise."""
        return self.__dict__.get("_urdf")

    @property
    def random_links(self) -> tuple[RandomLink, ...]:
        """The uncertain links of a URDF body in PyBullet's link order (the base, index -1,
        first when it is random); empty for other bodies."""
        return self.__dict__.get("_random_links", ())

    @property
    def rotation(self) -> Rotation:
        """Initial orientation of the body frame."""
        if self.quaternion is not None:
            return Rotation.from_quat(self.quaternion)
        if self.euler_deg is not None:
            # Extrinsic x-y-z (roll, pitch, yaw) as PyBullet's getQuaternionFromEuler.
            return Rotation.from_euler("xyz", self.euler_deg, degrees=True)
        return Rotation.identity()


def _mass_properties(body: Body, base_dir: str | None) -> MassProperties | None:
    if body.shape.type == "urdf":
        return None
    with np.errstate(all="ignore"):  # overflows give inf or nan, named just below
        mass, com, J = _resolve_mass_properties(body, base_dir)
    problem = _mass_properties_problem(body, mass, com, J)
    if problem is not None:
        raise PydanticCustomError("mass_properties", "{problem}", {"problem": problem})
    return MassProperties(
        mass=float(mass),
        com=tuple(float(x) for x in com),
        inertia=tuple(tuple(float(x) for x in row) for row in J),
    )


def _resolve_mass_properties(body: Body, base_dir: str | None):
    """Mass (kg), centre of mass (3,) and inertia (3, 3) about it, from what the body gives and
    its shape; inf or nan where they overflow (numpy floats throughout: Python's raise
    ``OverflowError`` instead, e.g. for the cube of a radius of 1e200)."""
    shape = body.shape
    if shape.type == "mesh":
        vol, com, unit_inertia = _mesh_properties(shape, base_dir)
    else:
        vol, com = _primitive_volume(shape), np.zeros(3)
        unit_inertia = None
    if body.mass is not None:
        mass = body.mass
    elif body.density is not None:
        mass = float(body.density * vol)
    else:  # fixed body without mass: mass properties are irrelevant to the engine
        mass = 1.0
    if unit_inertia is not None:
        J = unit_inertia * (mass / vol)  # trimesh's inertia at density 1 scales with mass
    else:
        J = _primitive_inertia(shape, mass)
    if body.com is not None:
        com = np.asarray(body.com, dtype=float)
    if body.inertia is not None:
        J = body._inertia_given()
    return mass, com, 0.5 * (J + J.T)


def _mass_properties_problem(body: Body, mass: float, com: np.ndarray, J: np.ndarray) -> str | None:
    """Why resolved mass properties are not physical, or None: the mass must be finite and
    positive with a finite inverse, the centre of mass finite, the inertia admissible
    (:func:`~workbench.scene.inertia.inertia_problem`). Given values pass their own checks; this
    catches what is computed from them, e.g. a mesh scaled by 1e200 (volume overflows to inf,
    mass and inertia to nan) or density times volume beyond the largest float."""
    shape = body.shape
    if shape.type == "mesh":
        scale = shape.scale if isinstance(shape.scale, (int, float)) else list(shape.scale)
        origin = f"mesh '{shape.file}' at scale {scale}"
    else:
        origin = f"{shape.type} {shape.model_dump(exclude={'type'}, exclude_none=True)}"
    via = "mass" if body.mass is not None else ("density" if body.density is not None else None)
    hint = f" (from {via} and the {origin})" if via else f" (from the {origin})"
    with np.errstate(all="ignore"):
        if not (math.isfinite(mass) and mass > 0.0 and math.isfinite(1.0 / mass)):
            return f"mass: expected a finite positive mass, got {mass:.6g} kg{hint}"
        if not np.all(np.isfinite(com)):
            got = _inertia.format_vector(com)
            return f"com: expected a finite centre of mass, got {got} m{hint}"
        if body.inertia is None:  # a given inertia was checked with its field
            problem = _inertia.inertia_problem(J)
            if problem is not None:
                return f"inertia: expected {problem}{hint}"
    return None


def _dimensions(shape) -> tuple:
    """The shape's dimensions as numpy floats: radius and length, or the half extents."""
    if shape.type == "box":
        return (np.asarray(shape.halves, dtype=np.float64),)
    if shape.type == "sphere":
        return (np.float64(shape.radius),)
    return np.float64(shape.radius), np.float64(shape.length)


def _primitive_volume(shape) -> float:
    volume = {
        "sphere": _inertia.sphere_volume,
        "box": _inertia.box_volume,
        "cylinder": _inertia.cylinder_volume,
        "capsule": _inertia.capsule_volume,
    }[shape.type]
    return volume(*_dimensions(shape))


def _primitive_inertia(shape, mass: float) -> np.ndarray:
    inertia = {
        "sphere": _inertia.sphere_inertia,
        "box": _inertia.box_inertia,
        "cylinder": _inertia.cylinder_inertia,
        "capsule": _inertia.capsule_inertia,
    }[shape.type]
    return inertia(np.float64(mass), *_dimensions(shape))


def resolve_file(name: str, base_dir: str | None) -> Path | None:
    """A mesh/URDF path: relative to the scene's folder, else in PyBullet's bundled data."""
    p = Path(name)
    candidates = [p] if p.is_absolute() else [Path(base_dir or ".") / p]
    if not p.is_absolute():
        try:
            import pybullet_data  # a path-only module; does not load the engine

            candidates.append(Path(pybullet_data.getDataPath()) / p)
        except ImportError:  # pragma: no cover - pybullet is a hard dependency
            pass
    for c in candidates:
        if c.is_file():
            return c.resolve()
    return None


def _not_a_regular_file(name: str, base_dir: str | None) -> str | None:
    """What ``name`` is when it exists next to the scene but is no regular file (a directory, a
    FIFO, a device: reading one would block or fail), or None."""
    p = Path(name)
    candidate = p if p.is_absolute() else Path(base_dir or ".") / p
    try:
        mode = candidate.stat().st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None if stat.S_ISREG(mode) else "not a regular file"


def _missing_file(kind: str, name: str, base_dir: str | None, where: str) -> PydanticCustomError:
    """The refusal of a mesh or URDF ``file:`` that is not found, or is no regular file."""
    what = _not_a_regular_file(name, base_dir)
    if what is not None:
        return PydanticCustomError(
            "file",
            "{kind} file '{file}' is {what}, expected a regular file",
            {"kind": kind, "file": name, "what": what},
        )
    return PydanticCustomError(
        "file",
        "{kind} file '{file}' not found ({where})",
        {"kind": kind, "file": name, "where": where},
    )


def _check_urdf(shape: Urdf, base_dir: str | None) -> Path:
    """The resolved file of a URDF body; refuses one that is missing, is not URDF (XML whose
    root element is ``<robot>``), or whose tree or numbers are faulty
    (:func:`~workbench.scene.urdf_body.checked_urdf_model`); PyBullet may still refuse the rest,
    which the engine reports naming the file."""
    path = resolve_file(shape.file, base_dir)
    if path is None:
        where = "relative to the scene's folder or in PyBullet's data"
        raise _missing_file("URDF", shape.file, base_dir, where)
    try:
        for _, element in ElementTree.iterparse(path, events=("start",)):
            root = element.tag
            break
        else:
            root = None
    except (ElementTree.ParseError, OSError, UnicodeDecodeError, ValueError) as exc:
        problem = " ".join(str(exc).split())
        raise PydanticCustomError(
            "file",
            "'{file}' is not a URDF file: not XML ({err})",
            {"file": shape.file, "err": problem},
        ) from None
    if root != "robot":
        raise PydanticCustomError(
            "file",
            "'{file}' is not a URDF file: its root element is <{root}>, expected <robot>",
            {"file": shape.file, "root": root},
        )
    checked_urdf_model(path, shape)  # the whole tree and its numbers (cached: read once)
    return path


def _mesh_properties(shape: Mesh, base_dir: str | None):
    path = resolve_file(shape.file, base_dir)
    if path is None:
        raise _missing_file("mesh", shape.file, base_dir, "relative to the scene's folder")
    try:
        return _mesh_file_properties(str(path), shape.scale3, path.stat().st_mtime_ns)
    except PydanticCustomError:
        raise
    except Exception as exc:  # trimesh raises many types for unreadable files
        raise PydanticCustomError(
            "file", "cannot read mesh '{file}': {err}", {"file": shape.file, "err": str(exc)}
        ) from None


@functools.lru_cache(maxsize=64)
def _mesh_file_properties(path: str, scale: tuple, mtime_ns: int):
    """Volume, centre of mass and unit-density inertia of a mesh file (cached: every realization
    of an ensemble re-validates its scene)."""
    import trimesh  # imported here: heavy (~0.3 s), and only mesh bodies need it

    shape_file = Path(path).name
    try:
        mesh = trimesh.load(path, force="mesh")
    except Exception as exc:  # trimesh raises many types for unreadable files
        raise PydanticCustomError(
            "file", "cannot read mesh '{file}': {err}", {"file": shape_file, "err": str(exc)}
        ) from None
    # A hostile scale overflows the sums (inf, nan): let them, without warnings, and let
    # _mass_properties_problem name the result.
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        mesh.apply_scale(scale)
        if not mesh.is_watertight or mesh.volume <= 0:  # nan, inf: named by the caller
            raise PydanticCustomError(
                "file",
                "mesh '{file}' must be closed with outward normals to give mass properties "
                "(or give mass, com and inertia explicitly)",
                {"file": shape_file},
            )
        mesh.density = 1.0
        return float(mesh.volume), np.asarray(mesh.center_mass), np.asarray(mesh.moment_inertia)


def shape_hull_vertices(shape, base_dir: str | None) -> np.ndarray:
    """Vertices, shape (k, 3), m, body frame, whose convex hull is ``shape``'s solid: the box's
    corners, a mesh file's convex hull (scaled), and a fine polyhedral approximation of a sphere,
    cylinder or capsule. The default centre-of-mass domain and inertia bound of random bodies."""
    if shape.type == "box":
        h = np.asarray(shape.halves)
        return np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * h
    import trimesh  # ~0.4 s to import: only for bodies whose COM domain or Z bound is their shape

    if shape.type == "mesh":
        mesh = trimesh.load(str(resolve_file(shape.file, base_dir)), force="mesh")
        mesh.apply_scale(shape.scale3)
        return np.asarray(mesh.convex_hull.vertices)
    if shape.type == "sphere":
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=shape.radius)
    elif shape.type == "cylinder":
        mesh = trimesh.creation.cylinder(radius=shape.radius, height=shape.length, sections=32)
    else:
        mesh = trimesh.creation.capsule(height=shape.length, radius=shape.radius, count=[16, 16])
    return np.asarray(mesh.vertices)


def urdf_link_hull_vertices(collisions) -> np.ndarray:
    """Vertices, shape (k, 3), m, link frame, whose convex hull holds a URDF link's collision
    geometries (:class:`~workbench.scene.urdf.UrdfCollision`: boxes, spheres, cylinders,
    capsules and meshes at their origins, as :func:`shape_hull_vertices` makes them): the
    default centre-of-mass domain and inertia bound of a random link, as a body's shape is a
    body's. Raises ``ValueError`` for a link without collision geometry or a mesh that cannot
    be read."""
    parts = []
    for col in collisions:
        if col.geometry == "box":
            shape = Box(type="box", size=col.size)
        elif col.geometry == "sphere":
            shape = Sphere(type="sphere", radius=col.size[0])
        elif col.geometry == "cylinder":
            shape = Cylinder(type="cylinder", radius=col.size[0], length=col.size[1])
        elif col.geometry == "capsule":
            shape = Capsule(type="capsule", radius=col.size[0], length=col.size[1])
        else:
            if not Path(col.filename).is_file():
                raise ValueError(f"collision mesh '{col.filename}' not found")
            shape = Mesh(type="mesh", file=col.filename, scale=col.size)
        local = shape_hull_vertices(shape, None)
        R = Rotation.from_euler("xyz", col.rpy).as_matrix()  # URDF rpy: fixed x, y, z axes
        parts.append(local @ R.T + np.asarray(col.xyz, dtype=float))
    if not parts:
        raise ValueError("the link has no collision geometry")
    return np.concatenate(parts)


def mesh_triangles(path: str | Path, scale=(1.0, 1.0, 1.0)) -> tuple[np.ndarray, np.ndarray]:
    """The triangles of a mesh file (OBJ, STL, ...) as drawn: vertices, shape (k, 3), in the
    file's frame times ``scale`` (3,) (m, the body frame of a mesh shape), and faces, shape
    (m, 3), int, indices into the vertices, counter-clockwise seen from outside. Every part of
    the file is kept (as PyBullet draws it), merged into one mesh; the web replay page draws it.

    Raises ``ValueError`` for a file trimesh cannot read or one without triangles.
    """
    import trimesh  # ~0.4 s to import: only pages that draw a mesh body need it

    try:
        mesh = trimesh.load(str(path), force="mesh")
    except Exception as exc:  # trimesh raises many types for unreadable files
        raise ValueError(f"cannot read mesh '{Path(path).name}': {exc}") from None
    if len(mesh.faces) == 0:
        raise ValueError(f"mesh '{Path(path).name}' has no triangles")
    vertices = np.asarray(mesh.vertices, dtype=float) * np.asarray(scale, dtype=float)
    return vertices, np.asarray(mesh.faces, dtype=np.int64)
