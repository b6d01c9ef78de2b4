"""The links and joints of URDF bodies: part of the :class:`~workbench.sim.engine.Engine`.

The tracked links (``Scene.links``) are rows after the scene's bodies: read in one
``getLinkStates`` call and their moving joints in one ``getJointStates`` call per URDF body
(:meth:`UrdfLinks.link_reader`, :meth:`UrdfLinks.joint_reader`), their inertial frames
(:meth:`UrdfLinks.link_frames`), bounding boxes and joint states set for replay.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.spatial.transform import Rotation

from workbench.errors import SceneError
from workbench.sim.engine_client import EngineBase
from workbench.sim.frames import BodyFrame

__all__ = ["UrdfLinks"]


class UrdfLinks(EngineBase):
    """The tracked links and joints of URDF bodies (mixed into
    :class:`~workbench.sim.engine.Engine`)."""

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
