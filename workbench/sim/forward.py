"""Forward runs: step a scene in PyBullet and record a :class:`~workbench.sim.state.Trajectory`.

Records are taken every ``settings.record_every`` steps, starting with the initial state. A run
whose state becomes non-finite stops there: the trajectory keeps the records before it and says
which body and time (``status="nonfinite"``). So does a state PyBullet has saturated rather than
overflowed (a coordinate beyond :data:`MAX_COORDINATE`) or a quaternion that is no longer a
rotation: a run never ends ``ok`` with a state that is not a motion.

Before a run, :func:`run_size_problem` estimates its steps and the memory of its records and
:func:`run_scene` refuses one beyond :data:`MAX_STEPS` or :data:`MAX_RECORD_BYTES` unless told
``force=True`` (``--force`` on the command line).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from workbench.errors import SceneError, SimulationError
from workbench.scene.model import Scene
from workbench.sim.engine import Engine
from workbench.sim.observers import kinetic_energy, observer_channel, observer_info
from workbench.sim.state import (
    MAX_COORDINATE,
    QUATERNION_NORM_TOL,
    Trajectory,
    first_state_problem,
    state_problem_text,
    state_problems,
)

__all__ = [
    "run_scene",
    "record_times",
    "run_size_problem",
    "check_run_size",
    "MAX_STEPS",
    "MAX_RECORD_BYTES",
    "MAX_COORDINATE",
    "QUATERNION_NORM_TOL",
    "Overlap",
    "OVERLAP_WARNING",
    "start_overlap",
]

#: Depth of overlap between two bodies in a scene's state above which a run warns, m. PyBullet's
#: own forward runs of the shipped scenes leave resting bodies at most 0.54 mm inside each other
#: (``brick_stack``'s end state; 1.8 mm only mid-impact, ``bouncing_ball``), and the shipped
#: scenes start with no overlap at all; 1 mm is twice the deepest resting overlap, so a deeper
#: start was not reached by a physical motion: PyBullet pushes it apart in the first steps
#: (forward) or nothing does (the velocity-level backward steps of ``reverse``).
OVERLAP_WARNING = 1.0e-3


@dataclass(frozen=True)
class Overlap:
    """The deepest overlap between two bodies of a scene's state (:func:`start_overlap`).

    Attributes
    ----------
    depth : float
        Penetration depth, m (0 when no bodies overlap).
    bodies : tuple of str
        The two bodies (empty when ``depth`` is 0).
    """

    depth: float
    bodies: tuple[str, ...] = ()

    def warning(self, source) -> str | None:
        """The line to print when the overlap is deeper than :data:`OVERLAP_WARNING`, or None."""
        if self.depth <= OVERLAP_WARNING:
            return None
        a, b = self.bodies
        return (
            f"warning: {source}: bodies {a!r} and {b!r} overlap by {self.depth:.3g} m in the "
            f"scene's state (more than {OVERLAP_WARNING:g} m, which no resting contact reaches); "
            "the run goes ahead from it as given"
        )


def start_overlap(scene: Scene, engine: Engine | None = None) -> Overlap:
    """The deepest overlap between two bodies (not both fixed) in the scene's state, from
    PyBullet's contact distances; compare with :data:`OVERLAP_WARNING`.

    ``engine`` is an engine holding ``scene`` in that state; by default one is built and closed.
    """
    own = engine is None
    engine = Engine(scene) if own else engine
    try:
        engine.detect_collisions()
        fixed = [b.fixed for b in scene.bodies]
        rows = [
            r for r in engine.contact_rows(max_distance=0.0) if not (fixed[r[0]] and fixed[r[1]])
        ]
    finally:
        if own:
            engine.close()
    deepest = min(rows, key=lambda r: r[5], default=None)
    if deepest is None or not deepest[5] < 0:
        return Overlap(0.0)
    names = scene.body_names
    return Overlap(float(-deepest[5]), (names[deepest[0]], names[deepest[1]]))


_ACCELERATIONS = ("point_acceleration", "com_acceleration", "angular_acceleration")


#: Measured speed of a forward run, steps/s: one sphere, a record every step, 95 000 steps/s on
#: the development machine with both cores busy (10 bodies: 18 000; a record every 100 steps:
#: 500 000). Only the time estimates in messages use it.
STEPS_PER_SECOND = 1e5

#: Most steps a run takes without ``force``: about 17 minutes at :data:`STEPS_PER_SECOND`. The
#: longest shipped scene takes 5 000 steps and the forward benchmark stretches scenes to a few
#: seconds of stepping (10^5 to 10^6 steps); a count past this bound is almost always a typo in
#: ``dt`` or ``duration`` (``dt: 1.0e-12`` in the falling-object scene is 5e12 steps: 579 days
#: of stepping, and 3.6 TiB for its record times alone).
MAX_STEPS = 10**8

#: Values stored per body and record: position (3), orientation (4), linear and angular
#: velocity (3 + 3), 8 bytes each.
RECORD_VALUES = 13

#: Most bytes of recorded states (records x bodies x 13 x 8) a run keeps without ``force``. A run
#: holds about ten times that while it runs (measured: 9 to 11 times, its records kept as Python
#: floats until the end), so 128 MiB keeps a run's peak near 1.3 GiB, within a laptop's or a CI
#: runner's memory; the largest shipped scene records 0.2 MB.
MAX_RECORD_BYTES = 128 * 2**20


def _duration_text(seconds: float) -> str:
    """``"17 minutes"``, ``"5.8 days"``, ... for messages."""
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("hours", 3600)):
        if seconds >= 2 * size:
            return f"{seconds / size:.3g} {unit}"
    if seconds >= 120:
        return f"{seconds / 60:.3g} minutes"
    return f"{seconds:.3g} s"


def _bytes_text(n: float) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.3g} bytes"


def run_size_problem(scene: Scene) -> str | None:
    """Why a run of ``scene`` is too large, estimated before it starts, or None.

    Steps are ``duration / dt`` (at most 2^53: the scene's settings say so); records
    ``steps / record_every + 1``; recorded bytes ``records x bodies x 13 x 8``.

    Returns
    -------
    str or None
        The numbers and the limit, or None when the run is within :data:`MAX_STEPS` and
        :data:`MAX_RECORD_BYTES`.
    """
    st = scene.settings
    steps = st.n_steps
    what = f"dt {st.dt:g} s over {st.duration:g} s is {steps:.3g} steps"
    if steps > MAX_STEPS:
        return (
            f"{what} (about {_duration_text(steps / STEPS_PER_SECOND)} at the measured "
            f"~{STEPS_PER_SECOND:,.0f} steps/s); the limit is {MAX_STEPS:.3g} "
            f"(about {_duration_text(MAX_STEPS / STEPS_PER_SECOND)})"
        )
    records = steps // st.record_every + 1
    n = len(scene.tracked_names)  # the bodies and the tracked links of URDF bodies
    size = records * n * RECORD_VALUES * 8
    if size > MAX_RECORD_BYTES:
        return (
            f"{records:.3g} records (every {st.record_every} of {steps:.3g} steps) of {n} "
            f"bod{'y' if n == 1 else 'ies'} take {_bytes_text(size)} (x 13 values x 8 bytes; "
            f"about ten times that while running); the limit is "
            f"{_bytes_text(MAX_RECORD_BYTES)}: raise settings.record_every"
        )
    return None


def check_run_size(scene: Scene, force: bool = False) -> None:
    """Raise :class:`SceneError` (field ``settings``) when :func:`run_size_problem` finds one,
    unless ``force``; the message ends "pass --force to run anyway"."""
    problem = run_size_problem(scene)
    if problem is not None and not force:
        raise SceneError(scene.source, "settings", f"{problem}; pass --force to run anyway")


def record_times(scene: Scene) -> np.ndarray:
    """Times of the records, shape (nt,): every ``record_every`` steps from 0 to the end.

    A run stops at its last record: steps past it (when the step count is not a multiple of
    ``record_every``) would not be recorded, so they are not taken.
    """
    s = scene.settings
    steps = np.arange(0, s.n_steps + 1, s.record_every)
    return steps * s.dt


def run_scene(
    scene: Scene,
    *,
    engine: Engine | None = None,
    mass_overrides: dict | None = None,
    progress=None,
    force: bool = False,
) -> Trajectory:
    """Run ``scene`` forward for its duration.

    Parameters
    ----------
    scene : Scene
    engine : Engine, optional
        A client to reuse (it is rebuilt, which is bit-reproducible); a DIRECT one is made and
        closed otherwise.
    mass_overrides : dict, optional
        Realized mass properties per body (see :class:`~workbench.sim.engine.Engine`).
    progress : callable, optional
        ``progress(steps_done, steps_total)``, called about 100 times during the run.
    force : bool
        Run even beyond :data:`MAX_STEPS` or :data:`MAX_RECORD_BYTES` (:func:`check_run_size`).

    Returns
    -------
    Trajectory
        ``status`` is ``"ok"``, or ``"nonfinite"`` with the records before the failure (a
        non-finite, saturated or degenerate state:
        :func:`~workbench.sim.state.state_problems`; or a non-finite kinetic energy).

    Raises
    ------
    SceneError
        The run is too large (:func:`check_run_size`), or the engine cannot build the scene.
    SimulationError
        The machine ran out of memory for the records (only with ``force``).
    """
    check_run_size(scene, force)
    own = engine is None
    if own:
        engine = Engine(scene, mass_overrides=mass_overrides)
    else:
        engine.rebuild(scene, mass_overrides=mass_overrides)
    try:
        return _held_to_bounds(scene, _run(scene, engine, progress))
    except MemoryError:
        raise SimulationError(
            f"{scene.source}: out of memory for the records of {len(scene.bodies)} bodies over "
            f"{scene.settings.n_steps} steps (every {scene.settings.record_every}); raise "
            f"settings.record_every"
        ) from None
    finally:
        if own:
            engine.close()


#: Records between non-finite checks. The check is vectorized over the batch; a failing run
#: therefore stops at most this many records after the failure (and keeps all before it).
CHECK_EVERY = 64


def _run(scene: Scene, engine: Engine, progress) -> Trajectory:
    s = scene.settings
    dt, stride, n_steps = s.dt, s.record_every, s.n_steps
    times = record_times(scene)
    nt, n = len(times), len(scene.bodies)
    need_acc = any(o.quantity in _ACCELERATIONS for o in scene.observers)
    # Contact counts cost one getContactPoints call per record: only when an observer asks.
    need_contacts = any(o.quantity == "contact_count" for o in scene.observers)
    # Static bodies never move: read them once, not at every record. The tracked links of URDF
    # bodies (rows n, n + 1, ... : workbench/scene/links.py) are read at every record, after them.
    moving = [j for j, f in enumerate(engine.frames) if f.mass > 0]
    n_links = len(scene.links)
    tracked = moving + list(range(n, n + n_links))
    m = len(tracked)
    rows: list[list[float]] = []  # per record: 13 floats (x, q, v, w) per moving body
    acc = np.zeros((nt, m, 3)) if need_acc else None
    alp = np.zeros((nt, m, 3)) if need_acc else None
    contacts = np.zeros((nt, n), dtype=np.int64)
    contact_total = np.zeros(nt, dtype=np.int64)
    # Readers built once: the same PyBullet calls per record as a bare loop's.
    read_row = engine.state_reader(moving, links=True)
    read_velocities = engine.velocity_reader(moving, links=True)
    joint_rows: list[list[float]] = []  # per record: joint positions, then velocities
    if scene.tracked_joints:  # scenes without URDF joints keep the bare reader
        read_row = _with_joints(read_row, engine.joint_reader(), joint_rows)
    count_contacts = engine.contact_counter() if need_contacts else None

    def record(k: int) -> None:
        rows.append(read_row())
        if need_contacts:
            contact_total[k] = count_contacts(contacts[k])

    def velocities(row: list[float]) -> tuple[np.ndarray, np.ndarray]:
        r = np.asarray(row).reshape(m, 13)
        return r[:, 7:10], r[:, 10:13]

    def first_bad(start: int) -> int | None:
        """Index of the first record from ``start`` on with a non-finite, saturated or
        degenerate state, or None."""
        block = np.asarray(rows[start:], dtype=float).reshape(len(rows) - start, m, 13)
        bad = state_problems(block).any(axis=1)
        return start + int(np.argmax(bad)) if bad.any() else None

    advance = engine.stepper()  # advance(first, count): steps first, ..., first + count - 1
    status, message, n_ok = "ok", "", nt
    checked = 0
    record(0)
    report_every = max(1, (nt - 1) // 100)
    for k in range(1, nt):
        first = (k - 1) * stride  # steps taken before this record's
        if need_acc:
            # Accelerations: the velocity change over the step ending at each record, / dt,
            # which needs the velocities one step before each record.
            if k == 1:
                v0, w0 = velocities(rows[0])
                advance(0, 1)
                v1, w1 = read_velocities()
                acc[0], alp[0] = (v1 - v0) / dt, (w1 - w0) / dt  # record 0: the first step
                if stride == 1:
                    prev_v, prev_w = v0, w0
                else:
                    advance(1, stride - 2)
                    prev_v, prev_w = read_velocities()
                    advance(stride - 1, 1)
            else:
                advance(first, stride - 1)
                prev_v, prev_w = read_velocities()
                advance(first + stride - 1, 1)
        else:
            advance(first, stride)
        record(k)
        if need_acc:
            v, w = velocities(rows[k])
            acc[k], alp[k] = (v - prev_v) / dt, (w - prev_w) / dt
        if len(rows) - checked >= CHECK_EVERY or k == nt - 1:
            bad = first_bad(checked)
            checked = len(rows)
            if bad is not None:
                status, n_ok = "nonfinite", bad
                break
        if progress is not None and k % report_every == 0:
            progress(k * stride, n_steps)
    if status == "ok" and checked < len(rows):  # a run of one record: its initial state
        bad = first_bad(checked)
        if bad is not None:
            status, n_ok = "nonfinite", bad
    if progress is not None and status == "ok":
        progress(n_steps, n_steps)

    flat = np.asarray(rows, dtype=float).reshape(len(rows), m, 13)
    if status != "ok":
        message = _nonfinite_message(
            scene, [scene.tracked_names[j] for j in tracked], flat[n_ok], times[n_ok]
        )
        if n_ok == 0:  # nothing to keep: the scene's own initial state is not a motion
            row = flat[0]
            j = int(np.flatnonzero(state_problems(row[None])[0])[0])
            raise SceneError(
                scene.source,
                f"bodies[{tracked[j]}]" if tracked[j] < n else "bodies",
                f"its initial state in PyBullet is a {state_problem_text(row[j : j + 1])}; "
                f"expected a centre of mass within {MAX_COORDINATE:g} m and finite velocities",
            )
    flat = flat[:n_ok]
    pos, q_in, vel, omg = _fill_static(engine, moving, flat, n_links)
    if need_acc:
        acc = _expand(acc[:n_ok], tracked, n + n_links)
        alp = _expand(alp[:n_ok], tracked, n + n_links)
    sl = slice(0, n_ok)
    q_body = engine.body_orientation(q_in)
    frames = engine.frames + (engine.link_frames() if n_links else [])
    mass = np.array([f.mass for f in frames])
    inertia = np.stack([f.inertia for f in frames])
    ke = kinetic_energy(mass, inertia, q_body, vel, omg)
    rec = {
        "position": pos,
        "orientation": q_body,
        "linear_velocity": vel,
        "angular_velocity": omg,
        "linear_acceleration": acc,
        "angular_acceleration": alp,
        "com": np.stack([f.com for f in frames]),
        "kinetic_energy": ke,
        "contacts": contacts[sl],
        "contact_total": contact_total[sl],
    }
    if n_links:  # contacts are counted per body: a link's are its body's
        rec["contacts"] = np.concatenate([contacts[sl], np.zeros((n_ok, n_links), np.int64)], 1)
    names = scene.tracked_names
    observers, info = {}, {}
    for o in scene.observers:
        j = scene.row_of(o.body, o.link) if o.body is not None else None
        observers[o.name] = observer_channel(o, j, rec)
        info[o.name] = observer_info(o, names[j] if j is not None else None)
    diagnostics = {"kinetic_energy": ke.sum(axis=1)}
    if need_contacts:
        diagnostics["contact_count"] = contact_total[sl].astype(float)
    params = {}
    for j, b in enumerate(scene.bodies):
        if frames[j].mass > 0:
            params[f"{b.name}/mass"] = np.array(frames[j].mass)
            params[f"{b.name}/com"] = frames[j].com.copy()
            params[f"{b.name}/inertia"] = frames[j].inertia.copy()
    return Trajectory(
        time=times[sl].copy(),
        body_names=names,
        position=pos,
        orientation=q_body,
        linear_velocity=vel,
        angular_velocity=omg,
        observers=observers,
        observer_info=info,
        diagnostics=diagnostics,
        params=params,
        status=status,
        message=message,
        **_links_and_joints(scene, joint_rows[:n_ok]),
    )


def _held_to_bounds(scene: Scene, traj: Trajectory) -> Trajectory:
    """``traj``, or, when it says ``ok`` with a record that is not a motion after all (every
    state and record time: :func:`~workbench.sim.state.first_state_problem`; and its kinetic
    energy: finite states with infinite energy, e.g. a speed of 1e200 m/s, or masses that are
    not numbers), its records before that one, marked ``nonfinite``. The recording loop checks
    the states already; this is the last word before ``ok`` on everything that is recorded."""
    if traj.status != "ok":
        return traj
    found = first_state_problem(traj)
    energy = np.asarray(traj.diagnostics.get("kinetic_energy", np.zeros(traj.n_times)))
    with np.errstate(invalid="ignore"):
        bad_energy = ~np.isfinite(energy)
    if bad_energy.any():
        k = int(np.argmax(bad_energy))
        if found is None or k < found[0]:
            t = float(traj.time[k])
            found = (k, f"non-finite kinetic energy at t = {t:.6g} s")
    if found is None:
        return traj
    k, what = found
    if k == 0:
        raise SceneError(scene.source, "bodies", f"its initial state in PyBullet has a {what}")
    return dataclasses.replace(
        traj.truncated(k), status="nonfinite", message=f"{what}; the records before it are kept"
    )


def _with_joints(read_row, read_joints, joint_rows: list):
    """``read_row`` that also appends the joint states of the record to ``joint_rows``."""

    def read() -> list[float]:
        joint_rows.append(read_joints())
        return read_row()

    return read


def _links_and_joints(scene: Scene, joint_rows: list) -> dict:
    """The ``link_info``, ``joint_info`` and joint arrays (nt, n_joints) of a trajectory."""
    joints = scene.tracked_joints
    out: dict = {"link_info": {link.name: link.info() for link in scene.links}}
    out["joint_info"] = {j.name: j.info() for j in joints}
    if joints:
        qs = np.asarray(joint_rows, dtype=float).reshape(len(joint_rows), 2, len(joints))
        out["joint_position"], out["joint_velocity"] = qs[:, 0].copy(), qs[:, 1].copy()
    return out


def _fill_static(engine: Engine, moving: list[int], flat: np.ndarray, n_links: int = 0):
    """Full (nt, n + n_links, k) state arrays: recorded moving bodies plus constant static
    bodies, then the tracked links (the last ``n_links`` rows of ``flat``)."""
    nt, n = flat.shape[0], engine.n_bodies
    pos, q, v, w = (
        np.zeros((nt, n + n_links, 3)),
        np.zeros((nt, n + n_links, 4)),
        np.zeros((nt, n + n_links, 3)),
        np.zeros((nt, n + n_links, 3)),
    )
    static = [j for j in range(n) if j not in set(moving)]
    if static:
        x0, q0, _, _ = engine.read_raw()
        pos[:, static] = x0[static]
        q[:, static] = q0[static]
    tracked = moving + list(range(n, n + n_links))
    pos[:, tracked] = flat[..., 0:3]
    q[:, tracked] = flat[..., 3:7]
    v[:, tracked] = flat[..., 7:10]
    w[:, tracked] = flat[..., 10:13]
    return pos, q, v, w


def _expand(a: np.ndarray, moving: list[int], n: int) -> np.ndarray:
    out = np.zeros((a.shape[0], n, a.shape[2]))
    out[:, moving] = a
    return out


def _nonfinite_message(scene: Scene, names: list[str], row: np.ndarray, t: float) -> str:
    """What went wrong in ``row``, shape (m, 13), the first bad record, at time ``t``."""
    bad = state_problems(row[None])[0]
    which = ", ".join(repr(names[j]) for j in np.flatnonzero(bad))
    what = state_problem_text(row[bad])
    return f"{what} of body {which} at t = {t:.6g} s; the records before it are kept"
