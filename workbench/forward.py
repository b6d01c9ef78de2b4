"""Forward runs: step a scene in PyBullet and record a :class:`~workbench.state.Trajectory`.

Records are taken every ``settings.record_every`` steps, starting with the initial state. A run
whose state becomes non-finite stops there: the trajectory keeps the records before it and says
which body and time (``status="nonfinite"``).
"""

from __future__ import annotations

import numpy as np

from workbench.engine import Engine
from workbench.observers import kinetic_energy, observer_channel, observer_info
from workbench.scene import Scene
from workbench.state import Trajectory

__all__ = ["run_scene", "record_times"]

_ACCELERATIONS = ("point_acceleration", "com_acceleration", "angular_acceleration")


def record_times(scene: Scene) -> np.ndarray:
    """Times of the records, shape (nt,): every ``record_every`` steps from 0 to the end."""
    s = scene.settings
    steps = np.arange(0, s.n_steps + 1, s.record_every)
    return steps * s.dt


def run_scene(scene: Scene, *, engine: Engine | None = None, mass_overrides: dict | None = None,
              progress=None) -> Trajectory:
    """Run ``scene`` forward for its duration.

    Parameters
    ----------
    scene : Scene
    engine : Engine, optional
        A client to reuse (it is rebuilt, which is bit-reproducible); a DIRECT one is made and
        closed otherwise.
    mass_overrides : dict, optional
        Realized mass properties per body (see :class:`~workbench.engine.Engine`).
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


def _run(scene: Scene, engine: Engine, progress) -> Trajectory:
    s = scene.settings
    dt, stride, n_steps = s.dt, s.record_every, s.n_steps
    times = record_times(scene)
    nt, n = len(times), len(scene.bodies)
    need_acc = any(o.quantity in _ACCELERATIONS for o in scene.observers)
    need_contacts = True  # a diagnostic of every run; one getContactPoints call per record
    pos = np.full((nt, n, 3), np.nan)
    q_in = np.full((nt, n, 4), np.nan)
    vel = np.full((nt, n, 3), np.nan)
    omg = np.full((nt, n, 3), np.nan)
    acc = np.zeros((nt, n, 3)) if need_acc else None
    alp = np.zeros((nt, n, 3)) if need_acc else None
    contacts = np.zeros((nt, n), dtype=np.int64)
    contact_total = np.zeros(nt, dtype=np.int64)
    uid_index = {uid: j for j, uid in enumerate(engine.uids)}
    p, client = engine.p, engine.client
    read = engine.read_raw

    def record(k: int) -> bool:
        pos[k], q_in[k], vel[k], omg[k] = read()
        if need_contacts:
            pts = p.getContactPoints(physicsClientId=client)
            contact_total[k] = len(pts)
            for pt in pts:
                for uid in (pt[1], pt[2]):
                    j = uid_index.get(uid)
                    if j is not None:
                        contacts[k, j] += 1
        return bool(np.isfinite(pos[k]).all() and np.isfinite(q_in[k]).all()
                    and np.isfinite(vel[k]).all() and np.isfinite(omg[k]).all())

    status, message, n_ok = "ok", "", nt
    record(0)
    # Accelerations: the velocity change over the step that ends at each record, / dt. That
    # needs the velocities one step before each record (read only when an observer asks).
    prev_v = prev_w = None
    report_every = max(1, n_steps // 100)
    for step in range(1, n_steps + 1):
        engine.step((step - 1) * dt)
        if need_acc and step == 1:  # record 0 takes the acceleration of the first step
            _, _, v1, w1 = read()
            acc[0] = (v1 - vel[0]) / dt
            alp[0] = (w1 - omg[0]) / dt
        if step % stride == 0:
            k = step // stride
            if need_acc and stride == 1:
                prev_v, prev_w = vel[k - 1].copy(), omg[k - 1].copy()
            ok = record(k)
            if need_acc:
                acc[k] = (vel[k] - prev_v) / dt
                alp[k] = (omg[k] - prev_w) / dt
            if not ok:
                status, n_ok = "nonfinite", k
                message = _nonfinite_message(scene, pos[k], q_in[k], vel[k], omg[k], step * dt)
                break
        elif need_acc and (step + 1) % stride == 0:
            _, _, prev_v, prev_w = read()
        if progress is not None and step % report_every == 0:
            progress(step, n_steps)
    if progress is not None and status == "ok":
        progress(n_steps, n_steps)

    sl = slice(0, n_ok)
    q_body = engine.body_orientation(q_in[sl])
    frames = engine.frames
    mass = np.array([f.mass for f in frames])
    inertia = np.stack([f.inertia for f in frames])
    ke = kinetic_energy(mass, inertia, q_body, vel[sl], omg[sl])
    rec = {
        "position": pos[sl], "orientation": q_body, "linear_velocity": vel[sl],
        "angular_velocity": omg[sl], "linear_acceleration": None if acc is None else acc[sl],
        "angular_acceleration": None if alp is None else alp[sl],
        "com": np.stack([f.com for f in frames]), "kinetic_energy": ke,
        "contacts": contacts[sl], "contact_total": contact_total[sl],
    }
    names = scene.body_names
    observers, info = {}, {}
    for o in scene.observers:
        j = names.index(o.body) if o.body is not None else None
        observers[o.name] = observer_channel(o, j, rec)
        info[o.name] = observer_info(o)
    params = {}
    for j, b in enumerate(scene.bodies):
        if frames[j].mass > 0:
            params[f"{b.name}/mass"] = np.array(frames[j].mass)
            params[f"{b.name}/com"] = frames[j].com.copy()
            params[f"{b.name}/inertia"] = frames[j].inertia.copy()
    return Trajectory(
        time=times[sl].copy(), body_names=names, position=pos[sl].copy(),
        orientation=q_body, linear_velocity=vel[sl].copy(), angular_velocity=omg[sl].copy(),
        observers=observers, observer_info=info,
        diagnostics={"kinetic_energy": ke.sum(axis=1), "contact_count":
                     contact_total[sl].astype(float)},
        params=params, status=status, message=message,
    )


def _nonfinite_message(scene: Scene, pos, q, v, w, t: float) -> str:
    bad = ~(np.isfinite(pos).all(1) & np.isfinite(q).all(1) & np.isfinite(v).all(1)
            & np.isfinite(w).all(1))
    names = [scene.body_names[j] for j in np.flatnonzero(bad)]
    return (f"non-finite state of body {', '.join(repr(x) for x in names)} at t = {t:.6g} s; "
            "the records before it are kept")
