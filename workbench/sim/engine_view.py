"""The viewer and rendered images: part of the :class:`~workbench.sim.engine.Engine`.

The GUI's camera and text, freezing a world for replay, building only what replay shows, and
headless images with PyBullet's software renderer (``workbench/replay/viewer.py`` decides what
to show and when).
"""

from __future__ import annotations

import contextlib

import numpy as np
from scipy.spatial.transform import Rotation

from workbench.sim.arguments import body_colour, shape_arguments
from workbench.sim.engine_client import EngineBase

__all__ = ["ViewerAndImages"]


class ViewerAndImages(EngineBase):
    """The GUI and rendered images (mixed into :class:`~workbench.sim.engine.Engine`)."""

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

    def _build_shown(self) -> None:
        """Build the scene as replay shows it (``Engine(shown_only=True)``), in few PyBullet calls.

        Each shape body is massless and visual only (no collision shape, no dynamics), in the
        inertial frame a full build gives it (``Engine._inertial_frame``), so that
        :meth:`set_state` and :meth:`set_poses` place it where a full build's body would be.
        Bodies of the same looks and inertial frame (the 3875 balls of spelling_balls in its 7
        colours) share one visual shape and are created by one ``createMultiBody`` call
        (``batchPositions``). URDF bodies are loaded as in a full build. In the viewer, nothing is
        drawn until the first :meth:`drawn_at_once` block ends: the caller places the first
        frame before anything is drawn, and the window's drawing (on the CPU under Xvfb) does
        not slow what comes before it.

        Why: in PyBullet's GUI each call waits for the window's thread; a full build of the
        3875 balls makes about 5 calls a body and took tens of minutes under Xvfb, this one
        seconds (docs/replay.md, "Big runs").
        """
        p, c, s = self._p, self._client, self.scene
        p.resetSimulation(physicsClientId=c)
        if self.gui:
            p.configureDebugVisualizer(p.COV_ENABLE_GUI, 0, physicsClientId=c)
            p.configureDebugVisualizer(p.COV_ENABLE_RENDERING, 0, physicsClientId=c)
        p.setGravity(0.0, 0.0, 0.0, physicsClientId=c)
        uids: list[int] = [-1] * len(s.bodies)
        frames: list = [None] * len(s.bodies)
        groups: dict[str, tuple] = {}  # looks and inertial frame -> (arguments, bodies)
        for k, body in enumerate(s.bodies):
            if body.shape.type == "urdf":
                uids[k], frames[k] = self._create_body(body, body_colour(k, body))
                continue
            frames[k] = self._inertial_frame(body)
            path = None
            if body.shape.type == "mesh":
                path = self._shape_file(body, f"mesh file '{body.shape.file}' not found")
            args = shape_arguments(body.shape, path, visual=True)
            rgba = [float(x) for x in (args.colour or body_colour(k, body))]
            key = repr(
                (args.visual_geometry, sorted(args.visual.items()), rgba,
                 frames[k].com.tolist(), frames[k].principal.tolist())
            )  # fmt: skip
            groups.setdefault(key, (args, rgba, frames[k], []))[3].append(k)
        for args, rgba, frame, members in groups.values():
            vis = p.createVisualShape(
                getattr(p, args.visual_geometry), rgbaColor=rgba, physicsClientId=c, **args.visual
            )
            made = p.createMultiBody(
                0.0,
                -1,
                vis,
                baseInertialFramePosition=frame.com.tolist(),
                baseInertialFrameOrientation=frame.principal.tolist(),
                batchPositions=[list(s.bodies[k].position) for k in members],
                physicsClientId=c,
            )
            for k, uid in zip(members, np.atleast_1d(made).tolist(), strict=True):
                uids[k] = uid
        self._uids, self.frames = uids, frames
        self._index = {b.name: k for k, b in enumerate(s.bodies)}
        self._uid_index = {uid: k for k, uid in enumerate(uids)}
        self._uid_lookup = np.full(max(uids, default=-1) + 1, -1, dtype=int)
        self._uid_lookup[uids] = np.arange(len(uids))
        self._actions, self._constraints = [], {}
        # the batch placed body frames unturned: the turned shape bodies at their pose in the
        # scene (the others are there already; 3875 resets of the spelling balls took seconds
        # in the viewer under load)
        shapes = [
            k
            for k, b in enumerate(s.bodies)
            if b.shape.type != "urdf" and not np.array_equal(b.rotation.as_quat(), [0, 0, 0, 1])
        ]
        if shapes:
            turn = Rotation.from_quat([s.bodies[k].rotation.as_quat() for k in shapes])
            com = np.array([frames[k].com for k in shapes])
            at = np.array([s.bodies[k].position for k in shapes], dtype=float) + turn.apply(com)
            q_in = (turn * Rotation.from_quat([frames[k].principal for k in shapes])).as_quat()
            self.set_poses(shapes, at, q_in)

    @contextlib.contextmanager
    def drawn_at_once(self):
        """In the viewer, what changes within the block is drawn in one frame: the window draws
        nothing meanwhile, so no frame shows the bodies half moved or the time of another
        record. Headless, it does nothing."""
        if not self.gui:
            yield
            return
        p, c = self._p, self._client
        p.configureDebugVisualizer(p.COV_ENABLE_RENDERING, 0, physicsClientId=c)
        try:
            yield
        finally:
            if self.is_connected():
                p.configureDebugVisualizer(p.COV_ENABLE_RENDERING, 1, physicsClientId=c)

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
