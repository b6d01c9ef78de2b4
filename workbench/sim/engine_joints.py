"""Joints, prescribed motions, forces and springs: part of the
:class:`~workbench.sim.engine.Engine`, called while it builds a scene.

Joints are PyBullet constraints (FIXED, POINT2POINT, PRISMATIC; a revolute joint is two
POINT2POINT constraints on its axis); a prescribed joint or body motion is a FIXED constraint
whose frame follows the time table; quadratic drag, constant forces and torques and 6-DOF springs
(:mod:`workbench.sim.springs`) are external forces. What must happen before every step is
appended to ``_actions`` as closures holding the bound PyBullet functions and ids they need.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from workbench.scene.model import WORLD, Body, Joint
from workbench.sim.engine_client import EngineBase
from workbench.sim.frames import z_to
from workbench.sim.springs import SpringLaw

__all__ = ["REVOLUTE_LEVER", "JointsAndForces"]

#: Lever arm (m) between the two POINT2POINT constraints that make a revolute joint. Long enough
#: that the pair resists rotation about the other axes stiffly, short enough to stay inside
#: typical bodies; the constraint rows are exact, so the value only conditions the solver.
REVOLUTE_LEVER = 0.1


class JointsAndForces(EngineBase):
    """The scene's joints, prescribed motions, forces and springs (mixed into
    :class:`~workbench.sim.engine.Engine`)."""

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
