"""Contact sheets and numbers of the spelling-boxes and CRASH demos (Twigg & James 2008 §5,
Figs. 11 and 12; docs/reverse.md).

Regenerate (about half a minute)::

    python docs/demo_figures.py

It runs the two demos' recommended commands (the module docstrings of scenes/spelling_boxes.py
and scenes/crash.py) through the CLI into a temporary folder, renders a few frames of each
headless (PyBullet's tiny renderer, a fixed camera chosen per demo so the text reads) and writes
docs/figures/reverse/spelling_boxes_frames.png and docs/figures/reverse/crash_frames.png. It
prints the numbers the page quotes. Deterministic: reruns print the same numbers.

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, SIGGRAPH 2008.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from workbench.cli.main import main as workbench  # noqa: E402
from workbench.scene.loader import load_scene  # noqa: E402
from workbench.sim.engine import Engine, mass_overrides_from_params  # noqa: E402
from workbench.sim.state import State  # noqa: E402
from workbench.store import TrajectoryStore, read_trajectory  # noqa: E402

__all__ = ["main", "render", "run_numbers"]

OUT = REPO / "docs" / "figures" / "reverse"
SCENES = REPO / "scenes"

#: The recommended commands (module docstrings of the two scene scripts), without ``-o``.
SPELLING_ARGS = [
    "reverse",
    str(SCENES / "spelling_boxes.py"),
    "--hints",
    "script",
    "--duration",
    "2.5",
    "--restitution-blend",
    "1",
    "--angular-damping",
    "8",
    "--linear-damping",
    "0.5",
    "-q",
]
CRASH_BACK, CRASH_FORWARD = 0.6, 2.0  # s before and after the intermediate frame
CRASH_ARGS = [
    "reverse",
    str(SCENES / "crash.py"),
    "--duration",
    str(CRASH_BACK),
    "--then-forward",
    str(CRASH_FORWARD),
    "-q",
]

#: Frame size of each panel, pixels.
WIDTH, HEIGHT = 480, 360

#: Cameras (target m, distance m, yaw deg, pitch deg; PyBullet's convention, z up): spelling
#: boxes seen from above and slightly in front so "t→−t" reads left to right; CRASH seen from
#: the front (−y), a little from below the word, so the text reads and the depth of the two
#: volleys shows.
SPELLING_CAMERA = ((0.0, 0.0, 0.0), 3.2, 0.0, -65.0)
CRASH_CAMERA = ((0.0, 0.0, 1.4), 5.5, 20.0, -12.0)

#: Times of the panels, s (forward time, as replayed).
SPELLING_TIMES = (0.0, 0.9, 1.5, 1.9, 2.2, 2.5)
CRASH_TIMES = (0.0, 0.3, 0.5, 0.6, 0.9, 2.6)

#: The two contact sheets, by scene script: panel times, camera, panel labels and title.
SHEETS = {
    "spelling_boxes": (
        SPELLING_TIMES,
        SPELLING_CAMERA,
        (" (earliest)", "", "", "", "", " (final: the scene)"),
        "Spelling boxes (Twigg & James 2008 Fig. 11): 2.5 s stepped backward from the final "
        "state, replayed forward",
    ),
    "crash": (
        CRASH_TIMES,
        CRASH_CAMERA,
        (" (earliest)", "", "", " (the frame: the scene)", " (PyBullet)", " (PyBullet)"),
        f"CRASH (Twigg & James 2008 Fig. 12): {CRASH_BACK:g} s backward from the frame, then "
        f"{CRASH_FORWARD:g} s forward in PyBullet",
    ),
}


def render(scene, traj, times, camera) -> list[np.ndarray]:
    """RGB images (HEIGHT, WIDTH, 3) of the records of ``traj`` nearest ``times``, headless.

    The bodies are placed, never stepped (as ``workbench replay --frames``), and seen from the
    fixed ``camera`` = (target, distance, yaw, pitch).
    """
    images = []
    with Engine(
        scene, gui=False, visual=True, mass_overrides=mass_overrides_from_params(traj.params)
    ) as eng:
        view = eng.camera(*camera, fov=45.0, aspect=WIDTH / HEIGHT)
        for t in times:
            i = int(np.argmin(np.abs(traj.time - t)))
            zeros = np.zeros_like(traj.position[i])
            eng.set_state(State(traj.position[i], traj.orientation[i], zeros, zeros))
            images.append(eng.render(view, WIDTH, HEIGHT))
    return images


def run_numbers(traj) -> dict[str, float]:
    """Peak kinetic energy (J) and, at the earliest state, kinetic energy (J), largest speed
    (m/s) and largest angular speed (rad/s) of the moving bodies."""
    moving = np.array([f"{n}/mass" in traj.params for n in traj.body_names])
    speed = np.linalg.norm(traj.linear_velocity[:, moving], axis=2)
    spin = np.linalg.norm(traj.angular_velocity[:, moving], axis=2)
    ke = traj.diagnostics["kinetic_energy"]
    return {
        "peak_energy": float(ke.max()),
        "energy_0": float(ke[0]),
        "speed_0": float(speed[0].max()),
        "spin_0": float(spin[0].max()),
        "speed_max": float(speed.max()),
        "spin_max": float(spin.max()),
    }


def contact_sheet(images, times, labels, path, title) -> None:
    """Two rows of rendered frames, each titled with its time and label, written to ``path``."""
    n = len(images)
    fig, axes = plt.subplots(2, n // 2, figsize=(4.2 * (n // 2), 6.6), constrained_layout=True)
    for ax, img, t, label in zip(axes.ravel(), images, times, labels, strict=True):
        ax.imshow(img)
        ax.set_title(f"t = {t:.2f} s{label}", fontsize=10)
        ax.set_axis_off()
    fig.suptitle(title, fontsize=11)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _scene_sheet(name: str, traj) -> Path:
    """Render ``traj`` of ``scenes/{name}.py`` as :data:`SHEETS` says; write and return
    docs/figures/reverse/{name}_frames.png."""
    times, camera, labels, title = SHEETS[name]
    images = render(load_scene(SCENES / f"{name}.py"), traj, times, camera)
    path = OUT / f"{name}_frames.png"
    contact_sheet(images, times, labels, path, title)
    return path


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        spelling_h5 = Path(tmp) / "spelling_boxes.h5"
        crash_h5 = Path(tmp) / "crash.h5"
        assert workbench([*SPELLING_ARGS, "-o", str(spelling_h5)]) == 0
        assert workbench([*CRASH_ARGS, "-o", str(crash_h5)]) == 0
        spelling = read_trajectory(spelling_h5)
        crash = read_trajectory(crash_h5)
        with TrajectoryStore.open(crash_h5) as store:
            forward_from = float(store.attrs["forward_from"])

    nums = run_numbers(spelling)
    print(
        f"spelling boxes: {spelling.n_bodies - 1} boxes, {spelling.time[-1]:g} s back, status "
        f"{spelling.status}; peak kinetic energy {nums['peak_energy']:.4g} J; earliest state: "
        f"{nums['energy_0']:.4g} J, max speed {nums['speed_0']:.3g} m/s, max spin "
        f"{nums['spin_0']:.3g} rad/s; whole run: max speed {nums['speed_max']:.3g} m/s, max "
        f"spin {nums['spin_max']:.3g} rad/s; LCP failures "
        f"{int(spelling.diagnostics['lcp_failed'].sum())}"
    )
    spelling_png = _scene_sheet("spelling_boxes", spelling)

    j = int(np.argmin(np.abs(crash.time - forward_from)))
    back = crash.truncated(j + 1)
    nums = run_numbers(back)
    moving = np.array([f"{n}/mass" in crash.params for n in crash.body_names])
    vy = np.abs(crash.linear_velocity[0, moving, 1])
    y0 = np.abs(crash.position[0, moving, 1])
    z0 = crash.position[0, moving, 2]
    ke = crash.diagnostics["kinetic_energy"]
    print(
        f"CRASH: {crash.n_bodies - 1} boxes, frame at t = {forward_from:g} s, status "
        f"{crash.status}; backward part: peak kinetic energy {nums['peak_energy']:.4g} J, max "
        f"spin {nums['spin_max']:.3g} rad/s; earliest state: heights {z0.min():.3f}–"
        f"{z0.max():.3f} m, |y| {y0.min():.2f}–{y0.max():.2f} m, |v_y| {vy.min():.2f}–"
        f"{vy.max():.2f} m/s, max speed {nums['speed_0']:.3g} m/s; kinetic energy at the frame "
        f"{ke[j]:.4g} J, at the end {ke[-1]:.3g} J; contacts in the backward part "
        f"{int(crash.diagnostics['contact_count'][: j + 1].sum())} (pair collisions only)"
    )
    crash_png = _scene_sheet("crash", crash)
    print(f"wrote {spelling_png} and {crash_png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
