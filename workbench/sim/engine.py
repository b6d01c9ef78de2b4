"""PyBullet engine: builds a :class:`~workbench.scene.model.Scene` into a physics client, steps
it with the per-step applied forces, and reads :class:`~workbench.sim.state.State` s.

This is the only module that imports PyBullet, and :class:`Engine` the only way to reach it: the
modules that record, replay and query scenes call its methods (see ``docs/architecture.md``).
It applies the facts measured for PyBullet:

- ``createMultiBody`` takes the body (link) frame; PyBullet reports and resets the centre-of-mass
  (inertial) frame, including its principal-axes rotation. Each body's full inertia tensor J and
  centre-of-mass offset are realized by ``eigh(J)`` -> ``localInertiaDiagonal`` +
  ``baseInertialFrameOrientation`` (det = +1), and the inertial frame is kept here
  (:class:`~workbench.sim.frames.BodyFrame`) because ``getDynamicsInfo`` does not always report
  it.
- Linear and angular damping are set to 0 on every body (PyBullet's default 0.04 biases results),
  and the 100 m/s / 100 rad/s speed clamp of multibody bases is lifted
  (:data:`~workbench.sim.arguments.MAX_SPEED`).
- Materials are set on every body deliberately (see :class:`workbench.scene.model.Material`).
- Joints are PyBullet constraints: FIXED, POINT2POINT (ball), PRISMATIC, and revolute as two
  POINT2POINT constraints on the axis (``createConstraint`` has no revolute type). A prescribed
  joint or body motion is a FIXED constraint whose frame follows the time table.
- Quadratic drag, constant forces and 6-DOF springs (:mod:`workbench.sim.springs`) are external
  forces applied before every step (PyBullet clears them after each step).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections import deque
from collections.abc import Callable, Sequence
from itertools import repeat
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from scipy.spatial.transform import Rotation

from workbench.errors import SceneError, SimulationError
from workbench.scene.inertia import principal_frame
from workbench.scene.model import WORLD, Body, Joint, Scene, resolve_file
from workbench.scene.urdf import UrdfError, urdf_with_inertials
from workbench.sim.arguments import (
    BODY_WIDE_DYNAMICS,
    body_colour,
    dynamics_arguments,
    motor_arguments,
    shape_arguments,
)
from workbench.sim.frames import BodyFrame, body_orientation, mass_overrides_from_params, z_to
from workbench.sim.points import contact_arrays
from workbench.sim.springs import SpringLaw
from workbench.sim.state import State

__all__ = [
    "Engine",
    "BodyFrame",
    "ContactPoint",
    "import_pybullet",
    "mass_overrides_from_params",
]

#: Lever arm (m) between the two POINT2POINT constraints that make a revolute joint. Long enough
#: that the pair resists rotation about the other axes stiffly, short enough to stay inside
#: typical bodies; the constraint rows are exact, so the value only conditions the solver.
REVOLUTE_LEVER = 0.1


def import_pybullet():
    """Import pybullet without its banner ("pybullet build time ...", written to stderr)."""
    if "pybullet" in sys.modules:
        return sys.modules["pybullet"]
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            os.dup2(devnull.fileno(), 2)
            import pybullet

            _flush_c_stdout()  # the banner sits in C's stdio buffer until flushed
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
    return pybullet


@contextlib.contextmanager
def _captured_output(out: list[str]):
    """Send what C code writes to stdout and stderr into ``out`` (one string) instead: PyBullet
    reports a failed URDF load as ``b3Error[...]`` lines there and raises only "Cannot load URDF
    file."."""
    import tempfile

    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with tempfile.TemporaryFile(mode="w+", errors="replace") as tmp:
            try:
                os.dup2(tmp.fileno(), 1)
                os.dup2(tmp.fileno(), 2)
                yield
            finally:
                _flush_c_stdout()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                tmp.seek(0)
                out.append(tmp.read(100_000))
    finally:
        for fd in saved:
            os.close(fd)


def _urdf_problem(text: str) -> str:
    """The last message of PyBullet's ``b3Error[...]`` lines in ``text``, or ""."""
    parts = [" ".join(x.split("]:", 1)[-1].split()) for x in text.split("b3Error[")[1:]]
    parts = [x for x in parts if x]
    return parts[-1] if parts else ""


def _flush_c_stdout() -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)


#: Relative tolerance of the check that PyBullet holds a random link's written mass, centre of
#: mass and principal moments: exact for ``global_scaling`` 1 (``repr`` floats round-trip); a
#: few ulp otherwise (the file holds com / s, which PyBullet multiplies back by s).
_URDF_INERTIAL_RTOL = 1e-14


def _urdf_indices(p, c: int, uid: int) -> dict[str, int]:
    """Link name -> PyBullet link index (-1 for the base) of a loaded URDF body."""
    out = {p.getBodyInfo(uid, physicsClientId=c)[0].decode("utf-8"): -1}
    for i in range(p.getNumJoints(uid, physicsClientId=c)):
        out[p.getJointInfo(uid, i, physicsClientId=c)[12].decode("utf-8")] = i
    return out


#: Names of the first entries of ``getDynamicsInfo`` (:meth:`Engine.dynamics_info`).
_DYNAMICS_INFO = ("mass", "friction", "inertia_diagonal", "inertial_position")
_DYNAMICS_INFO += ("inertial_orientation", "restitution", "rolling_friction", "spinning_friction")


class ContactPoint(NamedTuple):
    """One contact point as PyBullet reports it, with body indices (scene order) for its ids.

    ``normal`` points from B into A; ``distance`` is negative for penetration, m, and
    ``position_a = position_b + distance * normal``.
    """

    body_a: int
    body_b: int
    position_a: tuple[float, float, float]
    position_b: tuple[float, float, float]
    normal: tuple[float, float, float]
    distance: float


class Engine:
    """One PyBullet client holding one built scene.

    Parameters
    ----------
    scene : Scene
        What to build.
    gui : bool
        Open the PyBullet viewer instead of a DIRECT (headless) client.
    visual : bool
        Create visual shapes (needed for the viewer and rendered frames).
    plane_as_box : bool
        Give ``plane`` bodies a 100 m × 100 m × 1 m box collision shape whose top face is the
        plane, instead of PyBullet's ``GEOM_PLANE``. A box on a ``GEOM_PLANE`` gets a persistent
        manifold that grows by one point per step (a freshly placed box reports 1–2 points); on a
        box ground box–box detection reports all 4 corners at once. The reverse stepper, which
        places bodies and queries contacts without stepping, needs this.
    mass_overrides : dict, optional
        Per body name: ``{"mass": float, "com": (3,), "inertia": (3, 3)}`` replacing the scene's
        mass properties (sampled realizations use this). For a URDF body these are its base
        link's, and ``"links"`` maps the name of another random link to its ``{"mass", "com",
        "inertia"}`` in the link frame (:class:`~workbench.ensemble.realization.Realization`).
        A URDF body with random links (``Body.random_links``) is loaded from a private copy of
        its file whose random links' ``<inertial>`` hold these values, or the URDF's own where
        none is given (so the nominal run loads the same kind of copy as every realization),
        with ``URDF_USE_INERTIA_FROM_FILE``; ``getDynamicsInfo`` is checked to hold exactly the
        written mass, centre of mass and principal moments.

    Notes
    -----
    PyBullet is reached only through this object (as MuJoCo through dm_control's ``Physics``):
    the modules that run, record, replay or query a scene call its methods, and the PyBullet
    module, the client id and the body ids stay private (``_p``, ``_client``, ``_uids``). The
    hot loops get readers built once per run (:meth:`state_reader`), which make no more PyBullet
    calls than a bare script would.
    """

    def __init__(
        self,
        scene: Scene,
        *,
        gui: bool = False,
        visual: bool | None = None,
        plane_as_box: bool = False,
        mass_overrides: dict | None = None,
    ):
        self._p = import_pybullet()
        self.scene = scene
        self.gui = gui
        self.visual = gui if visual is None else visual
        self.plane_as_box = plane_as_box
        self._mass_overrides = mass_overrides or {}
        mode = self._p.GUI if gui else self._p.DIRECT
        self._client = None
        self._uid_array_cache: tuple[list, np.ndarray] | None = None  # _uid_array
        try:
            # a Ctrl-C during a GUI connect is raised before its result is stored (Python checks
            # for signals as the call returns), so close() cannot end that client: callers that
            # must close the window defer SIGINT (viewer._interrupts_between_calls)
            self._client = self._p.connect(mode)
            if self._client < 0:
                raise RuntimeError(
                    "could not connect to PyBullet" + (" GUI (is DISPLAY set?)" if gui else "")
                )
            self._build()
        except BaseException:
            self.close()  # a failed build must not leave the client (or a GUI window) open
            raise

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        if self._client is not None and self._client >= 0:
            with contextlib.suppress(Exception):
                self._p.disconnect(physicsClientId=self._client)
        self._client = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def rebuild(self, scene: Scene | None = None, mass_overrides: dict | None = None) -> None:
        """Reset the client and build ``scene`` (or the same scene) again; bit-reproducible."""
        if scene is not None:
            self.scene = scene
        if mass_overrides is not None:
            self._mass_overrides = mass_overrides
        self._build()

    # ------------------------------------------------------------------ public API
    @property
    def body_names(self) -> tuple[str, ...]:
        return self.scene.body_names

    @property
    def n_bodies(self) -> int:
        return len(self._uids)

    def state(self, links: bool = False) -> State:
        """Current :class:`State` of all bodies (body-frame orientation, COM position); with
        ``links``, the rows of the scene's tracked URDF links follow (``Scene.tracked_names``)."""
        pos, q_in, v, w = self.read_raw(links)
        q_body = self.body_orientation(q_in)
        return State(pos, q_body, v, w)

    def read_raw(
        self, links: bool = False
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """COM positions, *inertial-frame* quaternions, linear and angular velocities, (n, k);
        with ``links``, the tracked links' rows follow (:meth:`link_reader`)."""
        p, c = self._p, self._client
        n = len(self._uids)
        pos, q, v, w = np.empty((n, 3)), np.empty((n, 4)), np.empty((n, 3)), np.empty((n, 3))
        for j, uid in enumerate(self._uids):
            pos[j], q[j] = p.getBasePositionAndOrientation(uid, physicsClientId=c)
            v[j], w[j] = p.getBaseVelocity(uid, physicsClientId=c)
        if links and self.scene.links:
            rows = np.asarray(self.link_reader()(), dtype=float).reshape(-1, 13)
            pos, q = np.vstack([pos, rows[:, 0:3]]), np.vstack([q, rows[:, 3:7]])
            v, w = np.vstack([v, rows[:, 7:10]]), np.vstack([w, rows[:, 10:13]])
        return pos, q, v, w

    def body_orientation(self, q_inertial: np.ndarray) -> np.ndarray:
        """Convert inertial-frame quaternions, shape (..., n, 4), to body-frame ones; rows past
        the scene's bodies are the tracked links' (to their URDF link frames)."""
        q_inertial = np.asarray(q_inertial, dtype=float)
        if q_inertial.shape[-2] == len(self.frames):
            return body_orientation(q_inertial, self.frames)
        return body_orientation(q_inertial, self.frames + self.link_frames())

    def set_state(
        self,
        state: State,
        joint_position: np.ndarray | None = None,
        joint_velocity: np.ndarray | None = None,
    ) -> None:
        """Place every body at ``state`` (used by replay and the reverse stepper). Rows past the
        scene's bodies (tracked links) are not set: links follow their base and the joint
        states, set when ``joint_position`` (and ``joint_velocity``; zero without) are given,
        shape (n_joints,) in ``Scene.tracked_joints`` order (:meth:`set_joint_states`)."""
        p, c = self._p, self._client
        if joint_position is not None:
            self.set_joint_states(joint_position, joint_velocity)
        for j, uid in enumerate(self._uids):
            q_in = (
                Rotation.from_quat(state.orientation[j])
                * Rotation.from_quat(self.frames[j].principal)
            ).as_quat()
            p.resetBasePositionAndOrientation(
                uid, state.position[j].tolist(), q_in.tolist(), physicsClientId=c
            )
            p.resetBaseVelocity(
                uid,
                state.linear_velocity[j].tolist(),
                state.angular_velocity[j].tolist(),
                physicsClientId=c,
            )

    def step(self, t: float) -> None:
        """Apply the per-step forces for time ``t`` (start of the step) and advance by dt."""
        for action in self._actions:
            action(t)
        self._p.stepSimulation(physicsClientId=self._client)

    @property
    def has_step_forces(self) -> bool:
        """True when Python applies forces or constraint updates before every step."""
        return bool(self._actions)

    def stepper(self) -> Callable[[int, int], None]:
        """A function ``advance(first, count)`` taking ``count`` steps, the first one being step
        number ``first`` (it starts at ``first * dt``). Build it after :meth:`rebuild`. Without
        per-step forces it runs the loop a bare PyBullet script runs: one ``stepSimulation``
        call per step and nothing else."""
        if self._actions:
            step, dt = self.step, self.scene.settings.dt

            def advance(first: int, count: int) -> None:
                for k in range(first, first + count):
                    step(k * dt)

        else:
            step_sim, c = self._p.stepSimulation, self._client

            def advance(first: int, count: int) -> None:
                for _ in range(count):
                    step_sim(physicsClientId=c)

        return advance

    def reference_loop(self, n_steps: int, record_every: int = 0) -> None:
        """Run the plain PyBullet loop a script would write on this world, keeping nothing.

        ``n_steps`` steps (each with the scene's per-step forces, without which the physics
        would differ), reading every body's pose and velocity after every ``record_every``-th
        step (0: never). ``benchmarks/forward.py`` times a workbench run against it.
        """
        p, c, uids, actions = self._p, self._client, self._uids, self._actions
        dt = self.scene.settings.dt
        for step in range(1, n_steps + 1):
            for a in actions:
                a((step - 1) * dt)
            p.stepSimulation(physicsClientId=c)
            if record_every and step % record_every == 0:
                for u in uids:
                    p.getBasePositionAndOrientation(u, physicsClientId=c)
                    p.getBaseVelocity(u, physicsClientId=c)

    # ------------------------------------------------------------------ fast readers
    # Built once per run: each holds the bound PyBullet functions, so a call costs the PyBullet
    # reads it makes and nothing more (the forward run's recording loop is benchmarked).
    def state_reader(self, bodies: Sequence[int], links: bool = False) -> Callable[[], list[float]]:
        """A function returning the raw state of ``bodies`` now, as one flat list of 13 floats
        per body: centre-of-mass position (3), *inertial-frame* quaternion (4), linear (3) and
        angular (3) velocity. Two PyBullet calls per body. With ``links`` (and a scene with
        tracked links), the links' 13 floats follow (:meth:`link_reader`); without, the function
        is the bodies' alone, whatever the scene."""
        if links and self.scene.links:
            read_bodies, read_links = self.state_reader(bodies), self.link_reader()

            def read_all() -> list[float]:
                return read_bodies() + read_links()

            return read_all
        get_pose, get_vel = self._p.getBasePositionAndOrientation, self._p.getBaseVelocity
        c, uids = self._client, [self._uids[j] for j in bodies]

        def read() -> list[float]:
            row: list[float] = []
            for u in uids:
                x, q = get_pose(u, physicsClientId=c)
                v, w = get_vel(u, physicsClientId=c)
                row += x
                row += q
                row += v
                row += w
            return row

        return read

    def velocity_reader(
        self, bodies: Sequence[int], links: bool = False
    ) -> Callable[[], tuple[np.ndarray, ...]]:
        """A function returning the linear and angular velocities of ``bodies`` now, two arrays
        of shape (len(bodies), 3), m/s and rad/s. One PyBullet call per body. With ``links``
        (and a scene with tracked links), the links' rows follow: one more call per URDF body."""
        get_vel, c = self._p.getBaseVelocity, self._client
        uids, m = [self._uids[j] for j in bodies], len(bodies)
        link_rows = self.link_reader() if links and self.scene.links else None

        def read() -> tuple[np.ndarray, np.ndarray]:
            vw = [get_vel(u, physicsClientId=c) for u in uids]
            v = np.array([a for a, _ in vw]).reshape(m, 3)
            return v, np.array([b for _, b in vw]).reshape(m, 3)

        if link_rows is None:
            return read

        def read_with_links() -> tuple[np.ndarray, np.ndarray]:
            v, w = read()
            rows = np.asarray(link_rows()).reshape(-1, 13)
            return np.vstack([v, rows[:, 7:10]]), np.vstack([w, rows[:, 10:13]])

        return read_with_links

    # ------------------------------------------------------------------ URDF links and joints
    # The links of URDF bodies other than their base are tracked rows after the scene's bodies
    # (workbench/scene/links.py); PyBullet's link i is the scene's link of index i (the order
    # workbench/scene/urdf.py reads, checked against getJointInfo here).
    def _tracked(self) -> list[tuple[int, list[int]]]:
        """Per URDF body with tracked links, in row order: its uid and its link indices."""
        groups: dict[int, list[int]] = {}
        for link in self.scene.links:
            groups.setdefault(link.body_index, []).append(link.index)
        p, c = self._p, self._client
        out = []
        for j, indices in groups.items():
            uid = self._uids[j]
            n = p.getNumJoints(uid, physicsClientId=c)
            names = [
                p.getJointInfo(uid, i, physicsClientId=c)[12].decode("utf-8") for i in range(n)
            ]
            expected = [link.link for link in self.scene.links if link.body_index == j]
            if names != expected:
                raise SceneError(
                    self.scene.source,
                    f"bodies.{self.scene.bodies[j].name}.shape.file",
                    f"PyBullet's links ({', '.join(names)}) are not the URDF's as read "
                    f"({', '.join(expected)})",
                )
            out.append((uid, indices))
        return out

    def link_reader(self) -> Callable[[], list[float]]:
        """A function returning the tracked links' states now, one flat list of 13 floats per
        link in row order, as :meth:`state_reader`'s: centre-of-mass position
        (``linkWorldPosition``), *inertial-frame* quaternion (``linkWorldOrientation``; the link
        frame's is that times the inverse of the link's local inertial frame,
        :meth:`link_frames`, which :meth:`body_orientation` applies: PyBullet's own
        ``worldLinkFrameOrientation`` is rounded to single precision, measured 2e-7),
        centre-of-mass velocity and world angular velocity (``computeLinkVelocity=1``). One
        ``getLinkStates`` call per URDF body, with ``computeForwardKinematics=1``: the poses of
        the state PyBullet holds now, also after a reset of joints or base."""
        get_states, c = self._p.getLinkStates, self._client
        groups = self._tracked()

        def read() -> list[float]:
            row: list[float] = []
            for uid, indices in groups:
                for s in get_states(
                    uid, indices, computeLinkVelocity=1, computeForwardKinematics=1,
                    physicsClientId=c,
                ):  # fmt: skip
                    row += s[0]
                    row += s[1]
                    row += s[6]
                    row += s[7]
            return row

        return read

    def link_frames(self) -> list[BodyFrame]:
        """Where each tracked link's inertial frame sits in its URDF link frame, with its mass
        properties (``getDynamicsInfo``: mass, local inertia diagonal, local inertial frame), for
        link orientations, kinetic energies and point observers."""
        p, c = self._p, self._client
        out = []
        for uid, indices in self._tracked():
            for i in indices:
                info = p.getDynamicsInfo(uid, i, physicsClientId=c)
                mass, moments = float(info[0]), np.asarray(info[2], dtype=float)
                com, q_p = np.asarray(info[3], dtype=float), np.asarray(info[4], dtype=float)
                if not np.any(q_p):
                    q_p = np.array([0.0, 0.0, 0.0, 1.0])
                Rp = Rotation.from_quat(q_p).as_matrix()
                J = Rp @ np.diag(moments) @ Rp.T
                out.append(BodyFrame(com, q_p, moments, J, mass))
        return out

    def _joint_ids(self) -> list[tuple[int, int]]:
        """(uid, PyBullet joint index) of each of ``Scene.tracked_joints``."""
        return [(self._uids[j.link.body_index], j.link.index) for j in self.scene.tracked_joints]

    def joint_reader(self) -> Callable[[], list[float]]:
        """A function returning the tracked joints' positions then velocities now (rad or m,
        rad/s or m/s), ``2 n_joints`` floats. One ``getJointStates`` call per URDF body."""
        get_states, c = self._p.getJointStates, self._client
        groups: dict[int, list[int]] = {}
        for uid, i in self._joint_ids():
            groups.setdefault(uid, []).append(i)
        items = list(groups.items())

        def read() -> list[float]:
            q: list[float] = []
            qd: list[float] = []
            for uid, indices in items:
                for s in get_states(uid, indices, physicsClientId=c):
                    q.append(s[0])
                    qd.append(s[1])
            return q + qd

        return read

    def link_aabb(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """World axis-aligned bounding box (lower, upper corners, (3,) each, m) of the collision
        shapes of tracked link ``k`` (``Scene.links[k]``) in the current state."""
        link = self.scene.links[k]
        uid = self._uids[link.body_index]
        lo, hi = self._p.getAABB(uid, link.index, physicsClientId=self._client)
        return np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)

    def set_joint_states(self, position: np.ndarray, velocity: np.ndarray | None = None) -> None:
        """Set the tracked joints (``Scene.tracked_joints`` order) to ``position`` and
        ``velocity`` (zero when None), shape (n_joints,) each (``resetJointState``)."""
        p, c = self._p, self._client
        ids = self._joint_ids()
        position = np.asarray(position, dtype=float).reshape(len(ids))
        velocity = (
            np.zeros(len(ids)) if velocity is None else np.asarray(velocity, dtype=float)
        ).reshape(len(ids))
        for (uid, i), q, qd in zip(ids, position.tolist(), velocity.tolist(), strict=True):
            p.resetJointState(uid, i, q, qd, physicsClientId=c)

    def contact_counter(self) -> Callable[[np.ndarray], int]:
        """A function ``count(per_body)`` that adds to ``per_body``, shape (n,), each body's
        number of contact points from the last step and returns the number of points. One
        PyBullet call."""
        get_contacts, c = self._p.getContactPoints, self._client
        index = {uid: j for j, uid in enumerate(self._uids)}

        def count(per_body: np.ndarray) -> int:
            pts = get_contacts(physicsClientId=c)
            for pt in pts:
                for uid in (pt[1], pt[2]):
                    j = index.get(uid)
                    if j is not None:
                        per_body[j] += 1
            return len(pts)

        return count

    # ------------------------------------------------------------------ queries
    def read_body(self, j: int) -> tuple[tuple[float, ...], ...]:
        """Body ``j``'s centre-of-mass position, inertial-frame quaternion, linear and angular
        velocity now, as PyBullet reports them (tuples)."""
        x, q = self._p.getBasePositionAndOrientation(self._uids[j], physicsClientId=self._client)
        v, w = self._p.getBaseVelocity(self._uids[j], physicsClientId=self._client)
        return x, q, v, w

    def set_pose(self, j: int, position: np.ndarray, q_inertial: np.ndarray) -> None:
        """Move body ``j``'s centre of mass to ``position`` (3,), m, with its *inertial* frame at
        quaternion ``q_inertial`` (4,); velocities are left alone."""
        self._p.resetBasePositionAndOrientation(
            self._uids[j],
            np.asarray(position, dtype=float).tolist(),
            np.asarray(q_inertial, dtype=float).tolist(),
            physicsClientId=self._client,
        )

    def set_poses(self, bodies, positions, q_inertial) -> None:
        """:meth:`set_pose` for each body index in ``bodies``, with ``positions`` (n, 3) and
        ``q_inertial`` (n, 4) given for those bodies, in one loop (the reverse stepper places
        every moving body before each contact query)."""
        ids = self._uid_array()[np.asarray(bodies, dtype=np.intp).reshape(-1)].tolist()
        xs = np.asarray(positions, dtype=float).tolist()
        qs = np.asarray(q_inertial, dtype=float).tolist()
        if not len(ids) == len(xs) == len(qs):
            raise ValueError(f"{len(ids)} bodies, {len(xs)} positions, {len(qs)} orientations")
        # one C-level loop; the client id passed by position (its keyword costs ~10% per call).
        # The resets themselves are PyBullet's (≈ 5 µs each for a moved ball of the 3875-ball
        # scene, ≈ 2 µs to the same pose: docs/reverse.md "Cost"); only the Python around them
        # is ours.
        deque(map(self._p.resetBasePositionAndOrientation, ids, xs, qs, repeat(self._client)), 0)

    def _uid_array(self) -> np.ndarray:
        """The PyBullet ids of the bodies as an int array (``_uids``; built again after a
        :meth:`rebuild`), to map many body indices at once."""
        cached = self._uid_array_cache
        if cached is None or cached[0] is not self._uids:
            cached = (self._uids, np.asarray(self._uids, dtype=np.int64))
            self._uid_array_cache = cached
        return cached[1]

    def detect_collisions(self) -> None:
        """Update the contact points for the bodies where they stand, without stepping."""
        self._p.performCollisionDetection(physicsClientId=self._client)

    def contact_rows(
        self, body: int | None = None, max_distance: float | None = None
    ) -> list[tuple[int, int, tuple, tuple, tuple, float]]:
        """The contact points found by the last step or :meth:`detect_collisions` (of body
        ``body`` as side A, or all), in PyBullet's order, as plain tuples ``(body_a, body_b,
        position_a, position_b, normal, distance)`` with scene body indices (the fields of
        :class:`ContactPoint`, which the reverse stepper's contact query builds arrays from
        without paying for named tuples). With ``max_distance``, only points whose signed
        distance is at most that, m."""
        if body is None:
            pts = self._p.getContactPoints(physicsClientId=self._client)
        else:
            pts = self._p.getContactPoints(bodyA=self._uids[body], physicsClientId=self._client)
        index = self._uid_index
        if max_distance is None:
            return [(index[pt[1]], index[pt[2]], pt[5], pt[6], pt[7], pt[8]) for pt in pts]
        return [
            (index[pt[1]], index[pt[2]], pt[5], pt[6], pt[7], pt[8])
            for pt in pts
            if not pt[8] > max_distance  # as before the filter: a NaN distance is kept
        ]

    def contact_arrays(self, max_distance: float | None = None) -> tuple[np.ndarray, ...]:
        """All of :meth:`contact_rows`' fields as arrays, without a tuple per point
        (:func:`workbench.sim.points.contact_arrays`: the reverse stepper's contact query)."""
        pts = self._p.getContactPoints(physicsClientId=self._client)
        return contact_arrays(pts, self._uid_lookup, max_distance)

    def contact_points(
        self, body: int | None = None, max_distance: float | None = None
    ) -> list[ContactPoint]:
        """:meth:`contact_rows` as :class:`ContactPoint` named tuples."""
        return [ContactPoint(*row) for row in self.contact_rows(body, max_distance)]

    def closest_distance(self, a: int, b: int, max_distance: float) -> float:
        """Signed distance between bodies ``a`` and ``b`` (negative: penetration), m, from
        PyBullet's closest points; ``max_distance`` when they are farther apart."""
        pts = self._p.getClosestPoints(
            self._uids[a], self._uids[b], max_distance, physicsClientId=self._client
        )
        return float(min((pt[8] for pt in pts), default=max_distance))

    def aabb(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper corners, shape (3,), m, of body ``j``'s world bounding box."""
        lo, hi = self._p.getAABB(self._uids[j], physicsClientId=self._client)
        return np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)

    def dynamics_info(self, j: int) -> dict[str, Any]:
        """What PyBullet holds for body ``j``: ``mass`` (kg), ``inertia_diagonal`` (principal
        moments, kg·m²), ``inertial_position`` and ``inertial_orientation`` (in the body frame),
        ``friction``, ``restitution``, ``rolling_friction``, ``spinning_friction``."""
        info = self._p.getDynamicsInfo(self._uids[j], -1, physicsClientId=self._client)
        return dict(zip(_DYNAMICS_INFO, info, strict=False))  # the first 8 of its 12 entries

    # ------------------------------------------------------------------ viewer and images
    @property
    def error(self) -> type[Exception]:
        """The exception PyBullet raises, e.g. for a call after the viewer window was closed."""
        return self._p.error

    def is_connected(self) -> bool:
        """False once the client is gone (e.g. the viewer window was closed)."""
        return self._client is not None and bool(self._p.isConnected(physicsClientId=self._client))

    def freeze(self) -> None:
        """No real-time stepping and no gravity: placed bodies stay put (replay)."""
        self._p.setRealTimeSimulation(0, physicsClientId=self._client)
        self._p.setGravity(0.0, 0.0, 0.0, physicsClientId=self._client)

    def set_view(self, target: np.ndarray, distance: float, yaw: float, pitch: float) -> None:
        """Point the viewer's camera at ``target`` (3,), m, from ``distance`` m, at ``yaw`` and
        ``pitch`` degrees (z up)."""
        self._p.resetDebugVisualizerCamera(
            distance, yaw, pitch, [float(v) for v in target], physicsClientId=self._client
        )

    def show_text(self, text: str, position: np.ndarray, replace: int = -1) -> int:
        """Show ``text`` at ``position`` (3,), m, in the viewer, in place of the text of id
        ``replace`` (-1: none); returns the new text's id."""
        return self._p.addUserDebugText(
            text,
            [float(v) for v in position],
            textColorRGB=[0, 0, 0],
            textSize=1.5,
            replaceItemUniqueId=replace,
            physicsClientId=self._client,
        )

    def camera(
        self, target, distance: float, yaw: float, pitch: float, fov: float, aspect: float
    ) -> tuple:
        """A fixed camera for :meth:`render`: looking at ``target`` (3,), m, from ``distance``
        m at ``yaw`` and ``pitch`` degrees (z up), vertical field of view ``fov`` degrees,
        image width / height ``aspect``; the depth range is ``distance`` / 100 to × 100."""
        p, c = self._p, self._client
        view = p.computeViewMatrixFromYawPitchRoll(
            [float(v) for v in target], distance, yaw, pitch, 0.0, 2, physicsClientId=c
        )
        proj = p.computeProjectionMatrixFOV(
            fov, aspect, distance / 100.0, distance * 100.0, physicsClientId=c
        )
        return view, proj

    def render(self, camera: tuple, width: int, height: int) -> np.ndarray:
        """RGB image, shape (height, width, 3), uint8, of the bodies where they stand, seen by
        ``camera`` (:meth:`camera`) with PyBullet's software renderer (no display needed)."""
        view, proj = camera
        p = self._p
        _, _, rgba, _, _ = p.getCameraImage(
            width, height, view, proj, renderer=p.ER_TINY_RENDERER, physicsClientId=self._client
        )
        return np.asarray(rgba, dtype=np.uint8).reshape(height, width, 4)[:, :, :3]

    def body_mask(self, camera: tuple, width: int, height: int) -> np.ndarray:
        """Which body each pixel of :meth:`render`'s image shows: shape (height, width), int,
        the body's index in the scene, -1 where no body is seen (tests and framing checks)."""
        p = self._p
        _, _, _, _, seg = p.getCameraImage(
            width, height, *camera, renderer=p.ER_TINY_RENDERER, physicsClientId=self._client
        )
        uid = np.asarray(seg, dtype=np.int64).reshape(height, width)
        index = np.full(max(self._uids, default=0) + 2, -1, dtype=np.int64)
        index[np.asarray(self._uids, dtype=np.int64)] = np.arange(len(self._uids))
        return np.where(uid >= 0, index[np.clip(uid, -1, len(index) - 2)], -1)

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        p, c, s = self._p, self._client, self.scene
        p.resetSimulation(physicsClientId=c)
        if self.gui:
            p.configureDebugVisualizer(p.COV_ENABLE_GUI, 0, physicsClientId=c)
        p.setTimeStep(s.settings.dt, physicsClientId=c)
        p.setGravity(*s.gravity, physicsClientId=c)
        params = dict(
            numSolverIterations=s.settings.solver_iterations, deterministicOverlappingPairs=1
        )
        if s.settings.contact_breaking_threshold is not None:
            params["contactBreakingThreshold"] = s.settings.contact_breaking_threshold
        if s.settings.restitution_velocity_threshold is not None:
            params["restitutionVelocityThreshold"] = s.settings.restitution_velocity_threshold
        if s.settings.contact_erp is not None:
            params["contactERP"] = s.settings.contact_erp
        p.setPhysicsEngineParameter(physicsClientId=c, **params)
        self._uids: list[int] = []
        self.frames: list[BodyFrame] = []
        for k, body in enumerate(s.bodies):
            colour = body_colour(k, body)
            uid, frame = self._create_body(body, colour)
            self._uids.append(uid)
            self.frames.append(frame)
        self._index = {b.name: k for k, b in enumerate(s.bodies)}
        self._uid_index = {uid: k for k, uid in enumerate(self._uids)}
        self._uid_lookup = np.full(max(self._uids, default=-1) + 1, -1, dtype=int)
        self._uid_lookup[list(self._uids)] = np.arange(len(self._uids))
        self._actions: list = []
        self._constraints: dict[str, list[int]] = {}
        prescribed_joints = {pr.joint: pr for pr in s.prescribed if pr.joint is not None}
        for joint in s.joints:
            self._constraints[joint.name] = self._create_joint(
                joint, prescribed_joints.get(joint.name)
            )
        for pr in s.prescribed:
            if pr.body is not None:
                self._prescribe_body(pr)
        for body in s.bodies:
            self._add_body_forces(body)
        for spring in s.springs:
            self._add_spring(spring)

    def _create_body(self, body: Body, colour) -> tuple[int, BodyFrame]:
        p, c = self._p, self._client
        shape = body.shape
        rot = body.rotation
        if shape.type == "urdf":
            return self._load_urdf(body)
        col, vis = self._shapes(body, colour)
        props = body.mass_properties
        over = self._mass_overrides.get(body.name, {})
        if props is None:  # plane: static, no mass properties
            mass, com, J = 0.0, np.zeros(3), np.zeros((3, 3))
        else:
            mass = 0.0 if body.fixed else float(over.get("mass", props.mass))
            com = np.asarray(over.get("com", props.com), dtype=float)
            J = np.asarray(over.get("inertia", props.inertia_matrix), dtype=float)
        if mass > 0:
            moments, q_p = principal_frame(J)
        else:
            moments, q_p = np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0])
        uid = p.createMultiBody(
            baseMass=mass,
            baseCollisionShapeIndex=col,
            baseVisualShapeIndex=vis,
            basePosition=list(body.position),
            baseOrientation=rot.as_quat().tolist(),
            baseInertialFramePosition=com.tolist(),
            baseInertialFrameOrientation=q_p.tolist(),
            physicsClientId=c,
        )
        dyn = dynamics_arguments(body, self.scene.settings)
        if mass > 0:
            dyn["localInertiaDiagonal"] = moments.tolist()
        p.changeDynamics(uid, -1, physicsClientId=c, **dyn)
        if not body.collision:  # takes part in no contact (e.g. an abstract body of a mechanism)
            p.setCollisionFilterGroupMask(uid, -1, 0, 0, physicsClientId=c)
        if mass > 0:
            # Initial velocities are of the centre of mass (m/s) and world angular (rad/s).
            p.resetBaseVelocity(
                uid, list(body.linear_velocity), list(body.angular_velocity), physicsClientId=c
            )
        return uid, BodyFrame(com, q_p, moments, J if mass > 0 else np.zeros((3, 3)), mass)

    def _shapes(self, body: Body, colour) -> tuple[int, int]:
        p, c = self._p, self._client
        path = None
        if body.shape.type == "mesh":
            path = self._shape_file(body, f"mesh file '{body.shape.file}' not found")
        args = shape_arguments(body.shape, path, plane_as_box=self.plane_as_box, visual=self.visual)
        ckw = dict(args.collision)
        if args.concave:
            ckw["flags"] = p.GEOM_FORCE_CONCAVE_TRIMESH
        col = p.createCollisionShape(getattr(p, args.geometry), physicsClientId=c, **ckw)
        vis = -1
        if self.visual:
            rgba = list(args.colour or colour)
            geom = getattr(p, args.visual_geometry)
            vis = p.createVisualShape(geom, rgbaColor=rgba, physicsClientId=c, **args.visual)
        return col, vis

    def _shape_file(self, body: Body, missing: str) -> Path:
        """The resolved file of a mesh or URDF body; a SceneError saying ``missing`` if none."""
        path = resolve_file(body.shape.file, self.scene.base_dir)
        if path is None:
            raise SceneError(self.scene.source, f"bodies.{body.name}.shape.file", missing)
        return path

    def _load_urdf(self, body: Body) -> tuple[int, BodyFrame]:
        p, c = self._p, self._client
        missing = f"URDF '{body.shape.file}' not found next to the scene or in PyBullet's data"
        path = self._shape_file(body, missing)
        inertials = self._urdf_inertials(body)
        flags = p.URDF_USE_INERTIA_FROM_FILE if body.shape.inertia == "file" else 0
        chatter: list[str] = []
        try:
            with self._urdf_copy(body, path, inertials) as load_path:
                with _captured_output(chatter), self._uncached(bool(inertials)):
                    uid = p.loadURDF(
                        str(load_path),
                        list(body.position),
                        body.rotation.as_quat().tolist(),
                        useFixedBase=body.fixed,
                        globalScaling=body.shape.global_scaling,
                        flags=flags,
                        physicsClientId=c,
                    )
        except p.error as exc:  # PyBullet says only "Cannot load URDF file."
            why = _urdf_problem("".join(chatter)) or " ".join(str(exc).split())
            raise SceneError(
                self.scene.source,
                f"bodies.{body.name}.shape.file",
                f"PyBullet cannot load the URDF '{path}': {why}",
            ) from None
        if chatter and chatter[0].strip():
            sys.stderr.write(chatter[0])  # a successful load's warnings, as PyBullet wrote them
        links = _urdf_indices(p, c, uid)
        if inertials:
            self._check_urdf_inertials(body, uid, links, inertials)
        info = p.getDynamicsInfo(uid, -1, physicsClientId=c)
        mass, moments = float(info[0]), np.asarray(info[2], dtype=float)
        com, q_p = np.asarray(info[3], dtype=float), np.asarray(info[4], dtype=float)
        if not np.any(q_p):
            q_p = np.array([0.0, 0.0, 0.0, 1.0])
        materials = {links[name]: ls.material for name, ls in body.shape.links.items()}
        for link in range(-1, p.getNumJoints(uid, physicsClientId=c)):
            dyn = dynamics_arguments(body, self.scene.settings, materials.get(link))
            if link >= 0:  # else PyBullet puts the link's material on the base (measured)
                dyn = {k: v for k, v in dyn.items() if k not in BODY_WIDE_DYNAMICS}
            p.changeDynamics(uid, link, physicsClientId=c, **dyn)
        self._set_urdf_joints(body, uid)
        if not body.fixed:
            p.resetBaseVelocity(
                uid, list(body.linear_velocity), list(body.angular_velocity), physicsClientId=c
            )
        Rp = Rotation.from_quat(q_p).as_matrix()
        J = Rp @ np.diag(moments) @ Rp.T
        return uid, BodyFrame(com, q_p, moments, J, 0.0 if body.fixed else mass)

    def _urdf_inertials(self, body: Body) -> dict[str, tuple]:
        """Link name -> (mass, com, inertia) of a URDF body's random links: the realization's
        values (``mass_overrides``, see :class:`Engine`), else the URDF's nominal ones, so the
        nominal run loads the same rewritten file as every realization."""
        over = self._mass_overrides.get(body.name, {})
        out = {}
        for link in body.random_links:
            given = over if link.is_base else over.get("links", {}).get(link.name, {})
            props = link.props
            out[link.name] = (
                float(given.get("mass", props.mass)),
                np.asarray(given.get("com", props.com), dtype=float),
                np.asarray(given.get("inertia", props.inertia_matrix), dtype=float),
            )
        return out

    @contextlib.contextmanager
    def _uncached(self, uncached: bool):
        """Load files without PyBullet's file cache when ``uncached``: PyBullet keeps every
        file it read by name, across ``resetSimulation`` (measured: a rewritten copy under the
        same name loaded the first copy's masses), and a new name per realization grows the
        cache and the load time with every realization (17 kB and about 1% per load of the
        KUKA arm). Turning caching off empties the cache; it is turned on again after."""
        if not uncached:
            yield
            return
        p, c = self._p, self._client
        p.setPhysicsEngineParameter(enableFileCaching=0, physicsClientId=c)
        try:
            yield
        finally:
            p.setPhysicsEngineParameter(enableFileCaching=1, physicsClientId=c)

    @contextlib.contextmanager
    def _urdf_copy(self, body: Body, path: Path, inertials: dict):
        """The file to load: ``path`` itself without random links; else a private temporary
        copy with their ``<inertial>`` replaced
        (:func:`~workbench.scene.urdf.urdf_with_inertials`), deleted once PyBullet has read it
        (PyBullet cannot move a link's inertial frame after loading)."""
        if not inertials:
            yield path
            return
        import tempfile

        try:
            text = urdf_with_inertials(path, inertials, body.shape.global_scaling)
        except UrdfError as exc:
            where = f"bodies.{body.name}.shape.file"
            raise SceneError(self.scene.source, where, str(exc)) from None
        fd, name = tempfile.mkstemp(prefix=f"workbench-{body.name}-", suffix=".urdf")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            yield Path(name)
        finally:
            os.unlink(name)

    def _check_urdf_inertials(self, body: Body, uid: int, links: dict, inertials: dict) -> None:
        """Check that PyBullet holds exactly the mass, centre of mass and principal moments
        written for each random link (``getDynamicsInfo``); a SimulationError otherwise."""
        p, c = self._p, self._client
        for name, (mass, com, J) in inertials.items():
            info = p.getDynamicsInfo(uid, links[name], physicsClientId=c)
            moments, _ = principal_frame(J)
            got = np.concatenate([[info[0]], info[3], info[2]])
            want = np.concatenate([[mass], com, moments])
            if np.any(np.abs(got - want) > _URDF_INERTIAL_RTOL * np.abs(want)):
                raise SimulationError(
                    f"{body.name}: link '{name}': PyBullet holds mass, com, moments "
                    f"{got.tolist()} instead of the sampled {want.tolist()}"
                )

    def _set_urdf_joints(self, body: Body, uid: int) -> None:
        """Joint damping, limits, initial positions and motors of a URDF body's revolute,
        continuous and prismatic joints, from ``shape.joints`` over the URDF's values. A joint
        without ``control`` gets a velocity motor of target 0 and maximum force its friction
        (the scene's, else the URDF's ``<dynamics friction>``, else 0: a free joint), in place
        of PyBullet's default motors, which hold every joint."""
        p, c = self._p, self._client
        for i in range(p.getNumJoints(uid, physicsClientId=c)):
            info = p.getJointInfo(uid, i, physicsClientId=c)
            if info[2] not in (p.JOINT_REVOLUTE, p.JOINT_PRISMATIC):
                continue
            js = body.shape.joints.get(info[1].decode("utf-8"))
            friction = float(info[7])  # the URDF's <dynamics friction>, 0 when it has none
            if js is not None:
                dyn = {}
                if js.damping is not None:
                    dyn["jointDamping"] = js.damping
                if js.lower is not None or js.upper is not None:
                    dyn["jointLowerLimit"] = js.lower if js.lower is not None else info[8]
                    dyn["jointUpperLimit"] = js.upper if js.upper is not None else info[9]
                if dyn:
                    p.changeDynamics(uid, i, physicsClientId=c, **dyn)
                if js.initial_position is not None:
                    p.resetJointState(uid, i, js.initial_position, 0.0, physicsClientId=c)
                if js.friction is not None:
                    friction = js.friction
                if js.control is not None:
                    p.setJointMotorControl2(
                        uid, i, physicsClientId=c, **motor_arguments(p, js.control)
                    )
                    continue
            p.setJointMotorControl2(
                uid, i, p.VELOCITY_CONTROL, targetVelocity=0.0, force=friction, physicsClientId=c
            )

    # ------------------------------------------------------------------ joints
    def _pose(self, name: str) -> tuple[int, np.ndarray, Rotation]:
        """PyBullet id, COM position and inertial-frame rotation of a body (or the world)."""
        if name == WORLD:
            return -1, np.zeros(3), Rotation.identity()
        uid = self._uids[self._index[name]]
        pos, q = self._p.getBasePositionAndOrientation(uid, physicsClientId=self._client)
        return uid, np.asarray(pos), Rotation.from_quat(q)

    def _frame_in(self, name: str, point, rot: Rotation) -> tuple[list, list]:
        """A world frame (point, rot) expressed in body ``name``'s inertial frame."""
        _, x, r = self._pose(name)
        local = r.inv().apply(np.asarray(point, dtype=float) - x)
        return local.tolist(), (r.inv() * rot).as_quat().tolist()

    def _create_joint(self, joint: Joint, prescribed) -> list[int]:
        # PyBullet's parent is our child (always a body); PyBullet's child is our parent, which
        # may be the world (-1). Frames are expressed in each side's inertial (COM) frame.
        p, c = self._p, self._client
        child_uid, child_x, _ = self._pose(joint.child)
        par_uid, _, _ = self._pose(joint.parent)
        anchor = np.asarray(joint.anchor if joint.anchor is not None else child_x, dtype=float)
        axis = None
        if joint.axis is not None:
            axis = np.asarray(joint.axis, dtype=float)
            axis = axis / np.max(np.abs(axis))  # first to O(1): |1e308 e_x|^2 would overflow
            axis = axis / np.linalg.norm(axis)
        # Joint frame at t = 0: origin at the anchor, z along the axis (when there is one).
        jrot = z_to(axis) if axis is not None else Rotation.identity()
        force = joint.max_force
        ids: list[int] = []

        def make(kind, point, axis_local=(0, 0, 0), frame=None):
            frame = jrot if frame is None else frame
            a_pos, a_orn = self._frame_in(joint.child, point, frame)
            b_pos, b_orn = self._frame_in(joint.parent, point, frame)
            cid = p.createConstraint(
                child_uid,
                -1,
                par_uid,
                -1,
                kind,
                list(axis_local),
                a_pos,
                b_pos,
                parentFrameOrientation=a_orn,
                childFrameOrientation=b_orn,
                physicsClientId=c,
            )
            if force is not None:
                p.changeConstraint(cid, maxForce=force, physicsClientId=c)
            ids.append(cid)
            return cid, b_pos, b_orn

        if prescribed is not None:
            cid, b_pos, b_orn = make(p.JOINT_FIXED, anchor)
            p.changeConstraint(cid, maxForce=prescribed.max_force, physicsClientId=c)
            _, _, r_par = self._pose(joint.parent)
            axis_par = r_par.inv().apply(axis)  # axis in the parent's inertial frame
            b_pos = np.asarray(b_pos)
            b_rot = Rotation.from_quat(b_orn)
            if joint.type == "prismatic":

                def act(t, cid=cid):
                    s = float(prescribed.at(t + self.scene.settings.dt))
                    p.changeConstraint(
                        cid,
                        jointChildPivot=(b_pos + s * axis_par).tolist(),
                        maxForce=prescribed.max_force,
                        physicsClientId=c,
                    )
            else:

                def act(t, cid=cid):
                    th = float(prescribed.at(t + self.scene.settings.dt))
                    q = (Rotation.from_rotvec(th * axis_par) * b_rot).as_quat()
                    p.changeConstraint(
                        cid,
                        jointChildFrameOrientation=q.tolist(),
                        maxForce=prescribed.max_force,
                        physicsClientId=c,
                    )

            self._actions.append(act)
        elif joint.type == "fixed":
            make(p.JOINT_FIXED, anchor)
        elif joint.type == "ball":
            make(p.JOINT_POINT2POINT, anchor)
        elif joint.type == "prismatic":
            # PyBullet reads a prismatic axis in its parent's (our child's) inertial frame and
            # needs that frame as the joint frame (measured: a joint frame rotated onto the
            # axis lets the body drift off the axis by metres).
            _, _, r_child = self._pose(joint.child)
            make(p.JOINT_PRISMATIC, anchor, r_child.inv().apply(axis).tolist(), frame=r_child)
        elif joint.type == "revolute":
            make(p.JOINT_POINT2POINT, anchor - 0.5 * REVOLUTE_LEVER * axis)
            make(p.JOINT_POINT2POINT, anchor + 0.5 * REVOLUTE_LEVER * axis)
        return ids

    def _prescribe_body(self, pr) -> None:
        p, c = self._p, self._client
        k = self._index[pr.body]
        uid, x0, r0 = self._pose(pr.body)
        cid = p.createConstraint(
            uid,
            -1,
            -1,
            -1,
            p.JOINT_FIXED,
            [0, 0, 0],
            [0, 0, 0],
            x0.tolist(),
            childFrameOrientation=r0.as_quat().tolist(),
            physicsClientId=c,
        )
        p.changeConstraint(cid, maxForce=pr.max_force, physicsClientId=c)
        dt = self.scene.settings.dt

        def act(t):
            d = np.asarray(pr.at(t + dt), dtype=float)  # target at the end of this step
            p.changeConstraint(
                cid, jointChildPivot=(x0 + d).tolist(), maxForce=pr.max_force, physicsClientId=c
            )

        self._actions.append(act)
        self._constraints[f"prescribed:{self.scene.bodies[k].name}"] = [cid]

    # ------------------------------------------------------------------ forces
    def _add_body_forces(self, body: Body) -> None:
        k = self._index[body.name]
        frame = self.frames[k]
        if frame.mass == 0.0:
            return
        p, c, uid = self._p, self._client, self._uids[k]
        wf = p.WORLD_FRAME
        if body.drag is not None:
            coef = body.drag.coefficient(frame.mass) * frame.mass  # m c, kg/m

            def drag(t):
                v = p.getBaseVelocity(uid, physicsClientId=c)[0]
                speed = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) ** 0.5
                pos = p.getBasePositionAndOrientation(uid, physicsClientId=c)[0]
                f = -coef * speed
                p.applyExternalForce(
                    uid, -1, (f * v[0], f * v[1], f * v[2]), pos, wf, physicsClientId=c
                )

            self._actions.append(drag)
        if body.force is not None:
            force = list(body.force)

            def push(t):
                pos = p.getBasePositionAndOrientation(uid, physicsClientId=c)[0]
                p.applyExternalForce(uid, -1, force, pos, wf, physicsClientId=c)

            self._actions.append(push)
        if body.torque is not None:
            torque = list(body.torque)
            self._actions.append(
                lambda t: p.applyExternalTorque(uid, -1, torque, wf, physicsClientId=c)
            )

    def _add_spring(self, spring) -> None:
        p, c = self._p, self._client
        wf = p.WORLD_FRAME
        anchor = np.asarray(spring.anchor, dtype=float)
        sides = []
        for name in (spring.body_a, spring.body_b):
            uid, x, r = self._pose(name)
            # attachment point in the inertial frame, and the initial inertial rotation
            sides.append((uid, r.inv().apply(anchor - x), r))
        (ua, la, ra0), (ub, lb, rb0) = sides
        law = SpringLaw.of(spring, ra0, rb0)

        def read(uid, local):
            if uid == -1:
                return local, np.zeros(3), Rotation.identity(), np.zeros(3), local
            x, q = p.getBasePositionAndOrientation(uid, physicsClientId=c)
            v, w = p.getBaseVelocity(uid, physicsClientId=c)
            r = Rotation.from_quat(q)
            arm = r.apply(local)
            point = np.asarray(x) + arm
            vel = np.asarray(v) + np.cross(w, arm)
            return point, vel, r, np.asarray(w), point

        def act(t):
            pa, va, ra, wa, _ = read(ua, la)
            pb, vb, rb, wb, _ = read(ub, lb)
            f, tau = law.wrench(pa, va, ra, wa, pb, vb, rb, wb)
            if ub != -1:
                p.applyExternalForce(ub, -1, f.tolist(), pb.tolist(), wf, physicsClientId=c)
                p.applyExternalTorque(ub, -1, tau.tolist(), wf, physicsClientId=c)
            if ua != -1:
                p.applyExternalForce(ua, -1, (-f).tolist(), pa.tolist(), wf, physicsClientId=c)
                p.applyExternalTorque(ua, -1, (-tau).tolist(), wf, physicsClientId=c)

        self._actions.append(act)
