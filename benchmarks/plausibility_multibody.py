"""Plausibility of the many-body reverse demos: the physical audit of each run beside the forward
engine's confirmation of it (issue 35).

For each demo (as ``docs/reverse.md`` gives it) the script runs the reverse stepper
(:func:`reverse.runs.run.run_reverse`) and prints, per run:

* the audit's figures (``reverse/runs/audit.py``): the deepest overlap between moving bodies and
  into static ones over the run, the overlap at the earliest state, the forward mechanical energy
  gained against its limit (1 % of the peak kinetic energy), and the verdict;
* the moving bodies' peak speeds and spins over the run (median, 99th percentile, maximum);
* the confirmation (:func:`reverse.runs.confirm.refine_confirmation`, with the scene's
  ``confirm_refine``): PyBullet played from the stored (or refined) earliest state for the run's
  duration, and the share of moving bodies that end within 1 cm (and 5 cm) of their place;
* the wall time of the reverse run (one core, OpenBLAS single-threaded).

Demos, each with the reverse settings its scene carries (``reverse:``, as ``workbench reverse``
uses them) and the rest of the command docs/reverse.md gives: ``LO``
(``scenes/spelling_balls.py`` with ``text=LO``, 3 s back), ``stack`` (``box_stack5`` with the
``markov_block`` table, 2 s, attraction, seeds 0–4), ``bricks`` (``brick_stack``, its hints,
2 s, attraction) and ``crash`` (``scenes/crash.py``, 0.6 s).

Usage::

    python benchmarks/plausibility_multibody.py                 # every demo
    python benchmarks/plausibility_multibody.py --demo LO --contacts separate

``--contacts`` adds contact rules (``workbench reverse --contacts``) to every demo's own. For the
spelling demo, "own bin" is the share of balls PyBullet brings into their own bin. After each run,
a "forward" row gives the same figures for the forward reference: PyBullet's own run of the same
bodies, settings and arrangement from the run's earliest state (the confirmation's run, recorded
every step; ``--no-reference`` leaves it out).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from reverse.goals.hints import resolve_hints  # noqa: E402
from reverse.goals.markov import load_model  # noqa: E402
from reverse.runs.audit import largest_rise, mechanical_energy  # noqa: E402
from reverse.runs.confirm import moving_bodies, refine_confirmation  # noqa: E402
from reverse.runs.contacts import ContactDetector  # noqa: E402
from reverse.runs.run import build_stepper, run_reverse, step_settings  # noqa: E402
from workbench.scene.catalog import find_data  # noqa: E402
from workbench.scene.loader import load_scene  # noqa: E402
from workbench.sim.engine import Engine  # noqa: E402
from workbench.sim.observers import kinetic_energy  # noqa: E402
from workbench.specs import parse_override  # noqa: E402


@dataclass(frozen=True)
class Demo:
    scene: str
    duration: float
    overrides: dict = field(default_factory=dict)
    hints: str | None = None
    markov: str | None = None
    settings: dict = field(default_factory=dict)
    seeds: tuple = (None,)
    #: spelling scenes: balls per bin (ball k is in bin k // bin_size), for the own-bin share
    bin_size: int | None = None


DEMOS = {
    "LO": Demo("scenes/spelling_balls.py", 3.0, {"text": "LO"}, bin_size=25),
    "stack": Demo(
        "scenes/box_stack5.yaml",
        2.0,
        markov="markov_block",
        settings={"attract": True},
        seeds=(0, 1, 2, 3, 4),
    ),
    "bricks": Demo("scenes/brick_stack.py", 2.0, hints="script", settings={"attract": True}),
    "crash": Demo("scenes/crash.py", 0.6),
}


def print_table(rows: list[dict]) -> None:
    """Rows of equal keys as an aligned text table."""
    if not rows:
        return
    keys = list(rows[0])
    width = {k: max(len(k), *(len(str(r[k])) for r in rows)) for k in keys}
    head = "  ".join(k.ljust(width[k]) for k in keys)
    print(head)
    print("-" * len(head))
    for r in rows:
        print("  ".join(str(r[k]).ljust(width[k]) for k in keys))


def own_bin_share(final: np.ndarray, reached: np.ndarray, bin_size: int) -> float:
    """Share of the spelling balls that PyBullet brings into their own bin: within the bin's
    square (its balls' mean final position ± half the balls' extent plus one radius, the free
    width of the bin) and below the top of its walls. ``final``, ``reached``: (k, 3) in ball
    order."""
    k = len(final)
    group = np.arange(k) // bin_size
    centre = np.stack([final[group == g].mean(axis=0) for g in range(group.max() + 1)])[group]
    spread = np.max(np.abs(final[:, :2] - centre[:, :2]))  # centre of the outer balls, m
    radius = float(final[:, 2].min())  # the balls rest on the ground: z = radius
    half = spread + radius
    inside = np.all(np.abs(reached[:, :2] - centre[:, :2]) <= half, axis=1)
    low = reached[:, 2] <= 2.0 * radius
    return float(np.mean(inside & low))


def forward_reference(scene, rigid, earliest, duration: float, moving: np.ndarray) -> dict:
    """The same figures for PyBullet's own forward run of the same bodies from the run's earliest
    state into the same arrangement (the confirmation's run, recorded every step): overlaps from
    an isolated contact detection of each record (as the audit's), speeds, spins and the largest
    rise of the mechanical energy (``reverse/runs/audit.py``)."""
    dt = scene.settings.dt
    t0 = time.perf_counter()
    engine = Engine(scene, visual=False)
    try:
        engine.rebuild()
        engine.set_state(earliest)
        advance = engine.stepper()
        states = [engine.state()]
        for k in range(int(round(duration / dt))):
            advance(k, 1)
            states.append(engine.state())
    finally:
        engine.close()
    wall = time.perf_counter() - t0
    deepest = np.zeros(2)  # body-body, body-static
    with ContactDetector(scene) as detector:
        for st in states:
            c = detector.fresh(st.position, st.orientation)
            if len(c):
                for i, static in enumerate((False, True)):
                    mine = (c.body_b < 0) == static
                    if mine.any():
                        deepest[i] = max(deepest[i], -float(c.distance[mine].min()))
    x = np.stack([s_.position for s_ in states])
    q = np.stack([s_.orientation for s_ in states])
    v = np.stack([s_.linear_velocity for s_ in states])
    w = np.stack([s_.angular_velocity for s_ in states])
    kinetic = kinetic_energy(rigid.mass, rigid.inertia, q, v, w)
    gain = largest_rise(mechanical_energy(rigid.mass, kinetic, rigid.force, x, v, dt))[0]
    limit = 0.01 * float(kinetic.sum(axis=1).max())
    speed = np.max(np.linalg.norm(v[:, moving], axis=2), axis=0)
    spin = np.max(np.linalg.norm(w[:, moving], axis=2), axis=0)
    return {
        "status": "PyBullet",
        "overlap mm (bodies/static)": f"{1e3 * deepest[0]:.3g} / {1e3 * deepest[1]:.3g}",
        "earliest mm": "-",
        "speed m/s p50/p99/max": "/".join(f"{u:.3g}" for u in np.percentile(speed, [50, 99, 100])),
        "spin rad/s p50/p99/max": "/".join(f"{u:.3g}" for u in np.percentile(spin, [50, 99, 100])),
        "energy gain J (limit)": f"{gain:.3g} ({limit:.3g})",
        "confirmed ≤1/≤5 cm": "-",
        "own bin": "-",
        "wall s": f"{wall:.1f}",
    }


def run_demo(
    name: str,
    demo: Demo,
    extra_rules: list[str],
    overrides: dict | None = None,
    reference: bool = True,
) -> list[dict]:
    path = REPO / demo.scene
    scene = load_scene(path, overrides={**demo.overrides, **(overrides or {})} or None)
    given = scene.reverse  # the scene's own reverse settings, as `workbench reverse` uses them
    option = demo.hints or given.hints
    hints = resolve_hints(option, path, scene, sampled=False).hints if option else None
    markov = load_model(find_data(demo.markov)) if demo.markov else None
    controls = {
        "restitution_blend": given.restitution_blend,
        "angular_damping": given.angular_damping,
        "linear_damping": given.linear_damping,
        "slip_damping": given.slip_damping,
        "attract": given.attract,
        **demo.settings,  # the rest of the docs' command
    }
    settings, run_rules = step_settings(
        given.dt or scene.settings.dt, [*given.contacts, *extra_rules], **controls
    )
    rows = []
    for seed in demo.seeds:
        t0 = time.perf_counter()
        res = run_reverse(
            scene,
            duration=demo.duration,
            hints=hints,
            markov=markov,
            seed=seed,
            settings=settings,
            **run_rules,
        )
        wall = time.perf_counter() - t0
        traj, audit = res.trajectory, res.audit
        moving = np.isin(np.arange(len(scene.bodies)), moving_bodies(scene))
        speed = np.max(np.linalg.norm(traj.linear_velocity[:, moving], axis=2), axis=0)
        spin = np.max(np.linalg.norm(traj.angular_velocity[:, moving], axis=2), axis=0)
        earliest, final = traj.state(0), traj.state(len(traj.time) - 1)
        confirmation = refine_confirmation(
            scene, earliest, final, float(traj.time[-1]), budget=given.confirm_refine
        )
        miss = confirmation.position_error
        near1, near5 = float(np.mean(miss <= 0.01)), float(np.mean(miss <= 0.05))
        in_bin = "-"
        if demo.bin_size:
            index = moving_bodies(scene)
            share = own_bin_share(final.position[index], confirmation.reached, demo.bin_size)
            in_bin = f"{100 * share:.0f}%"
        limit = audit.limits.energy_fraction * audit.peak_kinetic
        rows.append(
            {
                "demo": name if seed is None else f"{name} s{seed}",
                "status": traj.status,
                "overlap mm (bodies/static)": f"{1e3 * audit.overlap_bodies:.3g} / "
                f"{1e3 * audit.overlap_static:.3g}",
                "earliest mm": f"{1e3 * audit.earliest_overlap:.3g}",
                "speed m/s p50/p99/max": "/".join(
                    f"{v:.3g}" for v in np.percentile(speed, [50, 99, 100])
                ),
                "spin rad/s p50/p99/max": "/".join(
                    f"{v:.3g}" for v in np.percentile(spin, [50, 99, 100])
                ),
                "energy gain J (limit)": f"{audit.energy_gain:.3g} ({limit:.3g})",
                "confirmed ≤1/≤5 cm": f"{100 * near1:.0f}% / {100 * near5:.0f}%",
                "own bin": in_bin,
                "wall s": f"{wall:.1f}",
            }
        )
        if reference:
            rigid = build_stepper(scene, settings)[0].rigid
            start = confirmation.earliest  # the state PyBullet played (refined where asked)
            ref = forward_reference(scene, rigid, start, float(traj.time[-1]), moving)
            rows.append({"demo": f"{rows[-1]['demo']} forward", **ref})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--demo", choices=sorted(DEMOS), action="append", help="(default: all)")
    ap.add_argument(
        "--contacts",
        metavar="RULE[,RULE]",
        default="",
        help="contact rules added to every demo's own (workbench reverse --contacts)",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a scene parameter for every demo (repeatable), e.g. dt=0.004166666666666667",
    )
    ap.add_argument(
        "--no-reference",
        dest="reference",
        action="store_false",
        help="leave out the forward reference rows (PyBullet's own run of the same bodies)",
    )
    args = ap.parse_args(argv)
    overrides = dict(parse_override(text) for text in args.set)
    rows = []
    for name in args.demo or list(DEMOS):
        rules = [r for r in args.contacts.split(",") if r]
        rows += run_demo(name, DEMOS[name], rules, overrides, args.reference)
        print(f"{name}: done", file=sys.stderr, flush=True)
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
