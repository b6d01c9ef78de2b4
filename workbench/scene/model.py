"""Scene description: the validated, immutable input of every run.

A scene is written as a YAML file (see ``docs/scenes.md``) or built in Python (a scene script
exposing ``build(**parameters)`` that returns a :class:`Scene` or a plain dict). Either way it goes
through :func:`scene_from_dict`, which substitutes ``${name}`` parameters, validates every field and
computes each body's mass properties (mass, centre of mass, inertia about the centre of mass in the
body frame). Units are SI; angles in the file are degrees where the field name says ``_deg``.

Invalid input raises :class:`~workbench.errors.SceneError` naming the file, the field path, the line
when known, and what was expected.
"""

from __future__ import annotations

import copy
import difflib
import functools
import math
import re
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError
from scipy.spatial.transform import Rotation

from uncertainty.random_body import MAX_DISPERSION  # δ < 1/√2, Batou & Soize Eq. 17
from workbench.scene import inertia as _inertia
from workbench.errors import SceneError

__all__ = [
    "Scene",
    "Body",
    "Material",
    "Drag",
    "Joint",
    "Spring",
    "Prescribed",
    "Observer",
    "Settings",
    "MassProperties",
    "ParameterDistribution",
    "BodyUncertainty",
    "MassUncertainty",
    "ComUncertainty",
    "InertiaUncertainty",
    "PARAMETERS_GROUP",
    "MAX_DISPERSION",
    "scene_from_dict",
    "substitute_parameters",
    "OBSERVER_QUANTITIES",
    "WORLD",
]

#: Name that stands for the fixed world frame in joints and springs.
WORLD = "world"

#: Group under which sampled scene parameters are stored (``/params/parameters/<name>``).
PARAMETERS_GROUP = "parameters"

#: Observer quantity -> (number of components, unit, component labels, needs a body, uses point).
OBSERVER_QUANTITIES: dict[str, tuple[int, str, tuple[str, ...], bool, bool]] = {
    "point_position": (3, "m", ("x", "y", "z"), True, True),
    "point_velocity": (3, "m/s", ("x", "y", "z"), True, True),
    "point_acceleration": (3, "m/s^2", ("x", "y", "z"), True, True),
    "com_position": (3, "m", ("x", "y", "z"), True, False),
    "com_velocity": (3, "m/s", ("x", "y", "z"), True, False),
    "com_acceleration": (3, "m/s^2", ("x", "y", "z"), True, False),
    "euler_angles": (3, "rad", ("roll", "pitch", "yaw"), True, False),
    "angular_velocity": (3, "rad/s", ("x", "y", "z"), True, False),
    "angular_acceleration": (3, "rad/s^2", ("x", "y", "z"), True, False),
    "kinetic_energy": (1, "J", ("E",), False, False),
    "contact_count": (1, "1", ("n",), False, False),
}

_NAME = r"^[A-Za-z_][A-Za-z0-9_\-]*$"
_PARAM_REF = re.compile(r"\$\{([^}]*)\}")

Vec3 = tuple[float, float, float]
Vec4 = tuple[float, float, float, float]
PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Name = Annotated[str, Field(pattern=_NAME)]


# --------------------------------------------------------------------------------------------
# Base model: frozen, unknown fields rejected with a suggestion.


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _reject_unknown_fields(cls, data: Any) -> Any:
        if isinstance(data, dict):
            known = set(cls.model_fields)
            for key in data:
                if key not in known:
                    near = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
                    hint = f" (did you mean '{near[0]}'?)" if near else ""
                    raise PydanticCustomError(
                        "unknown_field",
                        "unknown field{hint}; allowed: {allowed}",
                        {"key": str(key), "hint": hint, "allowed": ", ".join(sorted(known))},
                    )
        return data


# --------------------------------------------------------------------------------------------
# Shapes


class Sphere(_Model):
    """Solid sphere of ``radius`` m."""

    type: Literal["sphere"]
    radius: PosFloat


class Box(_Model):
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


class Cylinder(_Model):
    """Solid cylinder along the body z axis."""

    type: Literal["cylinder"]
    radius: PosFloat
    length: PosFloat


class Capsule(_Model):
    """Capsule along z: ``length`` is the distance between the hemisphere centres."""

    type: Literal["capsule"]
    radius: PosFloat
    length: PosFloat


class Plane(_Model):
    """Infinite static plane through the body origin with the given normal (body frame)."""

    type: Literal["plane"]
    normal: Vec3 = (0.0, 0.0, 1.0)


class Mesh(_Model):
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


class Urdf(_Model):
    """A URDF model (path relative to the scene file, or a file of PyBullet's bundled data).

    Only the base link is tracked in the state; mass properties come from the URDF.
    """

    type: Literal["urdf"]
    file: str
    global_scaling: PosFloat = 1.0


Shape = Annotated[
    Sphere | Box | Cylinder | Capsule | Plane | Mesh | Urdf, Field(discriminator="type")
]


# --------------------------------------------------------------------------------------------
# Bodies


class Material(_Model):
    """Contact material of one body.

    PyBullet combines the two bodies of a contact by *product* for friction and restitution,
    μ = μ_A μ_B and e = e_A e_B, but rolling and spinning friction by ρ = ρ_A μ_B + ρ_B μ_A
    (measured in 8 combinations; see ``reverse/contacts.py``). The workbench default friction
    is 1 (not PyBullet's 0.5), the neutral element of the product, so the μ you give one body is
    the effective μ against a body that does not say. Restitution defaults to 0 (inelastic) as in
    PyBullet; a bounce needs restitution on *both* bodies (e.g. ground 1, ball 0.6 → 0.6).
    Rolling and spinning friction give a torque = coefficient × normal force.
    """

    friction: NonNegFloat = 1.0
    rolling_friction: NonNegFloat = 0.0
    spinning_friction: NonNegFloat = 0.0
    restitution: Annotated[float, Field(ge=0, le=1)] = 0.0


class Drag(_Model):
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


#: Names of the scalar distributions a parameter may follow.
DISTRIBUTIONS = ("normal", "lognormal", "uniform", "gamma", "truncnormal")


def _check_dispersion(value: float, what: str) -> float:
    if not 0.0 < value < MAX_DISPERSION:
        raise ValueError(
            f"{what} must lie in (0, 1/sqrt(2)) = (0, {MAX_DISPERSION:.4f}), got {value}"
        )
    return value


class ParameterDistribution(_Model):
    """A scene parameter that is random in ensembles (its mean is used for single runs).

    ``normal {mean, std}``, ``lognormal {mean, std}`` (of the variable itself), ``uniform {low,
    high}``, ``gamma {mean, std}``, ``truncnormal {mean, std, low, high}`` (``mean``/``std`` of the
    parent normal).
    """

    dist: str
    mean: float | None = None
    std: PosFloat | None = None
    low: float | None = None
    high: float | None = None

    @model_validator(mode="after")
    def _check(self) -> ParameterDistribution:
        if self.dist not in DISTRIBUTIONS:
            near = difflib.get_close_matches(self.dist, DISTRIBUTIONS, n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            known = ", ".join(DISTRIBUTIONS)
            raise ValueError(f"unknown distribution '{self.dist}'{hint}; expected one of {known}")
        need = {
            "normal": ("mean", "std"),
            "lognormal": ("mean", "std"),
            "gamma": ("mean", "std"),
            "uniform": ("low", "high"),
            "truncnormal": ("mean", "std", "low", "high"),
        }[self.dist]
        missing = [f for f in need if getattr(self, f) is None]
        if missing:
            raise ValueError(f"a {self.dist} distribution needs {', '.join(missing)}")
        extra = [
            f
            for f in ("mean", "std", "low", "high")
            if f not in need and getattr(self, f) is not None
        ]
        if extra:
            raise ValueError(f"a {self.dist} distribution takes no {', '.join(extra)}")
        if self.dist in ("lognormal", "gamma") and not self.mean > 0:
            raise ValueError(f"a {self.dist} distribution needs mean > 0")
        if self.low is not None and not self.low < self.high:
            raise ValueError("'low' must be below 'high'")
        return self

    def frozen(self):
        """The scipy.stats frozen distribution."""
        from uncertainty.distributions import make_distribution

        return make_distribution(self.model_dump(exclude_none=True))

    def nominal(self) -> float:
        """The value used for single (deterministic) runs: the distribution's mean."""
        return float(self.frozen().mean())


class MassUncertainty(_Model):
    """Random mass: Gamma with the nominal mass as mean and coefficient of variation
    ``dispersion`` ∈ (0, 1/√2) (Batou & Soize 2012, Eq. 15-17)."""

    dispersion: float

    @field_validator("dispersion")
    @classmethod
    def _range(cls, v: float) -> float:
        return _check_dispersion(v, "the mass dispersion delta_M")


class ComUncertainty(_Model):
    """Random initial centre of mass: maximum-entropy law on a bounded domain (body frame) with
    the nominal centre of mass as its mean (Batou & Soize 2012, Eq. 18-23).

    ``box``: ``center`` and ``size``; ``ball``: ``center`` and ``radius``; ``hull``: the convex hull
    of ``vertices`` (default: the body's own shape). ``center`` defaults to the nominal centre of
    mass.
    """

    domain: Literal["box", "ball", "hull"]
    center: Vec3 | None = None
    size: tuple[PosFloat, PosFloat, PosFloat] | None = None
    radius: PosFloat | None = None
    vertices: list[Vec3] | None = None

    @model_validator(mode="after")
    def _check(self) -> ComUncertainty:
        if self.domain == "box" and self.size is None:
            raise ValueError("a box domain needs 'size' [sx, sy, sz] (m)")
        if self.domain == "ball" and self.radius is None:
            raise ValueError("a ball domain needs 'radius' (m)")
        if self.domain == "hull" and self.vertices is not None and len(self.vertices) < 4:
            raise ValueError("a hull domain needs at least 4 'vertices'")
        return self


class InertiaUncertainty(_Model):
    """Random inertia J = M (tr(Z) I − Z), Z = L̲ᵀ G L̲ (Batou & Soize 2012, Eq. 32-37), with G from
    Soize's ensemble SG0+ (``model: sg0``, ``dispersion`` < 1/√2) or the bounded ensemble of Eq. 41
    (``model: bounded``, ``lambda_l``, ``lambda_u`` and the upper bound ``z_max`` of Z)."""

    model: Literal["sg0", "bounded"]
    dispersion: float | None = None
    lambda_l: float | None = None
    lambda_u: float | None = None
    z_max: tuple[Vec3, Vec3, Vec3] | None = None

    @model_validator(mode="after")
    def _check(self) -> InertiaUncertainty:
        if self.model == "sg0":
            if self.dispersion is None:
                raise ValueError("model sg0 needs 'dispersion' (delta_G)")
            _check_dispersion(self.dispersion, "the inertia dispersion delta_G")
            if self.lambda_l is not None or self.lambda_u is not None or self.z_max is not None:
                raise ValueError("model sg0 takes only 'dispersion'")
        else:
            if self.lambda_l is None or self.lambda_u is None:
                raise ValueError("model bounded needs 'lambda_l' and 'lambda_u'")
            if self.dispersion is not None:
                raise ValueError(
                    "model bounded takes no 'dispersion' (it follows from lambda_l, lambda_u)"
                )
        return self


class BodyUncertainty(_Model):
    """What is random about a body in ensembles; M, R0 and G are independent."""

    mass: MassUncertainty | None = None
    com: ComUncertainty | None = None
    inertia: InertiaUncertainty | None = None


class MassProperties(BaseModel):
    """Resolved mass, centre of mass (body frame, m) and inertia about it (body frame, kg·m²)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    mass: float
    com: tuple[float, float, float]
    inertia: tuple[Vec3, Vec3, Vec3]

    @property
    def inertia_matrix(self) -> np.ndarray:
        return np.array(self.inertia, dtype=float)


class Body(_Model):
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
        props = _mass_properties(self, base_dir) if not static_shape else None
        object.__setattr__(self, "_props", props)
        if self.uncertainty is not None:
            _check_uncertainty(self, props)
        return self

    def _inertia_given(self) -> np.ndarray:
        J = np.asarray(self.inertia, dtype=float)
        return np.diag(J) if J.shape == (3,) else J

    @property
    def mass_properties(self) -> MassProperties | None:
        """Resolved mass properties (``None`` for planes and URDF bodies)."""
        return self.__dict__.get("_props")

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
    shape = body.shape
    if shape.type == "urdf":
        return None
    if shape.type == "mesh":
        vol, com, unit_inertia = _mesh_properties(shape, base_dir)
    else:
        vol, com = _primitive_volume(shape), np.zeros(3)
        unit_inertia = None
    if body.mass is not None:
        mass = body.mass
    elif body.density is not None:
        mass = body.density * vol
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
    J = 0.5 * (J + J.T)
    return MassProperties(
        mass=float(mass),
        com=tuple(float(x) for x in com),
        inertia=tuple(tuple(float(x) for x in row) for row in J),
    )


def _check_uncertainty(body: Body, props: MassProperties | None) -> None:
    """Admissibility of a body's uncertainty block against its nominal mass properties."""
    if body.fixed or props is None:
        raise PydanticCustomError(
            "uncertainty", "uncertainty: only moving bodies with mass properties can be random", {}
        )
    u = body.uncertainty
    r0 = np.asarray(props.com)
    if u.com is not None:
        c = np.asarray(u.com.center if u.com.center is not None else props.com)
        inside = True
        if u.com.domain == "box":
            inside = bool(np.all(np.abs(r0 - c) < 0.5 * np.asarray(u.com.size)))
        elif u.com.domain == "ball":
            inside = bool(np.linalg.norm(r0 - c) < u.com.radius)
        elif u.com.vertices is not None:
            from scipy.spatial import Delaunay

            inside = bool(Delaunay(np.asarray(u.com.vertices)).find_simplex(r0) >= 0)
        if not inside:
            raise PydanticCustomError(
                "uncertainty",
                "uncertainty.com: the nominal centre of mass {r0} must lie strictly inside the "
                "{domain} domain (Batou & Soize Eq. 18: its mean is the nominal value)",
                {"r0": np.round(r0, 9).tolist(), "domain": u.com.domain},
            )
    if u.inertia is not None and u.inertia.z_max is not None:
        J = props.inertia_matrix
        z_bar = (np.trace(J) / 2.0 * np.eye(3) - J) / props.mass  # Eq. (34) in Batou & Soize
        gap = np.linalg.eigvalsh(np.asarray(u.inertia.z_max) - z_bar)
        if gap[0] <= 0.0:
            raise PydanticCustomError(
                "uncertainty",
                "uncertainty.inertia.z_max: expected Z_max - Z_bar positive definite (Z_max above "
                "the nominal Z_bar = (tr(J)/2 I - J)/m = {z}), got eigenvalues {gap}",
                {"z": np.round(z_bar, 6).tolist(), "gap": np.round(gap, 6).tolist()},
            )


def _primitive_volume(shape) -> float:
    if shape.type == "sphere":
        return _inertia.sphere_volume(shape.radius)
    if shape.type == "box":
        return _inertia.box_volume(shape.halves)
    if shape.type == "cylinder":
        return _inertia.cylinder_volume(shape.radius, shape.length)
    if shape.type == "capsule":
        return _inertia.capsule_volume(shape.radius, shape.length)
    raise AssertionError(shape.type)


def _primitive_inertia(shape, mass: float) -> np.ndarray:
    if shape.type == "sphere":
        return _inertia.sphere_inertia(mass, shape.radius)
    if shape.type == "box":
        return _inertia.box_inertia(mass, shape.halves)
    if shape.type == "cylinder":
        return _inertia.cylinder_inertia(mass, shape.radius, shape.length)
    if shape.type == "capsule":
        return _inertia.capsule_inertia(mass, shape.radius, shape.length)
    raise AssertionError(shape.type)


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


def _mesh_properties(shape: Mesh, base_dir: str | None):
    path = resolve_file(shape.file, base_dir)
    if path is None:
        raise PydanticCustomError(
            "file",
            "mesh file '{file}' not found (relative to the scene's folder)",
            {"file": shape.file},
        )
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
    import trimesh

    shape_file = Path(path).name
    try:
        mesh = trimesh.load(path, force="mesh")
    except Exception as exc:  # trimesh raises many types for unreadable files
        raise PydanticCustomError(
            "file", "cannot read mesh '{file}': {err}", {"file": shape_file, "err": str(exc)}
        ) from None
    mesh.apply_scale(scale)
    if not mesh.is_watertight or mesh.volume <= 0:
        raise PydanticCustomError(
            "file",
            "mesh '{file}' must be closed with outward normals to give mass properties "
            "(or give mass, com and inertia explicitly)",
            {"file": shape_file},
        )
    mesh.density = 1.0
    return float(mesh.volume), np.asarray(mesh.center_mass), np.asarray(mesh.moment_inertia)


# --------------------------------------------------------------------------------------------
# Joints, springs, prescribed motion, observers, settings


class Joint(_Model):
    """A joint between ``parent`` (a body or ``world``) and ``child``.

    ``anchor`` and ``axis`` are given in world coordinates at t = 0 and carried along by both
    bodies afterwards. ``revolute`` rotates about ``axis``; ``prismatic`` slides along it;
    ``ball`` is a point-to-point joint at ``anchor``; ``fixed`` welds the two.
    """

    name: Name
    type: Literal["revolute", "prismatic", "fixed", "ball"]
    parent: str
    child: str
    anchor: Vec3 | None = None
    axis: Vec3 | None = None
    max_force: PosFloat | None = None

    @model_validator(mode="after")
    def _check(self) -> Joint:
        if self.child == WORLD:
            raise ValueError("'child' must be a body; put 'world' as the parent")
        if self.parent == self.child:
            raise ValueError("'parent' and 'child' must differ")
        if self.type in ("revolute", "prismatic"):
            if self.axis is None or np.linalg.norm(self.axis) == 0:
                raise ValueError(f"a {self.type} joint needs a non-zero 'axis'")
        if self.type in ("revolute", "ball") and self.anchor is None:
            raise ValueError(f"a {self.type} joint needs an 'anchor' point (world, m)")
        return self


class Spring(_Model):
    """Linear 6-DOF spring-damper (bushing) between ``body_a`` and ``body_b`` (either may be
    ``world``), attached at ``anchor`` (world point at t = 0).

    Axes are the world axes at t = 0, carried by ``body_a``. The force on ``body_b`` is
    F = preload − K d − C ḋ and the torque τ = preload_torque − K_r θ − C_r ω_rel, with d the
    displacement of b's attachment point relative to a's, θ the small rotation of b relative to a
    since t = 0; equal and opposite on ``body_a``.
    """

    name: Name
    body_a: str
    body_b: str
    anchor: Vec3
    stiffness: Vec3 = (0.0, 0.0, 0.0)
    damping: Vec3 = (0.0, 0.0, 0.0)
    rotational_stiffness: Vec3 = (0.0, 0.0, 0.0)
    rotational_damping: Vec3 = (0.0, 0.0, 0.0)
    preload: Vec3 = (0.0, 0.0, 0.0)
    preload_torque: Vec3 = (0.0, 0.0, 0.0)

    @model_validator(mode="after")
    def _check(self) -> Spring:
        if self.body_a == self.body_b:
            raise ValueError("'body_a' and 'body_b' must differ")
        for f in ("stiffness", "damping", "rotational_stiffness", "rotational_damping"):
            if min(getattr(self, f)) < 0:
                raise ValueError(f"'{f}' must be >= 0 on every axis")
        return self


class Prescribed(_Model):
    """Prescribed motion from a time table.

    For a ``body``: ``values`` are displacements (m) of the body from its initial position, one
    [dx, dy, dz] per time; its orientation is held. For a ``joint``: ``values`` are the joint
    coordinate (m for prismatic, rad for revolute) relative to t = 0. Before the first and after
    the last time the end values hold. The motion is imposed by a stiff PyBullet constraint.
    """

    body: str | None = None
    joint: str | None = None
    time: list[float]
    values: list[float] | list[Vec3]
    interpolation: Literal["linear", "cubic"] = "linear"
    max_force: PosFloat = 1e12

    @model_validator(mode="after")
    def _check(self) -> Prescribed:
        if (self.body is None) == (self.joint is None):
            raise ValueError("give exactly one of 'body' and 'joint'")
        if len(self.time) < 2:
            raise ValueError("'time' needs at least 2 entries")
        if any(b <= a for a, b in zip(self.time, self.time[1:], strict=False)):
            raise ValueError("'time' must be strictly increasing")
        if len(self.values) != len(self.time):
            raise ValueError(f"'values' needs {len(self.time)} entries, one per time")
        vec = isinstance(self.values[0], (tuple, list))
        if self.body is not None and not vec:
            raise ValueError("'values' of a body are [dx, dy, dz] displacements")
        if self.joint is not None and vec:
            raise ValueError("'values' of a joint are numbers (m or rad)")
        return self

    def at(self, t: float) -> np.ndarray:
        """Interpolated value(s) at time ``t``; shape (3,) for a body, () for a joint."""
        return self._interpolant(np.clip(t, self.time[0], self.time[-1]))

    @cached_property
    def _interpolant(self):
        from scipy.interpolate import CubicSpline, interp1d

        x = np.asarray(self.time, dtype=float)
        y = np.asarray(self.values, dtype=float)
        if self.interpolation == "cubic" and len(x) >= 3:
            return CubicSpline(x, y, axis=0, bc_type="clamped")
        return interp1d(x, y, axis=0)


class Observer(_Model):
    """A recorded channel; see :data:`OBSERVER_QUANTITIES`.

    ``point`` is in the body frame (m). ``kinetic_energy`` and ``contact_count`` without a body
    sum over the whole scene. ``euler_angles`` are extrinsic x-y-z (roll, pitch, yaw), rad.
    Accelerations are the velocity change of the recorded step divided by dt.
    """

    name: Name
    quantity: str
    body: str | None = None
    point: Vec3 | None = None

    @model_validator(mode="after")
    def _check(self) -> Observer:
        if self.quantity not in OBSERVER_QUANTITIES:
            near = difflib.get_close_matches(self.quantity, list(OBSERVER_QUANTITIES), n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            raise ValueError(
                f"'quantity' must be one of {', '.join(OBSERVER_QUANTITIES)}; "
                f"got '{self.quantity}'{hint}"
            )
        _, _, _, needs_body, uses_point = OBSERVER_QUANTITIES[self.quantity]
        if needs_body and self.body is None:
            raise ValueError(f"'{self.quantity}' needs a 'body'")
        if uses_point and self.point is None:
            raise ValueError(f"'{self.quantity}' needs a 'point' (body frame, m)")
        if not uses_point and self.point is not None:
            raise ValueError(f"'{self.quantity}' takes no 'point'")
        return self


class Settings(_Model):
    """Time stepping and solver settings."""

    dt: PosFloat = 1.0 / 240.0
    duration: PosFloat = 1.0
    record_every: Annotated[int, Field(ge=1)] = 1
    solver_iterations: Annotated[int, Field(ge=1)] = 50
    contact_breaking_threshold: PosFloat | None = None
    restitution_velocity_threshold: NonNegFloat | None = None
    #: PyBullet's contactERP: the fraction of penetration corrected per step. Its correction
    #: adds velocity to a bounce (measured: restitution 0.6 gives 0.634 at dt = 1e-3 with the
    #: default, 0.601 with 0); set 0 for impact studies, keep the default for resting stacks.
    contact_erp: Annotated[float, Field(ge=0, le=1)] | None = None
    #: PyBullet's per-body contactProcessingThreshold (m): contact points found with a *gap*
    #: below it enter the solver as speculative contacts, which let the bodies close the gap in
    #: one step and subtract gap/dt from the bounce, so a restitution depends on where in a step
    #: the impact falls (measured: a 2.5 m/s impact with e = 0.5 found 2.4 mm early at dt = 1e-3
    #: does not bounce at all). 0 processes touching or penetrating contacts only: bounces are
    #: e·v whatever the phase (the law of the reverse stepper).
    contact_processing_threshold: NonNegFloat | None = None

    @property
    def n_steps(self) -> int:
        return int(round(self.duration / self.dt))


class Scene(_Model):
    """A validated scene. Build with :func:`scene_from_dict` or :func:`workbench.load_scene`."""

    description: str = ""
    parameters: dict[Name, Any] = {}
    settings: Settings = Settings()
    gravity: Vec3 = (0.0, 0.0, -9.81)
    bodies: list[Body]
    joints: list[Joint] = []
    springs: list[Spring] = []
    prescribed: list[Prescribed] = []
    observers: list[Observer] = []

    @model_validator(mode="after")
    def _cross_references(self) -> Scene:
        if not self.bodies:
            raise ValueError("'bodies' must list at least one body")
        names = [b.name for b in self.bodies]
        seen: set[str] = set()
        for i, n in enumerate(names):
            if n in seen:
                raise _at(("bodies", i, "name"), f"duplicate body name '{n}'")
            seen.add(n)
        joint_names = [j.name for j in self.joints]
        for i, j in enumerate(self.joints):
            for f in ("parent", "child"):
                _check_ref(names, getattr(j, f), ("joints", i, f), allow_world=(f == "parent"))
        for i, s in enumerate(self.springs):
            _check_ref(names, s.body_a, ("springs", i, "body_a"), allow_world=True)
            _check_ref(names, s.body_b, ("springs", i, "body_b"), allow_world=True)
        for i, p in enumerate(self.prescribed):
            if p.body is not None:
                _check_ref(names, p.body, ("prescribed", i, "body"), allow_world=False)
            else:
                _check_ref(joint_names, p.joint, ("prescribed", i, "joint"), what="joint")
                joint = self.joints[joint_names.index(p.joint)]
                if joint.type not in ("revolute", "prismatic"):
                    raise _at(
                        ("prescribed", i, "joint"),
                        "only revolute and prismatic joints take a prescribed motion",
                    )
        obs_seen: set[str] = set()
        for i, o in enumerate(self.observers):
            if o.name in obs_seen:
                raise _at(("observers", i, "name"), f"duplicate observer name '{o.name}'")
            obs_seen.add(o.name)
            if o.body is not None:
                _check_ref(names, o.body, ("observers", i, "body"), allow_world=False)
        return self

    # Convenience views ----------------------------------------------------------------------
    @property
    def body_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.bodies)

    def body(self, name: str) -> Body:
        for b in self.bodies:
            if b.name == name:
                return b
        raise KeyError(name)

    def with_settings(self, **changes) -> Scene:
        """A copy with some settings replaced (e.g. ``dt``, ``duration``), re-validated."""
        changes = {k: v for k, v in changes.items() if v is not None}
        raw = self.__dict__.get("_raw")
        if raw is not None:  # keep the unresolved data so random parameters still resolve
            raw = copy.deepcopy(raw)
            raw["settings"] = {**(raw.get("settings") or {}), **changes}
            return scene_from_dict(
                raw,
                source=self.source,
                base_dir=self.base_dir,
                overrides=self.__dict__.get("_overrides"),
                source_text=self.source_text,
            )
        data = self.model_dump()
        data["settings"].update(changes)
        return _validate(data, self.source, self.base_dir, self.source_text)

    @property
    def parameter_distributions(self) -> dict[str, ParameterDistribution]:
        """Random scene parameters (declared as distributions and not fixed by ``--set``)."""
        return dict(self.__dict__.get("_distributions", {}))

    @property
    def uncertain_bodies(self) -> list[Body]:
        return [b for b in self.bodies if b.uncertainty is not None]

    @property
    def is_random(self) -> bool:
        return bool(self.parameter_distributions or self.uncertain_bodies)

    def with_parameters(self, values: dict[str, Any]) -> Scene:
        """The scene re-resolved with some parameters fixed to ``values`` (one realization)."""
        raw = self.__dict__.get("_raw")
        if raw is None:
            raise SceneError(
                self.source, "parameters", "this scene has no source data to re-resolve"
            )
        merged = {**self.__dict__.get("_overrides", {}), **values}
        return scene_from_dict(
            raw,
            source=self.source,
            base_dir=self.base_dir,
            overrides=merged,
            source_text=self.source_text,
        )

    @property
    def source(self) -> str:
        return self.__dict__.get("_source", "<scene>")

    @property
    def base_dir(self) -> str | None:
        return self.__dict__.get("_base_dir")

    @property
    def source_text(self) -> str:
        return self.__dict__.get("_source_text", "")


class _RefError(ValueError):
    def __init__(self, loc: tuple, msg: str):
        super().__init__(msg)
        self.loc = loc


def _at(loc: tuple, msg: str) -> _RefError:
    return _RefError(loc, msg)


def _check_ref(names, value, loc, *, allow_world=False, what="body") -> None:
    if allow_world and value == WORLD:
        return
    if value not in names:
        near = difflib.get_close_matches(str(value), list(names), n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        extra = f" or '{WORLD}'" if allow_world else ""
        raise _at(
            loc,
            f"unknown {what} '{value}'{hint}; expected one of "
            f"{', '.join(names) or '(none)'}{extra}",
        )


# --------------------------------------------------------------------------------------------
# Parameters and validation entry point


def substitute_parameters(
    data: Any, params: dict[str, Any], source: str = "<scene>", line_of=None
) -> Any:
    """Replace ``${name}`` in every string of ``data`` by the parameter's value.

    A string that is exactly ``${name}`` takes the value itself (number, list, ...); a longer
    string gets the value's text spliced in. Unknown names raise :class:`SceneError`.
    """

    def walk(node: Any, path: tuple) -> Any:
        if isinstance(node, dict):
            return {k: walk(v, path + (k,)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, path + (i,)) for i, v in enumerate(node)]
        if isinstance(node, str) and "${" in node:
            refs = _PARAM_REF.findall(node)
            for r in refs:
                if r not in params:
                    near = difflib.get_close_matches(r, list(params), n=1)
                    hint = f" (did you mean '{near[0]}'?)" if near else ""
                    raise SceneError(
                        source,
                        format_loc(path),
                        f"unknown parameter '${{{r}}}'{hint}; declared parameters: "
                        f"{', '.join(params) or '(none)'}",
                        line_of(path) if line_of else None,
                    )
            whole = _PARAM_REF.fullmatch(node.strip())
            if whole:
                return params[whole.group(1)]
            return _PARAM_REF.sub(lambda m: str(params[m.group(1)]), node)
        return node

    return walk(data, ())


def apply_overrides(
    declared: dict[str, Any], overrides: dict[str, Any] | None, source: str
) -> dict[str, Any]:
    """Declared parameters updated by ``overrides``; unknown names raise :class:`SceneError`."""
    params = dict(declared)
    for k, v in (overrides or {}).items():
        if k not in params:
            near = difflib.get_close_matches(k, list(params), n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            raise SceneError(
                source,
                f"--set {k}",
                f"unknown parameter '{k}'{hint}; declared parameters: "
                f"{', '.join(params) or '(none)'}",
            )
        params[k] = v
    return params


def scene_from_dict(
    data: Any,
    *,
    source: str = "<scene>",
    base_dir: str | None = None,
    overrides: dict[str, Any] | None = None,
    source_text: str = "",
    line_of=None,
) -> Scene:
    """Validate a scene given as plain data (as parsed from YAML).

    Parameters
    ----------
    data : dict
        The scene mapping.
    source : str
        Where it came from, for error messages.
    base_dir : str, optional
        Folder that relative mesh/URDF paths are resolved against.
    overrides : dict, optional
        Parameter values replacing the declared ones (``--set``).
    line_of : callable, optional
        ``line_of(path_tuple) -> int | None`` giving the source line of a field.
    """
    if not isinstance(data, dict):
        raise SceneError(source, "", "expected a mapping of scene fields at the top level")
    declared = data.get("parameters") or {}
    if not isinstance(declared, dict):
        raise SceneError(source, "parameters", "expected a mapping of name: value")
    distributions: dict[str, ParameterDistribution] = {}
    for k, v in declared.items():
        if isinstance(v, str) and "${" in v:
            raise SceneError(source, f"parameters.{k}", "a value, not another ${...} reference")
        if isinstance(v, dict):
            try:
                distributions[k] = ParameterDistribution.model_validate(v)
            except ValidationError as exc:
                err = exc.errors(include_url=False)[0]
                loc = ("parameters", k, *_user_loc(v, tuple(err["loc"])))
                raise SceneError(
                    source, format_loc(loc), _message(err), line_of(loc) if line_of else None
                ) from None
    params = apply_overrides(declared, overrides, source)
    # a random parameter takes its mean in single runs, unless --set fixes it
    random_params = {k: d for k, d in distributions.items() if params[k] is declared[k]}
    values = {
        k: (random_params[k].nominal() if k in random_params else v) for k, v in params.items()
    }
    body = {k: v for k, v in data.items() if k != "parameters"}
    resolved = substitute_parameters(body, values, source, line_of)
    resolved["parameters"] = values
    scene = _validate(resolved, source, base_dir, source_text, line_of)
    object.__setattr__(scene, "_distributions", random_params)
    object.__setattr__(scene, "_raw", copy.deepcopy(data))
    object.__setattr__(scene, "_overrides", dict(overrides or {}))
    return scene


def _validate(data, source, base_dir, source_text, line_of=None) -> Scene:
    try:
        scene = Scene.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = tuple(err["loc"])
        ctx_err = (err.get("ctx") or {}).get("error")
        if isinstance(ctx_err, _RefError):
            loc, msg = ctx_err.loc, str(ctx_err)
        else:
            raw_loc = loc
            loc = _user_loc(data, loc)
            msg = _message(err)
            if err["type"] == "missing" and raw_loc:
                last = raw_loc[-1]
                loc = loc + (last,)
                if isinstance(last, int):
                    msg = f"too few values: expected an entry at index {last}"
            if err["type"] == "unknown_field":  # point at the unknown key itself
                loc = loc + (err["ctx"]["key"],)
        line = line_of(loc) if line_of else None
        raise SceneError(source, format_loc(loc), msg, line) from None
    object.__setattr__(scene, "_source", source)
    object.__setattr__(scene, "_base_dir", base_dir)
    object.__setattr__(scene, "_source_text", source_text)
    return scene


def _user_loc(data: Any, loc: tuple) -> tuple:
    """Drop pydantic's union-tag and type-name segments so the path matches the user's file."""
    out: list = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            out.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            out.append(part)
            node = node[part]
        elif isinstance(node, (dict, list)):
            continue  # a tag such as 'sphere' or a type name such as 'tuple[...]'
        else:
            break
    return tuple(out) if out or not loc else ()


def _message(err: dict) -> str:
    msg = err["msg"]
    typ = err["type"]
    if typ == "missing":
        return "required field is missing"
    if typ in ("unknown_field", "inertia", "file"):
        return msg
    if typ == "union_tag_invalid":
        ctx = err.get("ctx", {})
        tags = ctx.get("expected_tags", "")
        tag = ctx.get("tag", "")
        options = [t.strip().strip("'") for t in str(tags).split(",")]
        near = difflib.get_close_matches(str(tag), options, n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        return f"unknown type '{tag}'{hint}; expected one of {tags}"
    if typ == "union_tag_not_found":
        return "missing 'type' (sphere, box, cylinder, capsule, plane, mesh or urdf)"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    msg = msg.replace("Input should be", "expected").replace("Tuple should have", "expected")
    got = err.get("input")
    if typ not in ("value_error",) and not isinstance(got, (dict,)):
        text = repr(got)
        msg = f"{msg}, got {text if len(text) < 60 else text[:57] + '...'}"
    return msg.replace("\n", " ")


def format_loc(loc: tuple) -> str:
    """``('bodies', 0, 'mass')`` -> ``'bodies[0].mass'``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out
