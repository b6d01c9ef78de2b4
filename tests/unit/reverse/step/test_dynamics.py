"""The quaternion product and rotation matrices of :mod:`reverse.step.dynamics`, made array-wise
(issue 17), give the numbers of the stacked forms they replaced, to the bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.step.dynamics import quat_multiply, rotation_matrix


@pytest.mark.parametrize("shape", [(4,), (7, 4), (3, 5, 4), (0, 4)])
def test_quaternion_product_and_rotation_matrix_match_the_stacked_forms(shape):
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=shape), rng.normal(size=shape)
    ax, ay, az, aw = np.moveaxis(a, -1, 0)
    bx, by, bz, bw = np.moveaxis(b, -1, 0)
    product = np.stack(
        [aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
         aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz],
        axis=-1,
    )  # fmt: skip
    x, y, z, w = ax, ay, az, aw
    R = np.stack(
        [np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
         np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
         np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)],
        axis=-2,
    )  # fmt: skip
    got_p, got_r = quat_multiply(a, b), rotation_matrix(a)
    assert got_p.shape == product.shape and got_r.shape == R.shape
    assert np.array_equal(got_p.view(np.int64), product.view(np.int64))
    assert np.array_equal(got_r.view(np.int64), R.view(np.int64))
    # broadcasting one quaternion against many, as the stepper does
    one = rng.normal(size=4)
    many = rng.normal(size=(5, 4))
    assert np.array_equal(quat_multiply(one, many), np.stack([quat_multiply(one, m) for m in many]))
