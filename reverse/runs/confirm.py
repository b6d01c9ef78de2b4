"""PyBullet's confirmation of a reverse run: played forward from the run's stored earliest state
for the run's span, where does each moving body end against its place in the scene?

A past is only worth replaying if the forward engine, started where it starts, reaches the scene
(issue 35: "pasts the forward engine confirms"). A run of one body is refined until it does by
``--verify`` (:mod:`reverse.runs.verify`); a run of many bodies is confirmed as it is: PyBullet
(:func:`reverse.runs.verify.forward_to_rest` without settling) plays the earliest state for the
run's duration in the scene's own world, and each moving body's distance and turn from its place
in the scene's state are kept. A tumble or a pile is chaotic, so this is a measure, not a test:
it never changes a run's status. ``workbench reverse`` prints the share within
:data:`CONFIRM_TOLERANCE` and stores the residuals (``/reverse/confirmation``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from reverse.runs.verify import forward_to_rest
from workbench.scene.model import Scene
from workbench.sim.engine import Engine
from workbench.sim.state import State

__all__ = ["CONFIRM_TOLERANCE", "CONFIRM_DTYPE", "Confirmation", "confirm_run", "moving_bodies"]

#: A body is confirmed when PyBullet brings it within this distance (m) of its place: the
#: issue's 1 cm, a quarter of a spelling ball's diameter, the ``--verify`` tolerance.
CONFIRM_TOLERANCE = 0.01

#: The rows of ``/reverse/confirmation``: one per moving body.
CONFIRM_DTYPE = np.dtype([("body", "S64"), ("position_error", "f8"), ("angle_error", "f8")])


@dataclass
class Confirmation:
    """Per moving body, how far PyBullet's forward run from the earliest state ends from the
    body's place in the scene: ``position_error`` (m, inf when the run went non-finite) and
    ``angle_error`` (degrees), and where it ends (``reached``, m, (k, 3))."""

    body_names: list[str]
    position_error: np.ndarray
    angle_error: np.ndarray
    reached: np.ndarray | None = None
    tolerance: float = CONFIRM_TOLERANCE

    @property
    def confirmed(self) -> int:
        return int(np.sum(self.position_error <= self.tolerance))

    @property
    def share(self) -> float:
        return self.confirmed / len(self.body_names) if self.body_names else 1.0

    def line(self) -> str:
        """One line for a terminal: the share confirmed and the worst body."""
        n = len(self.body_names)
        text = (
            f"confirmation: PyBullet from the earliest state puts {self.confirmed} of {n} moving "
            f"bodies within {1e3 * self.tolerance:g} mm of their place"
        )
        if n and self.confirmed < n:
            j = int(np.argmax(self.position_error))
            text += f" (farthest: {self.body_names[j]}, {self.position_error[j]:.3g} m)"
        return text

    def table(self) -> np.ndarray:
        """The residuals as :data:`CONFIRM_DTYPE` rows."""
        out = np.zeros(len(self.body_names), dtype=CONFIRM_DTYPE)
        out["body"] = [name.encode("utf-8")[:64] for name in self.body_names]
        out["position_error"] = self.position_error
        out["angle_error"] = self.angle_error
        return out


def moving_bodies(scene: Scene) -> list[int]:
    """Indices of the scene's bodies that move (not fixed, not a plane)."""
    return [j for j, b in enumerate(scene.bodies) if not (b.fixed or b.shape.type == "plane")]


def confirm_run(scene: Scene, earliest: State, final: State, duration: float) -> Confirmation:
    """Play ``earliest`` forward in PyBullet for ``duration`` s in ``scene``'s world and compare
    each moving body with ``final`` (the scene's state)."""
    moving = moving_bodies(scene)
    engine = Engine(scene, visual=False)
    try:
        out = forward_to_rest(engine, earliest, moving, duration, settle=0.0)
    finally:
        engine.close()
    error = np.linalg.norm(out.position - final.position[moving], axis=1)
    angle = np.full(len(moving), np.inf)
    finite = np.isfinite(error) & np.all(np.isfinite(out.orientation), axis=1)
    if finite.any():
        rel = Rotation.from_quat(final.orientation[moving][finite]).inv() * Rotation.from_quat(
            out.orientation[finite]
        )
        angle[finite] = np.degrees(rel.magnitude())
    error[~finite] = np.inf
    return Confirmation([scene.bodies[j].name for j in moving], error, angle, out.position)
