"""Brick stack (Twigg & James 2008 §5 "Stacking"): a small running-bond wall of bricks at rest.

The scene is the FINAL state of the motion: ``courses`` courses of bricks on the ground, each
course offset by half a brick from the one below (odd courses end in half bricks, so the wall's
ends are straight). Stepped backward with the hints of :func:`hints` and the attraction of §4
"Stacking" (``--attract``), the bricks leave from the top course down, one course every
``course_interval`` seconds, each by a bounce and a slide out of the wall's plane; replayed
forward they bounce into place course by course, the bottom course first::

    workbench reverse scenes/brick_stack.py --duration 2 -o brick.h5   # the scene's settings
    workbench replay brick.h5

Why the bricks of a course do not touch: a mortar joint of ``joint`` between neighbours keeps
their end faces apart. Touching end faces would push on a brick from both sides (opposing
normals), so the free-to-bounce test of §4 would call even a top-course brick constrained and
drop its hints. Vertical faces touch exactly: the sizes and positions are binary fractions
(0.25, 0.125, 2⁻⁸ …), so a brick's bottom face lies exactly in the plane of the top face below
it and the contact detector reports four corner points per overlapping pair (a gap of one
rounding error, 1e-16 m, between box faces reports no contact at all).

Causality (§4 "Stacking"): a brick may start moving backward only when nothing rests on it, so a
course's hints act ``course_interval`` after the course above left — long enough for a brick
sliding out at ``slide_speed`` to clear the ``depth`` of the wall. Courses slide out to alternate
sides (±y), so a course does not run into the bricks of the course above that left before it.

Materials: restitution 0.5 on bricks and 1 on the ground (PyBullet multiplies: brick-brick 0.25,
brick-ground 0.5), friction 0.6 (brick-brick 0.36, brick-ground 0.6). Contact settings as in
``reverse_landing.yaml`` so that PyBullet's replay agrees with the stepper.
"""

from __future__ import annotations

from workbench.scene.parts import (
    EXACT_CONTACT_SETTINGS,
    arrival_hints,
    ground_box,
    scene_parameters,
)

__all__ = ["build", "hints", "brick_layout"]

#: Brick length, depth, height, m (a real brick is 0.215 × 0.1025 × 0.065 m): binary fractions,
#: so that stacked faces coincide exactly in floating point.
LENGTH = 0.25
DEPTH = 0.125
HEIGHT = 0.0625
#: Mortar joint between neighbouring bricks of a course, m (2⁻⁸: exact in binary).
JOINT = 0.00390625


def brick_layout(courses: int = 4, bricks: int = 3) -> list[tuple[str, int, float, float]]:
    """Bricks of the wall, bottom course first: ``(name, course, x_centre, length)``.

    Even courses hold ``bricks`` full bricks; odd courses ``bricks − 1`` full bricks between two
    half bricks, offset by half a brick (running bond). Lengths include the joint (the brick
    itself is ``length − JOINT`` long).
    """
    courses, bricks = int(courses), int(bricks)
    if courses < 1 or bricks < 2:
        raise ValueError("need courses >= 1 and bricks >= 2")
    x0 = -0.5 * bricks * LENGTH  # the wall spans [x0, −x0]
    out = []
    for c in range(courses):
        if c % 2 == 0:
            cells = [(x0 + (i + 0.5) * LENGTH, LENGTH) for i in range(bricks)]
        else:
            half = 0.5 * LENGTH
            cells = [(x0 + 0.5 * half, half)]
            cells += [(x0 + half + (i + 0.5) * LENGTH, LENGTH) for i in range(bricks - 1)]
            cells += [(-x0 - 0.5 * half, half)]
        for i, (x, length) in enumerate(cells):
            out.append((f"brick{c}_{i}", c, x, length))
    return out


def build(
    courses: int = 4,
    bricks: int = 3,
    mass: float = 2.0,
    restitution: float = 0.5,
    friction: float = 0.6,
    dt: float = 1e-3,
    duration: float = 2.0,
    course_interval: float = 0.3,
    brick_delay: float = 0.03,
    slide_speed: float = 1.0,
    bounce: float = 0.15,
):
    """The final state: a running-bond wall at rest on the ground.

    Parameters
    ----------
    courses : int
        Courses (rows) of bricks.
    bricks : int
        Full bricks in an even course.
    mass : float
        Mass of a full brick, kg (a half brick has half).
    restitution, friction : float
        Brick materials (the ground: restitution 1, friction 1).
    dt, duration : float
        Step and default run length, s.
    course_interval, brick_delay, slide_speed, bounce : float
        Used by :func:`hints` (accepted here so that ``--set`` reaches both).
    """
    material = {"friction": float(friction), "restitution": float(restitution)}
    bodies = [ground_box(5.0)]
    for name, course, x, length in brick_layout(courses, bricks):
        bodies.append(
            {
                "name": name,
                "shape": {"type": "box", "size": [length - JOINT, DEPTH, HEIGHT]},
                "mass": float(mass) * length / LENGTH,
                "position": [x, 0.0, (course + 0.5) * HEIGHT],
                "material": material,
            }
        )
    return {
        "description": f"Brick stack: a {int(courses)}-course running-bond wall at rest "
        "(final state for workbench reverse --attract)",
        "settings": {
            "dt": float(dt),
            "duration": float(duration),
            **EXACT_CONTACT_SETTINGS,
        },
        "bodies": bodies,
        # what `workbench reverse` uses unless told otherwise (docs/scenes.md#reverse): the
        # hints, the attraction that holds the lower courses, and up to 8 PyBullet runs refining
        # the earliest state until every brick lands within 1 cm of its place
        "reverse": {"hints": "script", "attract": True, "confirm_refine": 8},
    }


def hints(**parameters):
    """Hints for the reverse run: brick ``i`` of course ``c`` (0 at the bottom) bounces and
    slides out at reverse time ``(courses − 1 − c) · course_interval + i · brick_delay`` — the
    top course first, its bricks one after the other — in forward time arriving along ``+y``
    (even courses) or ``−y`` (odd courses) at ``slide_speed`` m/s and landing at ``bounce`` m/s
    (kept below the restitution cut-off ε = 0.2 m/s).

    ``parameters`` are the scene's (:func:`build`'s defaults fill in the rest). Returns the hints
    file's content (a mapping with the key ``hints``).
    """
    p = scene_parameters(build, parameters)
    courses, interval, delay = int(p["courses"]), p["course_interval"], p["brick_delay"]
    bounce, speed = float(p["bounce"]), float(p["slide_speed"])
    out = []
    index = {}
    for name, course, _x, _length in brick_layout(courses, p["bricks"]):
        i = index[course] = index.get(course, -1) + 1
        at = round((courses - 1 - course) * interval + i * delay, 9)
        direction = [0.0, 1.0, 0.0] if course % 2 == 0 else [0.0, -1.0, 0.0]
        out += arrival_hints(name, at, bounce, "slide", direction, speed)
    return {"hints": out}
