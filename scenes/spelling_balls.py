"""Spelling balls (Twigg & James 2008 §5, Fig. 1): balls at rest in square bins spelling a text.

The scene is the FINAL state of the motion: every lit cell of the text (``workbench.scene.font``, 5
× 7 cells a glyph) is a square bin with low walls, holding ``per_side × per_side`` balls at rest on
the ground, a small gap apart. Stepped backward (``workbench reverse``) with the hints of
:func:`hints` — each ball leaves its bin by a bounce and a slide at its own random time — the balls
bounce out of the bins and scatter; replayed forward (``workbench replay``) they bounce, collide and
roll into place. The default text "LOREM IPSUM" has 155 lit cells × 25 balls = 3875 balls (the
paper: 3037 balls spelling "Lorem ipsum dolor sit amet...").

    workbench reverse scenes/spelling_balls.py -o spelling.h5          # the scene's own settings
    workbench reverse scenes/spelling_balls.py --set text=HI --set per_side=3 --duration 2 \\
        -o hi.h5 && workbench replay hi.h5

(``benchmarks/spelling.py`` runs the full scene and reports its cost.) The plausibility controls
matter here: backward, every elastic collision divides a speed by the restitution and every
slipping contact slips faster (Twigg & James §4), so without them a 3 s run ends with balls at
tens of metres per second. The scene carries the settings that keep that in check
(:data:`REVERSE`, used by ``workbench reverse`` unless its command line says otherwise), and its
default materials are :data:`ROLLING`: the balls roll without slipping on the ground
(``slip_damping`` inf, ``reverse/step/rolling.py``), collide with each other elastically and
without friction, and touch frictionless walls, while each ball–ground contact keeps its friction
0.1 and restitution 0.9 and a rolling friction of 0.001 m; slow separations bounce at the
restitution cut-off, and the overlap a backward step brings is pushed out (``separate``). The
step is 1/240 s (PyBullet's own forward motion of these balls overlaps by 4–12 mm at 1/120 s,
about 1 mm at 1/240 s). With these, the "LO" run passes the physical audit (overlap 0.25 mm);
PyBullet played from its earliest state puts about 43 % of the balls in their own bin
(docs/studies/keep-apart.md says what bounds it).

Why the balls do not touch: a gap of ``gap`` between neighbours keeps each resting ball its own
contact island (ball, ground), so a backward step solves many 1-ball LCPs rather than one LCP per
bin; balls touch once they move. Materials: restitution 0.9 (ball) × 1 (ground, walls) — close
to one, which limits the backward energy growth (§4 "Rapid velocity growth") — friction 0.1
(a slipping contact gains (1 + 5/2) μ g of slip per second backward: low friction keeps that
small) and rolling friction 0.001 (so a resting ball can start rolling backward, §4 "Rolling").
Contact settings as in ``reverse_landing.yaml`` so that PyBullet's replay agrees with the
stepper.
"""

from __future__ import annotations

import numpy as np

from workbench.scene.font import centred_cells, text_pixels
from workbench.scene.parts import (
    NEUTRAL_MATERIAL,
    arrival_hints,
    ground_box,
    material,
    reverse_scene,
    scene_parameters,
)

#: Default text: 155 lit cells in the 5 × 7 font.
TEXT = "LOREM IPSUM"

#: The materials of the plausible run, the defaults of :func:`build` (module docstring;
#: docs/reverse.md "Spelling balls"): the ball–ground contact with friction 0.1 and restitution
#: 0.9, ball–ball contacts frictionless (1e-4) and elastic (1), walls frictionless, rolling
#: friction 0.001 m; with the settings of :data:`REVERSE`.
ROLLING = {
    "ground_friction": 10.0,
    "ground_restitution": 0.9,
    "wall_friction": 0.0,
    "rolling_friction": 0.001,
}


#: The reverse settings the scene carries (``workbench reverse`` uses them unless told
#: otherwise; docs/reverse.md, "Plausibility controls"): the script's hints, balls rolling
#: without slipping on the ground, the restitution blend and backward damping of Twigg & James
#: §4, the bounce at the restitution cut-off and the separation of overlapping balls
#: (docs/studies/keep-apart.md).
REVERSE = {
    "hints": "script",
    "slip_damping": float("inf"),
    "restitution_blend": 0.2,
    "angular_damping": 2.0,
    "linear_damping": 0.3,
    "contacts": ["bounce-apart", "separate"],
}


def _layout(text, per_side, radius, gap, wall):
    pitch = 2 * radius + gap  # ball spacing in a bin
    inner = per_side * pitch  # free width of a bin
    cell = inner + wall  # centre-to-centre spacing of bins (one wall between neighbours)
    # the text centred on the origin; row 0 at the top (+y)
    cells, xy = centred_cells(text, cell)
    centres = dict(zip(cells, xy, strict=True))
    return cells, centres, pitch, inner, cell


def build(
    text: str = TEXT,
    per_side: int = 5,
    radius: float = 0.02,
    gap: float = 0.002,
    wall_height: float = 0.03,
    wall_thickness: float = 0.004,
    ball_mass: float = 0.03,
    restitution: float = 0.9,
    friction: float = 0.1,
    rolling_friction: float = 0.001,
    dt: float = 1.0 / 240.0,
    duration: float = 3.0,
    ground_friction: float = 10.0,
    ground_restitution: float = 0.9,
    wall_friction: float = 0.0,
):
    """The final state: bins and resting balls.

    Parameters
    ----------
    text : str
        Text to spell (``workbench.scene.font``; ``\\n`` for a new line).
    per_side : int
        Balls along a bin side; a bin holds per_side² balls.
    radius, gap : float
        Ball radius and the gap between neighbouring balls, m.
    wall_height, wall_thickness : float
        Bin walls, m.
    ball_mass : float
        kg.
    restitution, friction, rolling_friction : float
        Ball materials (the ground and walls have restitution 1, friction 1, rolling friction 0;
        PyBullet multiplies restitution and friction, and combines rolling friction as
        ρ_A μ_B + ρ_B μ_A: docs/reverse.md).
    dt, duration : float
        Step and default run length, s.
    ground_friction, ground_restitution : float
        The ground's own friction and restitution (1 is PyBullet's neutral element; the
        defaults are :data:`ROLLING`'s). The
        balls' own friction, rolling friction and restitution are ``friction``,
        ``rolling_friction`` and ``restitution`` divided by them, so a ball on the ground keeps
        exactly ``friction``, ``rolling_friction`` and ``restitution`` while two balls meet with
        ``(friction / ground_friction)²`` and ``(restitution / ground_restitution)²`` (PyBullet
        multiplies; ρ_A μ_B + ρ_B μ_A for rolling friction): ``ground_friction=10`` makes
        ball–ball friction 1e-4 and rolling friction 4e-6 m, so collisions between balls
        exchange no spin; ``ground_restitution=0.9`` makes them elastic (restitution 1).
    wall_friction : float
        The walls' friction (default 0, :data:`ROLLING`): 0 makes ball–wall contacts
        frictionless, with no rolling friction either (ρ_ball · 0 + 0 · μ_ball).
    """
    per_side = int(per_side)
    for name, value in (
        ("ground_friction", ground_friction),
        ("ground_restitution", ground_restitution),
    ):
        if not value > 0:
            raise ValueError(f"{name}: expected a positive number, got {value!r}")
    if restitution / ground_restitution > 1.0:
        raise ValueError(
            f"ground_restitution: expected at least restitution ({restitution}) so that the "
            f"balls' own restitution is at most 1, got {ground_restitution}"
        )
    cells, centres, pitch, inner, cell = _layout(text, per_side, radius, gap, wall_thickness)
    bodies = []
    xs = [c[0] for c in centres.values()]
    ys = [c[1] for c in centres.values()]
    span = max(max(xs) - min(xs), max(ys) - min(ys)) + 20.0
    ground = ground_box(span / 2, (0.5 * (max(xs) + min(xs)), 0.5 * (max(ys) + min(ys))))
    ground["material"] = {
        **ground["material"],
        "friction": float(ground_friction),
        "restitution": float(ground_restitution),
    }
    bodies.append(ground)
    # walls: one per cell edge that borders a lit cell (shared edges once)
    lit = set(cells)
    edges = set()
    for r, c in cells:
        edges.update({("h", r, c), ("h", r + 1, c), ("v", r, c), ("v", r, c + 1)})
    half_len = 0.5 * cell + 0.5 * wall_thickness
    wall_material = {**NEUTRAL_MATERIAL, "friction": float(wall_friction)}
    x_first = min(xs) - min(c for _, c in cells) * cell
    y_first = max(ys) + min(r for r, _ in cells) * cell
    for kind, r, c in sorted(edges):
        if kind == "h":  # the edge above row r (between rows r-1 and r), along x
            x = x_first + c * cell
            y = y_first - (r - 0.5) * cell
            half = [half_len, wall_thickness / 2, wall_height / 2]
        else:  # the edge left of column c, along y
            x = x_first + (c - 0.5) * cell
            y = y_first - r * cell
            half = [wall_thickness / 2, half_len, wall_height / 2]
        bodies.append(
            {
                "name": f"wall_{kind}{r}_{c}",
                "shape": {"type": "box", "half_extents": half},
                "position": [x, y, wall_height / 2],
                "fixed": True,
                "material": wall_material,
            }
        )
    ball_material = material(
        friction / ground_friction,
        restitution / ground_restitution,
        rolling_friction / ground_friction,
    )
    offsets = (np.arange(per_side) - 0.5 * (per_side - 1)) * pitch
    n = 0
    for r, c in cells:
        cx, cy = centres[(r, c)]
        for ox in offsets:
            for oy in offsets:
                bodies.append(
                    {
                        "name": f"ball{n}",
                        "shape": {"type": "sphere", "radius": radius},
                        "mass": ball_mass,
                        "position": [float(cx + ox), float(cy + oy), radius],
                        "material": ball_material,
                    }
                )
                n += 1
    assert lit  # every bin has its balls
    description = (
        f"Spelling balls: {n} balls at rest in {len(cells)} bins spelling {text!r} "
        "(final state for workbench reverse)"
    )
    return reverse_scene(description, bodies, dt, duration, reverse=REVERSE)


def hints(
    seed: int = 1,
    leave_by: float = 1.5,
    bounce: float = 0.15,
    slide_speed: float = 0.3,
    **parameters,
):
    """Hints for the reverse run: ball k bounces and rolls off at reverse time ``at_k`` ~
    U(0, leave_by) s, in a uniformly random horizontal direction (forward time: it arrived from
    that direction rolling at ``slide_speed`` m/s without slipping — a slide would keep slipping
    faster backward — and landed at ``bounce`` m/s).

    ``parameters`` are the scene's (:func:`build`'s defaults fill in the rest: ``text`` and
    ``per_side`` name the balls). Returns the hints file's content (a mapping with the key
    ``hints``).
    """
    p = scene_parameters(build, parameters)
    n = len(text_pixels(p["text"])) * int(p["per_side"]) ** 2
    rng = np.random.default_rng(seed)
    at = rng.uniform(0.0, leave_by, n)
    phi = rng.uniform(0.0, 2 * np.pi, n)
    out = []
    for k in range(n):
        d = [float(np.cos(phi[k])), float(np.sin(phi[k])), 0.0]
        out += arrival_hints(f"ball{k}", float(at[k]), bounce, "roll", d, slide_speed)
    return {"hints": out}
