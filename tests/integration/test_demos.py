"""The demos of Twigg & James 2008 §5 through the CLI, small: spelling boxes (Fig. 11) and the
CRASH collision scenario (Fig. 12). Each is run with ``workbench reverse``, its file checked
against the scene it came from, and rendered headless with ``workbench replay --frames`` (no X
display needed: PyBullet's tiny renderer in a DIRECT client)."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from PIL import Image

from workbench.cli.main import main
from workbench.replay.viewer import render_frames
from workbench.scene.loader import load_scene
from workbench.sim.engine import Engine
from workbench.sim.state import Trajectory
from workbench.store import read_trajectory

SCENES = Path(__file__).resolve().parents[2] / "scenes"
G = 9.81

#: Frame size for the rendered checks, pixels: small keeps the tests fast, and a box of the
#: small demos still covers many pixels.
WIDTH, HEIGHT = 160, 120
SIZE = f"{WIDTH}x{HEIGHT}"

#: The state a reverse run ends at (or a stitched run passes through) is the scene's state read
#: back from PyBullet by the same code path, so it matches to round-off; 1e-12 m (or m/s) is
#: many orders below any motion a viewer shows and above float64 round-off of O(1) values.
STATE_ATOL = 1e-12

#: Two renders of the same poses with the same camera: the tiny renderer is deterministic, so
#: they should be identical; we allow 0.1 % of the pixels to differ (edge pixels that a
#: round-off change of a pose could flip) and no more.
SAME_IMAGE_FRACTION = 1e-3

#: "Away from the final configuration": every box of the small spelling run is at least 5 cm
#: (half a box) from its final place at the earliest state; the hints make each slide for at
#: least 0.3 s backward, 0.5 μ g t² ≈ 9 cm at μ = 0.2 even before its slide speed.
AWAY = 0.05


def _scene_state(path, overrides=None):
    scene = load_scene(path, overrides or {})
    with Engine(scene) as eng:
        return scene, eng.state()


def _frames(directory) -> list[np.ndarray]:
    files = sorted(Path(directory).glob("frame_*.png"))
    return [np.asarray(Image.open(f).convert("RGB")) for f in files]


def _differ_fraction(a, b) -> float:
    return float(np.mean(np.any(a != b, axis=2)))


def _render_with_state(scene, traj: Trajectory, i: int, state, out_dir) -> np.ndarray:
    """Render record ``i`` of ``traj`` replaced by ``state``, with the camera that
    ``workbench replay`` uses for the whole of ``traj`` (it frames every record)."""
    pos, orn = traj.position.copy(), traj.orientation.copy()
    pos[i], orn[i] = state.position, state.orientation
    only = Trajectory(
        time=traj.time[[i]],
        body_names=traj.body_names,
        position=pos[[i]],
        orientation=orn[[i]],
        linear_velocity=traj.linear_velocity[[i]],
        angular_velocity=traj.angular_velocity[[i]],
        params=traj.params,
    )
    # the camera depends on every recorded position: frame them all, render only record i
    framing = Trajectory(
        time=np.concatenate([traj.time, traj.time[[i]]]),
        body_names=traj.body_names,
        position=np.concatenate([pos, only.position]),
        orientation=np.concatenate([orn, only.orientation]),
        linear_velocity=np.concatenate([traj.linear_velocity, only.linear_velocity]),
        angular_velocity=np.concatenate([traj.angular_velocity, only.angular_velocity]),
        params=traj.params,
    )
    # reverse=True plays the appended record first; every=len renders only that one
    (path,) = render_frames(
        scene,
        framing,
        out_dir,
        reverse=True,
        every=framing.n_times,
        width=WIDTH,
        height=HEIGHT,
    )
    return np.asarray(Image.open(path).convert("RGB"))


# ------------------------------------------------------------------------------ spelling boxes
SPELLING = SCENES / "spelling_boxes.py"
SPELLING_SET = {"text": "t", "leave_by": 0.2}  # 12 boxes, all leave within 0.2 s backward
SPELLING_BACK = 0.5


@pytest.fixture(scope="module")
def spelling_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spelling")
    out = tmp / "t.h5"
    argv = ["reverse", str(SPELLING), "--hints", "script", "--duration", str(SPELLING_BACK)]
    for k, v in SPELLING_SET.items():
        argv += ["--set", f"{k}={v}"]
    argv += ["--restitution-blend", "1", "--contacts", "bounce-apart"]  # passes the audit
    assert main([*argv, "-q", "-o", str(out)]) == 0
    frames = tmp / "frames"
    assert main(["replay", str(out), "--frames", str(frames), "--fps", "10", "--size", SIZE]) == 0
    return out, frames, tmp


def test_spelling_boxes_run_starts_away_and_ends_at_the_scene(spelling_run):
    out, _, _ = spelling_run
    traj = read_trajectory(out)
    scene, final = _scene_state(SPELLING, SPELLING_SET)
    assert traj.status == "ok"
    assert traj.n_bodies == 13  # the ground and the 12 lit cells of 't'
    assert np.all(traj.diagnostics["lcp_failed"] == 0)
    assert traj.time[-1] == pytest.approx(SPELLING_BACK)
    with h5py.File(out, "r") as f:
        assert f.attrs["time_reversed"] == 1
    # ends at the scene's (final) state
    for name in ("position", "orientation", "linear_velocity", "angular_velocity"):
        np.testing.assert_allclose(
            getattr(traj, name)[-1], getattr(final, name), atol=STATE_ATOL, err_msg=name
        )
    # starts away from it: every box has left its place
    boxes = [j for j, n in enumerate(traj.body_names) if n.startswith("box")]
    moved = np.linalg.norm(traj.position[0, boxes] - final.position[boxes], axis=1)
    assert moved.min() > AWAY, moved
    assert traj.diagnostics["kinetic_energy"][0] > 0


def test_spelling_boxes_frames_move_and_end_on_the_scene(spelling_run):
    out, frames_dir, tmp = spelling_run
    frames = _frames(frames_dir)
    assert len(frames) == int(round(SPELLING_BACK * 10)) + 1
    for k in range(len(frames) - 1):
        assert _differ_fraction(frames[k], frames[k + 1]) > 0, f"frames {k} and {k + 1} equal"
    traj = read_trajectory(out)
    scene, final = _scene_state(SPELLING, SPELLING_SET)
    own = _render_with_state(scene, traj, traj.n_times - 1, final, tmp / "own")
    assert _differ_fraction(frames[-1], own) <= SAME_IMAGE_FRACTION
    assert _differ_fraction(frames[0], own) > 0.01  # the first frame is visibly elsewhere


@pytest.mark.slow  # 38 boxes, 2.5 s back: about 6 s
def test_spelling_boxes_with_the_scenes_own_settings_pass_the_audit(tmp_path):
    """The demo command, no flags: the settings the scene carries (its hints, the restitution
    blend, bounce-apart, separate and cap-bounces) make the whole "t→−t" a plausible past."""
    import json

    out = tmp_path / "boxes.h5"
    assert main(["reverse", str(SPELLING), "--duration", "2.5", "-q", "-o", str(out)]) == 0
    traj = read_trajectory(out)
    assert traj.status == "ok"
    with h5py.File(out, "r") as f:
        audit = json.loads(f.attrs["audit"])
    assert audit["passed"]
    assert audit["peak_speed_m_s"] < 3.0  # the slides' 0.4 m/s after a bounce, not 8.6 m/s
    assert audit["peak_spin_rad_s"] < 50.0


# ------------------------------------------------------------------------------------- CRASH
CRASH = SCENES / "crash.py"
CRASH_SET = {"text": "-"}  # 5 lit cells: 5 pairs of boxes
CRASH_BACK, CRASH_FORWARD = 0.2, 0.3  # s; every pair collides within gap/u ≤ 0.04 s of the frame
CRASH_FPS = 10


@pytest.fixture(scope="module")
def crash_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("crash")
    out = tmp / "crash.h5"
    argv = ["reverse", str(CRASH), "--duration", str(CRASH_BACK)]
    argv += ["--then-forward", str(CRASH_FORWARD), "--set", "text='-'", "-q", "-o", str(out)]
    assert main(argv) == 0
    frames = tmp / "frames"
    argv = ["replay", str(out), "--frames", str(frames), "--fps", str(CRASH_FPS), "--size", SIZE]
    assert main(argv) == 0
    return out, frames, tmp


def test_crash_stitched_file_is_continuous_through_the_frame(crash_run):
    out, _, _ = crash_run
    traj = read_trajectory(out)
    scene, frame = _scene_state(CRASH, CRASH_SET)
    dt = scene.settings.dt
    assert traj.status == "ok"
    with h5py.File(out, "r") as f:
        forward_from = float(f.attrs["forward_from"])
    assert forward_from == pytest.approx(CRASH_BACK)
    # time is continuous: one step of dt between all records, across the junction too
    steps = np.diff(traj.time)
    np.testing.assert_allclose(steps, dt, rtol=1e-9)
    assert traj.time[-1] == pytest.approx(CRASH_BACK + CRASH_FORWARD)
    # the junction record is the scene's state
    (j,) = np.flatnonzero(np.isclose(traj.time, forward_from, atol=dt / 2))
    for name in ("position", "orientation", "linear_velocity", "angular_velocity"):
        np.testing.assert_allclose(
            getattr(traj, name)[j], getattr(frame, name), atol=STATE_ATOL, err_msg=name
        )
    assert np.all(traj.diagnostics["lcp_failed"][: j + 1] == 0)


def test_crash_boxes_fly_in_collide_and_fall(crash_run):
    """Backward from the frame each pair collides once (Eq. 7 of Twigg & James: the separation
    speed u becomes an approach speed u/α); before that every box flies ballistically, so its
    earliest velocity is known in closed form; forward, PyBullet lets the word fall."""
    out, _, _ = crash_run
    traj = read_trajectory(out)
    scene, frame = _scene_state(CRASH, CRASH_SET)
    j = int(np.argmin(np.abs(traj.time - CRASH_BACK)))
    boxes = [k for k, n in enumerate(traj.body_names) if n != "ground"]
    e = scene.bodies[boxes[0]].material.restitution
    alpha = e * e  # PyBullet's product rule, box against box
    v_frame = frame.linear_velocity[boxes]
    v0 = traj.linear_velocity[0, boxes]
    # fly in: at the frame the pair flies apart along ±y; at the start each box flew towards
    # the plane y = 0 at u/(2α), where u/2 = |v_y| at the frame
    y0, y_frame = traj.position[0, boxes, 1], frame.position[boxes, 1]
    np.testing.assert_allclose(v0[:, 1], -v_frame[:, 1] / alpha, rtol=1e-9)
    assert np.all(np.sign(v0[:, 1]) == -np.sign(y0))  # moving towards the plane
    assert np.all(np.abs(y0) > np.abs(y_frame) + 0.1)  # from well outside it
    # ballistic in z (semi-implicit Euler: exactly g dt per step) and in x
    n_back = j
    np.testing.assert_allclose(v0[:, 2], v_frame[:, 2] + G * scene.settings.dt * n_back, rtol=1e-9)
    np.testing.assert_allclose(v0[:, 0], v_frame[:, 0], atol=1e-12)
    # the backward part has contacts (the pair collisions) and no LCP failures
    assert traj.diagnostics["contact_count"][: j + 1].sum() > 0
    # then fall: forward, PyBullet's boxes end lower than at the frame, and moving down
    assert np.all(traj.position[-1, boxes, 2] < frame.position[boxes, 2])
    assert np.all(traj.linear_velocity[-1, boxes, 2] < 0)


def test_crash_backward_part_is_a_pybullet_motion(crash_run):
    """PyBullet, started from the earliest state, flies the boxes in, collides the pairs and
    arrives at the frame: the backward part is a forward motion PyBullet agrees with."""
    out, _, _ = crash_run
    traj = read_trajectory(out)
    scene, frame = _scene_state(CRASH, CRASH_SET)
    dt = scene.settings.dt
    j = int(np.argmin(np.abs(traj.time - CRASH_BACK)))
    with Engine(scene) as eng:
        eng.set_state(traj.state(0))
        for k in range(j):
            eng.step(k * dt)
        got = eng.state()
    boxes = [k for k, n in enumerate(traj.body_names) if n != "ground"]
    err = np.linalg.norm(got.position[boxes] - frame.position[boxes], axis=1)
    # Bound: with PyBullet's default (speculative) contacts a pair's impact can be processed up
    # to one step apart from the stepper's; for that step a box moves at its approach speed
    # instead of its separation speed, |v_y| (1/α − 1) dt apart (10.5 mm for u = 0.5 m/s).
    e = scene.bodies[boxes[0]].material.restitution
    v_sep = np.abs(frame.linear_velocity[boxes, 1])
    bound = v_sep * (1 / e**2 - 1) * dt
    print(f"PyBullet from the earliest state: max position error at the frame {err.max():.3g} m")
    assert np.all(err <= bound)


def test_crash_frames_move_and_pass_through_the_scene(crash_run):
    out, frames_dir, tmp = crash_run
    frames = _frames(frames_dir)
    assert len(frames) == int(round((CRASH_BACK + CRASH_FORWARD) * CRASH_FPS)) + 1
    for k in range(len(frames) - 1):
        assert _differ_fraction(frames[k], frames[k + 1]) > 0, f"frames {k} and {k + 1} equal"
    traj = read_trajectory(out)
    scene, frame = _scene_state(CRASH, CRASH_SET)
    j = int(np.argmin(np.abs(traj.time - CRASH_BACK)))
    own = _render_with_state(scene, traj, j, frame, tmp / "own")
    k = int(round(CRASH_BACK * CRASH_FPS))  # the frame shown at the junction's time
    assert _differ_fraction(frames[k], own) <= SAME_IMAGE_FRACTION
    assert _differ_fraction(frames[0], own) > 0.01
