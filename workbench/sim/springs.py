"""The 6-DOF spring-damper law (bushing) between two bodies, pure numpy: the force and torque
the engine applies before every step for each scene spring.

Axes are the world axes at t = 0, carried by body a. The force on body b is
F = F0 − K d − C ḋ and the torque τ = T0 − K_r θ − C_r ω_rel, with d the displacement of b's
attachment point relative to a's and θ the small rotation of b relative to a since t = 0 (see
:class:`workbench.scene.connections.Spring`); body a takes −F and −τ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

__all__ = ["SpringLaw"]


@dataclass(frozen=True)
class SpringLaw:
    """One spring's constants and initial rotations.

    Attributes
    ----------
    ra0 : Rotation
        Body a's inertial rotation at t = 0 (the identity for the world).
    rel0 : Rotation
        Body b's inertial rotation relative to a's at t = 0.
    K, C, Kr, Cr : ndarray, shape (3,)
        Stiffness (N/m), damping (N·s/m), rotational stiffness (N·m/rad) and rotational damping
        (N·m·s/rad) along the spring axes.
    F0, T0 : ndarray, shape (3,)
        Preload force (N) and torque (N·m).
    """

    ra0: Rotation
    rel0: Rotation
    K: np.ndarray
    C: np.ndarray
    Kr: np.ndarray
    Cr: np.ndarray
    F0: np.ndarray
    T0: np.ndarray

    @classmethod
    def of(cls, spring, ra0: Rotation, rb0: Rotation) -> SpringLaw:
        """The law of a scene ``spring`` whose bodies start at inertial rotations ``ra0``,
        ``rb0``."""
        return cls(
            ra0,
            ra0.inv() * rb0,
            np.asarray(spring.stiffness),
            np.asarray(spring.damping),
            np.asarray(spring.rotational_stiffness),
            np.asarray(spring.rotational_damping),
            np.asarray(spring.preload),
            np.asarray(spring.preload_torque),
        )

    def wrench(self, pa, va, ra: Rotation, wa, pb, vb, rb: Rotation, wb):
        """World force (N) and torque (N·m) on body b, each shape (3,), from the attachment
        points' world positions ``pa``, ``pb`` (m) and velocities ``va``, ``vb`` (m/s), and the
        bodies' inertial rotations ``ra``, ``rb`` and angular velocities ``wa``, ``wb`` (rad/s)."""
        axes = ra * self.ra0.inv()  # spring axes (world at t = 0) -> world now
        d = axes.inv().apply(pb - pa)
        dd = axes.inv().apply(vb - va)
        # small rotation of b relative to a since t = 0, in a's inertial frame, then in the
        # spring axes (world axes at t = 0 carried by a)
        delta_a = ((ra.inv() * rb) * self.rel0.inv()).as_rotvec()
        theta = self.ra0.apply(delta_a)
        wrel = axes.inv().apply(wb - wa)
        f_local = self.F0 - self.K * d - self.C * dd
        tau_local = self.T0 - self.Kr * theta - self.Cr * wrel
        return axes.apply(f_local), axes.apply(tau_local)
