"""Exact integer counts behind the time-domain reliabilities of [1]_, accumulated over model chunks.

Every metric is a ratio of two integers (counts of indicator events over realizations, experiments
and instants). Counts are accumulated exactly (int64, or Python integers where int64 could
overflow) and each value is formed by one correctly rounded division of Python integers, so the
result does not depend on how the model realizations are split into chunks. Only the counts are
kept between chunks. The metrics themselves, their conventions and the public functions are in
:mod:`uncertainty.validation`.

References
----------
.. [1] Y. Ao, Z. Hu, S. Mahadevan, Dynamics Model Validation Using Time-Domain Metrics,
       ASME J. Verif. Valid. Uncert. 2(1):011004 (2017).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from uncertainty.errors import UncertaintyError

__all__ = ["METRICS", "ReliabilityCounts"]

#: Names of the three metrics, in the order of [1] (Sec. 3.2.1-3.2.3).
METRICS: tuple[str, ...] = ("instantaneous", "first_passage", "accumulated")

#: Largest value an int64 accumulator may reach; beyond it counts are kept as Python integers.
_INT64_LIMIT = 2**62  # a factor 2 of headroom below 2**63 - 1 for the sum of two bounded terms


def _python_ints(values: np.ndarray) -> np.ndarray:
    """An object array of Python integers (exact, unbounded) from an integer array."""
    return np.array([int(v) for v in values.ravel()], dtype=object).reshape(values.shape)


def _sum_rows_exact(factors: list[np.ndarray], bound_per_row: int) -> np.ndarray:
    """``sum_k prod_i factors[i][k, :]`` exactly, shape (n_t,), as Python integers.

    ``bound_per_row`` bounds each product; int64 is used when the chunk's sum cannot overflow.
    """
    rows = factors[0].shape[0]
    if bound_per_row * rows < _INT64_LIMIT:
        prod = factors[0].astype(np.int64)
        for f in factors[1:]:
            prod *= f
        return _python_ints(prod.sum(axis=0))
    prod = factors[0].astype(object)
    for f in factors[1:]:
        prod = prod * f.astype(object)
    return prod.sum(axis=0)


class _SiteCounts:
    """Integer counts of one site: per experiment, realizations inside the threshold."""

    def __init__(self, experiments: np.ndarray, eps: np.ndarray):
        self.yd = experiments
        self.eps = eps
        n_i, n_t = experiments.shape
        self.n_model = 0
        # Eq. (6) numerator per experiment: sum_k I_ijk(t_q)
        self.inside = np.zeros((n_i, n_t), dtype=np.int64)
        # Eq. (19) numerator per experiment: sum_k I^max_ijk(t)
        self.passed = np.zeros((n_i, n_t), dtype=np.int64)

    def add(self, chunk: np.ndarray, first_passage: bool, joint: bool):
        """Count one block of model rows; with ``joint``, also return per-row sums over the
        experiments (S[k, q] and F[k, q]) for joint Monte Carlo."""
        m, n_t = chunk.shape
        n_i = self.yd.shape[0]
        small = np.int16 if n_i < 2**15 else np.int64
        S = np.zeros((m, n_t), dtype=small) if joint else None
        F = np.zeros((m, n_t), dtype=small) if joint and first_passage else None
        g = np.empty((m, n_t))
        for j in range(n_i):
            # Eq. (17) in [1]: d_ijk(τ) = Y_M(x_i^(k), τ) - Y_D(x_i^(j), τ); then |d| - ε(τ)
            np.subtract(chunk, self.yd[j], out=g)
            np.abs(g, out=g)
            g -= self.eps[j]
            # Eq. (4)/(25) in [1]: I_ijk(t_q) = 1 if |d_ijk(t_q)| - ε(t_q) < 0
            inside = g < 0.0
            self.inside[j] += np.count_nonzero(inside, axis=0)
            if joint:
                S += inside
            if first_passage:
                # Eq. (18) in [1]: d^max_ijk(t) = max_{τ in [0, t]} (|d_ijk(τ)| - ε(τ))
                np.maximum.accumulate(g, axis=1, out=g)
                # Eq. (14) in [1]: I^max_ijk(t) = 1 if d^max_ijk(t) < 0
                passed = g < 0.0
                self.passed[j] += np.count_nonzero(passed, axis=0)
                if joint:
                    F += passed
        self.n_model += m
        return S, F


class ReliabilityCounts:
    """Counts over streamed model chunks for one or several sites."""

    def __init__(
        self,
        experiments: list[np.ndarray],
        eps: list[np.ndarray],
        correlated: bool,
        metrics: tuple[str, ...],
    ):
        self.sites = [_SiteCounts(yd, e) for yd, e in zip(experiments, eps, strict=True)]
        self.n_t = experiments[0].shape[1]
        self.metrics = metrics
        self.first_passage = "first_passage" in metrics
        self.joint = correlated and len(self.sites) > 1
        self.correlated = correlated or len(self.sites) == 1
        zero = np.zeros(self.n_t, dtype=object)
        zero[:] = 0
        # Eq. (8), (20), (27) numerators summed over the realizations k (Python ints)
        self.joint_inside = zero.copy()
        self.joint_passed = zero.copy()
        self.joint_accum = zero.copy()

    def add_site(self, i: int, chunk: np.ndarray) -> None:
        """Count a block of rows of site ``i`` alone (one site, or independent sites)."""
        self.sites[i].add(chunk, self.first_passage, joint=False)

    def add_joint(self, chunks: Sequence[np.ndarray]) -> None:
        """Count a block of paired rows, one array per site (correlated sites)."""
        rows = {c.shape[0] for c in chunks}
        if len(rows) != 1:
            raise UncertaintyError(
                "model: with correlated=True every site's chunk must hold the same rows "
                f"(the same draws of the shared inputs); got row counts {sorted(rows)}",
                "model",
            )
        S_all, F_all = [], []
        for site, chunk in zip(self.sites, chunks, strict=True):
            S, F = site.add(chunk, self.first_passage, joint=True)
            S_all.append(S)
            F_all.append(F)
        n_i = [s.yd.shape[0] for s in self.sites]
        if "instantaneous" in self.metrics:
            # Eq. (8) in [1]: sum over (j_1..j_N) of sum_k prod_i I_{i j_i k} = sum_k prod_i S_i[k]
            self.joint_inside = self.joint_inside + _sum_rows_exact(S_all, math.prod(n_i))
        if self.first_passage:
            # Eq. (20) in [1], the same factorisation with I^max
            self.joint_passed = self.joint_passed + _sum_rows_exact(F_all, math.prod(n_i))
        if "accumulated" in self.metrics:
            # Eq. (27) in [1]: C_i[k, q] = sum_j sum_{q' <= q} I_{ijk}(t_q')
            C_all = [np.cumsum(S, axis=1, dtype=np.int64) for S in S_all]
            bound = math.prod(n * self.n_t for n in n_i)
            self.joint_accum = self.joint_accum + _sum_rows_exact(C_all, bound)

    def result(self) -> dict:
        """The reliabilities from the counts so far, as the fields of a
        :class:`~uncertainty.validation.ValidationResult` (name -> value)."""
        sites = self.sites
        for i, site in enumerate(sites):
            if site.n_model == 0:
                where = "model" if len(sites) == 1 else f"model[{i}]"
                raise UncertaintyError(f"{where}: no model realizations were given", "model")
        if self.joint and len({s.n_model for s in sites}) != 1:
            raise UncertaintyError(
                "model: with correlated=True every site needs the same number of realizations",
                "model",
            )
        n_t = self.n_t
        q = np.arange(1, n_t + 1)  # instants in [t_1, t_q]
        per_experiment = []
        site_num: dict[str, list[np.ndarray]] = {name: [] for name in self.metrics}
        site_den: dict[str, list[np.ndarray]] = {name: [] for name in self.metrics}
        for site in sites:
            M, n_i = site.n_model, site.yd.shape[0]
            inside_cum = np.cumsum(site.inside, axis=1)  # Eq. (24) numerator per experiment
            counts = {
                "instantaneous": (site.inside, np.full(n_t, M)),
                "first_passage": (site.passed, np.full(n_t, M)),
                "accumulated": (inside_cum, q * M),
            }
            per = {}
            for name in self.metrics:
                num, den = counts[name]
                # Eq. (3), (12), (24) in [1]: reliability given the j-th experiment
                per[name] = np.stack([_ratio(_python_ints(row), den) for row in num])
                # Eq. (6), (19), (26) in [1]: average over the n_i experiments
                site_num[name].append(_python_ints(num.sum(axis=0)))
                site_den[name].append(_python_ints(den) * n_i)
            per_experiment.append(per)
        curves: dict[str, np.ndarray | None] = dict.fromkeys(METRICS)
        n_i = [s.yd.shape[0] for s in sites]
        M = sites[0].n_model
        for name in self.metrics:
            if self.joint:
                num = {
                    "instantaneous": self.joint_inside,
                    "first_passage": self.joint_passed,
                    "accumulated": self.joint_accum,
                }[name]
                if name == "accumulated":
                    den = _python_ints(q) ** len(sites) * (M * math.prod(n_i))
                else:
                    den = np.full(n_t, M * math.prod(n_i), dtype=object)
            else:
                # one site, or Eq. (9), (21), (28) in [1]: the independence product; the sum over
                # (j_1..j_N) of products factorises into the product of the per-site sums
                num, den = site_num[name][0], site_den[name][0]
                for a, b in zip(site_num[name][1:], site_den[name][1:], strict=True):
                    num, den = num * a, den * b
            curves[name] = _ratio(num, den)
        return {
            "instantaneous": curves["instantaneous"],
            "first_passage": curves["first_passage"],
            "accumulated": curves["accumulated"],
            "per_experiment": tuple(per_experiment),
            "n_model": tuple(s.n_model for s in sites),
            "n_experiments": tuple(n_i),
            "correlated": self.correlated,
        }


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` elementwise with one correctly rounded division of Python integers."""
    return np.array([int(a) / int(b) for a, b in zip(num, den, strict=True)], dtype=np.float64)
