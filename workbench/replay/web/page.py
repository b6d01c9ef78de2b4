"""The web replay page: one self-contained HTML file that plays stored runs in a browser.

The page holds everything it needs: three.js with its OrbitControls (bundled into
``assets/three.bundle.js`` by ``tools/web_bundle/build.sh``, MIT licence inlined), the page's
script ``assets/page.js`` and the data. It opens offline as ``file://`` and makes no network
request.

The data, written here, is what the page draws (:mod:`workbench.replay.web.visuals`) and each run's
poses of the body frames (not of the centres of mass: the page places shapes, which are defined
in the body frame), decimated to at most :data:`MAX_FPS` records per second of trajectory time
(the page interpolates between them: positions linearly, orientations by normalised linear
interpolation) and packed as little-endian float32 in base64. A body whose pose never changes in
a run is stored once; a sphere's orientation is not stored (it cannot be seen). Records with a
non-finite position, orientation or time are left out, as the PyBullet viewer does.

For an ensemble whose realizations sampled scene parameters (``parameters/<name>`` in a run's
``params``), each run is drawn from the scene re-resolved with its values, so a sampled size
is drawn as simulated; runs that draw the same share one set of shapes in the page.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
from importlib import resources
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from workbench.errors import SceneError, WorkbenchError
from workbench.replay.camera import Camera
from workbench.replay.framing import FRAME_FILL
from workbench.replay.web.visuals import BodyVisual, body_visuals
from workbench.scene.fields import PARAMETERS_GROUP
from workbench.scene.model import Scene
from workbench.sim.frames import box_reach
from workbench.sim.state import Trajectory, check_same_bodies, finite_records, records_at_rate

__all__ = ["write_replay_page", "page_data", "MAX_FPS"]

#: Most records per second of trajectory time kept in the page: enough for smooth playback at
#: real speed (the page interpolates between records) while spelling_balls' 3875 balls over 3 s
#: stay near 6 MB.
MAX_FPS = 30.0

#: Smallest half side of a drawn plane, m, and its size relative to the reach of the scene's
#: bodies from the plane's origin: a ground patch wider than what moves on it.
PLANE_MIN_HALF = 1.0
PLANE_FACTOR = 1.5

#: Smallest radius of the scene's bounds, m (lights and shadows are fitted to them).
_MIN_RADIUS = 0.1

#: Markers of the template ``assets/page.html`` replaced by the page's parts.
_MARKERS = ("__TITLE__", "/*__LICENSE__*/", "/*__THREE__*/", "/*__APP__*/", "/*__DATA__*/")


def write_replay_page(
    path,
    scene: Scene,
    runs: dict,
    *,
    camera: Camera,
    title: str = "",
    caption: str = "",
    frame: tuple | None = None,
    reverse: bool = False,
    speed: float = 1.0,
) -> Path:
    """Write a self-contained HTML page that plays ``runs`` of ``scene`` in a browser.

    The page has play/pause, a time slider, playback speed and direction, looping, a camera
    orbiting with the mouse (drag: orbit, right-drag: pan, wheel: zoom) and, for more than one
    run, a selector of the run shown. Its URL hash sets the view: ``#t=0.5&run=1&paused``
    (``speed=2``, ``reverse``, ``ui=0`` hides the controls); ``window.workbench`` lets a script
    drive it (``seek(t)``, ``setRun(i)``, ``play()``, ``pause()``; ``ready`` once drawn).

    Parameters
    ----------
    path : str or Path
        The HTML file to write (replaced if it exists); its folder must exist.
    scene : Scene
        The scene the runs were made on (their bodies, in order).
    runs : dict of str to Trajectory
        Runs by label, in the order of the page's selector (e.g. ``{"realization 0": traj0,
        "nominal": trajn}``); at least one.
    camera : Camera
        The initial view (the page's camera is the same perspective camera, z up).
    title : str
        Shown on the page and as its title (default: the scene's description, else "replay";
        :func:`~workbench.replay.web.caption.page_title` says what the run is).
    caption : str
        Shown under the title (:func:`~workbench.replay.web.caption.page_caption`: the
        resolved parameters, the run shown).
    frame : (lo, hi), optional
        Corners (3,), m, of the box the camera is fitted to: the page fits it at its canvas's
        own aspect, as :func:`~workbench.replay.framing.frame_camera` does (the box within
        :data:`~workbench.replay.framing.FRAME_FILL` of the half-width or half-height), from
        ``camera``'s view, and again when the canvas changes size until the user moves the
        camera. None: ``camera`` as given (a camera the user set).
    reverse : bool
        Start at the last record, playing backwards in time.
    speed : float
        Initial playback speed factor (> 0).

    Returns
    -------
    Path
        The written file.

    Raises
    ------
    WorkbenchError
        For a missing folder, no runs, a run that is not a :class:`Trajectory` of the scene's
        bodies, a run without finite records, a non-positive speed or a camera that is not a
        :class:`Camera`; a :class:`~workbench.errors.SceneError` for a mesh or URDF file
        that cannot be read.
    """
    out = Path(path)
    if not out.parent.is_dir():
        raise WorkbenchError(f"{out}: folder {out.parent} does not exist")
    data = page_data(
        scene,
        runs,
        camera=camera,
        title=title,
        caption=caption,
        frame=frame,
        reverse=reverse,
        speed=speed,
    )
    assets = resources.files("workbench.replay.web") / "assets"
    template = (assets / "page.html").read_text(encoding="utf-8")
    parts = (
        html.escape(data["title"]),
        "/*\n" + (assets / "LICENSE-three.txt").read_text(encoding="utf-8") + "*/",
        (assets / "three.bundle.js").read_text(encoding="utf-8"),
        (assets / "page.js").read_text(encoding="utf-8"),
        # in a <script> element: no "</" may appear, and \u003c is the same JSON string
        json.dumps(data, separators=(",", ":")).replace("<", "\\u003c"),
    )
    for marker in _MARKERS:
        if template.count(marker) != 1:  # pragma: no cover - the shipped template has each once
            raise AssertionError(f"page template: marker {marker} must appear once")
    # one pass, so that a marker inside an inserted part is left alone
    pattern = "|".join(re.escape(m) for m in _MARKERS)
    text = dict(zip(_MARKERS, parts, strict=True))
    page = re.sub(pattern, lambda m: text[m.group(0)], template)
    out.write_text(page, encoding="utf-8")
    return out


def page_data(
    scene: Scene,
    runs: dict,
    *,
    camera: Camera,
    title: str = "",
    caption: str = "",
    frame: tuple | None = None,
    reverse: bool = False,
    speed: float = 1.0,
) -> dict:
    """The JSON-able data of the page (see :func:`write_replay_page` for the arguments)."""
    if not isinstance(camera, Camera):
        raise WorkbenchError(
            f"camera must be a workbench.replay.camera.Camera, got {type(camera).__name__}"
        )
    try:
        speed = float(speed)
    except (TypeError, ValueError):
        raise WorkbenchError(f"speed must be a finite number > 0, got {speed!r}") from None
    if not (math.isfinite(speed) and speed > 0):
        raise WorkbenchError(f"speed must be a finite number > 0, got {speed!r}")
    if not isinstance(runs, dict) or not runs:
        raise WorkbenchError("no runs to show: expected a dict of label -> Trajectory")
    worlds: list[dict] = []
    world_keys: dict[str, int] = {}
    meshes: list[dict] = []
    mesh_keys: dict[bytes, int] = {}
    visuals_of: dict[str, list[BodyVisual]] = {}
    tracks = []
    for label, traj in runs.items():
        if not isinstance(traj, Trajectory):
            raise WorkbenchError(f"run {label!r}: expected a Trajectory, got {type(traj).__name__}")
        # the links of URDF bodies are rows of their own, unless recorded before they were
        rows = scene.tracked_names if traj.link_info else scene.body_names
        check_same_bodies(traj, rows, f"run {label!r}: ")
        realized = _realized_scene(scene, traj)
        key = realized.model_dump_json() + str(bool(traj.link_info))
        if key not in visuals_of:
            visuals_of[key] = body_visuals(realized, links=bool(traj.link_info))
        visuals = visuals_of[key]
        world = _world(visuals, meshes, mesh_keys)
        wkey = json.dumps(world, sort_keys=True)
        if wkey not in world_keys:
            world_keys[wkey] = len(worlds)
            worlds.append(world)
        com = np.stack([_com(traj, name, v) for name, v in zip(rows, visuals, strict=True)])
        tracks.append((str(label), world_keys[wkey], visuals, _track(label, traj, com)))

    lo, hi = _bounds(tracks)
    centre = 0.5 * (lo + hi)
    for world_index, world in enumerate(worlds):  # planes: a patch wider than what moves
        for body, static in _plane_bodies(world, world_index, tracks):
            origin = static[:3]
            half = max(PLANE_MIN_HALF, PLANE_FACTOR * box_reach(lo, hi, origin))
            for part in body["parts"]:
                if part["kind"] == "plane":
                    part["size"] = [2 * half, 2 * half]
    radius = max(0.5 * float(np.linalg.norm(hi - lo)), _MIN_RADIUS)
    return {
        "title": title or scene.description or "replay",
        "caption": caption,
        "frame": _frame_data(frame),
        "fill": FRAME_FILL,
        "reverse": bool(reverse),
        "speed": speed,
        "fps": MAX_FPS,
        # z up, as the page's orbit controls turn about it; PyBullet's view is the same (its
        # up vector is z tilted by the pitch, in the plane of z and the line of sight)
        "camera": {
            "eye": camera.eye().tolist(),
            "target": [float(x) for x in camera.target],
            "fov": float(camera.fov),
            # the depth range of the engine's camera (Engine.camera)
            "near": camera.distance / 100.0,
            "far": camera.distance * 100.0,
        },
        "bounds": {"centre": centre.tolist(), "radius": radius},
        "worlds": worlds,
        "meshes": meshes,
        "runs": [_run_data(label, w, visuals, track) for label, w, visuals, track in tracks],
    }


# ------------------------------------------------------------------------------------ helpers
def _frame_data(frame) -> dict | None:
    """``{"lo": [...], "hi": [...]}`` of a framed box, or None; a WorkbenchError unless its
    corners are finite and ordered."""
    if frame is None:
        return None
    lo, hi = (np.asarray(c, dtype=float).reshape(-1) for c in frame)
    if (
        lo.shape != (3,)
        or hi.shape != (3,)
        or not (np.all(np.isfinite([lo, hi])) and np.all(lo <= hi))
    ):
        raise WorkbenchError(
            f"frame must be two corners (lo, hi) of 3 finite numbers, lo <= hi; got {frame!r}"
        )
    return {"lo": lo.tolist(), "hi": hi.tolist()}


def _realized_scene(scene: Scene, traj: Trajectory) -> Scene:
    """The scene re-resolved with the scene parameters a realization sampled, if any."""
    prefix = PARAMETERS_GROUP + "/"
    values = {
        k[len(prefix) :]: np.asarray(v).tolist()
        for k, v in traj.params.items()
        if k.startswith(prefix)
    }
    if not values:
        return scene
    try:
        return scene.with_parameters(values)
    except SceneError:
        # a scene rebuilt without its source data (parameters already applied): its shapes
        # cannot depend on the realization's values, as for the PyBullet viewer
        return scene


def _com(traj: Trajectory, name: str, visual: BodyVisual) -> np.ndarray:
    """The centre of mass the run placed, body frame, m: the run's ``<body>/com`` if sampled."""
    value = traj.params.get(f"{name}/com")
    if value is None:
        return visual.com
    return np.asarray(value, dtype=float).reshape(3)


def _track(label, traj: Trajectory, com: np.ndarray) -> dict:
    """Kept record times and body-frame poses of one run.

    Returns ``time`` (nk,), s, increasing; ``origin`` (nk, n, 3), m, the body frames' origins;
    ``quat`` (nk, n, 4), x-y-z-w.
    """
    time = np.asarray(traj.time, dtype=float)
    index = finite_records(traj)
    if len(index) == 0:
        raise WorkbenchError(f"run {label!r} has no finite records to show")
    index = index[np.argsort(time[index], kind="stable")]  # reverse runs may record t downwards
    # the record nearest each 1/MAX_FPS s, and the last one
    keep = np.unique(np.append(records_at_rate(time[index], MAX_FPS), len(index) - 1))
    records = index[keep]
    pos = np.asarray(traj.position[records], dtype=float)
    quat = np.asarray(traj.orientation[records], dtype=float)
    quat = quat / np.linalg.norm(quat, axis=-1, keepdims=True)
    nk, n = pos.shape[:2]
    arm = Rotation.from_quat(quat.reshape(-1, 4)).apply(np.tile(com, (nk, 1)))
    origin = pos - arm.reshape(nk, n, 3)  # COM = origin + R com
    return {"time": time[records], "origin": origin, "quat": quat, "status": traj.status}


def _bounds(tracks) -> tuple[np.ndarray, np.ndarray]:
    """Corners (3,), m, of the box around every moving body's solid in every run (every
    non-plane body's, when nothing moves)."""
    boxes = []
    for moving_only in (True, False):
        for _, _, visuals, track in tracks:
            origin = track["origin"]
            moves = np.any(origin != origin[:1], axis=(0, 2)) | np.any(
                track["quat"] != track["quat"][:1], axis=(0, 2)
            )
            for b, v in enumerate(visuals):
                if any(p.kind == "plane" for p in v.parts) or not v.parts:
                    continue
                if moving_only and not moves[b]:
                    continue
                reach = max(p.reach() for p in v.parts)
                boxes.append((origin[:, b].min(axis=0) - reach, origin[:, b].max(axis=0) + reach))
        if boxes:
            break
    if not boxes:  # only planes
        return -np.ones(3), np.ones(3)
    lo = np.min([b[0] for b in boxes], axis=0)
    hi = np.max([b[1] for b in boxes], axis=0)
    return lo, hi


def _plane_bodies(world: dict, world_index: int, tracks):
    """The plane bodies of a world with their pose (7,) in the first run that draws it."""
    track = next(t for _, w, _, t in tracks if w == world_index)
    for b, body in enumerate(world["bodies"]):
        if any(p["kind"] == "plane" for p in body["parts"]):
            yield body, np.concatenate([track["origin"][0, b], track["quat"][0, b]])


def _world(visuals: list[BodyVisual], meshes: list[dict], mesh_keys: dict) -> dict:
    """The JSON of what is drawn of each body; mesh triangles go to ``meshes`` (shared)."""
    bodies = []
    for v in visuals:
        parts = []
        for p in v.parts:
            part = {
                "kind": p.kind,
                "size": [float(x) for x in p.size],
                "colour": [float(x) for x in p.colour],
                "offset": [float(x) for x in p.offset],
                "rotation": [float(x) for x in p.rotation],
            }
            if p.kind == "mesh":
                vertices = _b64(p.vertices, np.float32)
                faces = _b64(p.faces, np.uint32)
                key = (vertices + ":" + faces).encode()
                if key not in mesh_keys:
                    mesh_keys[key] = len(meshes)
                    meshes.append({"vertices": vertices, "faces": faces})
                part["mesh"] = mesh_keys[key]
            parts.append(part)
        bodies.append({"parts": parts})
    return {"bodies": bodies}


def _run_data(label: str, world: int, visuals: list[BodyVisual], track: dict) -> dict:
    """One run's packed poses: every body's first pose, then the moving bodies' per record."""
    origin, quat = track["origin"], track["quat"]
    moves = np.any(origin != origin[:1], axis=(0, 2)) | np.any(quat != quat[:1], axis=(0, 2))
    moving = np.flatnonzero(moves)
    turning = np.array([b for b in moving if not visuals[b].is_sphere], dtype=int)
    first = np.concatenate([origin[0], quat[0]], axis=1)  # (n, 7)
    return {
        "label": label,
        "world": world,
        "status": track["status"],
        "times": _b64(track["time"], np.float64),
        "first": _b64(first, np.float32),
        "moving": moving.tolist(),
        "turning": turning.tolist(),
        "positions": _b64(origin[:, moving], np.float32),
        "quaternions": _b64(quat[:, turning], np.float32),
    }


def _b64(array, dtype) -> str:
    """Little-endian ``dtype`` bytes of ``array`` (C order) in base64."""
    return base64.b64encode(
        np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<")).tobytes()
    ).decode("ascii")
