"""Configuration update of a velocity-level step of Twigg & James 2008 [1]_ (§2.1, and its mirror
§3.3, Eq. 11–12): where the bodies are at the start of a backward step, or at the end of a forward
one. The velocities come from the contact LCP (:func:`reverse.step.dynamics.solve_island`); the step
loop is :class:`reverse.step.stepper.Stepper`.

Time stepping (semi-implicit Euler, the scheme of [1]_ §2.1 and its mirror §3.3)
-------------------------------------------------------------------------------
Forward, from ``(x⁻, q⁻, v⁻, ω⁻)``:

1. ``L⁻ = I_w(q⁻) ω⁻``; the LCP (:func:`reverse.step.dynamics.solve_island`) gives the moving
   velocity ``u_move = (v⁺, ω_m)`` with ``I_w(q⁻) ω_m = L⁻ + h τ + impulses`` — Eq. 11 and the
   angular-momentum form of Eq. 12, ``L⁺ = L⁻ + h τ``;
2. ``x⁺ = x⁻ + h v⁺``, ``q⁺ = exp(h ω_m) ⊗ q⁻`` (exponential map);
3. ``ω⁺ = I_w(q⁺)⁻¹ L⁺`` — angular momentum is carried across the rotation, so a torque-free
   body conserves ``L`` exactly and precesses correctly (no explicit gyroscopic term).

Backward, from ``(x⁺, q⁺, v⁺, ω⁺)``:

1. ``L⁺ = I_w(q⁺) ω⁺``; ``q⁻`` solves ``q⁻ = exp(−h I_w(q⁻)⁻¹ L⁺) ⊗ q⁺`` (fixed-point iteration,
   to 1e-15; none for bodies with isotropic inertia, whose solution is explicit:
   ``ω_m = ω⁺``, ``q⁻ = exp(−h ω⁺) ⊗ q⁺``; a safeguarded Newton solve for the bodies where it
   does not converge, below), ``ω_m = I_w(q⁻)⁻¹ L⁺``,
   ``x⁻ = x⁺ − h v⁺`` — the start-of-step configuration is known *before* the LCP;
2. contacts are found at ``(x⁻, q⁻)`` — where the forward step would find them;
3. the backward LCP (Eq. 13–15, goals of Eq. 7–10) gives ``u⁻``.

So a backward step followed by a forward step with the same contacts returns the state exactly
up to the LCP's and the fixed point's round-off, for rotating bodies too.

The orientation solve
---------------------
The fixed-point map ``G(q) = exp(−h I_w(q)⁻¹ L⁺) ⊗ q⁺`` is a contraction only while ``h|ω|`` is
small against the inertia's anisotropy: for a thin plank it stops converging near
``h|ω| ≈ 0.5`` rad (issue 15: its last iterate, returned silently, carried an ``ω`` of the
*previous* iterate, and the angular momentum grew from 0.239 to 2.7e57 in free flight). So:

* the fixed point runs as before (its results are unchanged wherever it converged);
* bodies whose last change is above :data:`FIXED_POINT_TOL` are solved by Newton's method on
  the rotation-vector residual ``e(q) = log(G(q) ⊗ q̄)`` (:func:`_newton_orientation`), with a
  finite-difference Jacobian and backtracking on ``|e|``; if that fails, by continuation in the
  step (``h/8, 2h/8, …, h``, each stage a Newton solve from the previous one), which follows
  the branch of solutions that starts at ``q⁺`` for ``h = 0``. Both solve the same equation as
  the fixed point, so the forward step from the result returns to ``q⁺``;
* for those bodies ``ω_m = I_w(q⁻)⁻¹ L⁺`` at the *returned* ``q⁻``, so ``I_w(q⁻) ω_m = L⁺``
  to round-off whatever ``h|ω|``: torque-free flight conserves angular momentum;
* a body whose residual stays above :data:`NEWTON_TOL` after the cap of iterations is reported
  (:attr:`BackwardConfiguration.converged` False), and a reverse run stops there with a status
  that is not ``ok`` (:func:`reverse.runs.run.run_reverse`).

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25, 2008.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from reverse.step.dynamics import RigidBodies, quat_exp, quat_multiply, world_inertia
from workbench.sim.state import State

__all__ = [
    "FIXED_POINT_TOL",
    "NEWTON_TOL",
    "BackwardConfiguration",
    "backward_configuration",
    "forward_configuration",
]

#: Convergence of the fixed-point iteration: the largest change of a quaternion component in
#: one iteration. 1e-15 is a few ulps of a unit quaternion's components: the iteration stops as
#: soon as it has nothing left to gain (unchanged from the first implementation, so that runs
#: where it converges stay bit-identical).
FIXED_POINT_TOL = 1e-15

#: Acceptance of the Newton solve: largest component of ``q − G(q)`` (sign-aligned). The map
#: ``G`` itself is evaluated with a round-off of a few ulps per operation (inertia rotation,
#: 3×3 solve, exponential, product: measured ≤ 3e-16 on a thin plank at ``h|ω|`` = 2 rad), so
#: Newton's residual stalls at a few 1e-16; 1e-14 accepts that floor with a margin of ~30 and
#: is still ~1e-14 rad of orientation per step, far below anything a step resolves. Angular
#: momentum does not depend on it (``ω`` is recomputed at the returned orientation).
NEWTON_TOL = 1e-14

#: Finite-difference step of the Newton Jacobian, rad (central differences: error ~ step² ≈
#: 1e-12 relative, round-off ~ eps/step ≈ 1e-10; either only slows the quadratic convergence to
#: a linear one with rate ~1e-10, two iterations more at most).
_FD_STEP = 1e-6

#: Stages of the continuation in the step length when Newton from the first guess fails: each
#: stage moves ``h|ω|`` by at most ``2/8 = 0.25`` rad at the issue's largest 2 rad per step, inside
#: the range where the plain fixed point already converges.
_CONTINUATION_STAGES = 8

#: Newton iterations from the first guess before the continuation takes over: where Newton
#: converges from it, it takes 6–15 (thin plank, ``h|ω|`` ≤ 3 rad); where it does not, more
#: iterations rarely help (measured: 22–50 iterations ending at residuals 0.09–0.37).
_FIRST_ATTEMPT = 15

#: Halvings of a Newton step before the step is given up (2⁻³⁰ ≈ 1e-9 of a full step).
_BACKTRACK = 30


class BackwardConfiguration(NamedTuple):
    """Start-of-step configuration of a backward step (module docstring, step 1).

    Attributes
    ----------
    position, orientation : ndarray
        ``x⁻`` (n, 3) and ``q⁻`` (n, 4).
    angular_velocity : ndarray
        ``ω_m = I_w(q⁻)⁻¹ L⁺`` (n, 3): the moving angular velocity.
    iterations : int
        Iterations of the orientation solve: fixed-point ones plus, for the bodies where it did
        not converge, the most Newton iterations any of them took.
    residual : float
        Largest remaining residual over the bodies: the last fixed-point change where it
        converged, ``max|q − G(q)|`` of the Newton solve elsewhere.
    converged : bool
        Every body met :data:`FIXED_POINT_TOL` (fixed point) or :data:`NEWTON_TOL` (Newton).
    newton_bodies : int
        Bodies the fixed point did not converge for (solved by Newton).
    """

    position: np.ndarray
    orientation: np.ndarray
    angular_velocity: np.ndarray
    iterations: int
    residual: float
    converged: bool
    newton_bodies: int = 0


def backward_configuration(
    state: State, rigid: RigidBodies, dt: float, *, max_iter: int = 50, strict: bool = True
) -> BackwardConfiguration:
    """``x⁻``, ``q⁻``, ``ω_m`` of a backward step (module docstring, step 1) and how the
    orientation solve went (:class:`BackwardConfiguration`). ``max_iter`` caps the fixed-point
    iterations and, separately, the Newton iterations of each attempt.

    ``strict`` (default): the fixed point stops at :data:`FIXED_POINT_TOL`, as the first
    implementation did, so results are bit-identical to it wherever it converged — but a
    fast-spinning ball's iterates can cycle in round-off just above that tolerance to the cap
    (most steps of the 3 s spelling demo); the cycles are recognised (exact repeats of any
    period), so those iterations cost little. ``strict=False`` stops at :data:`NEWTON_TOL`
    instead: a few iterations, results different in the last bits.
    """
    moving = rigid.moving
    x = state.position - dt * state.linear_velocity * moving[:, None]
    q_plus = state.orientation
    mov = np.flatnonzero(moving)
    # L of the moving bodies (the only rows read), row by row the numbers of all bodies'
    L = np.zeros((len(moving), 3))
    L[mov] = np.einsum(
        "nij,nj->ni",
        world_inertia(rigid.inertia[mov], q_plus[mov]),
        state.angular_velocity[mov],
    )
    w = state.angular_velocity * moving[:, None]
    q = quat_multiply(quat_exp(-dt * w), q_plus)
    iters = 0
    change = np.zeros(len(q))
    converged = not len(q)
    # Each body's iterate depends on its own previous one only (q_k = G(q_{k−1}), ω_k =
    # I_w(q_{k−1})⁻¹ L), so once a body's q repeats an earlier one to the bit, q_k ≡ q_{k−p},
    # its iterates repeat with period p for ever: at rest or settled exactly (p = 1), or cycling
    # in round-off (a fast-spinning ball, whose change stays a few 1e-16 and can keep the loop
    # going to the cap). Such bodies leave the active set; their change at each later iteration
    # (for the convergence test) and their value at the last one come from the stored period.
    # The numbers are those of iterating every body until the last one converges (or to the
    # cap), at the cost of the bodies still moving. Every period is recognised (each iterate is
    # compared with all the body's earlier ones): measured on the 3875 spelling balls (3 s run,
    # the state 1.25 s back), every body repeats within 44 iterations, half within 5, with
    # periods 1–29 (251 bodies above 8, which a search of periods ≤ 8 kept iterating to the
    # cap of 50). Once every body is periodic the loop ends at once (the tests of the later
    # iterations are read from the stored periods).
    n = len(q)
    Hq = np.empty((max_iter + 1, n, 4))  # iterates, changes (untouched rows cost nothing)
    Hw = np.empty((max_iter + 1, n, 3))
    Hc = np.empty((max_iter + 1, n))
    Hq[0] = q
    q, w = q.copy(), w.copy()
    # Static bodies need one iteration, not the loop: their ω iterate is 0 at every iteration
    # (not solved for), so every iterate from the first on is q₁ = exp(−h·0) ⊗ q⁺ (q₀ differs
    # from it at most in the signs of zeros, by 0 in the change); the loop, iterating them,
    # would end with q₁, ω = 0 and a change of |q₁ − q₀| or 0, all 0 — the values set here.
    # They never delay convergence (changes 0), so the iterations and every moving body's
    # numbers are the loop's over all bodies.
    fixed = np.flatnonzero(~moving)
    if fixed.size:
        w_fixed = np.zeros((fixed.size, 3))
        q_fixed = quat_multiply(quat_exp(-dt * w_fixed), q_plus[fixed])
        change[fixed] = np.max(np.abs(q_fixed - q[fixed]), axis=1)
        q[fixed], w[fixed] = q_fixed, w_fixed
    active = mov  # only moving bodies are iterated (``at`` below: all of them, or a subset)
    # Moving bodies with isotropic inertia (I_body = c·1 to the bit: balls) need no iteration
    # either: I_w(q) = R c·1 Rᵀ = c·1 for every q, so the solution of q⁻ = exp(−h I_w(q⁻)⁻¹ L⁺)
    # ⊗ q⁺ is explicit — ω_m = L⁺/c = ω⁺ and q⁻ = exp(−h ω⁺) ⊗ q⁺, the first iterate q₀ above
    # ([1]_ §3.3 with Eq. 12's I_w constant). Iterating only adds round-off to it (I_w(q)
    # computed is c·1 up to a few ulps), and for a fast-spinning ball that round-off cycles
    # just above FIXED_POINT_TOL for up to ~43 iterations a step: 30% of the 3875-ball spelling
    # run (issue 17, fourth round). ω_m = ω⁺ also makes I_w ω_m = L⁺ exact in torque-free
    # flight. Not bit-identical to the loop, whose answer is an iterate within a few ulps of q₀
    # (and, in a scene with balls, the loop's count and so the other bodies' last iterate can
    # change within FIXED_POINT_TOL); reverse/step/integration.py's tests bound both per step.
    iso = mov[_isotropic(rigid.inertia[mov])]
    if iso.size:
        change[iso] = 0.0  # q[iso], w[iso] are q₀ and ω⁺ already
        active = np.setdiff1d(mov, iso, assume_unique=True)
    # The periodic bodies, their iteration k0 and period p (one entry per body, so that each
    # iteration looks their changes up in one indexing however many groups there are).
    per_body = np.zeros(0, dtype=int)
    per_k0 = np.zeros(0, dtype=int)
    per_p = np.ones(0, dtype=int)

    def in_period(k0: np.ndarray, p: np.ndarray, now) -> np.ndarray:
        """The stored iterations whose values bodies periodic from ``k0`` have at ``now`` (an
        iteration, or a column of them: one row each)."""
        r = (now - k0) % p
        return np.where(r == 0, k0, k0 - p + r)

    tol = FIXED_POINT_TOL if strict else NEWTON_TOL
    for k in range(1, max_iter + 1):
        iters = k
        largest = 0.0
        if active.size:
            at = slice(None) if active.size == n else active  # views while all are active
            qa = q[at].copy()
            # every active body moves (the static ones never enter the loop): the solve runs
            # on all rows as they are, the numbers of the masked copies it replaced
            Iw = world_inertia(rigid.inertia[at], qa)
            w_new = np.linalg.solve(Iw, L[at][..., None])[..., 0]
            q_new = quat_multiply(quat_exp(-dt * w_new), q_plus[at])
            ch = np.max(np.abs(q_new - qa), axis=1)
            Hq[k, at], Hw[k, at], Hc[k, at] = q_new, w_new, ch
            q[at], w[at], change[at] = q_new, w_new, ch
            largest = float(np.max(ch))
        if per_body.size and largest <= tol:  # (above it, the periodic ones cannot matter)
            largest = max(largest, float(np.max(Hc[in_period(per_k0, per_p, k), per_body])))
        converged = not n or largest <= tol
        if converged:
            break
        if active.size:
            # q_k against every earlier iterate of the body, bit for bit: the latest equal one
            # gives the (smallest) period
            same = np.all(Hq[:k, at].view(np.int64) == q_new.view(np.int64)[None], axis=2)
            found = same.any(axis=0)
            if found.any():
                period = 1 + np.argmax(same[::-1, found], axis=0)
                per_body = np.concatenate([per_body, active[found]])
                per_k0 = np.concatenate([per_k0, np.full(period.size, k)])
                per_p = np.concatenate([per_p, period])
                active = active[~found]
        if not active.size and k < max_iter:
            # Every body is periodic: the later iterations hold nothing new, only the test of
            # each against the tolerance, all at once — the first that passes ends the loop
            # (the iteration count and the values are those of iterating on).
            later = np.arange(k + 1, max_iter + 1)[:, None]
            largest_later = np.max(Hc[in_period(per_k0, per_p, later), per_body], axis=1)
            passes = np.flatnonzero(largest_later <= tol)
            converged = bool(passes.size)
            iters = int(later[passes[0], 0]) if converged else max_iter
            break
    if per_body.size:
        j = in_period(per_k0, per_p, iters)
        q[per_body], w[per_body], change[per_body] = (
            Hq[j, per_body],
            Hw[j, per_body],
            Hc[j, per_body],
        )
    residual = float(np.max(change)) if len(q) else 0.0
    # Bodies whose last change is within NEWTON_TOL keep the fixed point's answer (its round-off
    # can cycle just above FIXED_POINT_TOL: a fast-spinning ball); the others, Newton.
    bad = np.flatnonzero(moving & (change > NEWTON_TOL)) if not converged else np.zeros(0, int)
    if not bad.size:
        return BackwardConfiguration(x, q, w, iters, residual, True)
    # Newton for the bodies the fixed point did not converge for (module docstring)
    worst, most, ok_all = 0.0, 0, True
    for j in bad:
        qj, res, n_it, ok = _solve_orientation(rigid.inertia[j], L[j], q_plus[j], dt, max_iter)
        q[j] = qj
        w[j] = np.linalg.solve(world_inertia(rigid.inertia[j][None], qj[None])[0], L[j])
        worst, most, ok_all = max(worst, res), max(most, n_it), ok_all and ok
    good = np.setdiff1d(np.arange(len(q)), bad)
    if good.size:
        worst = max(worst, float(np.max(change[good])))
    return BackwardConfiguration(x, q, w, iters + most, worst, ok_all, len(bad))


def _isotropic(inertia: np.ndarray) -> np.ndarray:
    """Which body-frame inertias (n, 3, 3) are ``c·1`` to the bit (equal diagonal, exact zeros
    elsewhere): exact equality, since only then is ``I_w(q)`` the same for every ``q`` — a
    nearly isotropic body still precesses, and iterating it is what its physics asks for."""
    d = np.diagonal(inertia, axis1=1, axis2=2)
    off = inertia - d[:, :, None] * np.eye(3)
    return (d[:, 0] == d[:, 1]) & (d[:, 1] == d[:, 2]) & np.all(off == 0.0, axis=(1, 2))


def _map(inertia: np.ndarray, L: np.ndarray, q_plus: np.ndarray, h: float, q: np.ndarray):
    """The fixed-point map ``G(q) = exp(−h I_w(q)⁻¹ L) ⊗ q⁺`` of one body."""
    Iw = world_inertia(inertia[None], q[None])[0]
    return quat_multiply(quat_exp(-h * np.linalg.solve(Iw, L)), q_plus)


def _rotvec(q: np.ndarray) -> np.ndarray:
    """Rotation vector (the logarithm) of a unit quaternion, on the short arc."""
    q = q if q[3] >= 0 else -q
    s = np.linalg.norm(q[:3])
    if s < 1e-300:
        return np.zeros(3)
    return 2.0 * np.arctan2(s, q[3]) * q[:3] / s


def _conj(q: np.ndarray) -> np.ndarray:
    return np.array([-q[0], -q[1], -q[2], q[3]])


def _residual(inertia, L, q_plus, h, q) -> tuple[np.ndarray, float]:
    """``e(q) = log(G(q) ⊗ q̄)`` and the acceptance measure ``max|q − G(q)|`` (sign-aligned)."""
    g = _map(inertia, L, q_plus, h, q)
    diff = min(np.max(np.abs(g - q)), np.max(np.abs(g + q)))
    return _rotvec(quat_multiply(g, _conj(q))), float(diff)


def _newton(inertia, L, q_plus, h, q, max_iter) -> tuple[np.ndarray, float, int]:
    """Safeguarded Newton on ``e(q) = 0`` from ``q``: the best ``q``, its residual, iterations."""
    e, res = _residual(inertia, L, q_plus, h, q)
    it = 0
    while res > NEWTON_TOL and it < max_iter:
        it += 1
        J = np.empty((3, 3))
        for k in range(3):
            d = np.zeros(3)
            d[k] = _FD_STEP
            ep, _ = _residual(inertia, L, q_plus, h, quat_multiply(quat_exp(d), q))
            em, _ = _residual(inertia, L, q_plus, h, quat_multiply(quat_exp(-d), q))
            J[:, k] = (ep - em) / (2.0 * _FD_STEP)
        try:
            step = np.linalg.solve(J, -e)
        except np.linalg.LinAlgError:
            step = e  # singular Jacobian: the fixed-point direction, shortened below if need be
        norm = np.linalg.norm(e)
        for _ in range(_BACKTRACK):
            q_try = quat_multiply(quat_exp(step), q)
            q_try /= np.linalg.norm(q_try)
            e_try, res_try = _residual(inertia, L, q_plus, h, q_try)
            if np.linalg.norm(e_try) < norm or res_try <= NEWTON_TOL:
                q, e, res = q_try, e_try, res_try
                break
            step = 0.5 * step
        else:
            break  # no decrease along the Newton direction: give up this attempt
    if np.dot(_map(inertia, L, q_plus, h, q), q) < 0:  # the sign the fixed point's form has
        q = -q
    return q, res, it


def _solve_orientation(inertia, L, q_plus, h, max_iter) -> tuple[np.ndarray, float, int, bool]:
    """``q⁻`` of one body: Newton from ``exp(−h I_w(q⁺)⁻¹ L) ⊗ q⁺``, else continuation in
    the step length (module docstring). Returns ``q⁻``, its residual, Newton iterations, and
    whether it is converged."""
    q0 = _map(inertia, L, q_plus, h, q_plus)
    q, res, it = _newton(inertia, L, q_plus, h, q0, min(max_iter, _FIRST_ATTEMPT))
    if res <= NEWTON_TOL:
        return q, res, it, True
    best, best_res, total = q, res, it
    qc = q_plus.copy()
    for stage in range(1, _CONTINUATION_STAGES + 1):
        hs = h * stage / _CONTINUATION_STAGES
        qc, res_c, it_c = _newton(
            inertia, L, q_plus, hs, _map(inertia, L, q_plus, hs, qc), max_iter
        )
        total += it_c
        if res_c > NEWTON_TOL:
            break
    else:
        return qc, res_c, total, True
    return best, best_res, total, False


def forward_configuration(
    x: np.ndarray, q: np.ndarray, v_move: np.ndarray, w_move: np.ndarray, rigid: RigidBodies, dt
):
    """``x⁺``, ``q⁺``, ``ω⁺`` of a forward step (module docstring, steps 2–3)."""
    moving = rigid.moving
    x_new = x + dt * v_move * moving[:, None]
    q_new = quat_multiply(quat_exp(dt * w_move * moving[:, None]), q)
    q_new /= np.linalg.norm(q_new, axis=1, keepdims=True)
    w_new = np.zeros_like(w_move)
    if moving.any():
        L = np.einsum("nij,nj->ni", world_inertia(rigid.inertia[moving], q[moving]), w_move[moving])
        Iw_new = world_inertia(rigid.inertia[moving], q_new[moving])
        w_new[moving] = np.linalg.solve(Iw_new, L[..., None])[..., 0]
    return x_new, q_new, w_new
