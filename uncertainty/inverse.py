"""Inverse simulation under uncertainty: distributions of unknown inputs by single-loop FORM ([1]_).

A model y = g(x_unkn, x_kn, x_unc) (Eq. 4 of [1]) has as many outputs as unknown inputs; the
outputs y are measured, x_kn are known and x_unc are uncertain with a known law, mapped from
independent standard normals u by a transform T (``uncertainty.distributions``). The unknowns then
inherit a distribution. Implemented here:

* **The single-loop method of [1]** (:func:`inverse_form`). For a point x of unknown x_i,
  F_i(x) = Pr(x_i < x) = Φ(±β) with β = ‖u*‖ from (Eq. 13-14 of [1])

      min ‖u‖ over (u, x_unkn)  subject to  y = g(x_unkn, x_kn, T(u)),  x_unkn,i = x

  and the sign + when x lies above the median x_i(u = 0) (Eq. 8), − below it (Eq. 11). The
  inequality x_unkn,i ≤ x of Eq. (13) is active at the optimum, so it is imposed as an equality;
  x_i is then a constant and the other unknowns stay free (the elimination).
* **Percentiles** x_w (Eq. 21-22): the extremes of x_i on the sphere ‖u‖ = |Φ⁻¹(w)|, and from them
  the **mean and standard deviation** (Eq. 19-20), see :func:`inverse_form` for the quadrature.
* **The double loop** (Eq. 10, 12; :func:`double_loop_form`): FORM on the implicit limit state
  x_i(u) − x, each value of x_i(u) an inverse simulation of its own.
* **SORM**: Breitung's correction ([3]_) of each CDF value from the curvatures of
  {u : x_i(u) = x} at u*, the option the conclusions of [1] propose.
* **Measured outputs with their own uncertainty** (the extension proposed in Sec. 5 of [1]):
  ``output_errors`` makes y_measured = g(x) + ε with ε independent of x_unc; ε's standard normal
  coordinates join u.
* **Monte Carlo verification** (:func:`inverse_monte_carlo`, Eq. 34-35): sample u, solve
  y = g for x_unkn per sample (vectorized Newton when the model evaluates batches), with
  standard errors.

Corrections to [1] as printed: the moment integrals (Eq. 15-20) run over w ∈ [0, 1], not
[−1, 1]; and Eq. (21)-(22) have max and min swapped: the percentile below the median (w < 0.5)
is the **minimum** of x_i over the sphere ‖u‖ = −Φ⁻¹(w) (for x_i = m + aᵀu that minimum is
m − β‖a‖ = F⁻¹(Φ(−β))), the one above it the maximum.

The MPP search (SQP with continuation, Broyden or Newton Jacobians, [2]_) is in
:mod:`uncertainty.inverse_sqp`; the model as a counted residual and the Newton solve of y = g in
:mod:`uncertainty.inverse_residual`; the Monte Carlo verification in :mod:`uncertainty.inverse_mc`;
the problem and result types in :mod:`uncertainty.inverse_problem`. All public names are
importable from here.

A model may tell unphysical branches apart through an optional method ``unphysical(x) -> str |
None`` (and ``unphysical_many(X) -> ndarray of str``, '' for physical, for Monte Carlo): a
solution on an unphysical branch is rejected (``converged=False``, the reason in ``message``),
and an output y with no solution is reported as such. A model may also offer
``jacobian_many(X) -> (m, n_out, n_in)`` for batched Newton steps.

References
----------
.. [1] X. Du, Inverse simulation under uncertainty by optimization, J. Comput. Inf. Sci. Eng.
       13(2) (2013) 021005.
.. [2] J. Nocedal, S. J. Wright, Numerical Optimization, 2nd ed., Springer (2006).
.. [3] K. Breitung, Asymptotic approximations for multinormal integrals, J. Eng. Mech. ASCE
       110(3) (1984) 357-366.
.. [4] Y. Zhang, A. Der Kiureghian, Finite element reliability methods for inelastic
       structures, Report UCB/SEMM-97/05, University of California, Berkeley (1997).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy import linalg, stats

from uncertainty.errors import UncertaintyError
from uncertainty.inverse_mc import (
    MC_BATCH,
    MC_RESTARTS,
    MonteCarloResult,
    MonteCarloVariable,
    inverse_monte_carlo,
)
from uncertainty.inverse_problem import (
    CDFPoint,
    InverseProblem,
    InverseResult,
    PercentilePoint,
    VariableResult,
)
from uncertainty.inverse_residual import (
    JACOBIANS,
    MAX_HALVINGS,
    NEWTON_MAX_ITER,
    NEWTON_TOL,
    InverseResidual,
    solve_median,
)
from uncertainty.inverse_sqp import (
    MAX_ITER,
    STEP_TOL,
    SQPState,
    SQPTask,
    kkt_tangent,
    outward_branches,
    predict_start,
    sqp_search,
)

__all__ = [
    "JACOBIANS",
    "STEP_TOL",
    "MAX_ITER",
    "NEWTON_TOL",
    "NEWTON_MAX_ITER",
    "DOUBLE_LOOP_TOL",
    "DOUBLE_LOOP_ANGLE_TOL",
    "GH_NODES",
    "MC_RESTARTS",
    "MC_BATCH",
    "InverseProblem",
    "CDFPoint",
    "PercentilePoint",
    "VariableResult",
    "InverseResult",
    "MonteCarloVariable",
    "MonteCarloResult",
    "solve_inverse",
    "inverse_form",
    "percentiles",
    "double_loop_form",
    "inverse_monte_carlo",
]

#: Double loop: tolerances of the outer FORM search on G(u) = x̂_i(u) − x̂: |G|/‖∇G‖ (standard
#: deviations) and the angle (rad) between u and ∇G ([4]); with the inner solves at roundoff,
#: β is then accurate to ~1e-8 like the single loop.
DOUBLE_LOOP_TOL = 1e-8
DOUBLE_LOOP_ANGLE_TOL = 1e-6

#: iHLRF line search of the double loop ([4]): penalty factor, sufficient decrease, step factor.
IHLRF_GAMMA = 2.0
IHLRF_A = 0.1
IHLRF_B = 0.5

#: Default Gauss-Hermite nodes for the moments (Eq. 19-20): exact for a percentile curve x(s)
#: that is a polynomial of degree ≤ 17 in s = Φ⁻¹(w); the outer nodes are s = ±4.51.
GH_NODES = 9


# --------------------------------------------------------------------------------- SORM
def _sorm(eng: InverseResidual, task: SQPTask, sol: SQPState, beta: float):
    """Curvatures and Breitung's probability of the far side at a converged CDF point."""
    C = np.vstack([sol.A, task.h_grad(sol.z)])
    Q, _ = np.linalg.qr(C.T, mode="complete")
    Z = Q[:, C.shape[0] :]
    if beta == 0.0:  # the median: Breitung's formula is singular there, F = 1/2 exactly
        return np.empty(0), math.nan
    if Z.shape[1] == 0:  # one uncertain variable: the surface is a point, SORM = FORM
        return np.empty(0), float(stats.norm.sf(beta))
    Zu = Z[: eng.nu]
    L = np.linalg.cholesky(Zu.T @ Zu)
    Z = linalg.solve_triangular(L, Z.T, lower=True).T  # now Z_uᵀ Z_u = I
    lam = sol.lam
    h = eng.cm.noise**0.25  # second differences: h = ε^(1/4) (z is scaled), CachedModel.steps

    def phi(z):
        return float(lam @ eng.residual(z))

    k = Z.shape[1]
    f0 = phi(sol.z)
    H = np.empty((k, k))
    for a in range(k):
        H[a, a] = (phi(sol.z + h * Z[:, a]) - 2 * f0 + phi(sol.z - h * Z[:, a])) / h**2
        for b in range(a):
            H[a, b] = H[b, a] = (
                phi(sol.z + h * (Z[:, a] + Z[:, b]))
                - phi(sol.z + h * (Z[:, a] - Z[:, b]))
                - phi(sol.z - h * (Z[:, a] - Z[:, b]))
                + phi(sol.z - h * (Z[:, a] + Z[:, b]))
            ) / (4 * h * h)
    ev = np.linalg.eigvalsh(np.eye(k) + H)  # = 1 + β κ_j: Hessian of ½‖u‖² along the surface
    kappa = (ev - 1.0) / beta
    if np.any(ev <= 0.0):
        return kappa, math.nan
    return kappa, float(stats.norm.sf(beta) / math.sqrt(float(np.prod(ev))))


# ------------------------------------------------------------------------------- drivers
def _unknown_index(problem: InverseProblem, name: str) -> int:
    if name not in problem.unknowns:
        raise UncertaintyError(
            f"points: {name!r} is not an unknown; unknowns are {', '.join(problem.unknowns)}",
            "points",
        )
    return list(problem.unknowns).index(name)


def _point_result(eng, task, sol, x, side, calls, beta_sign_above, sorm) -> CDFPoint:
    u = sol.z[: eng.nu]
    beta = float(np.linalg.norm(u))
    F = float(stats.norm.cdf(beta if beta_sign_above else -beta))
    converged, message = sol.converged, sol.message
    if converged:
        reason = eng.unphysical(sol.z)
        if reason:
            converged, message = (
                False,
                f"rejected: the solution is on an unphysical branch ({reason})",
            )
    kappa, F_sorm = np.empty(0), math.nan
    if sorm and converged:
        start = eng.calls
        kappa, far = _sorm(eng, task, sol, beta)
        calls += eng.calls - start
        F_sorm = far if side == "below" else 1.0 - far
        if kappa.size and np.any(1.0 + beta * kappa <= 0.0):
            # ‖u‖ has a maximum along the surface at u*: a KKT point, not the MPP
            converged = False
            message = (
                f"rejected: u* is a saddle point of ‖u‖ on the surface (1 + βκ = "
                f"{np.min(1.0 + beta * kappa):.3g} ≤ 0), not the most probable point; the FORM "
                "value is unreliable here"
            )
    return CDFPoint(
        x=float(x),
        F=F,
        beta=beta,
        side=side,
        converged=converged,
        model_calls=calls,
        iterations=sol.iterations,
        u_star=u.copy(),
        x_unkn_star=eng.scale * sol.z[eng.nu :],
        x_unc_star=eng.T.to_x(u[: eng.n3]),
        message=message,
        F_sorm=F_sorm,
        curvatures=kappa,
    )


def _median_point(eng, x, med) -> CDFPoint:
    u = np.zeros(eng.nu)
    return CDFPoint(
        float(x),
        0.5,
        0.0,
        "above",
        True,
        0,
        0,
        u,
        eng.scale * med.z[eng.nu :],
        eng.T.to_x(u[: eng.n3]),
        "x is the median: u* = 0",
    )


def _outward_targets(eng, med, i, xs):
    """The CDF points ``xs`` of unknown i in two branches outward from the median.

    Returns ``out``, a list with the points at the median filled in (u* = 0) and None elsewhere,
    and ``branches``: ("above", targets ascending), ("below", targets descending), each target
    (k, x, t) with t = x / typical the scaled value the search fixes.
    """
    x_med = float(eng.scale[i] * med.z[eng.nu + i])
    out: list[CDFPoint | None] = [None] * xs.size
    branches = []
    for branch, side in zip(outward_branches(xs, x_med), ("above", "below"), strict=True):
        targets = []
        for k in branch:
            x = xs[k]
            if x == x_med:
                out[k] = _median_point(eng, x, med)
            else:
                targets.append((k, x, x / eng.scale[i]))
        branches.append((side, targets))
    return out, branches


def _cdf_points(eng, med, i, xs, tol, max_iter, sorm) -> list[CDFPoint]:
    xs = np.asarray(xs, dtype=float).reshape(-1)
    if not np.all(np.isfinite(xs)):
        raise UncertaintyError("points: CDF points must be finite", "points")
    out, branches = _outward_targets(eng, med, i, xs)
    for side, targets in branches:
        t_med = med.z[eng.nu + i]
        hist = [(t_med, med.z.copy())]
        A, B = med.A.copy(), np.zeros((eng.n, eng.n))
        anchor = (med.z.copy(), med.A.copy())
        task0 = SQPTask(eng, "cdf", i, t_med)
        tangent = kkt_tangent(task0, SQPState(med.z, True, 0, "", np.zeros(eng.n1), 0.0, A, B))
        for k, x, t in targets:
            task = SQPTask(eng, "cdf", i, t)
            z0 = predict_start(t, hist, tangent)
            z0[eng.nu + i] = t
            start = eng.calls
            sol = sqp_search(eng, task, z0, A, B, anchor, tol, max_iter)
            calls = eng.calls - start
            anchor = sol.anchor
            out[k] = _point_result(eng, task, sol, x, side, calls, side == "above", sorm)
            if out[k].converged:
                A, B = sol.A, sol.B
                tangent = kkt_tangent(task, sol)
                hist.append((t, sol.z.copy()))
    return out  # type: ignore[return-value]


def _percentile_points(eng, med, i, ws, tol, max_iter) -> list[PercentilePoint]:
    ws = np.asarray(ws, dtype=float).reshape(-1)
    if not np.all((ws > 0.0) & (ws < 1.0)):
        raise UncertaintyError("w: probability levels must lie in (0, 1)", "w")
    s_all = stats.norm.ppf(ws)
    out: list[PercentilePoint | None] = [None] * ws.size
    above, below = outward_branches(s_all, 0.0)
    x_med = float(eng.scale[i] * med.z[eng.nu + i])
    a = med.D[i]
    norm_a = float(np.linalg.norm(a))
    for branch, sigma in ((above, -1.0), (below, 1.0)):  # above the median: max x_i (σ = −1)
        A, B = med.A.copy(), np.zeros((eng.n, eng.n))
        anchor = (med.z.copy(), med.A.copy())
        hist = [(0.0, med.z.copy())]
        # linearized solution per unit β: u = −σ β a/‖a‖, x̂ = x̂_med + D u
        du = -sigma * a / norm_a if norm_a > 0 else np.zeros(eng.nu)
        tangent = np.r_[du, med.D @ du]
        for k in branch:
            s = float(s_all[k])
            beta = abs(s)
            if beta == 0.0:
                u = np.zeros(eng.nu)
                out[k] = PercentilePoint(
                    float(ws[k]),
                    s,
                    x_med,
                    True,
                    0,
                    0,
                    u,
                    eng.scale * med.z[eng.nu :],
                    "w = 0.5: the median",
                )
                continue
            task = SQPTask(eng, "pct", i, beta, sigma)
            z0 = predict_start(beta, hist, tangent)
            nrm = float(np.linalg.norm(z0[: eng.nu]))
            if nrm > 0:
                z0[: eng.nu] *= beta / nrm
            start = eng.calls
            sol = sqp_search(eng, task, z0, A, B, anchor, tol, max_iter)
            calls = eng.calls - start
            anchor = sol.anchor
            converged, message = sol.converged, sol.message
            if converged:
                reason = eng.unphysical(sol.z)
                if reason:
                    converged = False
                    message = f"rejected: the solution is on an unphysical branch ({reason})"
            x = float(eng.scale[i] * sol.z[eng.nu + i])
            out[k] = PercentilePoint(
                float(ws[k]),
                s,
                x,
                converged,
                calls,
                sol.iterations,
                sol.z[: eng.nu].copy(),
                eng.scale * sol.z[eng.nu :],
                message,
            )
            if converged:
                A, B = sol.A, sol.B
                tangent = kkt_tangent(task, sol)
                hist.append((beta, sol.z.copy()))
    return out  # type: ignore[return-value]


def _moments(eng, med, i, nodes, tol, max_iter):
    s, wts = hermegauss(nodes)
    wts = wts / math.sqrt(2.0 * math.pi)  # weights of E[.] under N(0, 1)
    pts = _percentile_points(eng, med, i, stats.norm.cdf(s), tol, max_iter)
    x = np.array([p.x for p in pts])
    if not all(p.converged for p in pts):
        return math.nan, math.nan, pts
    mean = float(wts @ x)  # Eq. (19) with w = Φ(s)
    std = math.sqrt(max(float(wts @ (x - mean) ** 2), 0.0))  # Eq. (20)
    return mean, std, pts


def _quadrature_name(nodes: int) -> str:
    return f"Gauss-Hermite, {nodes} nodes in s = Φ⁻¹(w): μ = Σ ω_j x(s_j), σ² = Σ ω_j (x(s_j) − μ)²"


def _jacobian_label(eng: InverseResidual, mode: str) -> str:
    return f"{mode}, {'analytic' if eng.analytic else 'finite differences'}"


def solve_inverse(problem: InverseProblem, u=None) -> dict[str, float]:
    """The deterministic inverse simulation (Eq. 5 of [1]_) at one point u of standard space.

    Parameters
    ----------
    problem : InverseProblem
    u : array_like, shape (dim_u,), optional
        Standard normal coordinates of x_unc (then the output errors); default 0, the medians.

    Returns
    -------
    dict of str -> float
        The unknowns.

    Raises
    ------
    UncertaintyError
        No solution found from ``problem.guess`` (infeasible outputs), or a solution on an
        unphysical branch.
    """
    eng = InverseResidual(problem, "newton")
    u = np.zeros(eng.nu) if u is None else np.asarray(u, dtype=float).reshape(eng.nu)
    xhat, _, ok, _, msg = eng.newton(u, eng.x0 / eng.scale)
    if not ok:
        raise UncertaintyError(f"outputs: no solution of y = g at u = {u}: {msg}", "outputs")
    reason = eng.unphysical(np.r_[u, xhat])
    if reason:
        raise UncertaintyError(
            f"guess: the solution at u = {u} is on an unphysical branch ({reason})", "guess"
        )
    return dict(zip(problem.unknowns, map(float, eng.scale * xhat), strict=True))


def inverse_form(
    problem: InverseProblem,
    points: Mapping[str, Sequence[float] | np.ndarray],
    *,
    jacobian: str = "broyden",
    moments: bool = True,
    nodes: int = GH_NODES,
    sorm: bool = False,
    tol: float = STEP_TOL,
    max_iter: int = MAX_ITER,
) -> InverseResult:
    """CDFs, means and standard deviations of the unknowns by the single-loop method of [1]_.

    Implements Eq. (8)-(9), (11), (13)-(14) for the CDF and Eq. (19)-(22) for the moments (with
    the corrections of the module docstring). The moments integrate the percentile curve over
    w ∈ (0, 1) after the change of variable w = Φ(s):

        μ = ∫₀¹ x_w dw = ∫ x(s) φ(s) ds,    σ² = ∫ (x(s) − μ)² φ(s) ds,

    with x(s) the FORM percentile at w = Φ(s), by Gauss-Hermite quadrature in s (``nodes``
    points, probabilists' weights). Why this rule: in w the integrand is singular at both ends
    (x_w grows like Φ⁻¹(w)), which defeats Newton-Cotes and Gauss-Legendre rules in w; in s it is
    smooth (exactly linear when x_unkn is linear in u, where two nodes are exact), and an
    n-node rule integrates polynomials of degree 2n − 1 in s exactly. Each node is one
    percentile search (Eq. 21-22), solved by continuation from the median outward.

    Parameters
    ----------
    problem : InverseProblem
    points : mapping of str -> array_like
        CDF points for each unknown to analyse (units of the unknown).
    jacobian : {"broyden", "newton"}
        Constraint Jacobian strategy (module docstring).
    moments : bool
        Also compute the mean and standard deviation from ``nodes`` percentiles.
    nodes : int
        Gauss-Hermite nodes.
    sorm : bool
        Add Breitung's correction to every CDF point (finite second differences of the model
        along the surface, counted in the point's calls).
    tol : float
        Stopping tolerance on the SQP step (see :data:`STEP_TOL`).
    max_iter : int
        SQP iterations per point before it is marked not converged.

    Returns
    -------
    InverseResult

    Raises
    ------
    UncertaintyError
        Unknown variable names, an infeasible or unphysical median solve (the outputs have no
        physical solution at the medians of x_unc). A point that does not converge does not
        raise: it is marked ``converged=False`` with a message.
    """
    eng = InverseResidual(problem, jacobian)
    med = solve_median(eng)
    variables = {}
    for name, xs in points.items():
        i = _unknown_index(problem, name)
        start = eng.calls
        pts = _cdf_points(eng, med, i, xs, tol, max_iter, sorm)
        mean = std = math.nan
        pcts: list[PercentilePoint] = []
        if moments:
            mean, std, pcts = _moments(eng, med, i, nodes, tol, max_iter)
        variables[name] = VariableResult(
            name=name,
            points=tuple(pts),
            mean=mean,
            std=std,
            percentiles=tuple(pcts),
            quadrature=_quadrature_name(nodes) if moments else "",
            model_calls=eng.calls - start,
            method="single-loop",
        )
    return InverseResult(
        variables=variables,
        median=dict(zip(problem.unknowns, map(float, eng.scale * med.z[eng.nu :]), strict=True)),
        setup_calls=med.calls,
        model_calls=eng.calls,
        jacobian=_jacobian_label(eng, jacobian),
    )


def percentiles(
    problem: InverseProblem,
    name: str,
    w: Sequence[float] | np.ndarray,
    *,
    jacobian: str = "broyden",
    tol: float = STEP_TOL,
    max_iter: int = MAX_ITER,
) -> tuple[PercentilePoint, ...]:
    """FORM percentiles x_w of unknown ``name`` at levels ``w`` (Eq. 21-22 of [1]_, corrected).

    x_w is the maximum (w > 0.5) or minimum (w < 0.5) of x_unkn over {‖u‖ = |Φ⁻¹(w)|, y = g}.
    """
    eng = InverseResidual(problem, jacobian)
    med = solve_median(eng)
    return tuple(_percentile_points(eng, med, _unknown_index(problem, name), w, tol, max_iter))


# ---------------------------------------------------------------------------- double loop
def _double_loop_points(eng, med, i, xs, max_iter) -> list[CDFPoint]:
    xs = np.asarray(xs, dtype=float).reshape(-1)
    out, branches = _outward_targets(eng, med, i, xs)
    for side, targets in branches:
        a = med.D[i]
        x_prev, A = med.z[eng.nu :].copy(), med.A.copy()
        hist: list[tuple[float, np.ndarray]] = [(float(med.z[eng.nu + i]), np.zeros(eng.nu))]
        for k, x, t in targets:
            if len(hist) == 1:
                u = a * (t - hist[0][0]) / float(a @ a)  # linearized MPP
            else:
                (t_p, u_p), (t_k, u_k) = hist[-2], hist[-1]
                u = u_k + (u_k - u_p) * (t - t_k) / (t_k - t_p)
            start = eng.calls
            u, xhat, A, ok, iters, msg = _hlrf_implicit(eng, i, t, u, x_prev, A, max_iter)
            calls = eng.calls - start
            z = np.r_[u, xhat]
            sol = SQPState(z, ok, iters, msg, np.zeros(eng.n1), 0.0, A, np.zeros((eng.n, eng.n)))
            out[k] = _point_result(eng, None, sol, x, side, calls, side == "above", False)
            if out[k].converged:
                hist.append((t, u.copy()))
                x_prev = xhat
    return out  # type: ignore[return-value]


def _implicit(eng, u, xhat, A):
    """x̂(u) by an inner inverse simulation and its gradient dx̂/du = −A_x⁻¹ A_u."""
    xhat, A, ok, _, msg = eng.newton(u, xhat, A)
    if not ok:
        return xhat, None, A, False, msg
    z = np.r_[u, xhat]
    A = eng.jacobian(z, None, A) if not eng.analytic else eng.jacobian(z)
    D = -np.linalg.solve(A[:, eng.nu :], A[:, : eng.nu])
    return xhat, D, A, True, ""


def _hlrf_implicit(eng, i, t, u, xhat, A, max_iter):
    """iHLRF ([4]) on G(u) = x̂_i(u) − t, every G an inner inverse simulation (Eq. 10, 12)."""
    xhat, D, A, ok, msg = _implicit(eng, u, xhat, A)
    if not ok:
        return u, xhat, A, False, 0, f"inner inverse simulation failed: {msg}"
    for k in range(max_iter + 1):
        G, dG = float(xhat[i] - t), D[i]
        n2 = float(dG @ dG)
        if n2 == 0.0:
            return u, xhat, A, False, k, "the gradient of x_i(u) vanished"
        norm_grad = math.sqrt(n2)
        nu_ = float(np.linalg.norm(u))
        cosang = abs(float(u @ dG)) / (nu_ * norm_grad) if nu_ > 0 else 1.0
        angle = math.acos(min(1.0, cosang))
        if abs(G) / norm_grad <= DOUBLE_LOOP_TOL and angle <= DOUBLE_LOOP_ANGLE_TOL:
            return u, xhat, A, True, k, f"converged in {k} outer iterations"
        if k == max_iter:
            break
        d = ((dG @ u - G) / n2) * dG - u  # HL-RF direction
        c = IHLRF_GAMMA * max(nu_ / norm_grad, 0.5 * float((u + d) @ (u + d)) / max(abs(G), 1e-300))
        m0 = 0.5 * float(u @ u) + c * abs(G)
        slope = float(u @ d) - c * abs(G)
        lam = 1.0
        for _ in range(MAX_HALVINGS):
            trial = u + lam * d
            xt, Dt, At, okt, _ = _implicit(eng, trial, xhat, A)
            if okt:
                Gt = float(xt[i] - t)
                if 0.5 * float(trial @ trial) + c * abs(Gt) <= m0 + IHLRF_A * lam * min(slope, 0.0):
                    break
            lam *= IHLRF_B
        else:
            return u, xhat, A, False, k, "the iHLRF line search found no decrease"
        u, xhat, D, A = trial, xt, Dt, At
    return u, xhat, A, False, max_iter, f"no convergence in {max_iter} outer iterations"


def double_loop_form(
    problem: InverseProblem,
    points: Mapping[str, Sequence[float] | np.ndarray],
    *,
    max_iter: int = MAX_ITER,
) -> InverseResult:
    """CDFs by the double-loop procedure of Eq. (10), (12) and Fig. 3 of [1]_, for comparison.

    The outer loop is FORM (iHLRF, [4]_) on the limit state G(u) = x_i(u) − x; every value
    x_unkn(u) is an inner inverse simulation (Newton on y = g at fixed u, warm-started), and its
    gradient comes from the implicit-function theorem, dx_unkn/du = −(∂g/∂x_unkn)⁻¹ ∂g/∂u at the
    inner solution (one model Jacobian, analytic or by finite differences). Moments are not
    computed.
    """
    eng = InverseResidual(problem, "newton")
    med = solve_median(eng)
    variables = {}
    for name, xs in points.items():
        i = _unknown_index(problem, name)
        start = eng.calls
        pts = _double_loop_points(eng, med, i, xs, max_iter)
        variables[name] = VariableResult(
            name, tuple(pts), math.nan, math.nan, (), "", eng.calls - start, "double-loop"
        )
    return InverseResult(
        variables=variables,
        median=dict(zip(problem.unknowns, map(float, eng.scale * med.z[eng.nu :]), strict=True)),
        setup_calls=med.calls,
        model_calls=eng.calls,
        jacobian=_jacobian_label(eng, "implicit"),
    )
