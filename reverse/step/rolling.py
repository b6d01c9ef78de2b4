"""Rolling without slip backward: a plausibility control for round bodies on static supports
(Twigg & James 2008 [1]_ §4 "Rolling").

[1]_ §4 "Rolling", observation 1: "the principle of maximal dissipation ensures that any slipping
grows without bound as the simulator steps in reverse" — a slipping contact has maximal friction
(Eq. 6), and backward (Eq. 13–15) that friction adds slip and spin instead of removing them. So a
ball rolls plausibly backward only from slip-free conditions. Collisions break them: a backward
collision between two balls on the ground (or of a ball with a wall) changes each ball's linear
velocity through an impulse along the line of centres, which leaves its spin — and so its ground
contact slips. From then on, exactly, the slip grows by (1 + 5/2)·μg per second for a ball, its
spin by (5/2)·μg/r per second, and every backward bounce on the ground adds (5/2)·μ·Δv_n/r at
once (docs/reverse.md "Spelling balls"). In the forward motion those pasts are balls that spin
at hundreds of rad/s and slow down to a roll just as they reach their bins.

Forward, the physical counterpart is short: after a collision a ball's slip decays to rolling
within |slip| / ((1 + 5/2)·μg) (0.15 s for 0.5 m/s at μ = 0.1). A plausible backward branch would
therefore be slip-free *before* each collision; finding it exactly needs look-ahead (the slip
must grow, backward, to exactly the velocity change of a collision still to come). This module
does what [1]_ does for spin in §4 "High angular velocities" — a non-physical, backward-only
control — but aimed at the cause: at each backward step, before the LCP, a round body's slip at
its static support decays by the factor ``exp(−C h)`` (``C = ∞``: removed), through its angular
velocity alone. Its linear velocity — where the body goes — is left to the exact step; the LCP
then finds a contact that sticks (the tangential goal of a resting contact is 0:
Handle-Contact lines 3–5) and the body rolls without slipping, as in the initial conditions §4
asks for.

A contact qualifies when

* one side is a moving body and the other static (a wall, the ground): a slip between two moving
  bodies is a collision's, not a roll's;
* it is *round*: the lever arm ``r`` from the body's centre of mass to the contact point is
  anti-parallel to the normal (|r × n| ≤ :data:`ROUND_TOLERANCE`·|r|) — a sphere anywhere on its
  surface, a capsule or cylinder on its round side; never a box's corner or face, so boxes, bricks
  and every body without round contacts are untouched;
* it *supports* the body, as a slope it can roll down without slipping: the normal makes an
  angle θ with the direction opposite the body's constant force (gravity) with
  tan θ < μ (1 + m|r|²/I), μ the contact's friction and I the body's largest principal moment
  (for a ball, tan θ < 7/2 μ: the classical condition for rolling down an incline; 19° at
  μ = 0.1). The ground under a ball qualifies; a wall beside it, a wall's top edge struck from
  the side, and any frictionless contact (where no slip grows backward) do not.

A body with several qualifying contacts uses its deepest (the smallest distance; the first
listed on a tie): slip-free rolling is defined for one support.

Pure numerics on numpy arrays (no PyBullet, no I/O).

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25, 2008.
"""

from __future__ import annotations

import math

import numpy as np

from reverse.step.dynamics import ContactSet

__all__ = ["ROUND_TOLERANCE", "rolling_supports", "slip_decay", "remove_slip"]

#: Largest |r × n| / |r| of a round contact (sine of the angle between the lever arm and the
#: normal). PyBullet's sphere contacts lie on the line of the centre and the normal to round-off:
#: measured on the spelling-balls scene (675 balls on a box ground, 1.25 s back), at most 4e-16.
#: A box's contacts are at its corners, with |r × n| / |r|
#: ≥ 0.4 for any box whose shortest edge is at least a tenth of its longest; 1e-6 lies far between
#: (a lever arm 1 µm off the normal per metre of radius).
ROUND_TOLERANCE = 1e-6


def slip_decay(rate: float, dt: float) -> float:
    """The factor ``exp(−rate · dt)`` the slip keeps over one backward step (``rate`` in 1/s;
    ``math.inf``: 0, the slip is removed)."""
    if rate < 0 or math.isnan(rate):
        raise ValueError(f"slip damping rate: expected a number ≥ 0 (1/s), got {rate!r}")
    return 0.0 if math.isinf(rate) else math.exp(-rate * dt)


def rolling_supports(
    contacts: ContactSet,
    position: np.ndarray,
    moving: np.ndarray,
    force: np.ndarray,
    mass: np.ndarray,
    inertia: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each round body's static support (module docstring: one qualifying contact per body).

    Parameters
    ----------
    contacts : ContactSet
        Normals point from body B into body A.
    position : ndarray, shape (n, 3)
        Centres of mass, m.
    moving : ndarray of bool, shape (n,)
    force : ndarray, shape (n, 3)
        Each body's constant force (gravity included), N: a support pushes against it.
    mass : ndarray, shape (n,)
        kg.
    inertia : ndarray, shape (n, 3, 3)
        Inertia about the centre of mass (any frame: only its largest eigenvalue is used), kg·m².

    Returns
    -------
    body : ndarray of int, shape (k,)
        The round bodies with a support, ascending.
    arm : ndarray, shape (k, 3)
        Lever arm from the centre of mass to the contact point, m.
    normal : ndarray, shape (k, 3)
        Unit normal of the support, pointing into the body.
    """
    empty = (np.zeros(0, dtype=int), np.zeros((0, 3)), np.zeros((0, 3)))
    if not len(contacts):
        return empty
    a, b = contacts.body_a, contacts.body_b
    move_a = (a >= 0) & moving[np.maximum(a, 0)]
    move_b = (b >= 0) & moving[np.maximum(b, 0)]
    one = move_a ^ move_b  # a moving body against a static one
    idx = np.flatnonzero(one)
    if not idx.size:
        return empty
    on_a = move_a[idx]
    body = np.where(on_a, a[idx], b[idx])
    # the normal points from B into A: into the moving body when it is A, out of it when B
    normal = np.where(on_a[:, None], contacts.normal[idx], -contacts.normal[idx])
    arm = contacts.point[idx] - position[body]
    arm_len = np.linalg.norm(arm, axis=1)
    off_axis = np.linalg.norm(np.cross(arm, normal), axis=1)
    round_ = (arm_len > 0) & (off_axis <= ROUND_TOLERANCE * arm_len)
    round_ &= np.einsum("ij,ij->i", arm, normal) < 0  # the centre lies on the normal's side
    if not round_.any():
        return empty
    idx, body, normal, arm, arm_len = (
        idx[round_], body[round_], normal[round_], arm[round_], arm_len[round_]
    )  # fmt: skip
    f = force[body]
    cos_t = -np.einsum("ij,ij->i", f, normal)  # |F| cos θ
    sin_t = np.linalg.norm(np.cross(f, normal), axis=1)  # |F| sin θ
    i_max = np.linalg.eigvalsh(inertia[body])[:, -1]
    k = mass[body] * arm_len**2 / np.where(i_max > 0, i_max, np.inf)
    mu = contacts.friction[idx]
    # tan θ < μ (1 + m r²/I): a slope the body rolls down without slipping (module docstring)
    ok = (cos_t > 0) & (sin_t < mu * (1.0 + k) * cos_t)
    if not ok.any():
        return empty
    idx, body, arm, normal = idx[ok], body[ok], arm[ok], normal[ok]
    # one per body: the deepest, the first listed on a tie (lexsort is stable)
    order = np.lexsort((np.arange(idx.size), contacts.distance[idx], body))
    first = np.ones(order.size, dtype=bool)
    first[1:] = body[order][1:] != body[order][:-1]
    pick = order[first]
    return body[pick], arm[pick], normal[pick]


def remove_slip(
    contacts: ContactSet,
    position: np.ndarray,
    velocity: np.ndarray,
    moving: np.ndarray,
    force: np.ndarray,
    mass: np.ndarray,
    inertia: np.ndarray,
    decay: float,
) -> np.ndarray:
    """Velocities whose round bodies keep ``decay`` of the slip at their static support.

    The slip of a body at its support (lever arm ``r``, normal ``n``) is the tangential part
    ``s = v_c − (v_c·n) n`` of the contact point's velocity ``v_c = v + ω × r`` (the support does
    not move). The angular velocity changes by ``Δω = −(1 − decay) (r × s) / |r|²``, which is
    perpendicular to ``r`` — the spin about the normal is kept — and gives
    ``Δω × r = −(1 − decay) s`` for ``r ∥ n``: the slip becomes ``decay · s``; the linear
    velocity is not changed.

    Parameters
    ----------
    contacts, position, moving, force, mass, inertia
        As in :func:`rolling_supports`.
    velocity : ndarray, shape (n, 6)
        Linear (m/s) and angular (rad/s, world frame) velocities.
    decay : float
        Fraction of the slip kept, in [0, 1] (:func:`slip_decay`).

    Returns
    -------
    ndarray, shape (n, 6)
        A new array (``velocity`` itself when no body has a round support).
    """
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"slip decay: expected a fraction in [0, 1], got {decay!r}")
    body, arm, normal = rolling_supports(contacts, position, moving, force, mass, inertia)
    if not body.size or decay == 1.0:
        return velocity
    v, w = velocity[body, :3], velocity[body, 3:]
    vc = v + np.cross(w, arm)
    slip = vc - np.einsum("ij,ij->i", vc, normal)[:, None] * normal
    out = velocity.copy()
    dw = np.cross(arm, slip) / np.einsum("ij,ij->i", arm, arm)[:, None]
    out[body, 3:] = w - (1.0 - decay) * dw
    return out
