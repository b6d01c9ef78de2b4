"""Contact and distance queries: part of the :class:`~workbench.sim.engine.Engine`.

Contact points after a step or after :meth:`ContactQueries.detect_collisions` (the reverse
stepper's query, ``reverse/runs/contacts.py``: :meth:`ContactQueries.contact_arrays`, no tuple per
point), the count per body a forward run records, closest distances and bounding boxes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from workbench.sim.engine_client import EngineBase
from workbench.sim.points import contact_arrays

__all__ = ["ContactPoint", "ContactQueries"]


class ContactPoint(NamedTuple):
    """One contact point as PyBullet reports it, with body indices (scene order) for its ids.

    ``normal`` points from B into A; ``distance`` is negative for penetration, m, and
    ``position_a = position_b + distance * normal``.
    """

    body_a: int
    body_b: int
    position_a: tuple[float, float, float]
    position_b: tuple[float, float, float]
    normal: tuple[float, float, float]
    distance: float


class ContactQueries(EngineBase):
    """Contact points, distances and bounding boxes of the bodies where they stand (mixed into
    :class:`~workbench.sim.engine.Engine`)."""

    def contact_counter(self) -> Callable[[np.ndarray], int]:
        """A function ``count(per_body)`` that adds to ``per_body``, shape (n,), each body's
        number of contact points from the last step and returns the number of points. One
        PyBullet call."""
        get_contacts, c = self._p.getContactPoints, self._client
        index = {uid: j for j, uid in enumerate(self._uids)}

        def count(per_body: np.ndarray) -> int:
            pts = get_contacts(physicsClientId=c)
            for pt in pts:
                for uid in (pt[1], pt[2]):
                    j = index.get(uid)
                    if j is not None:
                        per_body[j] += 1
            return len(pts)

        return count

    def detect_collisions(self) -> None:
        """Update the contact points for the bodies where they stand, without stepping."""
        self._p.performCollisionDetection(physicsClientId=self._client)

    def contact_rows(
        self, body: int | None = None, max_distance: float | None = None
    ) -> list[tuple[int, int, tuple, tuple, tuple, float]]:
        """The contact points found by the last step or :meth:`detect_collisions` (of body
        ``body`` as side A, or all), in PyBullet's order, as plain tuples ``(body_a, body_b,
        position_a, position_b, normal, distance)`` with scene body indices (the fields of
        :class:`ContactPoint`, which the reverse stepper's contact query builds arrays from
        without paying for named tuples). With ``max_distance``, only points whose signed
        distance is at most that, m."""
        if body is None:
            pts = self._p.getContactPoints(physicsClientId=self._client)
        else:
            pts = self._p.getContactPoints(bodyA=self._uids[body], physicsClientId=self._client)
        index = self._uid_index
        if max_distance is None:
            return [(index[pt[1]], index[pt[2]], pt[5], pt[6], pt[7], pt[8]) for pt in pts]
        return [
            (index[pt[1]], index[pt[2]], pt[5], pt[6], pt[7], pt[8])
            for pt in pts
            if not pt[8] > max_distance  # as before the filter: a NaN distance is kept
        ]

    def contact_arrays(self, max_distance: float | None = None) -> tuple[np.ndarray, ...]:
        """All of :meth:`contact_rows`' fields as arrays, without a tuple per point
        (:func:`workbench.sim.points.contact_arrays`: the reverse stepper's contact query)."""
        pts = self._p.getContactPoints(physicsClientId=self._client)
        return contact_arrays(pts, self._uid_lookup, max_distance)

    def contact_points(
        self, body: int | None = None, max_distance: float | None = None
    ) -> list[ContactPoint]:
        """:meth:`contact_rows` as :class:`ContactPoint` named tuples."""
        return [ContactPoint(*row) for row in self.contact_rows(body, max_distance)]

    def closest_distance(self, a: int, b: int, max_distance: float) -> float:
        """Signed distance between bodies ``a`` and ``b`` (negative: penetration), m, from
        PyBullet's closest points; ``max_distance`` when they are farther apart."""
        pts = self._p.getClosestPoints(
            self._uids[a], self._uids[b], max_distance, physicsClientId=self._client
        )
        return float(min((pt[8] for pt in pts), default=max_distance))

    def aabb(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper corners, shape (3,), m, of body ``j``'s world bounding box."""
        lo, hi = self._p.getAABB(self._uids[j], physicsClientId=self._client)
        return np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
