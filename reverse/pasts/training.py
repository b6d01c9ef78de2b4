"""Training data of the contact-transition Markov model (Twigg & James 2008 [1]_ §4, Fig. 9):
many forward PyBullet runs of one body thrown at the ground, its contact state per step, and the
transition counts of :mod:`reverse.goals.markov`.

Run ``i`` draws its throw from ``numpy.random.SeedSequence(entropy, spawn_key=(i,))``
(``docs/architecture.md``, "Randomness and parallelism") and rebuilds its PyBullet world with
``resetSimulation()``, so the table is bit-identical whatever the number of worker processes.
Each worker process keeps one DIRECT client.

Contact counting: after every step, the points of ``getContactPoints`` between the thrown body
and the others with distance ≤ :data:`reverse.runs.contacts.TOUCH_TOLERANCE` (the points the reverse
stepper lets take part in a step), duplicates within :data:`reverse.goals.markov.DISTINCT_TOLERANCE`
merged. Planes become 1 m thick boxes (:func:`box_ground`, as in the reverse stepper): a box on a
``GEOM_PLANE`` gains manifold points one per step, on a box it reports its 4 corners at once, so a
landing on a face is one step from 0 or 2 to 3+ contacts as in the backward runs. The trainer
builds the box as a box *body* (centre at the box's centre, no collision-frame offset), not with
``Engine(plane_as_box=True)``: that option offsets the box's collision frame, which PyBullet
makes a compound shape, and the compound–box pair keeps its contact manifold differently from a
box–box pair. Measured (200 throws of ``markov_block``, seed 1): 33.7 transitions per throw with
the compound, 30.3 with a box body, identical to a scene whose ground is written as that box.

With ``kinematics=True`` a run also records the body's speed, spin and kinetic energy after
every step (:class:`ThrowResult` ``kinematics``), for the plausibility measure
(:mod:`reverse.pasts.measure`).

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25 (SIGGRAPH 2008).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from reverse.goals.markov import (
    DISTINCT_TOLERANCE,
    KINDS,
    TransitionModel,
    classify,
    count_transitions,
    speed_quantiles,
)
from reverse.goals.semi_markov import estimate_hazards
from reverse.runs.run import count_text
from reverse.runs.sampler import Pasts, RunRecord
from reverse.runs.workers import fan_out, worker_world
from workbench.errors import SceneError
from workbench.sim.frames import box_reach
from workbench.sim.state import State

__all__ = [
    "MAX_TRAIN_STEPS",
    "training_steps",
    "training_problem",
    "THROW",
    "Throw",
    "ThrowResult",
    "sample_throw",
    "thrown_body",
    "box_ground",
    "training_world",
    "ForwardThrows",
    "ground_top",
    "throw_release",
    "run_throw",
    "run_throws",
    "release_test",
    "distinct_contacts",
    "body_kinematics",
    "train",
]

#: Ranges of the random throws (the paper randomizes "both the initial angular and linear
#: velocities"; the numbers are ours). Height: of the body's lowest possible point above the
#: ground, m. Speeds: horizontal components uniform in ±horizontal_speed, m/s; vertical uniform in
#: [−vertical_speed, 0] (thrown downward or dropped), m/s; each angular velocity component uniform
#: in ±angular_speed, rad/s. Orientation: uniform on SO(3). A 0.2 m block then lands within
#: 0.1–0.4 s at up to ~4.5 m/s and tumbles, slides and bounces on its corners before it settles.
THROW = {
    "clearance": [0.05, 0.3],
    "horizontal_speed": 2.0,
    "vertical_speed": 3.0,
    "angular_speed": 10.0,
    "orientation": "uniform",
}

#: Most PyBullet steps of a training (all runs) started without ``--force``: 28 times the shipped
#: table's 360 000 (1000 runs of 1.5 s at 1/240 s), about 5 min on one core at the measured
#: :data:`TRAIN_STEPS_PER_SECOND`. More is usually a unit slip (``--duration 1e4``), which ran
#: unbounded with no estimate. (Memory is no concern: one byte per step.)
MAX_TRAIN_STEPS = 10_000_000

#: Training speed, steps/s on one core: ``workbench markov train markov_block -n 40`` stepped
#: 14 400 steps in 0.44 s (PyBullet step and contact query per step; 2 cores shared with another
#: job).
TRAIN_STEPS_PER_SECOND = 33_000

#: Most runs per task handed to a worker: large enough that pool overhead (~0.1 ms per task) is
#: negligible, small enough for a smooth progress bar (fewer when there are few runs per worker).
RUNS_PER_TASK = 25


@dataclass(frozen=True)
class Throw:
    """Initial state of the thrown body (centre of mass, world frame)."""

    position: np.ndarray  # (3,), m
    orientation: np.ndarray  # (4,), body frame, x-y-z-w
    linear_velocity: np.ndarray  # (3,), m/s
    angular_velocity: np.ndarray  # (3,), rad/s


@dataclass
class ThrowResult:
    """Contact states of one run and the approach speeds of its landings.

    Attributes
    ----------
    states : ndarray of int8, shape (n_steps + 1,)
        Contact state after each step (the first entry: the initial state).
    landings : ndarray, shape (m, 3)
        ``(i, j, speed)`` for every step from ``j`` to ``i > j`` contacts: the largest normal
        approach speed (m/s) of its contact points at the start of the step.
    kinematics : ndarray, shape (n_steps + 1, 4), optional
        Speed of the centre of mass (m/s), angular speed (rad/s), kinetic energy (J) and height
        of the centre of mass against gravity (m) of the body at the throw and after each step
        (``run_throw(..., kinematics=True)``).
    """

    states: np.ndarray
    landings: np.ndarray
    kinematics: np.ndarray | None = None


def throw_rng(entropy: int, i: int) -> np.random.Generator:
    """The generator of run ``i`` (independent of worker count and order)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(i,))))


def sample_throw(rng: np.random.Generator, base_xy, lowest: float, reach: float) -> Throw:
    """A random throw (:data:`THROW`).

    Parameters
    ----------
    rng : numpy.random.Generator
    base_xy : array_like, shape (2,)
        Horizontal position of the centre of mass, m.
    lowest : float
        Height of the ground's top, m.
    reach : float
        Largest distance from the centre of mass to a point of the body, m.
    """
    from scipy.spatial.transform import Rotation

    lo, hi = THROW["clearance"]
    z = lowest + reach + rng.uniform(lo, hi)
    q = Rotation.random(random_state=rng).as_quat()
    vh = THROW["horizontal_speed"]
    v = np.array(
        [rng.uniform(-vh, vh), rng.uniform(-vh, vh), -rng.uniform(0.0, THROW["vertical_speed"])]
    )
    w = rng.uniform(-THROW["angular_speed"], THROW["angular_speed"], 3)
    return Throw(np.array([base_xy[0], base_xy[1], z]), q, v, w)


def release_test(ref, max_speed: float, max_spin: float) -> Callable[[Any], bool]:
    """``released(state)``: whether the scene's moving body, in ``state`` (a
    :class:`reverse.State` of the scene's bodies), could be a throw's release (:data:`THROW`)
    whatever the throw's heading: its centre ``reach + clearance`` above the ground's top (as
    :func:`sample_throw` places it, ``reach`` and the ground measured as :func:`run_throw`
    measures them, in the training's world), falling at most ``vertical_speed``, horizontally
    at most ``√2 horizontal_speed`` (the box of horizontal components turned to any heading), and
    no faster than ``max_speed`` and ``max_spin`` (the fastest throws' speed and spin, m/s and
    rad/s). Bounds are the law's support, exact: no tolerance.

    ``ref`` is a :class:`workbench.ensemble.run.SceneRef` of a scene :func:`thrown_body` accepts.
    """
    from workbench.sim.engine import Engine

    scene = box_ground(ref.load())
    j = thrown_body(scene)
    eng = Engine(scene, visual=False)
    try:
        lo, hi = eng.aabb(j)
        reach = box_reach(lo, hi, eng.state().position[j])
        top = ground_top(eng, scene, j)
    finally:
        eng.close()
    c_lo, c_hi = THROW["clearance"]
    v_down, v_side = float(THROW["vertical_speed"]), float(THROW["horizontal_speed"])

    def released(state) -> bool:
        height = float(state.position[j, 2]) - top - reach
        v = np.asarray(state.linear_velocity[j], dtype=float)
        w = np.asarray(state.angular_velocity[j], dtype=float)
        return bool(
            c_lo <= height <= c_hi
            and -v_down <= v[2] <= 0.0
            and math.hypot(v[0], v[1]) <= math.sqrt(2.0) * v_side
            and np.linalg.norm(v) <= max_speed
            and np.linalg.norm(w) <= max_spin
        )

    return released


# ----------------------------------------------------------------------------- one process
def training_world(recipe):
    """This process's ``(scene, engine, body index)`` for ``recipe = (path, overrides, dt)``:
    the world the throws run in (planes as box bodies, :func:`box_ground`), built once per
    process and recipe (:func:`reverse.runs.workers.worker_world`)."""

    def build():
        from workbench.scene.loader import load_scene
        from workbench.sim.engine import Engine

        path, overrides, dt = recipe
        scene = box_ground(load_scene(path, dict(overrides)).with_settings(dt=dt))
        body = thrown_body(scene)
        return scene, Engine(scene, visual=False), body

    return worker_world("training", recipe, build, _close_world)


def _close_world(world) -> None:
    world[1].close()


def ground_top(engine, scene, body: int) -> float:
    """Height of the ground's top, m: the highest top of the bodies other than ``body`` — a
    plane's is its point (PyBullet gives a plane an AABB of ±1e30), any other body's its AABB's
    top (the training's box ground: its top face)."""
    return max(
        float(scene.bodies[k].position[2])
        if scene.bodies[k].shape.type == "plane"
        else float(engine.aabb(k)[1][2])
        for k in range(engine.n_bodies)
        if k != body
    )


def throw_release(engine, scene, body: int, entropy: int, i: int) -> tuple[State, State]:
    """The scene's state in ``engine``'s world (rebuilt here) and throw ``i``'s release: the same
    state with ``body`` placed and moving as :func:`sample_throw` draws from ``(entropy, i)``,
    above its own horizontal position, ``reach + clearance`` above :func:`ground_top`."""
    engine.rebuild()
    base = engine.state()
    lo, hi = engine.aabb(body)
    reach = box_reach(lo, hi, base.position[body])
    top = ground_top(engine, scene, body)
    throw = sample_throw(throw_rng(entropy, i), base.position[body, :2], top, reach)
    pos, q = base.position.copy(), base.orientation.copy()
    v, w = base.linear_velocity.copy(), base.angular_velocity.copy()
    pos[body], q[body] = throw.position, throw.orientation
    v[body], w[body] = throw.linear_velocity, throw.angular_velocity
    return base, State(pos, q, v, w)


def thrown_body(scene) -> int:
    """Index of the scene's one moving body; :class:`SceneError` unless there is exactly one."""
    moving = [k for k, b in enumerate(scene.bodies) if not b.fixed]
    if len(moving) != 1:
        raise SceneError(
            scene.source,
            "bodies",
            f"expected exactly one moving body to throw, found {len(moving)} "
            "(the others must be fixed, e.g. a plane)",
        )
    return moving[0]


def box_ground(scene):
    """``scene`` with every ``plane`` body replaced by the box body it collides as in the reverse
    stepper: :data:`~workbench.sim.arguments.PLANE_BOX_HALF` wide,
    2 :data:`~workbench.sim.arguments.PLANE_BOX_DEPTH` deep, its top face the plane (module
    docstring: a box body, not a compound shape). Other bodies are left as they are; a scene
    without planes is returned unchanged."""
    from workbench.scene.model import scene_from_dict
    from workbench.sim.arguments import PLANE_BOX_DEPTH, PLANE_BOX_HALF
    from workbench.sim.frames import z_to

    planes = [k for k, b in enumerate(scene.bodies) if b.shape.type == "plane"]
    if not planes:
        return scene
    data = scene.model_dump()
    for k in planes:
        body = scene.bodies[k]
        n = np.asarray(body.shape.normal, dtype=float)
        n = n / np.linalg.norm(n)
        rot = body.rotation
        entry = data["bodies"][k]
        entry["shape"] = {
            "type": "box",
            "half_extents": [PLANE_BOX_HALF, PLANE_BOX_HALF, PLANE_BOX_DEPTH],
        }
        entry["position"] = (np.asarray(body.position) - rot.apply(PLANE_BOX_DEPTH * n)).tolist()
        entry["quaternion"] = (rot * z_to(n)).as_quat().tolist()
        entry["euler_deg"] = None
    return scene_from_dict(
        data, source=scene.source, base_dir=scene.base_dir, source_text=scene.source_text
    )


def run_throw(recipe, entropy: int, i: int, n_steps: int, kinematics: bool = False) -> ThrowResult:
    """Run ``i``: throw the scene's moving body, step ``n_steps`` times, record contact states
    (and, with ``kinematics``, speeds and kinetic energy: :class:`ThrowResult`).

    ``recipe`` is ``(scene path, overrides tuple, dt)``; this process's engine is rebuilt
    (``resetSimulation``) for the run, so the result depends on ``(entropy, i)`` only.
    """

    scene, eng, j = training_world(recipe)
    _, release = throw_release(eng, scene, j, entropy, i)
    eng.set_state(release)
    eng.detect_collisions()

    def contacts() -> tuple[int, list]:
        kept = distinct_contacts(eng, j)
        return len(kept), kept

    states = np.empty(n_steps + 1, dtype=np.int8)
    states[0] = classify(contacts()[0])
    landings = []
    motion = []  # (q_inertial, v, ω, x) after each step, with kinematics
    for k in range(1, n_steps + 1):
        x0, q0, v0, w0 = eng.read_body(j)
        if kinematics:
            motion.append((q0, v0, w0, x0))
        eng.step((k - 1) * scene.settings.dt)
        n, pts = contacts()
        states[k] = classify(n)
        if states[k] > states[k - 1]:
            # approach speed of each point at the start of the step: −(v + ω × r) · n
            x0, v0, w0 = np.array(x0), np.array(v0), np.array(w0)
            speed = 0.0
            for pt in pts:
                r = np.array(pt.position_a) - x0
                vn = float(np.dot(v0 + np.cross(w0, r), pt.normal))
                speed = max(speed, -vn)
            landings.append((states[k], states[k - 1], speed))
    table = None
    if kinematics:
        x0, q0, v0, w0 = eng.read_body(j)
        motion.append((q0, v0, w0, x0))
        frame = eng.frames[j]
        q, v, w, x = (np.array([m[c] for m in motion]) for c in range(4))
        g = np.asarray(scene.gravity, dtype=float)
        up = -g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.array([0.0, 0.0, 1.0])
        table = np.column_stack([body_kinematics(q, v, w, frame.mass, frame.moments), x @ up])
    return ThrowResult(states, np.array(landings, dtype=float).reshape(-1, 3), table)


def distinct_contacts(engine, body: int) -> list:
    """The training's contact count of ``body`` (what :func:`run_throw` classifies): its points
    within :data:`reverse.runs.contacts.TOUCH_TOLERANCE`, a point within
    :data:`reverse.goals.markov.DISTINCT_TOLERANCE` of one kept before it merged into that one."""
    from reverse.runs.contacts import TOUCH_TOLERANCE

    kept: list = []
    for pt in engine.contact_points(body):
        if pt.distance <= TOUCH_TOLERANCE and all(
            math.dist(pt.position_a, k.position_a) > DISTINCT_TOLERANCE for k in kept
        ):
            kept.append(pt)
    return kept


def body_kinematics(q_inertial, v, w, mass: float, moments) -> np.ndarray:
    """Columns speed (m/s), angular speed (rad/s), kinetic energy (J) of one body, per record:
    ``½ m |v|² + ½ Σ_k I_k (Rᵀ ω)_k²`` in the principal frame ``R`` (``q_inertial``)."""
    from scipy.spatial.transform import Rotation

    w_principal = Rotation.from_quat(q_inertial).inv().apply(w)
    energy = 0.5 * mass * np.einsum("ti,ti->t", v, v) + 0.5 * (w_principal**2) @ np.asarray(
        moments, dtype=float
    )
    return np.column_stack([np.linalg.norm(v, axis=1), np.linalg.norm(w, axis=1), energy])


def training_steps(n: int, duration: float, dt: float) -> tuple[int, float]:
    """Steps of each run and of all ``n`` runs (a float: it may be astronomically large).

    Raises :class:`SceneError` naming ``--duration`` unless each run has a finite number of at
    least one step.
    """
    per_run = float(duration) / float(dt)
    if not math.isfinite(per_run):
        raise SceneError(
            "--duration",
            "",
            f"{duration:g} s at dt = {dt:g} s is too many steps to count (the bound is "
            f"{MAX_TRAIN_STEPS:,} steps in all)",
        )
    per_run = round(per_run)
    if per_run < 1:
        raise SceneError("--duration", "", f"expected at least one step of {dt:g} s")
    return int(per_run), float(n) * per_run


def training_problem(n: int, duration: float, dt: float) -> str:
    """Why a training is refused without ``--force`` ('' when it is not)."""
    _, total = training_steps(n, duration, dt)
    if total <= MAX_TRAIN_STEPS:
        return ""
    minutes = total / TRAIN_STEPS_PER_SECOND / 60.0
    return (
        f"{n} runs of {duration:g} s at dt = {dt:g} s are {count_text(total)} steps, about "
        f"{minutes:.3g} min on one core at {TRAIN_STEPS_PER_SECOND:,} steps/s: above the bound "
        f"of {MAX_TRAIN_STEPS:,} steps"
    )


def _run_chunk(recipe, entropy: int, n_steps: int, kinematics: bool, indices):
    return [(i, run_throw(recipe, entropy, i, n_steps, kinematics)) for i in indices]


# ----------------------------------------------------------------------------- many runs
def run_throws(
    scene_path,
    n: int,
    entropy: int,
    *,
    overrides: tuple = (),
    dt: float,
    duration: float,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    kinematics: bool = False,
) -> list[ThrowResult]:
    """``n`` forward runs (:func:`run_throw`), in index order.

    Parameters
    ----------
    scene_path : str or Path
        Scene with one moving body (thrown) and fixed ground.
    n : int
        Number of runs.
    entropy : int
        Seed of the runs' ``SeedSequence``.
    overrides : tuple of (name, value)
        Scene parameter overrides.
    dt, duration : float
        Step and length of each run, s.
    workers : int
        Processes (1: this process).
    progress : callable, optional
        ``progress(done, total)`` after each batch of runs.
    kinematics : bool
        Also record speeds and kinetic energies (:class:`ThrowResult`).
    """
    n_steps, _ = training_steps(n, duration, dt)
    recipe = (str(scene_path), tuple(overrides), float(dt))
    size = max(1, min(RUNS_PER_TASK, math.ceil(n / (4 * max(workers, 1)))))
    chunks = [range(s, min(s + size, n)) for s in range(0, n, size)]
    results: list = [None] * n
    done = 0
    args = (recipe, entropy, n_steps, bool(kinematics))
    for out in fan_out(_run_chunk, args, chunks, workers=min(workers, len(chunks))):
        for i, res in out:
            results[i] = res
        done += len(out)
        if progress is not None:
            progress(done, n)
    return results


@dataclass(frozen=True)
class ForwardThrows:
    """Throws of the training's law as a sampler of pasts
    (:class:`reverse.runs.sampler.PastSampler`): the plausibility measure's reference, what a
    past should look like (:mod:`reverse.pasts.measure`). ``scheduler`` is not used: throws
    run in this process or on a local pool (:func:`run_throws`)."""

    name: ClassVar[str] = "throws"
    description: ClassVar[str] = "forward PyBullet throws of the training's throw law"
    dt: float
    duration: float

    def sample(self, scene, n: int, entropy: int, *, workers: int = 1,
               scheduler: str | None = None, progress=None) -> Pasts:  # fmt: skip
        """``n`` throws of ``scene``'s body (a :class:`workbench.ensemble.run.SceneRef`)."""
        t0 = time.perf_counter()
        runs = run_throws(
            scene.path, n, entropy, overrides=tuple(scene.overrides), dt=self.dt,
            duration=self.duration, workers=workers, progress=progress, kinematics=True,
        )  # fmt: skip
        records = [RunRecord(r.states, r.kinematics) for r in runs]
        return Pasts(self.name, records, entropy=int(entropy), seconds=time.perf_counter() - t0)


def train(
    scene_path,
    n: int,
    entropy: int,
    *,
    overrides: tuple = (),
    dt: float,
    duration: float,
    workers: int = 1,
    command: str = "",
    progress: Callable[[int, int], None] | None = None,
    kind: str = "plain",
) -> tuple[TransitionModel, list[ThrowResult]]:
    """Train a :class:`~reverse.goals.markov.TransitionModel` from ``n`` throws
    (:func:`run_throws`).

    ``kind``: ``"plain"`` (the Markov table of Twigg & James 2008 Fig. 10) or ``"semi-markov"``
    (the same table plus the dwell-time hazards of
    :func:`reverse.goals.semi_markov.estimate_hazards`,
    estimated from the same runs).

    Returns the model and the runs. The model's metadata (``meta``) holds ``command``, the seed,
    ``n``, ``dt``, ``duration``, the scene file's name and SHA-256, and :data:`THROW`: everything
    that determines the table, nothing that does not (no worker count, no clock), so the same
    inputs write the same bytes.
    """
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    runs = run_throws(
        scene_path,
        n,
        entropy,
        overrides=overrides,
        dt=dt,
        duration=duration,
        workers=workers,
        progress=progress,
    )
    counts = count_transitions([r.states for r in runs])
    landings = np.concatenate([r.landings for r in runs]) if runs else np.zeros((0, 3))
    speeds: dict = {}
    pooled = speed_quantiles(landings[:, 2])
    if pooled is not None:
        speeds[(-1, -1)] = pooled
    for i in range(1, 4):
        for j in range(i):
            sel = (landings[:, 0] == i) & (landings[:, 1] == j)
            q = speed_quantiles(landings[sel, 2])
            if q is not None:
                speeds[(i, j)] = q
    path = Path(scene_path)
    meta = {
        "command": command,
        "seed": int(entropy),
        "n": int(n),
        "duration": float(duration),
        "scene": path.name,
        "scene_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "overrides": {str(k): v for k, v in overrides},
        "throw": THROW,
        "contact_touch_tolerance": _touch_tolerance(),
        "distinct_tolerance": DISTINCT_TOLERANCE,
        "landings": int(len(landings)),
    }
    hazards = None
    if kind == "semi-markov":
        hazards = estimate_hazards([r.states for r in runs], float(dt))
    return TransitionModel(counts, float(dt), speeds, meta, hazards), runs


def _touch_tolerance() -> float:
    from reverse.runs.contacts import TOUCH_TOLERANCE

    return TOUCH_TOLERANCE
