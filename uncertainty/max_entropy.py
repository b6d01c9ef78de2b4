"""Maximum-entropy densities with prescribed moments, by damped Newton on the convex dual.

The dual of the maximum-entropy problems of Eq. (21) (centre of mass) and Eq. (42) (bounded
normalized inertia G) of [1]_ on a fixed weighted sample (quadrature nodes or importance draws).

References
----------
.. [1] A. Batou, C. Soize, Rigid multibody system dynamics with uncertain rigid bodies,
       Multibody System Dynamics 27 (2012) 285-319, doi:10.1007/s11044-011-9279-2.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

__all__ = ["NEWTON_TOL", "NEWTON_MAX_ITER", "max_entropy_newton"]

#: Newton iterations on the (convex) dual of the maximum-entropy problems stop when the moment
#: residual is below this (G entries and lengths relative to the extent are O(1)).
NEWTON_TOL = 1e-10
NEWTON_MAX_ITER = 200


def max_entropy_newton(features, log_base, target, theta0, tol=NEWTON_TOL):
    """Minimize F(θ) = log Σ_i exp(log_base_i - <θ, φ_i>) + <θ, target> by damped Newton.

    F is convex (log-sum-exp of affine functions); its gradient target - E_θ[φ] vanishes when the
    tilted weights p_i ∝ exp(log_base_i - <θ, φ_i>) reproduce the prescribed moments. This is the
    dual of the maximum-entropy problems of Eq. (21) (centre of mass) and Eq. (42) (bounded G).

    Returns θ, p (normalized weights), iterations, converged.
    """
    theta = np.array(theta0, dtype=float)

    def objective(th):
        e = log_base - features @ th
        lse = logsumexp(e)
        return lse + th @ target, e, lse

    f, e, lse = objective(theta)
    for it in range(NEWTON_MAX_ITER):
        p = np.exp(e - lse)
        m = p @ features
        grad = target - m
        if np.max(np.abs(grad)) <= tol:
            return theta, p, it, True
        d = features - m
        hess = (d * p[:, None]).T @ d
        try:
            step = np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(hess, grad, rcond=None)[0]
        slope = -grad @ step
        t = 1.0
        while True:  # Armijo backtracking on the convex objective
            f_new, e_new, lse_new = objective(theta - t * step)
            if f_new <= f + 1e-4 * t * slope or t < 1e-12:
                break
            t *= 0.5
        if t < 1e-12:
            return theta, p, it + 1, False
        theta, f, e, lse = theta - t * step, f_new, e_new, lse_new
    p = np.exp(e - lse)
    return theta, p, NEWTON_MAX_ITER, bool(np.max(np.abs(target - p @ features)) <= tol)
