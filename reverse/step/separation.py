"""Keeping bodies apart backward: the overlap a backward step's configuration brings is pushed out
before the step's velocities are solved (:attr:`reverse.step.types.StepSettings.separate`).

A backward step fixes its configuration first, ``x⁻ = x⁺ − h v⁺`` ([1]_ §3, the mirror of
semi-implicit Euler), and the contacts found there then shape ``v⁻``. Nothing in that order stops
``x⁻`` from putting a body inside another: forward, the engine's contact solver would have kept
them apart, but backward the motion is the one the later state implies. Forward engines correct
such overlap with a position projection that leaves velocities alone (Bullet's split impulse,
Catto's "soft step" / NGS position correction [2]_); this is its backward counterpart:

* each contact deeper than :data:`SLOP` gets a push along its normal that removes the depth beyond
  the slop, shared between its two bodies in proportion to their inverse masses (a static body or
  a body held still takes none);
* a body in several overlapping contacts takes the mean of their pushes (a Jacobi sweep with the
  count as relaxation, so a ball squeezed between two others is not pushed out twice), and the
  sweeps repeat until no contact is deeper than the slop by more than :data:`TOLERANCE`, or
  :data:`MAX_SWEEPS` sweeps;
* each contact's distance follows its bodies' pushes to first order, ``d ← d + n·(Δx_A − Δx_B)``
  — exact for translations along a fixed normal (a ball on a plane or a box face), second order
  in the push for two balls — and its point moves with the mean push of its bodies, so the step's
  problem is posed at the configuration it returns.

Only positions move: orientations and velocities are untouched, and the step then solves ``v⁻`` at
the separated configuration. The step is no longer an exact mirror — played forward, the state
reaches ``x⁺`` shifted by the push — which is why it is a control, off by default, measured in
``docs/studies/keep-apart.md``. Pure numpy (no PyBullet).

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25, 2008.
.. [2] E. Catto, "Modeling and Solving Constraints", GDC 2009; Bullet's
   ``btSequentialImpulseConstraintSolver`` split-impulse position correction.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from reverse.step.dynamics import ContactSet

__all__ = ["SLOP", "TOLERANCE", "MAX_SWEEPS", "separate_overlaps"]

#: Depth left in place, m: a resting contact keeps a little overlap, so that the next step still
#: finds it (PyBullet reports resting contacts at distances of about −1e−4 m; its own forward
#: motion of the spelling balls at 1/240 s overlaps by about 1 mm, issue 35).
SLOP = 2e-4
#: Depth beyond the slop that ends the sweeps, m: a twentieth of a millimetre, below what a
#: viewer can see on a centimetre ball and below the audit's limits (2 mm, 1 mm at the earliest
#: state, :mod:`reverse.runs.audit`).
TOLERANCE = 5e-5
#: Sweeps at most: a ball pressed between neighbours in a packed bin settles in a few; 50 bounds
#: the cost of a jammed configuration (then the remaining depth is what the step reports).
MAX_SWEEPS = 50


def separate_overlaps(
    contacts: ContactSet, position: np.ndarray, inverse_mass: np.ndarray
) -> tuple[np.ndarray, ContactSet, int]:
    """Push the bodies of overlapping ``contacts`` apart (module docstring).

    Parameters
    ----------
    contacts : ContactSet
        The contacts at ``position`` (normals from B into A, signed distances, −1 for a static
        body).
    position : ndarray (n, 3)
        Centres of mass, m.
    inverse_mass : ndarray (n,)
        1/kg of each body; 0 for a body that must not move (static, held, or not moving).

    Returns
    -------
    position : ndarray (n, 3)
        The separated positions (a copy; ``position`` itself is not changed).
    contacts : ContactSet
        The contacts with their distances and points carried along.
    sweeps : int
        Sweeps made (0: nothing was deeper than the slop).
    """
    position = np.array(position, dtype=float, copy=True)
    if not len(contacts):
        return position, contacts, 0
    a, b = contacts.body_a, contacts.body_b
    n = contacts.normal
    wa = np.where(a >= 0, inverse_mass[np.maximum(a, 0)], 0.0)
    wb = np.where(b >= 0, inverse_mass[np.maximum(b, 0)], 0.0)
    w = wa + wb
    movable = w > 0
    share_a = np.divide(wa, w, out=np.zeros_like(w), where=movable)
    share_b = np.divide(wb, w, out=np.zeros_like(w), where=movable)
    distance = contacts.distance.astype(float, copy=True)
    moved = np.zeros_like(position)
    n_bodies = len(position)
    sweeps = 0
    while sweeps < MAX_SWEEPS:
        depth = np.where(movable, -distance - SLOP, 0.0)
        deep = depth > TOLERANCE
        if not deep.any():
            break
        sweeps += 1
        k = np.flatnonzero(deep)
        push_a = (depth[k] * share_a[k])[:, None] * n[k]
        push_b = -(depth[k] * share_b[k])[:, None] * n[k]
        total = np.zeros((n_bodies, 3))
        count = np.zeros(n_bodies)
        on_a, on_b = a[k] >= 0, b[k] >= 0
        np.add.at(total, a[k][on_a], push_a[on_a])
        np.add.at(count, a[k][on_a], 1.0)
        np.add.at(total, b[k][on_b], push_b[on_b])
        np.add.at(count, b[k][on_b], 1.0)
        step = total / np.maximum(count, 1.0)[:, None]
        moved += step
        position += step
        da = np.where((a >= 0)[:, None], step[np.maximum(a, 0)], 0.0)
        db = np.where((b >= 0)[:, None], step[np.maximum(b, 0)], 0.0)
        distance += np.einsum("ij,ij->i", n, da - db)
    if sweeps == 0:
        return position, contacts, 0
    ma = np.where((a >= 0)[:, None], moved[np.maximum(a, 0)], 0.0)
    mb = np.where((b >= 0)[:, None], moved[np.maximum(b, 0)], 0.0)
    both = ((a >= 0) & (b >= 0)).astype(float)[:, None]
    point = contacts.point + (ma + mb) / (1.0 + both)
    return position, replace(contacts, distance=distance, point=point), sweeps
