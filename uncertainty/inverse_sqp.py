"""The most probable point search of the single-loop method of [1]_: SQP with continuation.

The MPP search is a sequential quadratic programming (SQP) iteration on z = (u, x̂_unkn),
x̂ = x_unkn / typical, with the model residual c(z) = g + ε − y
(:class:`~uncertainty.inverse_residual.InverseResidual`) as the expensive constraint and the
cheap one (x̂_i = x/typical for a CDF point, Eq. 13-14 of [1]_, or ½(‖u‖² − β²) = 0 for a
percentile, Eq. 21-22) exact (:class:`SQPTask`). Each step solves the KKT system by the
null-space method ([2]_ §16.2, §18.1): a normal step onto the linearized constraints, a Newton
step in their null space with the reduced Hessian (eigenvalues taken in absolute value and
floored, so the step descends). The Hessian of the Lagrangian is that of the cheap part plus a
symmetric-rank-one (SR1) approximation of Σ λ_k ∇²c_k ([2]_ §6.2, §18.3), kept from point to
point. ``jacobian="newton"`` evaluates the model Jacobian (analytic, or forward differences in z,
counted) at every iterate; ``jacobian="broyden"`` (default) evaluates it once at the median and
then updates it by Broyden's rank-one secant formula ([2]_ §11.1) with every model call,
refreshing it only when an iteration stalls. The points of a variable are solved outward from
the median in two branches (:func:`outward_branches`), each started from a predictor
(:func:`predict_start`): the tangent of the KKT solution in the target (implicit-function
theorem, :func:`kkt_tangent`) plus the quadratic term through the previous solution. The
iteration stops when the SQP step is below ``tol``; the point z + Δz is accepted without a
further model call.

Measured against scipy's SLSQP and trust-constr on the 42 CDF points of Du's example
(``benchmarks/inverse_sqp.py``): at equal accuracy 29 % (analytic Jacobian) and 36 % (finite
differences) fewer model calls than the cheapest SLSQP setting, about half those of trust-constr.

References
----------
.. [1] X. Du, Inverse simulation under uncertainty by optimization, J. Comput. Inf. Sci. Eng.
       13(2) (2013) 021005.
.. [2] J. Nocedal, S. J. Wright, Numerical Optimization, 2nd ed., Springer (2006).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import linalg

from uncertainty.inverse_residual import MAX_HALVINGS, InverseResidual

__all__ = [
    "STEP_TOL",
    "MAX_ITER",
    "MAX_STEP",
    "EIG_FLOOR",
    "SR1_SKIP",
    "REFRESH_ITER",
    "SQPState",
    "SQPTask",
    "sqp_search",
    "kkt_tangent",
    "predict_start",
    "outward_branches",
]

#: Default stopping tolerance on the SQP step ‖Δz‖_∞ (u in standard deviations, x̂ relative to
#: the typical magnitude of the unknown). The accepted point z + Δz is closer than the step, by
#: the (super)linear contraction of the iteration: β to about 1e-8, F to about 1e-9.
STEP_TOL = 1e-5

#: Default cap on SQP iterations per point.
MAX_ITER = 40

#: Largest SQP step ‖Δz‖₂ taken at once (standard deviations / relative units): a predicted start
#: is much closer than that; a longer step comes from a poor model of the constraints and could
#: carry the iterate onto another branch of the solution.
MAX_STEP = 1.0

#: Smallest eigenvalue admitted in the reduced Hessian, relative to the Hessian of the cheap part
#: (1 for min ½‖u‖², ν for the sphere constraint). At an MPP it is 1 + βκ_j (κ_j the principal
#: curvatures), so the floor only acts away from the solution or at a nearly degenerate MPP.
EIG_FLOOR = 1e-2

#: SR1 updates are skipped when |vᵀs| < SR1_SKIP ‖v‖ ‖s‖ ([2] Eq. 6.26: the update would be
#: unbounded).
SR1_SKIP = 1e-8

#: In Broyden mode the model Jacobian is re-evaluated after this many SQP iterations at one point
#: without convergence (a Broyden Jacobian that has stopped helping), or when a step grows.
REFRESH_ITER = 4


@dataclass
class SQPState:
    """State of one SQP search (internal)."""

    z: np.ndarray
    converged: bool
    iterations: int
    message: str
    lam: np.ndarray
    nu: float
    A: np.ndarray
    B: np.ndarray
    anchor: tuple[np.ndarray, np.ndarray] | None = None


def _broyden(A: np.ndarray, s: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Broyden's rank-one update so that A_new s = r ([2] Eq. 11.27)."""
    ss = float(s @ s)
    if ss == 0.0:
        return A
    return A + np.outer(r - A @ s, s) / ss


def _sr1(B: np.ndarray, s: np.ndarray, yv: np.ndarray) -> np.ndarray:
    """Symmetric rank-one update of B so that B_new s = yv ([2] Eq. 6.24), skipped when unsafe."""
    v = yv - B @ s
    vs = float(v @ s)
    if abs(vs) < SR1_SKIP * float(np.linalg.norm(v)) * float(np.linalg.norm(s)) or vs == 0.0:
        return B
    return B + np.outer(v, v) / vs


class SQPTask:
    """Cheap part of one search: objective f and the exact constraint h, as functions of z."""

    def __init__(self, eng: InverseResidual, kind: str, i: int, target: float, sigma: float = 1.0):
        self.kind, self.i, self.target, self.sigma = kind, i, float(target), float(sigma)
        self.nu, self.n = eng.nu, eng.n
        self.Iu = np.diag(np.r_[np.ones(eng.nu), np.zeros(eng.n1)])
        self.ei = np.zeros(eng.n)
        self.ei[eng.nu + i] = 1.0

    def f_grad(self, z):
        if self.kind == "cdf":  # f = ½‖u‖²
            return np.r_[z[: self.nu], np.zeros(self.n - self.nu)]
        return self.sigma * self.ei  # f = σ x̂_i

    def f_hess(self):
        return self.Iu if self.kind == "cdf" else np.zeros((self.n, self.n))

    def h(self, z) -> float:
        if self.kind == "cdf":  # x̂_i = target
            return float(z[self.nu + self.i] - self.target)
        u = z[: self.nu]  # ½(‖u‖² − β²)
        return 0.5 * (float(u @ u) - self.target**2)

    def h_grad(self, z):
        if self.kind == "cdf":
            return self.ei
        return np.r_[z[: self.nu], np.zeros(self.n - self.nu)]

    def h_hess(self):
        return np.zeros((self.n, self.n)) if self.kind == "cdf" else self.Iu

    def h_param(self, z) -> float:
        """∂h/∂target · (−1): the right-hand side of the tangent system."""
        return 1.0 if self.kind == "cdf" else self.target

    def W(self, B, nu):
        return self.f_hess() + nu * self.h_hess() + B

    def floor(self, nu) -> float:
        return EIG_FLOOR * (1.0 if self.kind == "cdf" else max(abs(nu), 1e-12))


def _qp_step(W, C, r, g, floor):
    """Null-space solution of the SQP subproblem min gᵀd + ½dᵀWd s.t. C d = −r.

    Returns (d, multipliers μ of Cᵀμ = −(g + W d), null-space basis Z, ok)."""
    p = C.shape[0]
    Q, R = np.linalg.qr(C.T, mode="complete")
    Rp = R[:p, :p]
    diag = np.abs(np.diag(Rp))
    if diag.min() <= 1e-12 * max(diag.max(), 1e-300):
        return None, None, None, False
    Y, Z = Q[:, :p], Q[:, p:]
    d = -Y @ linalg.solve_triangular(Rp.T, r, lower=True)
    if Z.shape[1]:
        Hr = Z.T @ W @ Z
        Hr = 0.5 * (Hr + Hr.T)
        ev, V = np.linalg.eigh(Hr)
        ev = np.maximum(np.abs(ev), floor)
        gr = Z.T @ (g + W @ d)
        d = d - Z @ (V @ ((V.T @ gr) / ev))
    mu = linalg.solve_triangular(Rp, -(Y.T @ (g + W @ d)))
    return d, mu, Z, True


def _multipliers(C, g):
    """Least-squares multipliers of Cᵀμ = −g."""
    return np.linalg.lstsq(C.T, -g, rcond=None)[0]


def sqp_search(eng: InverseResidual, task: SQPTask, z, A, B, anchor, tol, max_iter) -> SQPState:
    """SQP search for one point from the start z (see the module docstring).

    The model Jacobian is evaluated at the start (and, with ``"newton"``, at every iterate);
    with ``"broyden"`` it is then updated by secants. B (the curvature Σ λ_k ∇²c_k) gets an SR1
    update from every pair of model Jacobians: the previous one, ``anchor`` = (z_a, A_a), and the
    next; Broyden's secant Jacobians are not used for it (they carry their own error).
    """
    m = eng.n1
    z = np.array(z, dtype=float)
    cols = eng.model_cols  # with x̂_i fixed its column still feeds B and the next predictor
    c = eng.residual(z)
    lam, nu = np.zeros(m), 0.0
    if not np.all(np.isfinite(c)):
        return SQPState(
            z, False, 0, "the model is not finite at the predicted start", lam, nu, A, B, anchor
        )
    A = eng.jacobian(z, cols, A)
    mu0 = _multipliers(np.vstack([A, task.h_grad(z)]), task.f_grad(z))
    lam, nu = mu0[:m], float(mu0[m])
    if anchor is not None:
        B = _sr1(B, z - anchor[0], (A - anchor[1]).T @ lam)
    anchor = (z.copy(), A.copy())
    last_step = math.inf
    since_refresh = 0
    for k in range(max_iter):
        W = task.W(B, nu)
        r = np.r_[c, task.h(z)]
        d, mu, _, ok = _qp_step(
            W, np.vstack([A, task.h_grad(z)]), r, task.f_grad(z), task.floor(nu)
        )
        if (
            ok
            and since_refresh
            and (since_refresh >= REFRESH_ITER or np.max(np.abs(d)) > 2.0 * last_step)
        ):
            A = eng.jacobian(z, cols, A)  # the secant model has stopped helping: refresh
            B = _sr1(B, z - anchor[0], (A - anchor[1]).T @ lam)
            anchor, since_refresh = (z.copy(), A.copy()), 0
            d, mu, _, ok = _qp_step(
                W, np.vstack([A, task.h_grad(z)]), r, task.f_grad(z), task.floor(nu)
            )
        if not ok:
            return SQPState(
                z, False, k, "the constraint Jacobian is rank deficient", lam, nu, A, B, anchor
            )
        step = float(np.max(np.abs(d)))
        lam, nu = mu[:m], float(mu[m])
        if step <= tol:
            return SQPState(
                z + d, True, k + 1, f"converged in {k + 1} iterations", lam, nu, A, B, anchor
            )
        norm = float(np.linalg.norm(d))
        if norm > MAX_STEP:
            d = d * (MAX_STEP / norm)
        for _ in range(MAX_HALVINGS):
            z_new = z + d
            c_new = eng.residual(z_new)
            if np.all(np.isfinite(c_new)):
                break
            d = 0.5 * d
        else:
            return SQPState(
                z, False, k + 1, "the model is not finite along the step", lam, nu, A, B, anchor
            )
        if eng.mode == "newton":
            A = eng.jacobian(z_new, cols, A)
            # SR1 on the curvature of the model constraints: y = (A_new − A)ᵀ λ ([2] §18.3)
            B = _sr1(B, z_new - anchor[0], (A - anchor[1]).T @ lam)
            anchor = (z_new.copy(), A.copy())
        else:
            A = _broyden(A, z_new - z, c_new - c)
            since_refresh += 1
        z, c = z_new, c_new
        last_step = step
    return SQPState(
        z, False, max_iter, f"no convergence in {max_iter} iterations", lam, nu, A, B, anchor
    )


def kkt_tangent(task: SQPTask, sol: SQPState) -> np.ndarray | None:
    """dz/d(target) at a converged solution: the implicit-function theorem on the KKT system."""
    n = task.n
    C = np.vstack([sol.A, task.h_grad(sol.z)])
    W = task.W(sol.B, sol.nu)
    p = C.shape[0]
    K = np.block([[W, C.T], [C, np.zeros((p, p))]])
    rhs = np.zeros(n + p)
    rhs[-1] = task.h_param(sol.z)
    try:
        return np.linalg.solve(K, rhs)[:n]
    except np.linalg.LinAlgError:
        return None


def predict_start(t, hist, tangent):
    """Start for target t from the last solution (t_k, z_k), its tangent and the one before."""
    t_k, z_k = hist[-1]
    dt = t - t_k
    if tangent is None:
        if len(hist) < 2:
            return z_k.copy()
        t_p, z_p = hist[-2]
        return z_k + (z_k - z_p) * (dt / (t_k - t_p))
    z = z_k + tangent * dt
    if len(hist) >= 2:
        t_p, z_p = hist[-2]
        dp = t_p - t_k
        c2 = (z_p - z_k - tangent * dp) / dp**2
        quad = c2 * dt * dt
        if np.linalg.norm(quad) < np.linalg.norm(tangent * dt):  # a sane second-order term
            z = z + quad
    return z


def outward_branches(values, center):
    """Indices of the values at/above ``center`` ascending and below it descending."""
    values = np.asarray(values, dtype=float)
    order = np.argsort(values, kind="stable")
    above = [int(k) for k in order if values[k] >= center]
    below = [int(k) for k in order[::-1] if values[k] < center]
    return above, below
