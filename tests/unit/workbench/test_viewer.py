"""Viewer: headless frames (deterministic images), videos, the replay command's options, live
replay under Xvfb. The camera and its framing: test_camera.py."""

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
    _frames_at_rate,
    display_problem,
    render_frames,
    replay,
    write_video,
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


# ---------------------------------------------------------------------------------- videos
def test_write_video_mp4_and_gif(fall, tmp_path):
    """Both formats read back with the frames, size and rate asked for. 40 fps over the 0.2 s
    run: frames at 0, 0.025, ... 0.2 s, one per record. A GIF's delays are whole hundredths of a
    second: 25 fps (4/100 s) keeps 6 frames at 0, 0.04, ... 0.2 s, all different (the ball
    falls throughout), so none is merged with the next."""
    import imageio.v2 as imageio

    scene, traj = fall
    calls = []
    mp4 = tmp_path / "fall.mp4"
    n = write_video(
        scene, traj, mp4, width=W, height=H, fps=40.0, progress=lambda *a: calls.append(a)
    )
    assert n == N_RECORDS and calls[-1] == (N_RECORDS, N_RECORDS)
    reader = imageio.get_reader(mp4)
    meta = reader.get_meta_data()
    assert reader.count_frames() == N_RECORDS
    assert meta["size"] == (W, H) and meta["fps"] == 40.0 and meta["codec"] == "h264"
    assert meta["pix_fmt"].startswith("yuv420p")
    reader.close()

    gif = tmp_path / "fall.gif"
    assert write_video(scene, traj, gif, width=W + 1, height=H, fps=25.0, reverse=True) == 6
    frames = imageio.mimread(gif)
    assert len(frames) == 6 and frames[0].shape[:2] == (H, W + 1)  # odd sizes are fine in a GIF
    with Image.open(gif) as im:
        assert im.info["duration"] == 40 and im.info["loop"] == 0
    # 30 fps becomes 100/3: frames every 0.03 s -> 7 frames over 0.2 s
    assert write_video(scene, traj, tmp_path / "b.gif", width=W, height=H, fps=30.0) == 7


@pytest.mark.parametrize(
    ("name", "kwargs", "match"),
    [
        ("v.avi", {}, "unknown video format '.avi'"),
        ("v", {}, "unknown video format"),
        ("v.mp4", {"width": W + 1}, "needs an even width and height"),
        ("v.mp4", {"fps": 0.0}, "fps must be a finite number > 0"),
        ("missing/v.mp4", {}, "does not exist"),
    ],
)
def test_write_video_rejects(fall, tmp_path, name, kwargs, match):
    scene, traj = fall
    with pytest.raises(WorkbenchError, match=match) as info:
        write_video(scene, traj, tmp_path / name, **{"width": W, "height": H, **kwargs})
    assert "\n" not in str(info.value)
    assert not list(tmp_path.iterdir())  # nothing written


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
    assert len(lines) == 1 and "cannot open the viewer" in lines[0]
    for alternative in ("--frames DIR", "--video FILE.mp4", "--html FILE.html", "xvfb-run"):
        assert alternative in lines[0]


# --------------------------------------------------------------------------- the replay command
def _replay_cli(*args, cwd=None, timeout=60):
    return run_workbench("replay", *args, cwd=cwd, timeout=timeout)


def test_replay_help_has_examples_of_every_mode():
    run = _replay_cli("--help")
    assert run.returncode == 0
    for option in ("--frames", "--video", "--html", "--camera", "--reverse", "--realization"):
        assert f"workbench replay fall.h5 {option}" in run.stdout or option in run.stdout
    assert "examples:" in run.stdout and "xvfb-run workbench replay" in run.stdout
    assert ".py" not in run.stdout  # no source-file paths


def test_replay_cli_writes_a_video_and_frames(fall_file, tmp_path):
    video, frames = tmp_path / "fall.mp4", tmp_path / "frames"
    run = _replay_cli(
        fall_file, "--video", video, "--frames", frames, "--fps", "2", "--size", "64x48", "-q"
    )
    assert run.returncode == 0, run.stderr
    assert "wrote" in run.stdout and run.stderr == ""
    assert len(list(frames.glob("frame_*.png"))) == 11  # 5 s at 2 fps
    import imageio.v2 as imageio

    with imageio.get_reader(video) as reader:
        assert reader.count_frames() == 11 and reader.get_meta_data()["size"] == (64, 48)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--video", "out.avi"], "--video out.avi: expected a file name ending in .mp4 or .gif"),
        (["--video", "out.mp4", "--size", "65x48"], "needs an even width and height"),
        (["--frames", "f", "--size", "64by48"], "--size: expected WIDTHxHEIGHT"),
        (["--frames", "f", "--camera", "1,95"], "--camera: expected a finite yaw and a pitch"),
        (["--frames", "f", "--camera", "1,2,3"], "--camera: expected YAW,PITCH or X,Y,Z"),
        (["--frames", "f", "--camera", "0,0,0,-1"], "--camera: the distance must be > 0"),
    ],
)
def test_replay_cli_rejects_with_one_line(fall_file, tmp_path, args, match):
    run = _replay_cli(fall_file, *args, cwd=tmp_path)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and match in lines[0], run.stderr
    assert not (tmp_path / "f").exists() and not (tmp_path / "out.mp4").exists()


@pytest.fixture(scope="module")
def ensemble_file(tmp_path_factory):
    """22 short realizations of random_box (and its nominal run): more than the page shows."""
    out = tmp_path_factory.mktemp("ens") / "boxes.h5"
    made = run_workbench(
        "ensemble",
        "random_box",
        "-n",
        "22",
        "--duration",
        "0.02",
        "--seed",
        "1",
        "-o",
        out,
        "-q",
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    return out


def test_replay_html_passes_the_runs_and_the_framed_camera(
    ensemble_file, fall_file, tmp_path, monkeypatch, capsys
):
    """--html hands workbench.web the nominal run and the first HTML_MAX_RUNS realizations of an
    ensemble (saying what it left out), one run for --realization or a single-run file, and the
    camera frame_camera gives. The page itself is tested with workbench.web."""
    import types

    from workbench.camera import Camera
    from workbench.cli.main import main
    from workbench.cli.replay import HTML_MAX_RUNS

    calls = []
    fake = types.ModuleType("workbench.web")
    fake.write_replay_page = lambda path, scene, runs, **kw: calls.append((path, scene, runs, kw))
    monkeypatch.setitem(sys.modules, "workbench.web", fake)

    assert main(["replay", str(ensemble_file), "--html", str(tmp_path / "e.html")]) == 0
    _, scene, runs, kw = calls[-1]
    assert list(runs) == ["nominal"] + [f"realization {i}" for i in range(HTML_MAX_RUNS)]
    assert isinstance(kw["camera"], Camera) and kw["camera"].distance > 0
    assert kw["reverse"] is False and kw["speed"] == 1.0
    out = capsys.readouterr().out
    assert "left out: 2 completed realizations (20-21)" in out

    assert main(["replay", str(ensemble_file), "--html", "x.html", "--realization", "21"]) == 0
    assert list(calls[-1][2]) == ["realization 21"]
    assert main(["replay", str(fall_file), "--html", "y.html", "--reverse", "--speed", "2"]) == 0
    _, _, runs, kw = calls[-1]
    assert list(runs) == ["run"] and kw["reverse"] is True and kw["speed"] == 2.0
