"""The backward stepper's use of the contact-transition table of :mod:`reverse.goals.markov`
(Twigg & James 2008 [1]_ §4): which contacts separate at a drawn drop
(:func:`choose_separating`, :func:`sample_separation`), at which normal goal
(:func:`goal_speed`, Eq. 7–8), and the policy that gives every step's goals
(:class:`MarkovPolicy`: the hints' goals, then the table's drops, semi-Markov segments tracked
per body).

Pure numpy (no PyBullet).

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25 (SIGGRAPH 2008).
"""

from __future__ import annotations

import math

import numpy as np

from reverse.goals.markov import DISTINCT_TOLERANCE, TransitionModel, classify, count_distinct
from reverse.step.dynamics import ContactSet, Goals, perpendicular_pair
from reverse.step.islands import free_bodies

__all__ = [
    "MarkovPolicy",
    "choose_separating",
    "sample_separation",
    "goal_speed",
]


# ----------------------------------------------------------------------------- sampling
def choose_separating(
    points: np.ndarray, normal: np.ndarray, n_keep: int, rng: np.random.Generator
) -> np.ndarray:
    """Which contacts separate so that ``n_keep`` remain.

    [1]_ §4 selects the separating contacts at random; picking a random subset of a face's four
    corners would keep two *diagonal* corners, which is not an edge. Here a direction ``u`` is
    drawn uniformly in the contact plane and the ``n_keep`` points lowest along ``u`` stay: for a
    face they are one corner (vertex) or two adjacent corners (edge), the body tips about them.

    Parameters
    ----------
    points : ndarray, shape (k, 3)
        Contact points, m.
    normal : ndarray, shape (3,)
        Mean contact normal (into the body).
    n_keep : int
        Contacts that stay (0 ≤ n_keep ≤ k).
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of bool, shape (k,)
        True for the contacts that separate.
    """
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    k = len(points)
    if not 0 <= n_keep <= k:
        raise ValueError(f"cannot keep {n_keep} of {k} contacts")
    n = np.asarray(normal, dtype=float)
    n = n / np.linalg.norm(n)
    t1, t2 = perpendicular_pair(n)
    ang = rng.uniform(0.0, 2.0 * np.pi)
    u = math.cos(ang) * t1 + math.sin(ang) * t2
    order = np.argsort(points @ u, kind="stable")
    separate = np.ones(k, dtype=bool)
    separate[order[:n_keep]] = False
    return separate


def sample_separation(
    model: TransitionModel,
    points: np.ndarray,
    normal: np.ndarray,
    rng: np.random.Generator,
    dt: float | None = None,
    age: int | None = None,
    first: bool = False,
) -> tuple[int, np.ndarray, float]:
    """One backward step of the Markov model for one body ([1]_ §4, Fig. 10).

    Counts the body's distinct active contacts (state ``i``), draws ``η^{t−Δt} = j`` and, if
    ``j < i``, which contacts separate and their normal goal speed.

    Parameters
    ----------
    model : TransitionModel
    points : ndarray, shape (k, 3)
        The body's active contact points, m.
    normal : ndarray, shape (3,)
        Mean contact normal into the body.
    rng : numpy.random.Generator
    dt : float, optional
        Step, s (default: the model's).
    age, first : int or None, bool
        The body's time in its contact state, in steps, and whether this is its run's first
        segment (semi-Markov tables: :meth:`TransitionModel.sample_target`).

    Returns
    -------
    target : int
        The drawn state ``j`` (``i`` when nothing changes).
    separate : ndarray of bool, shape (k,)
        Contacts to separate (all False when nothing changes). Points within
        :data:`DISTINCT_TOLERANCE` of each other separate together.
    speed : float
        Normal goal speed of the separating contacts, m/s (0 when nothing changes).
    """
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    k = len(points)
    separate = np.zeros(k, dtype=bool)
    if k == 0:
        return 0, separate, 0.0
    # duplicates (the same corner reported twice) are one contact
    rep = np.full(k, -1)
    distinct: list[int] = []
    for m in range(k):
        for d in distinct:
            if np.linalg.norm(points[m] - points[d]) <= DISTINCT_TOLERANCE:
                rep[m] = d
                break
        else:
            distinct.append(m)
            rep[m] = m
    state = int(classify(len(distinct)))
    if age is None:  # the Markov call, as before: the same draws
        target = model.sample_target(state, rng, dt)
    else:
        target = model.sample_target(state, rng, dt, age=age, first=first)
    if target >= state:
        return state, separate, 0.0
    sep_distinct = choose_separating(points[distinct], normal, target, rng)
    separated = {d for d, s in zip(distinct, sep_distinct, strict=True) if s}
    separate = np.array([rep[m] in separated for m in range(k)])
    return target, separate, model.sample_speed(state, target, rng)


class MarkovPolicy:
    """Goals of each backward step: the hints' goals, plus normal goals drawn from a
    :class:`TransitionModel` for every body in contact that no hint acts on this step ([1]_ §4).

    A body takes part only if it is "free to bounce" ([1]_ §4 "Stacking"): the contact normals
    into it do not oppose (:func:`reverse.step.islands.free_bodies`; a body pressed from two sides
    is not). Each step, per body in scene order: count its distinct contacts, draw the transition
    (:func:`sample_separation`), and give the separating contacts the drawn normal goal
    (:func:`goal_speed`: within ``[α ε, ε)`` where the contact has restitution α).

    Parameters
    ----------
    model : TransitionModel
    hints : callable
        The hint policy (:class:`reverse.goals.hints.HintPolicy`); its goals come first.
    rng : numpy.random.Generator
    dt : float
        Step of the run, s (the model's probabilities are rescaled to it).
    epsilon : float
        Restitution cut-off ε, m/s.

    With a semi-Markov table (:attr:`TransitionModel.hazards`) the policy also keeps, per body,
    its current contact segment: the state it counted at the last call, how many calls in a
    row it has counted it (the age, in steps) and whether the segment is the run's first (the
    final rest). It is called once per backward step
    (:meth:`reverse.step.stepper.Stepper.backward`),
    so its calls are the run's steps; a body with no contacts is in state 0.

    Attributes
    ----------
    transitions : int
        Drops drawn so far.
    segments : dict
        Semi-Markov tables only: ``body -> [state, age, first]`` after the last call.
    """

    def __init__(
        self,
        model: TransitionModel,
        hints,
        rng: np.random.Generator,
        dt,
        epsilon,
    ):
        self.model = model
        self.hints = hints
        self.rng = rng
        self.dt = float(dt)
        self.epsilon = float(epsilon)
        self.transitions = 0
        self.segments: dict[int, list] = {}

    def _track(self, contacts: ContactSet, n_bodies: int) -> None:
        """Update each body's segment from this step's contacts (semi-Markov tables)."""
        for j in range(n_bodies):
            mine = (contacts.body_a == j) | (contacts.body_b == j)
            state = int(classify(count_distinct(contacts.point[mine]))) if mine.any() else 0
            seg = self.segments.get(j)
            if seg is None:
                self.segments[j] = [state, 0, True]
            elif seg[0] != state:
                self.segments[j] = [state, 0, False]
            else:
                seg[1] += 1

    def __call__(self, contacts: ContactSet, position, velocity):
        goals, pref, pref_roll = self.hints(contacts, position, velocity)
        k = len(contacts)
        semi = self.model.hazards is not None
        if semi:
            self._track(contacts, int(np.shape(position)[0]))
        if k == 0:
            return goals, pref, pref_roll
        hinted = np.zeros(k, dtype=bool)
        if isinstance(goals, Goals):
            hinted = goals.per_contact()
        bodies = np.unique(np.concatenate([contacts.body_a, contacts.body_b]))
        free = free_bodies(contacts, int(bodies.max()) + 1) if bodies.size else np.zeros(0, bool)
        for j in bodies[bodies >= 0]:
            sign = np.where(contacts.body_a == j, 1.0, np.where(contacts.body_b == j, -1.0, 0.0))
            mine = np.flatnonzero(sign != 0)
            if np.any(hinted[mine]):
                continue  # a hint decides this body's step
            normals = contacts.normal[mine] * sign[mine, None]  # from the other body into j
            if not free[j]:  # §4 "Stacking" of [1]: only bodies free to bounce leave
                continue
            mean = normals.sum(axis=0)
            history = {}
            if semi:
                _, age, first = self.segments[int(j)]
                history = {"age": age, "first": first}
            target, separate, speed = sample_separation(
                self.model, contacts.point[mine], mean, self.rng, self.dt, **history
            )
            if not separate.any():
                continue
            self.transitions += 1
            for i in mine[separate]:
                goals.normal[i] = goal_speed(speed, contacts.restitution[i], self.epsilon)
        return goals, pref, pref_roll


def goal_speed(speed: float, restitution: float, epsilon: float) -> float:
    """The normal goal, m/s, for a drawn separation ``speed`` at a contact of ``restitution`` α.

    Where α > 0 the goal is kept in ``[α ε, ε)``: a faster landing would have bounced forward
    ([1]_ §3.1, ``0 < v_goal < ε``, as for bounce hints), and a slower one leaves a backward
    arrival of that contact below the elastic branch of Eq. 7 (``v_n / α ≥ ε``), where the
    backward step gives it no impulse and the body sinks into the ground. Where α = 0 the drawn
    speed is used as it is.
    """
    if restitution <= 0:
        return float(speed)
    # Eq. (7)-(8) in [1]: α ε ≤ v_goal < ε
    return float(min(max(speed, restitution * epsilon), np.nextafter(epsilon, 0.0)))
