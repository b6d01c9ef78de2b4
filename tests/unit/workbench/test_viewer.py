"""Viewer: headless frames (deterministic images), videos, the replay command's options, live
replay under Xvfb. The camera and its framing: test_camera.py."""

from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from PIL import Image

from tests.conftest import cli_env, run_main, run_workbench
from workbench.errors import WorkbenchError
from workbench.replay.display import display_problem, held_display
from workbench.replay.viewer import (
    FPS_RANGE,
    MAX_FRAMES,
    MAX_SIDE,
    SPEED_RANGE,
    _interrupts_between_calls,
    render_frames,
    replay,
    write_video,
)
from workbench.scene.loader import scene_to_json
from workbench.scene.model import scene_from_dict
from workbench.sim.forward import run_scene
from workbench.sim.state import records_at_rate
from workbench.store import write_trajectory

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


def test_records_at_rate_picks_nearest_records():
    tau = np.arange(9) * (1.0 / 240.0 * 6)  # 0.025 s apart, as float sums give them
    np.testing.assert_array_equal(records_at_rate(tau, 40.0), np.arange(9))  # every record
    np.testing.assert_array_equal(records_at_rate(tau, 20.0), [0, 2, 4, 6, 8])
    np.testing.assert_array_equal(records_at_rate(tau, 80.0), np.repeat(np.arange(9), 2)[:17])
    np.testing.assert_array_equal(records_at_rate(np.zeros(1), 30.0), [0])
    # times need not start at 0: frames are counted from the first record
    np.testing.assert_array_equal(records_at_rate(tau + 7.0, 20.0), [0, 2, 4, 6, 8])


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


def test_render_frames_speed_takes_frames_every_speed_over_fps(fall, tmp_path):
    """At speed 2 and 20 fps a frame every 0.1 s of the run: records 0, 4, 8, the same images
    as every 4th record; at speed 0.5 and 40 fps every record twice (0.0125 s apart)."""
    scene, traj = fall
    fast = render_frames(scene, traj, tmp_path / "fast", width=W, height=H, fps=20.0, speed=2.0)
    every = render_frames(scene, traj, tmp_path / "every", width=W, height=H, every=4)
    assert len(fast) == len(every) == 3
    for a, b in zip(fast, every, strict=True):
        np.testing.assert_array_equal(read_png(a), read_png(b))
    slow = render_frames(scene, traj, tmp_path / "slow", width=W, height=H, fps=40.0, speed=0.5)
    assert len(slow) == 2 * (N_RECORDS - 1) + 1


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
        ({"fps": 0.0}, "fps must be a number from 0.1 to 1000"),
        ({"fps": FPS_RANGE[1] * 1.01}, "fps must be a number from"),
        ({"fps": float("nan")}, "fps must be a number from"),
        ({"fps": 30.0, "speed": SPEED_RANGE[0] / 2}, "speed must be a number from 0.01 to 100"),
        ({"speed": 2.0}, "speed applies to frames taken at a rate: give fps too"),
        ({"width": 0}, "width must be an integer >= 1"),
        ({"height": MAX_SIDE + 1}, f"height must be at most {MAX_SIDE} pixels"),
    ],
)
def test_render_frames_bad_arguments(fall, tmp_path, kwargs, match):
    scene, traj = fall
    with pytest.raises(WorkbenchError, match=match) as info:
        render_frames(scene, traj, tmp_path, **kwargs)
    assert "\n" not in str(info.value)
    assert not list(tmp_path.iterdir())  # nothing written


def test_too_many_frames_are_refused(fall, tmp_path, monkeypatch):
    """0.2 s at 1000 frames per second, slowed down 100 times: 20001 frames, beyond a limit of
    1000 (the real MAX_FRAMES needs a longer run than this test should render)."""
    from workbench.replay import viewer

    assert MAX_FRAMES >= 100_000
    monkeypatch.setattr(viewer, "MAX_FRAMES", 1000)
    scene, traj = fall
    with pytest.raises(WorkbenchError, match="20001 frames .* exceed the 1000-frame limit"):
        render_frames(scene, traj, tmp_path / "f", width=W, height=H, fps=1000.0, speed=0.01)
    assert not (tmp_path / "f").exists()


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
        ("v.mp4", {"fps": 0.0}, "fps must be a number from 0.1 to 1000"),
        ("v.gif", {"fps": 1e-3}, "fps must be a number from"),  # was Pillow's OverflowError
        ("v.mp4", {"fps": 1e-9}, "fps must be a number from"),  # was ffmpeg's error, no file
        ("v.mp4", {"fps": 1e300}, "fps must be a number from"),  # was a ValueError
        ("v.mp4", {"speed": 0.0}, "speed must be a number from"),
        ("v.mp4", {"width": 100_000, "height": 100_000}, "at most 8192 pixels"),
        ("missing/v.mp4", {}, "does not exist"),
    ],
)
def test_write_video_rejects(fall, tmp_path, name, kwargs, match):
    scene, traj = fall
    with pytest.raises(WorkbenchError, match=match) as info:
        write_video(scene, traj, tmp_path / name, **{"width": W, "height": H, **kwargs})
    assert "\n" not in str(info.value)
    assert not list(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize(
    ("writer", "match"),
    [
        ("silent", "the video writer wrote no file"),
        ("failing", "the video writer failed: ffmpeg said no"),
    ],
)
def test_write_video_checks_the_writer(fall, tmp_path, monkeypatch, writer, match):
    """A writer that raises (ffmpeg's errors) or writes nothing is an error, not a 'wrote'."""
    import imageio.v2 as imageio

    class Writer:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            if writer == "failing":
                raise OSError("ffmpeg failed\nffmpeg said no")

        def append_data(self, rgb):
            pass

    monkeypatch.setattr(imageio, "get_writer", lambda *a, **kw: Writer())
    scene, traj = fall
    with pytest.raises(WorkbenchError, match=match) as info:
        write_video(scene, traj, tmp_path / "v.mp4", width=W, height=H, fps=10.0)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("speed", [0, -1.0, float("nan"), "fast", 1e-3, 1e3])
def test_replay_bad_speed(fall, speed):
    scene, traj = fall
    with pytest.raises(WorkbenchError, match="speed must be a number from 0.01 to 100"):
        replay(scene, traj, speed=speed)  # raised before any window opens


# ---------------------------------------------------------------------------------- live viewer
REPLAY_SCRIPT = textwrap.dedent(
    """
    from workbench.sim.forward import run_scene
    from workbench.scene.model import scene_from_dict
    from workbench.replay.viewer import replay

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
    yield from _xvfb()


@pytest.fixture
def xvfb_without_glx():
    """The same with Xvfb's GLX extension turned off: an X display without OpenGL."""
    yield from _xvfb("-extension", "GLX")


def _xvfb(*extra: str):
    """Start Xvfb with ``extra`` arguments, yield its DISPLAY value, stop it."""
    if shutil.which("Xvfb") is None:
        pytest.skip("needs the Xvfb binary on PATH")
    # Xvfb on a free number from 90 up (away from the displays people use), told to write the
    # number to -displayfd once it accepts connections: it exits instead when another X server
    # holds the number (another pytest-xdist worker, another process), and the next is tried.
    # Only a number this Xvfb wrote is used: no race with another server starting meanwhile.
    for display in range(90, 200):
        if os.path.exists(f"/tmp/.X11-unix/X{display}") or os.path.exists(f"/tmp/.X{display}-lock"):
            continue
        read_end, write_end = os.pipe()
        try:
            # the screen holds PyBullet's 1024 x 768 window whole (screenshots of the viewer)
            screen = ["-screen", "0", "1024x768x24", "-nolisten", "tcp", *extra]
            xvfb = subprocess.Popen(
                ["Xvfb", f":{display}", "-displayfd", str(write_end), *screen],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(write_end,),
            )
        finally:
            os.close(write_end)
        deadline = time.monotonic() + 10.0  # Xvfb is ready within a second here
        answer = b""
        while not answer.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                xvfb.kill()
                xvfb.wait()
                os.close(read_end)
                pytest.fail("Xvfb did not start")
            if select.select([read_end], [], [], left)[0]:
                chunk = os.read(read_end, 16)
                if not chunk:  # exited: the number is taken
                    break
                answer += chunk
        if answer.endswith(b"\n"):
            assert int(answer) == display
            break
        xvfb.wait()
        os.close(read_end)
    else:
        pytest.skip("no free X display number from 90 to 199")
    try:
        yield f":{display}"
    finally:
        os.close(read_end)
        xvfb.terminate()
        try:
            xvfb.wait(timeout=5)
        except subprocess.TimeoutExpired:
            xvfb.kill()
            xvfb.wait()  # reaped, or Popen warns that it is still running


@pytest.mark.slow  # ~10 s
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


@pytest.fixture(scope="module")
def fall_file(tmp_path_factory):
    """A stored run of the shipped falling_object scene, written by ``workbench run``; made once
    for the module (the tests only read it)."""
    out = tmp_path_factory.mktemp("fall") / "fall.h5"
    made = run_workbench("run", "falling_object", "-o", out, "-q", timeout=120)
    assert made.returncode == 0, made.stderr
    return out


#: Title of PyBullet's viewer window, set once its OpenGL context is made (PyBullet 3.2.7).
VIEWER_TITLE = "Bullet Physics ExampleBrowser"


def start_looping_replay(fall_file, display):
    """``workbench replay FILE --loop`` on ``display``, once it printed its first line (before
    the window opens): the process, and that line."""
    env = cli_env()
    env["DISPLAY"] = display
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench.cli", "replay", fall_file, "--loop"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, proc.stdout.readline()


def wait_for_viewer_window(proc, display, timeout: float = 60.0) -> None:
    """Until PyBullet's window, titled :data:`VIEWER_TITLE`, is on ``display`` (``xwininfo``).
    Its start takes seconds under load: a fixed sleep of 3 s sent the signal into it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        tree = subprocess.run(
            ["xwininfo", "-root", "-tree", "-display", display],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
        if VIEWER_TITLE in tree:
            return
        time.sleep(0.1)
    pytest.fail(f"no window titled {VIEWER_TITLE!r} on {display} after {timeout:g} s")


def interrupt_and_collect(proc):
    """SIGINT to ``proc``; its exit status, the rest of its stdout, its stderr, and the seconds
    from the signal to its exit."""
    try:
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=30)
        return proc.returncode, rest, err, time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()  # reaped, its pipes closed


@pytest.mark.slow  # ~5 s
@pytest.mark.viewer
@pytest.mark.skipif(shutil.which("xwininfo") is None, reason="needs xwininfo (x11-utils)")
def test_ctrl_c_stops_a_running_replay_and_the_viewer_is_quiet(fall_file, xvfb_display):
    """A looping replay whose window is open stops on SIGINT (exit 130) within 5 s, and
    PyBullet's start-up chatter (45 lines on stdout before) is replaced by one line saying how
    to stop."""
    proc, first = start_looping_replay(fall_file, xvfb_display)
    try:
        assert "Ctrl-C" in first
        wait_for_viewer_window(proc, xvfb_display)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    status, rest, err, took = interrupt_and_collect(proc)
    assert status == 130, err
    assert rest.strip() == "" and err.strip().splitlines() == ["workbench replay: interrupted"]
    assert took < 5.0


@pytest.mark.slow  # ~5 s
@pytest.mark.viewer
def test_ctrl_c_while_the_viewer_window_opens(fall_file, xvfb_display):
    """Ctrl-C as the window starts to open (the case users hit): the signal comes during
    PyBullet's GUI connect, which Python cannot cut short. Before, the window stayed open until
    the interpreter's exit, whose disconnect printed PyBullet's shut-down lines; now the one
    line, exit 130, and no window left behind."""
    proc, first = start_looping_replay(fall_file, xvfb_display)
    assert "Ctrl-C" in first
    time.sleep(0.3)  # past the first line: the viewer is importing PyBullet or connecting
    status, rest, err, took = interrupt_and_collect(proc)
    assert status == 130, err
    assert rest.strip() == "" and err.strip().splitlines() == ["workbench replay: interrupted"]
    # the rest of the window's start comes first (PyBullet's connect cannot be cut short; up
    # to 17 s measured under two busy loops with other work on the two cores besides), then
    # the window closes: 20 s. The hang this guards against (probe closed, X server reset,
    # PyBullet's GUI thread calling exit under the GIL) never ended.
    assert took < 20.0


@pytest.mark.slow  # ~3 s
@pytest.mark.viewer
@pytest.mark.skipif(shutil.which("xwininfo") is None, reason="needs xwininfo (x11-utils)")
def test_replay_ends_when_the_x_server_dies_under_the_window(fall_file):
    """The X server killed while the window is open: PyBullet's GUI thread gets "X connection
    ... broken" and calls exit(); the viewer's process ends, and the replay says so in one
    line, exit status 2."""
    xvfb = _xvfb()
    display = next(xvfb)
    proc, first = start_looping_replay(fall_file, display)
    try:
        assert "Ctrl-C" in first
        wait_for_viewer_window(proc, display)
        xvfb.close()  # the generator's finally: Xvfb terminated
        rest, err = proc.communicate(timeout=30)
    finally:
        xvfb.close()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"X connection to {display} broken" in lines[0], err
    assert rest.strip() == ""


@pytest.mark.slow  # ~4 s
@pytest.mark.viewer
@pytest.mark.skipif(shutil.which("xwininfo") is None, reason="needs xwininfo (x11-utils)")
def test_the_viewer_window_closes_when_the_replay_is_killed(fall_file, xvfb_display):
    """``workbench replay`` killed (SIGKILL: nothing of its own runs): its viewer's process
    notices within a poll and closes the window instead of playing on, orphaned."""
    proc, first = start_looping_replay(fall_file, xvfb_display)
    try:
        assert "Ctrl-C" in first
        wait_for_viewer_window(proc, xvfb_display)
        # into the playback: the scene is built after the window shows (seconds under load),
        # and an orphan that wrote "open" into a closed pipe would end by that error alone
        time.sleep(2.0)
    finally:
        proc.kill()
        proc.communicate()
    deadline = time.monotonic() + 10.0  # closes within 0.1 s idle; the window's close after
    while VIEWER_TITLE in _window_tree(xvfb_display):
        assert time.monotonic() < deadline, "the viewer's window stayed open"
        time.sleep(0.1)


def _window_tree(display) -> str:
    """``xwininfo -root -tree`` of ``display``."""
    return subprocess.run(
        ["xwininfo", "-root", "-tree", "-display", display],
        capture_output=True,
        text=True,
        timeout=10,
    ).stdout


def test_ctrl_c_is_raised_between_pybullet_calls():
    """Within the viewer's session SIGINT is noted, not raised where it lands; ``check()``
    raises it, and one never checked is raised as the session ends. The handler is restored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        reached = False
        with pytest.raises(KeyboardInterrupt):
            with _interrupts_between_calls() as check:
                check()  # nothing noted yet
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # the handler has run: noted only
                reached = True
                check()
        assert reached
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with pytest.raises(KeyboardInterrupt):
            with _interrupts_between_calls():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
                reached = "end"
        assert reached == "end"
        # another handler in place (an embedding application's): left alone
        calls = []
        signal.signal(signal.SIGINT, lambda *_: calls.append(1))
        with _interrupts_between_calls() as check:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            check()
        assert calls == [1]
    finally:
        signal.signal(signal.SIGINT, previous)


# --------------------------------------------------------------------------- no display, no hang
#: A display number no X server here listens on.
DEAD_DISPLAY = ":987"


def test_display_problem_names_the_reason():
    assert "DISPLAY is not set" in display_problem({})
    assert "cannot connect" in display_problem({"DISPLAY": DEAD_DISPLAY})
    assert "cannot connect" in display_problem({"DISPLAY": "127.0.0.1:87"})  # TCP: port 6087
    assert "not of the form" in display_problem({"DISPLAY": "nonsense"})


class FakeXServer:
    """A TCP listener on 127.0.0.1, port 6000 + N (display ``127.0.0.1:N``), that accepts
    connections, keeps the first bytes it is sent, and answers them with ``answer`` (nothing
    when None, like a port that accepts anything). With ``later`` only the first connection is
    answered: later ones are closed at once (``"close"``) or held open unanswered
    (``"silent"``)."""

    def __init__(
        self,
        answer: bytes | None,
        then: bytes | None = None,
        later: str | None = None,
        hang_up: int = 0,
    ):
        self.answer, self.then, self.received, self.second = answer, then, b"", b""
        self.later, self.hang_up, self.hung_up = later, hang_up, 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        for n in range(100, 200):
            try:
                self.sock.bind(("127.0.0.1", 6000 + n))
                break
            except OSError:
                continue
        else:
            pytest.skip("no free TCP port from 6100 to 6199")
        self.display = f"127.0.0.1:{n}"
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.held = []  # connections stay open (unanswered) until the server stops
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            if self.hung_up < self.hang_up:  # closed unanswered, as a resetting X server does
                self.hung_up += 1
                conn.close()
                continue
            self.held.append(conn)
            if self.later is not None and len(self.held) > 1:
                if self.later == "close":
                    conn.close()
                continue
            conn.settimeout(2.0)
            try:
                self.received = conn.recv(4096)
                if self.answer is not None:
                    conn.sendall(self.answer)
                if self.then is not None:  # the answer to the next request
                    self.second = conn.recv(4096)
                    conn.sendall(self.then)
            except OSError:
                pass
        for conn in self.held:
            conn.close()

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)
        self.sock.close()


@pytest.fixture
def fake_x():
    servers = []

    def make(answer, then=None, later=None, hang_up=0):
        servers.append(FakeXServer(answer, then, later, hang_up))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


#: The setup request with no authorization: byte order 'l', unused, protocol 11.0, name and
#: data lengths 0, two unused bytes (X11 protocol, "Connection Setup").
NO_AUTH_REQUEST = b"l\0" + (11).to_bytes(2, "little") + bytes(2) + bytes(6)


@pytest.mark.slow  # ~3 s
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X displays are Linux's")
def test_display_problem_asks_for_an_x_server(fake_x, tmp_path):
    """Something that accepts on the X port but does not answer as an X server is no display
    (PyBullet would hang there); an X server's Success (1) is; its Failed (0) and Authenticate
    (2) are a refusal. The request is X11's setup, with no cookie when there is none."""
    env = {"HOME": str(tmp_path)}  # no ~/.Xauthority there
    silent = fake_x(None)
    t0 = time.monotonic()
    problem = display_problem({**env, "DISPLAY": silent.display})
    assert time.monotonic() - t0 < 1.5  # DISPLAY_TIMEOUT is 1 s
    assert "does not answer as an X server" in problem
    assert "does not answer" in display_problem({**env, "DISPLAY": fake_x(b"HTTP/1.1").display})
    ok = fake_x(b"\x01\x00\x0b\x00")
    assert display_problem({**env, "DISPLAY": ok.display}) is None
    assert ok.received == NO_AUTH_REQUEST
    for refusal in (b"\x00", b"\x02"):
        assert "refused the connection" in display_problem(
            {**env, "DISPLAY": fake_x(refusal).display}
        )


#: A whole Success reply to the setup request: 1, unused, protocol 11.0, then 1 four-byte unit
#: of additional data (a real server's describes its screens).
SETUP_SUCCESS = b"\x01\x00" + (11).to_bytes(2, "little") + bytes(2) + (1).to_bytes(2, "little")
SETUP_SUCCESS += b"data"


def _extension_reply(present: bool) -> bytes:
    """QueryExtension's 32-byte reply to the first request: Reply, sequence number 1, length 0,
    present, major opcode 150."""
    return b"\x01\x00" + (1).to_bytes(2, "little") + bytes(4) + bytes([present, 150]) + bytes(22)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X displays are Linux's")
def test_display_problem_asks_for_glx(fake_x, tmp_path):
    """After Success the server is asked for the GLX extension (PyBullet's viewer draws with
    it; without it PyBullet's GUI thread exits and the process hangs): absent is a problem,
    present is not, and an Error instead of a reply or no reply cannot tell (not a problem)."""
    env = {"HOME": str(tmp_path)}
    without = fake_x(SETUP_SUCCESS, then=_extension_reply(False))
    assert "no GLX extension" in display_problem({**env, "DISPLAY": without.display})
    # QueryExtension: opcode 98, length 3 units, name length 3, "GLX" padded to 4 bytes
    assert without.second == bytes([98, 0, 3, 0, 3, 0, 0, 0]) + b"GLX\0"
    with_glx = fake_x(SETUP_SUCCESS, then=_extension_reply(True))
    assert display_problem({**env, "DISPLAY": with_glx.display}) is None
    error = fake_x(SETUP_SUCCESS, then=b"\x00" + bytes(31))
    assert display_problem({**env, "DISPLAY": error.display}) is None
    t0 = time.monotonic()
    assert display_problem({**env, "DISPLAY": fake_x(SETUP_SUCCESS).display}) is None
    assert time.monotonic() - t0 < 1.5  # DISPLAY_TIMEOUT is 1 s


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X displays are Linux's")
def test_display_problem_asks_again_a_server_that_hangs_up(fake_x, tmp_path):
    """An X server that is resetting (its last client, the previous viewer's process, just
    left) accepts connections and closes them unanswered until it is done: 0.02-0.06 s, after
    which it answers. The check asks again until the display's timeout instead of calling it
    no X server (test_replay_under_xvfb's second replay was refused so, 1 run in 3)."""
    env = {"HOME": str(tmp_path)}
    resetting = fake_x(SETUP_SUCCESS, then=_extension_reply(True), hang_up=3)
    assert display_problem({**env, "DISPLAY": resetting.display}) is None
    assert resetting.hung_up == 3 and len(resetting.held) == 1
    gone = fake_x(None, hang_up=10**6)  # hangs up for good: not an X server
    t0 = time.monotonic()
    assert "does not answer as an X server" in display_problem({**env, "DISPLAY": gone.display})
    assert time.monotonic() - t0 < 1.5  # DISPLAY_TIMEOUT is 1 s on TCP


@pytest.mark.slow  # ~3 s
@pytest.mark.viewer
def test_replay_refuses_an_x_display_without_opengl(fall_file, xvfb_without_glx):
    """On an X server without GLX, PyBullet's GUI thread prints "Error in gladLoadGLX" and
    calls exit(), which hung ``workbench replay`` for good (HDF5's exit handler waits for the
    GIL that the main thread holds in connect): now one line and exit status 2, at once."""
    env = cli_env()
    env["DISPLAY"] = xvfb_without_glx
    run = run_workbench("replay", fall_file, env=env, timeout=60)
    assert run.returncode == 2, run.stderr[-2000:]
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "no GLX extension" in lines[0], run.stderr


@pytest.mark.slow  # ~3 s
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X displays are Linux's")
def test_replay_ends_when_the_viewer_dies_after_the_checks(fall_file, fake_x):
    """A display that passes every check (an X server, GLX) and then closes PyBullet's own
    connection: PyBullet's GUI thread prints "cannot connect to X server" and calls exit(),
    which hung ``workbench replay`` for good (HDF5's exit handler waits for the GIL that the
    main thread holds in connect; killed after 20 s, and by this test's timeout before the
    viewer's own process). The viewer's process ends instead, and the replay says why in one
    line, exit status 2."""
    server = fake_x(SETUP_SUCCESS, then=_extension_reply(True), later="close")
    env = cli_env()
    env["DISPLAY"] = server.display
    t0 = time.perf_counter()
    run = run_workbench("replay", fall_file, env=env, timeout=60)  # the hang fails here
    took = time.perf_counter() - t0
    assert run.returncode == 2, run.stderr[-2000:]
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "cannot open the viewer (PyBullet's viewer ended as it started: " in lines[0]
    assert "cannot connect to X server" in lines[0] and "--frames DIR" in lines[0]
    assert run.stdout.strip().splitlines() == [
        "PyBullet viewer: close its window or press Ctrl-C to stop"
    ]
    assert len(server.held) >= 2  # the check's connection, then PyBullet's
    # two interpreters' start and PyBullet's import: 1.6 s idle; 60 s is the window's own bound
    assert took < 30.0


@pytest.mark.slow  # ~3 s
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X displays are Linux's")
def test_replay_gives_up_on_a_window_that_never_opens(fall, fake_x, monkeypatch):
    """A display that passes the checks and never answers PyBullet's connection: PyBullet's
    connect never returns, holding the GIL (no thread dies; nothing to see but silence). After
    VIEWER_SILENCE_TIMEOUT without a sign of life the viewer's process is killed (its
    connection to the display closes) and the replay says so."""
    from workbench.replay import viewer

    scene, traj = fall
    server = fake_x(SETUP_SUCCESS, then=_extension_reply(True), later="silent")
    monkeypatch.setenv("DISPLAY", server.display)
    monkeypatch.setattr(viewer, "VIEWER_SILENCE_TIMEOUT", 2.0)
    t0 = time.monotonic()
    with pytest.raises(WorkbenchError, match=r"viewer did not answer for 2 s as it started"):
        replay(scene, traj)
    assert 2.0 <= time.monotonic() - t0 < 10.0
    assert len(server.held) == 2  # the check's connection, then PyBullet's
    # the viewer's process is gone: its connection is closed (after the setup request it sent)
    deadline = time.monotonic() + 2.0
    while not _closed_by_peer(server.held[1], timeout=max(deadline - time.monotonic(), 0.0)):
        assert time.monotonic() < deadline, "PyBullet's connection is still open"


def _closed_by_peer(conn: socket.socket, timeout: float = 2.0) -> bool:
    """Whether the other end of ``conn`` closed it within ``timeout`` s (EOF), or still holds
    it open then."""
    ready, _, _ = select.select([conn], [], [], timeout)
    return bool(ready) and conn.recv(1) == b""


@pytest.mark.slow  # ~3 s
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X displays are Linux's")
def test_held_display_keeps_the_connection_until_the_viewer_is_done(fake_x, tmp_path):
    """An X server whose last client leaves resets and refuses connections meanwhile, so
    PyBullet's GUI thread got "cannot connect to X server" and hung the process (3 of 15 fresh
    Xvfb starts under load; 0 of 15 with -noreset): the check's connection stays open through
    the ``with`` block, and :func:`display_problem`'s is closed at once."""
    env = {"HOME": str(tmp_path)}
    quick = fake_x(b"\x01")
    assert display_problem({**env, "DISPLAY": quick.display}) is None
    assert _closed_by_peer(quick.held[0])
    server = fake_x(b"\x01")
    with held_display({**env, "DISPLAY": server.display}) as problem:
        assert problem is None
        assert not _closed_by_peer(server.held[0], timeout=0.3)
    assert _closed_by_peer(server.held[0])
    with held_display({**env, "DISPLAY": fake_x(b"\x00").display}) as problem:
        assert "refused the connection" in problem


def _xauth_entry(family: int, address: bytes, number: bytes, name: bytes, data: bytes) -> bytes:
    """One entry of an Xauthority file (Xau's format: big-endian CARD16 lengths)."""
    out = family.to_bytes(2, "big")
    for field in (address, number, name, data):
        out += len(field).to_bytes(2, "big") + field
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X displays are Linux's")
def test_display_problem_sends_the_displays_cookie(fake_x, tmp_path):
    """The cookie of the display's number for the local host (a loopback peer counts as local,
    as in libxcb) goes with the setup request, padded to 4 bytes; other displays' do not."""
    server = fake_x(b"\x01")
    number = server.display.split(":")[1].encode()
    cookie = bytes(range(16))
    xauth = tmp_path / "xauth"
    xauth.write_bytes(
        _xauth_entry(256, socket.gethostname().encode(), b"9999", b"MIT-MAGIC-COOKIE-1", b"x" * 16)
        + _xauth_entry(256, socket.gethostname().encode(), number, b"MIT-MAGIC-COOKIE-1", cookie)
    )
    assert display_problem({"DISPLAY": server.display, "XAUTHORITY": str(xauth)}) is None
    name = b"MIT-MAGIC-COOKIE-1"
    expected = (
        b"l\0" + (11).to_bytes(2, "little") + bytes(2)
        + len(name).to_bytes(2, "little") + len(cookie).to_bytes(2, "little") + bytes(2)
        + name + bytes(2) + cookie
    )  # fmt: skip
    assert server.received == expected


@pytest.mark.slow  # ~2 s
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X displays are Linux's")
def test_replay_fails_fast_on_a_port_that_is_no_x_server(fall_file, fake_x):
    """The reviewer's hang: DISPLAY pointing at a listener that accepts and never answers."""
    env = cli_env()
    env["DISPLAY"] = fake_x(None).display
    t0 = time.perf_counter()
    run = run_workbench("replay", fall_file, env=env, timeout=30)
    assert time.perf_counter() - t0 < 5.0
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "does not answer as an X server" in lines[0], run.stderr


@pytest.mark.slow  # ~2.5 s for both: here to keep the fast tier short
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
    run = run_workbench("replay", out, env=env, timeout=30)  # a hang fails here, not forever
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
    # in this process: replay's own process is tested above (help, video and frames, no display)
    run = run_main("replay", fall_file, *args, cwd=tmp_path)
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
    """--html hands workbench.replay.web the nominal run and the first HTML_MAX_RUNS realizations
    of an
    ensemble (saying what it left out), one run for --realization or a single-run file, and the
    camera frame_camera gives. The page itself is tested with workbench.replay.web."""
    import types

    from workbench.cli.main import main
    from workbench.cli.replay import HTML_MAX_RUNS
    from workbench.replay.camera import Camera

    calls = []
    fake = types.ModuleType("workbench.replay.web")
    fake.write_replay_page = lambda path, scene, runs, **kw: calls.append((path, scene, runs, kw))
    monkeypatch.setitem(sys.modules, "workbench.replay.web", fake)

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


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--fps", "1e-3", "--video", "o.gif"], "--fps: expected a number from 0.1 to 1000"),
        (["--fps", "1e-9", "--video", "o.mp4"], "--fps: expected a number from 0.1 to 1000"),
        (["--fps", "1e300", "--frames", "f"], "--fps: expected a number from 0.1 to 1000"),
        (["--fps", "nan", "--frames", "f"], "--fps: expected a number from 0.1 to 1000"),
        (["--size", "100000x100000", "--frames", "f"], "from 1 to 8192 pixels"),
        (["--speed", "1e-3", "--video", "o.mp4"], "--speed: expected a number from 0.01 to 100"),
        (["--speed", "0", "--html", "o.html"], "--speed: expected a number from 0.01 to 100"),
        (["--frames", "taken"], "taken: is a file, expected a folder"),
        (["--html", "nodir/x.html"], "nodir/x.html: directory nodir does not exist"),
        (["--video", "nodir/x.mp4"], "nodir/x.mp4: directory nodir does not exist"),
        (["--html", "."], ".: is a directory"),
    ],
)
def test_replay_cli_checks_values_and_outputs_before_reading(
    tmp_path, monkeypatch, capsys, args, match
):
    """Out-of-range values and unwritable outputs are one line and exit 2, checked before the
    store is opened (the file given here does not exist: its error would come first otherwise);
    nothing is written and no folder is made."""
    from workbench.cli.main import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "taken").write_text("a file")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["replay", str(tmp_path / "missing.h5"), *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and match in lines[0], lines
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# ------------------------------------------------------------- ensembles with failed realizations
def _store_with_failures(path, scene, template, runs, nominal=None):
    """A store of ``len(runs)`` realizations of ``scene``, shaped like ``template``, written
    with the store API: ``runs[i]`` is a Trajectory (written with its status) or None (left not
    completed)."""
    from workbench.store import StoreSchema, TrajectoryStore

    with TrajectoryStore.create(
        path,
        StoreSchema.from_trajectory(template),
        len(runs),
        scene_json=scene_to_json(scene),
        nominal=nominal,
    ) as store:
        for i, traj in enumerate(runs):
            if traj is not None:
                store.write(i, traj)
    return path


def _failed(traj, status, message, n):
    """``traj``'s first ``n`` records, marked as failed with ``status`` and ``message``."""
    out = traj.truncated(n)
    out.status, out.message = status, message
    return out


@pytest.fixture(scope="module")
def failing_file(tmp_path_factory):
    """Realization 0 not completed, 1 ok, 2 failed with no record (an exception), 3 stopped by
    a non-finite state after 4 records, 4 ok; no nominal run."""
    scene = scene_from_dict(FALL)
    traj = run_scene(scene)
    runs = [
        None,
        traj,
        _failed(traj, "error", "ValueError: boom", 0),
        _failed(traj, "nonfinite", "ball: position is not finite at t = 0.1 s", 4),
        traj,
    ]
    path = tmp_path_factory.mktemp("failing") / "failing.h5"
    return _store_with_failures(path, scene, traj, runs)


def _fake_web(monkeypatch):
    """Replace workbench.replay.web by a recorder of write_replay_page's calls."""
    import types

    calls = []
    fake = types.ModuleType("workbench.replay.web")
    fake.write_replay_page = lambda path, scene, runs, **kw: calls.append((path, scene, runs, kw))
    monkeypatch.setitem(sys.modules, "workbench.replay.web", fake)
    return calls


def test_replay_html_leaves_out_failed_and_unfinished_realizations(
    failing_file, tmp_path, monkeypatch, capsys
):
    """Before: the page read realization 0 (not completed: an error) and kept failed
    realizations (no record: 'no finite records'). Now it shows the ok ones and says why the
    others are left out."""
    from workbench.cli.main import main

    calls = _fake_web(monkeypatch)
    assert main(["replay", str(failing_file), "--html", str(tmp_path / "p.html")]) == 0
    assert list(calls[-1][2]) == ["realization 1", "realization 4"]
    out = capsys.readouterr().out
    assert "the page shows 2 of 5 realizations; left out: 2 failed (2-3), 1 not completed" in out


def test_replay_html_of_an_ensemble_whose_realizations_all_failed(tmp_path, monkeypatch, capsys):
    """Only the nominal run is shown when no realization can be; nothing at all is an error."""
    from workbench.cli.main import main

    scene = scene_from_dict(FALL)
    traj = run_scene(scene)
    failed = _failed(traj, "error", "RuntimeError: no", 0)
    runs = [failed, None, failed]
    with_nominal = _store_with_failures(tmp_path / "n.h5", scene, traj, runs, nominal=traj)
    calls = _fake_web(monkeypatch)
    assert main(["replay", str(with_nominal), "--html", str(tmp_path / "p.html")]) == 0
    assert list(calls[-1][2]) == ["nominal"]
    assert "left out: 2 failed (0, 2), 1 not completed" in capsys.readouterr().out
    bare = _store_with_failures(tmp_path / "b.h5", scene, traj, [failed, None])
    assert main(["replay", str(bare), "--html", str(tmp_path / "q.html")]) == 2
    err = capsys.readouterr().err
    assert "nothing to show: no nominal run" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ([], "realization 0 is not completed (completed: 1-4; --realization I)"),
        (["--realization", "2"], "realization 2 failed (error: ValueError: boom)"),
        (["--realization", "9"], "--realization 9: the file holds realizations 0 to 4"),
    ],
)
def test_replay_frames_of_a_failed_or_missing_realization(
    failing_file, tmp_path, capsys, args, match
):
    from workbench.cli.main import main

    frames = tmp_path / "f"
    assert main(["replay", str(failing_file), "--frames", str(frames), *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and match in lines[0], lines
    assert not frames.exists()


def test_replay_frames_of_a_run_stopped_early_shows_its_records(failing_file, tmp_path, capsys):
    """A non-finite state stops a run and keeps the 4 records before: those are shown (0 to
    0.075 s at 40 fps: 4 frames), with a line saying the run failed."""
    from workbench.cli.main import main

    frames = tmp_path / "f"
    args = ["--frames", str(frames), "--realization", "3", "--fps", "40", "--size", "32x24"]
    assert main(["replay", str(failing_file), *args, "-q"]) == 0
    out = capsys.readouterr().out
    assert "realization 3 failed (nonfinite: ball: position is not finite at t = 0.1 s); " in out
    assert "showing its 4 records before the failure" in out
    assert len(list(frames.glob("frame_*.png"))) == 4


#: A ball gliding along x at 1 m/s without gravity beside a resting one, recorded every 0.3 s
#: for 2.4 s: 9 records, each on show 0.3 s of the viewer's playback (records are not
#: interpolated), so screenshots every 0.1 s catch each several times.
GLIDE = {
    "settings": {"dt": 1.0 / 240.0, "duration": 2.4, "record_every": 72},
    "gravity": [0.0, 0.0, 0.0],
    "bodies": [
        {"name": "ground", "shape": {"type": "plane"}, "fixed": True},
        {"name": "glider", "shape": {"type": "sphere", "radius": 0.15}, "mass": 1.0,
         "position": [0.0, 0.0, 0.15], "linear_velocity": [1.0, 0.0, 0.0]},
        {"name": "resting", "shape": {"type": "sphere", "radius": 0.15}, "mass": 1.0,
         "position": [1.2, 0.6, 0.15]},
    ],
}  # fmt: skip

#: A pixel of the viewer's time label: the text is black, and nothing else in GLIDE's picture
#: is this dark (the ground, the sky and the balls are lighter in every channel).
LABEL_DARKNESS = 60

#: Most of the screen the label covers: 333 of 1024 x 768 pixels are this dark (0.04%).
LABEL_AREA = 0.01


def _glider_x(shot: np.ndarray) -> float:
    """Image x, pixels, of the centroid of the glider's pixels (MOVING_COLOURS[1], body 1's
    colour: blue; the sky is far less blue over red, the resting ball yellow)."""
    r, g, b = (shot[..., i].astype(int) for i in range(3))
    blue = (b > 120) & (b - r > 80) & (b > g)
    xs = np.nonzero(blue)[1]
    assert len(xs) > 50, "the glider is not in the picture"
    return float(xs.mean())


@pytest.mark.slow  # ~15 s
@pytest.mark.viewer
def test_viewer_frames_show_the_bodies_of_the_time_they_are_labelled_with(tmp_path, xvfb_display):
    """Screenshots of the viewer's screen during playback: each shows one record whole, the
    bodies and the time label of the same record (a frame drawn at once,
    ``Engine.drawn_at_once``; before, a frame showed bodies moved in part and the label of
    another record). Without reading the label: frames whose labels are the same pixels show
    the glider at the same place, frames with different labels at different places, in the
    order of the run, and at least three records are seen."""
    from PIL import ImageGrab

    path = tmp_path / "glide.h5"
    scene = scene_from_dict(GLIDE)
    write_trajectory(path, run_scene(scene), scene_json=scene_to_json(scene))
    env = cli_env()
    env["DISPLAY"] = xvfb_display
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench.cli", "replay", path, "--no-hold"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        lines = [proc.stdout.readline() for _ in range(2)]
        assert "playing (the first frame is shown)" in lines[1], (lines, proc.stderr.read())
        seen: list[tuple[bytes, float]] = []  # (label pixels, glider x) of each frame
        while proc.poll() is None:
            shot = np.asarray(ImageGrab.grab(xdisplay=xvfb_display).convert("RGB"))
            label = np.all(shot < LABEL_DARKNESS, axis=2)
            # a frame is on show (before the first one, no label; once the window is closed,
            # the screen is black)
            if 0 < label.mean() < LABEL_AREA:
                seen.append((np.packbits(label).tobytes(), _glider_x(shot)))
            time.sleep(0.1)
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    labels: dict[bytes, list[float]] = {}
    for label, x in seen:
        labels.setdefault(label, []).append(x)
    assert len(labels) >= 3, f"{len(labels)} records seen in {len(seen)} screenshots"
    for xs in labels.values():  # one label, one place of the glider
        assert max(xs) - min(xs) < 1.0, xs
    places = [xs[0] for xs in labels.values()]  # in the order they were first seen
    steps = np.diff(places)
    assert np.all(np.abs(steps) > 5.0) and (np.all(steps > 0) or np.all(steps < 0)), places
