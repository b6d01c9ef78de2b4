"""What ties bodies together or drives them: joints, spring-dampers and prescribed motions.

Anchors and axes are world coordinates at t = 0; ``world`` stands for the fixed frame. The
engine builds these as PyBullet constraints and forces (``workbench/sim/engine.py``). See
``docs/architecture.md`` (the scene wing).
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Literal

import numpy as np
from pydantic import model_validator

from workbench.scene.fields import WORLD, Name, PosFloat, StrictModel, Vec3

__all__ = ["Joint", "Spring", "Prescribed"]


class Joint(StrictModel):
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
            # hypot, not np.linalg.norm: an axis of 1e308 would overflow the sum of squares
            length = math.hypot(*self.axis) if self.axis is not None else 0.0
            if not (0.0 < length < math.inf):
                raise ValueError(f"a {self.type} joint needs a non-zero, finite 'axis'")
        if self.type in ("revolute", "ball") and self.anchor is None:
            raise ValueError(f"a {self.type} joint needs an 'anchor' point (world, m)")
        return self


class Spring(StrictModel):
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


class Prescribed(StrictModel):
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
        # imported here: scipy.interpolate is needed only by scenes with prescribed motions
        from scipy.interpolate import CubicSpline, interp1d

        x = np.asarray(self.time, dtype=float)
        y = np.asarray(self.values, dtype=float)
        if self.interpolation == "cubic" and len(x) >= 3:
            return CubicSpline(x, y, axis=0, bc_type="clamped")
        return interp1d(x, y, axis=0)
