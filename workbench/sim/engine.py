"""PyBullet engine: builds a :class:`~workbench.scene.model.Scene` into a physics client, steps it with
the per-step applied forces, and reads :class:`~workbench.sim.state.State` s.

This is the only module of the workbench core that imports PyBullet. It applies the facts measured
in DESIGN.md:

- ``createMultiBody`` takes the body (link) frame; PyBullet reports and resets the centre-of-mass
  (inertial) frame, including its principal-axes rotation. Each body's full inertia tensor J and
  centre-of-mass offset are realized by ``eigh(J)`` -> ``localInertiaDiagonal`` +
  ``baseInertialFrameOrientation`` (det = +1), and the inertial frame is kept here because
  ``getDynamicsInfo`` does not always report it.
- Linear and angular damping are set to 0 on every body (PyBullet's default 0.04 biases results),
  and the 100 m/s / 100 rad/s speed clamp of multibody bases is lifted (:data:`MAX_SPEED`).
- Materials are set on every body deliberately (see :class:`workbench.scene.model.Material`).
- Joints are PyBullet constraints: FIXED, POINT2POINT (ball), PRISMATIC, and revolute as two
  POINT2POINT constraints on the axis (``createConstraint`` has no revolute type). A prescribed
  joint or body motion is a FIXED constraint whose frame follows the time table.
- Quadratic drag, constant forces and 6-DOF springs are external forces applied before every step
  (PyBullet clears them after each step).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from workbench.errors import SceneError
from workbench.scene.inertia import principal_frame
from workbench.scene.model import WORLD, Body, Joint, Scene, Settings, resolve_file
from workbench.sim.state import State

__all__ = ["Engine", "BodyFrame", "import_pybullet", "mass_overrides_from_params"]

#: Lever arm (m) between the two POINT2POINT constraints that make a revolute joint. Long enough
#: that the pair resists rotation about the other axes stiffly, short enough to stay inside
#: typical bodies; the constraint rows are exact, so the value only conditions the solver.
REVOLUTE_LEVER = 0.1

#: Speed cap handed to PyBullet (m/s and rad/s). A multibody base is otherwise clamped to
#: 100 m/s and 100 rad/s (btMultiBody's default maximum coordinate velocity), silently: measured
#: here, a ball launched at 300 m/s flew at 100 m/s. The value is "no cap" in practice.
MAX_SPEED = 1e30

#: Colour of fixed bodies (the ground) in the viewer (RGBA).
_GREY = (0.75, 0.75, 0.72, 1)

#: Colour of moving bodies in the viewer (RGBA), cycled.
_PALETTE = [
    (0.85, 0.33, 0.10, 1),
    (0.00, 0.45, 0.74, 1),
    (0.93, 0.69, 0.13, 1),
    (0.47, 0.67, 0.19, 1),
    (0.49, 0.18, 0.56, 1),
    (0.30, 0.75, 0.93, 1),
    (0.64, 0.08, 0.18, 1),
]


def import_pybullet():
    """Import pybullet without its banner ("pybullet build time ...", written to stderr)."""
    import sys

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


def mass_overrides_from_params(params: dict) -> dict:
    """``{"body/mass": m, "body/com": c, "body/inertia": J}`` -> ``{body: {...}}`` for
    :class:`Engine` (the realized mass properties a trajectory was run with)."""
    out: dict[str, dict] = {}
    for key, value in params.items():
        body, _, quantity = key.partition("/")
        if quantity in ("mass", "com", "inertia"):
            out.setdefault(body, {})[quantity] = np.asarray(value, dtype=float)
    return out


def _flush_c_stdout() -> None:
    import ctypes

    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)


#: Half side and half depth (m) of the box that stands in for a plane with ``plane_as_box``.
PLANE_BOX_HALF = 50.0
PLANE_BOX_DEPTH = 0.5


@dataclass(frozen=True)
class BodyFrame:
    """Where a body's centre-of-mass frame sits in its body frame.

    Attributes
    ----------
    com : ndarray, shape (3,)
        Centre of mass in the body frame, m.
    principal : ndarray, shape (4,)
        Quaternion (x, y, z, w) of the principal (inertial) frame in the body frame.
    moments : ndarray, shape (3,)
        Principal moments, kg·m² (zeros for static bodies).
    inertia : ndarray, shape (3, 3)
        Inertia about the centre of mass in the body frame, kg·m².
    mass : float
        kg (0 for static bodies).
    """

    com: np.ndarray
    principal: np.ndarray
    moments: np.ndarray
    inertia: np.ndarray
    mass: float


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
        mass properties (sampled realizations use this).

    Notes
    -----
    The public methods do the bookkeeping; PyBullet calls live in the private helpers.
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
        self.p = import_pybullet()
        self.scene = scene
        self.gui = gui
        self.visual = gui if visual is None else visual
        self.plane_as_box = plane_as_box
        self._mass_overrides = mass_overrides or {}
        mode = self.p.GUI if gui else self.p.DIRECT
        self.client = self.p.connect(mode)
        if self.client < 0:
            raise RuntimeError(
                "could not connect to PyBullet" + (" GUI (is DISPLAY set?)" if gui else "")
            )
        try:
            self._build()
        except BaseException:
            self.close()  # a failed build must not leave the client (or a GUI window) open
            raise

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        if self.client is not None and self.client >= 0:
            with contextlib.suppress(Exception):
                self.p.disconnect(physicsClientId=self.client)
        self.client = None

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

    def state(self) -> State:
        """Current :class:`State` of all bodies (body-frame orientation, COM position)."""
        pos, q_in, v, w = self._read_inertial()
        q_body = self.body_orientation(q_in)
        return State(pos, q_body, v, w)

    def read_raw(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """COM positions, *inertial-frame* quaternions, linear and angular velocities, (n, k)."""
        return self._read_inertial()

    def body_orientation(self, q_inertial: np.ndarray) -> np.ndarray:
        """Convert inertial-frame quaternions, shape (..., n, 4), to body-frame ones."""
        q_inertial = np.asarray(q_inertial, dtype=float)
        out = np.empty_like(q_inertial)
        for j, frame in enumerate(self.frames):
            if frame.principal[3] == 1.0:  # identity principal frame: nothing to convert
                out[..., j, :] = q_inertial[..., j, :]
            else:
                r = Rotation.from_quat(q_inertial[..., j, :].reshape(-1, 4))
                conv = (r * Rotation.from_quat(frame.principal).inv()).as_quat()
                out[..., j, :] = conv.reshape(q_inertial[..., j, :].shape)
        return out

    def set_state(self, state: State) -> None:
        """Place every body at ``state`` (used by replay and the reverse stepper)."""
        p, c = self.p, self.client
        for j, uid in enumerate(self.uids):
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
        self.p.stepSimulation(physicsClientId=self.client)

    @property
    def has_step_forces(self) -> bool:
        """True when Python applies forces or constraint updates before every step."""
        return bool(self._actions)

    def contact_count(self, body_index: int | None = None) -> int:
        """Number of contact points (of one body, or all) from the last step."""
        if body_index is None:
            return len(self.p.getContactPoints(physicsClientId=self.client))
        return len(
            self.p.getContactPoints(bodyA=self.uids[body_index], physicsClientId=self.client)
        )

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        p, c, s = self.p, self.client, self.scene
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
        self.uids: list[int] = []
        self.frames: list[BodyFrame] = []
        for k, body in enumerate(s.bodies):
            colour = _GREY if body.fixed else _PALETTE[k % len(_PALETTE)]
            uid, frame = self._create_body(body, colour)
            self.uids.append(uid)
            self.frames.append(frame)
        self._index = {b.name: k for k, b in enumerate(s.bodies)}
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
        p, c = self.p, self.client
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
        dyn = _dynamics(body, self.scene.settings)
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
        p, c = self.p, self.client
        shape = body.shape
        kw: dict = {}
        if shape.type == "sphere":
            geom, kw = p.GEOM_SPHERE, {"radius": shape.radius}
        elif shape.type == "box":
            geom, kw = p.GEOM_BOX, {"halfExtents": list(shape.halves)}
        elif shape.type == "cylinder":
            geom = p.GEOM_CYLINDER
            kw = {"radius": shape.radius, "height": shape.length}
        elif shape.type == "capsule":
            geom = p.GEOM_CAPSULE
            kw = {"radius": shape.radius, "height": shape.length}
        elif shape.type == "plane":
            geom, kw = p.GEOM_PLANE, {"planeNormal": list(shape.normal)}
        elif shape.type == "mesh":
            path = resolve_file(shape.file, self.scene.base_dir)
            if path is None:
                raise SceneError(
                    self.scene.source,
                    f"bodies.{body.name}.shape.file",
                    f"mesh file '{shape.file}' not found",
                )
            geom, kw = p.GEOM_MESH, {"fileName": str(path), "meshScale": list(shape.scale3)}
        else:  # pragma: no cover - schema forbids
            raise AssertionError(shape.type)
        ckw = dict(kw)
        if shape.type == "mesh" and shape.collision == "concave":
            ckw["flags"] = p.GEOM_FORCE_CONCAVE_TRIMESH
        if shape.type == "cylinder":
            ckw = {"radius": shape.radius, "height": shape.length}
        if shape.type == "plane" and self.plane_as_box:
            normal = np.asarray(shape.normal, dtype=float) / np.linalg.norm(shape.normal)
            ckw = {
                "halfExtents": [PLANE_BOX_HALF, PLANE_BOX_HALF, PLANE_BOX_DEPTH],
                "collisionFrameOrientation": _z_to(normal).as_quat().tolist(),
                "collisionFramePosition": (-PLANE_BOX_DEPTH * normal).tolist(),
            }
            col = p.createCollisionShape(p.GEOM_BOX, physicsClientId=c, **ckw)
        else:
            col = p.createCollisionShape(geom, physicsClientId=c, **ckw)
        vis = -1
        if self.visual:
            vkw = dict(kw)
            if shape.type in ("cylinder", "capsule"):
                vkw = {"radius": shape.radius, "length": shape.length}
            if shape.type == "plane":  # drawn as a thin 20 m slab whose top face is the plane
                normal = np.asarray(shape.normal, dtype=float) / np.linalg.norm(shape.normal)
                vkw = {
                    "halfExtents": [10, 10, 0.001],
                    "visualFrameOrientation": _z_to(normal).as_quat().tolist(),
                    "visualFramePosition": (-0.001 * normal).tolist(),
                }
                geom = p.GEOM_BOX
                colour = (0.8, 0.8, 0.8, 1)
            vis = p.createVisualShape(geom, rgbaColor=list(colour), physicsClientId=c, **vkw)
        return col, vis

    def _load_urdf(self, body: Body) -> tuple[int, BodyFrame]:
        p, c = self.p, self.client
        path = resolve_file(body.shape.file, self.scene.base_dir)
        if path is None:
            raise SceneError(
                self.scene.source,
                f"bodies.{body.name}.shape.file",
                f"URDF '{body.shape.file}' not found next to the scene or in PyBullet's data",
            )
        uid = p.loadURDF(
            str(path),
            list(body.position),
            body.rotation.as_quat().tolist(),
            useFixedBase=body.fixed,
            globalScaling=body.shape.global_scaling,
            physicsClientId=c,
        )
        info = p.getDynamicsInfo(uid, -1, physicsClientId=c)
        mass, moments = float(info[0]), np.asarray(info[2], dtype=float)
        com, q_p = np.asarray(info[3], dtype=float), np.asarray(info[4], dtype=float)
        if not np.any(q_p):
            q_p = np.array([0.0, 0.0, 0.0, 1.0])
        for link in range(-1, p.getNumJoints(uid, physicsClientId=c)):
            p.changeDynamics(uid, link, physicsClientId=c, **_dynamics(body, self.scene.settings))
        if not body.fixed:
            p.resetBaseVelocity(
                uid, list(body.linear_velocity), list(body.angular_velocity), physicsClientId=c
            )
        Rp = Rotation.from_quat(q_p).as_matrix()
        J = Rp @ np.diag(moments) @ Rp.T
        return uid, BodyFrame(com, q_p, moments, J, 0.0 if body.fixed else mass)

    # ------------------------------------------------------------------ joints
    def _pose(self, name: str) -> tuple[int, np.ndarray, Rotation]:
        """PyBullet id, COM position and inertial-frame rotation of a body (or the world)."""
        if name == WORLD:
            return -1, np.zeros(3), Rotation.identity()
        uid = self.uids[self._index[name]]
        pos, q = self.p.getBasePositionAndOrientation(uid, physicsClientId=self.client)
        return uid, np.asarray(pos), Rotation.from_quat(q)

    def _frame_in(self, name: str, point, rot: Rotation) -> tuple[list, list]:
        """A world frame (point, rot) expressed in body ``name``'s inertial frame."""
        _, x, r = self._pose(name)
        local = r.inv().apply(np.asarray(point, dtype=float) - x)
        return local.tolist(), (r.inv() * rot).as_quat().tolist()

    def _create_joint(self, joint: Joint, prescribed) -> list[int]:
        # PyBullet's parent is our child (always a body); PyBullet's child is our parent, which
        # may be the world (-1). Frames are expressed in each side's inertial (COM) frame.
        p, c = self.p, self.client
        child_uid, child_x, _ = self._pose(joint.child)
        par_uid, _, _ = self._pose(joint.parent)
        anchor = np.asarray(joint.anchor if joint.anchor is not None else child_x, dtype=float)
        axis = None
        if joint.axis is not None:
            axis = np.asarray(joint.axis, dtype=float)
            axis = axis / np.linalg.norm(axis)
        # Joint frame at t = 0: origin at the anchor, z along the axis (when there is one).
        jrot = _z_to(axis) if axis is not None else Rotation.identity()
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
        p, c = self.p, self.client
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
        p, c, uid = self.p, self.client, self.uids[k]
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
        p, c = self.p, self.client
        wf = p.WORLD_FRAME
        anchor = np.asarray(spring.anchor, dtype=float)
        sides = []
        for name in (spring.body_a, spring.body_b):
            uid, x, r = self._pose(name)
            # attachment point in the inertial frame, and the initial inertial rotation
            sides.append((uid, r.inv().apply(anchor - x), r))
        (ua, la, ra0), (ub, lb, rb0) = sides
        rel0 = ra0.inv() * rb0  # relative rotation b w.r.t. a at t = 0
        K = np.asarray(spring.stiffness)
        C = np.asarray(spring.damping)
        Kr = np.asarray(spring.rotational_stiffness)
        Cr = np.asarray(spring.rotational_damping)
        F0 = np.asarray(spring.preload)
        T0 = np.asarray(spring.preload_torque)

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
            axes = ra * ra0.inv()  # spring axes (world at t = 0) -> world now
            d = axes.inv().apply(pb - pa)
            dd = axes.inv().apply(vb - va)
            # small rotation of b relative to a since t = 0, in a's inertial frame, then in the
            # spring axes (world axes at t = 0 carried by a)
            delta_a = ((ra.inv() * rb) * rel0.inv()).as_rotvec()
            theta = ra0.apply(delta_a)
            wrel = axes.inv().apply(wb - wa)
            f_local = F0 - K * d - C * dd
            tau_local = T0 - Kr * theta - Cr * wrel
            f = axes.apply(f_local)
            tau = axes.apply(tau_local)
            if ub != -1:
                p.applyExternalForce(ub, -1, f.tolist(), pb.tolist(), wf, physicsClientId=c)
                p.applyExternalTorque(ub, -1, tau.tolist(), wf, physicsClientId=c)
            if ua != -1:
                p.applyExternalForce(ua, -1, (-f).tolist(), pa.tolist(), wf, physicsClientId=c)
                p.applyExternalTorque(ua, -1, (-tau).tolist(), wf, physicsClientId=c)

        self._actions.append(act)

    # ------------------------------------------------------------------ reading
    def _read_inertial(self):
        p, c = self.p, self.client
        n = len(self.uids)
        pos = np.empty((n, 3))
        q = np.empty((n, 4))
        v = np.empty((n, 3))
        w = np.empty((n, 3))
        for j, uid in enumerate(self.uids):
            pos[j], q[j] = p.getBasePositionAndOrientation(uid, physicsClientId=c)
            v[j], w[j] = p.getBaseVelocity(uid, physicsClientId=c)
        return pos, q, v, w


def _dynamics(body: Body, settings: Settings) -> dict:
    """``changeDynamics`` settings every body gets: no damping, no speed cap, its material, and
    the scene's contact processing threshold if it sets one."""
    dyn = dict(
        linearDamping=0.0,
        angularDamping=0.0,
        maxJointVelocity=MAX_SPEED,
        lateralFriction=body.material.friction,
        rollingFriction=body.material.rolling_friction,
        spinningFriction=body.material.spinning_friction,
        restitution=body.material.restitution,
    )
    if settings.contact_processing_threshold is not None:
        dyn["contactProcessingThreshold"] = settings.contact_processing_threshold
    return dyn


def _z_to(axis: np.ndarray) -> Rotation:
    """A rotation taking the z axis onto ``axis`` (unit)."""
    z = np.array([0.0, 0.0, 1.0])
    cross = np.cross(z, axis)
    s = np.linalg.norm(cross)
    if s < 1e-12:
        return Rotation.identity() if axis[2] > 0 else Rotation.from_rotvec([np.pi, 0.0, 0.0])
    return Rotation.from_rotvec(cross / s * np.arctan2(s, float(np.dot(z, axis))))
