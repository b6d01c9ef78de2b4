"""Conditioned forward pasts: pasts of one body at rest on a flat ground, sampled forward and
conditioned on the final pose (issue 15, items 3 and 4).

The backward stepper (:mod:`reverse.step.stepper`) is exact, and its pasts are measurably unlike
forward throws (``docs/reverse.md``: seven levers on the backward sampler leave the classifier at
0.96–0.998, and no earliest state is a release). For a scene whose one moving body comes to rest
on a flat ground there is a direct sampler of the same posterior — "the pasts a forward run of
the throw law would have, given that it ends at this pose" (Twigg & James 2008 [1]_ §4 ask the
backward runs to match exactly these statistics):

1. *Throw.* Run ``i`` draws a release from the training's throw law
   (:func:`reverse.pasts.training.throw_release`, stream ``(entropy, i)``, the throws' own
   convention) and PyBullet runs it for the duration (:func:`reverse.runs.verify.forward_to_rest`
   with no settling time); a throw kept by the condition is run again, recorded as a throw
   (:func:`record_as_throw`: the same run bit for bit, checked).
2. *Condition.* Gravity and a flat ground are invariant under turns about the vertical and
   horizontal shifts, so a run at rest at the end of the duration (speeds under
   :data:`reverse.runs.verify.REST_SPEED` and :data:`~reverse.runs.verify.REST_SPIN` for its last
   :data:`~reverse.runs.verify.REST_HOLD`: a past is *at* the final pose when its span ends) on the
   final pose's face — the turn and shift that carry its rest pose onto the final one
   (:func:`reverse.runs.verify.gravity_correction`) leave at most the tolerance (1 cm, 5°) — is, so
   carried, a past of the final pose. Other runs are rejected (counted by reason).
3. *Confirm.* The carried motion is exact physics, but PyBullet is invariant only up to rounding
   and a motion of many bounces is chaotic: played forward from the carried release it lands
   afresh near the target (22% within 1 cm and 5° at the first try, ``markov_block``). The
   carried release is refined as ``workbench reverse --verify`` refines an earliest state
   (:func:`reverse.runs.verify.verify_in`: symmetry corrections, then a seeded evolution strategy,
   stream ``(entropy, i, 2)``) until PyBullet rests within the tolerance *by the end of the
   duration*, and the past is PyBullet's motion from the refined state, recorded again. A run
   not refined within the budget is rejected.

The first ``n`` confirmed runs *in throw order* are the sample: throws are handed out in
ascending order and every run's outcome depends on its index only (each PyBullet run rebuilds
the world), so the sample is the same bits for any number of workers. A sample that needs more
than ``max_throws`` throws (a face the throw law rarely rests on) ends with what it has, and
says so.

Such pasts start at a release of the throw law up to the refinement's steps (the refinement
turns and shifts the release, and moves its velocities by steps of
:data:`reverse.runs.verify.VELOCITY_STEP` of its speed when the corrections do not suffice), and
move
by PyBullet's physics. What separates them from throws is the conditioning on the final face
and on rest by the end of the duration (``markov compare --conditioned`` measures it).

Where it does not apply: bodies that do not come to rest on a flat, level ground by themselves
(stacks, several moving bodies, a final state in motion), and final faces the throw law
(almost) never rests on. The backward stepper remains the sampler there.

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25 (SIGGRAPH 2008).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.spatial.transform import Rotation

from reverse.goals.markov import classify
from reverse.pasts.training import (
    body_kinematics,
    distinct_contacts,
    throw_release,
    thrown_body,
    training_world,
)
from reverse.runs.sampler import Pasts, RunRecord
from reverse.runs.verify import (
    DEFAULT_BUDGET,
    SETTLE_TIME,
    ForwardResult,
    forward_to_rest,
    gravity_correction,
    pose_residual,
    scene_world,
    verify_in,
    verify_settings,
)
from reverse.runs.workers import fan_out
from workbench.sim.state import State

__all__ = [
    "record_as_throw",
    "ConditionedPast",
    "MAX_THROWS_PER_PAST",
    "CONDITIONED_BUDGET",
    "REJECTED_FACE",
    "REJECTED_MOVING",
    "SELECTED",
    "carry_state",
    "final_rest_body",
    "conditioned_task",
    "conditioned_pasts",
    "conditioned_summary",
    "ConditionedPasts",
]

#: Default most throws per past asked for (``max_throws = MAX_THROWS_PER_PAST · n``). Measured
#: share of throws resting on the final pose's face at the end of the duration (300 throws,
#: seed 12345): ``markov_block`` 0.35, ``markov_plate`` 0.50, ``markov_rod`` 0.24, and about 90%
#: of those refined; 20 leaves room for a face 5 times rarer than the rod's.
MAX_THROWS_PER_PAST = 20

#: Default budget of the refinement of a carried release (PyBullet runs): ``workbench reverse
#: --verify``'s. A smaller one is faster but keeps the throws whose refinement is easy — the
#: less chaotic, fewer bounces — and so biases the sample. Measured (200 pasts, seed 1, 2
#: workers, ``benchmarks/plausibility.py --conditioned``): ``markov_rod`` at budget 30 confirms
#: 27% of the throws on the face (200: 64%), its flight share 0.363 against the pose-ending
#: throws' 0.419, classifier 0.64 against the throws (200: 0.56), in 149 s instead of ~300 s;
#: ``markov_block`` at 30: flight share 0.488 (200: 0.513; throws 0.549), classifier 0.595
#: (200: 0.545).
CONDITIONED_BUDGET = DEFAULT_BUDGET

#: Statuses of a rejected throw: still moving (or resting only after) the end of the duration,
#: or resting on another face (or too tilted). A kept run is ``refined``; a throw resting on the
#: face whose carried release the refinement could not confirm is ``not refined``; ``error``: an
#: exception in PyBullet or the refinement (its message kept).
REJECTED_MOVING = "moving"
REJECTED_FACE = "other face"

#: Status of a kept throw when the sample is not confirmed (``confirm=False``): a forward
#: throw selected by the condition, its own records (not carried: its statistics are
#: invariant under the carry), the reference sample of what the conditioning alone does.
SELECTED = "selected"


def _contact_state(engine, body: int) -> int:
    """The training's contact state of ``body`` (:func:`reverse.pasts.training.run_throw`)."""
    return int(classify(len(distinct_contacts(engine, body))))


def record_as_throw(
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
        The same run carried on to rest (:func:`reverse.runs.verify.forward_to_rest`, at most
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


@dataclass
class ConditionedPast:
    """One throw of a conditioned sample and, when kept, its confirmed past.

    Attributes
    ----------
    throw : int
        Throw index (its stream ``(entropy, throw)``).
    status : str
        ``refined`` (kept), ``not refined``, ``error``, :data:`REJECTED_MOVING` or
        :data:`REJECTED_FACE`.
    message : str
    carry_position, carry_angle : float
        m and rad: the throw's rest pose, turned and shifted, from the final pose (NaN if it did
        not rest by the end of the duration).
    pybullet_runs : int
        PyBullet forward runs of this throw: the throw (and, on the face, its recording), the
        refinement's and the past's recording.
    residual_position, residual_angle : float
        m and rad, the confirmed past's rest pose from the final one (refined runs).
    rest_time : float
        s from the earliest state to rest in the confirmed past.
    release : ndarray (n_bodies, 13) or None
        The throw's release carried onto the final pose (position, body-frame quaternion x y z
        w, linear and angular velocity of every body): the refinement's start.
    earliest : ndarray (n_bodies, 13) or None
        The confirmed past's earliest state (refined runs).
    states : ndarray of int8, shape (n_steps + 1,), or None
        Contact state per record of the confirmed past.
    kinematics : ndarray, shape (n_steps + 1, 4), or None
        Speed (m/s), spin (rad/s), kinetic energy (J), height (m) per record.
    trajectory : ndarray, shape (n_steps + 1, n_bodies, 13), or None
        Every body's state per record of the confirmed past (``trajectory=True``).
    throw_states, throw_kinematics : ndarray or None
        The throw's own records (kept runs), before the carry and the refinement: a forward
        throw selected by the condition, the reference that tells what the conditioning alone
        does to the statistics (``benchmarks/plausibility.py --conditioned``).
    seconds : float
        Wall time in the worker (not in any file).
    """

    throw: int
    status: str
    message: str = ""
    carry_position: float = math.nan
    carry_angle: float = math.nan
    pybullet_runs: int = 0
    residual_position: float = math.nan
    residual_angle: float = math.nan
    rest_time: float = math.nan
    release: np.ndarray | None = None
    earliest: np.ndarray | None = None
    states: np.ndarray | None = None
    kinematics: np.ndarray | None = None
    trajectory: np.ndarray | None = None
    throw_states: np.ndarray | None = None
    throw_kinematics: np.ndarray | None = None
    seconds: float = 0.0

    @property
    def kept(self) -> bool:
        return self.status in ("refined", SELECTED)


def carry_state(state: State, body: int, turn: Rotation, centre, shift) -> State:
    """``state`` with ``body`` moved by ``x ↦ turn (x − centre) + centre + shift``
    (:func:`reverse.runs.verify.gravity_correction`): its pose, and its velocities turned."""
    p, q = state.position.copy(), state.orientation.copy()
    v, w = state.linear_velocity.copy(), state.angular_velocity.copy()
    c = np.asarray(centre, dtype=float)
    p[body] = turn.apply(p[body] - c) + c + np.asarray(shift, dtype=float)
    q[body] = (turn * Rotation.from_quat(q[body])).as_quat()
    v[body], w[body] = turn.apply(v[body]), turn.apply(w[body])
    return State(p, q, v, w)


def final_rest_body(scene, dt: float, tolerance: tuple[float, float]) -> int:
    """The scene's one moving body (:func:`reverse.pasts.training.thrown_body`), checked to be
    at rest in the scene's state: zero velocities, and PyBullet, started there, keeps it within
    ``tolerance`` (m, rad) of its pose until it rests (:func:`reverse.runs.verify.forward_to_rest`).
    A one-line :class:`~workbench.errors.SceneError` naming the body's field otherwise: the
    sampler's precondition (module docstring), checked before any throw is spent."""
    from workbench.errors import SceneError
    from workbench.sim.engine import Engine

    body = thrown_body(scene)
    b = scene.bodies[body]
    for name in ("linear_velocity", "angular_velocity"):
        if any(x != 0.0 for x in getattr(b, name)):
            raise SceneError(
                scene.source,
                f"bodies[{body}].{name}",
                f"expected 0 with --conditioned (the scene's state is the final one, at rest), "
                f"got {list(getattr(b, name))}",
            )
    engine = Engine(scene.with_settings(dt=dt), visual=False)
    try:
        engine.rebuild()
        final = engine.state()
        fwd = forward_to_rest(engine, final, [body], 0.0)  # rest held REST_HOLD, at most 2 s
    finally:
        engine.close()
    dp, da = (
        pose_residual(fwd.position, fwd.orientation, final.position[[body]],
                      final.orientation[[body]])
        if fwd.finite
        else (math.inf, math.inf)
    )  # fmt: skip
    if not (fwd.at_rest and dp <= tolerance[0] and da <= tolerance[1]):
        moved = (
            f"moves it {dp:.3g} m and {math.degrees(da):.3g} deg before it rests"
            if fwd.at_rest
            else f"does not bring it to rest within {fwd.time:.3g} s"
        )
        raise SceneError(
            scene.source,
            f"bodies[{body}].position",
            f"expected {b.name} at rest on the ground with --conditioned (the final state); "
            f"PyBullet started there {moved} (tolerance {tolerance[0]:g} m, "
            f"{math.degrees(tolerance[1]):g} deg)",
        )
    return body


def conditioned_task(world: Callable[[], tuple], settings: dict, entropy: int, i: int):
    """Throw ``i``, conditioned and confirmed (module docstring); a worker's task.

    ``world()`` returns ``(scene, engine)`` (built once per process); ``settings`` holds
    ``duration`` (s), the refinement's ``budget``, ``tolerance`` and ``radius``
    (:func:`reverse.runs.verify.verify_settings`), and ``trajectory`` (bool).
    """

    t0 = time.perf_counter()
    out = ConditionedPast(i, "error")
    try:
        scene, engine = world()
        body = thrown_body(scene)
        duration = float(settings["duration"])
        tol = settings["tolerance"]
        g = np.asarray(scene.gravity, dtype=float)
        up = -g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.array([0.0, 0.0, 1.0])

        # the final state: the scene's own, in this world (its fixed bodies this world's)
        final, release = throw_release(engine, scene, body, entropy, i)

        # 1. the throw, to rest: a plain run first (most throws are rejected), recorded only if
        # kept — the recording is the same run bit for bit (its observer only reads)
        fwd = forward_to_rest(engine, release, [body], duration, settle=0.0)
        out.pybullet_runs = 1
        if not fwd.at_rest:
            out.status, out.message = REJECTED_MOVING, "not at rest at the end of the duration"
            return out
        # 2. the condition: the turn and shift carrying its rest pose onto the final one
        tp, tq = final.position[[body]], final.orientation[[body]]
        turn, centre, shift = gravity_correction(
            fwd.position[0], fwd.orientation[0], tp[0], tq[0], up
        )
        carried_p = turn.apply(fwd.position[0] - centre) + centre + shift
        carried_q = (turn * Rotation.from_quat(fwd.orientation[0])).as_quat()
        dp, da = pose_residual(carried_p[None], carried_q[None], tp, tq)
        out.carry_position, out.carry_angle = dp, da
        if not (dp <= tol[0] and da <= tol[1]):
            out.status = REJECTED_FACE
            out.message = f"rests {dp:.3g} m, {math.degrees(da):.3g} deg off once carried"
            return out
        start = carry_state(release, body, turn, centre, shift)
        out.release = start.packed()
        throw_states, throw_kin, again, _ = record_as_throw(
            engine, scene, body, release, duration, settle=0.0
        )
        out.pybullet_runs += 1
        if not (np.array_equal(again.position, fwd.position) and again.at_rest):
            # never seen: PyBullet's runs are bit-reproducible after a rebuild
            out.status, out.message = "error", "the throw's recording parted from its run"
            return out
        if not settings.get("confirm", True):  # the selection alone: the throw's own records
            out.status, out.earliest = SELECTED, out.release
            out.states = out.throw_states = throw_states
            out.kinematics = out.throw_kinematics = throw_kin
            return out
        # 3. confirmed by PyBullet: the refinement of ``workbench reverse --verify``
        res = verify_in(
            lambda: (scene, engine),
            settings,
            entropy,
            (i, i, out.release, final.packed(), duration),
        )
        out.pybullet_runs += res.pybullet_runs
        out.status, out.message = res.status, res.message
        if res.status != "refined":
            return out
        best = State.from_packed(res.state)
        states, kin, fwd2, traj = record_as_throw(
            engine, scene, body, best, duration, trajectory=bool(settings["trajectory"]),
            settle=0.0,
        )  # fmt: skip
        out.pybullet_runs += 1
        dp2, da2 = pose_residual(fwd2.position, fwd2.orientation, tp, tq)
        if not (fwd2.at_rest and (dp2, da2) == (res.residual_position, res.residual_angle)):
            # never seen: PyBullet's runs are bit-reproducible after a rebuild
            out.status, out.message = "error", f"replay rests {dp2:.3g} m, {da2:.3g} rad off"
            return out
        out.residual_position, out.residual_angle, out.rest_time = dp2, da2, fwd2.time
        out.earliest, out.states, out.kinematics, out.trajectory = res.state, states, kin, traj
        out.throw_states, out.throw_kinematics = throw_states, throw_kin
        return out
    except Exception as exc:  # noqa: BLE001 - recorded as the throw's outcome
        out.status, out.message = "error", f"{type(exc).__name__}: {exc}"
        return out
    finally:
        out.seconds = time.perf_counter() - t0


def _task(world_key, settings: dict, entropy: int, i: int) -> ConditionedPast:
    return conditioned_task(_world_of(world_key), settings, entropy, i)


def _world_of(world_key) -> Callable[[], tuple]:
    """``world()`` for ``world_key``: ``("training", (path, overrides, dt))`` the training's
    world (:func:`reverse.pasts.training.training_world`: the throws' own, planes as box
    bodies), or ``("scene", SceneRef)`` the scene as ``workbench run`` builds it
    (:func:`reverse.runs.verify.scene_world`)."""
    kind, what = world_key
    if kind == "training":
        return lambda: training_world(what)[:2]
    if kind != "scene":
        raise ValueError(f"unknown world {kind!r}")
    return lambda: scene_world(what)


def conditioned_pasts(
    world_key,
    n: int,
    entropy: int,
    *,
    duration: float,
    settings: dict | None = None,
    max_throws: int | None = None,
    trajectory: bool = False,
    confirm: bool = True,
    workers: int = 1,
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[ConditionedPast], list[ConditionedPast]]:
    """The first ``n`` confirmed pasts in throw order, and every throw tried (module docstring).

    Parameters
    ----------
    world_key : tuple
        ``("training", (scene path, overrides tuple, dt))`` or ``("scene", SceneRef)``: the
        PyBullet world of the throws and the refinement.
    n : int
        Pasts wanted.
    entropy : int
        Seed entropy: throw ``i`` draws from ``(entropy, i)``, its refinement ``(entropy, i, 2)``.
    duration : float
        Span of every past, s: the throw must rest by then.
    settings : dict, optional
        :func:`reverse.runs.verify.verify_settings` (default: its defaults with a budget of
        :data:`CONDITIONED_BUDGET`).
    max_throws : int, optional
        Most throws (default :data:`MAX_THROWS_PER_PAST` · ``n``).
    trajectory : bool
        Keep every body's state per record of the kept pasts (for a file).
    confirm : bool
        Carry and refine (default). ``False``: keep the selected throws as they are
        (:data:`SELECTED`; no refinement, no trajectory): forward throws that end at the final
        pose's face, the reference of the conditioning.
    workers, scheduler
        As for ensembles (:func:`reverse.runs.workers.fan_out`).
    progress : callable, optional
        ``progress(kept, n)`` as confirmed pasts arrive (in completion order).

    Returns
    -------
    kept, tried
        The kept pasts (at most ``n``, in throw order) and every throw tried, in throw order
        (a prefix ``0 … m − 1`` of the throws: the same for any number of workers).
    """

    if int(n) != n or n < 1:
        raise ValueError(f"expected at least 1 past, got {n}")
    limit = MAX_THROWS_PER_PAST * int(n) if max_throws is None else int(max_throws)
    if limit < 1:
        raise ValueError(f"expected max_throws of at least 1, got {max_throws}")
    settings = {
        **(settings or verify_settings(CONDITIONED_BUDGET)),
        "duration": float(duration),
        "trajectory": bool(trajectory),
        "settle": 0.0,  # a past is at the final pose at the end of its span: at rest by then
        "confirm": bool(confirm),
    }
    results: dict[int, ConditionedPast] = {}
    kept = [0]

    def todo():
        # throws in ascending order until n are confirmed among those finished; the ones in
        # flight then finish too, so every index below the last handed out has an outcome
        for i in range(limit):
            if kept[0] >= n:
                return
            yield i

    args = (world_key, settings, int(entropy))
    for res in fan_out(_task, args, todo(), workers=workers, scheduler=scheduler, n_tasks=limit):
        if not res.kept:  # the bulky arrays of rejected throws are not kept
            res.release = None
        results[res.throw] = res
        if res.kept:
            kept[0] += 1
            if progress is not None:
                progress(min(kept[0], n), n)
    tried = [results[i] for i in sorted(results)]
    assert [r.throw for r in tried] == list(range(len(tried)))  # a prefix of the throws
    chosen = [r for r in tried if r.kept][:n]
    if len(chosen) == n:  # throws after the n-th kept one depend on the workers: dropped
        tried = tried[: chosen[-1].throw + 1]
    return chosen, tried


def conditioned_summary(kept: list[ConditionedPast], tried: list[ConditionedPast], n: int) -> dict:
    """What a conditioned sample took, for a JSON file (no wall times). The residuals and the
    refinement's runs are those of the refined (confirmed) pasts; a sample of selected throws
    (``confirm=False``) has none."""
    by: dict[str, int] = {}
    for r in tried:
        by[r.status] = by.get(r.status, 0) + 1
    on_face = [r for r in tried if r.status not in (REJECTED_MOVING, REJECTED_FACE)]
    refined = [r for r in kept if r.status == "refined"]

    def median(xs):
        return float(np.median(xs)) if len(xs) else None

    return {
        "asked": int(n),
        "kept": len(kept),
        "throws": len(tried),
        "by_status": dict(sorted(by.items())),
        "face_share": len(on_face) / len(tried) if tried else None,
        "refined_share_on_face": len(refined) / len(on_face) if on_face else None,
        "pybullet_runs": int(sum(r.pybullet_runs for r in tried)),
        "pybullet_runs_per_kept": (
            sum(r.pybullet_runs for r in tried) / len(kept) if kept else None
        ),
        "median_residual_position_m": median([r.residual_position for r in refined]),
        "median_residual_angle_deg": (
            math.degrees(median([r.residual_angle for r in refined])) if refined else None
        ),
        # the throw, its recording and the past's recording: the other three PyBullet runs
        "refinement_runs_per_kept": (
            float(np.mean([r.pybullet_runs - 3 for r in refined])) if refined else None
        ),
    }


# ----------------------------------------------------------------------------- the sampler
@dataclass(frozen=True)
class ConditionedPasts:
    """Conditioned forward pasts as a sampler of pasts
    (:class:`reverse.runs.sampler.PastSampler`; module docstring).

    Attributes
    ----------
    duration : float
        Span of every past, s.
    settings : dict, optional
        The refinement's (:func:`reverse.runs.verify.verify_settings`; default: its defaults
        with a budget of :data:`CONDITIONED_BUDGET`).
    world : {"training", "scene"}
        The PyBullet world of the throws and the refinement: the training's (the throws' own,
        planes as box bodies; the measure's) or the scene as ``workbench run`` builds it
        (``workbench pasts``).
    dt : float, optional
        Step of the training's world, s (required with ``world="training"``).
    max_throws : int, optional
        Most throws (default :data:`MAX_THROWS_PER_PAST` · ``n``).
    trajectory : bool
        Keep every body's state per record of the kept pasts (for a file).
    confirm : bool
        Carry and refine (default); ``False`` keeps the selected throws as they are
        (:data:`SELECTED`).
    """

    name: ClassVar[str] = "conditioned"
    description: ClassVar[str] = (
        "conditioned forward pasts: throws resting on the final pose's face at the end of the "
        "duration, carried onto it by the flat ground's symmetry, confirmed by PyBullet "
        "(reverse/pasts/conditioned.py)"
    )
    duration: float
    settings: dict | None = None
    world: str = "training"
    dt: float | None = None
    max_throws: int | None = None
    trajectory: bool = False
    confirm: bool = True

    def sample(self, scene, n: int, entropy: int, *, workers: int = 1,
               scheduler: str | None = None, progress=None) -> Pasts:  # fmt: skip
        """The first ``n`` confirmed pasts of ``scene`` (a :class:`workbench.ensemble.run.
        SceneRef`) in throw order (:func:`conditioned_pasts`)."""
        t0 = time.perf_counter()
        if self.world == "training":
            key = ("training", (str(scene.path), tuple(scene.overrides), float(self.dt)))
        else:
            key = ("scene", scene)
        kept, tried = conditioned_pasts(
            key, n, entropy, duration=self.duration, settings=self.settings,
            max_throws=self.max_throws, trajectory=self.trajectory, confirm=self.confirm,
            workers=workers, scheduler=scheduler, progress=progress,
        )  # fmt: skip
        return Pasts(
            self.name,
            [RunRecord(r.states, r.kinematics) for r in kept],
            conditioned_summary(kept, tried, n),
            outcomes=tried,
            kept=kept,
            earliest=[r.earliest for r in kept],
            entropy=int(entropy),
            seconds=time.perf_counter() - t0,
        )

    @staticmethod
    def report(summary: dict) -> list[str]:
        """What the sample took, in a few lines (for
        :func:`reverse.pasts.measure.format_measurement`)."""
        s = summary
        statuses = ", ".join(f"{k} {x}" for k, x in s["by_status"].items())
        lines = [
            f"kept {s['kept']} of {s['asked']} asked from {s['throws']} throws ({statuses}); "
            f"on the face {s['face_share']:.3g} of throws, {s['refined_share_on_face']:.3g} of "
            "those confirmed"
            if s["throws"]
            else "no throws"
        ]
        if s["kept"] and s.get("refinement_runs_per_kept") is not None:
            lines.append(
                f"PyBullet runs per kept past {s['pybullet_runs_per_kept']:.3g} (refinement "
                f"{s['refinement_runs_per_kept']:.3g}); median residual "
                f"{s['median_residual_position_m']:.3g} m, "
                f"{s['median_residual_angle_deg']:.3g} deg"
                + (
                    f"; earliest states inside the throws' release law: "
                    f"{s['earliest_in_release_law']} of {s['kept']}"
                    if "earliest_in_release_law" in s
                    else ""
                )
            )
        return lines
