"""Forward runs: step a scene in PyBullet and record a :class:`~workbench.sim.state.Trajectory`.

Records are taken every ``settings.record_every`` steps, starting with the initial state. A run
whose state becomes non-finite stops there: the trajectory keeps the records before it and says
which body and time (``status="nonfinite"``).
"""

from __future__ import annotations

import numpy as np

from workbench.scene.model import Scene
from workbench.sim.engine import Engine
from workbench.sim.observers import kinetic_energy, observer_channel, observer_info
from workbench.sim.state import Trajectory

__all__ = ["run_scene", "record_times"]

_ACCELERATIONS = ("point_acceleration", "com_acceleration", "angular_acceleration")


def record_times(scene: Scene) -> np.ndarray:
    """Times of the records, shape (nt,): every ``record_every`` steps from 0 to the end.

    A run stops at its last record: steps past it (when the step count is not a multiple of
    ``record_every``) would not be recorded, so they are not taken.
    """
    s = scene.settings
    steps = np.arange(0, s.n_steps + 1, s.record_every)
    return steps * s.dt


def run_scene(
    scene: Scene, *, engine: Engine | None = None, mass_overrides: dict | None = None, progress=None
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

    Returns
    -------
    Trajectory
        ``status`` is ``"ok"``, or ``"nonfinite"`` with the records before the failure.
    """
    own = engine is None
    if own:
        engine = Engine(scene, mass_overrides=mass_overrides)
    else:
        engine.rebuild(scene, mass_overrides=mass_overrides)
    try:
        return _run(scene, engine, progress)
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
    # Static bodies never move: read them once, not at every record.
    moving = [j for j, f in enumerate(engine.frames) if f.mass > 0]
    m = len(moving)
    rows: list[list[float]] = []  # per record: 13 floats (x, q, v, w) per moving body
    acc = np.zeros((nt, m, 3)) if need_acc else None
    alp = np.zeros((nt, m, 3)) if need_acc else None
    contacts = np.zeros((nt, n), dtype=np.int64)
    contact_total = np.zeros(nt, dtype=np.int64)
    # Readers built once: the same PyBullet calls per record as a bare loop's.
    read_row = engine.state_reader(moving)
    read_velocities = engine.velocity_reader(moving)
    count_contacts = engine.contact_counter() if need_contacts else None

    def record(k: int) -> None:
        rows.append(read_row())
        if need_contacts:
            contact_total[k] = count_contacts(contacts[k])

    def velocities(row: list[float]) -> tuple[np.ndarray, np.ndarray]:
        r = np.asarray(row).reshape(m, 13)
        return r[:, 7:10], r[:, 10:13]

    def first_bad(start: int) -> int | None:
        """Index of the first non-finite record from ``start`` on, or None."""
        block = np.asarray(rows[start:], dtype=float)
        bad = ~np.isfinite(block).all(axis=1)
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
    if progress is not None and status == "ok":
        progress(n_steps, n_steps)

    flat = np.asarray(rows, dtype=float).reshape(len(rows), m, 13)
    if status != "ok":
        message = _nonfinite_message(
            scene, [scene.bodies[j].name for j in moving], flat[n_ok], times[n_ok]
        )
    flat = flat[:n_ok]
    pos, q_in, vel, omg = _fill_static(engine, moving, flat)
    if need_acc:
        acc, alp = _expand(acc[:n_ok], moving, n), _expand(alp[:n_ok], moving, n)
    sl = slice(0, n_ok)
    q_body = engine.body_orientation(q_in)
    frames = engine.frames
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
    names = scene.body_names
    observers, info = {}, {}
    for o in scene.observers:
        j = names.index(o.body) if o.body is not None else None
        observers[o.name] = observer_channel(o, j, rec)
        info[o.name] = observer_info(o)
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
    )


def _fill_static(engine: Engine, moving: list[int], flat: np.ndarray):
    """Full (nt, n, k) state arrays: recorded moving bodies plus constant static bodies."""
    nt, n = flat.shape[0], engine.n_bodies
    pos, q, v, w = (
        np.zeros((nt, n, 3)),
        np.zeros((nt, n, 4)),
        np.zeros((nt, n, 3)),
        np.zeros((nt, n, 3)),
    )
    static = [j for j in range(n) if j not in set(moving)]
    if static:
        x0, q0, _, _ = engine.read_raw()
        pos[:, static] = x0[static]
        q[:, static] = q0[static]
    pos[:, moving] = flat[..., 0:3]
    q[:, moving] = flat[..., 3:7]
    v[:, moving] = flat[..., 7:10]
    w[:, moving] = flat[..., 10:13]
    return pos, q, v, w


def _expand(a: np.ndarray, moving: list[int], n: int) -> np.ndarray:
    out = np.zeros((a.shape[0], n, a.shape[2]))
    out[:, moving] = a
    return out


def _nonfinite_message(scene: Scene, names: list[str], row: np.ndarray, t: float) -> str:
    bad = ~np.isfinite(row).all(axis=1)
    which = ", ".join(repr(names[j]) for j in np.flatnonzero(bad))
    return f"non-finite state of body {which} at t = {t:.6g} s; the records before it are kept"
