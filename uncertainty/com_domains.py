"""Admissible domains D of the random initial centre of mass R0 (Eq. 18-a of [1]_).

Boxes, balls and convex polytopes, with membership, the distance to the boundary, exact uniform
sampling and Gauss product quadrature rules (used to solve Eq. 22 and for proposal covariances).

References
----------
.. [1] A. Batou, C. Soize, Rigid multibody system dynamics with uncertain rigid bodies,
       Multibody System Dynamics 27 (2012) 285-319, doi:10.1007/s11044-011-9279-2.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import ConvexHull, QhullError
from scipy.special import roots_jacobi, roots_legendre

from uncertainty.body_checks import checked_real, checked_vec3
from uncertainty.errors import UncertaintyError

__all__ = ["BoxDomain", "BallDomain", "ConvexDomain", "Domain"]


class BoxDomain:
    """Axis-aligned box ``center ± size/2`` (m): an admissible domain D of R0 (Eq. 18-a of [1]).

    Parameters
    ----------
    center : array_like, shape (3,)
    size : array_like, shape (3,)
        Edge lengths, all positive.
    """

    kind = "box"

    def __init__(self, center, size):
        self.center = checked_vec3(center, "com.center")
        self.size = checked_vec3(size, "com.size")
        if not np.all(self.size > 0.0):
            raise UncertaintyError(
                f"com.size: box edge lengths must be positive, got {self.size.tolist()}", "com.size"
            )
        self.half = 0.5 * self.size
        self.low = self.center - self.half
        self.high = self.center + self.half
        self._rules: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def __repr__(self) -> str:
        return f"BoxDomain(center={self.center.tolist()}, size={self.size.tolist()})"

    @property
    def barycentre(self) -> np.ndarray:
        return self.center.copy()

    @property
    def volume(self) -> float:
        return float(np.prod(self.size))

    @property
    def extent(self) -> float:
        """Largest edge (m): the length scale of tolerances."""
        return float(np.max(self.size))

    def contains(self, points) -> np.ndarray:
        """Whether each point (shape (..., 3)) lies in the closed box; shape (...)."""
        p = np.asarray(points, dtype=float)
        return np.all((p >= self.low) & (p <= self.high), axis=-1)

    def interior_gap(self, point) -> float:
        """Distance from ``point`` to the boundary over the extent (negative outside)."""
        p = np.asarray(point, dtype=float)
        return float(np.min(np.minimum(p - self.low, self.high - p)) / self.extent)

    def sample_uniform(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n exact draws of the uniform law on the box, shape (n, 3)."""
        t = 2.0 * rng.random((n, 3)) - 1.0
        return self.center + self.half * t

    def quadrature(self, order: int) -> tuple[np.ndarray, np.ndarray]:
        """Tensor Gauss-Legendre rule with ``order``³ nodes: points (k, 3), weights (k,)."""
        if order not in self._rules:
            x, w = roots_legendre(order)
            g = np.stack(np.meshgrid(x, x, x, indexing="ij"), -1).reshape(-1, 3)
            wg = np.einsum("i,j,k->ijk", w, w, w).ravel()
            self._rules[order] = (self.center + self.half * g, wg * np.prod(self.half))
        return self._rules[order]


class BallDomain:
    """Ball of ``radius`` (m) about ``center``: an admissible domain D of R0 (Eq. 18-a of [1])."""

    kind = "ball"

    def __init__(self, center, radius):
        self.center = checked_vec3(center, "com.center")
        self.radius = checked_real(radius, "com.radius")
        if self.radius <= 0.0:
            raise UncertaintyError(
                f"com.radius: the ball radius must be positive, got {self.radius:g}", "com.radius"
            )
        self._rules: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def __repr__(self) -> str:
        return f"BallDomain(center={self.center.tolist()}, radius={self.radius!r})"

    @property
    def barycentre(self) -> np.ndarray:
        return self.center.copy()

    @property
    def volume(self) -> float:
        return 4.0 / 3.0 * math.pi * self.radius**3

    @property
    def extent(self) -> float:
        """Diameter (m)."""
        return 2.0 * self.radius

    def contains(self, points) -> np.ndarray:
        p = np.asarray(points, dtype=float) - self.center
        return np.einsum("...i,...i->...", p, p) <= self.radius**2

    def interior_gap(self, point) -> float:
        d = np.linalg.norm(np.asarray(point, dtype=float) - self.center)
        return float((self.radius - d) / self.extent)

    def sample_uniform(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n exact draws of the uniform law on the ball, shape (n, 3)."""
        v = rng.standard_normal((n, 3))
        r = self.radius * np.cbrt(rng.random(n))
        x = self.center + v * (r / np.linalg.norm(v, axis=1))[:, None]
        # rounding can put a draw of radius ≈ R a few ulps outside: use the centre instead
        return np.where(self.contains(x)[:, None], x, self.center)

    def quadrature(self, order: int) -> tuple[np.ndarray, np.ndarray]:
        """Spherical product rule: Gauss-Jacobi in r (weight r²), Gauss-Legendre in cos θ and
        the trapezoidal rule in φ (exact for trigonometric polynomials), ``2 order³`` nodes."""
        if order not in self._rules:
            xr, wr = roots_jacobi(order, 0.0, 2.0)  # weight (1 + x)² on [-1, 1]
            r = 0.5 * self.radius * (xr + 1.0)
            wr = wr * (0.5 * self.radius) ** 3
            ct, wt = roots_legendre(order)
            phi = np.arange(2 * order) * (np.pi / order)
            wp = np.full(2 * order, np.pi / order)
            R, C, P = np.meshgrid(r, ct, phi, indexing="ij")
            S = np.sqrt(1.0 - C**2)
            pts = np.stack([R * S * np.cos(P), R * S * np.sin(P), R * C], -1).reshape(-1, 3)
            w = np.einsum("i,j,k->ijk", wr, wt, wp).ravel()
            self._rules[order] = (self.center + pts, w)
        return self._rules[order]


class ConvexDomain:
    """Convex hull of ``vertices`` (m): an admissible domain D of R0 (Eq. 18-a of [1]).

    Parameters
    ----------
    vertices : array_like, shape (k, 3)
        At least 4 points, not coplanar; interior points are allowed and ignored.
    """

    kind = "convex"

    def __init__(self, vertices):
        try:
            v = np.array(vertices, dtype=float)
        except (TypeError, ValueError):
            raise UncertaintyError(
                f"com.vertices: expected (k, 3) real coordinates, got {vertices!r}", "com.vertices"
            ) from None
        if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] < 4 or not np.all(np.isfinite(v)):
            raise UncertaintyError(
                f"com.vertices: expected at least 4 finite points (k, 3), got shape {v.shape}",
                "com.vertices",
            )
        try:
            hull = ConvexHull(v)
        except QhullError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else "degenerate"
            raise UncertaintyError(
                f"com.vertices: the points span no volume (coplanar or repeated): {first}",
                "com.vertices",
            ) from None
        self.vertices = v[hull.vertices]
        self.equations = hull.equations  # rows (n, d): n·x + d ≤ 0 inside, |n| = 1
        self._extent = float(np.max(np.ptp(self.vertices, axis=0)))
        # Tetrahedra from an interior point to every (triangular) facet of the hull.
        apex = v[hull.vertices].mean(axis=0)
        tri = v[hull.simplices]  # (f, 3, 3)
        self._tets = np.concatenate([np.broadcast_to(apex, (len(tri), 1, 3)), tri], axis=1)
        edges = self._tets[:, 1:] - self._tets[:, :1]
        self._tet_volumes = np.abs(np.linalg.det(edges)) / 6.0
        self._volume = float(self._tet_volumes.sum())
        self._barycentre = (self._tet_volumes @ self._tets.mean(axis=1)) / self._volume
        self._rules: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def __repr__(self) -> str:
        return f"ConvexDomain(<{len(self.vertices)} vertices, {len(self.equations)} facets>)"

    @property
    def barycentre(self) -> np.ndarray:
        return self._barycentre.copy()

    @property
    def volume(self) -> float:
        return self._volume

    @property
    def extent(self) -> float:
        """Largest edge of the bounding box (m)."""
        return self._extent

    def contains(self, points) -> np.ndarray:
        p = np.asarray(points, dtype=float)
        return np.max(p @ self.equations[:, :3].T + self.equations[:, 3], axis=-1) <= 0.0

    def interior_gap(self, point) -> float:
        p = np.asarray(point, dtype=float)
        return float(-np.max(self.equations[:, :3] @ p + self.equations[:, 3]) / self.extent)

    def sample_uniform(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n exact draws of the uniform law on the hull (tetrahedron by volume, then uniform
        barycentric coordinates), shape (n, 3)."""
        k = rng.choice(len(self._tets), size=n, p=self._tet_volumes / self._volume)
        e = rng.exponential(size=(n, 4))
        x = np.einsum("ni,nij->nj", e / e.sum(axis=1, keepdims=True), self._tets[k])
        return np.where(self.contains(x)[:, None], x, self._barycentre)

    def quadrature(self, order: int) -> tuple[np.ndarray, np.ndarray]:
        """Collapsed-coordinate (Duffy) Gauss product rule on every tetrahedron, ``order``³
        nodes each: points (k, 3), weights (k,), exact for polynomials of degree 2·order - 1."""
        if order not in self._rules:
            xu, wu = roots_jacobi(order, 2.0, 0.0)  # weight (1 - x)², x = 2u - 1
            xv, wv = roots_jacobi(order, 1.0, 0.0)  # weight (1 - x)
            xw, ww = roots_legendre(order)
            u, v, w = 0.5 * (xu + 1.0), 0.5 * (xv + 1.0), 0.5 * (xw + 1.0)
            wu, wv, ww = wu / 8.0, wv / 4.0, ww / 2.0  # weights of ∫₀¹ (1-u)² du etc.
            U, V, W = np.meshgrid(u, v, w, indexing="ij")
            ref = np.stack([U, V * (1 - U), W * (1 - U) * (1 - V)], -1).reshape(-1, 3)
            wref = np.einsum("i,j,k->ijk", wu, wv, ww).ravel()  # sums to 1/6
            edges = self._tets[:, 1:] - self._tets[:, :1]  # (t, 3, 3)
            pts = self._tets[:, None, 0, :] + np.einsum("qi,tij->tqj", ref, edges)
            wts = 6.0 * self._tet_volumes[:, None] * wref[None, :]
            self._rules[order] = (pts.reshape(-1, 3), wts.ravel())
        return self._rules[order]


Domain = BoxDomain | BallDomain | ConvexDomain

# --------------------------------------------------------------------------------------------
