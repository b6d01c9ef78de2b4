"""The frames of the live viewer's session (:func:`workbench.replay.viewer.replay` runs it in a
process of its own): which record is on show when, drawn whole.

Each frame sets only the bodies that moved since the frame on show (:func:`frame_poses`), and the
bodies and the time label change together (:meth:`~workbench.sim.engine.Engine.drawn_at_once`), so
no frame is torn or labelled with another record's time.
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy.spatial.transform import Rotation

from workbench.sim.engine import Engine

__all__ = ["play_frames", "frame_poses", "LOOP_PAUSE", "POLL"]

#: Pause between repetitions of a looped replay, s, so the restart is visible.
LOOP_PAUSE = 0.5

#: Longest single sleep during replay, s: how quickly a closed window is noticed (and, in
#: :func:`~workbench.replay.viewer.replay`'s own process, how quickly Ctrl-C or the end of the
#: viewer's process is).
POLL = 0.1


def play_frames(engine: Engine, job: dict, check, shown=None) -> None:
    """Show the frames of ``job`` (:func:`~workbench.replay.viewer.replay`) in the viewer of
    ``engine`` when due, again and again with ``job["loop"]``, and with ``job["hold"]`` keep the
    last until the window is closed; return when done or the window is closed. ``check()``
    raises :class:`KeyboardInterrupt` once Ctrl-C was pressed; ``shown()``, if given, is called
    once the first frame is on show.

    A frame that falls behind the clock is dropped (the next one is due already); each shown
    frame sets the bodies that moved since the frame on show, the joints and the time label at
    once.
    """
    position, q_inertial, moved = frame_poses(engine, job["position"], job["orientation"])
    joints, due, times, text_at = job["joints"], job["due"], job["time"], job["text_at"]
    every = np.arange(position.shape[1])
    text_id = -1
    while True:
        start, last = time.perf_counter(), None
        for k in range(len(due)):
            now = time.perf_counter() - start
            if k + 1 < len(due) and due[k + 1] <= now:
                continue  # behind the clock: the next frame is already due
            if not _wait(engine, start + due[k], check):
                return
            # the bodies whose pose differs from the frame on show (all of them at first)
            change = every if last is None else np.flatnonzero(moved[last] != moved[k])
            with engine.drawn_at_once():
                if joints is not None:
                    engine.set_joint_states(joints[k])
                engine.set_poses(change, position[k, change], q_inertial[k, change])
                text_id = engine.show_text(f"t = {times[k]:.3f} s", text_at, text_id)
            if last is None and shown is not None:
                shown()
                shown = None
            last = k
        if job["hold"] and not job["loop"]:
            _wait(engine, math.inf, check)  # until the window is closed
            return
        if not job["loop"] or not _wait(engine, time.perf_counter() + LOOP_PAUSE, check):
            return


def frame_poses(engine: Engine, position: np.ndarray, orientation: np.ndarray):
    """The poses :meth:`Engine.set_poses` takes for the scene's bodies at each frame, and which
    bodies moved.

    Parameters
    ----------
    engine : Engine
        The built scene (its bodies' inertial frames, ``engine.frames``).
    position, orientation : ndarray, shape (n_frames, n_rows, 3) and (n_frames, n_rows, 4)
        Recorded centres of mass, m, and body-frame quaternions (x, y, z, w); rows past the
        scene's bodies (tracked links) are left out (links follow their joints).

    Returns
    -------
    position, q_inertial : ndarray, shape (n_frames, n_bodies, 3) and (n_frames, n_bodies, 4)
        Centres of mass and inertial-frame quaternions.
    pose_id : ndarray, shape (n_frames, n_bodies), int
        For each body, a number that changes exactly when its recorded pose does from one
        frame to another (frames a body did not move in share it): a frame sets only the
        bodies whose number differs from the frame on show.
    """
    n = len(engine.frames)
    position = np.asarray(position, dtype=float)[:, :n]
    orientation = np.asarray(orientation, dtype=float)[:, :n]
    nf = position.shape[0]
    principal = np.array([f.principal for f in engine.frames], dtype=float).reshape(n, 4)
    # q_inertial = q_body * q_principal; most bodies (spheres, fixed bodies) are not turned, and
    # composing only the others keeps this 0.1 s instead of 1 s for 3875 balls x 181 frames
    q_inertial = orientation / np.linalg.norm(orientation, axis=2, keepdims=True)
    turned = np.flatnonzero(np.any(principal != [0.0, 0.0, 0.0, 1.0], axis=1))
    if len(turned):
        composed = Rotation.from_quat(orientation[:, turned].reshape(-1, 4)) * Rotation.from_quat(
            np.tile(principal[turned], (nf, 1))
        )
        q_inertial[:, turned] = composed.as_quat().reshape(nf, len(turned), 4)
    pose = np.concatenate([position, orientation], axis=2)
    changed = np.any(pose[1:] != pose[:-1], axis=2)  # (nf - 1, n)
    pose_id = np.concatenate([np.zeros((1, n), dtype=np.int64), np.cumsum(changed, axis=0)])
    return position, q_inertial, pose_id


def _wait(engine: Engine, until: float, check) -> bool:
    """Sleep until ``time.perf_counter() >= until``, in short naps, calling ``check()`` (which
    raises on Ctrl-C) before each; False once the viewer window has been closed."""
    while True:
        check()
        if not engine.is_connected():
            return False
        left = until - time.perf_counter()
        if left <= 0:
            return True
        time.sleep(min(left, POLL))
