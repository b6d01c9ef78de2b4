"""Priors of one parameter for Bayesian estimation: uniform (Eq. 6 of [1]_), normal, lognormal.

References
----------
.. [1] Bayesian Inference for the Mechanical Model of a Falling Object (course project document,
       ../shared/papers/falling-object-bayesian-inference-and-design.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from uncertainty.errors import UncertaintyError

__all__ = ["Prior", "prior_from_spec"]

_LN_2PI = math.log(2 * math.pi)


@dataclass(frozen=True)
class Prior:
    """A one-dimensional prior: ``uniform`` (Eq. 6 of [1]), ``normal`` or ``lognormal``.

    Attributes
    ----------
    dist : str
        ``"uniform"``, ``"normal"`` or ``"lognormal"``.
    a, b : float
        uniform: low, high; normal: mean, std; lognormal: μ and s of ln θ ~ N(μ, s²).
    """

    dist: str
    a: float
    b: float

    @classmethod
    def uniform(cls, low: float, high: float) -> Prior:
        """Uniform density 1/(high − low) on [low, high] (Eq. 6 of [1])."""
        low, high = float(low), float(high)
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise UncertaintyError(
                f"prior: a uniform prior needs finite low < high, got low={low}, high={high}",
                "prior",
            )
        return cls("uniform", low, high)

    @classmethod
    def normal(cls, mean: float, std: float) -> Prior:
        """Gaussian N(mean, std²)."""
        mean, std = float(mean), float(std)
        if not (math.isfinite(mean) and math.isfinite(std) and std > 0):
            raise UncertaintyError(
                f"prior: a normal prior needs a finite mean and std > 0, got {mean}, {std}",
                "prior",
            )
        return cls("normal", mean, std)

    @classmethod
    def lognormal(cls, mean: float, std: float) -> Prior:
        """Lognormal with the given mean and standard deviation of θ itself (as scenes declare
        it): s² = ln(1 + (std/mean)²), μ = ln mean − s²/2."""
        mean, std = float(mean), float(std)
        if not (math.isfinite(mean) and math.isfinite(std) and mean > 0 and std > 0):
            raise UncertaintyError(
                f"prior: a lognormal prior needs mean > 0 and std > 0, got {mean}, {std}", "prior"
            )
        s2 = math.log1p((std / mean) ** 2)
        return cls("lognormal", math.log(mean) - s2 / 2, math.sqrt(s2))

    @property
    def low(self) -> float:
        return {"uniform": self.a, "normal": -math.inf, "lognormal": 0.0}[self.dist]

    @property
    def high(self) -> float:
        return self.b if self.dist == "uniform" else math.inf

    @property
    def mean(self) -> float:
        if self.dist == "uniform":
            return (self.a + self.b) / 2
        if self.dist == "normal":
            return self.a
        return math.exp(self.a + self.b**2 / 2)

    @property
    def std(self) -> float:
        if self.dist == "uniform":
            return (self.b - self.a) / math.sqrt(12)
        if self.dist == "normal":
            return self.b
        return self.mean * math.sqrt(math.expm1(self.b**2))

    def neg_log_pdf(self, x):
        """−ln p(x), +∞ outside the support; elementwise on arrays."""
        x = np.asarray(x, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.dist == "uniform":
                inside = (x >= self.a) & (x <= self.b)
                out = np.where(inside, math.log(self.b - self.a), np.inf)
            elif self.dist == "normal":
                out = 0.5 * ((x - self.a) / self.b) ** 2 + math.log(self.b) + 0.5 * _LN_2PI
            else:
                lx = np.log(np.where(x > 0, x, 1.0))
                out = np.where(
                    x > 0,
                    lx + 0.5 * ((lx - self.a) / self.b) ** 2 + math.log(self.b) + 0.5 * _LN_2PI,
                    np.inf,
                )
        return out if out.ndim else float(out)

    def derivatives(self, x: float) -> tuple[float, float]:
        """First and second derivatives of −ln p at ``x`` inside the support."""
        if self.dist == "uniform":
            return 0.0, 0.0
        if self.dist == "normal":
            return (x - self.a) / self.b**2, 1.0 / self.b**2
        # −ln p = ln x + (ln x − μ)²/(2s²) + const
        lx, s2 = math.log(x), self.b**2
        return (1 + (lx - self.a) / s2) / x, (1 - s2 - (lx - self.a)) / (s2 * x * x)

    def sample(self, rng: np.random.Generator, size=None):
        """Draws from the prior."""
        if self.dist == "uniform":
            return rng.uniform(self.a, self.b, size)
        if self.dist == "normal":
            return rng.normal(self.a, self.b, size)
        return np.exp(rng.normal(self.a, self.b, size))

    def to_dict(self) -> dict:
        if self.dist == "uniform":
            return {"dist": "uniform", "low": self.a, "high": self.b}
        return {"dist": self.dist, "mean": self.mean, "std": self.std}


def prior_from_spec(spec: Mapping, field_name: str = "prior") -> Prior:
    """Build a :class:`Prior` from ``{dist: uniform, low, high}``, ``{dist: normal, mean, std}``
    or ``{dist: lognormal, mean, std}`` (mean and std of the variable itself, as in scenes).

    Raises
    ------
    UncertaintyError
        Unknown distribution, missing or extra fields, or inadmissible values; the message
        starts with ``field_name``.
    """
    if not isinstance(spec, Mapping):
        raise UncertaintyError(
            f"{field_name}: expected a mapping like {{dist: uniform, low: 0, high: 1}}, got "
            f"{spec!r}",
            field_name,
        )
    fields = {"uniform": ("low", "high"), "normal": ("mean", "std"), "lognormal": ("mean", "std")}
    dist = spec.get("dist")
    if dist not in fields:
        raise UncertaintyError(
            f"{field_name}.dist: expected one of {', '.join(fields)}, got {dist!r}", field_name
        )
    want = fields[dist]
    extra = sorted(set(spec) - {"dist", *want})
    missing = [k for k in want if k not in spec]
    if extra or missing:
        raise UncertaintyError(
            f"{field_name}: a {dist} prior takes {', '.join(want)}"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unknown {', '.join(extra)}" if extra else ""),
            field_name,
        )
    values = []
    for k in want:
        v = spec[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise UncertaintyError(f"{field_name}.{k}: expected a number, got {v!r}", field_name)
        values.append(float(v))
    try:
        return getattr(Prior, dist)(*values)
    except UncertaintyError as exc:
        raise UncertaintyError(
            str(exc).replace("prior:", f"{field_name}:", 1), field_name
        ) from None
