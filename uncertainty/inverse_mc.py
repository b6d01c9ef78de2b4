"""Monte Carlo verification of an inverse simulation under uncertainty (Sec. 4 of [1]_, Eq. 34-35).

Samples u ~ N(0, I), solves y = g for x_unkn per sample (vectorized Newton when the model
evaluates batches) and reports the CDF, mean and standard deviation of the unknowns with
standard errors.

References
----------
.. [1] X. Du, Inverse simulation under uncertainty by optimization, J. Comput. Inf. Sci. Eng.
       13(2) (2013) 021005.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from uncertainty.errors import UncertaintyError
from uncertainty.inverse_problem import InverseProblem
from uncertainty.inverse_residual import (
    MAX_HALVINGS,
    NEWTON_MAX_ITER,
    NEWTON_TOL,
    InverseResidual,
    solve_median,
)

__all__ = [
    "MC_RESTARTS",
    "MC_BATCH",
    "MonteCarloVariable",
    "MonteCarloResult",
    "inverse_monte_carlo",
]

#: Monte Carlo: rounds of restarts of the unsolved samples from their nearest solved neighbour.
MC_RESTARTS = 5

#: Monte Carlo samples solved per batch (bounds the memory of the batched Newton iteration).
MC_BATCH = 100_000


@dataclass(frozen=True)
class MonteCarloVariable:
    """Monte Carlo statistics of one unknown over the solved samples.

    Attributes
    ----------
    x, F, F_se : ndarray, shape (k,)
        CDF points, the fraction of samples below each (Eq. 34-35 of [1]_) and its standard
        error sqrt(F(1 − F)/n).
    mean, mean_se, std, std_se : float
        Sample mean and standard deviation with standard errors (s/√n and, by the delta
        method, sqrt((m4 − s⁴)/n)/(2s)).
    """

    x: np.ndarray
    F: np.ndarray
    F_se: np.ndarray
    mean: float
    mean_se: float
    std: float
    std_se: float


@dataclass(frozen=True)
class MonteCarloResult:
    """Outcome of :func:`inverse_monte_carlo`.

    Attributes
    ----------
    variables : dict of str -> MonteCarloVariable
    n_samples, n_solved : int
        Samples drawn and samples with a physical solution; the statistics are over the latter
        (conditional on a solution existing).
    failures : dict of str -> int
        Samples without a physical solution, by reason.
    model_calls : int
        Model evaluations (batch rows; analytic Jacobian rows count one each).
    samples : ndarray, shape (n_samples, n_unknowns) or None
        The solutions (NaN where none), when ``keep=True``.
    """

    variables: dict[str, MonteCarloVariable]
    n_samples: int
    n_solved: int
    failures: dict[str, int]
    model_calls: int
    samples: np.ndarray | None = None

    def __getitem__(self, name: str) -> MonteCarloVariable:
        return self.variables[name]


def _batch_jacobian(eng: InverseResidual, X: np.ndarray, R: np.ndarray) -> np.ndarray:
    """∂c/∂x̂ for a batch of model inputs X (b, n_in) with residuals R: (b, m, n1)."""
    model = eng.problem.model
    if eng.analytic and eng.batched_jacobian:
        J = np.asarray(model.jacobian_many(X), dtype=float)  # type: ignore[attr-defined]
        eng.cm.n_evaluations += X.shape[0]
        return J[:, :, eng.i_unkn] * eng.scale
    if eng.analytic:
        return np.array([eng.cm.jacobian(x)[:, eng.i_unkn] for x in X]) * eng.scale
    b = X.shape[0]
    out = np.empty((b, eng.n1, eng.n1))
    for j, col in enumerate(eng.i_unkn):
        xh = X[:, col] / eng.scale[j]
        h = eng.cm.noise ** (1.0 / 3.0) * np.maximum(np.abs(xh), 1.0)
        h = (xh + h) - xh
        Xp, Xm = X.copy(), X.copy()
        Xp[:, col] = (xh + h) * eng.scale[j]
        Xm[:, col] = (xh - h) * eng.scale[j]
        out[:, :, j] = (eng.cm.evaluate_many(Xp) - eng.cm.evaluate_many(Xm)) / (2.0 * h[:, None])
    return out


def _solve_batch(eng: InverseResidual, U: np.ndarray, x0: np.ndarray):
    """Newton on y = g for every row of U (b, nu) at once, started from x0 (n1,) or (b, n1):
    (x̂ (b, n1), converged (b,))."""
    b = U.shape[0]
    X = np.tile(eng.x_base, (b, 1))
    X[:, eng.i_unc] = eng.T.to_x(U[:, : eng.n3])
    eps = 0.0 if eng.Te is None else eng.Te.to_x(U[:, eng.n3 :])
    xh = np.array(np.broadcast_to(x0, (b, eng.n1)), dtype=float)
    done = np.zeros(b, dtype=bool)
    failed = np.zeros(b, dtype=bool)

    def resid(idx, xh_rows):
        Xr = X[idx].copy()
        Xr[:, eng.i_unkn] = xh_rows * eng.scale
        Y = eng.cm.evaluate_many(Xr)
        e = eps if np.isscalar(eps) else eps[idx]
        return Y + e - eng.y, Xr

    active = np.arange(b)
    R, Xr = resid(active, xh)
    for _ in range(NEWTON_MAX_ITER):
        if active.size == 0:
            break
        J = _batch_jacobian(eng, Xr, R)
        with np.errstate(all="ignore"):
            ok = np.isfinite(J).all(axis=(1, 2)) & (np.abs(np.linalg.det(J)) > 0)
            dx = np.zeros((active.size, eng.n1))
            dx[ok] = np.linalg.solve(J[ok], -R[ok][..., None])[..., 0]
        failed[active[~ok]] = True
        small = ok & (np.max(np.abs(dx), axis=1) <= NEWTON_TOL)
        xh[active[small]] += dx[small]
        done[active[small]] = True
        keep = ok & ~small
        active, dx, R, Xr = active[keep], dx[keep], R[keep], Xr[keep]
        if active.size == 0:
            break
        norm0 = np.linalg.norm(R, axis=1)
        lam = np.ones(active.size)
        pending = np.arange(active.size)
        R_new = np.empty_like(R)
        X_new = np.empty_like(Xr)
        for _ in range(MAX_HALVINGS):
            Rt, Xt = resid(active[pending], xh[active[pending]] + lam[pending, None] * dx[pending])
            good = np.isfinite(Rt).all(axis=1) & (np.linalg.norm(Rt, axis=1) < norm0[pending])
            R_new[pending[good]], X_new[pending[good]] = Rt[good], Xt[good]
            lam[pending[~good]] *= 0.5
            pending = pending[~good]
            if pending.size == 0:
                break
        failed[active[pending]] = True
        moved = np.setdiff1d(np.arange(active.size), pending, assume_unique=True)
        xh[active[moved]] += lam[moved, None] * dx[moved]
        active, R, Xr = active[moved], R_new[moved], X_new[moved]
    return xh, done & ~failed


def _classify(eng: InverseResidual, U: np.ndarray, xh: np.ndarray, ok: np.ndarray):
    """Model inputs of the batch solutions and why each is rejected ('' when accepted)."""
    X = np.tile(eng.x_base, (U.shape[0], 1))
    X[:, eng.i_unc] = eng.T.to_x(U[:, : eng.n3])
    X[:, eng.i_unkn] = xh * eng.scale
    reasons = np.full(U.shape[0], "", dtype=object)
    reasons[~ok] = "no convergence of the inverse simulation (no solution?)"
    if eng.check_many is not None:
        r = np.asarray(eng.check_many(X[ok]), dtype=object)
        reasons[np.flatnonzero(ok)[r != ""]] = r[r != ""]
    elif eng.check is not None:
        for k in np.flatnonzero(ok):
            reasons[k] = eng.check(X[k]) or ""
    return X, reasons


def inverse_monte_carlo(
    problem: InverseProblem,
    n: int,
    rng: np.random.Generator,
    *,
    points: Mapping[str, Sequence[float] | np.ndarray] | None = None,
    batch: int = MC_BATCH,
    keep: bool = False,
) -> MonteCarloResult:
    """Monte Carlo inverse simulation (Sec. 4 of [1]_, Eq. 34-35): solve y = g per sample.

    Draws u ~ N(0, I) (x_unc = T(u) and output errors), solves y = g for x_unkn by Newton from
    the median solution, batched over samples when the model has ``evaluate_many`` (and
    ``jacobian_many``; otherwise batched central differences), and rejects solutions on an
    unphysical branch (``unphysical_many``). Samples not solved from the median are restarted
    from the solution of their nearest solved neighbour in u (up to :data:`MC_RESTARTS` rounds),
    so a solution far out in the tails is found by continuation rather than missed. Samples
    without a physical solution are counted by reason in ``failures`` and left out of the
    statistics.

    Parameters
    ----------
    problem : InverseProblem
    n : int
        Number of samples.
    rng : numpy.random.Generator
    points : mapping of str -> array_like, optional
        CDF points per unknown.
    batch : int
        Samples per batch.
    keep : bool
        Return the solutions.

    Returns
    -------
    MonteCarloResult
    """
    if n < 2:
        raise UncertaintyError(f"n: expected at least 2 samples, got {n}", "n")
    eng = InverseResidual(problem, "newton")
    med = solve_median(eng)
    x0 = med.z[eng.nu :]
    sols = np.full((n, eng.n1), np.nan)
    failures: dict[str, int] = {}
    for lo in range(0, n, batch):
        hi = min(n, lo + batch)
        U = rng.standard_normal((hi - lo, eng.nu))
        xh, ok = _solve_batch(eng, U, x0)
        X, reasons = _classify(eng, U, xh, ok)
        # Newton from the median can miss a sample's solution, or land on an unphysical branch,
        # far out in the tails (the Du example: e two standard deviations above a low mean).
        # Continuation through the sample cloud: restart each such sample from the solution of
        # its nearest solved neighbour in u, while that finds new solutions.
        for _ in range(MC_RESTARTS):
            bad = reasons != ""
            if not bad.any() or bad.all():
                break
            _, nearest = cKDTree(U[~bad]).query(U[bad])
            xh2, ok2 = _solve_batch(eng, U[bad], xh[~bad][nearest])
            X2, reasons2 = _classify(eng, U[bad], xh2, ok2)
            fixed = reasons2 == ""
            if not fixed.any():
                break
            rows = np.flatnonzero(bad)
            xh[rows], X[rows], reasons[rows] = xh2, X2, reasons2
        good = reasons == ""
        for reason in reasons[~good]:
            failures[reason] = failures.get(reason, 0) + 1
        sols[lo:hi][good] = X[good][:, eng.i_unkn]
    solved = np.isfinite(sols).all(axis=1)
    m = int(solved.sum())
    variables = {}
    if m >= 2:
        S = sols[solved]
        for j, name in enumerate(problem.unknowns):
            v = S[:, j]
            mean = float(v.mean())
            dv = v - mean
            var = float(dv @ dv) / (m - 1)
            std = math.sqrt(var)
            m4 = float(np.mean(dv**4))
            xs = np.asarray((points or {}).get(name, []), dtype=float).reshape(-1)
            F = np.array([float(np.mean(v < x)) for x in xs])
            variables[name] = MonteCarloVariable(
                x=xs,
                F=F,
                F_se=np.sqrt(F * (1.0 - F) / m),
                mean=mean,
                mean_se=std / math.sqrt(m),
                std=std,
                std_se=math.sqrt(max(m4 - var * var, 0.0) / m) / (2.0 * std) if std > 0 else 0.0,
            )
    return MonteCarloResult(
        variables=variables,
        n_samples=n,
        n_solved=m,
        failures=failures,
        model_calls=eng.calls,
        samples=sols if keep else None,
    )
