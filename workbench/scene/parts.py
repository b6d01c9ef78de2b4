"""Pieces that scene scripts for reverse runs share: the ground and the contact settings under
which PyBullet's contact laws and the reverse stepper's agree (docs/reverse.md, "Choosing
materials so PyBullet agrees"), materials, cubes, the scene mapping itself, and the two hints
(a last bounce and a slide or roll) that send a body away from its final place backward.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

__all__ = [
    "NEUTRAL_MATERIAL",
    "EXACT_CONTACT_SETTINGS",
    "ground_box",
    "material",
    "cube",
    "bin_walls",
    "reverse_scene",
    "arrival_hints",
    "scene_parameters",
]

#: Ground material: friction and restitution 1 are the neutral elements of PyBullet's product
#: rule (the bodies' own values are the effective ones); rolling friction 0, because PyBullet
#: combines it as ρ_A μ_B + ρ_B μ_A (docs/scenes.md).
NEUTRAL_MATERIAL = {"friction": 1.0, "restitution": 1.0, "rolling_friction": 0.0}

#: No penetration push-out (``contact_erp``: it adds speed to bounces) and no speculative
#: contacts (``contact_processing_threshold``: they take gap/dt off a bounce), so an impact
#: follows Newton's law wherever in a step it falls, as in the reverse stepper.
EXACT_CONTACT_SETTINGS = {"contact_erp": 0.0, "contact_processing_threshold": 0.0}


def ground_box(half_span: float, centre: tuple[float, float] = (0.0, 0.0)) -> dict:
    """A fixed ground: a 1 m thick box whose top face is z = 0, ``2 half_span`` wide, centred
    at ``centre`` (m). A box, not a plane: on a ``GEOM_PLANE`` a resting box gains its contact
    points one per step; on a box it reports its four corners at once."""
    return {
        "name": "ground",
        "shape": {"type": "box", "half_extents": [float(half_span), float(half_span), 0.5]},
        "position": [float(centre[0]), float(centre[1]), -0.5],
        "fixed": True,
        "material": dict(NEUTRAL_MATERIAL),
    }


def material(friction: float, restitution: float, rolling_friction: float = 0.0) -> dict:
    """A body's material: friction and restitution (PyBullet multiplies the two bodies' values)
    and rolling friction (m)."""
    return {"friction": friction, "restitution": restitution, "rolling_friction": rolling_friction}


def cube(
    name: str,
    size: float,
    mass: float,
    position: list[float],
    material: dict,
    linear_velocity: list[float] | None = None,
) -> dict:
    """A box with edges ``size`` (m) and ``mass`` (kg) at ``position`` (m), optionally moving at
    ``linear_velocity`` (m/s)."""
    body = {
        "name": name,
        "shape": {"type": "box", "half_extents": [size / 2] * 3},
        "mass": mass,
        "position": position,
    }
    if linear_velocity is not None:
        body["linear_velocity"] = linear_velocity
    body["material"] = material
    return body


def bin_walls(
    half: float, thickness: float, bottom: float, top: float, material: dict | None = None
) -> list[dict]:
    """The four fixed walls ``wall0`` … ``wall3`` of a square bin ``2 half`` wide inside, centred
    on the vertical axis: boxes ``2 thickness`` thick (``thickness`` is their half thickness,
    m) from height ``bottom`` to ``top`` (m), overlapping at the corners; ``material`` for each,
    if given."""
    walls = []
    for k, (axis, sign) in enumerate(((0, 1), (0, -1), (1, 1), (1, -1))):
        pos = [0.0, 0.0, 0.5 * (top + bottom)]
        pos[axis] = sign * (half + thickness)
        ext = [half + 2 * thickness, half + 2 * thickness, 0.5 * (top - bottom)]
        ext[axis] = thickness
        wall = {
            "name": f"wall{k}",
            "shape": {"type": "box", "half_extents": ext},
            "position": pos,
            "fixed": True,
        }
        if material is not None:
            wall["material"] = dict(material)
        walls.append(wall)
    return walls


def reverse_scene(
    description: str,
    bodies: list[dict],
    dt: float,
    duration: float,
    exact_contacts: bool = True,
    reverse: dict | None = None,
) -> dict:
    """The scene mapping of a reverse-run script: every step recorded and, with
    ``exact_contacts``, :data:`EXACT_CONTACT_SETTINGS` (so a PyBullet replay of the earliest state
    follows the stepper's contact laws); ``reverse``: the scene's reverse settings
    (:class:`workbench.scene.model.ReverseDefaults`, the controls its pasts need)."""
    settings = {"dt": dt, "duration": duration, "record_every": 1}
    if exact_contacts:
        settings.update(EXACT_CONTACT_SETTINGS)
    out = {"description": description, "settings": settings, "bodies": bodies}
    if reverse:
        out["reverse"] = dict(reverse)
    return out


def arrival_hints(
    body: str, at: float, bounce: float, motion: str, direction: list[float], speed: float
) -> list[dict]:
    """The two hints of a body that, in forward time, arrives at its final place at reverse time
    ``at`` (s): it lands at ``bounce`` m/s and moves in along ``direction`` at ``speed`` m/s;
    ``motion`` is ``"slide"`` or ``"roll"`` (docs/reverse.md, hints)."""
    return [
        {"body": body, "bounce": bounce, "at": at},
        {"body": body, motion: {"direction": direction, "speed": speed}, "at": at},
    ]


def scene_parameters(build: Callable[..., dict], parameters: dict) -> dict:
    """The defaults of ``build``'s parameters updated with ``parameters``.

    A script's ``hints(**parameters)`` receives the scene's resolved parameters from
    ``workbench reverse --hints script``, but only those given when called on its own (tests,
    ``script_hints(path, {}, names)``); this fills in the rest, so the defaults are written once,
    in ``build``'s signature.
    """
    defaults = {
        p.name: p.default
        for p in inspect.signature(build).parameters.values()
        if p.default is not inspect.Parameter.empty
    }
    return {**defaults, **parameters}
