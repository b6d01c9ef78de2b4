"""The camera shared by every way of showing a run: the PyBullet viewer, PNG frames, videos and
the web page (:mod:`workbench.replay.viewer`, :mod:`workbench.replay.web`).

One convention, PyBullet's ``computeViewMatrixFromYawPitchRoll`` with z up: the camera looks at
``target`` from ``distance`` metres, turned ``yaw`` degrees about z and tilted ``pitch`` degrees
(negative looks down). Its eye is at

    target + distance * (sin(yaw) cos(pitch), -cos(yaw) cos(pitch), -sin(pitch)),

which was checked against the inverse of PyBullet's view matrix (yaw 0/45/90/30, pitch
0/-30/-10/20: equal to 2e-7 m, PyBullet's float32). ``fov`` is the vertical field of view in
degrees.

:meth:`Camera.project` maps world points to the image as PyBullet's ``computeViewMatrix`` and
``computeProjectionMatrixFOV`` do (the framing of :func:`workbench.replay.viewer.frame_camera` and
its
tests use it). :func:`parse_camera_option` reads the ``--camera`` option of ``workbench replay``:
a whole camera (:func:`parse_camera`) or only a view (:func:`parse_view`).

Pure: numpy only, so the web page and the tests can use it without PyBullet.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Camera", "parse_camera", "parse_view", "parse_camera_option"]


@dataclass(frozen=True)
class Camera:
    """A camera looking at ``target`` (m) from ``distance`` (m), ``yaw`` and ``pitch`` degrees
    (PyBullet's convention, z up), vertical field of view ``fov`` degrees."""

    target: tuple[float, float, float]
    distance: float
    yaw: float = 45.0
    pitch: float = -30.0
    fov: float = 60.0

    def eye(self) -> np.ndarray:
        """Position of the camera, m, shape (3,)."""
        y, p = math.radians(self.yaw), math.radians(self.pitch)
        direction = np.array([math.sin(y) * math.cos(p), -math.cos(y) * math.cos(p), -math.sin(p)])
        return np.asarray(self.target, dtype=float) + self.distance * direction

    def up(self) -> np.ndarray:
        """The camera's up direction in the world, unit vector (3,) (z up, tilted by pitch)."""
        y, p = math.radians(self.yaw), math.radians(self.pitch)
        return np.array([math.sin(y) * math.sin(p), -math.cos(y) * math.sin(p), math.cos(p)])

    def axes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The camera's right, up and back (from ``target`` towards the eye) unit vectors in the
        world, each shape (3,); right = up × back, so (right, up, back) is right-handed."""
        y, p = math.radians(self.yaw), math.radians(self.pitch)
        back = np.array([math.sin(y) * math.cos(p), -math.cos(y) * math.cos(p), -math.sin(p)])
        up = self.up()
        return np.cross(up, back), up, back

    def project(self, points, aspect: float) -> np.ndarray:
        """Normalised image coordinates of world ``points``.

        Parameters
        ----------
        points : array_like, shape (..., 3)
            World points, m.
        aspect : float
            Image width / height.

        Returns
        -------
        ndarray, shape (..., 3)
            ``x`` (right) and ``y`` (up), each in [-1, 1] inside the image (pixel column
            ``(x + 1) / 2 * width``, row ``(1 - y) / 2 * height``), and the depth in front of the
            camera, m (a point behind the camera has depth <= 0).
        """
        right, up, back = self.axes()
        rel = np.asarray(points, dtype=float) - self.eye()
        depth = -(rel @ back)
        tan_v = math.tan(math.radians(self.fov) / 2.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            x = (rel @ right) / (depth * tan_v * aspect)
            y = (rel @ up) / (depth * tan_v)
        return np.stack([x, y, depth], axis=-1)


def parse_camera(text: str, *, fov: float = 60.0) -> Camera:
    """A :class:`Camera` from ``"x,y,z,distance"`` or ``"x,y,z,distance,yaw,pitch"`` (m and
    degrees; yaw and pitch default to 45 and -30).

    Raises
    ------
    ValueError
        With a one-line reason: not 4 or 6 numbers, a non-finite number, a distance <= 0, or a
        pitch outside (-90, 90) (straight up or down has no defined up direction).
    """
    parts = [part.strip() for part in str(text).split(",")]
    if len(parts) not in (4, 6):
        raise ValueError(f"expected x,y,z,distance[,yaw,pitch] (4 or 6 numbers), got {text!r}")
    try:
        values = [float(part) for part in parts]
    except ValueError:
        raise ValueError(f"expected numbers in x,y,z,distance[,yaw,pitch], got {text!r}") from None
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"expected finite numbers, got {text!r}")
    x, y, z, distance, *view = values
    if distance <= 0:
        raise ValueError(f"the distance must be > 0 m, got {distance:g}")
    yaw, pitch = view or (Camera.yaw, Camera.pitch)
    if not -90.0 < pitch < 90.0:
        raise ValueError(f"the pitch must be strictly between -90 and 90 degrees, got {pitch:g}")
    return Camera((x, y, z), distance, yaw, pitch, fov)


def parse_view(text: str) -> tuple[float, float]:
    """``(yaw, pitch)``, degrees, from ``"yaw,pitch"``.

    Raises
    ------
    ValueError
        With a one-line reason: not 2 numbers, a non-finite yaw, or a pitch outside (-90, 90).
    """
    parts = [part.strip() for part in str(text).split(",")]
    if len(parts) != 2:
        raise ValueError(f"expected YAW,PITCH (2 numbers), got {text!r}")
    try:
        yaw, pitch = (float(part) for part in parts)
    except ValueError:
        raise ValueError(f"expected YAW,PITCH in degrees, got {text!r}") from None
    if not (math.isfinite(yaw) and -90.0 < pitch < 90.0):
        raise ValueError(
            f"expected a finite yaw and a pitch strictly between -90 and 90 degrees, got {text!r}"
        )
    return yaw, pitch


def parse_camera_option(text: str, *, fov: float = 60.0) -> Camera | tuple[float, float]:
    """The ``--camera`` option: a :class:`Camera` from ``x,y,z,distance[,yaw,pitch]``
    (:func:`parse_camera`), or only the view ``(yaw, pitch)`` from ``yaw,pitch``
    (:func:`parse_view`; the caller frames the bodies from that view).

    Raises
    ------
    ValueError
        With a one-line reason: not 2, 4 or 6 comma-separated values, or those functions'.
    """
    n = len(str(text).split(","))
    if n == 2:
        return parse_view(text)
    if n not in (4, 6):
        raise ValueError(f"expected YAW,PITCH or X,Y,Z,DISTANCE[,YAW,PITCH], got {text!r}")
    return parse_camera(text, fov=fov)
