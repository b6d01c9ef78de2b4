"""What a reverse run's bodies may reach, from the scene and the hints alone: the speeds the
physical audit allows them (:func:`hint_allowances`, :func:`final_state_allowances`, which
:func:`reverse.runs.audit.allowed_speeds` adds to each body's own fall) and the cap of
``--contacts cap-bounces`` (:func:`bounce_cap`, the same allowance for the arrangement's height,
known before the run).

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25, 2008.
"""

from __future__ import annotations

import math

import numpy as np

from reverse.goals.hints import Hint
from reverse.goals.markov import TransitionModel
from reverse.runs.audit import SPEED_FLOOR, body_radii
from reverse.step.dynamics import RigidBodies
from workbench.scene.model import Scene

__all__ = ["hint_allowances", "final_state_allowances", "table_allowance", "bounce_cap"]


def hint_allowances(
    scene: Scene, hints: list[Hint], duration: float, radii: np.ndarray
) -> np.ndarray:
    """Per body, the speed (m/s) its hints allow it before the run's fall: a hint's speed at its
    moment, plus what friction takes from the motion it describes over the time before it in
    forward time (``duration − at``): a slide decelerates by μ g (μ = the body's friction times
    the largest other friction, PyBullet's product law), a roll by ρ g / r (ρ = PyBullet's
    combination ρ_A μ_B + ρ_B μ_A, ``reverse/runs/contacts.py``; ``radii``: the bodies' radii,
    :func:`reverse.runs.audit.body_radii`). A block that comes to rest sliding at 2 m/s after
    1 s on μ = 0.3 was thrown at 4.9 m/s. Bounces and ``free`` hints allow their speed only
    (``free``: none, its speed is a flag)."""
    names = scene.body_names
    mats = [b.material for b in scene.bodies]
    mu = np.array([m.friction for m in mats])
    rho = np.array([m.rolling_friction for m in mats])
    g = float(np.linalg.norm(scene.gravity))
    out = np.zeros(len(names))
    for h in hints:
        if h.kind == "free" or h.body not in names:
            continue
        j = names.index(h.body)
        others = np.arange(len(names)) != j
        before = max(float(duration) - float(h.at), 0.0)
        decel = 0.0
        if h.kind == "slide" and others.any():
            decel = mu[j] * float(np.max(mu[others])) * g
        elif h.kind == "roll" and others.any():
            r = float(radii[j])
            comb = float(np.max(rho[j] * mu[others] + rho[others] * mu[j]))
            decel = comb * g / r if r > 0 else 0.0
        out[j] = max(out[j], float(h.speed) + decel * before)
    return out


def final_state_allowances(scene: Scene, speed: np.ndarray) -> np.ndarray:
    """Per body, the speed (m/s) its motion in the scene's own state allows it before: the final
    speed ``speed`` divided by the smallest restitution its contacts can have (PyBullet's product
    of the two bodies' restitutions). A forward collision of restitution e leaves at most e times
    the approach speed along the normal (Twigg & James 2008 Eq. 7), so one collision before the
    final state can have had the body at ``speed / e``; the scene's velocities are given data,
    like hints (``scenes/crash.py``: a pair separating at 0.5 m/s after a collision of e = 0.09
    approached at 5.5 m/s). A body at rest allows nothing; restitution 0 allows any speed."""
    e = np.array([b.material.restitution for b in scene.bodies], dtype=float)
    speed = np.asarray(speed, dtype=float)
    out = np.zeros(len(e))
    for j in np.flatnonzero(speed > 0):
        others = np.arange(len(e)) != j
        e_min = float(e[j] * np.min(e[others])) if others.any() else 1.0
        out[j] = speed[j] / e_min if e_min > 0 else np.inf
    return out


def table_allowance(model: TransitionModel | None) -> float:
    """The speed (m/s) a body whose past a contact-transition table draws may have been thrown
    at: the fastest release of the throws the table was trained on (its ``throw`` ranges,
    :data:`reverse.pasts.training.THROW`: horizontal components within ±h, vertical within
    [−v, 0], so at most √(2h² + v²); ``markov_block``: √(2 · 2² + 3²) = 4.12 m/s). The table is
    then the past's source of motion, as hints are (Twigg & James 2008 §4: the table's
    transitions stand for the throws it counted). 0 without a table, or for a table that does
    not record its throws."""
    if model is None:
        return 0.0
    throw = model.meta.get("throw")
    if not isinstance(throw, dict):
        return 0.0
    try:
        h = float(throw["horizontal_speed"])
        v = float(throw["vertical_speed"])
    except (KeyError, TypeError, ValueError):
        return 0.0
    speed = math.sqrt(2.0 * h * h + v * v)
    return speed if math.isfinite(speed) else 0.0


def bounce_cap(
    scene: Scene, rigid: RigidBodies, hints: list[Hint], duration: float, thrown: float = 0.0
) -> float:
    """The speed (m/s) a backward collision may approach at under ``cap_bounces``: what a body
    thrown at the largest speed the hints or the scene's own motion allow
    (:func:`hint_allowances`, :func:`final_state_allowances`; ``thrown``: a speed any moving body
    may have been thrown at, :func:`table_allowance`) gains falling the height of the
    arrangement — from the lowest bottom to the highest top of the moving bodies in the scene's
    state, along gravity — plus the audit's floor (``√(u² + 2|g|H)``, as
    :func:`reverse.runs.audit.allowed_speeds` allows a body; a body's extent is its
    :func:`~reverse.runs.audit.body_radii`). ``box_stack5``, five 0.25 m boxes at rest:
    √(2 · 9.81 · 1.36) + 0.2 = 5.4 m/s."""
    moving = rigid.moving
    if not moving.any():
        return math.inf
    radii = body_radii(rigid.mass, rigid.inertia)
    g = np.asarray(scene.gravity, dtype=float)
    g_norm = float(np.linalg.norm(g))
    position = np.array([b.position for b in scene.bodies], dtype=float)
    speed = np.linalg.norm(np.array([b.linear_velocity for b in scene.bodies], float), axis=1)
    u = max(
        float(np.max(hint_allowances(scene, hints, duration, radii)[moving], initial=0.0)),
        float(np.max(final_state_allowances(scene, speed)[moving], initial=0.0)),
        float(thrown),
    )
    height = 0.0
    if g_norm > 0:
        up = position[moving] @ (-g / g_norm)
        height = float(np.max(up + radii[moving]) - np.min(up - radii[moving]))
    return math.sqrt(u * u + 2.0 * g_norm * height) + SPEED_FLOOR
