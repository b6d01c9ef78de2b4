"""Poured pile (issue 38): spheres poured into a walled bin by PyBullet, settled and touching.

The scene is the FINAL state of the motion, as PyBullet leaves it: ``n`` spheres dropped from a
jittered grid above a square bin whose floor slopes by ``tilt_deg`` (5°), run forward for
``settle`` s at 1/240 s. They roll down the slope and come to rest packed against the low wall and
each other — touching, with no gaps put in by hand (unlike ``spelling_balls``, whose balls rest
2 mm apart so that each is its own island): with the defaults, 100 spheres and about 190
sphere–sphere contacts, carrying the downhill weight from sphere to sphere (a statically
indeterminate force network; ``--set layers=2 --set tilt_deg=0`` pours a two-layer heap
instead). Stepped backward with the hints of :func:`hints`, the bin empties: each sphere, the
highest first, leaves straight up at ``bounce`` m/s (forward time: it was dropped from above and
landed in the bin without a bounce, on a floor of restitution 0), ``leave_interval`` after the one
before::

    workbench reverse scenes/poured_pile.py -o pile.h5           # the scene's own settings
    workbench reverse scenes/poured_pile.py --set n=30 -o small.h5 && workbench replay small.h5

Building the scene runs PyBullet (``n = 100``: 3 s of settling, about 3 s wall); the settled
state is kept per process (:func:`settled_bodies`), so :func:`hints` reads the same poses.

Materials: restitution 0 on the floor, so a landing is plastic and a hint may give any leaving
speed (a bounce goal on a contact of positive restitution is held below the cut-off ε, Twigg &
James 2008 §3.1); restitution 1 on the spheres, so sphere–sphere and sphere–wall contacts are
elastic — their goals stay below ε, so a leaving sphere does not push its packed neighbours, and
a backward collision between spheres does not divide a speed by a restitution below 1 (§4 "Rapid
velocity growth"); friction 0.1 (0.01 between spheres), rolling friction 0.001 m. A sphere
leaving at 5 m/s stays in the air for the rest of the 1 s run, so no backward landing (which
restitution 0 cannot undo) occurs.

Measured (issue 38; idle 2-core machine, load average 0.5): 1 s back at 1/120 s in 7.7 s wall,
the audit passed (peak speed 5.2 m/s, spin 40 rad/s, overlaps ≤ 0.51 mm), 98 of 100 spheres
out of the bin at the earliest state; its largest island LCP has 440 rows. Seeds 1–2 pass too;
seed 3's run stops 0.35 s back, on an island LCP of 253 rows that Lemke, its ladder and the
frictionless retry leave on a ray (docs/studies/large-islands.md).

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, SIGGRAPH 2008 (ACM TOG 27(3) 25).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from workbench.scene.parts import (
    NEUTRAL_MATERIAL,
    arrival_hints,
    bin_walls,
    ground_box,
    scene_parameters,
)

__all__ = ["build", "hints", "settled_bodies"]

#: Grid pitch of the drop, in radii: 0.4 r gaps between neighbours, so no two spheres start in
#: contact (as ``benchmarks/reverse.py``'s ``bin_scene``).
_PITCH = 2.4
#: Largest horizontal offset of a sphere from its grid point, in radii: breaks the grid's
#: symmetry so the pile settles as a pile, not as stacked columns.
_JITTER = 0.1
#: Half thickness of the bin's walls, m.
_WALL = 0.05
#: Largest floor slope the drop height allows for (tan of the tilt): the grid starts this much
#: times the bin's half width higher, so no sphere starts inside a tilted floor.
_MAX_TILT = 0.2
#: PyBullet's step for the pour, s (its default; the spheres settle in ~2 s of it).
_SETTLE_DT = 1.0 / 240.0


#: The reverse settings the scene carries (``workbench reverse`` uses them unless told otherwise;
#: docs/reverse.md, "Plausibility controls").
REVERSE = {
    "hints": "script",
    "restitution_blend": 0.2,
    "contacts": ["bounce-apart", "separate", "cap-bounces"],
}


def _drop_layout(n: int, side: int, radius: float, seed: int) -> np.ndarray:
    """Start positions (n, 3) of the pour: a jittered ``side × side`` grid, layer after layer."""
    rng = np.random.default_rng(seed)
    pitch = _PITCH * radius
    half = 0.5 * side * pitch
    out = np.empty((n, 3))
    for i in range(n):
        layer, cell = divmod(i, side * side)
        row, col = divmod(cell, side)
        out[i, 0] = -half + (col + 0.5) * pitch + rng.uniform(-1, 1) * _JITTER * radius
        out[i, 1] = -half + (row + 0.5) * pitch + rng.uniform(-1, 1) * _JITTER * radius
        out[i, 2] = 1.2 * radius + layer * pitch + half * _MAX_TILT
    return out


def _bin(
    side: int,
    radius: float,
    wall_height: float,
    restitution: float,
    wall_restitution: float,
    tilt_deg: float,
) -> list[dict]:
    """Ground, a floor tilted by ``tilt_deg`` about y (its top face through the origin, falling
    towards +x) and four walls: a bin ``side`` grid pitches wide inside, of restitution
    ``restitution`` (friction and rolling friction PyBullet's neutral 1 and 0)."""
    half = 0.5 * side * _PITCH * radius
    surface = dict(NEUTRAL_MATERIAL, restitution=float(restitution))
    a = math.radians(float(tilt_deg))
    bodies = [dict(ground_box(half + 1.5), material=dict(surface))]
    bodies[0]["position"] = [0.0, 0.0, -0.5 - (half + 2 * _WALL) * math.sin(a) - 0.05]
    bodies.append(
        {
            "name": "floor",
            "shape": {"type": "box", "half_extents": [half + 2 * _WALL, half + 2 * _WALL, 0.05]},
            # top face through the origin: centre 0.05 m below it along the tilted normal
            "position": [0.05 * math.sin(a), 0.0, -0.05 * math.cos(a)],
            "quaternion": [0.0, math.sin(0.5 * a), 0.0, math.cos(0.5 * a)],
            "fixed": True,
            "material": dict(surface),
        }
    )
    # from 0.2 m below the floor's top (its lowest edge, tilted) up to the walls' height
    walls = dict(surface, restitution=float(wall_restitution))
    bodies += bin_walls(half, _WALL, -0.2, wall_height, walls)
    return bodies


@lru_cache(maxsize=4)
def settled_bodies(
    n: int, side: int, radius: float, mass: float, friction: float, rolling_friction: float,
    restitution: float, ground_restitution: float, wall_restitution: float, wall_height: float,
    tilt_deg: float, settle: float, seed: int,
) -> tuple:  # fmt: skip
    """The bin and the spheres where PyBullet leaves them after pouring and ``settle`` s.

    Returns a tuple of body mappings (scene format), the spheres ``s0 … s{n−1}`` at their
    settled poses with zero velocity. Cached per process: :func:`build` and :func:`hints` of
    the same parameters read one pour.
    """
    from workbench.scene.model import scene_from_dict
    from workbench.sim.forward import run_scene

    material = {
        "friction": float(friction),
        "restitution": float(restitution),
        "rolling_friction": float(rolling_friction),
    }
    bodies = _bin(side, radius, wall_height, ground_restitution, wall_restitution, tilt_deg)
    spheres = []
    for i, p in enumerate(_drop_layout(n, side, radius, seed)):
        spheres.append(
            {
                "name": f"s{i}",
                "shape": {"type": "sphere", "radius": float(radius)},
                "mass": float(mass),
                "position": [float(x) for x in p],
                "material": dict(material),
            }
        )
    steps = max(1, round(settle / _SETTLE_DT))
    pour = {
        "description": "poured pile: the pour",
        "settings": {"dt": _SETTLE_DT, "duration": steps * _SETTLE_DT, "record_every": steps},
        "bodies": bodies + spheres,
    }
    traj = run_scene(scene_from_dict(pour, source="<poured_pile>"))
    if traj.status != "ok":
        raise RuntimeError(f"poured_pile: the pour did not run: {traj.message}")
    first = len(bodies)
    inner = 0.5 * side * _PITCH * radius
    end = traj.position[-1, first:]
    floor = -inner * math.sin(math.radians(tilt_deg))  # the tilted floor's lowest point
    out = np.flatnonzero(np.any(np.abs(end[:, :2]) > inner, axis=1) | (end[:, 2] < floor))
    if out.size:  # a sphere that bounced out of the bin is no part of the pile
        raise RuntimeError(
            f"poured_pile: {out.size} sphere(s) left the bin during the pour (first s{out[0]}); "
            "raise wall_height"
        )
    for k, sphere in enumerate(spheres):
        sphere["position"] = [float(x) for x in traj.position[-1, first + k]]
        sphere["quaternion"] = [float(x) for x in traj.orientation[-1, first + k]]
    return tuple(bodies + spheres)


def _side(n: int, layers: int) -> int:
    """Grid side of the pour: about ``layers`` layers of ``side²`` spheres."""
    return max(2, math.ceil(math.sqrt(n / layers)))


def build(
    n: int = 100,
    layers: int = 1,
    radius: float = 0.05,
    mass: float = 0.1,
    friction: float = 0.1,
    rolling_friction: float = 0.001,
    restitution: float = 1.0,
    ground_restitution: float = 0.0,
    wall_restitution: float = 1.0,
    wall_height: float = 0.15,
    tilt_deg: float = 5.0,
    settle: float = 3.0,
    seed: int = 0,
    dt: float = 1.0 / 120.0,
    duration: float = 1.0,
    leave_interval: float = 0.005,
    bounce: float = 5.0,
    slide_speed: float = 0.0,
    motion: str = "roll",
):
    """The final state: ``n`` spheres poured into a bin and settled by PyBullet.

    Parameters
    ----------
    n : int
        Spheres poured.
    layers : int
        About this many layers of the drop grid (the bin is ``⌈√(n / layers)⌉`` grid pitches
        of 2.4 radii wide inside).
    radius, mass : float
        Sphere radius (m) and mass (kg).
    friction, rolling_friction, restitution : float
        Sphere materials (the ground, floor and walls have friction 1 and rolling friction 0,
        PyBullet's neutral values, so these are the effective values against them;
        sphere–sphere friction is ``friction²``, restitution ``restitution²``).
    ground_restitution : float
        Restitution of the ground, floor and walls (PyBullet multiplies it with the sphere's).
    wall_height : float
        Height of the bin's walls above the floor's centre, m.
    tilt_deg : float
        Slope of the bin's floor, degrees (falling towards +x).
    settle : float
        PyBullet time of the pour, s.
    seed : int
        Seed of the drop grid's jitter.
    dt, duration : float
        Step and default length of the reverse run, s.
    leave_interval, bounce, slide_speed : float
        Used by :func:`hints` (s, m/s, m/s; accepted here so that ``--set`` reaches both).
    motion : str
        ``"roll"`` or ``"slide"``: how a sphere with ``slide_speed > 0`` moves off.
    """
    n, layers = int(n), int(layers)
    if n < 1 or layers < 1:
        raise ValueError("need n >= 1 and layers >= 1")
    side = _side(n, layers)
    bodies = settled_bodies(
        n, side, float(radius), float(mass), float(friction), float(rolling_friction),
        float(restitution), float(ground_restitution), float(wall_restitution),
        float(wall_height), float(tilt_deg),
        float(settle), int(seed),
    )  # fmt: skip
    return {
        "description": f"Poured pile: {n} spheres poured into a bin and settled by PyBullet, "
        "touching (final state for workbench reverse; empties backward)",
        "settings": {"dt": float(dt), "duration": float(duration), "record_every": 1},
        "bodies": [dict(b) for b in bodies],
        # what `workbench reverse` uses unless told otherwise (docs/scenes.md#reverse)
        "reverse": dict(REVERSE),
    }


def hints(**parameters):
    """Hints for the reverse run: the spheres leave by height, the highest first, one every
    ``leave_interval`` s of reverse time; each leaves its contacts at ``bounce`` m/s and, when
    ``slide_speed > 0``, moves off (``motion``) at ``slide_speed`` m/s away from the bin's axis
    (forward time: it came in towards the axis and landed in the bin).

    ``parameters`` are the scene's (:func:`build`'s defaults fill in the rest). Returns the hints
    file's content (a mapping with the key ``hints``).
    """
    p = scene_parameters(build, parameters)
    bodies = build(**{k: p[k] for k in p if k in _BUILD_KEYS})["bodies"]
    spheres = [b for b in bodies if b["shape"]["type"] == "sphere"]
    order = sorted(spheres, key=lambda b: -b["position"][2])
    out = []
    for rank, b in enumerate(order):
        x, y = b["position"][0], b["position"][1]
        r = math.hypot(x, y)
        # towards the bin's centre in forward time; a sphere on the axis comes in along +x
        d = [-x / r, -y / r, 0.0] if r > 1e-9 else [1.0, 0.0, 0.0]
        at = round(rank * float(p["leave_interval"]), 9)
        if float(p["slide_speed"]) > 0.0:
            out += arrival_hints(
                b["name"], at, float(p["bounce"]), str(p["motion"]), d, float(p["slide_speed"])
            )
        else:  # straight up (forward: dropped from above)
            out.append({"body": b["name"], "bounce": float(p["bounce"]), "at": at})
    return {"hints": out}


_BUILD_KEYS = tuple(name for name in build.__code__.co_varnames[: build.__code__.co_argcount])
