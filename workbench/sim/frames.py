"""Body frames of the engine, pure numpy: where PyBullet's centre-of-mass (inertial) frame sits in
a body's own frame, the conversions between the two, and a body's reach from its bounding box.

PyBullet reports and resets the inertial frame, rotated onto the principal axes of inertia; the
workbench's states use the body frame the scene defines (see :mod:`workbench.sim.state`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

__all__ = ["BodyFrame", "mass_overrides_from_params", "body_orientation", "z_to", "box_reach"]


@dataclass(frozen=True)
class BodyFrame:
    """Where a body's centre-of-mass frame sits in its body frame.

    Attributes
    ----------
    com : ndarray, shape (3,)
        Centre of mass in the body frame, m.
    principal : ndarray, shape (4,)
        Quaternion (x, y, z, w) of the principal (inertial) frame in the body frame.
    moments : ndarray, shape (3,)
        Principal moments, kg·m² (zeros for static bodies).
    inertia : ndarray, shape (3, 3)
        Inertia about the centre of mass in the body frame, kg·m².
    mass : float
        kg (0 for static bodies).
    """

    com: np.ndarray
    principal: np.ndarray
    moments: np.ndarray
    inertia: np.ndarray
    mass: float


def mass_overrides_from_params(params: dict) -> dict:
    """``{"body/mass": m, "body/com": c, "body/inertia": J}`` -> ``{body: {...}}`` for
    :class:`~workbench.sim.engine.Engine` (the realized mass properties a trajectory was run
    with). A URDF body's random links, ``"body/link/mass"`` etc., go to
    ``{body: {"links": {link: {...}}}}``, the engine's per-link contract."""
    out: dict[str, dict] = {}
    for key, value in params.items():
        parts = key.split("/")
        if parts[-1] not in ("mass", "com", "inertia"):
            continue
        value = np.asarray(value, dtype=float)
        if len(parts) == 2:
            out.setdefault(parts[0], {})[parts[1]] = value
        elif len(parts) == 3:
            body, link, quantity = parts
            out.setdefault(body, {}).setdefault("links", {}).setdefault(link, {})[quantity] = value
    return out


def body_orientation(q_inertial: np.ndarray, frames: list[BodyFrame]) -> np.ndarray:
    """Body-frame quaternions from inertial-frame ones, both shape (..., n, 4), for the ``n``
    bodies of ``frames``."""
    q_inertial = np.asarray(q_inertial, dtype=float)
    out = np.empty_like(q_inertial)
    for j, frame in enumerate(frames):
        if frame.principal[3] == 1.0:  # identity principal frame: nothing to convert
            out[..., j, :] = q_inertial[..., j, :]
        else:
            r = Rotation.from_quat(q_inertial[..., j, :].reshape(-1, 4))
            conv = (r * Rotation.from_quat(frame.principal).inv()).as_quat()
            out[..., j, :] = conv.reshape(q_inertial[..., j, :].shape)
    return out


def z_to(axis: np.ndarray) -> Rotation:
    """A rotation taking the z axis onto ``axis`` (unit, shape (3,))."""
    z = np.array([0.0, 0.0, 1.0])
    cross = np.cross(z, axis)
    s = np.linalg.norm(cross)
    if s < 1e-12:
        return Rotation.identity() if axis[2] > 0 else Rotation.from_rotvec([np.pi, 0.0, 0.0])
    return Rotation.from_rotvec(cross / s * np.arctan2(s, float(np.dot(z, axis))))


def box_reach(lo, hi, centre) -> float:
    """Largest distance, m, from ``centre`` (3,) to a corner of the axis-aligned box with
    corners ``lo`` and ``hi`` (3,): a bound on how far a body inside the box reaches from it."""
    corners = np.array(
        [[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    )
    return float(np.max(np.linalg.norm(corners - centre, axis=1)))
