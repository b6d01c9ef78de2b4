"""Reverse runs: step a scene backward from its (final) state and return the motion in forward
time order (Twigg & James 2008 §3); and the forward mirror of the same stepper, for comparison
with PyBullet.

The scene's poses and velocities are the state at the *end* of the motion. Body forces are
gravity and the constant ``force``/``torque`` of each body; joints are supported (Baumgarte sign
reversed backward). Velocity-dependent or time-dependent inputs (drag, spring-dampers, prescribed
motion) and URDF bodies are refused with a one-line error: the steps would not be mirrors.
"""

from __future__ import annotations

import gc
import math
import operator
from dataclasses import dataclass, replace

import numpy as np

from reverse.goals.hints import Hint, HintPolicy, free_overrides
from reverse.goals.markov import TransitionModel
from reverse.goals.policy import MarkovPolicy
from reverse.lcp.solve import LCPError
from reverse.runs.allowances import (
    bounce_cap,
    final_state_allowances,
    hint_allowances,
    table_allowance,
)
from reverse.runs.audit import Audit, audit_run, body_radii, mechanical_energy
from reverse.runs.contacts import ContactDetector
from reverse.step.dynamics import RigidBodies
from reverse.step.joints import JointModel
from reverse.step.stepper import Stepper, StepReport, StepSettings
from workbench.errors import SceneError
from workbench.scene.model import WORLD, Scene
from workbench.sim.forward import Overlap, run_scene
from workbench.sim.forward import start_overlap as forward_start_overlap
from workbench.sim.observers import kinetic_energy
from workbench.sim.state import (
    MAX_COORDINATE,
    State,
    Trajectory,
    state_in_bounds,
    state_problems,
)

__all__ = [
    "ReverseResult",
    "RunPlan",
    "MAX_REVERSE_STEPS",
    "MAX_REVERSE_MEMORY",
    "reverse_steps",
    "plan_reverse_run",
    "start_overlap",
    "check_reversible",
    "build_stepper",
    "stepper_on",
    "run_reverse",
    "run_forward_mirror",
    "stitch_forward",
    "moved_bodies",
    "step_settings",
]

# --- the size of a run, estimated before it starts (issue 21: refuse above a bound, with numbers)

#: Most backward steps of one run the command line starts without ``--force``: 50 times the
#: longest shipped example (2000 steps, ``brick_stack`` 2 s back at 1 ms), and at least 200 s of
#: stepping even for the smallest scene (:data:`SECONDS_PER_STEP`). Longer requests are usually
#: unit slips (``--duration 1e4``, ``--dt 1e-12``), which ran unbounded with no estimate.
MAX_REVERSE_STEPS = 100_000

#: Most memory the records of a run (or of the runs held at once) may take, by the estimate of
#: :func:`plan_reverse_run`, bytes: a quarter of a laptop's 8 GiB, so a run never pushes a
#: machine into swap. The states are kept in memory until the file is written.
MAX_REVERSE_MEMORY = 2 * 1024**3

#: Wall time of one backward step of a small scene, s: ``reverse_landing`` with its hints
#: (3 moving bodies in contact) ran 1000 steps at 494 steps/s (``benchmarks``-free measurement
#: with ``run_reverse``, 2 cores shared with another job, load 3.7); at rest it runs 1138 steps/s.
SECONDS_PER_STEP = 2.0e-3

#: Wall time per body and step, s: the whole ``spelling_balls`` demo (4368 bodies, 360 steps)
#: took 26.9 and 31.4 s in two idle runs of the same code (``benchmarks/spelling.py``,
#: docs/reverse.md "Cost", issue 17's fourth round): 17–20 µs per body and step (the first
#: round's 118.9 s gave 76 µs). Islands of many touching bodies take far more (docs/reverse.md
#: "Cost"), so the estimate is a lower bound there.
SECONDS_PER_BODY_STEP = 2.0e-5

#: Memory per recorded state and body, bytes: the record (13 float64, 104 B) in the run's
#: preallocated arrays, and the island log's rows (114 B per island and step, an island per
#: few bodies); tracemalloc peaks of ``spelling_balls`` (4368 bodies) after 3, 9 and 27 steps
#: grew by 107 and 117 B per body and step (2026-11-27, after the records were preallocated; the
#: earlier list of :class:`State` objects stacked once took 217 B).
BYTES_PER_BODY_STEP = 120

#: Memory per recorded state independent of the bodies, bytes: diagnostics and the island log;
#: ``reverse_landing`` (4 bodies) after 100, 300 and 900 steps grew by 0.88 kB per step, 0.41 kB
#: of it not its bodies' share, rounded up.
BYTES_PER_STEP = 500


def reverse_steps(duration: float, dt: float, option: str = "--duration") -> float:
    """Number of steps of ``dt`` in ``duration`` (a float: it may be astronomically large).

    Raises :class:`SceneError` naming ``option`` when it is not finite (that cannot be forced)
    or below one step.
    """
    n = float(duration) / float(dt)
    if not math.isfinite(n):
        raise SceneError(
            option,
            "",
            f"{duration:g} s at dt = {dt:g} s is too many backward steps to count (the bound is "
            f"{MAX_REVERSE_STEPS:,} steps)",
        )
    n = round(n)
    if n < 1:
        raise SceneError(option, "", f"expected at least one step of {dt:g} s, got {duration:g} s")
    return float(n)


@dataclass(frozen=True)
class RunPlan:
    """What a reverse run will cost, estimated before it starts (:func:`plan_reverse_run`).

    Attributes
    ----------
    steps : float
        Backward steps of one run.
    seconds : float
        Estimated wall time of all runs on one core, s (a lower bound).
    memory : float
        Estimated memory of the records held at once, bytes.
    """

    steps: float
    seconds: float
    memory: float
    runs: int = 1

    def problem(self, kind: str = "backward") -> str:
        """Why the run is refused without ``--force`` ('' when it is not). ``kind="forward"``
        speaks of PyBullet's forward steps (``--then-forward``), whose time is not estimated
        (they are much faster than backward ones)."""
        each, total = (" each", " in all") if self.runs > 1 else ("", "")
        took = (
            f"about {_duration(self.seconds)}{total} on one core and " if kind != "forward" else ""
        )
        records = _bytes(self.memory)
        size = f"{count_text(self.steps)} {kind} steps{each}, {took}{records} of records"
        if self.steps > MAX_REVERSE_STEPS:
            return f"{size}: above the bound of {MAX_REVERSE_STEPS:,} steps"
        if self.memory > MAX_REVERSE_MEMORY:
            return f"{size}: above the bound of {_bytes(MAX_REVERSE_MEMORY)} of records"
        return ""


def plan_reverse_run(
    duration: float,
    dt: float,
    n_bodies: int,
    *,
    runs: int = 1,
    held: int = 1,
    option: str = "--duration",
) -> RunPlan:
    """Estimate a reverse run (or ``runs`` sampled runs, ``held`` of them in memory at once)
    from the measured rates :data:`SECONDS_PER_STEP`, :data:`SECONDS_PER_BODY_STEP`,
    :data:`BYTES_PER_STEP` and :data:`BYTES_PER_BODY_STEP`."""
    steps = reverse_steps(duration, dt, option)
    seconds = runs * steps * (SECONDS_PER_STEP + SECONDS_PER_BODY_STEP * n_bodies)
    memory = held * (steps + 1) * (BYTES_PER_STEP + BYTES_PER_BODY_STEP * n_bodies)
    return RunPlan(steps, seconds, memory, runs)


#: ``--contacts`` rules (a scene's ``reverse.contacts``): the argument of :func:`run_reverse` or
#: the :class:`~reverse.step.stepper.StepSettings` field each sets, and its value. The names are
#: the scene model's ``workbench.scene.model.CONTACT_RULES``.
CONTACT_RULES = {
    "persist": ("persist_contacts", True),
    "joint-unit-restitution": ("joint_unit_restitution", True),
    "no-free-to-bounce": ("free_to_bounce", False),
    "bounce-apart": ("bounce_apart", True),
    "separate": ("separate", True),
    "cap-bounces": ("cap_bounces", True),
}


def contact_rules(rules) -> dict:
    """The settings the ``--contacts`` ``rules`` (names of :data:`CONTACT_RULES`) give, every
    rule's setting included (off when not named); ``ValueError`` naming an unknown rule."""
    out = {name: not value for name, value in CONTACT_RULES.values()}
    for rule in rules:
        if rule not in CONTACT_RULES:
            raise ValueError(f"expected rules among {', '.join(CONTACT_RULES)}, got {rule!r}")
        name, value = CONTACT_RULES[rule]
        out[name] = value
    return out


#: The contact rules that are options of a run (:func:`run_reverse`), not of a step.
RUN_RULES = ("persist_contacts", "cap_bounces")


def step_settings(
    dt: float,
    contacts=(),
    *,
    restitution_blend: float = 0.0,
    angular_damping: float = 0.0,
    linear_damping: float = 0.0,
    slip_damping: float = 0.0,
    attract: bool = False,
) -> tuple[StepSettings, dict]:
    """The :class:`StepSettings` of the plausibility controls and the ``contacts`` rules (names of
    :data:`CONTACT_RULES`), and the :func:`run_reverse` options the rules ask for
    (``persist_contacts``, ``cap_bounces``, only those set): what ``workbench reverse`` builds
    from its options and the scene's ``reverse:`` section. ``ValueError`` names an unknown
    rule."""
    rules = contact_rules(contacts)
    run = {name: True for name in RUN_RULES if rules.pop(name)}
    settings = StepSettings(
        dt,
        restitution_blend=restitution_blend,
        angular_damping=angular_damping,
        linear_damping=linear_damping,
        slip_damping=slip_damping,
        attract=attract,
        **rules,
    )
    return settings, run


def count_text(n: float) -> str:
    """A count for a message: with thousands separators, or three digits when huge."""
    return f"{int(n):,}" if n < 1e15 else f"{n:.3g}"


def _duration(seconds: float) -> str:
    for unit, size in (("years", 3.156e7), ("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.2g} s"


def _bytes(n: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def start_overlap(scene: Scene) -> Overlap:
    """The deepest overlap between two bodies in the scene's state (the final state of a reverse
    run): :func:`workbench.sim.forward.start_overlap` of a scene that can be reversed."""
    check_reversible(scene)
    return forward_start_overlap(scene)


#: Diagnostics recorded per state, in forward time order (the step *into* each state backward;
#: the scene's own state, the last record, has no step into it: its contact count, islands and
#: sleeping bodies are those a step sees there (:meth:`reverse.step.stepper.Stepper.survey`), its
#: LCP and orientation columns 0). ``orientation_iterations`` and ``orientation_residual``: the
#: backward orientation solve (:func:`reverse.step.integration.backward_configuration`; forward
#: mirror runs: 0). ``overlap_bodies``, ``overlap_static`` (m): the deepest interpenetration at the
#: record's configuration; ``control_energy`` (J): what the velocity controls injected into the
#: step into the record (:mod:`reverse.runs.audit`). :func:`run_reverse` adds
#: ``mechanical_energy`` (J, :func:`reverse.runs.audit.mechanical_energy`).
DIAGNOSTICS = (
    "kinetic_energy",
    "contact_count",
    "islands",
    "sleeping_bodies",
    "lcp_rows_max",
    "lcp_pivots",
    "lcp_failed",
    "lcp_fallbacks",
    "lcp_residual_max",
    "orientation_iterations",
    "orientation_residual",
    "overlap_bodies",
    "overlap_static",
    "control_energy",
)

#: Fields of the per-island LCP log (``/reverse/islands``), one row per island per step.
ISLAND_LOG_DTYPE = np.dtype(
    [
        ("step", "i8"),
        ("time", "f8"),
        ("n_bodies", "i4"),
        ("n_contacts", "i4"),
        ("n_rows", "i4"),
        ("status", "S10"),
        ("pivots", "i4"),
        ("fallback", "S64"),
        ("residual", "f8"),
    ]
)

#: The :class:`~reverse.step.stepper.IslandReport` fields of a log row (all but step and time), read
#: in one C call per island (``operator.attrgetter``) instead of a Python tuple per island; the
#: fixed-width ``S64`` field truncates ``fallback`` to 64 bytes as ``fallback[:64]`` did (its
#: strings are ASCII: the ladder's rung names and the stepper's retry note).
_LOG_FIELDS = ISLAND_LOG_DTYPE.names[2:]
_LOG_ROW = operator.attrgetter(*_LOG_FIELDS)


@dataclass
class ReverseResult:
    trajectory: Trajectory
    island_log: np.ndarray
    timing: dict[str, float]
    #: Seed entropy of the Markov model's draws (``None`` without a model).
    markov_entropy: int | None = None
    #: Contact drops the Markov model drew.
    markov_transitions: int = 0
    #: Reverse time (s before the final state) at which the energy limit was first exceeded.
    energy_exceeded_at: float | None = None
    #: The steps' contact queries by part, s (:attr:`reverse.runs.contacts.ContactDetector.timing`:
    #: PyBullet's resets, detection, reading of the points, our post-processing), inside
    #: ``timing["contacts"]`` rather than beside it (``docs/reverse_figures.py`` sums ``timing``).
    contact_timing: dict[str, float] | None = None
    #: The physical audit of the stored past (:mod:`reverse.runs.audit`; ``None`` for forward
    #: mirror runs).
    audit: Audit | None = None


def check_reversible(scene: Scene) -> None:
    """Refuse what the reverse stepper cannot mirror (one line naming the field)."""
    src = scene.source
    for i, b in enumerate(scene.bodies):
        if b.drag is not None:
            raise SceneError(
                src,
                f"bodies[{i}].drag",
                "drag is velocity dependent; the reverse stepper supports gravity and "
                "constant forces only",
            )
        if b.shape.type == "urdf":
            raise SceneError(
                src, f"bodies[{i}].shape", "URDF bodies are not supported by the reverse stepper"
            )
    if scene.springs:
        raise SceneError(src, "springs", "spring-dampers are not supported by the reverse stepper")
    if scene.prescribed:
        raise SceneError(
            src, "prescribed", "prescribed motion is not supported by the reverse stepper"
        )


def _rigid(scene: Scene, detector: ContactDetector) -> RigidBodies:
    frames = detector.engine.frames
    mass = np.array([f.mass for f in frames])
    inertia = np.stack([f.inertia for f in frames])
    g = np.asarray(scene.gravity, dtype=float)
    force = mass[:, None] * g
    torque = np.zeros((len(frames), 3))
    for k, b in enumerate(scene.bodies):
        if mass[k] > 0:
            if b.force is not None:
                force[k] += b.force
            if b.torque is not None:
                torque[k] += b.torque
    return RigidBodies(scene.body_names, mass, inertia, force, torque)


def initial_state(scene: Scene, detector: ContactDetector) -> State:
    """The scene's state (COM positions, body-frame orientations, velocities)."""
    return detector.engine.state()


def build_stepper(
    scene: Scene,
    settings: StepSettings,
    *,
    seed: int | None = None,
    free_override: np.ndarray | None = None,
    persist_contacts: bool = False,
) -> tuple[Stepper, ContactDetector, State]:
    check_reversible(scene)
    rng = None if seed is None else np.random.default_rng(seed)
    detector = ContactDetector(scene, rng=rng, persist=persist_contacts)
    state = initial_state(scene, detector)
    return stepper_on(scene, detector, settings, state, free_override), detector, state


def stepper_on(
    scene: Scene,
    detector: ContactDetector,
    settings: StepSettings,
    state: State,
    free_override: np.ndarray | None = None,
) -> Stepper:
    """A :class:`Stepper` of ``scene`` on an existing contact ``detector`` (its engine is the
    costly part: the particle filter of :mod:`reverse.smc` keeps one per process); ``state``
    places the joints' anchors."""
    rigid = _rigid(scene, detector)
    joints = None
    if scene.joints:
        names = scene.body_names
        defs = []
        for jt in scene.joints:
            a = names.index(jt.child)
            b = -1 if jt.parent == WORLD else names.index(jt.parent)
            defs.append((jt.type, a, b, jt.anchor, jt.axis))
        joints = JointModel.from_definitions(defs, state.position, state.orientation, ~rigid.moving)
    return Stepper(rigid, detector, settings, joints, free_override)


def _diag_row(rep: StepReport | None) -> list[float]:
    if rep is None:
        return [0.0] * (len(DIAGNOSTICS) - 1)
    isl = rep.islands
    return [
        float(rep.contacts),
        float(len(isl)),
        float(rep.sleeping),
        float(max((r.n_rows for r in isl), default=0)),
        float(sum(r.pivots for r in isl)),
        float(rep.failed),
        float(rep.fallbacks),
        float(max((r.residual for r in isl), default=0.0)),
        float(rep.fixed_point_iterations),
        float(rep.orientation_residual),
        rep.overlap_bodies,
        rep.overlap_static,
        rep.control_energy,
    ]


#: The fields of :class:`State`, stacked over time into a :class:`Trajectory`.
_STATE_FIELDS = ("position", "orientation", "linear_velocity", "angular_velocity")


#: Records per kinetic-energy evaluation at the end of a run: the per-record sums are the same
#: to the bit for any chunk (each record's bodies are summed alone), and 32 records of the
#: 3875-ball run keep the evaluation's temporaries near 20 MB instead of ~200 MB for all 361.
_KE_CHUNK = 32


def _trajectory(scene, rigid, states, diag_rows, times, status, message) -> Trajectory:
    """``states``: a list of :class:`State`, or the fields already stacked (a dict of arrays
    over the records, :func:`run_reverse`'s preallocated records)."""
    if isinstance(states, dict):
        stacked = states
    else:
        stacked = {f: np.stack([getattr(s, f) for s in states]) for f in _STATE_FIELDS}
    orn, vel, omg = (stacked[f] for f in ("orientation", "linear_velocity", "angular_velocity"))
    n_rec = len(orn)
    ke = np.concatenate(
        [
            kinetic_energy(rigid.mass, rigid.inertia, orn[a:b], vel[a:b], omg[a:b]).sum(axis=1)
            for a in range(0, n_rec, _KE_CHUNK)
            for b in [min(a + _KE_CHUNK, n_rec)]
        ]
        or [np.zeros(0)]
    )
    diag = {"kinetic_energy": ke}
    rows = np.array(diag_rows, dtype=float).reshape(n_rec, len(DIAGNOSTICS) - 1)
    for k, name in enumerate(DIAGNOSTICS[1:]):
        diag[name] = rows[:, k]
    params = {}
    for j, name in enumerate(scene.body_names):
        if rigid.mass[j] > 0:
            params[f"{name}/mass"] = np.array(rigid.mass[j])
            params[f"{name}/inertia"] = rigid.inertia[j].copy()
    return Trajectory(
        time=np.asarray(times, dtype=float),
        body_names=scene.body_names,
        **stacked,
        diagnostics=diag,
        params=params,
        status=status,
        message=message,
    )


def _island_log(rows: list[tuple], steps: list[tuple[int, int]], dt: float) -> np.ndarray:
    """The island log in backward step order: ``rows`` (:data:`_LOG_ROW` of each island) and,
    per step, ``(k, islands)``; step ``k``'s rows get ``step = k`` and ``time = −k·dt``."""
    out = np.zeros(len(rows), dtype=ISLAND_LOG_DTYPE)
    if rows:
        sub = np.array(rows, dtype=[(f, ISLAND_LOG_DTYPE[f]) for f in _LOG_FIELDS])
        for f in _LOG_FIELDS:
            out[f] = sub[f]
        ks = np.array([k for k, _ in steps], dtype=np.int64)
        counts = [c for _, c in steps]
        out["step"] = np.repeat(ks, counts)
        out["time"] = np.repeat(-ks * dt, counts)  # as −k·dt: int to float, then one product
    return out


def _add_timing(total: dict, rep: StepReport) -> None:
    for k, v in rep.timing.items():
        total[k] = total.get(k, 0.0) + v


def _orientation_message(rep: StepReport, reverse_time: float) -> str:
    """The message of a run stopped by an orientation solve that did not converge."""
    return (
        f"the orientation solve of the step to {reverse_time:.6g} s before the final state did "
        f"not converge (residual {rep.orientation_residual:.3g} after "
        f"{rep.fixed_point_iterations} iterations; reverse/step/integration.py); the later "
        "states are kept"
    )


def _unsolved_message(rep: StepReport, reverse_time: float) -> str:
    """The message of a run stopped by islands whose LCP no rung solved."""
    return (
        f"the contact LCP of {rep.unsolved} island(s) was not solved at {reverse_time:.6g} s "
        "before the final state (Lemke, its fallbacks and a frictionless retry failed; see "
        "/reverse/islands); the later states are kept"
    )


def run_reverse(
    scene: Scene,
    *,
    duration: float,
    dt: float | None = None,
    hints: list[Hint] | None = None,
    seed: int | None = None,
    settings: StepSettings | None = None,
    progress=None,
    markov: TransitionModel | None = None,
    energy_limit: float | None = None,
    on_energy: str = "stop",
    persist_contacts: bool = False,
    cap_bounces: bool = False,
) -> ReverseResult:
    """Step ``scene`` backward for ``duration`` seconds.

    Returns the states in forward time order, ``time`` from 0 (the earliest state) to
    ``duration`` (the scene's state); each state's diagnostics describe the backward step that
    produced it (the scene's own state: what a step sees there, :data:`DIAGNOSTICS`). A state
    that would be non-finite ends the run: the states before it are kept and the trajectory is
    marked ``"nonfinite"``. So does a step
    whose contact LCP could not be posed (:class:`~reverse.lcp.solve.LCPError`: NaN or inf rows) or
    was not solved by any rung (the ladder of :func:`reverse.lcp.solve.solve_lcp` and the stepper's
    frictionless retry): status ``"lcp_failed"``, the step's rows of the island log kept with
    step −1 (the state they would have produced is not). So does a step whose orientation solve
    did not converge (:func:`reverse.step.integration.backward_configuration`): status
    ``"unconverged"``. A run is ``"ok"`` only when every step used verified LCP answers
    and converged orientation solves, and every state is finite.

    ``markov`` (opt-in): a contact-transition table (:mod:`reverse.goals.markov`); every step, each
    body in contact that no hint acts on may drop to fewer contacts with the table's
    probability, its separating contacts getting normal goals (Twigg & James 2008 §4). Its draws
    come from ``SeedSequence(seed, spawn_key=(1,))`` (fresh entropy without a seed, returned in
    :attr:`ReverseResult.markov_entropy`), independent of the friction-pyramid draws.

    ``energy_limit`` (J, §4 "Rapid velocity growth"): a guard on the total kinetic energy. When a
    state exceeds it, ``on_energy="stop"`` ends the run there (the states up to the last one
    under the limit are kept, status ``"energy"``); ``"flag"`` runs on and says so in the
    trajectory's message and :attr:`ReverseResult.energy_exceeded_at`.

    ``persist_contacts`` (opt-in): box–box pairs that touched at the previous step and have no
    point now keep their points within the touch tolerance
    (:class:`reverse.runs.contacts.ContactDetector` ``persist``): a block pivoting backward about a
    kept edge keeps it (docs/reverse.md, "Energy-consistent pasts", cause 2).

    ``cap_bounces`` (opt-in): backward collisions approach at most at the speed the scene's
    height, its hints and its own motion allow (:func:`bounce_cap`, set as
    :attr:`StepSettings.bounce_cap <reverse.step.types.StepSettings.bounce_cap>`), which bounds
    the backward bounce pump of a stack coming apart.
    """
    if on_energy not in ("stop", "flag"):
        raise ValueError(f"on_energy: expected 'stop' or 'flag', got {on_energy!r}")
    if energy_limit is not None and not (energy_limit > 0 and np.isfinite(energy_limit)):
        raise SceneError(
            "--energy-limit", "", f"expected a positive number of J, got {energy_limit}"
        )
    dt = scene.settings.dt if dt is None else float(dt)
    if settings is None:
        settings = StepSettings(dt)
    n_steps = int(reverse_steps(duration, dt))
    stepper, detector, state = build_stepper(
        scene,
        settings,
        seed=seed,
        free_override=free_overrides(hints or [], scene.body_names),
        persist_contacts=persist_contacts,
    )
    rigid = stepper.rigid
    if cap_bounces:
        cap = bounce_cap(scene, rigid, hints or [], duration, table_allowance(markov))
        stepper.settings = settings = replace(settings, bounce_cap=cap)
    exceeded_at = None
    policy = HintPolicy(hints or [], scene.body_names, dt, settings.epsilon)
    goals, markov_entropy = policy, None
    if markov is not None:  # the Markov model wraps the hints (policy.reverse_time still set)
        seq = np.random.SeedSequence(seed)
        markov_entropy = int(seq.entropy)
        rng = np.random.default_rng(np.random.SeedSequence(seq.entropy, spawn_key=(1,)))
        goals = MarkovPolicy(markov, policy, rng, dt, settings.epsilon)
    # The records, preallocated and filled from the end (forward time order: the scene's state
    # last), instead of a list of States stacked after the run, which held every record twice
    # at the end (measured with the chunked kinetic energy: the 3875-ball run's peak 926 →
    # 646 MB, benchmarks/spelling.py).
    scene_state = state
    records = {f: np.empty((n_steps + 1, *getattr(state, f).shape)) for f in _STATE_FIELDS}
    for f in _STATE_FIELDS:
        records[f][n_steps] = getattr(state, f)
    n = 1  # records kept
    diag_rows, log, log_steps, timing = [_diag_row(None)], [], [], {}
    pairs = [((-1, -1), (-1, -1))]  # per record, backward order: its deepest overlaps' pairs
    status, message = "ok", ""
    # No cyclic garbage collection during the loop: a step makes no reference cycles worth
    # collecting, and each full collection walks every State kept so far (measured ≈ 2% of the
    # "LO" spelling run); re-enabled (if it was on) in the finally below.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        report_every = max(1, n_steps // 100)
        for k in range(1, n_steps + 1):
            policy.reverse_time = (k - 1) * dt
            try:
                new, rep = stepper.backward(state, goals)
            except LCPError as exc:  # a contact problem that cannot be posed (NaN or inf rows)
                status = "lcp_failed"
                message = (
                    f"the contact LCP of the step to {k * dt:.6g} s before the final state "
                    f"could not be posed ({exc}); the later states are kept"
                )
                break
            _add_timing(timing, rep)
            log.extend(map(_LOG_ROW, rep.islands))
            log_steps.append((k, len(rep.islands)))
            if rep.unsolved:
                status = "lcp_failed"
                message = _unsolved_message(rep, k * dt)
                break
            if not rep.orientation_converged:
                status = "unconverged"
                message = _orientation_message(rep, k * dt)
                break
            if not state_in_bounds(new):  # finite, within MAX_COORDINATE, unit quaternions
                block = new.packed()[None]
                bad = [scene.body_names[j] for j in np.flatnonzero(state_problems(block)[0])]
                status = "nonfinite"
                message = (
                    f"non-finite or out-of-bounds state (beyond {MAX_COORDINATE:g} m, or not a "
                    f"unit quaternion) of body {', '.join(map(repr, bad))} at {k * dt:.6g} s "
                    "before the final state; the later states are kept"
                )
                break
            if energy_limit is not None and exceeded_at is None:
                e = float(
                    kinetic_energy(
                        rigid.mass,
                        rigid.inertia,
                        new.orientation[None],
                        new.linear_velocity[None],
                        new.angular_velocity[None],
                    ).sum()
                )
                if e > energy_limit:
                    exceeded_at = k * dt
                    message = (
                        f"kinetic energy {e:.4g} J exceeded the limit {energy_limit:g} J at "
                        f"{k * dt:.6g} s before the final state"
                    )
                    if on_energy == "stop":
                        status = "energy"
                        message += "; the later states are kept"
                        break
            for f in _STATE_FIELDS:
                records[f][n_steps - k] = getattr(new, f)
            n += 1
            diag_rows.append(_diag_row(rep))
            pairs.append((rep.overlap_bodies_pair, rep.overlap_static_pair))
            state = new
            if progress is not None and k % report_every == 0:
                progress(k, n_steps)
        # the scene's own state: what a step sees there. Surveyed last, because PyBullet keeps
        # contact points from one detection to the next (persistent manifolds): a detection
        # before the first step would change the contacts the steps find.
        contact_timing = dict(detector.timing)  # the steps' queries, not the survey's
        last = stepper.survey(scene_state)
        diag_rows[0] = _diag_row(last)
        pairs[0] = (last.overlap_bodies_pair, last.overlap_static_pair)
    finally:
        if gc_was_enabled:
            gc.enable()
        detector.close()
    times = np.arange(n) * dt
    # forward time order: the earliest state first (a run that stopped early keeps the last n
    # records, copied out of the unused rows)
    first = n_steps + 1 - n
    stacked = {f: a[first:].copy() if first else a for f, a in records.items()}
    del records
    diag_rows.reverse()
    pairs.reverse()
    traj = _trajectory(scene, stepper.rigid, stacked, diag_rows, times, status, message)
    audit, traj.diagnostics["mechanical_energy"] = _audit(
        scene, stepper.rigid, traj, pairs, hints or [], dt, markov
    )
    if traj.status == "ok" and not audit.passed:
        traj.status = "implausible"
        traj.message = "the physical audit failed: " + "; ".join(audit.problems)
    island_log = _island_log(log, log_steps, dt)
    island_log["step"] = n - 1 - island_log["step"] if n else island_log["step"]
    island_log["time"] = times[-1] + island_log["time"] if n else island_log["time"]
    n_drops = goals.transitions if markov is not None else 0
    return ReverseResult(
        traj, island_log, timing, markov_entropy, n_drops, exceeded_at, contact_timing, audit
    )


#: Displacement (m) and speed (m/s, rad/s) below which :func:`moved_bodies` calls a body still:
#: far above the round-off of a body held at rest (1e-12) and far below anything a viewer shows.
STILL = 1e-9


def moved_bodies(traj: Trajectory) -> list[str]:
    """Names of the bodies that move at any record of ``traj`` (away from their last pose, or
    with a speed or spin), by :data:`STILL`; an empty list says the run shows nothing."""
    if not len(traj.time):
        return []
    shift = np.max(np.abs(traj.position - traj.position[-1]), axis=(0, 2))
    speed = np.max(np.abs(traj.linear_velocity), axis=(0, 2))
    spin = np.max(np.abs(traj.angular_velocity), axis=(0, 2))
    moving = (shift > STILL) | (speed > STILL) | (spin > STILL)
    return [name for name, m in zip(traj.body_names, moving, strict=True) if m]


def _kinetic_per_body(rigid: RigidBodies, traj: Trajectory) -> np.ndarray:
    """Kinetic energy per record and body (nt, n), J, in chunks of :data:`_KE_CHUNK` records."""
    n_rec = len(traj.time)
    return np.concatenate(
        [
            kinetic_energy(
                rigid.mass,
                rigid.inertia,
                traj.orientation[a:b],
                traj.linear_velocity[a:b],
                traj.angular_velocity[a:b],
            )
            for a in range(0, n_rec, _KE_CHUNK)
            for b in [min(a + _KE_CHUNK, n_rec)]
        ]
        or [np.zeros((0, len(rigid.mass)))]
    )


def _audit(scene: Scene, rigid: RigidBodies, traj: Trajectory, pairs, hints, dt, markov=None):
    """The physical audit of a reverse run's records (:func:`reverse.runs.audit.audit_run`,
    the allowances of the hints, :func:`hint_allowances`, of the scene's own velocities,
    :func:`final_state_allowances`, and of a Markov table's throws, :func:`table_allowance`)
    and their mechanical energy (J)."""
    names = scene.body_names
    span = float(traj.time[-1]) if len(traj.time) else 0.0
    hint_speed = hint_allowances(scene, hints, span, body_radii(rigid.mass, rigid.inertia))
    hint_speed = np.maximum(hint_speed, np.where(rigid.moving, table_allowance(markov), 0.0))
    if len(traj.time):
        final_speed = np.linalg.norm(traj.linear_velocity[-1], axis=1)
        hint_speed = np.maximum(hint_speed, final_state_allowances(scene, final_speed))
    d = traj.diagnostics
    kinetic = _kinetic_per_body(rigid, traj)
    energy = mechanical_energy(
        rigid.mass, kinetic, rigid.force, traj.position, traj.linear_velocity, dt
    )
    audit = audit_run(
        body_names=names,
        time=traj.time,
        position=traj.position,
        linear_velocity=traj.linear_velocity,
        angular_velocity=traj.angular_velocity,
        kinetic=kinetic,
        energy=energy,
        mass=rigid.mass,
        inertia=rigid.inertia,
        force=rigid.force,
        gravity=np.asarray(scene.gravity, dtype=float),
        dt=dt,
        overlap_bodies=d["overlap_bodies"],
        overlap_static=d["overlap_static"],
        control_energy=d["control_energy"],
        overlap_pairs=pairs,
        hint_speed=hint_speed,
    )
    return audit, energy


def run_forward_mirror(
    scene: Scene,
    *,
    duration: float | None = None,
    dt: float | None = None,
    settings: StepSettings | None = None,
    record_every: int = 1,
) -> ReverseResult:
    """Step ``scene`` *forward* with the reverse stepper's own forward step (Eq. 2–6), from its
    state: the mirror used to compare our contact laws with PyBullet's."""
    dt = scene.settings.dt if dt is None else float(dt)
    duration = scene.settings.duration if duration is None else float(duration)
    if settings is None:
        settings = StepSettings(dt, sleep=False)
    n_steps = int(reverse_steps(duration, dt))
    stepper, detector, state = build_stepper(scene, settings)
    states, diag_rows, timing, times = [state], [_diag_row(None)], {}, [0.0]
    status, message = "ok", ""
    try:
        for k in range(1, n_steps + 1):
            try:
                state, rep = stepper.forward(state)
            except LCPError as exc:
                status = "lcp_failed"
                message = f"contact LCP not posed at t = {k * dt:.6g} s ({exc})"
                break
            _add_timing(timing, rep)
            if rep.unsolved:
                status = "lcp_failed"
                message = (
                    f"contact LCP of {rep.unsolved} island(s) not solved at t = {k * dt:.6g} s"
                )
                break
            if not state_in_bounds(state):
                status = "nonfinite"
                message = f"non-finite or out-of-bounds state at t = {k * dt:.6g} s"
                break
            if k % record_every == 0:
                states.append(state)
                diag_rows.append(_diag_row(rep))
                times.append(k * dt)
        diag_rows[0] = _diag_row(stepper.survey(states[0]))  # last: see run_reverse
    finally:
        detector.close()
    traj = _trajectory(scene, stepper.rigid, states, diag_rows, times, status, message)
    return ReverseResult(traj, np.zeros(0, dtype=ISLAND_LOG_DTYPE), timing)


def stitch_forward(reverse: Trajectory, scene: Scene, duration: float, dt: float) -> Trajectory:
    """The reverse run followed by ``duration`` seconds of PyBullet forward simulation from the
    scene's state — one trajectory through an intermediate frame (the CRASH example, [1] §5).

    ``reverse`` ends at the scene's state (as :func:`run_reverse` returns it); the forward run
    starts there at the same ``dt`` and its records follow, every step. Diagnostics of the
    forward part: the kinetic energy, PyBullet's contact count when the scene observes it
    (else NaN), and zeros for the LCP columns (PyBullet solved those steps).
    """
    fwd = run_scene(scene.with_settings(dt=dt, duration=float(duration), record_every=1))
    n = len(reverse.body_names)
    mass = np.zeros(n)
    inertia = np.tile(np.eye(3), (n, 1, 1))
    for j, name in enumerate(reverse.body_names):
        if f"{name}/mass" in reverse.params:
            mass[j] = float(reverse.params[f"{name}/mass"])
            inertia[j] = reverse.params[f"{name}/inertia"]
    tail = slice(1, None)  # the forward run's first record is the scene's state again
    ke = kinetic_energy(
        mass,
        inertia,
        fwd.orientation[tail],
        fwd.linear_velocity[tail],
        fwd.angular_velocity[tail],
    ).sum(axis=1)
    m = ke.size
    diag = {}
    for key, values in reverse.diagnostics.items():
        if key == "kinetic_energy":
            extra = ke
        elif key == "contact_count":
            extra = np.asarray(fwd.diagnostics.get("contact_count", np.full(m + 1, np.nan)))[tail]
        elif key == "mechanical_energy":
            per_body = kinetic_energy(
                mass,
                inertia,
                fwd.orientation[tail],
                fwd.linear_velocity[tail],
                fwd.angular_velocity[tail],
            )
            force = mass[:, None] * np.asarray(scene.gravity, dtype=float)
            for k, b in enumerate(scene.bodies):
                if mass[k] > 0 and b.force is not None:
                    force[k] += b.force
            extra = mechanical_energy(
                mass, per_body, force, fwd.position[tail], fwd.linear_velocity[tail], dt
            )
        else:
            extra = np.zeros(m)
        diag[key] = np.concatenate([values, extra])

    def cat(a, b):
        return np.concatenate([a, b[tail]], axis=0)

    return Trajectory(
        time=np.concatenate([reverse.time, reverse.time[-1] + fwd.time[tail]]),
        body_names=reverse.body_names,
        position=cat(reverse.position, fwd.position),
        orientation=cat(reverse.orientation, fwd.orientation),
        linear_velocity=cat(reverse.linear_velocity, fwd.linear_velocity),
        angular_velocity=cat(reverse.angular_velocity, fwd.angular_velocity),
        diagnostics=diag,
        params=dict(reverse.params),
        status=fwd.status,
        message=fwd.message,
    )
