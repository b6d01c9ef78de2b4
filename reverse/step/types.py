"""The settings and reports of a step of :class:`reverse.step.stepper.Stepper` (Twigg & James 2008
[1]_ §2–§4): what a step is told (:class:`StepSettings`: the time step, the solver's options and the
§4 plausibility controls) and what it says it did (:class:`StepReport`, one
:class:`IslandReport` per island). Plain data, kept apart from the step itself so that the stepper
module holds only the step.

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25, 2008.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from reverse.step.dynamics import ContactSet

__all__ = ["StepSettings", "IslandReport", "StepReport", "TOUCH_TOLERANCE"]

#: Largest gap (m) at which a contact takes part in a step: PyBullet's own allowance per contact
#: (measured: every contact is allowed 1e-5 m of approach), far below any visible gap. The
#: contact detector (:mod:`reverse.runs.contacts`) reports no farther points.
TOUCH_TOLERANCE = 1e-5


@dataclass(frozen=True)
class StepSettings:
    """Parameters of a step.

    Attributes
    ----------
    dt : float
        Step, s.
    epsilon : float
        Restitution cut-off ε, m/s (§2.1): slower impacts are inelastic. 0.2 m/s is PyBullet's
        default ``restitutionVelocityThreshold``, so the two engines' laws agree.
    delta : float
        δ ≪ ε, m/s: normal velocities below it are "resting", tangential ones "sticking"
        (Handle-Contact). 1e-4 m/s is far above the round-off of a resting body (1e-12) and far
        below any motion a viewer shows.
    delta_angular : float
        The same cut-off for rolling and spinning, rad/s.
    baumgarte : float
        Fraction of a joint's position error removed per step (0: none). Its sign is reversed
        backward (§4 "Joints").
    sleep : bool
        Let islands at rest with no goals skip the solve.
    max_fixed_point : int
        Iteration cap of the backward orientation solve: of its fixed-point iteration, and of
        each Newton attempt for the bodies where that does not converge
        (:mod:`reverse.step.integration`). 50, as before: a thin plank (1 × 0.1 × 0.02 m) at
        ``h|ω|`` = 0.1 rad takes 23 fixed-point iterations, and a Newton attempt that succeeds
        6–15.
    orientation_strict : bool
        True (default): the orientation's fixed point stops at 1e-15, as the first
        implementation did (runs bit-identical to it). False: at 1e-14
        (:func:`reverse.step.integration.backward_configuration` ``strict``): fast-spinning balls
        then take a few iterations instead of the cap of 50 (round-off keeps their change just
        above 1e-15, in cycles the strict solve recognises and skips). Not a last-bits change
        on a chaotic scene: on the 3 s spelling run (3875 balls) states first differ 62 steps
        back, by 3 cm at 150 steps and by 6.4 m at the earliest state.
    free_to_bounce : bool
        Backward only, §4 "Stacking": automatic goals (the Markov model) may start a body at
        rest moving only if it is *free to bounce* — no two of its contact normals oppose
        (:func:`free_bodies`); goals on the contacts of constrained bodies (the lower blocks of
        a stack) are dropped, so objects leave a pile from the top. A hint's goals are the
        user's override and act anyway, unless the body was declared ``free: false``.
    attract : bool
        Backward only, §4 "Stacking": the resting contacts *between* constrained bodies at
        rest, and between such a body and a static one, may carry a negative normal impulse
        (the paper's non-physical "attraction") and hold their tangential velocity at its goal
        (:func:`reverse.step.dynamics.solve_island`), which keeps a stack from flying apart when its
        top is knocked off backward (Fig. 6). A contact with a free or a moving body never
        attracts: the top block may leave, and pushes on the glued stack below as it does. A
        body held at rest this way is not woken by the bodies pushing on it (it is static for
        their island, which is what the glue gives it).
    restitution_blend : float
        Backward only, §4 "Rapid velocity growth": after an elastic collision between two
        bodies their restitution is set to 1 and blended back to its value over this many
        seconds (raised-cosine), so bodies rattling between others do not gain energy at every
        micro-collision. 0 (default) keeps Newton's law exact (and the round trips).
    angular_damping, linear_damping : float
        Backward only, §4 "High angular velocities": rates (1/s) of a non-physical damping
        applied backward, ``ω ← ω e^(−c h)`` and ``v ← v e^(−c h)`` before each backward LCP
        (which then restores the contact constraints). 0 (default): none.
    joint_unit_restitution : bool
        Backward only, §4 "Joints and constraints": contacts between bodies connected by a
        chain of joints get restitution 1, so the articulated bodies rebound off each other
        without the backward energy growth (the paper's "highly unappealing" but working
        heuristic).
    bounce_apart : bool
        Backward only: a contact separating at the end of a step too slowly for a bounce of its
        restitution (``δ < v_n < e ε``, or ``e = 0``), which Eq. 7 leaves without impulse so
        that the bodies move on into each other backward, bounces at the cut-off: its
        restitution for the step is lowered to ``v_n / ε``, and the backward LCP's elastic
        branch makes the bodies approach at ε before it. A collision more inelastic than the
        material's: it loses energy forward. Measured on the "LO" spelling run
        (``docs/studies/keep-apart.md``): deepest overlap 37 → 14 mm, peak spin 471 → 81 rad/s,
        forward energy gain 0.44 → 0.018 J, 1.3× the wall time. Off (default): the steps are
        exact mirrors of forward ones.
    bounce_cap : float
        Backward only, m/s: a backward collision (Eq. 7's elastic branch, the approach
        ``v_n / e``) faster than this collides more elastically instead — its restitution for the
        step is raised to ``v_n / bounce_cap``, at most 1 — so that a body bouncing backward
        stops gaining speed at the cap (the bounce pump of §4 "Rapid velocity growth" bounded);
        a contact that slips (faster than its bodies' constant forces give in two steps) is
        frictionless for the step, so backward friction stops adding slip and spin. A collision with more restitution or less friction
        than the material's loses less energy forward; it never gains any (``e ≤ 1``).
        ``inf`` (default): none.
    separate : bool
        Backward only: the overlap the step's configuration brings is pushed out along the
        contact normals before its velocities are solved
        (:func:`reverse.step.separation.separate_overlaps`, the backward counterpart of a forward
        engine's position correction); velocities and orientations are left alone. Off
        (default): the steps are exact mirrors of forward ones.
    slip_damping : float
        Backward only, §4 "Rolling": rate (1/s) at which the slip of a round body (a ball) at its
        static support decays backward, through its angular velocity alone, before each backward
        LCP (:func:`reverse.step.rolling.remove_slip`); ``math.inf`` removes it, so balls roll
        without
        slipping instead of slipping and spinning faster at every step. 0 (default): none.
    """

    dt: float
    epsilon: float = 0.2
    delta: float = 1e-4
    delta_angular: float = 1e-4
    baumgarte: float = 0.1
    sleep: bool = True
    max_fixed_point: int = 50
    orientation_strict: bool = True
    free_to_bounce: bool = True
    attract: bool = False
    restitution_blend: float = 0.0
    angular_damping: float = 0.0
    linear_damping: float = 0.0
    joint_unit_restitution: bool = False
    slip_damping: float = 0.0
    bounce_apart: bool = False
    bounce_cap: float = math.inf
    separate: bool = False


@dataclass
class IslandReport:
    n_bodies: int
    n_contacts: int
    n_rows: int
    status: str  # LCP status, "none" (no rows)
    pivots: int
    fallback: str
    residual: float
    #: The velocities used come from a verified answer: the LCP's, or its frictionless retry's
    #: when the LCP failed (``fallback`` ends "frictionless retry solved"). False: neither
    #: verified, the bodies would move with an unverified iterate.
    verified: bool = True


@dataclass
class StepReport:
    contacts: int = 0
    sleeping: int = 0
    islands: list[IslandReport] = field(default_factory=list)
    #: Backward: iterations of the orientation solve (:func:`backward_configuration`: the
    #: fixed point's, plus the most Newton iterations of a body it did not converge for).
    fixed_point_iterations: int = 0
    #: Backward: largest residual of the orientation solve (quaternion components).
    orientation_residual: float = 0.0
    #: Backward: every body's orientation solve converged (False: the state is not a solution
    #: of the backward step; :func:`reverse.runs.run.run_reverse` stops with a non-``ok`` status).
    orientation_converged: bool = True
    timing: dict[str, float] = field(
        default_factory=lambda: {"contacts": 0.0, "assembly": 0.0, "lcp": 0.0, "integration": 0.0}
    )
    contact_set: ContactSet | None = None
    branches: np.ndarray | None = None
    #: Backward: moving bodies in contact that were not free to bounce (§4 "Stacking").
    constrained: int = 0
    #: Backward: goals dropped because their bodies were constrained.
    goals_dropped: int = 0
    #: Backward: contacts whose restitution was raised by the micro-collision blend.
    blended: int = 0
    #: Backward: slowly separating contacts given a bounce at the cut-off
    #: (:attr:`StepSettings.bounce_apart`).
    bounced_apart: int = 0
    #: Backward: contacts whose backward collision was capped (:attr:`StepSettings.bounce_cap`).
    bounces_capped: int = 0
    #: Backward: deepest overlap (m) pushed out of the step's configuration, and the sweeps it
    #: took (:attr:`StepSettings.separate`; 0 when off or nothing overlapped).
    separated: float = 0.0
    separation_sweeps: int = 0
    #: Bodies stepped in free flight (no contact, no joint: no island, no LCP).
    free_flight: int = 0
    #: Deepest interpenetration (m, ≥ 0) among the contacts detected at the step's configuration
    #: (backward: the start-of-step one, the state the step produces), between two moving bodies
    #: and between a moving body and a static one, with the body pairs (``(a, b)``, b = −1 for
    #: the static world; ``(-1, -1)`` for none). The physical audit of a run
    #: (:mod:`reverse.runs.audit`) reads them.
    overlap_bodies: float = 0.0
    overlap_static: float = 0.0
    overlap_bodies_pair: tuple[int, int] = (-1, -1)
    overlap_static_pair: tuple[int, int] = (-1, -1)
    #: Backward: kinetic energy (J) the step's velocity controls took from the end-of-step
    #: velocity before its LCP (damping, slip removal: :class:`StepSettings`) — in forward time
    #: the energy they inject, as the LCP's answer leads to the damped velocity, not the state's.
    control_energy: float = 0.0

    @property
    def failed(self) -> int:
        return sum(r.status not in ("solved", "none") for r in self.islands)

    @property
    def fallbacks(self) -> int:
        return sum(bool(r.fallback) for r in self.islands)

    @property
    def unsolved(self) -> int:
        """Islands whose velocities come from no verified answer (see
        :attr:`IslandReport.verified`)."""
        return sum(not r.verified for r in self.islands)
