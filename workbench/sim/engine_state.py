"""Reading and placing the bodies' states: part of the :class:`~workbench.sim.engine.Engine`.

:class:`~workbench.sim.state.State` s read and set whole, the fast readers the forward run's
recording loop is built from (one bound PyBullet function per read, no lookup in the loop), the
poses the reverse stepper places before each contact query (:meth:`BodyStates.set_poses`), and
what PyBullet holds for a body (:meth:`BodyStates.dynamics_info`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from workbench.sim.engine_client import EngineBase
from workbench.sim.frames import body_orientation
from workbench.sim.state import State

__all__ = ["BodyStates"]

#: Names of the first entries of ``getDynamicsInfo`` (:meth:`Engine.dynamics_info`).
_DYNAMICS_INFO = ("mass", "friction", "inertia_diagonal", "inertial_position")
_DYNAMICS_INFO += ("inertial_orientation", "restitution", "rolling_friction", "spinning_friction")


class BodyStates(EngineBase):
    """The states of the scene's bodies (mixed into :class:`~workbench.sim.engine.Engine`)."""

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

    # ------------------------------------------------------------------ one body, poses
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

    def dynamics_info(self, j: int) -> dict[str, Any]:
        """What PyBullet holds for body ``j``: ``mass`` (kg), ``inertia_diagonal`` (principal
        moments, kg·m²), ``inertial_position`` and ``inertial_orientation`` (in the body frame),
        ``friction``, ``restitution``, ``rolling_friction``, ``spinning_friction``."""
        info = self._p.getDynamicsInfo(self._uids[j], -1, physicsClientId=self._client)
        return dict(zip(_DYNAMICS_INFO, info, strict=False))  # the first 8 of its 12 entries
