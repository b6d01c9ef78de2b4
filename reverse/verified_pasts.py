"""Forward-verified pasts as a sample of the plausibility measure (issue 15, items 1 and 4).

``workbench reverse --verify`` (:mod:`reverse.verify`) refines a backward run's earliest state
until PyBullet, played forward from it, comes to rest at the final pose. What a user then holds
is PyBullet's own motion from the refined state: a *verified past*. This module turns backward
runs into such pasts and records each one **as a forward throw is recorded**
(:func:`reverse.markov_training.run_throw` with ``kinematics=True``), so that
:mod:`reverse.plausibility` can compare them with the throws by the same statistics:

* the same world: the training's, the scene with every plane a 1 m box *body*
  (:func:`reverse.markov_training.box_ground`) at the comparison's ``dt``. The refinement runs
  in that world too (:func:`reverse.verify.verify_in`), so the recorded motion is the one the
  refinement confirmed (checked: :func:`verified_task` replays it and compares the rest pose);
  ``workbench reverse --verify`` refines against the scene as ``workbench run`` builds it
  (a ``GEOM_PLANE``), whose contact manifolds — and so whose chaotic motions — differ;
* the same record: the contact state of the first record after a fresh collision detection at
  the earliest state, then after every step, counted by the training's rule (points within
  :data:`reverse.contacts.TOUCH_TOLERANCE` of the body, merged within
  :data:`reverse.markov.DISTINCT_TOLERANCE`, :func:`reverse.markov.classify`); speed, spin,
  kinetic energy ``½ m|v|² + ½ Σ_k I_k (Rᵀω)_k²`` in the principal frame, and height, of the
  body at the earliest state and after every step;
* the same end of run: ``round(duration / dt)`` steps, the throws' and the backward runs'
  length. The refinement's forward run goes on until rest (:func:`reverse.verify.forward_to_rest`,
  at most :data:`reverse.verify.SETTLE_TIME` more); a past still moving at the end of the
  recorded span is counted (``rest_after_duration``), not cut differently.

A run whose refinement does not reach the tolerance (or fails) is left out of the verified
sample and counted by status. Run ``i``'s refinement draws from ``SeedSequence(entropy,
spawn_key=(i, 2))`` (:func:`reverse.verify.verify_rng`) with ``entropy`` the backward sample's
stream: the convention of ``workbench reverse --verify`` (``(i,)`` is backward run ``i``'s own
seed, ``(i, 1)`` its variation draws). Every forward run rebuilds the PyBullet world, so each
run's result depends on its item only: the same bits for any number of workers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from reverse.markov import classify
from reverse.markov_training import body_kinematics, distinct_contacts, training_world
from reverse.markov_training import close_training_world as close_world
from reverse.plausibility import RunRecord, compare_with_throws, format_table, stream_entropy
from reverse.verify import (
    DEFAULT_BUDGET,
    DEFAULT_RADIUS,
    DEFAULT_TOLERANCE,
    SETTLE_TIME,
    ForwardResult,
    forward_to_rest,
    pose_residual,
    verify_in,
)
from workbench.ensemble.run import bounded_map, executor_for
from workbench.sim.state import State

__all__ = [
    "VerifiedRun",
    "verify_settings",
    "training_world",
    "record_verified",
    "verified_task",
    "verified_pasts",
    "verified_summary",
    "close_world",
    "measure_verified",
    "format_verified",
]

#: Statuses of a run that gives no verified past (besides ``not refined`` and ``error`` of
#: :class:`reverse.verify.VerifyOutcome`): the backward run itself did not end ``ok``, or the
#: replayed past did not reach the refinement's rest pose (PyBullet not reproducible: never seen).
BACKWARD_NOT_OK = "backward not ok"
NOT_REPRODUCED = "not reproduced"


@dataclass
class VerifiedRun:
    """One backward run's verification and, when refined, its recorded past.

    Attributes
    ----------
    run : int
        Backward run (particle slot) index: the key of its refinement stream.
    status : str
        ``refined``, ``not refined``, ``error``, :data:`BACKWARD_NOT_OK` or
        :data:`NOT_REPRODUCED`.
    message : str
    pybullet_runs : int
        Forward PyBullet runs of the refinement (the recording's replay not counted).
    rest_time : float
        s from the earliest state to rest in the refined forward run (NaN if none).
    residual_position, residual_angle : float
        m and rad, the refined forward run's rest pose from the final one.
    states : ndarray of int8, shape (n_steps + 1,), or None
        Contact state per record of the verified past (refined runs only).
    kinematics : ndarray, shape (n_steps + 1, 4), or None
        Speed (m/s), spin (rad/s), kinetic energy (J), height (m) per record.
    seconds : float
        Wall time of the refinement and the recording in the worker (not in any file).
    earliest : ndarray, shape (n_bodies, 13), or None
        The refined earliest state (refined runs only): position, body-frame quaternion, linear
        and angular velocity of every body.
    """

    run: int
    status: str
    message: str = ""
    pybullet_runs: int = 0
    rest_time: float = math.nan
    residual_position: float = math.nan
    residual_angle: float = math.nan
    states: np.ndarray | None = None
    kinematics: np.ndarray | None = None
    seconds: float = 0.0
    earliest: np.ndarray | None = None


def verify_settings(
    budget: int = DEFAULT_BUDGET,
    tolerance: tuple[float, float] = DEFAULT_TOLERANCE,
    radius: tuple[float, float] = DEFAULT_RADIUS,
) -> dict:
    """The refinement's settings (:func:`reverse.verify.verify_in`); ``budget`` at least 1."""
    if int(budget) != budget or budget < 1:
        raise ValueError(f"--verify-budget: expected a whole number of at least 1, got {budget}")
    return {"budget": int(budget), "tolerance": tuple(tolerance), "radius": tuple(radius)}


# ----------------------------------------------------------------------------- one process
# The training's world is the throws' own (reverse.markov_training.training_world, also
# exported here with close_world), so a worker holds one PyBullet world for both.


def _contact_state(engine, body: int) -> int:
    """The training's contact state of ``body`` (:func:`reverse.markov_training.run_throw`)."""
    return int(classify(len(distinct_contacts(engine, body))))


def record_verified(
    engine,
    scene,
    body: int,
    state: State,
    duration: float,
    trajectory: bool = False,
    settle: float = SETTLE_TIME,
) -> tuple[np.ndarray, np.ndarray, ForwardResult, np.ndarray | None]:
    """PyBullet's motion from ``state`` recorded as a throw (module docstring).

    Returns
    -------
    states : ndarray of int8, shape (n_steps + 1,)
    kinematics : ndarray, shape (n_steps + 1, 4)
        Speed (m/s), spin (rad/s), kinetic energy (J), height of the centre of mass (m).
    forward : ForwardResult
        The same run carried on to rest (:func:`reverse.verify.forward_to_rest`, at most
        ``settle`` s after ``duration``): bit for bit the refinement's forward run from
        ``state`` with the same ``settle``.
    trajectory : ndarray, shape (n_steps + 1, n_bodies, 13), or None
        With ``trajectory``: every body's position, body-frame quaternion (x, y, z, w), linear
        and angular velocity per record (:meth:`workbench.sim.engine.Engine.state`).
    """
    dt = scene.settings.dt
    n_steps = int(round(duration / dt))  # forward_to_rest's and the throws' step count
    states = np.empty(n_steps + 1, dtype=np.int8)
    motion = [None] * (n_steps + 1)  # read_body: x, q of the principal frame, v, ω
    poses = [None] * (n_steps + 1) if trajectory else None

    def pose() -> np.ndarray:
        st = engine.state()
        fields = (st.position, st.orientation, st.linear_velocity, st.angular_velocity)
        return np.concatenate(fields, axis=1)

    # the first record as a throw's: a fresh detection at the earliest state. Its own world:
    # a detection before the first step would change the manifolds the forward run steps with
    engine.rebuild()
    engine.set_state(state)
    engine.detect_collisions()
    states[0], motion[0] = _contact_state(engine, body), engine.read_body(body)
    if poses is not None:
        poses[0] = pose()

    def observe(k: int) -> None:
        if k <= n_steps:  # reads only: the run stays the refinement's, bit for bit
            states[k], motion[k] = _contact_state(engine, body), engine.read_body(body)
            if poses is not None:
                poses[k] = pose()

    fwd = forward_to_rest(engine, state, [body], duration, observe, settle=settle)
    x, q, v, w = (np.array([m[c] for m in motion], dtype=float) for c in range(4))
    frame = engine.frames[body]
    g = np.asarray(scene.gravity, dtype=float)
    up = -g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.array([0.0, 0.0, 1.0])
    kin = np.column_stack([body_kinematics(q, v, w, frame.mass, frame.moments), x @ up])
    return states, kin, fwd, (np.stack(poses) if poses is not None else None)


def verified_task(recipe, settings: dict, entropy: int, item) -> VerifiedRun:
    """Refine backward run ``item = (run, ends)`` and record its past (a worker's task).

    ``ends`` is ``None`` for a backward run that did not end ``ok``, else an array (2, n_bodies,
    13): its first (earliest) and last records, position, body-frame quaternion (x, y, z, w),
    linear and angular velocity of every body.
    """
    run, ends = item
    if ends is None:
        return VerifiedRun(run, BACKWARD_NOT_OK)
    t0 = time.perf_counter()
    scene, engine, body = training_world(recipe)
    duration = float(settings["duration"])
    # the fixed bodies as the training world has them: the backward runs' scene has a plane
    # where this world has a box body (its centre 1/2 its depth lower), and verify_in places
    # every body from the records
    engine.rebuild()
    base = engine.state()
    fixed = [k for k, b in enumerate(scene.bodies) if b.fixed]
    ends = np.array(ends, dtype=float)
    for k in fixed:
        ends[:, k] = np.concatenate(
            [base.position[k], base.orientation[k], base.linear_velocity[k],
             base.angular_velocity[k]]
        )  # fmt: skip
    out = verify_in(
        lambda: (scene, engine), settings, entropy, (run, run, ends[0], ends[1], duration)
    )
    res = VerifiedRun(
        run, out.status, out.message, out.pybullet_runs, out.rest_time,
        out.residual_position, out.residual_angle,
    )  # fmt: skip
    if out.status == "refined":
        s = out.state
        best = State.from_packed(s)
        res.states, res.kinematics, fwd, _ = record_verified(engine, scene, body, best, duration)
        res.earliest = s
        final = ends[1]
        dp, da = pose_residual(fwd.position, fwd.orientation, final[[body], :3], final[[body], 3:7])
        if not (fwd.at_rest and (dp, da) == (out.residual_position, out.residual_angle)):
            res.status, res.message = NOT_REPRODUCED, f"replay rests {dp:.3g} m, {da:.3g} rad off"
            res.states = res.kinematics = res.earliest = None
    res.seconds = time.perf_counter() - t0
    return res


def verified_pasts(
    recipe,
    ends: list,
    entropy: int,
    *,
    duration: float,
    settings: dict | None = None,
    workers: int = 1,
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[VerifiedRun]:
    """The verified pasts of backward runs, in run order (module docstring).

    Parameters
    ----------
    recipe : tuple
        ``(scene path, overrides tuple, dt)`` of the comparison (the throws' recipe).
    ends : list
        Per backward run: ``None`` (not ``ok``) or its (2, n_bodies, 13) first and last records.
    entropy : int
        The backward sample's stream entropy (:func:`reverse.verify.verify_rng`).
    duration : float
        Span of the runs, s.
    settings : dict, optional
        :func:`verify_settings` (default: its defaults).
    workers, scheduler
        As for ensembles (:func:`workbench.ensemble.run.executor_for`).
    progress : callable, optional
        ``progress(done, len(ends))``.
    """
    settings = {**(settings or verify_settings()), "duration": float(duration)}
    items = list(enumerate(ends))
    out: list = [None] * len(items)
    done = 0
    try:
        with executor_for(workers, scheduler, None, len(items)) as ex:
            for res in bounded_map(
                ex, verified_task, (recipe, settings, int(entropy)), items, workers
            ):
                out[res.run] = res
                done += 1
                if progress is not None:
                    progress(done, len(items))
    finally:
        close_world()  # the serial executor ran the runs in this process
    return out


def verified_summary(runs: list[VerifiedRun], settings: dict, dt: float, duration: float) -> dict:
    """What the verification of a sample gave, for the comparison's JSON (no wall times)."""
    by: dict[str, int] = {}
    for r in runs:
        by[r.status] = by.get(r.status, 0) + 1
    tried = [r for r in runs if r.status != BACKWARD_NOT_OK]
    refined = [r for r in runs if r.status == "refined"]
    n_steps = int(round(duration / dt))
    late = sum(1 for r in refined if r.rest_time > n_steps * dt + 0.5 * dt)

    def mean(xs):
        return float(np.mean(xs)) if len(xs) else None

    return {
        "world": "the training's: planes as 1 m box bodies (reverse.markov_training.box_ground)",
        "budget": int(settings["budget"]),
        "tolerance_m": float(settings["tolerance"][0]),
        "tolerance_deg": math.degrees(settings["tolerance"][1]),
        "radius_m": float(settings["radius"][0]),
        "radius_deg": math.degrees(settings["radius"][1]),
        "backward_runs": len(runs),
        "attempted": len(tried),
        "by_status": dict(sorted(by.items())),
        "refined": len(refined),
        "refined_share_of_attempted": len(refined) / len(tried) if tried else None,
        "pybullet_runs_per_attempted_run": mean([r.pybullet_runs for r in tried]),
        "pybullet_runs_per_refined_run": mean([r.pybullet_runs for r in refined]),
        "pybullet_runs": int(sum(r.pybullet_runs for r in tried)),
        # resampled particles (markov compare --smc) repeat pasts: how many differ
        "distinct_pasts": len({r.kinematics.tobytes() for r in refined}),
        "rest_after_duration": late,
        "median_rest_time": float(np.median([r.rest_time for r in refined])) if refined else None,
    }


# ----------------------------------------------------------------------------- the comparison
def measure_verified(
    run,
    scene_path,
    verify: dict,
    *,
    seed: int,
    dt: float,
    duration: float,
    overrides: tuple = (),
    workers: int = 1,
    bins: int | None = None,
    cuts: dict | None = None,
    progress: Callable[[int, int], None] | None = None,
):
    """Add the verified pasts of a :class:`reverse.plausibility.Measurement`'s backward runs to
    it: ``run.comparison.verified`` (forward vs verified, the verification's outcome in its
    ``counts["verify"]``), ``run.samples["verified_runs"]`` and the wall times
    ``run.seconds["verify"]`` and ``["verify_per_run"]`` (mean per attempted run, in a worker).

    ``seed``, ``dt``, ``duration``, ``overrides``, ``bins`` and ``cuts`` must be the
    measurement's (:func:`reverse.plausibility.measure`); ``verify`` is
    :func:`verify_settings`. Returns ``run``.
    """
    t0 = time.perf_counter()
    runs = verified_pasts(
        (str(scene_path), tuple(overrides), float(dt)),
        [r.ends if r.status == "ok" else None for r in run.samples["backward"]],
        stream_entropy(seed, "backward"),
        duration=duration,
        settings=verify,
        workers=workers,
        progress=progress,
    )
    empty = (np.zeros(0, np.int8), np.zeros((0, 3)))
    records = [
        RunRecord(r.states, r.kinematics) if r.status == "refined" else RunRecord(*empty, r.status)
        for r in runs
    ]
    meta = {
        "sample": "verified pasts: PyBullet forward from each backward run's refined earliest "
        "state (reverse/verify.py), recorded as a throw (reverse/verified_pasts.py)",
        "duration": float(duration),
    }
    c = compare_with_throws(run, records, dt, seed, bins=bins, cuts=cuts, meta=meta)
    c.counts["verify"] = verified_summary(runs, verify, dt, duration)
    run.comparison.verified = c
    run.samples["verified_runs"] = runs
    run.seconds["verify"] = time.perf_counter() - t0
    spent = [r.seconds for r in runs if r.status != BACKWARD_NOT_OK]
    run.seconds["verify_per_run"] = float(np.mean(spent)) if spent else math.nan
    return run


def format_verified(c, seconds: dict | None = None) -> str:
    """The verified pasts' table of a comparison (``c.verified``): what the verification gave,
    then :func:`reverse.plausibility.format_table` of forward vs verified. ``seconds`` (a
    measurement's) adds the wall times, which no file holds."""
    v = c.verified
    s = v.counts["verify"]
    statuses = ", ".join(f"{k} {x}" for k, x in s["by_status"].items())
    lines = [
        "verified pasts vs forward: PyBullet forward from each backward run's earliest state "
        f"refined to rest within {s['tolerance_m']:g} m and {s['tolerance_deg']:g} deg of its "
        f"final pose (budget {s['budget']} PyBullet runs; {s['world']})"
    ]
    if s["attempted"]:
        lines.append(
            f"refined {s['refined']} of {s['attempted']} attempted "
            f"({s['refined_share_of_attempted']:.3g}; {s['distinct_pasts']} distinct pasts); "
            f"{statuses}; PyBullet runs per attempted run "
            f"{s['pybullet_runs_per_attempted_run']:.3g}"
        )
    if s["refined"]:
        lines.append(
            f"verified pasts still moving at the end of the {v.meta['duration']:g} s span: "
            f"{s['rest_after_duration']} (median time to rest {s['median_rest_time']:.3g} s)"
        )
    if seconds and "verify" in seconds:
        lines.append(
            f"verification wall time {seconds['verify']:.1f} s, "
            f"{seconds['verify_per_run']:.3g} s per attempted run in a worker"
        )
    return "\n".join([*lines, format_table(v, "verified")])
