"""Pieces that scene scripts for reverse runs share: the ground and the contact settings under
which PyBullet's contact laws and the reverse stepper's agree (docs/reverse.md, "Choosing
materials so PyBullet agrees").
"""

from __future__ import annotations

__all__ = ["NEUTRAL_MATERIAL", "EXACT_CONTACT_SETTINGS", "ground_box"]

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
