"""Collision scenario design (Twigg & James 2008 §5, Fig. 12): boxes spelling "CRASH" in mid-air
just after they collided — an INTERMEDIATE frame, run backward and forward.

The scene is the frame itself. Every lit cell of the text (``workbench.scene.font``, 5 × 7 cells a
glyph; font rows mapped to height, so the text stands in the vertical x–z plane and reads from
−y) holds a *pair* of boxes, one in front of the plane (y < 0) and one behind it (y > 0), a small
gap apart: they have just hit each other face to face and are flying apart along ±y at a relative
speed ``separation`` ~ U(separation_min, separation_max) (seeded, per pair), while the whole word
rises at ``rise`` m/s. No two boxes touch in the frame.

Stepped backward (``workbench reverse``, no hints needed), a state without contacts moves
ballistically, so the collisions have to be designed into the frame's velocities: each pair
closes its gap in ``gap / separation`` s (≤ 0.04 s) and collides, and the elastic branch of
Eq. 7 of [1]_ turns the separation speed u into an approach speed u/α (α = restitution²,
PyBullet's product rule); before that the two boxes fly apart backward along y at ``u / (2α)``
each and fall (gravity backward). Read forward, two volleys of boxes are launched from near the
ground in front of and behind the plane, fly in on arcs, collide in mid-air and bounce up
spelling CRASH; the appended PyBullet run (``--then-forward``) lets the word rise a little, come
apart along ±y and fall to the ground. The word sits high enough (``bottom``) that the backward
arcs of the recommended 0.6 s stay above the ground (lowest box centre 0.15 m): the backward part
has no ground contact, only the pair collisions.

Recommended command (8 s on one core)::

    workbench reverse scenes/crash.py --duration 0.6 --then-forward 2 -o crash.h5
    workbench replay crash.h5                  # or --frames DIR for PNGs, headless

(``--hints`` is not needed: the frame's velocities say everything.) The file's attribute
``forward_from`` is the time of the frame (0.6 s); before it the states come from the reverse
stepper, after it from PyBullet.

Design notes. The in-plane velocity of every box is the same (``swell`` 0), so boxes of
different pairs, flying in at different speeds along y, never cross each other's paths. A word
that swells outward at the frame (``swell`` > 0) converges backward: boxes of neighbouring pairs
then meet edge-on far from the plane, and each such backward impact multiplies the relative speed
by 1/α ≈ 11 — the default text reached 1200 m/s with ``swell`` 0.4. Materials: restitution 0.3
per box, so α = 0.09 between two boxes (a soft, "crashing" impact that turns a fast approach,
1.4–2.7 m/s per box, into a slow separation, 0.25–0.5 m/s per pair, and keeps the word legible for
a few tenths of a second) and 0.3 against the ground (restitution 1); friction 0.5. The contact
settings are PyBullet's defaults: the stepper does not use them, and the PyBullet part lands boxes
from 2.9 m at 7 m/s, which with ``contact_erp`` 0 and ``contact_processing_threshold`` 0 (the
``reverse_landing.yaml`` settings) leaves them 1.7 cm deep in the ground for good (measured).

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, SIGGRAPH 2008.
"""

from __future__ import annotations

import numpy as np

from workbench.scene.font import text_grid
from workbench.scene.parts import cube, ground_box, material, reverse_scene

__all__ = ["TEXT", "build", "frame_velocities"]

#: Default text (Fig. 12): 81 lit cells, so 162 boxes.
TEXT = "CRASH"

#: Extra ground beyond the text on each side, m: room for where the boxes fly from and fall to.
GROUND_MARGIN = 10.0


def _cells(text: str, size: float, gap: float, bottom: float) -> np.ndarray:
    """(x, z) of each lit cell's centre, m, shape (n, 2): the text centred on x = 0, its lowest
    row's boxes with their centres at ``bottom``, font row 0 at the top."""
    cells, rows, cols = text_grid(text)
    pitch = size + gap
    x0 = -0.5 * (cols - 1) * pitch
    return np.array([(x0 + c * pitch, bottom + (rows - 1 - r) * pitch) for r, c in cells])


def frame_velocities(
    centres: np.ndarray, rise: float, swell: float, separations: tuple[float, float], seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Velocities of the box pairs in the frame (parameters as in :func:`build`).

    Parameters
    ----------
    centres : ndarray, shape (n, 2)
        (x, z) of each pair (lit cell), m.
    rise, swell : float
        m/s and 1/s.
    separations : (float, float)
        Range of the separation speeds, m/s.
    seed : int

    Returns
    -------
    pair_velocity : ndarray, shape (n, 3)
        Velocity of each pair's centre of mass, m/s: ``rise`` up plus the swell
        ``swell × (x − x_c, 0, z − z_c)`` about the text's centre.
    separation : ndarray, shape (n,)
        Speed at which the two boxes of a pair fly apart along ±y, m/s.
    """
    middle = 0.5 * (centres.min(axis=0) + centres.max(axis=0))
    rel = centres - middle
    pair_velocity = np.zeros((len(centres), 3))
    pair_velocity[:, 0] = swell * rel[:, 0]
    pair_velocity[:, 2] = rise + swell * rel[:, 1]
    rng = np.random.default_rng(seed)
    separation = rng.uniform(*separations, len(centres))
    return pair_velocity, separation


def build(
    text: str = TEXT,
    size: float = 0.1,
    gap: float = 0.01,
    bottom: float = 2.2,
    rise: float = 0.5,
    swell: float = 0.0,
    separation_min: float = 0.25,
    separation_max: float = 0.5,
    seed: int = 12,
    box_mass: float = 0.5,
    restitution: float = 0.3,
    friction: float = 0.5,
    dt: float = 1.0 / 240.0,
    duration: float = 2.0,
):
    """The intermediate frame: pairs of boxes flying apart along ±y in the shape of the text.

    Parameters
    ----------
    text : str
        Text to spell (``workbench.scene.font``).
    size : float
        Edge of the (cubic) boxes, m.
    gap : float
        Gap between boxes, m: between the letters' cells and between the two boxes of a pair
        (so nothing touches in the frame; a pair collides ``gap / separation`` s before it).
    bottom : float
        Height of the lowest row's box centres, m.
    rise, swell : float
        Upward speed of the word, m/s, and its rate of swelling outward, 1/s (keep 0: see the
        module docstring).
    separation_min, separation_max : float
        Range of the pairs' separation speeds, m/s.
    seed : int
        Seed of the separation speeds.
    box_mass : float
        kg.
    restitution, friction : float
        Box materials (the ground: :data:`workbench.scene.parts.NEUTRAL_MATERIAL`).
    dt, duration : float
        Step, s, and the default length of a forward run from the frame, s.
    """
    centres = _cells(text, size, gap, bottom)
    pair_velocity, separation = frame_velocities(
        centres, rise, swell, (separation_min, separation_max), seed
    )
    half_span = 0.5 * float(np.ptp(centres[:, 0])) + GROUND_MARGIN
    bodies = [ground_box(half_span)]
    box_material = material(friction, restitution)
    offset = 0.5 * (size + gap)  # each box's distance from the plane y = 0
    for k, ((x, z), v, u) in enumerate(zip(centres, pair_velocity, separation, strict=True)):
        for side, sign in (("front", -1.0), ("back", 1.0)):
            vel = v + sign * np.array([0.0, 0.5 * u, 0.0])
            position = [float(x), sign * offset, float(z)]
            velocity = [float(c) for c in vel]
            bodies.append(cube(f"{side}{k}", size, box_mass, position, box_material, velocity))
    description = (
        f"CRASH: {2 * len(centres)} boxes spelling {text!r} in mid-air just after colliding "
        "(intermediate frame: workbench reverse --then-forward, Twigg & James 2008 Fig. 12)"
    )
    # PyBullet's default contact settings: see the module docstring
    return reverse_scene(description, bodies, dt, duration, exact_contacts=False)
