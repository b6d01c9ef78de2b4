"""Observer channels computed from recorded body states (pure numpy).

Rigid-body kinematics of a point fixed on a body, r = R(q) (p − c) from the centre of mass:
position x + r, velocity v + ω × r, acceleration a + α × r + ω × (ω × r), where a and α are the
velocity changes of the recorded step divided by dt (the accelerations the integrator applied).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.spatial.transform import Rotation

from workbench.scene.model import OBSERVER_QUANTITIES, Observer

__all__ = ["observer_channel", "observer_info", "kinetic_energy"]


def observer_info(obs: Observer, row: str | None = None) -> dict:
    """Metadata stored with a channel: quantity, unit, component labels, body (``row``, the name
    of the observed row, when given: ``"<body>/<link>"`` for a link of a URDF body)."""
    _, unit, comps, _, _ = OBSERVER_QUANTITIES[obs.quantity]
    return {
        "quantity": obs.quantity,
        "unit": unit,
        "components": list(comps),
        "body": row or obs.body or "",
    }


def kinetic_energy(mass, inertia, orientation, v, w) -> np.ndarray:
    """Kinetic energy per body, ½ m |v|² + ½ ωᵀ R J Rᵀ ω.

    Parameters
    ----------
    mass : ndarray, shape (n,)
    inertia : ndarray, shape (n, 3, 3)
        About the centre of mass in the body frame.
    orientation : ndarray, shape (nt, n, 4)
        Body-frame quaternions.
    v, w : ndarray, shape (nt, n, 3)

    Returns
    -------
    ndarray, shape (nt, n), J.
    """
    nt, n = v.shape[:2]
    R = Rotation.from_quat(orientation.reshape(-1, 4)).as_matrix().reshape(nt, n, 3, 3)
    w_body = np.einsum("tnji,tnj->tni", R, w)  # Rᵀ ω
    rot = 0.5 * np.einsum("tni,nij,tnj->tn", w_body, inertia, w_body)
    return 0.5 * mass[None, :] * np.einsum("tni,tni->tn", v, v) + rot


def observer_channel(obs: Observer, j: int | None, rec: dict) -> np.ndarray:
    """Values of one observer, shape (nt, k).

    Parameters
    ----------
    obs : Observer
    j : int or None
        Row of the observed body or tracked link (``Scene.row_of``).
    rec : dict
        Recorded arrays: ``position``, ``orientation`` (body frame), ``linear_velocity``,
        ``angular_velocity``, ``linear_acceleration``, ``angular_acceleration`` (nt, n, 3/4),
        ``com`` (n, 3) centre of mass in the body frame, ``kinetic_energy`` (nt, n),
        ``contacts`` (nt, n) and ``contact_total`` (nt,).
    """
    q = obs.quantity
    if q == "kinetic_energy":
        ke = rec["kinetic_energy"]
        return (ke.sum(axis=1) if j is None else ke[:, j])[:, None]
    if q == "contact_count":
        cc = rec["contact_total"] if j is None else rec["contacts"][:, j]
        return np.asarray(cc, dtype=float)[:, None]
    if q == "com_position":
        return rec["position"][:, j].copy()
    if q == "com_velocity":
        return rec["linear_velocity"][:, j].copy()
    if q == "com_acceleration":
        return rec["linear_acceleration"][:, j].copy()
    if q == "angular_velocity":
        return rec["angular_velocity"][:, j].copy()
    if q == "angular_acceleration":
        return rec["angular_acceleration"][:, j].copy()
    if q == "euler_angles":
        with warnings.catch_warnings():  # at pitch ±90° scipy sets the third angle to 0
            warnings.filterwarnings("ignore", message="Gimbal lock detected")
            return Rotation.from_quat(rec["orientation"][:, j]).as_euler("xyz")
    # point observers
    R = Rotation.from_quat(rec["orientation"][:, j])
    r = R.apply(np.asarray(obs.point, dtype=float) - rec["com"][j])
    w = rec["angular_velocity"][:, j]
    if q == "point_position":
        return rec["position"][:, j] + r
    if q == "point_velocity":
        return rec["linear_velocity"][:, j] + np.cross(w, r)
    if q == "point_acceleration":
        alpha = rec["angular_acceleration"][:, j]
        return rec["linear_acceleration"][:, j] + np.cross(alpha, r) + np.cross(w, np.cross(w, r))
    raise AssertionError(q)  # pragma: no cover - the schema forbids other quantities
