"""A face → edge drop of the Markov model in the backward step (known contacts, no PyBullet):
the LCP already keeps the kept edge in touch — the block pivots about it exactly — and the next
step's configuration lifts the edge only by the second-order gap of the linear position update
(docs/reverse.md, "Energy-consistent pasts", cause 2)."""

from __future__ import annotations

import numpy as np

from reverse.step.dynamics import Goals
from reverse.step.stepper import Stepper, StepSettings, backward_configuration
from tests.unit.reverse.test_stepper import box_corners, box_rigid, ground_contacts, state1

HALF = (0.1, 0.075, 0.05)  # the markov_block scene's block, m
DT = 1.0 / 240.0  # the scene's step, s
SPEED = 0.15  # normal goal of the separating corners, m/s (a drawn landing speed)


def _quat_to_matrix(q):
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def test_face_to_edge_drop_pivots_about_the_kept_edge():
    rigid = box_rigid(mass=1.0, half=HALF)
    centre = np.array([0.0, 0.0, HALF[2]])
    points = box_corners(centre, HALF)  # the four corners of the bottom face, z = 0
    cs = ground_contacts(points, mu=0.5, alpha=0.5)
    sep = points[:, 0] > 0  # the +x edge separates (the drop's goals), the −x edge stays

    def goals(contacts, x, u):
        k = len(contacts)
        return Goals(np.where(sep, SPEED, 0.0), np.zeros((k, 3)), np.zeros((k, 3))), None, None

    st = Stepper(rigid, lambda p, q: cs, StepSettings(DT))
    back, rep = st.backward(state1(centre), goals)
    v, w = back.linear_velocity[0], back.angular_velocity[0]
    point_velocity = v + np.cross(w, points - centre)  # pre-step velocity of each corner
    # the separating corners approached at their goal (Eq. 8 met with equality: they carry the
    # impulse); the kept ones had no normal velocity: rounding of an O(1) LCP, 1e-12 m/s
    np.testing.assert_allclose(point_velocity[sep, 2], -SPEED, rtol=1e-9)
    np.testing.assert_allclose(point_velocity[~sep, 2], 0.0, atol=1e-12)
    assert set(rep.branches.tolist()) == {"resting"}
    # a rotation about the kept edge (the y axis through x = −hx): no spin about x or z, and
    # the centre moves as ω × (centre − edge)
    # (the +x corners, 2 hx from the edge, approached at SPEED: |ω| = SPEED / 2hx)
    np.testing.assert_allclose(abs(w[1]), SPEED / (2 * HALF[0]), rtol=1e-9)
    np.testing.assert_allclose(w[[0, 2]], 0.0, atol=1e-12)
    edge = np.array([-HALF[0], 0.0, 0.0])
    np.testing.assert_allclose(v, np.cross(w, centre - edge), atol=1e-12)
    # the next step's configuration: the kept corners are lifted only by the second-order gap
    # of the linear update of the centre, h²|ω|²|r|/2 with r the corner's arm about the edge
    # (here 0.24 µm); a lift at first order, h·SPEED, would be 0.6 mm
    cfg = backward_configuration(back, rigid, DT)
    R = _quat_to_matrix(cfg.orientation[0])
    kept = cfg.position[0] + (R @ (points[~sep] - centre).T).T
    gap = kept[:, 2]
    arm = np.linalg.norm(centre - edge)
    bound = (DT * abs(w[1])) ** 2 * arm  # twice the leading term: higher orders are smaller
    assert np.all(gap > 0.0) and np.all(gap < bound), (gap, bound)
    assert bound < 1e-2 * DT * SPEED  # the gap is (hω)·|r| / (h·SPEED) : the bound is 0.2% of it
