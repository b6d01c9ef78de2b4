"""The camera every replay starts from: the extent of the bodies over a run, framed in the image.

:func:`frame_camera` fits the box the moving bodies sweep over the run (each body's bounding box
turned with its recorded orientation, around every recorded centre of mass; planes and fixed
bodies, the stage, are left out) into the image with a margin, from the view among a few that
shows the box largest. The tracked links of URDF bodies (``workbench/scene/links.py``) are framed
as bodies of their own: each link's bounding sphere around its recorded centre of mass. Used by
the viewer, frames and videos (:mod:`workbench.replay.viewer`, which re-exports these names) and
the web
page (:mod:`workbench.replay.web`). Moved out of ``viewer.py`` in issue 22.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from workbench.errors import WorkbenchError
from workbench.replay.camera import Camera
from workbench.scene.bodies import shape_hull_vertices
from workbench.scene.model import Scene
from workbench.sim.engine import Engine
from workbench.sim.state import Trajectory, check_same_bodies, finite_records

__all__ = [
    "frame_camera",
    "body_extent",
    "body_boxes",
    "tracked_rows",
    "FOV_DEG",
    "CAMERA_YAW",
    "CAMERA_PITCH",
    "FRAME_FILL",
]


def tracked_rows(scene: Scene, traj: Trajectory) -> tuple[str, ...]:
    """The rows ``traj`` should hold for ``scene``: its bodies and tracked links, or only its
    bodies for a trajectory recorded before links were tracked (no ``link_info``)."""
    return scene.tracked_names if traj.link_info else scene.body_names


#: Vertical field of view of rendered frames and videos, degrees.
FOV_DEG = 60.0


#: Default camera yaw and pitch, degrees: a three-quarter view from above, with z up.
CAMERA_YAW = 45.0


CAMERA_PITCH = -30.0


#: Pitches, degrees, :func:`frame_camera` chooses from (the first is the default's).
CANDIDATE_PITCHES = (CAMERA_PITCH, -45.0, -60.0)


#: Pitches steeper than the default are tried only for a flat extent, whose height is below this
#: fraction of its longer horizontal side: looking down on a tall motion (a fall) would
#: foreshorten the very direction it moves in.
FLAT_RATIO = 0.5


#: A horizontal extent this many times longer than wide is seen square on from its long side
#: (yaw 0 or 90): a line of text reads left to right, a slide runs across the image. Seen
#: diagonally it could fill more of the image, slanted.
ELONGATED_RATIO = 2.0


#: A pitch other than the default must cover this many times more of the image to be chosen.
VIEW_PREFERENCE = 1.15


#: Largest fraction of the image's half-width and half-height the framed box may reach from the
#: centre: a 5% margin on each side.
FRAME_FILL = 0.9


#: Half-size, m, of the box framed when no body is worth framing (only planes): some ground.
EMPTY_FRAME_HALF = 1.0


def frame_camera(
    scene: Scene,
    trajectories: Trajectory | Iterable[Trajectory],
    aspect: float = 4.0 / 3.0,
    *,
    fov: float = FOV_DEG,
    view: tuple[float, float] | None = None,
) -> Camera:
    """The camera that starts every replay: the bodies' extent over the run, filling the image.

    Unless ``view`` is given, the view of the box of :func:`body_extent` is the three-quarter
    view (:data:`CAMERA_YAW`, :data:`CAMERA_PITCH`), except that an elongated extent
    (:data:`ELONGATED_RATIO`) is seen square on from its long side, so that a line of text reads
    across the image and a slide runs across it rather than towards the camera, and that a flat
    extent (:data:`FLAT_RATIO`) is seen from the pitch of :data:`CANDIDATE_PITCHES` whose
    silhouette of the box, without perspective and scaled to fit the image, covers most of it
    (:func:`_silhouette_fill`; the default unless another covers :data:`VIEW_PREFERENCE` times
    more). Then the camera
    looks at the box from the nearest distance at which all 8 corners project within
    :data:`FRAME_FILL` of the image's half-width and half-height, with the target moved so that
    the projected box is centred (:func:`_fit_box`).

    The viewer's window, frames and videos all start this way; the web page gets the camera too.

    Parameters
    ----------
    scene : Scene
        The scene the trajectories were run on.
    trajectories : Trajectory or iterable of Trajectory
        Runs to frame together (e.g. the realizations of an ensemble).
    aspect : float
        Image width / height.
    fov : float
        Vertical field of view, degrees.
    view : (yaw, pitch), optional
        Use this view, degrees, instead of choosing one.

    Returns
    -------
    Camera
    """
    lo, hi = body_extent(scene, trajectories)
    if not _positive(aspect):
        raise WorkbenchError(f"aspect must be a finite number > 0, got {aspect!r}")
    if view is not None:
        yaw, pitch = (float(v) for v in view)
    else:
        size = hi - lo
        yaw = CAMERA_YAW
        if size[0] > ELONGATED_RATIO * size[1]:  # long along x: look along y
            yaw = 0.0
        elif size[1] > ELONGATED_RATIO * size[0]:  # long along y: look along x
            yaw = 90.0
        pitch = CAMERA_PITCH
        if size[2] < FLAT_RATIO * max(size[0], size[1]):
            fills = [_silhouette_fill(lo, hi, yaw, p, aspect) for p in CANDIDATE_PITCHES]
            fills[0] *= VIEW_PREFERENCE
            pitch = CANDIDATE_PITCHES[int(np.argmax(fills))]  # the first of equals
    return _fit_box(lo, hi, yaw, pitch, fov, aspect)


def body_extent(
    scene: Scene, trajectories: Trajectory | Iterable[Trajectory]
) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper corners, shape (3,), m, of the box the framed bodies sweep over the runs.

    At every finite record each framed body contributes its world bounding box: its body-frame
    box (:func:`body_boxes`) turned by the recorded orientation (half-sizes ``|R| h``; a
    sphere's is its radius whatever the orientation). The framed bodies are the moving ones (not
    ``fixed``: the ground, walls and bins are the stage); a scene in which nothing moves frames
    its fixed bodies other than planes; one with planes only frames a cube of half-size
    :data:`EMPTY_FRAME_HALF` on the origin.
    """
    runs = [trajectories] if isinstance(trajectories, Trajectory) else list(trajectories)
    if not runs:
        raise WorkbenchError("no trajectory to frame")
    moving = np.array([not body.fixed for body in scene.bodies])
    # a URDF body with links moves even on a fixed base: it is framed, and so are its links
    moving |= np.isin(scene.body_names, [link.body for link in scene.links])
    solid = np.array([body.shape.type != "plane" for body in scene.bodies])
    framed_bodies = moving if moving.any() else solid
    if not framed_bodies.any():
        return np.full(3, -EMPTY_FRAME_HALF), np.full(3, EMPTY_FRAME_HALF)
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for traj in runs:
        rows = tracked_rows(scene, traj)
        check_same_bodies(traj, rows)
        records = finite_records(traj)
        if not len(records):
            continue
        links = len(rows) > len(scene.bodies)
        framed = np.concatenate([framed_bodies, np.ones(len(rows) - len(framed_bodies), bool)])
        boxes = body_boxes(scene, traj.params, links=links)
        centre, half, round_ = (x[framed] for x in boxes)
        pos = np.asarray(traj.position, dtype=float)[records][:, framed, :]  # (k, m, 3)
        rot = _rotation_matrices(np.asarray(traj.orientation, dtype=float)[records][:, framed, :])
        body = np.broadcast_to(np.arange(len(centre)), pos.shape[:2]).ravel()
        pos, rot = pos.reshape(-1, 3), rot.reshape(-1, 3, 3)  # every (record, body) pair
        mid = pos + np.einsum("kij,kj->ki", rot, centre[body])
        reach = np.where(
            round_[body][:, None], half[body], np.einsum("kij,kj->ki", np.abs(rot), half[body])
        )
        lo = np.minimum(lo, (mid - reach).min(axis=0))
        hi = np.maximum(hi, (mid + reach).max(axis=0))
    if not np.all(np.isfinite(lo)):
        raise WorkbenchError("no finite positions to frame")
    return lo, hi


def body_boxes(
    scene: Scene, params: dict | None = None, links: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each body's bounding box in its body frame, relative to its centre of mass; with
    ``links``, the scene's tracked links follow (rows ``Scene.tracked_names``), each the sphere
    around its collision shapes' bounding box at the initial pose, centred on its centre of mass
    (a link without collision shapes: a point).

    Returns
    -------
    centre : ndarray, shape (n_bodies, 3)
        The box's centre minus the centre of mass (the realized one when ``params`` hold
        ``<body>/com``), body frame, m.
    half : ndarray, shape (n_bodies, 3)
        Half-sizes, m: of the box around a cylinder, capsule or a mesh's convex hull; a box's
        own; for a sphere its radius three times, and for a URDF body the radius of the sphere
        around PyBullet's bounding box at the initial pose (both flagged by ``round_``).
        NaN for planes.
    round_ : ndarray of bool, shape (n_bodies,)
        True where ``half`` is a radius, the same in every orientation.
    """
    params = params or {}
    n = len(scene.bodies) + (len(scene.links) if links else 0)
    centre, half, round_ = np.zeros((n, 3)), np.full((n, 3), np.nan), np.zeros(n, dtype=bool)
    urdf = []
    for j, body in enumerate(scene.bodies):
        shape = body.shape
        if shape.type == "plane":
            continue
        if shape.type == "urdf":
            urdf.append(j)
            continue
        props = body.mass_properties
        com = params.get(f"{body.name}/com", props.com if props is not None else (0.0, 0.0, 0.0))
        centre[j] = -np.asarray(com, dtype=float).reshape(3)  # the shapes are centred on 0
        if shape.type == "sphere":
            half[j], round_[j] = shape.radius, True
        elif shape.type == "box":
            half[j] = shape.halves
        elif shape.type == "cylinder":
            half[j] = (shape.radius, shape.radius, shape.length / 2)
        elif shape.type == "capsule":
            half[j] = (shape.radius, shape.radius, shape.length / 2 + shape.radius)
        else:  # mesh: its convex hull's box (the hull need not be centred on 0)
            v = shape_hull_vertices(shape, scene.base_dir)
            centre[j] += 0.5 * (v.min(axis=0) + v.max(axis=0))
            half[j] = 0.5 * (v.max(axis=0) - v.min(axis=0))
    if urdf:
        with Engine(scene, gui=False, visual=False) as engine:
            com = engine.state(links=links).position
            boxes = [(j, engine.aabb(j)) for j in urdf]
            if links:
                first = len(scene.bodies)
                boxes += [(first + k, engine.link_aabb(k)) for k in range(len(scene.links))]
            for j, (lo, hi) in boxes:
                far = np.maximum(np.abs(lo - com[j]), np.abs(hi - com[j]))
                half[j], round_[j] = np.linalg.norm(far), True
    return centre, half, round_


def _rotation_matrices(q: np.ndarray) -> np.ndarray:
    """Rotation matrices, shape (..., 3, 3), of unit quaternions (x, y, z, w), shape (..., 4)."""
    x, y, z, w = np.moveaxis(q, -1, 0)
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ]
    return np.stack([np.stack(row, -1) for row in rows], -2)


def _box_corners(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The 8 corners, shape (8, 3), of the box ``lo``..``hi``."""
    return np.array(
        [[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    )


def _fit_box(lo, hi, yaw: float, pitch: float, fov: float, aspect: float) -> Camera:
    """The nearest camera at ``yaw``/``pitch`` in which the box's projection is centred and
    reaches :data:`FRAME_FILL` of the image's half-width or half-height.

    For a corner at ``a`` right, ``b`` up and ``c`` back (towards the eye) of the target, the
    camera at distance ``d`` sees it at depth ``d - c``, inside the filled part of the image when
    ``|a| <= FRAME_FILL tan(fov/2) aspect (d - c)`` and ``|b| <= FRAME_FILL tan(fov/2) (d - c)``:
    the smallest ``d`` meeting both for every corner. Perspective shifts the projected box off
    centre (near corners spread more), so the target is then moved across the view to centre
    it and ``d`` fitted again; a few rounds settle it (each leaves less than half the shift).
    """
    tan_v = math.tan(math.radians(fov) / 2.0)
    limits = np.array([FRAME_FILL * tan_v * aspect, FRAME_FILL * tan_v])
    corners = _box_corners(lo, hi)
    target = 0.5 * (np.asarray(lo) + np.asarray(hi))
    camera = Camera(tuple(target), 1.0, yaw, pitch, fov)
    right, up, back = camera.axes()
    for _ in range(_CENTRING_ROUNDS):
        rel = corners - target
        a, b, c = rel @ right, rel @ up, rel @ back
        distance = float(np.max(c + np.maximum(np.abs(a) / limits[0], np.abs(b) / limits[1])))
        camera = Camera(tuple(target), distance, yaw, pitch, fov)
        xy = camera.project(corners, aspect)[:, :2]
        centre = 0.5 * (xy.min(axis=0) + xy.max(axis=0))  # of the projection, image units
        target = target + distance * tan_v * (centre[0] * aspect * right + centre[1] * up)
    rel = corners - target
    a, b, c = rel @ right, rel @ up, rel @ back
    distance = float(np.max(c + np.maximum(np.abs(a) / limits[0], np.abs(b) / limits[1])))
    return Camera(tuple(float(v) for v in target), distance, yaw, pitch, fov)


#: Rounds of re-centring in :func:`_fit_box`.
_CENTRING_ROUNDS = 4


def _silhouette_fill(lo, hi, yaw: float, pitch: float, aspect: float) -> float:
    """Fraction of an image of width / height ``aspect`` that the box ``lo``..``hi`` covers
    when seen from ``yaw``/``pitch`` without perspective and scaled to just fit: the area of the
    convex hull of its projected corners over the area of the smallest such image around them.
    Perspective is left out so that a view is not rewarded for looking along a long box (its near
    end then looks large)."""
    right, up, _ = Camera((0.0, 0.0, 0.0), 1.0, yaw, pitch).axes()
    corners = _box_corners(lo, hi)
    xy = np.stack([corners @ right, corners @ up], axis=-1)
    width, height = np.ptp(xy, axis=0)
    scale = max(width / aspect, height)  # the image's height when the box just fits
    if scale <= 0:
        return 0.0
    return _hull_area(xy) / (aspect * scale * scale)


def _hull_area(points: np.ndarray) -> float:
    """Area of the convex hull of 2-D ``points`` (k, 2): Andrew's monotone chain, then the
    shoelace formula."""
    pts = sorted(map(tuple, points))

    def half(seq):
        chain: list[tuple[float, float]] = []
        for p in seq:
            while len(chain) >= 2:
                (x1, y1), (x2, y2) = chain[-2], chain[-1]
                if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) > 0:
                    break
                chain.pop()
            chain.append(p)
        return chain

    hull = half(pts)[:-1] + half(pts[::-1])[:-1]
    x = np.array([p[0] for p in hull])
    y = np.array([p[1] for p in hull])
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def _positive(x) -> bool:
    """True for a finite real number > 0."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return False
    return math.isfinite(x) and x > 0
