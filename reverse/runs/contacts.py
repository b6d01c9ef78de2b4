"""Contact geometry from PyBullet for the reverse stepper (Twigg & James 2008 §2.1: points,
normals, per-contact friction, rolling friction and restitution).

PyBullet is used as a collision detector only, through the engine: the bodies are placed at the
configuration asked for (:meth:`~workbench.sim.engine.Engine.set_pose`), collision detection runs
(``performCollisionDetection()``) and :meth:`~workbench.sim.engine.Engine.contact_arrays` lists
every touching pair once (as arrays, no tuple per point). Planes become 1 m thick boxes
(:class:`~workbench.sim.engine.Engine` ``plane_as_box``), so a box resting on the ground reports
its 4 corners at once (on a ``GEOM_PLANE`` it reports 1–2).

Measured facts this module relies on (PyBullet 3.2.7, ``/tmp`` research scripts summarised in
``docs/reverse.md``):

* ``contactNormalOnB`` points from B into A; ``contactDistance`` is negative for penetration;
  ``positionOnA = positionOnB + d · normal``.
* Box–box pairs report only touching or penetrating points — and a gap of 1e-16 m is a gap:
  boxes stacked at heights 0.1, 0.3, 0.5 … (not binary fractions) have faces 1e-16 m apart and
  PyBullet reports no contact between them at any touch tolerance, so stacked scenes use sizes
  and heights that are binary fractions (``scenes/box_stack5.yaml``). Other pairs also report
  gaps up to about 2% of the smaller shape's bounding-box half diagonal (3.5 mm for a 0.1 m
  sphere). A
  contact takes part in the step only when ``d ≤ touch_tolerance``: the steps are velocity-level
  (Anitescu–Potra), so a contact with a gap would stop a body in mid-air.
* A box on the box-shaped ground reports **no** point for any positive gap, whatever the touch
  tolerance (none with the block raised 0.2 µm; two moving boxes of ``box_stack5`` do report
  gaps: all 4 corners with the top box raised 3, 5 and 9 µm): a block pivoting backward about a
  kept edge lifts that edge by a second-order 0.2 µm per step (the linear update of the centre
  along the pivot's tangent, ``tests/unit/reverse/test_markov_drop.py``) and the pair vanishes
  although its corners are within :data:`TOUCH_TOLERANCE`. With ``persist=True`` a moving box's
  pair with a fixed box (the ground) keeps its previous points then
  (:meth:`ContactDetector._persisting`).
* Material combination, as PyBullet does it (so the two engines' laws agree): friction and
  restitution by product, ``μ = μ_A μ_B``, ``e = e_A e_B``; rolling and spinning friction
  ``ρ = ρ_A μ_B + ρ_B μ_A`` (*not* the product: measured to 6 digits in 8 combinations), with
  torque ``ρ · normal force``.
"""

from __future__ import annotations

import time

import numpy as np

from reverse.step.dynamics import ContactSet, quat_multiply, rotation_matrix, tangent_basis
from reverse.step.types import TOUCH_TOLERANCE
from workbench.scene.model import Scene
from workbench.sim.engine import Engine

__all__ = ["ContactDetector", "TOUCH_TOLERANCE"]

#: Height (m) above the origin of the grid on which :meth:`ContactDetector.fresh` sets the
#: moving bodies apart: beyond the extent of any scene we ship (the plane's box is 100 m wide,
#: ``PLANE_BOX_HALF`` in ``workbench/sim/arguments.py``; a static body reaching 10 km above the
#: origin would spoil the diagnostic count, nothing else).
_APART = 1e4

#: Clearance (m) between neighbours on that grid, beyond the bodies' own size: far beyond
#: PyBullet's contact breaking distance (0.02 m), so no kept point survives. The grid is square
#: and compact: set apart on one vertical line 10 km from each other (up to 3.9e7 m for 3875
#: balls), each reset cost ≈ 230 µs inside PyBullet's broadphase instead of ≈ 9 µs (measured on
#: ``spelling_balls``: 0.94 s against 0.036 s to place them all), 1.7 s of a 3875-ball run.
_GRID_CLEARANCE = 1.0


class ContactDetector:
    """Contacts of a scene's bodies at any configuration.

    Parameters
    ----------
    scene : Scene
    mass_overrides : dict, optional
        Realized mass properties (they move the centre of mass, hence the collision shapes).
    touch_tolerance : float
        See :data:`TOUCH_TOLERANCE`.
    rng : numpy.random.Generator, optional
        Turns the friction pyramid of each contact by a random angle about its normal (the
        pyramid's orientation is otherwise an arbitrary world-based choice); contacts with a
        sliding velocity or a user direction are aligned with it anyway.
    persist : bool
        Contact persistence for box–box pairs (off by default: detection as PyBullet gives it).
        When a pair of a moving box and a fixed box-shaped body (a box, or the plane's box)
        that touched at the previous query has no point at this one, its previous points are
        carried with their bodies, and those whose gap along the carried normal is at most
        ``touch_tolerance`` are kept (:meth:`_persisting`). Pairs with any other shape, pairs
        of two moving boxes and pairs PyBullet reports are exactly as without it;
        :meth:`fresh` starts without a previous query. The previous query is :attr:`memory`
        (picklable: the particle filter carries it with a particle).
    """

    def __init__(
        self,
        scene: Scene,
        *,
        mass_overrides: dict | None = None,
        touch_tolerance: float = TOUCH_TOLERANCE,
        rng: np.random.Generator | None = None,
        persist: bool = False,
    ):
        self.engine = Engine(scene, visual=False, plane_as_box=True, mass_overrides=mass_overrides)
        self.touch_tolerance = float(touch_tolerance)
        self.rng = rng
        self.persist = bool(persist)
        #: Box-shaped bodies (a plane is collided as a box): a moving one's pairs with a fixed
        #: one are the only ones that persist.
        self.boxlike = np.array([b.shape.type in ("box", "plane") for b in scene.bodies])
        #: The previous query's contacts in their bodies' frames (``persist`` only), or None.
        self.memory: dict | None = None
        #: Per contact of the last detection: a moving box on a fixed box-shaped body.
        self._box = np.zeros(0, dtype=bool)
        eng = self.engine
        self.static = np.array([f.mass == 0 for f in eng.frames])
        self.moving = np.flatnonzero(~self.static)  # placed before every contact query
        self.principal = np.array([f.principal for f in eng.frames])
        mats = [b.material for b in scene.bodies]
        self.mu = np.array([m.friction for m in mats])
        self.rho = np.array([m.rolling_friction for m in mats])
        self.spin = np.array([m.spinning_friction for m in mats])
        self.rest = np.array([m.restitution for m in mats])
        #: Poses of the moving bodies at the last query, (n_moving, 7): COM position, then
        #: inertial-frame quaternion.
        self._placed: np.ndarray | None = None
        #: Wall time (s) of this detector's PyBullet queries by part, summed over queries:
        #: ``place`` (the moving bodies' poses, PyBullet's resets of the changed ones), ``detect``
        #: (PyBullet's detection), ``read`` (``getContactPoints`` and its arrays), ``post``
        #: (normals, materials, pyramids; persistence not included). For the benchmarks'
        #: split of the contact phase (``benchmarks/spelling.py``).
        self.timing = dict.fromkeys(("place", "detect", "read", "post"), 0.0)

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> ContactDetector:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def fresh(self, position: np.ndarray, orientation: np.ndarray) -> ContactSet:
        """The contacts a first detection finds at a configuration, without the random pyramid
        turns (the detector's draws are untouched).

        PyBullet keeps the contact points of a pair from one detection to the next (persistent
        manifolds), so a query after others may list points an isolated query would not
        (measured: 4 or 8 instead of 6 for ``reverse_landing``'s final state after a run). The
        moving bodies are first set apart on a square grid :data:`_APART` m above the origin,
        neighbours their largest size (the diagonal of the largest bounding box) twice plus
        :data:`_GRID_CLEARANCE` apart — every body lies within that diagonal of its centre of
        mass, which lies inside the box — where every kept point lies beyond PyBullet's
        breaking distance and is dropped;
        then they are placed and detected as asked."""
        far = np.zeros_like(position)
        moving = self.moving
        if len(moving):
            size = 0.0
            for j in moving.tolist():
                lo, hi = self.engine.aabb(j)
                size = max(size, float(np.linalg.norm(np.asarray(hi) - np.asarray(lo))))
            spacing = 2.0 * size + _GRID_CLEARANCE
            side = int(np.ceil(np.sqrt(len(moving))))
            k = np.arange(len(moving))
            far[moving, 0] = spacing * (k % side)
            far[moving, 1] = spacing * (k // side)
            far[moving, 2] = _APART
        rng, self.rng = self.rng, None
        try:
            self.memory = None
            self(far, orientation)
            self.memory = None  # an isolated query: nothing persists from before it
            return self(position, orientation)
        finally:
            self.rng = rng

    def __call__(self, position: np.ndarray, orientation: np.ndarray) -> ContactSet:
        """Contacts at centre-of-mass ``position`` (n, 3) and body-frame ``orientation`` (n, 4)."""
        found = self._detect(position, orientation)
        if not self.persist:
            return found
        box = self._box
        kept = self._persisting(found, position, orientation)
        if kept is not None:
            found = ContactSet(
                **{k: np.concatenate([v, getattr(kept, k)]) for k, v in found.__dict__.items()}
            )
            box = np.concatenate([box, np.ones(len(kept), dtype=bool)])
        self._remember(found, box, position, orientation)
        return found

    def _remember(self, contacts: ContactSet, box: np.ndarray, position, orientation) -> None:
        """Store this query's contacts of box–box pairs (``box``) in their bodies' frames."""
        if not box.any():
            self.memory = None
            return
        c = contacts.subset(np.flatnonzero(box))
        half = 0.5 * c.distance[:, None] * c.normal  # point = midpoint of the two surfaces
        on_a, on_b = c.point + half, c.point - half
        self.memory = {
            "contacts": c,
            "on_a": _to_body(on_a, position[c.body_a], orientation[c.body_a]),
            "on_b": _change_frame(on_b, c.body_b, position, orientation, to_body=True),
            "normal": _change_frame(c.normal, c.body_b, None, orientation, to_body=True),
        }

    def _persisting(self, found: ContactSet, position, orientation) -> ContactSet | None:
        """The previous query's box–box contacts of the pairs that have no point now, carried
        with their bodies, whose gap is at most ``touch_tolerance`` (None if there are none).

        The gap of a carried contact is ``n · (p_A − p_B)``: the points on A and on B, and the
        normal (B's), moved rigidly with their bodies from the previous configuration — exact
        for a flat face of B (a box's face, the ground) while the point stays on it. Kept
        contacts keep their materials; the pyramid is turned again (``rng``, one angle per kept
        contact after those of the detected ones) and the tangent rebuilt about the new
        normal."""
        mem = self.memory
        if mem is None:
            return None
        c = mem["contacts"]
        now = set(zip(found.body_a.tolist(), found.body_b.tolist(), strict=True))
        gone = np.array(
            [(a, b) not in now for a, b in zip(c.body_a.tolist(), c.body_b.tolist(), strict=True)]
        )
        if not gone.any():
            return None
        idx = np.flatnonzero(gone)
        a, b = c.body_a[idx], c.body_b[idx]
        on_a = _to_world(mem["on_a"][idx], position[a], orientation[a])
        on_b = _change_frame(mem["on_b"][idx], b, position, orientation, to_body=False)
        normal = _change_frame(mem["normal"][idx], b, None, orientation, to_body=False)
        gap = np.einsum("ij,ij->i", normal, on_a - on_b)
        # within the touch tolerance, as a detected contact (module docstring); a carried point
        # below the surface by more than it would have been reported by PyBullet
        ok = np.abs(gap) <= self.touch_tolerance
        if not ok.any():
            return None
        idx, gap, normal = idx[ok], gap[ok], normal[ok]
        on_a, on_b = on_a[ok], on_b[ok]
        t1 = self._pyramid_tangents(normal)
        kept = c.subset(idx)
        return ContactSet(
            body_a=kept.body_a,
            body_b=kept.body_b,
            point=0.5 * (on_a + on_b),
            normal=normal,
            distance=gap,
            friction=kept.friction,
            rolling=kept.rolling,
            spinning=kept.spinning,
            restitution=kept.restitution,
            tangent=t1,
            roll_axis=t1.copy(),
        )

    def _detect(self, position: np.ndarray, orientation: np.ndarray) -> ContactSet:
        """PyBullet's contacts at a configuration (:meth:`__call__` without persistence)."""
        t0 = time.perf_counter()
        eng = self.engine
        moving = self.moving
        # the moving bodies' poses as rows (x, y, z, qx, qy, qz, qw): COM positions and
        # inertial-frame quaternions (row by row: the same numbers as for all bodies; the static
        # ones are never placed)
        pose = np.empty((len(moving), 7))
        pose[:, :3] = position[moving]
        pose[:, 3:] = quat_multiply(orientation[moving], self.principal[moving])
        placed = self._placed
        if placed is None:
            eng.set_poses(moving, pose[:, :3], pose[:, 3:])
        else:
            # Place only the bodies whose pose changed since the last query (sleeping bodies keep
            # theirs exactly): PyBullet's detection depends on the poses alone, so skipping
            # the identical ones changes nothing (checked: runs bit-identical) and saves most of
            # the placing when most bodies rest. (A NaN differs from itself: placed again.)
            moved = (pose != placed).any(axis=1)
            if moved.any():
                rows = pose[moved]
                eng.set_poses(moving[moved], rows[:, :3], rows[:, 3:])
        self._placed = pose  # a new array every query: nothing else holds it
        t1 = time.perf_counter()
        eng.detect_collisions()
        t2 = time.perf_counter()
        # the six fields as arrays (no tuple per point)
        found = eng.contact_arrays(max_distance=self.touch_tolerance)
        t3 = time.perf_counter()
        contacts = self._contact_set(*found)
        timing = self.timing
        timing["place"] += t1 - t0
        timing["detect"] += t2 - t1
        timing["read"] += t3 - t2
        timing["post"] += time.perf_counter() - t3
        return contacts

    def _pyramid_tangents(self, normal: np.ndarray) -> np.ndarray:
        """First tangent of each contact's friction pyramid: :func:`tangent_basis`, turned about
        the normal by a uniform random angle when the detector has a generator (``rng``)."""
        t1 = tangent_basis(normal)
        if self.rng is not None:
            ang = self.rng.uniform(0.0, 2.0 * np.pi, len(normal))
            t2 = np.cross(normal, t1)
            t1 = np.cos(ang)[:, None] * t1 + np.sin(ang)[:, None] * t2
        return t1

    def _contact_set(self, a, b, pa, pb, normal, dist) -> ContactSet:
        """The detected points (PyBullet's fields as arrays, scene body indices) as contacts:
        without the pairs of two static bodies, in PyBullet's order, A the moving body."""
        self._box = np.zeros(0, dtype=bool)
        if not len(a):
            return ContactSet.empty()
        keep = ~(self.static[a] & self.static[b])
        if not keep.any():
            return ContactSet.empty()
        if not keep.all():
            a, b, pa, pb = a[keep], b[keep], pa[keep], pb[keep]
            normal, dist = normal[keep], dist[keep]
        normal /= np.linalg.norm(normal, axis=1, keepdims=True)
        # keep A the moving one: flip pairs whose A is static
        flip = self.static[a]
        a[flip], b[flip] = b[flip], a[flip].copy()
        normal[flip] *= -1.0
        point = 0.5 * (pa + pb)
        mu = self.mu[a] * self.mu[b]
        rho = self.rho[a] * self.mu[b] + self.rho[b] * self.mu[a]
        spin = self.spin[a] * self.mu[b] + self.spin[b] * self.mu[a]
        rest = self.rest[a] * self.rest[b]
        t1 = self._pyramid_tangents(normal)
        body_b = np.where(self.static[b], -1, b)
        # a moving box on a fixed box-shaped body (the ground) only: between two moving boxes
        # a pair also vanishes within the tolerance when they separate slowly (measured:
        # box_stack5 with --attract, seed 2, box5 leaving box4 at 9.5 µm after a step), and
        # stacking runs stay as PyBullet reports them
        self._box = self.boxlike[a] & self.boxlike[b] & self.static[b]
        return ContactSet(
            body_a=a,
            body_b=body_b,
            point=point,
            normal=normal,
            distance=dist,
            friction=mu,
            rolling=rho,
            spinning=spin,
            restitution=rest,
            tangent=t1,
            roll_axis=t1.copy(),
        )


def _to_body(p: np.ndarray, x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """World points ``p`` (k, 3) in the frames of bodies at ``x`` (k, 3), ``q`` (k, 4)."""
    R = rotation_matrix(q)
    return np.einsum("kji,kj->ki", R, p - x)


def _to_world(p: np.ndarray, x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_to_body`."""
    return np.einsum("kij,kj->ki", rotation_matrix(q), p) + x


def _change_frame(v, body, position, orientation, *, to_body: bool) -> np.ndarray:
    """Points (``position`` given) or directions from the world into body ``body``'s frame
    (``to_body``) or back; unchanged for −1 (the world)."""
    out = np.array(v, dtype=float)
    m = body >= 0
    if m.any():
        x = np.zeros((int(m.sum()), 3)) if position is None else position[body[m]]
        move = _to_body if to_body else _to_world
        out[m] = move(out[m], x, orientation[body[m]])
    return out
