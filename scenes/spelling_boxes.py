"""Spelling boxes (Twigg & James 2008 §5, Fig. 11): boxes at rest on the ground spelling "t→−t".

The scene is the FINAL state of the motion: one box per lit cell of the text
(``workbench.scene.font``, 5 × 7 cells a glyph), lying flat on the ground with no bins to catch it,
a small gap from its neighbours. Stepped backward (``workbench reverse --hints script``) with the
hints of :func:`hints` — each box leaves its place by a small bounce and a slide at its own random
time — the boxes hop and slide out of the letters, knocking into neighbours that have not left yet;
replayed forward (``workbench replay``) they bounce and slide in from all sides and settle into
"t→−t". The default text has 38 lit cells, so 38 boxes (the paper does not give its count).

Recommended command (5 s on one core; numbers for it in docs/reverse.md, figure by
``python docs/demo_figures.py``)::

    workbench reverse scenes/spelling_boxes.py --hints script --duration 2.5 \\
        --restitution-blend 1 --angular-damping 8 --linear-damping 0.5 -o spelling_boxes.h5
    workbench replay spelling_boxes.h5            # or --frames DIR for PNGs, headless

A quick look: ``--set text=t --duration 1``. The hints' parameters (``hint_seed``, ``leave_by``,
``bounce``, ``slide_speed``, ``spread_deg``) are scene parameters too, so ``--set`` changes them.

Why these settings. Stepped backward, a box bounces higher at every landing by 1/α (Eq. 7 of
[1]_, the elastic branch ``v⁻ = −v⁺/α``), gains sliding speed μg per second of ground contact, and
picks up spin whenever it lands on an edge or a corner (§4 "High angular velocities"); the paper
"appl[ies] a reverse damping force to tame velocity growth". Without any control (restitution
0.6, friction 0.4, text "t") the earliest state of a 1 s run has boxes at 12 m/s spinning at
300 rad/s. Here: restitution 0.6 (box) × 1 (ground), so bounces grow by 1/0.6 backward and the
boxes visibly hop; friction 0.2, so a slide gains 2 m/s per second backward, not 4; the
restitution blend over 1 s (§4 "Rapid velocity growth") keeps boxes that rattle against a
neighbour, or hop repeatedly, from gaining speed at every impact; backward angular damping 8/s and
linear damping 0.5/s (the paper's damping force). Then the earliest state of the 2.5 s run has
boxes at up to 2.9 m/s spinning at up to 5 rad/s (peak 41 rad/s mid-run), 60 J in all. Friction
0.3 or 0.4 instead gives 3–7 m/s and 26–140 rad/s at the earliest state; the outcome is chaotic in
the settings, so change one and look at the numbers again. Boxes do not touch in the final state
(``gap``): each resting box is its own contact island with the ground, so the LCPs stay small
(24 rows on a box's four corners; a moving box that hits a resting one sees it as static).
Contact settings as in ``reverse_landing.yaml`` (``contact_erp`` 0,
``contact_processing_threshold`` 0, a box for the ground) so a PyBullet replay of the earliest
state follows the stepper's contact laws.

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, SIGGRAPH 2008.
"""

from __future__ import annotations

import numpy as np

from workbench.scene.font import centred_cells
from workbench.scene.parts import (
    arrival_hints,
    cube,
    ground_box,
    material,
    reverse_scene,
    scene_parameters,
)

__all__ = ["TEXT", "build", "hints"]

#: Default text, the paper's Fig. 11 ("t → −t" with U+2212 MINUS SIGN): 38 lit cells.
TEXT = "t→−t"

#: Extra ground beyond the text on each side, m: room for the boxes' earliest positions.
GROUND_MARGIN = 10.0


def _centres(text: str, size: float, gap: float) -> list[tuple[float, float]]:
    """(x, y) of each lit cell's box, m, in reading order; the text centred on the origin,
    font row 0 at +y (the text reads along +x seen from above)."""
    return centred_cells(text, size + gap)[1]


def build(
    text: str = TEXT,
    size: float = 0.1,
    gap: float = 0.01,
    box_mass: float = 0.5,
    restitution: float = 0.6,
    friction: float = 0.2,
    dt: float = 1.0 / 240.0,
    duration: float = 2.5,
    hint_seed: int = 11,
    leave_by: float = 1.2,
    bounce: float = 0.15,
    slide_speed: float = 0.4,
    spread_deg: float = 70.0,
):
    """The final state: one box per lit cell, at rest flat on the ground.

    Parameters
    ----------
    text : str
        Text to spell (``workbench.scene.font``; ``\\n`` for a new line).
    size : float
        Edge of the (cubic) boxes, m.
    gap : float
        Gap between neighbouring boxes, m: small, so a box leaving (forward: arriving) can hit a
        neighbour, but non-zero, so resting boxes are separate contact islands.
    box_mass : float
        kg.
    restitution, friction : float
        Box materials (the ground: :data:`workbench.scene.parts.NEUTRAL_MATERIAL`).
    dt, duration : float
        Step and default run length, s.
    hint_seed, leave_by, bounce, slide_speed, spread_deg
        Not used here: parameters of :func:`hints`, declared so that ``--set`` can change them.
    """
    centres = _centres(text, size, gap)
    xs = [x for x, _ in centres]
    ys = [y for _, y in centres]
    half_span = 0.5 * max(max(xs) - min(xs), max(ys) - min(ys)) + GROUND_MARGIN
    bodies = [ground_box(half_span)]
    box_material = material(friction, restitution)
    for k, (x, y) in enumerate(centres):
        bodies.append(cube(f"box{k}", size, box_mass, [float(x), float(y), size / 2], box_material))
    description = (
        f"Spelling boxes: {len(centres)} boxes at rest spelling {text!r} "
        "(final state for workbench reverse, Twigg & James 2008 Fig. 11)"
    )
    # the reverse settings it carries: its hints, elastic micro-collisions, the bounce at the
    # restitution cut-off, boxes pushed apart where a backward step overlaps them, and capped
    # bounces with frictionless slides (docs/reverse.md, "Spelling boxes")
    reverse = {
        "hints": "script",
        "restitution_blend": 1.0,
        "contacts": ["bounce-apart", "separate", "cap-bounces"],
    }
    return reverse_scene(description, bodies, dt, duration, reverse=reverse)


def hints(**parameters):
    """How each box arrived: box k lands with a bounce and slides in at reverse time ``at_k`` ~
    U(0, leave_by) s (seeded), so the boxes settle one after another.

    Forward time: box k comes in from outside the text — its sliding direction is the direction
    from the text's centre to the box, turned by an angle ~ U(−spread, spread), reversed (so it
    slides *towards* its place) — lands at ``bounce`` m/s (below the restitution cut-off of
    0.2 m/s, so this is the last, inelastic landing; the earlier bounces follow from Eq. 7) and
    skids in at ``slide_speed`` m/s. The spread lets boxes cross the paths of their neighbours.

    Parameters
    ----------
    **parameters
        The scene's parameters (:func:`build`'s defaults fill in the rest); these are used:
    text, size, gap : str, float, float
        As in :func:`build` (the box names and positions).
    hint_seed : int
        Seed of the times and directions.
    leave_by : float
        Latest reverse time of a box's last landing, s.
    bounce, slide_speed : float
        Landing and sliding speeds of the hints, m/s.
    spread_deg : float
        Largest turn of the arrival direction away from the radial one, degrees.

    Returns
    -------
    dict
        The hints file's content: ``{"hints": [...]}``, a bounce and a slide hint per box.
    """
    p = scene_parameters(build, parameters)
    centres = np.array(_centres(p["text"], p["size"], p["gap"]))
    n = len(centres)
    rng = np.random.default_rng(p["hint_seed"])
    at = rng.uniform(0.0, p["leave_by"], n)
    turn = np.radians(rng.uniform(-p["spread_deg"], p["spread_deg"], n))
    radial = np.arctan2(centres[:, 1], centres[:, 0])  # 0 for a box at the centre
    phi = radial + turn + np.pi  # forward time: moving inwards
    out = []
    for k in range(n):
        d = [float(np.cos(phi[k])), float(np.sin(phi[k])), 0.0]
        out += arrival_hints(f"box{k}", float(at[k]), p["bounce"], "slide", d, p["slide_speed"])
    return {"hints": out}
