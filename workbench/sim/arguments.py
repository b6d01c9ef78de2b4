"""Arguments of the engine's PyBullet calls for scene bodies, pure: which ``GEOM_*`` geometry and
which ``createCollisionShape`` / ``createVisualShape`` keywords make each shape, and the
``changeDynamics`` keywords of every body. The engine (:mod:`workbench.sim.engine`) makes the
calls.

Planes may collide as a thick box (``plane_as_box``): a box on PyBullet's ``GEOM_PLANE`` gets a
persistent manifold that grows by one point per step, while box–box detection reports all four
corners of a resting box at once. They are drawn as a thin slab whose top face is the plane.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.scene.bodies import JointControl
from workbench.scene.model import Body, Material, Settings
from workbench.sim.frames import z_to

__all__ = [
    "ShapeArguments",
    "shape_arguments",
    "dynamics_arguments",
    "BODY_WIDE_DYNAMICS",
    "motor_arguments",
    "MAX_SPEED",
    "PLANE_BOX_HALF",
    "PLANE_BOX_DEPTH",
    "SLAB_DEPTH",
    "PLANE_COLOUR",
    "FIXED_COLOUR",
    "MOVING_COLOURS",
    "body_colour",
]

#: Speed cap handed to PyBullet (m/s and rad/s). A multibody base is otherwise clamped to
#: 100 m/s and 100 rad/s (btMultiBody's default maximum coordinate velocity), silently: measured
#: here, a ball launched at 300 m/s flew at 100 m/s. The value is "no cap" in practice.
MAX_SPEED = 1e30

#: Half side and half depth (m) of the box that stands in for a plane with ``plane_as_box``.
PLANE_BOX_HALF = 50.0
PLANE_BOX_DEPTH = 0.5

#: Half side and half depth (m) of the slab that draws a plane.
_SLAB_HALF = 10
SLAB_DEPTH = 0.001

#: Colour of a drawn plane (RGBA).
PLANE_COLOUR = (0.8, 0.8, 0.8, 1)

#: Colour of fixed bodies (the ground) in the viewer (RGBA).
FIXED_COLOUR = (0.75, 0.75, 0.72, 1)

#: Colours of moving bodies in the viewer (RGBA), cycled by the body's index in the scene.
MOVING_COLOURS = (
    (0.85, 0.33, 0.10, 1),
    (0.00, 0.45, 0.74, 1),
    (0.93, 0.69, 0.13, 1),
    (0.47, 0.67, 0.19, 1),
    (0.49, 0.18, 0.56, 1),
    (0.30, 0.75, 0.93, 1),
    (0.64, 0.08, 0.18, 1),
)


def body_colour(k: int, body) -> tuple[float, float, float, float]:
    """Colour (RGBA) the viewer gives the ``k``-th body of a scene (a plane's drawn slab is
    :data:`PLANE_COLOUR` whatever this says): the viewer, PNG frames, videos and the web page
    all use it."""
    return FIXED_COLOUR if body.fixed else MOVING_COLOURS[k % len(MOVING_COLOURS)]


@dataclass(frozen=True)
class ShapeArguments:
    """Arguments of one shape's PyBullet calls.

    Attributes
    ----------
    geometry : str
        Name of the collision shape's ``GEOM_*`` constant.
    collision : dict
        ``createCollisionShape`` keywords.
    concave : bool
        A mesh to collide as a concave triangle mesh (``flags=GEOM_FORCE_CONCAVE_TRIMESH``).
    visual_geometry : str or None
        Name of the visual shape's ``GEOM_*`` constant (None: no visual shape asked for).
    visual : dict
        ``createVisualShape`` keywords (without the colour).
    colour : tuple of float or None
        RGBA the shape is always drawn in (planes), else None (the body's colour).
    """

    geometry: str
    collision: dict
    concave: bool = False
    visual_geometry: str | None = None
    visual: dict | None = None
    colour: tuple | None = None


def shape_arguments(
    shape, mesh_path: Path | None = None, *, plane_as_box: bool = False, visual: bool = False
) -> ShapeArguments:
    """The PyBullet arguments of a scene ``shape`` (sphere, box, cylinder, capsule, plane, mesh).

    Parameters
    ----------
    shape
        A body's shape from the scene (:mod:`workbench.scene.model`).
    mesh_path : Path, optional
        The resolved file of a mesh shape.
    plane_as_box : bool
        Collide a plane as a 2 :data:`PLANE_BOX_HALF` wide, 2 :data:`PLANE_BOX_DEPTH` deep box
        whose top face is the plane.
    visual : bool
        Also give the visual shape's arguments.
    """
    kind = shape.type
    if kind == "sphere":
        geom, kw = "GEOM_SPHERE", {"radius": shape.radius}
    elif kind == "box":
        geom, kw = "GEOM_BOX", {"halfExtents": list(shape.halves)}
    elif kind in ("cylinder", "capsule"):
        geom = "GEOM_CYLINDER" if kind == "cylinder" else "GEOM_CAPSULE"
        kw = {"radius": shape.radius, "height": shape.length}
    elif kind == "plane":
        geom, kw = "GEOM_PLANE", {"planeNormal": list(shape.normal)}
    elif kind == "mesh":
        geom, kw = "GEOM_MESH", {"fileName": str(mesh_path), "meshScale": list(shape.scale3)}
    else:  # pragma: no cover - schema forbids
        raise AssertionError(kind)
    col_geom, ckw = geom, dict(kw)
    concave = kind == "mesh" and shape.collision == "concave"
    if kind == "plane":
        normal = np.asarray(shape.normal, dtype=float) / np.linalg.norm(shape.normal)
    if kind == "plane" and plane_as_box:
        col_geom = "GEOM_BOX"
        ckw = {
            "halfExtents": [PLANE_BOX_HALF, PLANE_BOX_HALF, PLANE_BOX_DEPTH],
            "collisionFrameOrientation": z_to(normal).as_quat().tolist(),
            "collisionFramePosition": (-PLANE_BOX_DEPTH * normal).tolist(),
        }
    if not visual:
        return ShapeArguments(col_geom, ckw, concave)
    vkw, colour = dict(kw), None
    if kind in ("cylinder", "capsule"):
        vkw = {"radius": shape.radius, "length": shape.length}
    if kind == "plane":  # drawn as a thin slab whose top face is the plane
        geom, colour = "GEOM_BOX", PLANE_COLOUR
        vkw = {
            "halfExtents": [_SLAB_HALF, _SLAB_HALF, SLAB_DEPTH],
            "visualFrameOrientation": z_to(normal).as_quat().tolist(),
            "visualFramePosition": (-SLAB_DEPTH * normal).tolist(),
        }
    return ShapeArguments(col_geom, ckw, concave, geom, vkw, colour)


#: ``changeDynamics`` keywords that set a whole multibody (Bullet keeps them on the btMultiBody,
#: not per link). Measured with PyBullet 3.2.7: a call for link k >= 0 holding any of them sets
#: its other values (friction, restitution) on the *base* instead of link k, so links are given
#: only their material, and these go with the base's call.
BODY_WIDE_DYNAMICS = ("linearDamping", "angularDamping", "maxJointVelocity")


def dynamics_arguments(body: Body, settings: Settings, material: Material | None = None) -> dict:
    """``changeDynamics`` settings every body gets: no damping, no speed cap, its material (or
    ``material``: a URDF link's own, ``shape.links.<name>.material``), and the scene's contact
    processing threshold if it sets one. A URDF link's call takes them without
    :data:`BODY_WIDE_DYNAMICS`."""
    material = body.material if material is None else material
    dyn = dict(
        linearDamping=0.0,
        angularDamping=0.0,
        maxJointVelocity=MAX_SPEED,
        lateralFriction=material.friction,
        rollingFriction=material.rolling_friction,
        spinningFriction=material.spinning_friction,
        restitution=material.restitution,
    )
    if settings.contact_processing_threshold is not None:
        dyn["contactProcessingThreshold"] = settings.contact_processing_threshold
    return dyn


def motor_arguments(p, control: JointControl) -> dict:
    """``setJointMotorControl2`` keywords (after body and joint) of a URDF joint's ``control``:
    ``p`` is the PyBullet module, for its mode constants. PyBullet's own gains apply where the
    scene gives none (0.1 and 1 for position control)."""
    if control.mode == "position":
        kw = dict(
            controlMode=p.POSITION_CONTROL,
            targetPosition=control.target,
            targetVelocity=0.0,
            force=control.max_force,
        )
    else:
        kw = dict(
            controlMode=p.VELOCITY_CONTROL, targetVelocity=control.target, force=control.max_force
        )
    if control.position_gain is not None:
        kw["positionGain"] = control.position_gain
    if control.velocity_gain is not None:
        kw["velocityGain"] = control.velocity_gain
    return kw
