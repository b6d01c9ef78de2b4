"""Contact sheet of the spelling-balls demo (Twigg & James 2008 §5, Fig. 1; docs/reverse.md).

    python benchmarks/spelling.py --rolling -o spelling.h5   # the full scene, 3875 balls (3-5 min)
    python docs/spelling_figures.py spelling.h5

Renders six records of the reverse run headless (PyBullet's tiny renderer, a fixed camera that
frames the text; the bodies are placed, never stepped) and writes
docs/figures/reverse/spelling_balls_frames.png. Without a file it runs a small version first
("RIGID", 3 × 3 balls a bin, the same controls and materials) so the figure can be regenerated
in a minute.
"""

from __future__ import annotations

import json
import runpy
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "docs"))

from demo_figures import contact_sheet, render  # noqa: E402

from workbench.scene.loader import load_scene  # noqa: E402
from workbench.store import TrajectoryStore  # noqa: E402

OUT = REPO / "docs" / "figures" / "reverse"
SCENE = REPO / "scenes" / "spelling_balls.py"
#: The scene's parameters of the plausible run (rolling without slip: docs/reverse.md).
ROLLING = runpy.run_path(str(SCENE))["ROLLING"]
#: Panels: fractions of the run's duration (forward time, as replayed).
FRACTIONS = (0.0, 0.3, 0.5, 0.7, 0.85, 1.0)


def _camera(scene):
    """Above and in front of the text, far enough back to frame all of it."""
    xy = np.array([b.position[:2] for b in scene.bodies if b.name.startswith("ball")])
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    width = float(np.max(hi - lo))
    centre = 0.5 * (lo + hi)
    return ((float(centre[0]), float(centre[1]), 0.0), 0.95 * width + 1.0, 0.0, -55.0)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with tempfile.TemporaryDirectory() as tmp:
        if argv:
            path = Path(argv[0])
        else:
            from workbench.cli.main import main as workbench

            path = Path(tmp) / "rigid.h5"
            code = workbench(
                ["reverse", str(SCENE), "--set", "text=RIGID", "--set", "per_side=3", "--hints",
                 "script", "--duration", "3", "--restitution-blend", "0.2", "--angular-damping",
                 "2", "--linear-damping", "0.3", "--slip-damping", "inf",
                 *[a for k, v in ROLLING.items() for a in ("--set", f"{k}={v}")],
                 "-q", "-o", str(path)]
            )  # fmt: skip
            assert code == 0
        with TrajectoryStore.open(path) as store:
            traj = store.read(0)
            saved = json.loads(store.attrs["scene_json"])
            # the scene's parameters: under "scene" in the stored JSON (top level in older files)
            params = saved.get("parameters") or saved.get("scene", {}).get("parameters", {})
    keep = {k: v for k, v in params.items() if k in ("text", "per_side")}
    scene = load_scene(SCENE, keep)
    times = tuple(float(f * traj.time[-1]) for f in FRACTIONS)
    images = render(scene, traj, times, _camera(scene))
    n_balls = sum(n.startswith("ball") for n in traj.body_names)
    labels = [" (earliest)", "", "", "", "", " (final: the scene)"]
    OUT.mkdir(parents=True, exist_ok=True)
    contact_sheet(
        images,
        times,
        labels,
        OUT / "spelling_balls_frames.png",
        f"Spelling balls (Twigg & James 2008 Fig. 1): {n_balls} balls, {traj.time[-1]:g} s "
        "stepped backward from rest in the bins, replayed forward",
    )
    print(f"wrote {OUT / 'spelling_balls_frames.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
