"""Forward and backward velocity-level steps of a rigid-body system (Twigg & James 2008 [1]_ §2,
§3.3, Eq. 11–15), island by island.

Pure numerics: contacts come from a callable (PyBullet's geometry in :mod:`reverse.runs.contacts`),
goals from a callable (hints in :mod:`reverse.goals.hints`). A step (:class:`Stepper`):

1. backward only: the start-of-step configuration ``(x⁻, q⁻)`` is found first
   (:func:`reverse.step.integration.backward_configuration`), and the contacts there;
2. backward only, the heuristics of [1]_ §4 adjust the contacts, goals and velocities
   (free-to-bounce, attraction, restitution blend, damping: :class:`StepSettings`); the
   tangents are aligned with the sliding and rolling directions (:func:`align_tangents`,
   Handle-Contact lines 2–5);
3. the awake bodies are split into islands (:mod:`reverse.step.islands`); bodies in free flight are
   stepped at once, every other island solves its contact LCP (Eq. 2–6 forward, Eq. 13–15
   backward): the islands without joints assembled together, vectorized over contacts and
   islands (:func:`reverse.step.batched.solve_islands`, one :func:`reverse.lcp.solve.solve_lcp`
   call per
   island), those with joints one by one (:func:`reverse.step.dynamics.solve_island`) — the same
   numbers to the bit either way (:data:`BATCH_MIN_CONTACTS` picks the faster);
4. forward only: the end-of-step configuration
   (:func:`reverse.step.integration.forward_configuration`).

So a backward step followed by a forward step with the same contacts returns the state exactly
up to the LCP's and the fixed point's round-off (:mod:`reverse.step.integration`).

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25, 2008.
"""

from __future__ import annotations

import functools
import gc
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from reverse.step.batched import solve_island_arrays as _solve_island_arrays
from reverse.step.dynamics import (
    ContactSet,
    Goals,
    IslandSolution,
    JointRows,
    RigidBodies,
    tangent_basis,
    world_inertia,
)
from reverse.step.dynamics import solve_island as _solve_island
from reverse.step.integration import backward_configuration, forward_configuration
from reverse.step.islands import (
    awake_bodies,
    between_held,
    find_islands,
    free_bodies,
    island_arrays,
)
from reverse.step.joints import JointModel
from reverse.step.rolling import remove_slip, slip_decay
from reverse.step.separation import separate_overlaps
from reverse.step.types import IslandReport, StepReport, StepSettings
from workbench.sim.state import State

__all__ = [
    "StepSettings",
    "StepReport",
    "IslandReport",
    "Stepper",
    "backward_configuration",
    "forward_configuration",
    "find_islands",
    "align_tangents",
    "free_bodies",
    "blend_weight",
]


#: Fewest contacts (in islands without joints) a step assembles and solves together
#: (:func:`reverse.step.batched.solve_islands`); with fewer the islands go one by one
#: (``solve_island``). The batch costs about 1 ms of set-up (≈ 150 numpy calls, whatever the
#: size) and little per contact; one by one costs ≈ 60 µs per contact, in Python loops over
#: rows (measured: ``reverse_landing``, ≈ 6 contacts a step: 0.4 ms batched vs 0.1 ms one by
#: one; spelling balls, hundreds of islands, and a 1133-row island of 100 spheres: 3–10× less
#: assembly batched). Both give the same numbers to the bit, so this only picks the faster.
BATCH_MIN_CONTACTS = 24


# ----------------------------------------------------------------------------- contacts
def _relative(contacts: ContactSet, position, velocity):
    """Relative velocity (A w.r.t. B) at each contact point and relative angular velocity."""
    nc = len(contacts)
    v = np.zeros((nc, 3))
    w = np.zeros((nc, 3))
    for col, sign in ((contacts.body_a, 1.0), (contacts.body_b, -1.0)):
        ok = col >= 0
        idx = col[ok]
        r = contacts.point[ok] - position[idx]
        v[ok] += sign * (velocity[idx, :3] + np.cross(velocity[idx, 3:], r))
        w[ok] += sign * velocity[idx, 3:]
    return v, w


def align_tangents(
    contacts: ContactSet,
    position: np.ndarray,
    velocity: np.ndarray,
    delta: float,
    delta_angular: float,
    preferred: np.ndarray | None = None,
    preferred_roll: np.ndarray | None = None,
) -> ContactSet:
    """Tangent bases per Handle-Contact lines 2–5: ``t1`` along the tangential relative velocity
    when it exceeds δ, else along the user's direction (``preferred``, rows of zeros for none),
    else the contact's own; the same for the rolling axis with the relative angular velocity."""
    if not len(contacts):
        return contacts
    n = contacts.normal
    v, w = _relative(contacts, position, velocity)
    vt = v - np.sum(v * n, axis=1, keepdims=True) * n
    wt = w - np.sum(w * n, axis=1, keepdims=True) * n
    t1 = contacts.tangent.copy()
    r1 = contacts.roll_axis.copy()
    if preferred is not None:
        has = np.linalg.norm(preferred, axis=1) > 0
        t1[has] = tangent_basis(n[has], preferred[has])
    if preferred_roll is not None:
        has = np.linalg.norm(preferred_roll, axis=1) > 0
        r1[has] = tangent_basis(n[has], preferred_roll[has])
    slide = np.linalg.norm(vt, axis=1) > delta
    t1[slide] = vt[slide] / np.linalg.norm(vt[slide], axis=1, keepdims=True)
    roll = np.linalg.norm(wt, axis=1) > delta_angular
    r1[roll] = wt[roll] / np.linalg.norm(wt[roll], axis=1, keepdims=True)
    return contacts.with_tangents(t1, r1)


def record_overlaps(contacts: ContactSet, rep: StepReport) -> None:
    """Put the deepest interpenetration of ``contacts`` into ``rep`` (its ``overlap_*`` fields:
    PyBullet's signed distances, negative for penetration; body–body and body–static apart)."""
    if not len(contacts):
        return
    d = contacts.distance
    for static, depth_field, pair_field in (
        (False, "overlap_bodies", "overlap_bodies_pair"),
        (True, "overlap_static", "overlap_static_pair"),
    ):
        mine = np.flatnonzero((contacts.body_b < 0) == static)
        if not len(mine):
            continue
        k = mine[int(np.argmin(d[mine]))]
        if d[k] < 0:
            setattr(rep, depth_field, float(-d[k]))
            setattr(rep, pair_field, (int(contacts.body_a[k]), int(contacts.body_b[k])))


def _kinetic(rigid: RigidBodies, q: np.ndarray, velocity: np.ndarray) -> float:
    """Kinetic energy (J) of 6-vector velocities at orientations ``q`` (moving bodies)."""
    m = rigid.moving
    v, w = velocity[m, :3], velocity[m, 3:]
    iw = world_inertia(rigid.inertia[m], q[m])
    return float(
        0.5 * np.sum(rigid.mass[m] * np.einsum("ni,ni->n", v, v))
        + 0.5 * np.einsum("ni,nij,nj->", w, iw, w)
    )


# ----------------------------------------------------------------------------- heuristics
def blend_weight(elapsed: float, duration: float) -> float:
    """Weight of restitution 1 after an elastic collision ``elapsed`` seconds ago (reverse time):
    1 at the collision, 0 after ``duration``, a raised cosine in between (smooth at both ends)."""
    if duration <= 0 or elapsed >= duration:
        return 0.0
    return 0.5 * (1.0 + np.cos(np.pi * max(elapsed, 0.0) / duration))


# ----------------------------------------------------------------------------- stepper
ContactSource = Callable[[np.ndarray, np.ndarray], ContactSet]


def _collector_paused(step):
    """Run a step with Python's cyclic garbage collector paused (and restored as it was).

    A step allocates tens of thousands of small containers (the poses handed to PyBullet, the
    islands' index lists), none of them in reference cycles; each 700 allocations start a
    young-generation collection and every hundredth or so a full one, which walks every object
    of the process (measured: "LO" spelling scene, 150 steps, 1.5 s of 5 s in the collector,
    1.1 s of it in 4 full collections). Paused, the collector runs once after the step on what
    the step left alive. Memory is unchanged (reference counting frees everything acyclic)
    and so are the numbers."""

    @functools.wraps(step)
    def paused(*args, **kwargs):
        if not gc.isenabled():
            return step(*args, **kwargs)
        gc.disable()
        try:
            return step(*args, **kwargs)
        finally:
            gc.enable()

    return paused


@dataclass(frozen=True)
class StepperMemory:
    """What :meth:`Stepper.memory` copies: everything a backward step changes in the stepper
    besides the state it returns."""

    #: island key -> the LCP basis its last solve ended on (the next step's warm start)
    warm: dict[tuple, np.ndarray]
    #: body-pair code -> reverse time of the pair's last elastic collision, s
    elastic: dict[int, float]
    #: reverse time of the steps taken, s
    reverse_time: float


class Stepper:
    """Steps a system forward or backward.

    Parameters
    ----------
    rigid : RigidBodies
    contact_source : callable
        ``contact_source(position, orientation) -> ContactSet`` at a configuration.
    settings : StepSettings
    joints : JointModel, optional
    free_override : ndarray of int, shape (n,), optional
        Per body: 1 free to bounce, 0 constrained, −1 decided by :func:`free_bodies` (the
        user's override of §4 "Stacking").
    """

    def __init__(
        self,
        rigid: RigidBodies,
        contact_source: ContactSource,
        settings: StepSettings,
        joints: JointModel | None = None,
        free_override: np.ndarray | None = None,
    ):
        self.rigid = rigid
        self.contact_source = contact_source
        self.settings = settings
        self.joints = joints
        n = len(rigid.mass)
        self.free_override = (
            np.full(n, -1, dtype=int) if free_override is None else np.asarray(free_override)
        )
        #: Reverse time of the backward steps taken so far, s.
        self.reverse_time = 0.0
        # body pair (its code, _pair_codes) -> reverse time of its last elastic collision
        self._elastic: dict[int, float] = {}
        # articulated groups: bodies linked by chains of joints (−1 where none)
        self._group = np.full(n, -1, dtype=int)
        if joints is not None and joints.joints:
            linked = np.zeros(n, dtype=bool)
            for a, b in joints.pairs():
                for body in (a, b):
                    if body >= 0:
                        linked[body] = True
            for k, members in enumerate(find_islands(n, linked, joints.pairs())):
                self._group[members] = k
        self._warm: dict[tuple, np.ndarray] = {}
        # 1/kg of the bodies a separation may move (StepSettings.separate); 0 for static ones
        self._inverse_mass = np.divide(
            1.0, rigid.mass, out=np.zeros(n), where=rigid.moving & (rigid.mass > 0)
        )

    # ------------------------------------------------------------------ public
    def memory(self) -> StepperMemory:
        """A copy of what a backward step changes in the stepper besides the state: the warm
        starts per island, the elastic collisions' times and the reverse time. With
        :meth:`restore`, a step can be taken again from the same stepper (to replay it with
        another answer of the same LCP, or to branch a run)."""
        return StepperMemory(
            warm={k: v.copy() for k, v in self._warm.items()},
            elastic=dict(self._elastic),
            reverse_time=self.reverse_time,
        )

    def restore(self, memory: StepperMemory) -> None:
        """Put back what :meth:`memory` copied (copied again: one memory restores many times)."""
        self._warm = {k: v.copy() for k, v in memory.warm.items()}
        self._elastic = dict(memory.elastic)
        self.reverse_time = memory.reverse_time

    @_collector_paused
    def backward(
        self,
        state: State,
        goals: Callable[[ContactSet, np.ndarray, np.ndarray], tuple] | None = None,
        contacts: ContactSet | None = None,
    ) -> tuple[State, StepReport]:
        """One step from ``t`` to ``t − h``.

        ``goals(contacts, position, velocity) -> (Goals, preferred_tangent, preferred_roll)``
        supplies the user's goal velocities for the contacts found; ``contacts`` overrides
        detection (tests use it to step with known contacts).
        """
        s, rigid = self.settings, self.rigid
        rep = StepReport()
        t0 = time.perf_counter()
        cfg = backward_configuration(
            state, rigid, s.dt, max_iter=s.max_fixed_point, strict=s.orientation_strict
        )
        x, q, w_move = cfg.position, cfg.orientation, cfg.angular_velocity
        rep.fixed_point_iterations = cfg.iterations
        rep.orientation_residual = cfg.residual
        rep.orientation_converged = cfg.converged
        velocity = np.concatenate([state.linear_velocity, w_move], axis=1)
        velocity[~rigid.moving] = 0.0
        controlled = s.linear_damping > 0 or s.angular_damping > 0 or s.slip_damping > 0
        energy_before = _kinetic(rigid, q, velocity) if controlled else 0.0
        if s.linear_damping > 0:  # §4 "High angular velocities": backward damping
            velocity[:, :3] *= np.exp(-s.linear_damping * s.dt)
        if s.angular_damping > 0:
            velocity[:, 3:] *= np.exp(-s.angular_damping * s.dt)
        t1 = time.perf_counter()
        rep.timing["integration"] += t1 - t0
        if contacts is None:
            contacts = self.contact_source(x, q)
        if s.separate and len(contacts):
            before = float(-contacts.distance.min())
            x, contacts, rep.separation_sweeps = separate_overlaps(contacts, x, self._inverse_mass)
            if rep.separation_sweeps:
                rep.separated = max(before - float(-contacts.distance.min()), 0.0)
        record_overlaps(contacts, rep)
        if s.slip_damping > 0:  # §4 "Rolling": round bodies roll without slipping backward
            velocity = remove_slip(
                contacts,
                x,
                velocity,
                rigid.moving,
                rigid.force,
                rigid.mass,
                rigid.inertia,
                slip_decay(s.slip_damping, s.dt),
            )
        if controlled:
            rep.control_energy = energy_before - _kinetic(rigid, q, velocity)
        contacts = self._blend_restitution(contacts, rep)
        if s.joint_unit_restitution:
            contacts = self._articulated_restitution(contacts)
        if s.bounce_apart:
            contacts = self._bounce_apart(contacts, x, velocity, rep)
        if s.bounce_cap < math.inf:
            contacts = self._cap_bounces(contacts, x, velocity, rep)
        g, pref, pref_roll = (None, None, None)
        if goals is not None:
            g, pref, pref_roll = goals(contacts, x, velocity)
        attract = None
        if len(contacts) and (s.free_to_bounce or s.attract):
            constrained = self._constrained(contacts)
            rep.constrained = int(np.sum(constrained))
            if s.free_to_bounce and g is not None:
                g = self._drop_goals(contacts, constrained, g, rep)
            if s.attract:
                speed = np.linalg.norm(velocity[:, :3], axis=1)
                spin = np.linalg.norm(velocity[:, 3:], axis=1)
                at_rest = (speed <= s.delta) & (spin <= s.delta_angular)
                attract = between_held(contacts, constrained & at_rest, rigid.moving)
        contacts = align_tangents(contacts, x, velocity, s.delta, s.delta_angular, pref, pref_roll)
        rep.timing["contacts"] += time.perf_counter() - t1
        new_velocity = self._solve("backward", x, q, velocity, contacts, g, rep, attract)
        self._record_elastic(contacts, rep)
        self.reverse_time += s.dt
        t2 = time.perf_counter()
        # L⁻ = I_w(q⁻) ω⁻ is the stored angular velocity's momentum at q⁻: ω⁻ itself.
        out = State(x, q, new_velocity[:, :3], new_velocity[:, 3:])
        rep.timing["integration"] += time.perf_counter() - t2
        return out, rep

    @_collector_paused
    def forward(self, state: State, contacts: ContactSet | None = None) -> tuple[State, StepReport]:
        """One step from ``t`` to ``t + h`` (the mirror of :meth:`backward`)."""
        s, rigid = self.settings, self.rigid
        rep = StepReport()
        t1 = time.perf_counter()
        x, q = state.position, state.orientation
        velocity = np.concatenate([state.linear_velocity, state.angular_velocity], axis=1)
        velocity[~rigid.moving] = 0.0
        if contacts is None:
            contacts = self.contact_source(x, q)
            contacts = align_tangents(contacts, x, velocity, s.delta, s.delta_angular)
        record_overlaps(contacts, rep)
        rep.timing["contacts"] += time.perf_counter() - t1
        move = self._solve("forward", x, q, velocity, contacts, None, rep)
        t2 = time.perf_counter()
        x_new, q_new, w_new = forward_configuration(x, q, move[:, :3], move[:, 3:], rigid, s.dt)
        out = State(x_new, q_new, move[:, :3], w_new)
        rep.timing["integration"] += time.perf_counter() - t2
        return out, rep

    def survey(self, state: State) -> StepReport:
        """What a step would see at ``state``, without stepping: its contacts (detected at the
        state's configuration as an isolated query: the source's ``fresh`` where it has one,
        :meth:`reverse.runs.contacts.ContactDetector.fresh`), the bodies asleep and the islands that
        would be solved (rows 0, status "none": no LCP is solved). The diagnostics of the
        scene's own state in a reverse run.

        The detection goes through the same PyBullet world as the steps', whose contact points
        persist from one detection to the next: surveying before stepping would change the
        contacts the steps find (measured: a different run from 0.6 s back in the "LO"
        spelling scene), so runs survey after their last step."""
        s, rigid = self.settings, self.rigid
        rep = StepReport()
        x, q = state.position, state.orientation
        velocity = np.concatenate([state.linear_velocity, state.angular_velocity], axis=1)
        velocity[~rigid.moving] = 0.0
        # an isolated detection (reverse.runs.contacts.ContactDetector.fresh) where the source has
        # one
        contacts = getattr(self.contact_source, "fresh", self.contact_source)(x, q)
        record_overlaps(contacts, rep)
        n, nc = len(rigid.mass), len(contacts)
        rep.contacts = nc
        pairs = np.column_stack([contacts.body_a, contacts.body_b]).astype(int)
        jpairs = self.joints.pairs() if self.joints is not None and self.joints.joints else []
        links = np.concatenate([pairs, np.reshape(jpairs, (-1, 2))]).astype(int)
        awake = awake_bodies(
            rigid.moving,
            velocity,
            contacts,
            pairs,
            jpairs,
            Goals.zeros(nc),
            np.zeros(nc, dtype=bool),
            delta=s.delta,
            delta_angular=s.delta_angular,
            sleep=s.sleep,
        )
        rep.sleeping = int(np.sum(rigid.moving & ~awake))
        linked = np.zeros(n, dtype=int)
        for col in (links[:, 0], links[:, 1]):
            np.add.at(linked, col[col >= 0], 1)
        for bodies in find_islands(n, awake, links):
            if len(bodies) == 1 and not linked[bodies[0]]:
                rep.free_flight += 1
                continue
            members = np.zeros(n, dtype=bool)
            members[bodies] = True
            a, b = contacts.body_a, contacts.body_b
            mine = ((a >= 0) & members[np.maximum(a, 0)]) | ((b >= 0) & members[np.maximum(b, 0)])
            rep.islands.append(IslandReport(len(bodies), int(mine.sum()), 0, "none", 0, "", 0.0))
        return rep

    # ------------------------------------------------------------------ bouncing apart
    def _bounce_apart(
        self, contacts: ContactSet, x: np.ndarray, velocity: np.ndarray, rep: StepReport
    ) -> ContactSet:
        """:attr:`StepSettings.bounce_apart`: a contact separating at the end of the step
        (``v_n > δ``) too slowly for a bounce of its restitution (``v_n < e ε``, or ``e = 0``)
        gets the restitution ``min(1, v_n / ε)`` for this step, so that the backward LCP's
        elastic branch (Eq. 7, ``g_n = v_n / e``) makes the bodies approach at ε before it
        rather than move on into each other. A factor 1 + 1e-9 on ε keeps ``v_n / e ≥ ε`` past
        the round-off of the LCP's own ``J u``."""
        if not len(contacts):
            return contacts
        s = self.settings
        v, _ = _relative(contacts, x, velocity)
        vn = np.einsum("ij,ij->i", v, contacts.normal)
        alpha = contacts.restitution
        cut = s.epsilon * (1.0 + 1e-9)
        slow = (vn > s.delta) & ((alpha <= 0) | (vn < cut * alpha))
        if not slow.any():
            return contacts
        lowered = alpha.copy()
        lowered[slow] = np.minimum(1.0, vn[slow] / cut)
        rep.bounced_apart += int(slow.sum())
        return replace(contacts, restitution=lowered)

    def _cap_bounces(
        self, contacts: ContactSet, x: np.ndarray, velocity: np.ndarray, rep: StepReport
    ) -> ContactSet:
        """:attr:`StepSettings.bounce_cap`: a contact separating at ``v_n`` whose backward
        collision would approach at ``v_n / e`` above the cap gets the restitution
        ``min(1, v_n / cap)`` for this step, and a contact that slips loses its friction for the
        step: backward, friction adds the slip it takes forward, so a sliding contact stepped
        back speeds up its bodies' slip and spin at every step (``box_stack5``, seeds 0–4: peak
        spins 61–105 rad/s when only slips above the cap lost their friction, 48–57 rad/s so;
        docs/studies/stacking.md). A contact slips when its tangential speed exceeds what the
        bodies' constant forces give in two steps (:meth:`_slip_floor`; 0.02 m/s for gravity at
        1 ms): below it a contact sticks, held by its friction (a resting stack keeps it)."""
        if not len(contacts):
            return contacts
        cap = self.settings.bounce_cap
        v, _ = _relative(contacts, x, velocity)
        vn = np.einsum("ij,ij->i", v, contacts.normal)
        alpha = contacts.restitution
        fast = (vn > 0) & (alpha > 0) & (vn > cap * alpha)
        slip = np.linalg.norm(v - vn[:, None] * contacts.normal, axis=1)
        sliding = slip > self._slip_floor()
        if not (fast.any() or sliding.any()):
            return contacts
        raised = alpha.copy()
        raised[fast] = np.minimum(1.0, vn[fast] / cap)
        rep.bounces_capped += int(fast.sum())
        mu = contacts.friction.copy()
        mu[sliding] = 0.0
        return replace(contacts, restitution=raised, friction=mu)

    def _slip_floor(self) -> float:
        """The tangential speed (m/s) above which :meth:`_cap_bounces` takes a contact as
        slipping: what the largest constant acceleration of a moving body (gravity, constant
        forces) gives in two steps, as the audit's speed floor is reasoned
        (:data:`reverse.runs.audit.SPEED_FLOOR`)."""
        rigid = self.rigid
        moving = rigid.moving
        if not moving.any():
            return 0.0
        accel = np.linalg.norm(rigid.force[moving], axis=1) / rigid.mass[moving]
        return 2.0 * self.settings.dt * float(np.max(accel))

    # ------------------------------------------------------------------ heuristics (§4)
    def _constrained(self, contacts: ContactSet) -> np.ndarray:
        """Moving bodies in contact that may not start moving (override, else the test)."""
        n = len(self.rigid.mass)
        free = free_bodies(contacts, n)
        free = np.where(self.free_override >= 0, self.free_override > 0, free)
        in_contact = np.zeros(n, dtype=bool)
        for col in (contacts.body_a, contacts.body_b):
            in_contact[col[col >= 0]] = True
        return in_contact & self.rigid.moving & ~free

    def _drop_goals(self, contacts, constrained, g: Goals, rep: StepReport) -> Goals:
        """Goals act only through free bodies: a contact keeps its goals if one of its moving
        bodies is free to bounce (a free block may leave the constrained one below it). Goals a
        hint asked for (``Goals.explicit``) are the user's override and stay, unless a body of
        the contact was declared ``free: false``."""
        a, b = contacts.body_a, contacts.body_b
        moving = self.rigid.moving
        free_a = (a >= 0) & moving[np.maximum(a, 0)] & ~constrained[np.maximum(a, 0)]
        free_b = (b >= 0) & moving[np.maximum(b, 0)] & ~constrained[np.maximum(b, 0)]
        drop = ~(free_a | free_b)
        if g.explicit is not None:
            declared = self.free_override == 0
            pinned = ((a >= 0) & declared[np.maximum(a, 0)]) | (
                (b >= 0) & declared[np.maximum(b, 0)]
            )
            drop &= ~(g.explicit & ~pinned)
        has = (g.normal != 0) | np.any(g.tangential != 0, axis=1) | np.any(g.rolling != 0, axis=1)
        drop &= has
        if not drop.any():
            return g
        rep.goals_dropped = int(drop.sum())
        normal, tangential, rolling = g.normal.copy(), g.tangential.copy(), g.rolling.copy()
        normal[drop] = 0.0
        tangential[drop] = 0.0
        rolling[drop] = 0.0
        return Goals(normal, tangential, rolling, g.explicit)

    def _blend_restitution(self, contacts: ContactSet, rep: StepReport) -> ContactSet:
        """Restitution 1 blended back to its value after an elastic collision of the pair."""
        T = self.settings.restitution_blend
        if T <= 0 or not self._elastic or not len(contacts):
            return contacts
        # The pairs' collision times looked up at once (the recorded pairs' codes sorted), and
        # the raised cosine evaluated once per distinct time (``blend_weight``, scalar, as it
        # was per contact: the same numbers to the bit).
        m = len(self._elastic)
        keys = np.fromiter(self._elastic.keys(), dtype=np.int64, count=m)
        times = np.fromiter(self._elastic.values(), dtype=float, count=m)
        order = np.argsort(keys)
        keys, times = keys[order], times[order]
        want = self._pair_codes(contacts.body_a, contacts.body_b)
        at = np.minimum(np.searchsorted(keys, want), m - 1)
        hit = np.flatnonzero(keys[at] == want)
        if not hit.size:
            return contacts
        t_hit = times[at[hit]]
        weight = np.zeros(len(hit))
        for t in np.unique(t_hit).tolist():
            weight[t_hit == t] = blend_weight(self.reverse_time - t, T)
        keep = weight > 0
        hit, weight = hit[keep], weight[keep]
        if not hit.size:
            return contacts
        alpha = contacts.restitution.copy()
        alpha[hit] = alpha[hit] + (1.0 - alpha[hit]) * weight
        rep.blended += int(hit.size)
        return replace(contacts, restitution=alpha)

    def _articulated_restitution(self, contacts: ContactSet) -> ContactSet:
        """Restitution 1 between bodies of one articulated group (§4 "Joints")."""
        if not len(contacts) or not np.any(self._group >= 0):
            return contacts
        a, b = contacts.body_a, contacts.body_b
        ga = np.where(a >= 0, self._group[np.maximum(a, 0)], -1)
        gb = np.where(b >= 0, self._group[np.maximum(b, 0)], -1)
        same = (ga >= 0) & (ga == gb)
        if not same.any():
            return contacts
        return replace(contacts, restitution=np.where(same, 1.0, contacts.restitution))

    def _pair_codes(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """One integer per unordered body pair: ``lo · (n + 1) + hi`` with a static side (−1)
        as ``n`` (the keys of the elastic collisions' record)."""
        n1 = len(self.rigid.mass) + 1
        return (np.minimum(a, b) % n1) * n1 + np.maximum(a, b) % n1

    def _record_elastic(self, contacts: ContactSet, rep: StepReport) -> None:
        T = self.settings.restitution_blend
        if T <= 0 or rep.branches is None:
            return
        now = self.reverse_time
        hit = np.flatnonzero(np.char.startswith(rep.branches, "elastic"))
        codes = self._pair_codes(contacts.body_a[hit], contacts.body_b[hit])
        self._elastic.update(dict.fromkeys(codes.tolist(), now))
        if len(self._elastic) > 4 * len(self.rigid.mass):  # forget blends that have ended
            self._elastic = {k: t for k, t in self._elastic.items() if now - t < T}

    # ------------------------------------------------------------------ internals
    def _solve(
        self, direction, x, q, velocity, contacts, goals, rep: StepReport, attract=None
    ) -> np.ndarray:
        s, rigid = self.settings, self.rigid
        n = len(rigid.mass)
        nc = len(contacts)
        rep.contacts = nc
        rep.contact_set = contacts
        rep.branches = np.full(nc, "", dtype="U16")
        if goals is None:
            goals = Goals.zeros(nc)
        moving = rigid.moving
        pairs = np.column_stack([contacts.body_a, contacts.body_b]).astype(int)
        jrows = None
        jpairs: list[tuple[int, int]] = []
        if self.joints is not None and self.joints.joints:
            jrows = self.joints.rows(x, q)
            jpairs = self.joints.pairs()
        glued = np.zeros(nc, dtype=bool) if attract is None else np.asarray(attract, dtype=bool)
        awake = awake_bodies(
            moving,
            velocity,
            contacts,
            pairs,
            jpairs,
            goals,
            glued,
            delta=s.delta,
            delta_angular=s.delta_angular,
            sleep=s.sleep,
        )
        rep.sleeping = int(np.sum(moving & ~awake))
        # the islands as arrays: their bodies island after island, and how many each has
        members_all, sizes = island_arrays(
            n, awake, np.concatenate([pairs, np.reshape(jpairs, (-1, 2))])
        )
        out = velocity.copy()
        # World inertias of the awake bodies (the only ones a step reads), row by row the same
        # numbers as for all bodies (rotation_matrix is element-wise, the stacked matmul
        # multiplies slice by slice); the rows of the others stay 0 and are never read.
        Iw = np.zeros((n, 3, 3))
        Iw[members_all] = world_inertia(rigid.inertia[members_all], q[members_all])
        # island of each awake body; a contact belongs to the island of its awake participant(s)
        K = len(sizes)
        b_first = np.cumsum(sizes) - sizes
        first = members_all[b_first]  # each island's smallest body
        b_lo, b_hi = b_first.tolist(), (b_first + sizes).tolist()
        # warm-start keys: an island's bodies as the bytes of their int64 indices (equal keys
        # for equal body lists, as the tuples before them; slicing one bytes object is cheaper
        # than a tuple per island)
        member_bytes = members_all.tobytes()
        width = members_all.itemsize

        def island(k):
            """Island ``k``'s bodies (ascending)."""
            return members_all[b_lo[k] : b_hi[k]]

        label = np.full(n, -1, dtype=int)
        label[members_all] = np.repeat(np.arange(K), sizes)
        a_c, b_c = contacts.body_a, contacts.body_b
        la = np.where(a_c >= 0, label[np.maximum(a_c, 0)], -1)
        lb = np.where(b_c >= 0, label[np.maximum(b_c, 0)], -1)
        c_island = np.where(la >= 0, la, lb)
        order = np.argsort(c_island, kind="stable")
        bounds = np.searchsorted(c_island[order], np.arange(K + 1))
        # Bodies in free flight (an island of one body with no contact and no joint) need no
        # LCP: the step is u ± h M⁻¹ F for all of them at once (Eq. 2, 13 with no impulses).
        in_joint = np.zeros(n, dtype=bool)
        for ja, jb in jpairs:
            in_joint[[j for j in (ja, jb) if j >= 0]] = True
        flying = (sizes == 1) & (bounds[1:] == bounds[:-1]) & ~in_joint[first]
        if flying.any():
            fb = first[flying]
            sign = -1.0 if direction == "backward" else 1.0
            out[fb, :3] = velocity[fb, :3] + sign * s.dt * rigid.force[fb] / rigid.mass[fb, None]
            out[fb, 3:] = (
                velocity[fb, 3:]
                + sign * s.dt * np.linalg.solve(Iw[fb], rigid.torque[fb][..., None])[..., 0]
            )
        rep.free_flight = int(flying.sum())
        # Islands without joints are assembled and solved together (vectorized over contacts
        # and islands, bit-identical to solve_island: reverse.step.batched.solve_island_arrays, its
        # velocities and branches written at once); islands with joints one by one
        # (solve_island), and so is the frictionless retry of a batch island whose LCP failed.
        solid = np.flatnonzero(~flying).tolist()
        jointed = np.zeros(K, dtype=bool)
        for ja, jb in jpairs:
            for j in (ja, jb):
                if j >= 0 and label[j] >= 0:
                    jointed[label[j]] = True
        n_sel = bounds[1:] - bounds[:-1]  # contacts of each island
        n_sel_l = n_sel.tolist()

        def sel_of(k):
            """Island ``k``'s contacts, ascending (the stable sort by island kept their order)."""
            return order[bounds[k] : bounds[k + 1]]

        def key_of(k):
            """Island ``k``'s key of the warm starts (direction, bodies, contact count)."""
            return (direction, member_bytes[width * b_lo[k] : width * b_hi[k]], n_sel_l[k])

        in_batch = ~flying & ~jointed
        if int(n_sel[in_batch].sum()) < BATCH_MIN_CONTACTS:
            in_batch[:] = False  # a few contacts: one call chain each costs less than the batch
        batch = np.flatnonzero(in_batch).tolist()
        slot = np.full(K, -1, dtype=int)  # position of each island in the batch
        answer = None
        if batch:
            ta = time.perf_counter()
            slot[batch] = np.arange(len(batch))
            batch_keys = [key_of(k) for k in batch]
            # the batch islands' bodies and contacts, island after island (members_all and
            # order[bounds[0]:] are laid out island-major)
            answer = _solve_island_arrays(
                direction=direction,
                n_bodies=sizes[in_batch],
                bodies=members_all[np.repeat(in_batch, sizes)],
                n_contacts=n_sel[in_batch],
                contact_index=order[bounds[0] :][np.repeat(in_batch, n_sel)],
                contacts=contacts,
                in_island_a=la == c_island,
                in_island_b=lb == c_island,
                rigid=rigid,
                position=x,
                inertia_world=Iw,
                velocity=velocity,
                dt=s.dt,
                goals=goals,
                epsilon=s.epsilon,
                delta=s.delta,
                delta_angular=s.delta_angular,
                warm_starts=[self._warm.get(key) for key in batch_keys],
                attract=attract,
            )
            out[answer.bodies] = answer.velocity
            rep.branches[answer.contacts] = answer.branch
            rep.timing["lcp"] += answer.lcp_seconds
            rep.timing["assembly"] += time.perf_counter() - ta - answer.lcp_seconds

        def problem(k):
            """The island's contacts (a sleeping or static partner acts as the world) and the
            keyword arguments of solve_island."""
            sel = sel_of(k)
            sub = contacts.subset(sel)
            sub = replace(
                sub,
                body_a=np.where(la[sel] == k, sub.body_a, -1),
                body_b=np.where(lb[sel] == k, sub.body_b, -1),
            )
            gsub = Goals(goals.normal[sel], goals.tangential[sel], goals.rolling[sel])
            asub = None if attract is None else attract[sel]
            jsub, rhs = None, None
            if jrows is not None:
                members = label == k
                keep = [
                    j for j, (a, b) in enumerate(jpairs) if members[a] or (b >= 0 and members[b])
                ]
                if keep:
                    sizes = [JointModel.ROWS[jt.kind] for jt in self.joints.joints]
                    starts = np.concatenate([[0], np.cumsum(sizes)])
                    rows = np.concatenate([np.arange(starts[j], starts[j + 1]) for j in keep])
                    jsub = JointRows(jrows.G[rows], jrows.error[rows])
                    sign = 1.0 if direction == "backward" else -1.0
                    rhs = sign * s.baumgarte * jsub.error / s.dt
            return sub, {
                "direction": direction,
                "bodies": island(k),
                "rigid": rigid,
                "position": x,
                "inertia_world": Iw,
                "velocity": velocity,
                "dt": s.dt,
                "joints": jsub,
                "joint_rhs": rhs,
                "goals": gsub,
                "epsilon": s.epsilon,
                "delta": s.delta,
                "delta_angular": s.delta_angular,
                "attract": asub,
            }

        slots, n_bodies, n_contacts = slot.tolist(), sizes.tolist(), n_sel_l
        n_rows = answer.n_rows.tolist() if answer is not None else []
        if answer is not None:
            # the compiled batch's verified answers, read from its arrays (no LCPResult each)
            batched = answer.batched.tolist()
            pivots, residual = answer.pivots.tolist(), answer.residual.tolist()
            b_at, basis = answer.basis_start.tolist(), answer.basis
        for k in solid:
            j = slots[k]
            sol = None
            if j >= 0:  # solved in the batch: its velocities and branches are in place
                if batched[j]:
                    self._warm[batch_keys[j]] = basis[b_at[j] : b_at[j + 1]]
                    rep.islands.append(
                        IslandReport(
                            n_bodies[k],
                            n_contacts[k],
                            n_rows[j],
                            "solved",
                            pivots[j],
                            "",
                            residual[j],
                        )  # fmt: skip
                    )
                    continue
                res = answer.results[j]
                if res is None:  # no rows
                    rep.islands.append(
                        IslandReport(n_bodies[k], n_contacts[k], 0, "none", 0, "", 0.0)
                    )
                    continue
                if res.status == "solved":
                    self._warm[batch_keys[j]] = res.basis
                    rep.islands.append(
                        IslandReport(
                            n_bodies[k],
                            n_contacts[k],
                            n_rows[j],
                            res.status,
                            res.pivots,
                            res.fallback,
                            float(res.residual),
                        )
                    )
                    continue
                b0, b1 = answer.body_start[j], answer.body_start[j + 1]
                c0, c1 = answer.contact_start[j], answer.contact_start[j + 1]
                sol = IslandSolution(
                    island(k),
                    answer.velocity[b0:b1],
                    np.zeros(c1 - c0),
                    res,
                    int(answer.n_rows[j]),
                    answer.branch[c0:c1],
                )
            bodies, sel, key = island(k), sel_of(k), key_of(k)
            ta = time.perf_counter()
            lcp_time = 0.0
            if sol is None:
                sub, island_problem = problem(k)
                sol = _solve_island(contacts=sub, warm_start=self._warm.get(key), **island_problem)
                lcp_time = sol.lcp_seconds
            verified = True
            if sol.lcp is not None and sol.lcp.status != "solved":
                # The ladder of reverse.lcp.solve failed. Retry the island without friction, rolling
                # and spinning rows: normal rows alone make M = J A Jᵀ positive semidefinite,
                # which Lemke solves whenever the problem is feasible. One step without friction
                # is a bounded error; a failed friction LCP's last iterate is not (it once gave
                # 1e10 m/s). The failure stays in the report, with the retry as its fallback.
                first = sol.lcp
                sub, island_problem = problem(k)
                plain = replace(
                    sub,
                    friction=np.zeros(len(sub)),
                    rolling=np.zeros(len(sub)),
                    spinning=np.zeros(len(sub)),
                )
                retry = _solve_island(contacts=plain, **island_problem)
                lcp_time += retry.lcp_seconds
                retry_ok = _solved(retry) or retry.lcp is None  # None: no rows left to solve
                used = "frictionless retry " + ("solved" if retry_ok else "failed")
                if retry_ok:
                    sol = replace(retry, lcp=replace(first, fallback=_join(first.fallback, used)))
                else:
                    sol = replace(sol, lcp=replace(first, fallback=_join(first.fallback, used)))
                    verified = False
            elapsed = time.perf_counter() - ta
            rep.timing["lcp"] += lcp_time
            rep.timing["assembly"] += elapsed - lcp_time
            out[bodies] = sol.velocity
            rep.branches[sel] = sol.branch
            if sol.lcp is not None:
                if sol.lcp.status == "solved":
                    self._warm[key] = sol.lcp.basis
                rep.islands.append(
                    IslandReport(
                        len(bodies),
                        len(sel),
                        sol.n_rows,
                        sol.lcp.status,
                        sol.lcp.pivots,
                        sol.lcp.fallback,
                        float(sol.lcp.residual),
                        verified,
                    )
                )
            else:
                rep.islands.append(IslandReport(len(bodies), len(sel), 0, "none", 0, "", 0.0))
        out[~moving] = 0.0
        return out


def _solved(sol: IslandSolution) -> bool:
    return sol.lcp is not None and sol.lcp.status == "solved"


def _join(*parts: str) -> str:
    return ",".join(p for p in parts if p)
