"""The viewer and rendered images: part of the :class:`~workbench.sim.engine.Engine`.

The GUI's camera and text, freezing a world for replay, and headless images with PyBullet's
software renderer (``workbench/replay/viewer.py`` decides what to show and when).
"""

from __future__ import annotations

import numpy as np

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
