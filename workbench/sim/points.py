"""PyBullet's contact points as numpy arrays (pure: no PyBullet here; the engine calls it with
the tuples ``getContactPoints`` returns).

The reverse stepper queries the contacts of every step (thousands of points in the spelling
scene); building one Python tuple per point and then arrays from them cost about as much as
PyBullet's detection. :func:`contact_arrays` takes each field of all the points in one C-level
pass (``map(itemgetter(...))``, the 3-vectors as one flat stream of floats) instead, and filters
by distance in numpy. The values are the same floats, in PyBullet's order.
"""

from __future__ import annotations

from itertools import chain
from operator import itemgetter

import numpy as np

__all__ = ["contact_arrays"]

# Fields of a PyBullet contact point tuple (``getContactPoints``).
_BODY_A, _BODY_B, _POS_A, _POS_B, _NORMAL_B, _DISTANCE = 1, 2, 5, 6, 7, 8


def contact_arrays(
    points: tuple | list, uid_index: np.ndarray, max_distance: float | None = None
) -> tuple[np.ndarray, ...]:
    """``(body_a, body_b, position_a, position_b, normal_on_b, distance)`` of PyBullet contact
    point tuples as arrays, shapes (m,), (m,), (m, 3), (m, 3), (m, 3), (m,).

    Parameters
    ----------
    points : sequence of tuple
        PyBullet's contact points.
    uid_index : ndarray of int
        Scene body index of each PyBullet unique id (``uid_index[uid]``).
    max_distance : float, optional
        Keep only the points whose signed distance is not above it, m (a NaN distance is kept,
        as :meth:`workbench.sim.engine.Engine.contact_rows` keeps it).
    """
    m = len(points)
    if not m:
        return (
            np.zeros(0, dtype=int),
            np.zeros(0, dtype=int),
            np.zeros((0, 3)),
            np.zeros((0, 3)),
            np.zeros((0, 3)),
            np.zeros(0),
        )
    d = np.fromiter(map(itemgetter(_DISTANCE), points), dtype=float, count=m)
    a = uid_index[np.fromiter(map(itemgetter(_BODY_A), points), dtype=int, count=m)]
    b = uid_index[np.fromiter(map(itemgetter(_BODY_B), points), dtype=int, count=m)]
    pa, pb, nb = (_vectors(points, field) for field in (_POS_A, _POS_B, _NORMAL_B))
    if max_distance is not None:
        keep = ~(d > max_distance)
        if not keep.all():
            return a[keep], b[keep], pa[keep], pb[keep], nb[keep], d[keep]
    return a, b, pa, pb, nb, d


def _vectors(points, field: int) -> np.ndarray:
    """Field ``field`` (a 3-tuple) of every point as an (m, 3) array, read as one flat stream
    of floats (``np.array`` of a list of tuples walks each tuple as a sequence: about twice the
    time for the same values)."""
    m = len(points)
    flat = chain.from_iterable(map(itemgetter(field), points))
    return np.fromiter(flat, dtype=float, count=3 * m).reshape(m, 3)
