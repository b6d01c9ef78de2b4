"""``workbench infer`` and ``workbench design`` from an inference spec: the driver.

Reads nothing and prints nothing: the spec comes from :mod:`workbench.analysis.inference_spec`
(its format is described there), the numerics from :mod:`uncertainty.bayes` (MAP, Laplace, grid
and MCMC posteriors) and :mod:`uncertainty.design` (optimal measurement times); this module
assembles the posterior of a spec, runs them and returns results, and computes the curves the
figures draw (:func:`fit_curves`). The JSON and text reports are
:mod:`workbench.analysis.inference_report`. See docs/architecture.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from uncertainty.bayes import (
    Posterior,
    find_map,
    grid_posterior,
    grid_ranges,
    laplace,
    prediction_error_covariance,
    sample_posterior,
)
from uncertainty.design import Sensitivity, entropy_of_batch, optimal_times
from uncertainty.errors import UncertaintyError
from workbench.analysis.inference_report import (
    design_report,
    format_design,
    format_inference,
    inference_report,
)
from workbench.analysis.inference_spec import (
    FunctionModelSpec,
    InferenceSpec,
    is_spec,
    load_spec,
    read_table,
)
from workbench.analysis.models import build_model, build_scene_model, response_function
from workbench.errors import SpecError, WorkbenchError

__all__ = [
    # the spec (workbench.analysis.inference_spec), importable from here as before
    "InferenceSpec",
    "load_spec",
    "is_spec",
    "read_table",
    "build_model",
    # the driver
    "build_posterior",
    "InferenceResult",
    "run_inference",
    "FitCurves",
    "fit_curves",
    "DesignRun",
    "run_design",
    "parse_counts",
    # the reports (workbench.analysis.inference_report)
    "inference_report",
    "format_inference",
    "design_report",
    "format_design",
]

#: Points of the fitted curves drawn by ``workbench infer --plot``.
FIT_POINTS = 300


def build_posterior(spec: InferenceSpec):
    """The :class:`~uncertainty.bayes.Posterior` of a spec (prediction error of Eq. 18-21)."""
    model = build_model(spec)
    corr = None
    if spec.eta > 0:
        # Eq. (21) with σ1 = 1: Σ = σ² (I + η² ŷ ŷᵀ ∘ R), ŷ the data
        corr = prediction_error_covariance(spec.x, spec.y, 1.0, spec.eta, spec.correlation_length)
    try:
        return Posterior(
            model,
            spec.y,
            [spec.priors[n] for n in spec.names],
            sigma=spec.sigma,
            sigma_prior=spec.sigma_prior,
            correlation=corr,
        )
    except UncertaintyError as exc:
        raise SpecError(spec.source, "", str(exc)) from None


@dataclass
class InferenceResult:
    """Everything ``workbench infer`` computed: the spec, the posterior and the results."""

    spec: InferenceSpec
    posterior: Any
    map: Any
    laplace: Any
    exact: Any = None
    exact_method: str = "none"

    @property
    def converged(self) -> bool:
        ok = bool(self.map.converged and self.laplace.available)
        if self.exact_method == "mcmc":
            ok = ok and bool(self.exact.converged)
        return ok

    def problems(self) -> list[str]:
        """What did not converge or is not available, one phrase each."""
        out = []
        if not self.map.converged:
            out.append(f"MAP not converged ({self.map.message})")
        if not self.laplace.available:
            out.append(f"Laplace approximation not available: {self.laplace.message}")
        if self.exact_method == "mcmc" and not self.exact.converged:
            out.append(f"MCMC {self.exact.message}")
        return out


def run_inference(
    spec: InferenceSpec, *, exact: str | None = None, seed: int | None = None, progress=None
):
    """MAP, Laplace and (for ``exact`` = grid/mcmc, or auto) the exact posterior of a spec;
    ``progress(steps, max_steps)`` follows the MCMC sampler.

    ``auto`` computes the grid posterior for one or two parameters of a function model and
    skips it otherwise (a scene model would need a PyBullet run per grid point).
    """
    post = build_posterior(spec)
    try:
        try:
            mp = find_map(post, spec.starts)
        except UncertaintyError as exc:
            raise SpecError(spec.source, "", str(exc)) from None
        lap = laplace(post, mp.x)
        method = exact or spec.exact.method
        if method == "auto":
            cheap = isinstance(spec.model, FunctionModelSpec)
            method = "grid" if post.n <= 2 and cheap else "none"
        result = InferenceResult(spec, post, mp, lap, exact_method=method)
        if method == "grid":
            if post.n > 2:
                raise SpecError(
                    spec.source,
                    "exact.method",
                    f"the grid is for 1 or 2 parameters, this spec has {post.n}; use mcmc",
                )
            result.exact = grid_posterior(
                post, grid_ranges(post, mp.x, lap), n_points=spec.exact.points
            )
        elif method == "mcmc":
            rng = np.random.default_rng(spec.exact.seed if seed is None else seed)
            result.exact = sample_posterior(
                post,
                mp.x,
                rng,
                covariance=lap.covariance,
                n_walkers=spec.exact.walkers,
                max_steps=spec.exact.max_steps,
                progress=progress,
            )
    finally:
        close = getattr(post.model.model, "close", None)
        if callable(close):
            close()
    return result


@dataclass
class FitCurves:
    """The model's prediction at the MAP (and at reference values) for ``workbench infer
    --plot``.

    Attributes
    ----------
    x : ndarray, shape (M,)
        Where the curves are evaluated: a dense grid over the data (function models) or the data's
        x (scene models, one PyBullet run).
    curves : list of (str, ndarray of shape (M,))
        ``("MAP", y)`` first, then ``("reference", y)`` when reference values were given.
    """

    x: np.ndarray
    curves: list


def fit_curves(result: InferenceResult, reference: dict | None = None) -> FitCurves:
    """The MAP prediction of a result, and the prediction at ``reference`` values of the inferred
    parameters (function models only), on a grid of :data:`FIT_POINTS` over the data ± 5%."""
    spec = result.spec
    theta = result.map.x[: len(spec.names)]
    if not isinstance(spec.model, FunctionModelSpec):
        return FitCurves(spec.x, [("MAP", result.posterior.model.evaluate(theta))])
    lo, hi = float(np.min(spec.x)), float(np.max(spec.x))
    pad = 0.05 * (hi - lo) if hi > lo else 0.5
    dense = np.linspace(lo - pad, hi + pad, FIT_POINTS)
    model = build_model(spec, dense)
    curves = [("MAP", model.evaluate(theta))]
    if reference:
        curves.append(("reference", model.evaluate(np.array([reference[n] for n in spec.names]))))
    return FitCurves(dense, curves)


# --------------------------------------------------------------------------------------------
# design
# --------------------------------------------------------------------------------------------


def parse_counts(text: str) -> list[int]:
    """``"1..10"``, ``"3"`` or ``"1,2,5"`` -> the measurement counts."""
    out: list[int] = []
    try:
        for part in str(text).split(","):
            part = part.strip()
            if ".." in part:
                a, b = part.split("..")
                out.extend(range(int(a), int(b) + 1))
            else:
                out.append(int(part))
    except ValueError:
        raise WorkbenchError(
            f"--n: expected a count, a range like 1..10 or a list like 1,2,5; got {text!r}"
        ) from None
    if not out or min(out) < 1:
        raise WorkbenchError(f"--n: counts must be at least 1, got {text!r}")
    return out


@dataclass
class DesignRun:
    """Results of ``workbench design``: per η and N the optimal times, plus Ĩ(t) for N = 1."""

    spec: InferenceSpec
    parameters: tuple[str, ...]
    nominal: dict
    interval: tuple[float, float]
    correlation_length: float
    sigma1: float
    etas: list
    counts: list
    designs: list  # (eta, n, DesignResult)
    curve_t: np.ndarray
    curve: np.ndarray  # (n_eta, n_t): entropy of one measurement at each time


def run_design(
    spec: InferenceSpec,
    *,
    etas: list[float] | None = None,
    counts: list[int] | None = None,
    parameters: list[str] | None = None,
    correlation_length: float | None = None,
    seed: int | None = None,
    progress=None,
) -> DesignRun:
    """Optimal measurement times for every (η, N) of the spec's ``design`` section (or the
    arguments), Eq. (16)-(21) of the document. ``progress(done, total)``, if given, is called
    after each (η, N) design."""
    d = spec.design
    if d is None:
        raise SpecError(
            spec.source, "design", "this spec has no 'design' section (nominal, interval, ...)"
        )
    params = tuple(parameters or d.parameters or spec.names)
    etas = list(d.eta if etas is None else etas)
    counts = list(d.n if counts is None else counts)
    lam = d.correlation_length if correlation_length is None else correlation_length
    if any(not e >= 0 for e in etas):
        raise SpecError(spec.source, "design.eta", f"expected values >= 0, got {etas}")
    if not lam >= 0:
        raise SpecError(spec.source, "design.correlation_length", f"expected >= 0, got {lam}")
    a, b = d.interval
    if not a < b:
        raise SpecError(spec.source, "design.interval", f"expected [a, b] with a < b, got {[a, b]}")
    nominal = dict(d.nominal)
    if isinstance(spec.model, FunctionModelSpec):
        response = response_function(spec)
        nominal = {**spec.model.constants, **nominal}
        try:
            sens = Sensitivity(response, nominal, params)
        except UncertaintyError as exc:
            raise SpecError(spec.source, "design", str(exc)) from None
    else:
        nominal = {**spec.model.constants, **nominal}
        unknown = [p for p in params if p not in nominal]
        if unknown:
            raise SpecError(spec.source, "design.nominal", f"no value for {', '.join(unknown)}")
        sens = _scene_sensitivity(spec, nominal, params, (a, b))
    rng = np.random.default_rng(d.seed if seed is None else seed)
    designs = []
    total = len(etas) * len(counts)
    for eta in etas:
        for n in counts:
            try:
                res = optimal_times(
                    sens,
                    n,
                    rng,
                    interval=(a, b),
                    sigma1=d.sigma1,
                    eta=eta,
                    correlation_length=lam,
                    restarts=d.restarts,
                )
            except UncertaintyError as exc:
                raise SpecError(spec.source, "design.n", str(exc)) from None
            designs.append((eta, n, res))
            if progress is not None:
                progress(len(designs), total)
    t = np.linspace(a, b, 400)
    curve = np.array([entropy_of_batch(t[:, None], sens, d.sigma1, e, lam) for e in etas])
    return DesignRun(
        spec=spec, parameters=params, nominal=nominal, interval=(a, b),
        correlation_length=lam, sigma1=d.sigma1, etas=etas, counts=counts, designs=designs,
        curve_t=t, curve=curve,
    )  # fmt: skip


def _scene_sensitivity(spec: InferenceSpec, nominal: dict, params: tuple, interval):
    """The :class:`~workbench.analysis.scene_model.SceneSensitivity` of a scene model at the
    nominal values; scene parameters that are not differentiated stay fixed at them."""
    from workbench.analysis.scene_model import SceneSensitivity  # PyBullet: scene models only

    t0 = spec.model.time_shift
    fixed = {k: v for k, v in nominal.items() if k not in params and k != t0}
    inputs = params if t0 is None or t0 in params else params + (t0,)
    model = build_scene_model(
        spec,
        inputs,
        np.asarray(interval, float),
        time_shift=t0,
        overrides={**spec.model.constants, **fixed},
    )
    return SceneSensitivity(model, nominal, params)
