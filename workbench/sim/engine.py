"""PyBullet engine: builds a :class:`~workbench.scene.model.Scene` into a physics client, steps
it with the per-step applied forces, and reads :class:`~workbench.sim.state.State` s.

This is the only way to PyBullet: :class:`Engine` and its parts, the modules
``workbench/sim/engine*.py``, are the only importers of PyBullet, and the modules that record,
replay and query scenes call its methods (see ``docs/architecture.md``). The parts are mixins of
one object sharing one client (:class:`~workbench.sim.engine_client.EngineBase`), one module per
concern:

- ``engine.py`` (here): connecting, building the scene's bodies (shapes, meshes, URDF files with
  their random links), stepping;
- ``engine_joints.py``: joints, prescribed motions, forces and springs;
- ``engine_state.py``: reading and placing states, the fast readers of the recording loop;
- ``engine_links.py``: the links and joints of URDF bodies;
- ``engine_contacts.py``: contact points, distances, bounding boxes;
- ``engine_view.py``: the viewer's camera and text, rendered images;
- ``engine_client.py``: importing PyBullet, the attributes the parts share.

The engine applies the facts measured for PyBullet:

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
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from workbench.errors import SceneError, SimulationError
from workbench.scene.inertia import principal_frame
from workbench.scene.model import Body, Scene, resolve_file
from workbench.scene.urdf import UrdfError, urdf_with_inertials
from workbench.sim.arguments import (
    BODY_WIDE_DYNAMICS,
    body_colour,
    dynamics_arguments,
    motor_arguments,
    shape_arguments,
)
from workbench.sim.engine_client import captured_output, import_pybullet
from workbench.sim.engine_contacts import ContactPoint, ContactQueries
from workbench.sim.engine_joints import JointsAndForces
from workbench.sim.engine_links import UrdfLinks
from workbench.sim.engine_state import BodyStates
from workbench.sim.engine_view import ViewerAndImages
from workbench.sim.frames import BodyFrame, mass_overrides_from_params

__all__ = [
    "Engine",
    "BodyFrame",
    "ContactPoint",
    "import_pybullet",
    "mass_overrides_from_params",
]


def _urdf_problem(text: str) -> str:
    """The last message of PyBullet's ``b3Error[...]`` lines in ``text``, or ""."""
    parts = [" ".join(x.split("]:", 1)[-1].split()) for x in text.split("b3Error[")[1:]]
    parts = [x for x in parts if x]
    return parts[-1] if parts else ""


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


class Engine(BodyStates, UrdfLinks, ContactQueries, JointsAndForces, ViewerAndImages):
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
    shown_only : bool
        Build only what replay shows (:meth:`~workbench.sim.engine_view.ViewerAndImages.
        _build_shown`): massless visual bodies, created many at a time, in the same inertial
        frames as a full build, so :meth:`set_state` and :meth:`set_poses` place them alike. Not
        for stepping.

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
        shown_only: bool = False,
    ):
        self._p = import_pybullet()
        self.scene = scene
        self.gui = gui
        self.visual = gui if visual is None else visual
        self.plane_as_box = plane_as_box
        self._mass_overrides = mass_overrides or {}
        self.shown_only = shown_only
        if shown_only:
            self.visual = True
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

    # ------------------------------------------------------------------ stepping
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

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        if self.shown_only:
            self._build_shown()
            return
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
        frame = self._inertial_frame(body)
        mass, com, moments, q_p = frame.mass, frame.com, frame.moments, frame.principal
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
        return uid, frame

    def _inertial_frame(self, body: Body) -> BodyFrame:
        """The inertial frame and mass properties a shape body (not a URDF) is built with: the
        scene's, or the realization's from ``mass_overrides``; fixed bodies and planes are
        massless, their inertial frame the body frame turned by nothing."""
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
        return BodyFrame(com, q_p, moments, J if mass > 0 else np.zeros((3, 3)), mass)

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
                with captured_output(chatter), self._uncached(bool(inertials)):
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
