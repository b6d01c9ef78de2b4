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

Solver
------
The MPP search is a sequential quadratic programming (SQP) iteration on z = (u, x̂_unkn),
x̂ = x_unkn / typical, with the model residual c(z) = g + ε − y as the expensive constraint and
the cheap one (x̂_i = x/typical, or ½(‖u‖² − β²) = 0) exact. Each step solves the KKT system by
the null-space method ([2]_ §16.2, §18.1): a normal step onto the linearized constraints, a
Newton step in their null space with the reduced Hessian (eigenvalues taken in absolute value
and floored, so the step descends). The Hessian of the Lagrangian is that of the cheap part plus
a symmetric-rank-one (SR1) approximation of Σ λ_k ∇²c_k ([2]_ §6.2, §18.3), kept from point to
point. ``jacobian="newton"`` evaluates the model Jacobian (analytic, or central differences in
z, counted) at every iterate; ``jacobian="broyden"`` (default) evaluates it once at the median
and then updates it by Broyden's rank-one secant formula ([2]_ §11.1) with every model call,
refreshing it only when an iteration stalls. The CDF points of a variable are solved outward from
the median in two branches, each started from a predictor: the tangent of the KKT solution in x
(implicit-function theorem) plus the quadratic term through the previous solution. The
iteration stops when the SQP step is below ``tol``; the point z + Δz is accepted without a further
model call.

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
from dataclasses import dataclass, field

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy import linalg, stats
from scipy.spatial import cKDTree

from uncertainty.distributions import IndependentTransform
from uncertainty.errors import UncertaintyError
from uncertainty.model import CachedModel, Model

__all__ = [
    "JACOBIANS",
    "STEP_TOL",
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

#: Jacobian strategies of the single-loop search.
JACOBIANS = ("broyden", "newton")

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

#: Step halvings when the model returns a non-finite value at a trial point.
MAX_HALVINGS = 30

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

#: Stopping tolerance of the Newton solves of y = g for x̂_unkn (median, double-loop inner solves,
#: Monte Carlo): scaled step ‖Δx̂‖_∞. Quadratic convergence leaves the solution at roundoff.
NEWTON_TOL = 1e-10

#: Iteration cap of those Newton solves.
NEWTON_MAX_ITER = 50

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

#: Monte Carlo: rounds of restarts of the unsolved samples from their nearest solved neighbour.
MC_RESTARTS = 5

#: Monte Carlo samples solved per batch (bounds the memory of the batched Newton iteration).
MC_BATCH = 100_000


# ------------------------------------------------------------------------------------ problem
@dataclass(frozen=True)
class InverseProblem:
    """An inverse simulation under uncertainty (the model of Sec. 2 of [1]_).

    Parameters
    ----------
    model : Model or CachedModel
        y = g(x); its inputs are split exactly into ``unknowns``, ``known`` and ``uncertain``.
        It must have as many outputs as there are unknowns (the first category of [1]).
    outputs : mapping
        Measured y by output name (units of the outputs).
    unknowns : sequence of str
        Names of x_unkn, the inputs to identify.
    uncertain : sequence of str
        Names of x_unc, in the order of ``transform``.
    transform : IndependentTransform or NatafTransform
        u -> x_unc, dimension ``len(uncertain)``.
    known : mapping
        Values of x_kn by name.
    output_errors : IndependentTransform or NatafTransform, optional
        Law of additive measurement errors ε, one per output in model output order:
        y_measured = g(x) + ε. Their standard normal coordinates follow those of x_unc in u.
    guess : mapping, optional
        Starting values of the unknowns for the median solve (default 1 each).
    typical : mapping, optional
        Typical magnitudes of the unknowns: they scale the unknowns in the solvers (steps,
        finite differences, tolerances). Default max(|guess|, 1e-3·...) falling back to 1.
    """

    model: Model | CachedModel
    outputs: Mapping[str, float]
    unknowns: Sequence[str]
    uncertain: Sequence[str]
    transform: IndependentTransform
    known: Mapping[str, float] = field(default_factory=dict)
    output_errors: IndependentTransform | None = None
    guess: Mapping[str, float] | None = None
    typical: Mapping[str, float] | None = None

    def __post_init__(self):
        names = tuple(self.model.input_names)
        groups = {
            "unknowns": tuple(self.unknowns),
            "uncertain": tuple(self.uncertain),
            "known": tuple(self.known),
        }
        seen: dict[str, str] = {}
        for group, members in groups.items():
            for name in members:
                if name not in names:
                    raise UncertaintyError(
                        f"{group}: {name!r} is not a model input; inputs are {', '.join(names)}",
                        group,
                    )
                if name in seen:
                    raise UncertaintyError(
                        f"{group}: {name!r} is also listed in {seen[name]}", group
                    )
                seen[name] = group
        missing = [n for n in names if n not in seen]
        if missing:
            raise UncertaintyError(
                f"known: no role for model input(s) {', '.join(missing)}; list each among "
                "unknowns, uncertain or known",
                "known",
            )
        outs = tuple(self.model.output_names)
        if set(self.outputs) != set(outs):
            raise UncertaintyError(
                f"outputs: expected a value for each of {', '.join(outs)}, got "
                f"{', '.join(self.outputs) or '(none)'}",
                "outputs",
            )
        if len(outs) != len(self.unknowns) or not self.unknowns:
            raise UncertaintyError(
                f"unknowns: the model has {len(outs)} outputs and {len(self.unknowns)} unknowns; "
                "the inverse simulation needs as many unknowns as outputs (at least one)",
                "unknowns",
            )
        if self.transform.dim != len(self.uncertain):
            raise UncertaintyError(
                f"transform: maps {self.transform.dim} variables, {len(self.uncertain)} are "
                "uncertain",
                "transform",
            )
        if self.output_errors is not None and self.output_errors.dim != len(outs):
            raise UncertaintyError(
                f"output_errors: maps {self.output_errors.dim} variables, the model has "
                f"{len(outs)} outputs",
                "output_errors",
            )
        for group in ("guess", "typical"):
            given = getattr(self, group) or {}
            extra = set(given) - set(self.unknowns)
            if extra:
                raise UncertaintyError(
                    f"{group}: {', '.join(sorted(extra))} are not unknowns", group
                )
        for name, v in (self.typical or {}).items():
            if not (math.isfinite(float(v)) and float(v) > 0.0):
                raise UncertaintyError(f"typical: {name} needs a positive magnitude", "typical")

    @property
    def dim_u(self) -> int:
        """Dimension of u: uncertain inputs plus output errors."""
        return self.transform.dim + (0 if self.output_errors is None else self.output_errors.dim)


# ------------------------------------------------------------------------------------ results
@dataclass(frozen=True)
class CDFPoint:
    """One CDF value F_i(x) = Pr(x_unkn,i < x).

    Attributes
    ----------
    x : float
        The point (units of the unknown).
    F : float
        FORM value Φ(β) above the median, 1 − Φ(β) below (Eq. 8, 11 of [1]_); from the last
        iterate when not converged.
    beta : float
        ‖u*‖ ≥ 0.
    side : str
        ``"above"`` (x ≥ the median x_i(u = 0): Eq. 8/13) or ``"below"`` (Eq. 11/14).
    converged : bool
        The search met its tolerance and the solution is on a physical branch.
    model_calls : int
        Model evaluations for this point (finite-difference points and analytic Jacobians count
        one each), including SORM's.
    iterations : int
        SQP (or, for the double loop, outer FORM) iterations.
    u_star : ndarray, shape (dim_u,)
        MPP in standard normal space (x_unc coordinates, then output errors).
    x_unkn_star : ndarray, shape (n_unknowns,)
        Unknowns at the MPP, in ``problem.unknowns`` order.
    x_unc_star : ndarray, shape (n_uncertain,)
        Uncertain inputs at the MPP, T(u*).
    message : str
        What happened, for a user.
    F_sorm : float
        Breitung's SORM value (NaN unless requested, when a 1 + βκ_j ≤ 0, and at the median,
        β = 0, where Breitung's asymptotic formula has no meaning; F = 1/2 there).
    curvatures : ndarray, shape (dim_u - 1,)
        Principal curvatures κ_j of {u : x_i(u) = x} at u*, positive when the far side (the
        region not containing u = 0) curves away from the origin; empty unless SORM was asked.
    """

    x: float
    F: float
    beta: float
    side: str
    converged: bool
    model_calls: int
    iterations: int
    u_star: np.ndarray
    x_unkn_star: np.ndarray
    x_unc_star: np.ndarray
    message: str
    F_sorm: float = math.nan
    curvatures: np.ndarray = field(default_factory=lambda: np.empty(0))


@dataclass(frozen=True)
class PercentilePoint:
    """One percentile x_w of an unknown (Eq. 21-22 of [1]_, max and min as corrected).

    Attributes
    ----------
    w : float
        Probability level, F(x_w) = w.
    s : float
        Φ⁻¹(w); ‖u*‖ = |s|.
    x : float
        The percentile (units of the unknown); from the last iterate when not converged.
    converged, model_calls, iterations, u_star, x_unkn_star, message
        As in :class:`CDFPoint`.
    """

    w: float
    s: float
    x: float
    converged: bool
    model_calls: int
    iterations: int
    u_star: np.ndarray
    x_unkn_star: np.ndarray
    message: str


@dataclass(frozen=True)
class VariableResult:
    """CDF and moments of one unknown.

    Attributes
    ----------
    name : str
    points : tuple of CDFPoint
        In the order the points were given.
    mean, std : float
        From the percentiles (Eq. 19-20 of [1]_); NaN when not computed or when a node failed.
    percentiles : tuple of PercentilePoint
        The quadrature nodes (the median node needs no search).
    quadrature : str
        The rule used for the moments.
    model_calls : int
        Model evaluations of the CDF points and the percentiles of this variable.
    method : str
        ``"single-loop"`` or ``"double-loop"``.
    """

    name: str
    points: tuple[CDFPoint, ...]
    mean: float
    std: float
    percentiles: tuple[PercentilePoint, ...]
    quadrature: str
    model_calls: int
    method: str

    @property
    def x(self) -> np.ndarray:
        return np.array([p.x for p in self.points])

    @property
    def F(self) -> np.ndarray:
        return np.array([p.F for p in self.points])

    @property
    def calls(self) -> np.ndarray:
        """Model calls per CDF point."""
        return np.array([p.model_calls for p in self.points], dtype=int)

    @property
    def converged(self) -> bool:
        return all(p.converged for p in self.points) and all(p.converged for p in self.percentiles)


@dataclass(frozen=True)
class InverseResult:
    """Outcome of :func:`inverse_form` or :func:`double_loop_form`.

    Attributes
    ----------
    variables : dict of str -> VariableResult
    median : dict of str -> float
        The unknowns at u = 0 (the deterministic inverse simulation at the medians of x_unc).
    setup_calls : int
        Model evaluations of the median solve and of the Jacobian there, shared by all points.
    model_calls : int
        All model evaluations.
    jacobian : str
        ``"broyden"``, ``"newton"`` (single loop) or ``"implicit"`` (double loop), with
        ``"analytic"`` or ``"finite differences"`` for the model's Jacobian.
    """

    variables: dict[str, VariableResult]
    median: dict[str, float]
    setup_calls: int
    model_calls: int
    jacobian: str

    def __getitem__(self, name: str) -> VariableResult:
        return self.variables[name]


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


# ------------------------------------------------------------------------------------- engine
@dataclass
class _Solve:
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


class _Engine:
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


class _Task:
    """Cheap part of one search: objective f and the exact constraint h, as functions of z."""

    def __init__(self, eng: _Engine, kind: str, i: int, target: float, sigma: float = 1.0):
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


def _sqp(eng: _Engine, task: _Task, z, A, B, anchor, tol, max_iter) -> _Solve:
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
        return _Solve(
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
            return _Solve(
                z, False, k, "the constraint Jacobian is rank deficient", lam, nu, A, B, anchor
            )
        step = float(np.max(np.abs(d)))
        lam, nu = mu[:m], float(mu[m])
        if step <= tol:
            return _Solve(
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
            return _Solve(
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
    return _Solve(
        z, False, max_iter, f"no convergence in {max_iter} iterations", lam, nu, A, B, anchor
    )


def _tangent(task: _Task, sol: _Solve) -> np.ndarray | None:
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


def _predict(t, hist, tangent):
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


@dataclass
class _Median:
    z: np.ndarray
    A: np.ndarray
    calls: int
    D: np.ndarray  # dx̂/du at the median, shape (n1, nu)


def _named(eng: _Engine, xhat: np.ndarray) -> dict[str, float]:
    """Unknowns by name from scaled values x̂."""
    return dict(zip(eng.problem.unknowns, map(float, eng.scale * xhat), strict=True))


def _median(eng: _Engine) -> _Median:
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
    return _Median(z, A, eng.calls - start, D)


# --------------------------------------------------------------------------------- SORM
def _sorm(eng: _Engine, task: _Task, sol: _Solve, beta: float):
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


def _branches(values, center):
    """Indices of the values at/above ``center`` ascending and below it descending."""
    values = np.asarray(values, dtype=float)
    order = np.argsort(values, kind="stable")
    above = [int(k) for k in order if values[k] >= center]
    below = [int(k) for k in order[::-1] if values[k] < center]
    return above, below


def _cdf_points(eng, med, i, xs, tol, max_iter, sorm) -> list[CDFPoint]:
    xs = np.asarray(xs, dtype=float).reshape(-1)
    if not np.all(np.isfinite(xs)):
        raise UncertaintyError("points: CDF points must be finite", "points")
    x_med = float(eng.scale[i] * med.z[eng.nu + i])
    out: list[CDFPoint | None] = [None] * xs.size
    above, below = _branches(xs, x_med)
    for branch, side in ((above, "above"), (below, "below")):
        t_med = med.z[eng.nu + i]
        hist = [(t_med, med.z.copy())]
        A, B = med.A.copy(), np.zeros((eng.n, eng.n))
        anchor = (med.z.copy(), med.A.copy())
        task0 = _Task(eng, "cdf", i, t_med)
        tangent = _tangent(task0, _Solve(med.z, True, 0, "", np.zeros(eng.n1), 0.0, A, B))
        for k in branch:
            x = xs[k]
            if x == x_med:
                out[k] = _median_point(eng, x, med)
                continue
            t = x / eng.scale[i]
            task = _Task(eng, "cdf", i, t)
            z0 = _predict(t, hist, tangent)
            z0[eng.nu + i] = t
            start = eng.calls
            sol = _sqp(eng, task, z0, A, B, anchor, tol, max_iter)
            calls = eng.calls - start
            anchor = sol.anchor
            out[k] = _point_result(eng, task, sol, x, side, calls, side == "above", sorm)
            if out[k].converged:
                A, B = sol.A, sol.B
                tangent = _tangent(task, sol)
                hist.append((t, sol.z.copy()))
    return out  # type: ignore[return-value]


def _percentile_points(eng, med, i, ws, tol, max_iter) -> list[PercentilePoint]:
    ws = np.asarray(ws, dtype=float).reshape(-1)
    if not np.all((ws > 0.0) & (ws < 1.0)):
        raise UncertaintyError("w: probability levels must lie in (0, 1)", "w")
    s_all = stats.norm.ppf(ws)
    out: list[PercentilePoint | None] = [None] * ws.size
    above, below = _branches(s_all, 0.0)
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
            task = _Task(eng, "pct", i, beta, sigma)
            z0 = _predict(beta, hist, tangent)
            nrm = float(np.linalg.norm(z0[: eng.nu]))
            if nrm > 0:
                z0[: eng.nu] *= beta / nrm
            start = eng.calls
            sol = _sqp(eng, task, z0, A, B, anchor, tol, max_iter)
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
                tangent = _tangent(task, sol)
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


def _jacobian_label(eng: _Engine, mode: str) -> str:
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
    eng = _Engine(problem, "newton")
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
    eng = _Engine(problem, jacobian)
    med = _median(eng)
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
    eng = _Engine(problem, jacobian)
    med = _median(eng)
    return tuple(_percentile_points(eng, med, _unknown_index(problem, name), w, tol, max_iter))


# ---------------------------------------------------------------------------- double loop
def _double_loop_points(eng, med, i, xs, max_iter) -> list[CDFPoint]:
    xs = np.asarray(xs, dtype=float).reshape(-1)
    x_med = float(eng.scale[i] * med.z[eng.nu + i])
    out: list[CDFPoint | None] = [None] * xs.size
    above, below = _branches(xs, x_med)
    for branch, side in ((above, "above"), (below, "below")):
        a = med.D[i]
        u_prev, x_prev, A = None, med.z[eng.nu :].copy(), med.A.copy()
        hist: list[tuple[float, np.ndarray]] = [(float(med.z[eng.nu + i]), np.zeros(eng.nu))]
        for k in branch:
            x = xs[k]
            if x == x_med:
                out[k] = _median_point(eng, x, med)
                continue
            t = x / eng.scale[i]
            if len(hist) == 1:
                u = a * (t - hist[0][0]) / float(a @ a)  # linearized MPP
            else:
                (t_p, u_p), (t_k, u_k) = hist[-2], hist[-1]
                u = u_k + (u_k - u_p) * (t - t_k) / (t_k - t_p)
            start = eng.calls
            u, xhat, A, ok, iters, msg = _hlrf_implicit(eng, i, t, u, x_prev, A, max_iter)
            calls = eng.calls - start
            z = np.r_[u, xhat]
            sol = _Solve(z, ok, iters, msg, np.zeros(eng.n1), 0.0, A, np.zeros((eng.n, eng.n)))
            out[k] = _point_result(eng, None, sol, x, side, calls, side == "above", False)
            if out[k].converged:
                hist.append((t, u.copy()))
                x_prev = xhat
            u_prev = u
    del u_prev
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
    eng = _Engine(problem, "newton")
    med = _median(eng)
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


# ---------------------------------------------------------------------------- Monte Carlo
def _batch_jacobian(eng: _Engine, X: np.ndarray, R: np.ndarray) -> np.ndarray:
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


def _solve_batch(eng: _Engine, U: np.ndarray, x0: np.ndarray):
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


def _classify(eng: _Engine, U: np.ndarray, xh: np.ndarray, ok: np.ndarray):
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
    eng = _Engine(problem, "newton")
    med = _median(eng)
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
