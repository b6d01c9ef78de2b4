"""An inverse problem's model as a counted residual c(z), z = (u, x̂_unkn), and its Newton solve.

c(z) = g(x(z)) + ε(u_ε) − y, with x_unc = T(u) and x̂ = x_unkn / typical (Eq. 4-5 of [1]_): the
expensive constraint of every search of :mod:`uncertainty.inverse_sqp`, with its Jacobian
(analytic or forward differences, [2]_ §8.1). Newton's method on c = 0 for x̂ at fixed u is the
deterministic inverse simulation (Eq. 5 of [1]); at u = 0 it gives the median solution that all
searches start from. Every model evaluation is counted.

A model may tell unphysical branches apart through an optional method ``unphysical(x) -> str |
None`` (and ``unphysical_many(X) -> ndarray of str``, '' for physical, for Monte Carlo), and may
offer ``jacobian_many(X) -> (m, n_out, n_in)`` for batched Newton steps.

References
----------
.. [1] X. Du, Inverse simulation under uncertainty by optimization, J. Comput. Inf. Sci. Eng.
       13(2) (2013) 021005.
.. [2] J. Nocedal, S. J. Wright, Numerical Optimization, 2nd ed., Springer (2006), §8.1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from uncertainty.errors import UncertaintyError
from uncertainty.inverse_problem import InverseProblem
from uncertainty.model import CachedModel

__all__ = [
    "JACOBIANS",
    "NEWTON_TOL",
    "NEWTON_MAX_ITER",
    "MAX_HALVINGS",
    "InverseResidual",
    "MedianSolution",
    "solve_median",
]

#: Jacobian strategies of the single-loop search.
JACOBIANS = ("broyden", "newton")

#: Step halvings when the model returns a non-finite value at a trial point.
MAX_HALVINGS = 30

#: Stopping tolerance of the Newton solves of y = g for x̂_unkn (median, double-loop inner solves,
#: Monte Carlo): scaled step ‖Δx̂‖_∞. Quadratic convergence leaves the solution at roundoff.
NEWTON_TOL = 1e-10

#: Iteration cap of those Newton solves.
NEWTON_MAX_ITER = 50


class InverseResidual:
    """The model as the residual c(z) = g(x(z)) + ε(u_ε) − y of z = (u, x̂_unkn), counted."""

    def __init__(self, problem: InverseProblem, jacobian: str):
        if jacobian not in JACOBIANS:
            raise UncertaintyError(
                f"jacobian: expected one of {', '.join(JACOBIANS)}, got {jacobian!r}", "jacobian"
            )
        self.problem = problem
        self.mode = jacobian
        self.cm = CachedModel(problem.model)
        names = self.cm.input_names
        self.i_unkn = np.array([names.index(n) for n in problem.unknowns], dtype=int)
        self.i_unc = np.array([names.index(n) for n in problem.uncertain], dtype=int)
        self.x_base = np.zeros(len(names))
        for n, v in problem.known.items():
            self.x_base[names.index(n)] = float(v)
        self.y = np.array([float(problem.outputs[n]) for n in self.cm.output_names])
        self.T = problem.transform
        self.Te = problem.output_errors
        self.n3 = self.T.dim
        self.nu = problem.dim_u
        self.n1 = len(problem.unknowns)
        self.n = self.nu + self.n1
        guess = problem.guess or {}
        typical = problem.typical or {}
        self.x0 = np.array([float(guess.get(n, 1.0)) for n in problem.unknowns])
        scale = []
        for n, g0 in zip(problem.unknowns, self.x0, strict=True):
            s = float(typical[n]) if n in typical else abs(g0)
            scale.append(s if s > 0.0 else 1.0)
        self.scale = np.array(scale)
        #: z columns that depend on the model (all but the output-error coordinates)
        self.model_cols = np.r_[np.arange(self.n3), np.arange(self.nu, self.n)]
        self.analytic = self.cm.analytic_jacobian
        self.batched_jacobian = callable(getattr(problem.model, "jacobian_many", None))
        check = getattr(problem.model, "unphysical", None)
        self.check = check if callable(check) else None
        check_many = getattr(problem.model, "unphysical_many", None)
        self.check_many = check_many if callable(check_many) else None

    @property
    def calls(self) -> int:
        return self.cm.n_evaluations

    # ------------------------------------------------------------------------- evaluation
    def full(self, z: np.ndarray) -> np.ndarray:
        """Model input vector at z."""
        x = self.x_base.copy()
        x[self.i_unc] = self.T.to_x(z[: self.n3])
        x[self.i_unkn] = self.scale * z[self.nu :]
        return x

    def residual(self, z: np.ndarray) -> np.ndarray:
        """c(z), shape (m,); one model call (unless cached)."""
        r = np.array(self.cm.evaluate(self.full(z)), dtype=float) - self.y
        if self.Te is not None:
            r = r + self.Te.to_x(z[self.n3 : self.nu])
        return r

    def jacobian(self, z: np.ndarray, cols=None, A: np.ndarray | None = None) -> np.ndarray:
        """∂c/∂z, shape (m, n): analytic (one call), or forward differences in the model columns
        ``cols`` (default all; one call each, c(z) coming from the cache), the other columns
        taken from ``A``.

        Forward differences with h = sqrt(ε) max(|z_j|, 1) (z is scaled) are accurate to about
        sqrt(ε) relative ([2]_ §8.1). That is enough here: the Jacobian only steers the search,
        the residual it drives to zero is evaluated exactly, and a Jacobian error δ moves the
        converged MPP along the constraint surface, where β is stationary, by O(δ) — β by O(δ²).
        """
        m = self.n1
        out = np.full((m, self.n), np.nan) if A is None else np.array(A, dtype=float)
        if self.analytic:
            J = self.cm.jacobian(self.full(z))
            out[:, : self.n3] = J[:, self.i_unc] @ self.T.jacobian(z[: self.n3])
            out[:, self.nu :] = J[:, self.i_unkn] * self.scale
        else:
            cols = self.model_cols if cols is None else cols
            c = self.residual(z)  # cached: the caller has evaluated z
            h = math.sqrt(self.cm.noise) * np.maximum(np.abs(z), 1.0)
            h = (z + h) - z
            for j in cols:
                e = np.zeros(self.n)
                e[j] = h[j]
                out[:, j] = (self.residual(z + e) - c) / h[j]
        if self.Te is not None:
            out[:, self.n3 : self.nu] = self.Te.jacobian(z[self.n3 : self.nu])
        return out

    def unphysical(self, z: np.ndarray) -> str | None:
        if self.check is None:
            return None
        return self.check(self.full(z))

    # ---------------------------------------------------------------- deterministic inverse
    def newton(self, u: np.ndarray, xhat: np.ndarray, A: np.ndarray | None = None):
        """Solve c(u, x̂) = 0 for x̂ by Newton's method with step halving on ‖c‖.

        Returns (x̂, A at the last iterate (x̂ columns fresh), converged, iterations, message).
        """
        cols = np.arange(self.nu, self.n)
        z = np.r_[u, xhat]
        c = self.residual(z)
        if not np.all(np.isfinite(c)):
            return xhat, A, False, 0, "the model is not finite at the starting point"
        for k in range(1, NEWTON_MAX_ITER + 1):
            A = self.jacobian(z, cols, A)
            Ax = A[:, self.nu :]
            try:
                dx = np.linalg.solve(Ax, -c)
            except np.linalg.LinAlgError:
                return (
                    z[self.nu :],
                    A,
                    False,
                    k,
                    "∂g/∂x_unkn is singular: the unknowns are not identifiable here",
                )
            if np.max(np.abs(dx)) <= NEWTON_TOL:
                z[self.nu :] += dx
                return z[self.nu :], A, True, k, f"converged in {k} Newton iterations"
            norm0 = float(np.linalg.norm(c))
            lam = 1.0
            for _ in range(MAX_HALVINGS):
                trial = z.copy()
                trial[self.nu :] += lam * dx
                ct = self.residual(trial)
                if np.all(np.isfinite(ct)) and np.linalg.norm(ct) < norm0:
                    break
                lam *= 0.5
            else:
                return (
                    z[self.nu :],
                    A,
                    False,
                    k,
                    f"no decrease of the output residual ‖g − y‖ = {norm0:.3g}: no solution "
                    "near the start (infeasible outputs?)",
                )
            z, c = trial, ct
        return z[self.nu :], A, False, NEWTON_MAX_ITER, "Newton did not converge"


@dataclass
class MedianSolution:
    z: np.ndarray
    A: np.ndarray
    calls: int
    D: np.ndarray  # dx̂/du at the median, shape (n1, nu)


def _named(eng: InverseResidual, xhat: np.ndarray) -> dict[str, float]:
    """Unknowns by name from scaled values x̂."""
    return dict(zip(eng.problem.unknowns, map(float, eng.scale * xhat), strict=True))


def solve_median(eng: InverseResidual) -> MedianSolution:
    """Deterministic inverse at u = 0, with the full Jacobian there."""
    start = eng.calls
    u0 = np.zeros(eng.nu)
    xhat, A, ok, _, msg = eng.newton(u0, eng.x0 / eng.scale)
    if not ok:
        raise UncertaintyError(
            f"outputs: the inverse simulation at the median of the uncertain inputs failed: "
            f"{msg}. Check the measured outputs and the guess of the unknowns",
            "outputs",
        )
    z = np.r_[u0, xhat]
    reason = eng.unphysical(z)
    if reason:
        raise UncertaintyError(
            f"guess: the median inverse solution {_named(eng, xhat)} is on an unphysical "
            f"branch ({reason}); start from another guess",
            "guess",
        )
    # x̂ columns from the last Newton iterate (a step of ≤ NEWTON_TOL away); u columns here
    A = eng.jacobian(z, np.arange(eng.n3), A) if not eng.analytic else eng.jacobian(z)
    D = -np.linalg.solve(A[:, eng.nu :], A[:, : eng.nu])
    return MedianSolution(z, A, eng.calls - start, D)
