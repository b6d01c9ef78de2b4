"""Figures and numbers of docs/reverse.md (backward steps, Twigg & James 2008).

Regenerate (about ten seconds)::

    python docs/reverse_figures.py

It steps the shipped scene ``reverse_landing`` backward 0.5 s with its hints file, replays the
earliest state forward in PyBullet, and writes docs/figures/reverse/landing.png (the reverse run
and the PyBullet replay, body by body, and the kinetic energy) and
docs/figures/reverse/landing_frames.png (four headless frames of the replay of the reverse file).
It prints the numbers the page quotes. Deterministic: reruns print the same numbers.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
from figure_setup import REPO, plt  # noqa: E402  (the repository on sys.path, Agg)

from reverse.goals.hints import load_hints  # noqa: E402
from reverse.runs.run import run_reverse  # noqa: E402
from workbench.replay.viewer import render_frames  # noqa: E402
from workbench.scene.catalog import find_scene  # noqa: E402
from workbench.scene.loader import load_scene  # noqa: E402
from workbench.sim.engine import Engine  # noqa: E402

OUT = REPO / "docs" / "figures" / "reverse"
DURATION = 0.5  # s stepped backward
SETTLE = 0.3  # s the PyBullet replay runs on after the reverse run's span
G = 9.81


def replay_in_pybullet(scene, traj):
    """The reverse run's earliest state played forward in PyBullet: times and positions."""
    dt = scene.settings.dt
    n = int(round((traj.time[-1] + SETTLE) / dt))
    pos = []
    with Engine(scene) as eng:
        eng.set_state(traj.state(0))
        pos.append(eng.state().position.copy())
        for _ in range(n):
            eng.step(0.0)
            pos.append(eng.state().position.copy())
    return dt * np.arange(n + 1), np.array(pos)


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    path = find_scene("reverse_landing")
    scene = load_scene(path)
    hints = load_hints(path.with_name("reverse_landing.hints.yaml"), scene.body_names)
    result = run_reverse(scene, duration=DURATION, hints=hints)
    traj = result.trajectory
    t_pb, pos_pb = replay_in_pybullet(scene, traj)
    names = scene.body_names
    final = traj.position[-1]

    panels = (("block", 0, "x"), ("ball", 2, "z"), ("roller", 1, "y"))
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.4), constrained_layout=True)
    for ax, (body, axis, label) in zip(axes, panels, strict=False):
        j = names.index(body)
        ax.plot(traj.time, traj.position[:, j, axis], lw=2, label="reverse run (ours)")
        ax.plot(t_pb, pos_pb[:, j, axis], "--", lw=1.5, label="its start replayed in PyBullet")
        ax.axhline(final[j, axis], color="0.6", lw=0.8)
        ax.set_xlabel("forward time, s")
        ax.set_ylabel(f"{body} {label}, m")
        ax.set_title(body)
    axes[0].legend(fontsize=8)
    ke = result.trajectory.diagnostics["kinetic_energy"]
    axes[3].plot(traj.time, ke)
    axes[3].set_xlabel("forward time, s")
    axes[3].set_ylabel("kinetic energy, J")
    axes[3].set_title("all bodies")
    fig.savefig(OUT / "landing.png", dpi=110)
    plt.close(fig)

    print("distance of the PyBullet replay's end to the scene's final position:")
    for body in ("block", "ball", "roller"):
        j = names.index(body)
        print(f"  {body:<7} {np.linalg.norm(pos_pb[-1, j] - final[j]):.2e} m")
    j = names.index("block")
    gained = 0.5 * scene.body("block").mass * np.sum(traj.linear_velocity[0, j] ** 2)
    path_length = np.sum(np.linalg.norm(np.diff(pos_pb[:, j, :2], axis=0), axis=1))
    mu = scene.body("block").material.friction * scene.body("ground").material.friction
    dissipated = mu * scene.body("block").mass * G * path_length
    print(
        f"block: energy gained backward {gained:.5f} J, friction work in the replay "
        f"{dissipated:.5f} J ({100 * (gained - dissipated) / dissipated:+.2f}%)"
    )
    print(f"block: earliest speed {np.linalg.norm(traj.linear_velocity[0, j]):.4f} m/s")
    t = result.timing
    print(f"wall time {sum(t.values()):.2f} s: " + ", ".join(f"{k} {v:.2f}" for k, v in t.items()))

    frame_strip(scene, traj, OUT / "landing_frames.png")
    print(f"figures in {OUT.relative_to(REPO)}")
    return 0


def frame_strip(scene, traj, path: Path, n: int = 4) -> None:
    """``n`` frames of ``traj`` evenly spread over the run, side by side (the viewer's headless
    renderer), written to ``path``."""
    with tempfile.TemporaryDirectory() as tmp:
        frames = render_frames(scene, traj, Path(tmp), width=480, height=360, fps=8)
        picks = [frames[k] for k in np.linspace(0, len(frames) - 1, n).round().astype(int)]
        fig, axes = plt.subplots(1, n, figsize=(15, 3.0), constrained_layout=True)
        for ax, frame, t in zip(axes, picks, np.linspace(0, DURATION, n), strict=True):
            ax.imshow(plt.imread(frame))
            ax.set_axis_off()
            ax.set_title(f"t = {t:.2f} s")
        fig.savefig(path, dpi=90)
        plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
