"""Configuration update of a velocity-level step of Twigg & James 2008 [1]_ (§2.1, and its mirror
§3.3, Eq. 11–12): where the bodies are at the start of a backward step, or at the end of a forward
one. The velocities come from the contact LCP (:func:`reverse.dynamics.solve_island`); the step
loop is :class:`reverse.stepper.Stepper`.

Time stepping (semi-implicit Euler, the scheme of [1]_ §2.1 and its mirror §3.3)
-------------------------------------------------------------------------------
Forward, from ``(x⁻, q⁻, v⁻, ω⁻)``:

1. ``L⁻ = I_w(q⁻) ω⁻``; the LCP (:func:`reverse.dynamics.solve_island`) gives the moving
   velocity ``u_move = (v⁺, ω_m)`` with ``I_w(q⁻) ω_m = L⁻ + h τ + impulses`` — Eq. 11 and the
   angular-momentum form of Eq. 12, ``L⁺ = L⁻ + h τ``;
2. ``x⁺ = x⁻ + h v⁺``, ``q⁺ = exp(h ω_m) ⊗ q⁻`` (exponential map);
3. ``ω⁺ = I_w(q⁺)⁻¹ L⁺`` — angular momentum is carried across the rotation, so a torque-free
   body conserves ``L`` exactly and precesses correctly (no explicit gyroscopic term).

Backward, from ``(x⁺, q⁺, v⁺, ω⁺)``:

1. ``L⁺ = I_w(q⁺) ω⁺``; ``q⁻`` solves ``q⁻ = exp(−h I_w(q⁻)⁻¹ L⁺) ⊗ q⁺`` (fixed-point iteration,
   to 1e-15; one iteration for bodies with isotropic inertia), ``ω_m = I_w(q⁻)⁻¹ L⁺``,
   ``x⁻ = x⁺ − h v⁺`` — the start-of-step configuration is known *before* the LCP;
2. contacts are found at ``(x⁻, q⁻)`` — where the forward step would find them;
3. the backward LCP (Eq. 13–15, goals of Eq. 7–10) gives ``u⁻``.

So a backward step followed by a forward step with the same contacts returns the state exactly
up to the LCP's and the fixed point's round-off, for rotating bodies too; the physics of the

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25, 2008.
"""

from __future__ import annotations

import numpy as np

from reverse.dynamics import RigidBodies, quat_exp, quat_multiply, world_inertia
from workbench.sim.state import State

__all__ = ["backward_configuration", "forward_configuration"]


def backward_configuration(
    state: State, rigid: RigidBodies, dt: float, *, max_iter: int = 50
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``x⁻``, ``q⁻``, ``ω_m`` of a backward step (module docstring, step 1) and the number of
    fixed-point iterations used."""
    moving = rigid.moving
    x = state.position - dt * state.linear_velocity * moving[:, None]
    q_plus = state.orientation
    L = np.einsum("nij,nj->ni", world_inertia(rigid.inertia, q_plus), state.angular_velocity)
    w = state.angular_velocity * moving[:, None]
    q = quat_multiply(quat_exp(-dt * w), q_plus)
    iters = 0
    for _ in range(max_iter):
        iters += 1
        Iw = world_inertia(rigid.inertia, q)
        w_new = np.zeros_like(w)
        w_new[moving] = np.linalg.solve(Iw[moving], L[moving][..., None])[..., 0]
        q_new = quat_multiply(quat_exp(-dt * w_new), q_plus)
        change = np.max(np.abs(q_new - q)) if len(q) else 0.0
        q, w = q_new, w_new
        if change <= 1e-15:
            break
    return x, q, w, iters


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
