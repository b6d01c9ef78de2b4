"""Scene parts shared by the shipped scripts (:mod:`workbench.scene.parts`)."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.scene.parts import bin_walls


def test_bin_walls_enclose_the_square_inside_from_bottom_to_top():
    walls = bin_walls(0.3, 0.05, -0.2, 0.4, {"friction": 0.0})
    assert [w["name"] for w in walls] == ["wall0", "wall1", "wall2", "wall3"]
    for w in walls:
        assert w["fixed"] and w["material"] == {"friction": 0.0}
        centre = np.array(w["position"])
        ext = np.array(w["shape"]["half_extents"])
        lo, hi = centre - ext, centre + ext
        assert lo[2] == pytest.approx(-0.2) and hi[2] == pytest.approx(0.4)
        # each wall's inner face touches the inside square (|x| or |y| = 0.3) and spans it
        axis = int(np.argmin(ext))
        assert min(abs(lo[axis]), abs(hi[axis])) == pytest.approx(0.3)
        other = 1 - axis
        assert lo[other] <= -0.3 and hi[other] >= 0.3
    assert "material" not in bin_walls(0.3, 0.05, 0.0, 0.4)[0]
