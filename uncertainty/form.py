"""First- and second-order reliability methods: the most probable point of failure in normal space.

A limit state g splits the inputs into failure (g ≤ 0) and safety (g > 0). FORM maps the inputs
to independent standard normals u (``uncertainty.distributions`` transforms), finds the most
probable point (MPP) u* = argmin ‖u‖ subject to g(u) = 0 ([1]_), and reports the reliability
index β = sign(g(0)) ‖u*‖ and pf ≈ Φ(-β). SORM corrects pf with the principal curvatures of the
limit state at u* ([4]_, [5]_, [6]_).

MPP searches (``method``):

``"hlrf"``
    The Hasofer-Lind-Rackwitz-Fiessler iteration ([1]_, [2]_): full steps to the closest point of
    the linearized limit state.
``"ihlrf"`` (default)
    HL-RF with the step size of Zhang & Der Kiureghian ([3]_): an Armijo line search on the merit
    function m(u) = ½‖u‖² + c|g(u)|, which makes the iteration converge where plain HL-RF cycles.
``"slsqp"``
    ``scipy.optimize.minimize(method="SLSQP")`` on min ½‖u‖² s.t. g(u) = 0.

Every evaluation goes through one :class:`~uncertainty.model.CachedModel` in u, which counts
model calls and serves gradients: the model's analytic Jacobian when it has one (chained with
the transform's dx/du), otherwise central finite differences in u.

References
----------
.. [1] A. M. Hasofer, N. C. Lind, Exact and invariant second-moment code format, J. Eng. Mech.
       Div. ASCE 100(1) (1974) 111-121.
.. [2] R. Rackwitz, B. Fiessler, Structural reliability under combined random load sequences,
       Computers & Structures 9(5) (1978) 489-494.
.. [3] Y. Zhang, A. Der Kiureghian, Finite element reliability methods for inelastic structures,
       Report UCB/SEMM-97/05, University of California, Berkeley (1997).
.. [4] K. Breitung, Asymptotic approximations for multinormal integrals, J. Eng. Mech. ASCE
       110(3) (1984) 357-366.
.. [5] L. Tvedt, Distribution of quadratic forms in normal space - application to structural
       reliability, J. Eng. Mech. ASCE 116(6) (1990) 1183-1197.
.. [6] L. Tvedt, Two second-order approximations to the failure probability, Veritas report,
       Det norske Veritas, Høvik (1984); the three-term formula as quoted in A. Der Kiureghian,
       First- and second-order reliability methods, in Engineering Design Reliability Handbook,
       CRC Press (2005).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from scipy import integrate, linalg, optimize, stats

from uncertainty.distributions import IndependentTransform
from uncertainty.errors import UncertaintyError
from uncertainty.model import MACHINE_NOISE, CachedModel, Model

__all__ = [
    "METHODS",
    "Residual",
    "FORMResult",
    "SORMResult",
    "limit_state_model",
    "form",
    "sorm",
    "breitung",
    "tvedt",
    "parabolic_pf",
]

#: MPP search methods accepted by :func:`form`.
METHODS = ("ihlrf", "hlrf", "slsqp")

#: Default tolerance on |g(u)|/‖∇g(u)‖, the distance (in standard deviations) from u to the
#: linearized limit state: β is then accurate to about this much.
G_TOL = 1e-8

#: Default tolerance on the angle (rad) between u and ∇g(u), the first-order optimality (KKT)
#: condition u ∥ ∇g. Off the MPP by an angle θ on the limit state, ‖u‖ exceeds β by O(β θ²), so
#: 1e-6 leaves β exact to ~1e-12 while staying above the angle error of finite-difference
#: gradients (~1e-10 for a closed form).
ANGLE_TOL = 1e-6

#: Default cap on MPP iterations.
MAX_ITER = 100

#: Step-size rule of [3]: merit m(u) = ½‖u‖² + c|g(u)| with c = γ max(‖u‖, ‖u + d‖)/‖∇g‖, γ > 1,
#: which meets the descent condition c > ‖u‖/‖∇g‖ of [3], is positive at the origin (‖u + d‖ is
#: the distance to the linearized limit state) and stays bounded near the MPP; Armijo rule with
#: sufficient-decrease fraction a and reduction factor b. With a ≤ ½ the full HL-RF step, exact
#: for a linear g, always passes.
IHLRF_GAMMA = 2.0
IHLRF_A = 0.1
IHLRF_B = 0.5

#: Step halvings before the iHLRF line search gives up (b^40 ≈ 1e-12: a step below that cannot
#: change u in double precision relative to a unit-size step).
MAX_HALVINGS = 40

#: SLSQP's stopping tolerance on the objective ½‖u‖²: a change of 1e-10 moves β by 1e-10/β. Tighter
#: values make SLSQP iterate on the finite-difference noise at a solution it already has (seen:
#: 96 iterations at the MPP with 1e-14). Convergence is judged by :class:`Residual`, not by SLSQP.
SLSQP_FTOL = 1e-10


class Residual(NamedTuple):
    """How far a candidate MPP u is from satisfying the optimality conditions.

    Attributes
    ----------
    g : float
        |g(u)| / ‖∇g(u)‖: the constraint residual relative to the gradient, i.e. the distance from
        u to the linearized limit state in standard deviations.
    angle : float
        Angle (rad) between u and the line of ∇g(u) (KKT: u = -λ ∇g); 0 when u = 0.
    """

    g: float
    angle: float


@dataclass(frozen=True)
class FORMResult:
    """Outcome of :func:`form`.

    Attributes
    ----------
    converged : bool
        Both optimality measures in ``residual`` met their tolerances.
    beta : float
        Reliability index sign(g(0)) ‖u*‖ ([1]_): negative when the origin (the median point)
        fails.
    pf : float
        First-order failure probability Φ(-β).
    u_star : ndarray, shape (dim,)
        MPP in standard normal space.
    x_star : ndarray, shape (dim,)
        MPP in physical space (= u_star without a transform), units of the inputs.
    alpha : ndarray, shape (dim,)
        Unit normal -∇g(u*)/‖∇g(u*)‖; u* = β α at a converged MPP, and α_i² are the
        importance factors of the inputs.
    residual : Residual
        Constraint residual and KKT angle at u*.
    iterations : int
        MPP iterations (HL-RF/iHLRF updates, SLSQP major iterations).
    model_calls : int
        Evaluations of the limit state (finite-difference points and analytic Jacobians count
        one each), as counted by the :class:`~uncertainty.model.CachedModel`.
    message : str
        What happened, for a user.
    method : str
    g_star : float
        g(u*).
    gradient : ndarray, shape (dim,)
        ∇g(u*) in standard normal space.
    limit_state : CachedModel
        The counted limit state in u (for :func:`sorm`).
    """

    converged: bool
    beta: float
    pf: float
    u_star: np.ndarray
    x_star: np.ndarray
    alpha: np.ndarray
    residual: Residual
    iterations: int
    model_calls: int
    message: str
    method: str
    g_star: float
    gradient: np.ndarray
    limit_state: CachedModel = field(repr=False, compare=False)


@dataclass(frozen=True)
class SORMResult:
    """Outcome of :func:`sorm`: curvature-corrected failure probabilities at a FORM MPP.

    Attributes
    ----------
    beta_form, pf_form : float
        FORM values.
    kappa : ndarray, shape (dim - 1,)
        Principal curvatures of the limit state at u*, positive when the failure domain curves
        away from the origin (it is then smaller than the FORM half-space).
    pf_breitung, beta_breitung : float
        Breitung's asymptotic formula ([4]_) and -Φ^{-1}(pf); NaN when not ``valid``.
    pf_tvedt, beta_tvedt : float
        Tvedt's three-term formula ([6]_); NaN when a factor 1 + (β + 1) κ_i ≤ 0.
    pf_parabolic, beta_parabolic : float
        Exact probability content of the paraboloid with these curvatures through u* (Tvedt's
        exact result [5]_, evaluated by numerical inversion of its Laplace transform); finite
        for any curvatures.
    valid : bool
        Every 1 + β κ_i > 0: the paraboloid is bounded and Breitung's formula applies.
    hessian : ndarray, shape (dim, dim)
        ∇²g(u*) in standard normal space.
    model_calls : int
        Limit-state evaluations spent on the Hessian.
    message : str
    """

    beta_form: float
    pf_form: float
    kappa: np.ndarray
    pf_breitung: float
    beta_breitung: float
    pf_tvedt: float
    beta_tvedt: float
    pf_parabolic: float
    beta_parabolic: float
    valid: bool
    hessian: np.ndarray
    model_calls: int
    message: str


# -------------------------------------------------------------------------------- limit state
class _CallableModel:
    """Model adapter for a scalar limit state g(x) with optional analytic derivatives."""

    def __init__(
        self,
        func: Callable[[np.ndarray], float],
        dim: int,
        gradient: Callable[[np.ndarray], np.ndarray] | None,
        hessian: Callable[[np.ndarray], np.ndarray] | None,
        noise: float,
    ):
        self.func = func
        self.input_names = tuple(f"x[{i}]" for i in range(dim))
        self.output_names = ("g",)
        self.noise = float(noise)
        self._gradient = gradient
        self._hessian = hessian
        if gradient is None:
            self.jacobian = None  # type: ignore[assignment]
        if hessian is None:
            self.hessian = None  # type: ignore[assignment]

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        return np.atleast_1d(np.asarray(self.func(x), dtype=float))

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        assert self._gradient is not None
        return np.asarray(self._gradient(x), dtype=float).reshape(1, -1)

    def hessian(self, x: np.ndarray) -> np.ndarray:
        assert self._hessian is not None
        n = x.size
        return np.asarray(self._hessian(x), dtype=float).reshape(1, n, n)


class _NormalSpaceModel:
    """g(T(u)) as a model in u; analytic gradient ∇_x g · dx/du when g has one in x."""

    def __init__(self, model_x: Model | CachedModel, transform: IndependentTransform):
        self.model_x = model_x
        self.transform = transform
        self.input_names = tuple(f"u[{i}]" for i in range(transform.dim))
        self.output_names = tuple(model_x.output_names)
        self.noise = float(model_x.noise)
        analytic = (
            model_x.analytic_jacobian
            if isinstance(model_x, CachedModel)
            else callable(getattr(model_x, "jacobian", None))
        )
        if not analytic:
            self.jacobian = None  # type: ignore[assignment]
        # no analytic Hessian in u: it would need the derivatives of the marginal densities

    def evaluate(self, u: np.ndarray) -> np.ndarray:
        return self.model_x.evaluate(self.transform.to_x(u))

    def jacobian(self, u: np.ndarray) -> np.ndarray:
        x = self.transform.to_x(u)
        J = np.asarray(self.model_x.jacobian(x), dtype=float).reshape(1, -1)  # type: ignore[union-attr]
        return J @ self.transform.jacobian(u)


def limit_state_model(
    g: Callable[[np.ndarray], float] | Model | CachedModel,
    transform: IndependentTransform | None = None,
    *,
    dim: int | None = None,
    gradient: Callable[[np.ndarray], np.ndarray] | None = None,
    hessian: Callable[[np.ndarray], np.ndarray] | None = None,
    noise: float = MACHINE_NOISE,
) -> CachedModel:
    """The limit state as a counted model in standard normal space.

    Parameters
    ----------
    g : callable, Model or CachedModel
        ``g(x) -> float``, or a model with one output. With ``transform`` it is a function of the
        physical inputs x, otherwise of u directly.
    transform : IndependentTransform or NatafTransform, optional
        Map u -> x.
    dim : int, optional
        Number of inputs, needed only for a plain callable without ``transform``.
    gradient, hessian : callable, optional
        Analytic ``∇g(x) -> (dim,)`` and ``∇²g(x) -> (dim, dim)`` of a plain callable. A Hessian
        is accepted only without ``transform`` (in u it would need the derivatives of the
        marginal densities); otherwise :func:`sorm` uses finite differences in u.
    noise : float
        Relative noise of g (sets finite-difference steps); default :data:`MACHINE_NOISE`.

    Returns
    -------
    CachedModel
        Inputs ``u[0]``, ``u[1]``, ...; one output.
    """
    if isinstance(g, CachedModel) or isinstance(g, Model):
        model = g
        n = len(g.input_names)
        if gradient is not None or hessian is not None:
            raise UncertaintyError(
                "gradient: give derivatives through the model, not next to it", "gradient"
            )
    elif callable(g):
        n = transform.dim if transform is not None else dim
        if n is None:
            raise UncertaintyError(
                "dim: a limit state on u without a transform needs dim (or u0)", "dim"
            )
        if hessian is not None and transform is not None:
            raise UncertaintyError(
                "hessian: an analytic Hessian is used only for a limit state on u (no transform)",
                "hessian",
            )
        model = _CallableModel(g, int(n), gradient, hessian, noise)
    else:
        raise UncertaintyError(f"g: expected a callable or a Model, got {g!r}", "g")
    if len(model.output_names) != 1:
        raise UncertaintyError(
            f"g: a limit state has one output, the model has {len(model.output_names)}", "g"
        )
    if transform is None:
        return model if isinstance(model, CachedModel) else CachedModel(model)
    if n != transform.dim:
        raise UncertaintyError(
            f"transform: g takes {n} inputs, the transform maps {transform.dim}", "transform"
        )
    return CachedModel(_NormalSpaceModel(model, transform))


# -------------------------------------------------------------------------------------- FORM
def _residual(u: np.ndarray, G: float, dG: np.ndarray) -> Residual:
    norm_grad = float(np.linalg.norm(dG))
    g_res = abs(G) / norm_grad if norm_grad > 0 else math.inf
    norm_u = float(np.linalg.norm(u))
    if norm_u == 0.0:
        return Residual(g_res, 0.0)
    if norm_grad == 0.0:
        return Residual(g_res, math.pi / 2)
    n = dG / norm_grad
    along = float(u @ n)
    across = float(np.linalg.norm(u - along * n))
    return Residual(g_res, math.atan2(across, abs(along)))


def _value_and_gradient(ls: CachedModel, u: np.ndarray) -> tuple[float, np.ndarray]:
    return float(ls.evaluate(u)[0]), ls.jacobian(u)[0].copy()


def _hlrf(ls, u0, improved, tol, angle_tol, max_iter):
    """HL-RF ([1], [2]) or iHLRF ([3]): returns (u, G, ∇G, iterations, ok, message)."""
    u = u0.copy()
    G, dG = _value_and_gradient(ls, u)
    for k in range(max_iter + 1):
        if not (math.isfinite(G) and np.all(np.isfinite(dG))):
            return u, G, dG, k, False, f"g or its gradient is not finite at u = {u}"
        res = _residual(u, G, dG)
        if res.g <= tol and res.angle <= angle_tol:
            return u, G, dG, k, True, f"converged in {k} iterations"
        if k == max_iter:
            break
        n2 = float(dG @ dG)
        if n2 == 0.0:
            return u, G, dG, k, False, f"the gradient of g vanished at u = {u}"
        # HL-RF step ([2]): to the closest point of the linearized limit state,
        # u_{k+1} = [(∇g·u_k - g(u_k)) / ‖∇g‖²] ∇g, i.e. the direction d = u_{k+1} - u_k
        d = ((dG @ u - G) / n2) * dG - u
        lam = 1.0
        if improved:
            # [3]: merit m(u) = ½‖u‖² + c|g(u)|; d descends m when c > ‖u‖/‖∇g‖
            c = IHLRF_GAMMA * max(np.linalg.norm(u), np.linalg.norm(u + d)) / math.sqrt(n2)
            m0 = 0.5 * float(u @ u) + c * abs(G)
            slope = float(u @ d) - c * abs(G)  # ∇m·d, using ∇g·d = -g
            if slope < 0.0:  # Armijo rule: largest b^j with m(u + b^j d) <= m0 + a b^j slope
                for _ in range(MAX_HALVINGS):
                    trial = u + lam * d
                    Gt = float(ls.evaluate(trial)[0])
                    if (
                        math.isfinite(Gt)
                        and 0.5 * float(trial @ trial) + c * abs(Gt) <= m0 + IHLRF_A * lam * slope
                    ):
                        break
                    lam *= IHLRF_B
                else:
                    return u, G, dG, k, False, "the iHLRF line search found no decrease"
        u = u + lam * d
        G, dG = _value_and_gradient(ls, u)
    return u, G, dG, max_iter, False, f"no convergence in {max_iter} iterations"


def _slsqp(ls, u0, tol, angle_tol, max_iter):
    """min ½‖u‖² s.t. g(u) = 0 by SLSQP: returns (u, G, ∇G, iterations, ok, message)."""
    G0 = float(ls.evaluate(u0)[0])
    scale = abs(G0) if G0 != 0.0 and math.isfinite(G0) else 1.0  # SLSQP sees g of order 1
    constraint = {
        "type": "eq",
        "fun": lambda u: ls.evaluate(u) / scale,
        "jac": lambda u: ls.jacobian(u) / scale,
    }
    out = optimize.minimize(
        lambda u: 0.5 * float(u @ u),
        u0,
        jac=lambda u: np.asarray(u, dtype=float),
        method="SLSQP",
        constraints=[constraint],
        options={"maxiter": max_iter, "ftol": SLSQP_FTOL},
    )
    u = np.asarray(out.x, dtype=float)
    G, dG = _value_and_gradient(ls, u)
    if not (math.isfinite(G) and np.all(np.isfinite(dG))):
        return u, G, dG, int(out.nit), False, f"g or its gradient is not finite at u = {u}"
    res = _residual(u, G, dG)
    ok = res.g <= tol and res.angle <= angle_tol
    if ok:
        msg = f"converged in {out.nit} SLSQP iterations"
        if not out.success:
            msg += f" (SLSQP itself stopped with: {out.message})"
    else:
        msg = f"SLSQP stopped ({out.message}) short of the tolerances"
    return u, G, dG, int(out.nit), ok, msg


def form(
    g: Callable[[np.ndarray], float] | Model | CachedModel,
    transform: IndependentTransform | None = None,
    *,
    method: str = "ihlrf",
    u0: np.ndarray | None = None,
    dim: int | None = None,
    gradient: Callable[[np.ndarray], np.ndarray] | None = None,
    hessian: Callable[[np.ndarray], np.ndarray] | None = None,
    noise: float = MACHINE_NOISE,
    tol: float = G_TOL,
    angle_tol: float = ANGLE_TOL,
    max_iter: int = MAX_ITER,
    strict: bool = False,
) -> FORMResult:
    """First-order reliability analysis of P[g ≤ 0]: the MPP u* and β = sign(g(0)) ‖u*‖.

    Implements the MPP problem of [1]_ (min ‖u‖ on g(u) = 0) with the HL-RF iteration of [2]_,
    its step-size control of [3]_ or SLSQP; pf = Φ(-β).

    Parameters
    ----------
    g : callable, Model or CachedModel
        Limit state: ``g(x) -> float`` on the physical inputs when ``transform`` is given, else
        on u; failure is g ≤ 0. A model with one output is used as is (a
        :class:`~uncertainty.model.CachedModel` keeps its cache and counts).
    transform : IndependentTransform or NatafTransform, optional
        Map from standard normal u to x.
    method : {"ihlrf", "hlrf", "slsqp"}
    u0 : array_like, shape (dim,), optional
        Starting point in u (default the origin, the median point).
    dim : int, optional
        Number of inputs of a plain callable on u (no ``transform`` and no ``u0``).
    gradient : callable, optional
        Analytic ``∇g(x) -> (dim,)`` of a plain callable; default central differences in u.
    hessian : callable, optional
        Analytic ``∇²g(u) -> (dim, dim)`` of a plain callable on u (no ``transform``), kept for
        :func:`sorm`.
    noise : float
        Relative noise of g, for the finite-difference steps.
    tol : float
        Tolerance on |g(u*)|/‖∇g(u*)‖ (standard deviations; see :data:`G_TOL`).
    angle_tol : float
        Tolerance (rad) on the angle between u* and ∇g(u*) (see :data:`ANGLE_TOL`).
    max_iter : int
        Iteration cap.
    strict : bool
        Raise :class:`UncertaintyError` instead of returning ``converged=False``.

    Returns
    -------
    FORMResult
        The sign of β needs g(0): free from the cache when ``u0`` is the origin, one more
        model call otherwise.
    """
    if method not in METHODS:
        raise UncertaintyError(
            f"method: unknown MPP search {method!r}; expected one of {', '.join(METHODS)}",
            "method",
        )
    if dim is None and u0 is not None and transform is None:
        dim = np.asarray(u0).size
    ls = limit_state_model(g, transform, dim=dim, gradient=gradient, hessian=hessian, noise=noise)
    n = ls.n_inputs
    u0 = np.zeros(n) if u0 is None else np.asarray(u0, dtype=float).reshape(-1)
    if u0.shape != (n,):
        raise UncertaintyError(f"u0: expected shape ({n},), got {u0.shape}", "u0")
    calls0 = ls.n_evaluations

    if method == "slsqp":
        u, G, dG, iters, ok, msg = _slsqp(ls, u0, tol, angle_tol, max_iter)
    else:
        u, G, dG, iters, ok, msg = _hlrf(ls, u0, method == "ihlrf", tol, angle_tol, max_iter)
    res = _residual(u, G, dG)
    g_origin = float(ls.evaluate(np.zeros(n))[0])  # cached when u0 = 0
    beta = float(np.sign(g_origin) * np.linalg.norm(u))  # β = sign(g(0)) ‖u*‖  ([1])
    norm_grad = float(np.linalg.norm(dG))
    alpha = -dG / norm_grad if norm_grad > 0 else np.full(n, np.nan)
    if ok and np.linalg.norm(u) > 0 and np.sign(alpha @ u) != np.sign(g_origin):
        ok = False
        msg = "the MPP lies on the wrong side: g changes sign more than once between 0 and u*"
    if not ok:
        msg = f"{method}: {msg} (|g|/|∇g| = {res.g:.3g}, angle = {res.angle:.3g} rad)"
        if strict:
            raise UncertaintyError(f"form: {msg}", "form")
    x = transform.to_x(u) if transform is not None else u.copy()
    return FORMResult(
        converged=bool(ok),
        beta=beta,
        pf=float(stats.norm.sf(beta)),
        u_star=u,
        x_star=x,
        alpha=alpha,
        residual=res,
        iterations=iters,
        model_calls=ls.n_evaluations - calls0,
        message=msg,
        method=method,
        g_star=G,
        gradient=dG,
        limit_state=ls,
    )


# -------------------------------------------------------------------------------------- SORM
def _products(beta: float, kappa: np.ndarray, shift: complex = 0.0):
    """Π_i (1 + (β + shift) κ_i)^(-1/2), principal branch."""
    return np.prod((1.0 + (beta + shift) * np.asarray(kappa, dtype=complex)) ** -0.5)


def breitung(beta: float, kappa: np.ndarray) -> float:
    """Breitung's asymptotic pf ≈ Φ(-β) Π (1 + β κ_i)^(-1/2) ([4]_), for β ≥ 0.

    Returns NaN when some 1 + β κ_i ≤ 0.
    """
    kappa = np.asarray(kappa, dtype=float)
    if np.any(1.0 + beta * kappa <= 0.0):
        return math.nan
    return float(stats.norm.sf(beta) * np.prod((1.0 + beta * kappa) ** -0.5))


def tvedt(beta: float, kappa: np.ndarray) -> float:
    """Tvedt's three-term pf ([6]_) for β ≥ 0: A1 + A2 + A3 with

    A1 = Φ(-β) Π (1 + β κ_i)^(-1/2) (Breitung),
    A2 = [β Φ(-β) - φ(β)] [Π (1 + β κ_i)^(-1/2) - Π (1 + (β + 1) κ_i)^(-1/2)],
    A3 = (β + 1) [β Φ(-β) - φ(β)] [Π (1 + β κ_i)^(-1/2) - Re Π (1 + (β + i) κ_i)^(-1/2)].

    Returns NaN when some 1 + β κ_i ≤ 0 or 1 + (β + 1) κ_i ≤ 0.
    """
    kappa = np.asarray(kappa, dtype=float)
    if np.any(1.0 + beta * kappa <= 0.0) or np.any(1.0 + (beta + 1.0) * kappa <= 0.0):
        return math.nan
    p0 = _products(beta, kappa).real
    q = beta * stats.norm.sf(beta) - stats.norm.pdf(beta)
    a1 = stats.norm.sf(beta) * p0
    a2 = q * (p0 - _products(beta, kappa, 1.0).real)
    a3 = (beta + 1.0) * q * (p0 - _products(beta, kappa, 1j).real)
    return float(a1 + a2 + a3)


def parabolic_pf(beta: float, kappa: np.ndarray) -> float:
    """Exact P[u_n ≥ β + ½ Σ κ_i v_i²] for independent standard normals (u_n, v): the failure
    probability of the paraboloid through the MPP ([5]_), for β ≥ 0 and any curvatures.

    Q = u_n - ½ Σ κ_i v_i² has the moment generating function M(s) = e^{s²/2} Π (1 + s κ_i)^(-1/2)
    (1 + s κ_i > 0), so P[Q ≥ β] = (1/π) ∫_0^∞ Re[M(c + iy) e^{-(c + iy)β} / (c + iy)] dy for any
    admissible c > 0. c = β (the saddle point of e^{s²/2 - sβ}) makes the integrand of the
    size of the result, so small probabilities keep their relative accuracy.
    """
    kappa = np.asarray(kappa, dtype=float)
    c = max(beta, 1.0)
    if np.any(kappa < 0):  # stay where M is defined: 1 + c κ_i ≥ ½
        c = min(c, 0.5 / float(np.max(-kappa)))
    kc = kappa.astype(complex)

    def integrand(y: float) -> float:
        s = complex(c, y)
        log_m = 0.5 * s * s - s * beta - 0.5 * np.sum(np.log(1.0 + s * kc))
        return (np.exp(log_m) / s).real

    scale = math.exp(0.5 * c * c - c * beta) / c  # |integrand(0)|
    out = integrate.quad(
        integrand, 0.0, np.inf, epsabs=1e-14 * scale, epsrel=1e-11, limit=400, full_output=1
    )
    return float(out[0] / math.pi) if len(out) == 3 else math.nan  # 4+ items: quad's warning


def _rotated_curvatures(grad: np.ndarray, hess: np.ndarray) -> np.ndarray:
    """Principal curvatures: eigenvalues of the Hessian restricted to the tangent plane, divided
    by ‖∇g‖ (the limit state written as u_n = β + ½ vᵀ K v in the rotated basis, [4])."""
    norm_grad = float(np.linalg.norm(grad))
    Q = linalg.null_space((grad / norm_grad)[None, :])  # (n, n-1) orthonormal tangent basis
    A = Q.T @ hess @ Q / norm_grad
    return np.sort(np.linalg.eigvalsh(0.5 * (A + A.T)))


def sorm(result: FORMResult, *, hessian: np.ndarray | None = None) -> SORMResult:
    """Second-order corrections of a FORM result from the curvatures of g at the MPP.

    The Hessian of g in u comes from ``hessian`` if given, else from the limit-state model
    (analytic or central differences). With α = -∇g/‖∇g‖ the curvatures are the eigenvalues of
    the Hessian restricted to the plane orthogonal to α, divided by ‖∇g‖ ([4]_). For β < 0 (the
    origin fails) the formulas apply to the safe domain {-g ≤ 0}, and pf = 1 - P[safe].

    Parameters
    ----------
    result : FORMResult
        A converged FORM result.
    hessian : ndarray, shape (dim, dim), optional
        ∇²g(u*) in standard normal space.

    Returns
    -------
    SORMResult
    """
    if not result.converged:
        raise UncertaintyError(
            f"result: SORM needs a converged MPP; FORM says: {result.message}", "result"
        )
    ls = result.limit_state
    calls0 = ls.n_evaluations
    n = result.u_star.size
    if hessian is None:
        H = ls.hessian(result.u_star)[0]
    else:
        H = np.asarray(hessian, dtype=float)
        if H.shape != (n, n):
            raise UncertaintyError(f"hessian: expected shape ({n}, {n}), got {H.shape}", "hessian")
    sign = -1.0 if result.beta < 0 else 1.0  # work with g̃ = sign g, whose origin is safe
    b = abs(result.beta)
    kappa = _rotated_curvatures(sign * result.gradient, sign * H) if n > 1 else np.zeros(0)
    valid = bool(np.all(1.0 + b * kappa > 0.0))

    def back(p: float) -> tuple[float, float]:
        pf = p if sign > 0 else 1.0 - p
        return pf, float(stats.norm.isf(pf)) if math.isfinite(pf) else math.nan

    pf_b, beta_b = back(breitung(b, kappa))
    pf_t, beta_t = back(tvedt(b, kappa))
    pf_p, beta_p = back(parabolic_pf(b, kappa))
    if valid:
        msg = f"curvatures {np.array2string(kappa, precision=4)}"
    else:
        bad = kappa[1.0 + b * kappa <= 0.0]
        msg = (
            f"1 + β κ ≤ 0 for κ = {np.array2string(bad, precision=4)}: the failure domain wraps "
            "around the origin side; Breitung's and Tvedt's formulas do not apply (pf_parabolic "
            "does)"
        )
    return SORMResult(
        beta_form=result.beta,
        pf_form=result.pf,
        kappa=kappa,
        pf_breitung=pf_b,
        beta_breitung=beta_b,
        pf_tvedt=pf_t,
        beta_tvedt=beta_t,
        pf_parabolic=pf_p,
        beta_parabolic=beta_p,
        valid=valid,
        hessian=H,
        model_calls=ls.n_evaluations - calls0,
        message=msg,
    )
