"""The web replay page (``workbench.replay.web``) in headless Chromium: it loads offline with no
console
or page error, it moves, and it places the bodies where PyBullet's frames place them.

Chromium is Debian's ``/usr/bin/chromium`` driven by Python playwright (no browser download); the
tests are skipped only when either is missing. WebGL runs on SwiftShader (no GPU).

Placement is compared by the image position of each body: the centroid of its pixels, found by
the body's colour (hue, on saturated pixels: the ground, background, grid and shadows are grey),
in the page's screenshot and in PyBullet's frame rendered with the same camera.
"""

from __future__ import annotations

import colorsys
import io
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SCENES
from workbench.errors import WorkbenchError
from workbench.replay.camera import Camera
from workbench.replay.web import write_replay_page
from workbench.scene.loader import load_scene, scene_from_json
from workbench.scene.model import scene_from_dict
from workbench.sim.arguments import MOVING_COLOURS
from workbench.sim.engine import Engine
from workbench.sim.forward import run_scene
from workbench.sim.frames import mass_overrides_from_params
from workbench.sim.state import State

CHROMIUM = "/usr/bin/chromium"

#: Chromium flags: headless on a machine with no network and no GPU (without the first group it
#: floods the log with failed requests); WebGL on SwiftShader, which headless Chromium without a
#: GPU only offers with --enable-unsafe-swiftshader.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
]

#: Image size of both the page's viewport and PyBullet's frames, pixels.
WIDTH, HEIGHT = 640, 480

#: Largest distance between a body's pixel centroids on the page and in PyBullet's frame, as a
#: fraction of the image width. Measured: at most 0.82 px (0.13%) over the 11 bodies and times
#: below, the shapes being tessellated and shaded differently (PyBullet's TinyRenderer has no
#: anti-aliasing). Drawing random_box's boxes about the scene's centre of mass instead of each
#: realization's sampled one moves them by 3.6, 8.2 and 11.9 px: 0.5% (3.2 px) catches that.
PLACEMENT_TOL = 0.005

#: A pixel belongs to a body when its saturation (max - min of RGB, 0..1) exceeds this (the
#: scene's greys and the page's background stay below 0.05) and its hue is within
#: :data:`HUE_TOL` of the body's colour.
MIN_SATURATION = 0.2
HUE_TOL = 12.0 / 360.0

#: Fewest pixels of a body for its centroid to count (a 10 cm ball 2.5 m away covers ~300).
MIN_PIXELS = 30

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is None,
    reason=f"no Chromium at {CHROMIUM}",
)


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Page:
    """A written replay page opened in the browser, recording errors and requests."""

    def __init__(self, browser, path: Path, hash_: str = "", viewport=(WIDTH, HEIGHT)):
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url + "#" + hash_)
        self.page.wait_for_function("window.workbench && window.workbench.ready", timeout=20000)

    def shot(self, t: float, run: int | None = None) -> np.ndarray:
        """RGB screenshot, shape (height, width, 3) of the viewport, uint8, at time ``t`` (s) of
        run ``run``."""
        from PIL import Image

        if run is not None:
            self.page.evaluate(f"window.workbench.setRun({run})")
        self.page.evaluate(f"window.workbench.seek({t})")
        png = self.page.screenshot()
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))

    def close(self) -> None:
        self.page.close()


def pybullet_frame(scene, traj, i: int, camera: Camera) -> np.ndarray:
    """PyBullet's frame of record ``i``, as ``workbench replay --frames`` renders it."""
    engine = Engine(scene, visual=True, mass_overrides=mass_overrides_from_params(traj.params))
    try:
        zeros = np.zeros_like(traj.position[i])
        engine.set_state(State(traj.position[i], traj.orientation[i], zeros, zeros))
        view = engine.camera(
            camera.target, camera.distance, camera.yaw, camera.pitch, camera.fov, WIDTH / HEIGHT
        )
        return engine.render(view, WIDTH, HEIGHT)
    finally:
        engine.close()


def centroid(image: np.ndarray, colour) -> np.ndarray:
    """Pixel centroid (x, y) of the pixels of ``colour``'s hue (see :data:`MIN_SATURATION`)."""
    ys, xs = np.nonzero(mask(image, colour))
    assert len(xs) >= MIN_PIXELS, f"only {len(xs)} pixels of colour {colour}"
    return np.array([xs.mean(), ys.mean()])


def assert_placed_like_pybullet(page_image, frame, bodies) -> None:
    for k in bodies:
        colour = MOVING_COLOURS[k % len(MOVING_COLOURS)]
        web, ref = centroid(page_image, colour), centroid(frame, colour)
        assert np.linalg.norm(web - ref) <= PLACEMENT_TOL * WIDTH, (k, web, ref)


def assert_differ(a: np.ndarray, b: np.ndarray) -> None:
    """Two screenshots differ in more than 100 pixels (a moving body, not noise)."""
    changed = np.any(np.abs(a.astype(int) - b.astype(int)) > 16, axis=2)
    assert changed.sum() > 100


def check_clean(page: Page) -> None:
    assert page.errors == []
    assert page.requests and all(r.startswith(page.url.split("#")[0]) for r in page.requests)


# ---------------------------------------------------------------------------------------- tests
@pytest.mark.slow  # ~4 s
def test_forward_run_plays_and_matches_pybullet(browser, tmp_path):
    scene = load_scene(SCENES / "bouncing_ball.yaml")
    traj = run_scene(scene)
    camera = Camera(target=(0.0, 0.0, 0.4), distance=2.5, yaw=30.0, pitch=-20.0)
    path = write_replay_page(tmp_path / "ball.html", scene, {"run": traj}, camera=camera)
    page = Page(browser, path, "paused&ui=0")
    try:
        early, later = page.shot(0.0), page.shot(0.3)
        assert page.page.evaluate("window.workbench.state().t") == pytest.approx(0.3)
        check_clean(page)
    finally:
        page.close()
    assert_differ(early, later)
    i = int(np.argmin(np.abs(traj.time - 0.3)))
    assert_placed_like_pybullet(later, pybullet_frame(scene, traj, i, camera), [1])
    assert_placed_like_pybullet(early, pybullet_frame(scene, traj, 0, camera), [1])
    assert path.stat().st_size < 2_000_000  # 2 s at 30 records/s, and the 0.57 MB of three.js


@pytest.mark.slow  # ~5 s
def test_ensemble_selects_realizations(browser, tmp_path):
    from workbench.ensemble.run import SceneRef, run_ensemble
    from workbench.store import TrajectoryStore

    out = tmp_path / "box.h5"
    run_ensemble(SceneRef(str(SCENES / "random_box.yaml")), 3, out, entropy=7)
    with TrajectoryStore.open(out) as store:
        scene = scene_from_json(store.attrs["scene_json"], source=str(out))
        runs = {f"realization {i}": store.read(i) for i in range(3)}
    camera = Camera(target=(0.3, 0.0, 0.1), distance=1.6, yaw=20.0, pitch=-25.0)
    path = write_replay_page(tmp_path / "box.html", scene, runs, camera=camera, title="3 boxes")
    page = Page(browser, path, "paused&ui=0&run=2")
    try:
        assert page.page.evaluate("window.workbench.state().run") == 2
        assert page.page.evaluate("window.workbench.state().runs") == list(runs)
        shots = [page.shot(0.5, run=i) for i in range(3)]
        start = page.shot(0.0, run=2)
        # the selector is shown, with the three labels
        page.page.evaluate("document.body.classList.remove('noui')")
        labels = page.page.locator("#run option").all_inner_texts()
        assert labels == list(runs)
        assert page.page.locator("#runbox").is_visible()
        check_clean(page)
    finally:
        page.close()
    assert_differ(shots[0], shots[1])
    assert_differ(start, shots[2])
    for i, traj in enumerate(runs.values()):
        # a sampled centre of mass moves the box's frame: the page must use the run's own
        assert np.linalg.norm(traj.params["box/com"]) > 1e-3
        k = int(np.argmin(np.abs(traj.time - 0.5)))
        assert_placed_like_pybullet(shots[i], pybullet_frame(scene, traj, k, camera), [1])


@pytest.mark.slow  # ~4 s
def test_reverse_demo_plays_backwards_and_matches_pybullet(browser, tmp_path):
    from reverse.goals.hints import load_hints
    from reverse.runs.run import run_reverse

    scene = load_scene(SCENES / "reverse_landing.yaml")
    hints = load_hints(SCENES / "reverse_landing.hints.yaml", scene.body_names)
    traj = run_reverse(scene, duration=0.3, hints=hints, seed=1).trajectory
    camera = Camera(target=(0.4, 0.5, 0.1), distance=2.6, yaw=35.0, pitch=-35.0)
    path = write_replay_page(
        tmp_path / "landing.html", scene, {"reverse": traj}, camera=camera, reverse=True
    )
    page = Page(browser, path, "paused&ui=0")
    try:
        state = page.page.evaluate("window.workbench.state()")
        assert state["direction"] == -1 and state["t"] == pytest.approx(traj.time[-1])
        first, last = page.shot(float(traj.time[0])), page.shot(float(traj.time[-1]))
        # playing backwards from the end moves time down
        page.page.evaluate("window.workbench.play()")
        page.page.wait_for_function(f"window.workbench.state().t < {traj.time[-1] - 0.05}")
        check_clean(page)
    finally:
        page.close()
    assert_differ(first, last)
    for image, i in ((first, 0), (last, traj.n_times - 1)):
        assert_placed_like_pybullet(image, pybullet_frame(scene, traj, i, camera), [1, 2, 3])


def test_bad_input_is_a_workbench_error(tmp_path):
    scene = load_scene(SCENES / "bouncing_ball.yaml")
    traj = run_scene(scene.with_settings(duration=0.05))
    camera = Camera(target=(0.0, 0.0, 0.5), distance=2.0)
    other = load_scene(SCENES / "sliding_block.yaml")
    with pytest.raises(WorkbenchError, match="no runs"):
        write_replay_page(tmp_path / "a.html", scene, {}, camera=camera)
    with pytest.raises(WorkbenchError, match="not the scene's"):
        write_replay_page(tmp_path / "a.html", other, {"r": traj}, camera=camera)
    with pytest.raises(WorkbenchError, match="speed"):
        write_replay_page(tmp_path / "a.html", scene, {"r": traj}, camera=camera, speed=0)
    with pytest.raises(WorkbenchError, match="Camera"):
        write_replay_page(tmp_path / "a.html", scene, {"r": traj}, camera=(0, 0, 1))
    traj.position[:] = np.nan
    with pytest.raises(WorkbenchError, match="no finite records"):
        write_replay_page(tmp_path / "a.html", scene, {"r": traj}, camera=camera)


# ------------------------------------------------------------------------- orientation of shapes
#: Smallest intersection over union of a body's pixels (by hue, as for the centroids) on the
#: page and in PyBullet's frame. Measured at the times below: 0.99 for the tumbler mesh, 0.98
#: and 0.92-0.93 for the tumbling cylinder and capsule, 0.85-0.93 for pendulum_chain's thin
#: capsules (550-990 px each: the renderers tessellate, shade and anti-alias differently, which
#: costs about a pixel around each outline, most of a thin body). The wrong pages below score
#: 0.17-0.64, the least of each scene 0.38 or less.
MIN_IOU = 0.75


def mask(image: np.ndarray, colour) -> np.ndarray:
    """Boolean mask, shape (HEIGHT, WIDTH), of the pixels of ``colour``'s hue."""
    rgb = image.astype(float) / 255.0
    hi, lo = rgb.max(axis=2), rgb.min(axis=2)
    sat = hi - lo
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    span = np.where(sat > 0, sat, 1.0)
    # the hexcone hue of colorsys.rgb_to_hsv, in turns
    hue = np.where(
        hi == r, (g - b) / span, np.where(hi == g, 2.0 + (b - r) / span, 4.0 + (r - g) / span)
    )
    hue = (hue / 6.0) % 1.0
    dist = np.abs((hue - colorsys.rgb_to_hsv(*colour[:3])[0] + 0.5) % 1.0 - 0.5)
    return (sat > MIN_SATURATION) & (dist < HUE_TOL)


def iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / max((a | b).sum(), 1))


#: Wrong pages, each made from the real one by replacing one piece of page.js (found exactly
#: once): the line that turns a pose's four numbers into a three.js quaternion, read as
#: (w, x, y, z); and the turn that lays three.js's capsules (along y) along the scene's z.
WXYZ = ("_q.set(qx, qy, qz, qw);", "_q.set(qy, qz, qw, qx);")
CAPSULE_ALONG_Y = (
    "new THREE.CapsuleGeometry(s[0], s[1], 12, 32).rotateX(Math.PI / 2)",
    "new THREE.CapsuleGeometry(s[0], s[1], 12, 32)",
)

#: A cylinder and a capsule tumbling torque-free: turned about every axis (a hinge turns its
#: links about one, and a turn about y read as (w, x, y, z) is a half turn that lays a capsule's
#: axis where the right turn does, so pendulum_chain is checked against CAPSULE_ALONG_Y).
TUMBLING = {
    "gravity": [0, 0, 0],
    "settings": {"dt": 1 / 240, "duration": 1.0, "record_every": 4},
    "bodies": [
        {"name": "can", "shape": {"type": "cylinder", "radius": 0.06, "length": 0.4},
         "mass": 1.0, "position": [0, 0, 0.5], "euler_deg": [0, 60, 20],
         "angular_velocity": [1.5, 0.7, 2.0]},
        {"name": "pill", "shape": {"type": "capsule", "radius": 0.035, "length": 0.4},
         "mass": 1.0, "position": [0.5, 0.3, 0.5], "euler_deg": [70, 0, 40],
         "angular_velocity": [-0.6, 1.8, 0.9]},
    ],
}  # fmt: skip


@pytest.mark.slow  # ~12 s for the three shapes
@pytest.mark.parametrize(
    ("name", "settings", "times", "control"),
    [
        # an off-centre mesh tumbling (non-diagonal inertia), at a coarser step than shipped
        ("mesh_tumble", {"dt": 1e-3, "duration": 1.2, "record_every": 10}, (0.4, 1.1), WXYZ),
        ("tumbling", {}, (0.2, 0.8), WXYZ),
        # three capsules swinging on hinges
        ("pendulum_chain", {"duration": 0.9}, (0.5, 0.85), CAPSULE_ALONG_Y),
    ],
)
def test_turned_shapes_match_pybullet(browser, tmp_path, name, settings, times, control):
    """Each moving body covers the same pixels on the page as in PyBullet's frame (same camera,
    640x480): a wrong orientation (a quaternion misread, a shape's axis) moves a mesh's or a
    capsule's outline although its centroid may stay. The same page with ``control``'s mistake
    fails the comparison (for some body and time: a body symmetric about its axis can look
    right at times, as a turn near identity read as (w, x, y, z) is a half turn about z)."""
    from workbench.replay.viewer import frame_camera
    from workbench.replay.web.page import MAX_FPS
    from workbench.sim.state import records_at_rate

    if name == "tumbling":
        scene = scene_from_dict(TUMBLING)
    else:
        scene = load_scene(SCENES / f"{name}.yaml").with_settings(**settings)
    traj = run_scene(scene)
    kept = records_at_rate(traj.time, MAX_FPS)  # records the page keeps, so it interpolates none
    records = [int(kept[np.argmin(np.abs(traj.time[kept] - t))]) for t in times]
    camera = frame_camera(scene, traj, WIDTH / HEIGHT)
    path = write_replay_page(tmp_path / "page.html", scene, {"run": traj}, camera=camera)
    text = path.read_text(encoding="utf-8")
    assert text.count(control[0]) == 1
    wrong = tmp_path / "wrong.html"
    wrong.write_text(text.replace(*control), encoding="utf-8")
    shots = {}
    for label, page_path in (("right", path), ("wrong", wrong)):
        page = Page(browser, page_path, "paused&ui=0")
        try:
            shots[label] = [page.shot(float(traj.time[i])) for i in records]
            check_clean(page)
        finally:
            page.close()
    wrong_ious = []
    for k, i in enumerate(records):
        frame = pybullet_frame(scene, traj, i, camera)
        for b, body in enumerate(scene.bodies):
            if body.fixed:
                continue
            colour = MOVING_COLOURS[b % len(MOVING_COLOURS)]
            ref = mask(frame, colour)
            assert ref.sum() >= MIN_PIXELS
            right = iou(mask(shots["right"][k], colour), ref)
            assert right >= MIN_IOU, (body.name, traj.time[i], right)
            wrong_ious.append(iou(mask(shots["wrong"][k], colour), ref))
    assert min(wrong_ious) < MIN_IOU  # the comparison sees the mistake


#: Canvas sizes the page must frame its run in (a small window, a laptop's).
SIZES = [(640, 480), (1280, 800)]

#: Least share of the canvas's width or height that the box around the moving bodies' pixels,
#: over the run, must cover (issue 36: "LO" sat in the top 30% of a 1280 x 800 page).
MIN_COVER = 0.5


def _moving_pixels(image: np.ndarray) -> np.ndarray:
    """Pixels of moving bodies: saturated colours (the ground, sky, grid, shadows and panels
    are grey or white; see :data:`MIN_SATURATION`)."""
    rgb = image.astype(float) / 255.0
    return (rgb.max(axis=2) - rgb.min(axis=2)) > MIN_SATURATION


@pytest.mark.slow  # ~15 s
@pytest.mark.parametrize(
    "made_by, kind",
    [
        (("run", "sliding_block", "--set", "mu=0.3"), "sliding_block: run"),
        (("ensemble", "random_box", "-n", "3", "--seed", "7"), "random_box: ensemble"),
    ],
)
def test_the_page_frames_what_moves_beside_its_panels_and_says_what_run_it_is(
    browser, tmp_path, made_by, kind
):
    """``workbench replay --html`` pages at 640 x 480 and 1280 x 800: the title names the scene
    and the kind of run, the caption the parameters as run (``--set mu=0.3``, not the scene's
    0.4); no panel overlaps the canvas; the moving bodies' pixels over the run span at least
    half its width or height."""
    from tests.conftest import run_main

    data = tmp_path / "run.h5"
    assert run_main(*made_by, "-o", data, "-q").returncode == 0
    page_file = tmp_path / "page.html"
    made = run_main("replay", data, "--html", page_file)
    assert made.returncode == 0, made.stderr
    for width, height in SIZES:
        page = Page(browser, page_file, "paused", viewport=(width, height))
        try:
            assert page.page.title() == kind
            caption = page.page.locator("#caption").inner_text()
            if "mu=0.3" in made_by:
                assert "mu = 0.3" in caption and "0.4" not in caption
            canvas = page.page.evaluate(
                "document.querySelector('#view canvas').getBoundingClientRect().toJSON()"
            )
            assert canvas["width"] > 0.5 * width and canvas["height"] > 0.5 * height
            for panel in ("#top", "#bar", "#hint"):
                box = page.page.locator(panel).bounding_box()
                if box is None:  # hidden (the help, until asked for)
                    continue
                apart = (
                    box["y"] + box["height"] <= canvas["top"] + 0.5
                    or box["y"] >= canvas["bottom"] - 0.5
                )
                assert apart, (panel, box, canvas)
            state = page.page.evaluate("window.workbench.state()")
            seen = np.zeros((height, width), dtype=bool)
            for t in np.linspace(state["start"], state["end"], 7):
                seen |= _moving_pixels(page.shot(float(t)))
            check_clean(page)
        finally:
            page.close()
        top, left = round(canvas["top"]), round(canvas["left"])
        inside = seen[top : top + round(canvas["height"]), left : left + round(canvas["width"])]
        ys, xs = np.nonzero(inside)
        assert len(xs), "no moving body on the canvas"
        cover_x = (xs.max() - xs.min() + 1) / canvas["width"]
        cover_y = (ys.max() - ys.min() + 1) / canvas["height"]
        assert max(cover_x, cover_y) >= MIN_COVER, (width, height, cover_x, cover_y)
