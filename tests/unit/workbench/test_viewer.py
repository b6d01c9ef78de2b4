"""Viewer: camera framing (pure), headless frames (deterministic images), live replay under Xvfb."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from PIL import Image

from tests.conftest import cli_env, run_workbench
from workbench.errors import WorkbenchError
from workbench.scene.model import scene_from_dict
from workbench.sim.forward import run_scene
from workbench.viewer import (
    CAMERA_PITCH,
    CAMERA_YAW,
    FRAME_MARGIN,
    MIN_FRAME_RADIUS,
    _camera_for,
    _frames_at_rate,
    display_problem,
    render_frames,
    replay,
)

#: A sphere dropped onto a plane: 48 steps recorded every 6 -> 9 records (t = 0, 0.025, ... 0.2 s).
FALL = {
    "settings": {"dt": 1.0 / 240.0, "duration": 0.2, "record_every": 6},
    "bodies": [
        {"name": "ground", "shape": {"type": "plane"}, "fixed": True},
        {
            "name": "ball",
            "shape": {"type": "sphere", "radius": 0.1},
            "mass": 1.0,
            "position": [0.0, 0.0, 0.3],
        },
    ],
}
N_RECORDS = 9
#: Small, non-square frames: fast to render, and a swapped width/height would show.
W, H = 96, 64


@pytest.fixture(scope="module")
def fall():
    scene = scene_from_dict(FALL)
    traj = run_scene(scene)
    assert traj.n_times == N_RECORDS
    return scene, traj


def read_png(path) -> np.ndarray:
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


# ---------------------------------------------------------------------------------- camera
def test_camera_targets_box_centre():
    pts = np.array([[0.0, 0.0, 0.0], [4.0, -2.0, 1.0], [1.0, 2.0, 3.0]])
    target, distance, yaw, pitch = _camera_for(pts)
    np.testing.assert_array_equal(target, [2.0, 0.0, 1.5])  # exact: (lo + hi) / 2
    # bounding sphere radius sqrt(16 + 16 + 9)/2 fits the 60 degree field: d = R / sin(30 deg)
    radius = FRAME_MARGIN * 0.5 * np.sqrt(41.0)
    assert distance == pytest.approx(2.0 * radius, rel=1e-12)
    assert (yaw, pitch) == (CAMERA_YAW, CAMERA_PITCH)


def test_camera_distance_grows_with_box_and_ignores_nonfinite():
    base = np.array([[1.0, 1.0, 1.0], [2.0, 3.0, 1.5]])
    d = [_camera_for(base * s + 7.0)[1] for s in (1.0, 2.0, 5.0)]
    assert d[0] < d[1] < d[2]
    assert d[2] / d[1] == pytest.approx(2.5, rel=1e-12)  # linear in the box size
    nan_row = np.vstack([base, [[np.nan, 0.0, 0.0]]])
    t1, d1, _, _ = _camera_for(nan_row)
    t0, d0, _, _ = _camera_for(base)
    np.testing.assert_array_equal(t1, t0)
    assert d1 == d0
    # a (nt, n, 3) stack frames the same as its flattened points
    assert _camera_for(base.reshape(1, 2, 3))[1] == d0


def test_camera_point_and_portrait():
    target, d_point, _, _ = _camera_for([[1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(target, [1.0, 2.0, 3.0])
    assert d_point == pytest.approx(2.0 * FRAME_MARGIN * MIN_FRAME_RADIUS, rel=1e-12)
    assert _camera_for([[1.0, 2.0, 3.0]], aspect=0.5)[1] > d_point  # narrower: step back
    assert _camera_for([[1.0, 2.0, 3.0]], aspect=2.0)[1] == d_point  # wider: vertical limits
    with pytest.raises(WorkbenchError, match="no finite positions"):
        _camera_for(np.full((2, 3), np.nan))


def test_frames_at_rate_picks_nearest_records():
    tau = np.arange(9) * (1.0 / 240.0 * 6)  # 0.025 s apart, as float sums give them
    np.testing.assert_array_equal(_frames_at_rate(tau, 40.0), np.arange(9))  # every record
    np.testing.assert_array_equal(_frames_at_rate(tau, 20.0), [0, 2, 4, 6, 8])
    np.testing.assert_array_equal(_frames_at_rate(tau, 80.0), np.repeat(np.arange(9), 2)[:17])
    np.testing.assert_array_equal(_frames_at_rate(np.zeros(1), 30.0), [0])


# ---------------------------------------------------------------------------------- frames
def test_render_frames(fall, tmp_path):
    scene, traj = fall
    calls = []
    fwd = render_frames(
        scene,
        traj,
        tmp_path / "fwd" / "nested",
        width=W,
        height=H,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert [p.name for p in fwd] == [f"frame_{k:05d}.png" for k in range(N_RECORDS)]
    assert calls == [(k, N_RECORDS) for k in range(1, N_RECORDS + 1)]
    images = [read_png(p) for p in fwd]
    for im in images:
        assert im.shape == (H, W, 3)
        assert im.std() > 0  # not blank
    assert not np.array_equal(images[0], images[-1])  # the sphere moved

    rev = render_frames(scene, traj, tmp_path / "rev", width=W, height=H, reverse=True)
    assert len(rev) == N_RECORDS
    # same inputs, deterministic renderer: the reversed frames are the forward ones, reversed
    for k, path in enumerate(rev):
        np.testing.assert_array_equal(read_png(path), images[N_RECORDS - 1 - k])


def test_render_frames_every_and_fps(fall, tmp_path):
    scene, traj = fall
    assert len(render_frames(scene, traj, tmp_path / "e", width=W, height=H, every=4)) == 3
    # 20 fps over 0.2 s: frames at 0, 0.05, ... 0.2 s -> records 0, 2, 4, 6, 8
    by_fps = render_frames(scene, traj, tmp_path / "f", width=W, height=H, every=3, fps=20.0)
    by_every = render_frames(scene, traj, tmp_path / "g", width=W, height=H, every=2)
    assert len(by_fps) == len(by_every) == 5
    for a, b in zip(by_fps, by_every, strict=True):
        np.testing.assert_array_equal(read_png(a), read_png(b))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"every": 0}, "every must be an integer >= 1"),
        ({"every": 1.5}, "every must be an integer >= 1"),
        ({"fps": 0.0}, "fps must be a finite number > 0"),
        ({"width": 0}, "width must be an integer >= 1"),
    ],
)
def test_render_frames_bad_arguments(fall, tmp_path, kwargs, match):
    scene, traj = fall
    with pytest.raises(WorkbenchError, match=match) as info:
        render_frames(scene, traj, tmp_path, **kwargs)
    assert "\n" not in str(info.value)
    assert not list(tmp_path.iterdir())  # nothing written


def test_bad_trajectories(fall, tmp_path):
    scene, traj = fall
    empty = traj.truncated(0)
    with pytest.raises(WorkbenchError, match="no records"):
        render_frames(scene, empty, tmp_path)
    with pytest.raises(WorkbenchError, match="no records"):
        replay(scene, empty)
    other = scene_from_dict({**FALL, "bodies": FALL["bodies"][1:]})
    with pytest.raises(WorkbenchError, match="not the scene's"):
        render_frames(other, traj, tmp_path)


@pytest.mark.parametrize("speed", [0, -1.0, float("nan"), "fast"])
def test_replay_bad_speed(fall, speed):
    scene, traj = fall
    with pytest.raises(WorkbenchError, match="speed must be a finite number > 0"):
        replay(scene, traj, speed=speed)  # raised before any window opens


# ---------------------------------------------------------------------------------- live viewer
def _free_display() -> int:
    """A display number with neither an X socket nor a lock file."""
    for n in range(90, 200):
        if not (os.path.exists(f"/tmp/.X11-unix/X{n}") or os.path.exists(f"/tmp/.X{n}-lock")):
            return n
    pytest.skip("no free X display number")


REPLAY_SCRIPT = textwrap.dedent(
    """
    from workbench.sim.forward import run_scene
    from workbench.scene.model import scene_from_dict
    from workbench.viewer import replay

    scene = scene_from_dict({fall!r})
    traj = run_scene(scene)
    replay(scene, traj, speed=50)
    replay(scene, traj, speed=50, reverse=True)
    print("replayed", traj.n_times)
    """
)


@pytest.fixture
def xvfb_display():
    """A virtual X display (Xvfb) for the test's processes; its DISPLAY value."""
    if shutil.which("Xvfb") is None:
        pytest.skip("needs the Xvfb binary on PATH")
    display = _free_display()
    xvfb = subprocess.Popen(
        ["Xvfb", f":{display}", "-screen", "0", "640x480x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10.0  # Xvfb creates its socket within a second here
        while not os.path.exists(f"/tmp/.X11-unix/X{display}"):
            assert xvfb.poll() is None, "Xvfb exited at start"
            assert time.monotonic() < deadline, "Xvfb did not start"
            time.sleep(0.05)
        yield f":{display}"
    finally:
        xvfb.terminate()
        try:
            xvfb.wait(timeout=5)
        except subprocess.TimeoutExpired:
            xvfb.kill()


@pytest.mark.viewer
def test_replay_under_xvfb(xvfb_display):
    env = cli_env()
    env["DISPLAY"] = xvfb_display
    run = subprocess.run(
        [sys.executable, "-c", REPLAY_SCRIPT.format(fall=FALL)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"replayed {N_RECORDS}" in run.stdout


@pytest.fixture
def fall_file(tmp_path):
    """A stored run of the shipped falling_object scene, written by ``workbench run``."""
    out = tmp_path / "fall.h5"
    made = run_workbench("run", "falling_object", "-o", out, "-q", timeout=120)
    assert made.returncode == 0, made.stderr
    return out


@pytest.mark.viewer
def test_ctrl_c_stops_a_running_replay_and_the_viewer_is_quiet(fall_file, xvfb_display):
    """A looping replay stops on SIGINT (exit 130) within 5 s, and PyBullet's start-up chatter
    (45 lines on stdout before) is replaced by one line saying how to stop."""
    env, out = cli_env(), fall_file
    env["DISPLAY"] = xvfb_display
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench.cli", "replay", out, "--loop"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stdout.readline()  # printed before the window opens
        assert "Ctrl-C" in first
        time.sleep(3.0)  # the window is open and the loop is playing
        assert proc.poll() is None, proc.stderr.read()
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=10)
        assert time.monotonic() - t0 < 5.0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert rest.strip() == "" and err.strip().splitlines() == ["workbench replay: interrupted"]


# --------------------------------------------------------------------------- no display, no hang
#: A display number no X server here listens on.
DEAD_DISPLAY = ":987"


def test_display_problem_names_the_reason():
    assert "DISPLAY is not set" in display_problem({})
    assert "cannot connect" in display_problem({"DISPLAY": DEAD_DISPLAY})
    assert "cannot connect" in display_problem({"DISPLAY": "127.0.0.1:87"})  # TCP: port 6087
    assert "not of the form" in display_problem({"DISPLAY": "nonsense"})


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X displays are Linux's")
@pytest.mark.parametrize("display", [None, DEAD_DISPLAY])
def test_replay_without_a_display_fails_fast_with_one_line(fall_file, display):
    """PyBullet's GUI would print "cannot connect to X server" and hang, deaf to Ctrl-C: the CLI
    must instead exit 2 within 5 s with one line that says what to do."""
    env, out = cli_env(), fall_file
    env.pop("DISPLAY", None)
    if display is not None:
        env["DISPLAY"] = display
    t0 = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "replay", out],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,  # a hang fails here, not forever
    )
    assert time.perf_counter() - t0 < 5.0
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot open the viewer" in lines[0] and "--frames" in lines[0]
