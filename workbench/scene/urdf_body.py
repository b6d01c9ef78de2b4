"""A URDF body's links and joints as the scene names them: which links are random (with the
URDF's ``<inertial>`` as their nominal values), and the checks of ``shape.joints``,
``shape.links`` and ``uncertainty`` against the file. Pure: the file is read by
:mod:`workbench.scene.urdf`; PyBullet is not involved.

The random links are parts of the random rigid body of A. Batou and C. Soize (Rigid multibody
system dynamics with uncertain rigid bodies, Multibody System Dynamics 27 (2012) 285-319): each
link is one rigid body whose body frame is its link frame, sampled as any other
(``workbench/ensemble/realization.py``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic_core import PydanticCustomError

from workbench.scene import inertia as _inertia
from workbench.scene.fields import did_you_mean
from workbench.scene.random_inputs import ALL_LINKS, LinkUncertainty
from workbench.scene.urdf import UrdfCollision, UrdfError, UrdfModel, read_urdf

__all__ = ["LinkInertial", "RandomLink", "urdf_model", "checked_urdf_model", "resolve_urdf"]


@dataclass(frozen=True)
class LinkInertial:
    """A link's nominal mass (kg), centre of mass (link frame, m) and inertia about it (link
    frame, kg·m²): the fields of :class:`~workbench.scene.bodies.MassProperties`."""

    mass: float
    com: tuple[float, float, float]
    inertia: tuple[tuple[float, float, float], ...]

    @property
    def inertia_matrix(self) -> np.ndarray:
        return np.array(self.inertia, dtype=float)


@dataclass(frozen=True)
class RandomLink:
    """One uncertain link of a URDF body.

    Attributes
    ----------
    name : str
        The link's name in the URDF.
    index : int
        PyBullet's link index (-1: the base, whose frame is the body frame).
    props : LinkInertial
        Nominal mass, centre of mass and inertia about it, in the link frame (the URDF's
        ``<inertial>``, scaled by ``global_scaling``).
    uncertainty : LinkUncertainty
        Its laws (the body's own blocks for the base and under ``links: all``).
    collisions : tuple of UrdfCollision
        Its collision geometries in the link frame: the default centre-of-mass domain (``hull``
        without ``vertices``) and Z bound (``bounded`` without ``z_max``), as a body's shape.
    """

    name: str
    index: int
    props: LinkInertial
    uncertainty: LinkUncertainty
    collisions: tuple[UrdfCollision, ...] = ()

    @property
    def is_base(self) -> bool:
        return self.index == -1


#: Link names that would clash with the per-body keys of ``/params`` (``<body>/mass``, ...).
_RESERVED_LINK_NAMES = ("mass", "com", "inertia", "G")


def urdf_model(path: Path, global_scaling: float = 1.0) -> UrdfModel:
    """The links and joints of the URDF file ``path`` (resolved), cached on path, scaling and
    modification time: every realization of an ensemble re-validates its scene.

    Raises
    ------
    pydantic_core.PydanticCustomError
        Of type ``file``, when the file cannot be read as a tree of links.
    """
    try:
        return _read_urdf_cached(str(path), float(global_scaling), path.stat().st_mtime_ns)
    except (UrdfError, OSError) as exc:
        raise PydanticCustomError("file", "{err}", {"err": str(exc)}) from None


def checked_urdf_model(path: Path, shape) -> UrdfModel:
    """The URDF model of a body's ``shape`` (a ``Urdf``) at ``path``, read in full and checked as
    a scene's own bodies are: every structural fault and every mass that is not finite and >= 0
    is refused by the reader; with ``shape.inertia: file`` (PyBullet keeps the file's tensors)
    every link of positive mass needs an admissible inertia
    (:func:`~workbench.scene.inertia.inertia_problem`). With ``inertia: collision`` PyBullet
    replaces the tensors by the collision shapes' own, so the file's are not checked (1039
    links of pybullet_data's files declare tensors that are not positive definite).

    Raises
    ------
    pydantic_core.PydanticCustomError
        Of type ``file``, naming the file, the link and what was expected.
    """
    model = urdf_model(path, shape.global_scaling)
    if shape.inertia == "file":
        for link in model.links:
            if not link.inertial_given or link.inertial.mass == 0.0:
                continue
            problem = _inertia.inertia_problem(link.inertial.inertia)
            if problem is not None:
                raise PydanticCustomError(
                    "file",
                    "'{file}': link '{link}': <inertia>: expected {problem} (shape.inertia: "
                    "file keeps the file's tensor)",
                    {"file": path.name, "link": link.name, "problem": problem},
                )
    return model


@functools.lru_cache(maxsize=32)
def _read_urdf_cached(path: str, scaling: float, mtime_ns: int) -> UrdfModel:
    return read_urdf(path, scaling)


def _urdf_error(message: str, **values) -> PydanticCustomError:
    return PydanticCustomError("uncertainty", message, values)


def _unknown(what: str, name: str, names, where: str) -> PydanticCustomError:
    hint = did_you_mean(name, names)
    return _urdf_error(
        "{where}: unknown {what} '{name}'{hint}; the URDF has {names}",
        where=where,
        what=what,
        name=name,
        hint=hint,
        names=", ".join(names) or "(none)",
    )


def resolve_urdf(body, path: Path) -> tuple[UrdfModel | None, tuple[RandomLink, ...]]:
    """Check a URDF body's ``shape.joints``, ``shape.links`` and ``uncertainty`` against its
    file ``path`` (resolved).

    Parameters
    ----------
    body : workbench.scene.bodies.Body
        Read for ``shape`` (a ``Urdf``), ``fixed`` and ``uncertainty``.
    path : Path

    Returns
    -------
    model : UrdfModel or None
        The file's links and joints; None when the scene names no link or joint.
    links : tuple of RandomLink
        The uncertain links in PyBullet's order (the draw order of realizations).

    Raises
    ------
    pydantic_core.PydanticCustomError
        One message naming the field: unknown joint or link names (with "did you mean"), limits
        out of order, uncertainty without ``shape.inertia: file``, a random link without
        ``<inertial>`` or with mass 0, a nominal value outside its law's domain.
    """
    shape, u = body.shape, body.uncertainty
    if u is None and not shape.joints and not shape.links:
        return None, ()
    model = urdf_model(path, shape.global_scaling)
    moving = [j.name for j in model.joints if j.moves]
    for name, js in shape.joints.items():
        if name not in moving:
            if name in [j.name for j in model.joints]:
                raise _urdf_error(
                    "shape.joints.{name}: joint '{name}' is {type}; only revolute, continuous "
                    "and prismatic joints take damping, friction, limits and motors",
                    name=name,
                    type=model.joint(name).type,
                )
            raise _unknown("joint", name, moving, f"shape.joints.{name}")
        lower = js.lower if js.lower is not None else model.joint(name).lower
        upper = js.upper if js.upper is not None else model.joint(name).upper
        if (js.lower is not None or js.upper is not None) and (lower is None or upper is None):
            raise _urdf_error(
                "shape.joints.{name}: give both 'lower' and 'upper' (the URDF has no limits "
                "for this joint)",
                name=name,
            )
        given = js.lower is not None or js.upper is not None
        if given and lower is not None and upper is not None and lower > upper:
            raise _urdf_error(
                "shape.joints.{name}: expected lower <= upper, got {lo} > {up}",
                name=name,
                lo=lower,
                up=upper,
            )
    for name in shape.links:
        if name not in model.link_names:
            raise _unknown("link", name, model.link_names, f"shape.links.{name}")
    if u is None:
        return model, ()
    if shape.inertia != "file":
        raise _urdf_error(
            "uncertainty: a random URDF body needs 'shape.inertia: file' (PyBullet otherwise "
            "replaces the file's inertia tensors by ones computed from the collision shapes, "
            "and the URDF's values are the nominal ones of the random links)"
        )
    laws: dict[str, LinkUncertainty] = {}
    base = model.base
    own = LinkUncertainty(mass=u.mass, com=u.com, inertia=u.inertia)
    base_moves = base.inertial_given and base.inertial.mass > 0  # else PyBullet makes it static
    if not own.is_empty:
        if not body.fixed and (u.links != ALL_LINKS or base_moves):
            laws[base.name] = own
        elif body.fixed and u.links != ALL_LINKS:
            raise _urdf_error(
                "uncertainty: the base of a fixed URDF body does not move; declare random "
                "links under 'uncertainty.links' (by name, or 'all' with the blocks beside it)"
            )
    if u.links == ALL_LINKS:
        if own.is_empty:
            raise _urdf_error(
                "uncertainty.links: 'all' takes the blocks mass, com and inertia given beside "
                "it, and none is given"
            )
        for link in model.links[1:]:
            if link.inertial_given and link.inertial.mass > 0:
                laws[link.name] = own
    elif u.links is not None:
        for name, spec in u.links.items():
            where = f"uncertainty.links.{name}"
            if name not in model.link_names:
                raise _unknown("link", name, model.link_names, where)
            if name == base.name:
                raise _urdf_error(
                    "{where}: '{name}' is the base link, the body itself: give its blocks at "
                    "the top level of 'uncertainty'",
                    where=where,
                    name=name,
                )
            if spec.is_empty:
                raise _urdf_error(
                    "{where}: expected at least one of mass, com, inertia", where=where
                )
            laws[name] = spec
    if not laws:
        raise _urdf_error("uncertainty: no link of this URDF body is random")
    out = []
    for link in model.links:  # PyBullet's order: the draw order of realizations
        spec = laws.get(link.name)
        if spec is None:
            continue
        where = "uncertainty" if link.index == -1 else f"uncertainty.links.{link.name}"
        if not link.inertial_given or not link.inertial.mass > 0:
            why = "declares no <inertial>" if not link.inertial_given else "has mass 0 (static)"
            raise _urdf_error(
                "{where}: link '{name}' {why} in the URDF, so it has no nominal mass "
                "properties to randomize",
                where=where,
                name=link.name,
                why=why,
            )
        if link.name in _RESERVED_LINK_NAMES or "/" in link.name or link.name in (".", ".."):
            raise _urdf_error(
                "{where}: a random link cannot be named '{name}' (its values are stored as "
                "/params/<body>/<link>/...)",
                where=where,
                name=link.name,
            )
        shapeless = not link.collisions  # nothing to take a hull or a Z bound from
        hull = spec.com is not None and spec.com.domain == "hull" and spec.com.vertices is None
        if shapeless and hull:
            raise _urdf_error(
                "{where}.com: link '{name}' has no collision geometry to take the hull from; "
                "give 'vertices' (link frame, m)",
                where=where,
                name=link.name,
            )
        bound = spec.inertia is not None and spec.inertia.model == "bounded"
        if shapeless and bound and spec.inertia.z_max is None:
            raise _urdf_error(
                "{where}.inertia: link '{name}' has no collision geometry to take Z_max from; "
                "give 'z_max'",
                where=where,
                name=link.name,
            )
        J = link.inertial.inertia
        problem = _inertia.inertia_problem(J)
        if problem is not None:
            raise _urdf_error(
                "{where}: link '{name}' has an inadmissible inertia in the URDF: expected "
                "{problem}",
                where=where,
                name=link.name,
                problem=problem,
            )
        props = LinkInertial(
            mass=float(link.inertial.mass),
            com=tuple(float(x) for x in link.inertial.com),
            inertia=tuple(tuple(float(x) for x in row) for row in J),
        )
        spec.check_nominal(props.mass, props.com, props.inertia_matrix, where)
        out.append(RandomLink(link.name, link.index, props, spec, link.collisions))
    return model, tuple(out)
