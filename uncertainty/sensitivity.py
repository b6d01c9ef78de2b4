"""Global sensitivity analysis: Sobol' and Morris designs on the unit hypercube and their indices,
through SALib (the only module that imports it).

A *design* is a matrix of points of the unit hypercube, one row per model run and one column per
scalar input coordinate; a *group* is a set of columns whose index is estimated jointly (SALib's
``groups``: a random rigid body's centre of mass is one group of three coordinates). The caller
maps each row to the model's inputs through their inverse CDFs (:func:`gamma_quantile`,
:func:`box_com_quantile`) or, for a law that has none at hand, through :func:`seeded_generator`,
and returns one output per row; :func:`sobol_indices` and :func:`morris_indices` turn the outputs
into indices.

- Sobol': Saltelli's scheme on a scrambled Sobol' sequence ([1]_; SALib ``sample.sobol``):
  N (G + 2) rows for G groups (N (2G + 2) with second-order indices); first-order S1 and total
  ST by the estimators of [2]_ (Eq. (b) and (f) of its Table 2), with bootstrap confidence
  intervals.
- Morris: r trajectories of G + 1 points on a p-level grid ([3]_); μ* (mean absolute
  elementary effect, [4]_) and σ. The grid levels i/(p − 1) are mapped to the midpoints
  (i + ½)/p of p equal-probability strata (:func:`morris_design`), so that inputs with unbounded
  laws stay finite; elementary effects are in output units per unit of the design coordinate.
- Generalized (time-aggregated) indices of a time-resolved output: the variance-weighted mean
  over times, S = Σ_t V_t S_t / Σ_t V_t (Eq. (6) of [5]_; :func:`aggregate_indices`).

References
----------
.. [1] A. Saltelli, Making best use of model evaluations to compute sensitivity indices,
       Computer Physics Communications 145 (2002) 280-297.
.. [2] A. Saltelli, P. Annoni, I. Azzini, F. Campolongo, M. Ratto, S. Tarantola, Variance based
       sensitivity analysis of model output. Design and estimator for the total sensitivity
       index, Computer Physics Communications 181 (2010) 259-270.
.. [3] M. D. Morris, Factorial sampling plans for preliminary computational experiments,
       Technometrics 33 (1991) 161-174.
.. [4] F. Campolongo, J. Cariboni, A. Saltelli, An effective screening design for sensitivity
       analysis of large models, Environmental Modelling & Software 22 (2007) 1509-1518.
.. [5] F. Gamboa, A. Janon, T. Klein, A. Lagnoux, Sensitivity analysis for multidimensional and
       functional outputs, Electronic Journal of Statistics 8 (2014) 575-603.
.. [6] T. Ishigami, T. Homma, An importance quantification technique in uncertainty analysis for
       computer models, ISUMA 1990, 398-403; indices as in [7]_, §1.2.3.
.. [7] A. Saltelli et al., Global Sensitivity Analysis. The Primer, Wiley 2008.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version

import numpy as np

from uncertainty.errors import UncertaintyError

__all__ = [
    "METHODS",
    "DESIGN_EPS",
    "SensitivityProblem",
    "design_rows",
    "check_design_size",
    "sobol_design",
    "morris_design",
    "sobol_indices",
    "morris_indices",
    "aggregate_indices",
    "seeded_generator",
    "open_unit",
    "gamma_quantile",
    "box_com_quantile",
    "ishigami",
    "ishigami_indices",
    "salib_version",
]

#: The methods: Sobol' indices (variance-based) and Morris screening (elementary effects).
METHODS = ("sobol", "morris")

#: Design coordinates are kept in [DESIGN_EPS, 1 - DESIGN_EPS] before an inverse CDF: a
#: scrambled Sobol' coordinate may be exactly 0 (its grid is 2^-30 in scipy's generator), where
#: a normal or Gamma quantile is infinite. The probability mass moved, 2e-12, is far below the
#: Monte Carlo error of any design that fits in a file.
DESIGN_EPS = 1e-12

#: Levels of the Morris grid (SALib's default, [4]_ §3: p = 4 with jump Δ = p / (2 (p - 1))).
MORRIS_LEVELS = 4


@dataclass(frozen=True)
class SensitivityProblem:
    """The inputs of an analysis: design columns and the group each belongs to.

    Attributes
    ----------
    columns : tuple of str
        One name per design column (``mu``, ``Rb5.com.x``).
    groups : tuple of str
        The group of each column (``mu``, ``Rb5.com``); indices are reported per group, in the
        order of :attr:`group_names`.
    """

    columns: tuple[str, ...]
    groups: tuple[str, ...]

    def __post_init__(self):
        if not self.columns:
            raise UncertaintyError(
                "expected at least one uncertain input (a random parameter or body)", "inputs"
            )
        if len(self.columns) != len(self.groups):
            raise UncertaintyError("one group per design column", "groups")
        if len(set(self.columns)) != len(self.columns):
            raise UncertaintyError("design column names must be unique", "columns")

    @property
    def group_names(self) -> tuple[str, ...]:
        """Groups in order of first appearance."""
        return tuple(dict.fromkeys(self.groups))

    def salib(self) -> dict:
        """The SALib problem on the unit hypercube (``groups`` only when a group has 2+ columns:
        SALib then indexes by group)."""
        problem = {
            "num_vars": len(self.columns),
            "names": list(self.columns),
            "bounds": [[0.0, 1.0]] * len(self.columns),
        }
        if len(self.group_names) != len(self.columns):
            problem["groups"] = list(self.groups)
        return problem


def salib_version() -> str:
    """The installed SALib version (stored with a design: another version may draw another)."""
    return version("SALib")


def design_rows(method: str, n: int, n_groups: int, second_order: bool = False) -> int:
    """Rows of a design: N (G + 2) for Sobol' (N (2G + 2) with second order), r (G + 1) for
    Morris."""
    if method == "sobol":
        return n * (2 * n_groups + 2 if second_order else n_groups + 2)
    if method == "morris":
        return n * (n_groups + 1)
    raise UncertaintyError(f"expected one of {', '.join(METHODS)}, got {method!r}", "method")


def check_design_size(method: str, n: int) -> None:
    """Raise :class:`UncertaintyError` unless ``n`` suits ``method`` (a power of 2 >= 2 for
    Sobol', at least 2 Morris trajectories)."""
    if method == "sobol" and (n < 2 or n & (n - 1)):
        raise UncertaintyError(
            f"expected a power of 2 >= 2 for a Sobol' design (its balance properties), got {n}",
            "n",
        )
    if method == "morris" and n < 2:
        raise UncertaintyError(f"expected at least 2 Morris trajectories, got {n}", "n")


def sobol_design(
    problem: SensitivityProblem, n: int, seed: int, second_order: bool = False
) -> np.ndarray:
    """Saltelli's design ([1]_, [2]_) on a scrambled Sobol' sequence, shape (rows, columns).

    Parameters
    ----------
    problem : SensitivityProblem
    n : int
        Base sample size N, a power of 2.
    seed : int
        Seed of the scrambling (the same seed gives the same bits).
    second_order : bool
        Add the rows for second-order indices.
    """
    from SALib.sample import sobol as sobol_sample

    check_design_size("sobol", n)
    x = sobol_sample.sample(
        problem.salib(), n, calc_second_order=second_order, scramble=True, seed=int(seed)
    )
    return np.ascontiguousarray(x, dtype=float)


def morris_design(
    problem: SensitivityProblem, n: int, seed: int, levels: int = MORRIS_LEVELS
) -> np.ndarray:
    """Morris trajectories ([3]_) with their grid levels i/(p − 1) moved to the stratum midpoints
    (i + ½)/p, shape (n (G + 1), columns); see the module docstring."""
    from SALib.sample import morris as morris_sample

    check_design_size("morris", n)
    x = morris_sample.sample(problem.salib(), n, num_levels=levels, seed=int(seed))
    return np.ascontiguousarray((np.asarray(x, float) * (levels - 1) + 0.5) / levels)


def _check_outputs(y: np.ndarray, rows: int) -> np.ndarray:
    y = np.asarray(y, dtype=float)
    if y.ndim != 1 or y.size != rows:
        raise UncertaintyError(f"expected {rows} outputs, one per design row, got {y.shape}", "Y")
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise UncertaintyError(
            f"{bad.size} of {rows} outputs are not finite (first: row {int(bad[0])}); the "
            "indices need every run of the design",
            "Y",
        )
    return y


def sobol_indices(
    problem: SensitivityProblem,
    y: np.ndarray,
    *,
    second_order: bool = False,
    num_resamples: int = 100,
    conf_level: float = 0.95,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """First-order and total Sobol' indices of outputs ``y`` on :func:`sobol_design`'s rows.

    Returns
    -------
    dict
        ``S1``, ``ST``, ``S1_conf``, ``ST_conf``, shape (G,), ordered as
        :attr:`SensitivityProblem.group_names` (the ``_conf`` arrays are half-widths of the
        ``conf_level`` bootstrap interval); with ``second_order`` also ``S2``, ``S2_conf``
        (G, G), NaN below the diagonal. A constant output has no variance to share: all NaN.
    """
    from SALib.analyze import sobol as sobol_analyze

    g = len(problem.group_names)
    width = _sobol_width(g, second_order)
    y = np.asarray(y, dtype=float)
    y = _check_outputs(y, width * max(1, y.size // width))
    if np.ptp(y) == 0.0:
        nan = np.full(g, np.nan)
        out = {k: nan.copy() for k in ("S1", "ST", "S1_conf", "ST_conf")}
        if second_order:
            out |= {"S2": np.full((g, g), np.nan), "S2_conf": np.full((g, g), np.nan)}
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = sobol_analyze.analyze(
            problem.salib(),
            y,
            calc_second_order=second_order,
            num_resamples=num_resamples,
            conf_level=conf_level,
            seed=int(seed),
        )
    keys = ("S1", "ST", "S1_conf", "ST_conf") + (("S2", "S2_conf") if second_order else ())
    return {k: np.asarray(res[k], dtype=float) for k in keys}


def _sobol_width(g: int, second_order: bool) -> int:
    return 2 * g + 2 if second_order else g + 2


def morris_indices(
    problem: SensitivityProblem,
    x: np.ndarray,
    y: np.ndarray,
    *,
    levels: int = MORRIS_LEVELS,
    num_resamples: int = 100,
    conf_level: float = 0.95,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """μ*, μ, σ and the bootstrap half-width ``mu_star_conf`` per group ([3]_, [4]_), on the
    rows ``x`` of :func:`morris_design`; σ is NaN for groups of 2+ columns (SALib)."""
    from SALib.analyze import morris as morris_analyze

    x = np.asarray(x, dtype=float)
    y = _check_outputs(y, x.shape[0])
    grid = (x * levels - 0.5) / (levels - 1)  # back to SALib's levels i/(p - 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = morris_analyze.analyze(
            problem.salib(),
            grid,
            y,
            num_resamples=num_resamples,
            conf_level=conf_level,
            num_levels=levels,
            seed=int(seed),
        )
    # SALib divides by the grid jump Δ; the design coordinate moved Δ (p - 1)/p (the midpoint
    # mapping of morris_design), so effects per unit of the design coordinate are p/(p - 1) larger
    scale = levels / (levels - 1)
    return {
        k: scale * np.asarray(np.ma.filled(np.ma.asarray(res[k], dtype=float), np.nan), float)
        for k in ("mu_star", "mu", "sigma", "mu_star_conf")
    }


def aggregate_indices(per_time: Sequence[np.ndarray], variances: np.ndarray) -> np.ndarray:
    """Generalized index Σ_t V_t S_t / Σ_t V_t over times with output variance V_t (Eq. (6) of
    [5]_); times where S_t is NaN (no variance) carry weight V_t = 0 anyway.

    Parameters
    ----------
    per_time : array_like, shape (nt, G)
    variances : array_like, shape (nt,)
    """
    s = np.asarray(per_time, dtype=float)
    v = np.asarray(variances, dtype=float)
    total = float(np.sum(v))
    if not total > 0:
        return np.full(s.shape[1], np.nan)
    return np.nansum(s * v[:, None], axis=0) / total


def open_unit(u) -> np.ndarray:
    """Design coordinates clipped to [DESIGN_EPS, 1 − DESIGN_EPS] (see :data:`DESIGN_EPS`)."""
    return np.clip(np.asarray(u, dtype=float), DESIGN_EPS, 1.0 - DESIGN_EPS)


def seeded_generator(u: float, entropy: int, salt: int) -> np.random.Generator:
    """A generator determined by the design coordinate ``u``: drives a law that has no inverse
    CDF at hand (a centre of mass by Metropolis-Hastings, a random matrix G).

    ``X = draw(seeded_generator(u, ...))`` is a fixed function of ``u``, as the Sobol' and Morris
    estimators need (a row that repeats ``u`` repeats ``X``). Its law is right: the 64 bits of
    ``u`` enter the generator's seed, so distinct coordinates give independently seeded
    generators, and each draw follows the sampler's law exactly; the rows of Saltelli's A and B
    matrices have distinct coordinates, hence independent draws. What is lost is only the
    quasi-random balance of the Sobol' sequence for that group: its part of the estimate
    converges at the Monte Carlo rate. ``salt`` separates groups sharing a coordinate value.
    """
    bits = int(np.asarray(u, dtype=np.float64).view(np.uint64))
    seq = np.random.SeedSequence([int(entropy) % 2**128, int(salt), bits])
    return np.random.Generator(np.random.PCG64(seq))


def gamma_quantile(u, mean: float, dispersion: float):
    """Inverse CDF of the random mass of Batou & Soize 2012, Eq. (17): Gamma of shape δ⁻² and
    scale δ² m̲ (mean m̲, coefficient of variation δ), at ``u`` (kg)."""
    from scipy.stats import gamma

    d2 = float(dispersion) ** 2
    return gamma.ppf(open_unit(u), 1.0 / d2, scale=d2 * float(mean))


def box_com_quantile(u, center, size, lambda_r) -> np.ndarray:
    """Inverse CDF of the maximum-entropy centre of mass on a box (Batou & Soize 2012, Eq. (20)):
    the density ∝ exp(−⟨λ_r, r⟩) factorizes into one truncated exponential per axis, whose
    inverse CDF on [−1, 1] in t = (r − c)/h with s = λ h is t = −1 − log(1 − u (1 − e^(−2s)))/s
    (s > 0; s < 0 by the reflection t → −t, u → 1 − u; uniform for s = 0).

    Parameters
    ----------
    u : array_like, shape (3,)
        Design coordinates.
    center, size : array_like, shape (3,)
        The box (m).
    lambda_r : array_like, shape (3,)
        Multipliers λ_r (1/m) of Eq. (21), e.g. from ``uncertainty.centre_of_mass.com_multipliers``.

    Returns
    -------
    ndarray, shape (3,)
        Point of the box, body frame (m).
    """
    u = open_unit(u)
    half = 0.5 * np.asarray(size, dtype=float)
    s = np.asarray(lambda_r, dtype=float) * half
    a = np.abs(s)
    uu = np.where(s >= 0.0, u, 1.0 - u)
    a_safe = np.where(a > 0.0, a, 1.0)
    t = -1.0 - np.log1p(uu * np.expm1(-2.0 * a_safe)) / a_safe
    t = np.where(a > 0.0, t, 2.0 * uu - 1.0)
    t = np.clip(np.where(s >= 0.0, t, -t), -1.0, 1.0)
    return np.asarray(center, dtype=float) + half * t


def ishigami(x, a: float = 7.0, b: float = 0.1) -> np.ndarray:
    """The Ishigami function sin x1 + a sin² x2 + b x3⁴ sin x1 ([6]_), x_i ~ U(−π, π).

    Parameters
    ----------
    x : array_like, shape (..., 3)
    """
    x = np.asarray(x, dtype=float)
    return np.sin(x[..., 0]) + a * np.sin(x[..., 1]) ** 2 + b * x[..., 2] ** 4 * np.sin(x[..., 0])


def ishigami_indices(a: float = 7.0, b: float = 0.1) -> dict[str, np.ndarray]:
    """Closed-form S1 and ST of :func:`ishigami` ([7]_, §1.2.3 and Exercise 4.7):
    V = a²/8 + bπ⁴/5 + b²π⁸/18 + ½, V1 = ½ (1 + bπ⁴/5)², V2 = a²/8, V3 = 0,
    V13 = b²π⁸ (1/18 − 1/50) = 8 b²π⁸/225; ST1 = (V1 + V13)/V, ST2 = V2/V, ST3 = V13/V.
    For a = 7, b = 0.1: S1 = (0.3139, 0.4424, 0), ST = (0.5576, 0.4424, 0.2437)."""
    pi4 = math.pi**4
    v = a**2 / 8 + b * pi4 / 5 + b**2 * pi4**2 / 18 + 0.5
    v1 = 0.5 * (1 + b * pi4 / 5) ** 2
    v2 = a**2 / 8
    v13 = 8 * b**2 * pi4**2 / 225
    return {
        "S1": np.array([v1, v2, 0.0]) / v,
        "ST": np.array([v1 + v13, v2, v13]) / v,
    }
