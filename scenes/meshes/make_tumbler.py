"""Regenerate ``tumbler.obj``: the convex hull of 10 fixed points, an irregular solid whose
inertia tensor has large off-diagonal terms in its file frame and whose centre of mass is off
the origin. Run: ``python scenes/meshes/make_tumbler.py``.
"""

from pathlib import Path

import numpy as np
import trimesh

POINTS = np.array(
    [
        [0.30, 0.05, 0.02],
        [-0.20, 0.10, -0.05],
        [0.05, 0.22, 0.08],
        [0.10, -0.15, 0.12],
        [-0.12, -0.10, -0.10],
        [0.18, 0.12, -0.12],
        [-0.05, 0.02, 0.20],
        [0.02, -0.05, -0.18],
        [-0.25, -0.05, 0.06],
        [0.12, 0.18, 0.15],
    ]
) + np.array([0.05, 0.02, -0.03])

if __name__ == "__main__":
    hull = trimesh.convex.convex_hull(POINTS)
    out = Path(__file__).with_name("tumbler.obj")
    hull.export(out)
    hull.density = 1.0
    print(
        f"wrote {out}: volume {hull.volume:.6g} m^3, com {hull.center_mass}, "
        f"inertia/density\n{hull.moment_inertia}"
    )
