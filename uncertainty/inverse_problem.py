"""The inverse simulation under uncertainty as a problem, and the types of its FORM answers ([1]_).

:class:`InverseProblem` states the model y = g(x_unkn, x_kn, x_unc) of Sec. 2 of [1]_ with the
roles of its inputs and the law of the uncertain ones; :class:`CDFPoint`,
:class:`PercentilePoint`, :class:`VariableResult` and :class:`InverseResult` are what the
single-loop and double-loop methods of :mod:`uncertainty.inverse` return.

References
----------
.. [1] X. Du, Inverse simulation under uncertainty by optimization, J. Comput. Inf. Sci. Eng.
       13(2) (2013) 021005.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from uncertainty.distributions import IndependentTransform
from uncertainty.errors import UncertaintyError
from uncertainty.model import CachedModel, Model

__all__ = [
    "InverseProblem",
    "CDFPoint",
    "PercentilePoint",
    "VariableResult",
    "InverseResult",
]


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
