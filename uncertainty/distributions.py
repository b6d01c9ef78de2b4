"""Scalar parameter distributions declared in scenes, built as frozen ``scipy.stats`` laws.

A spec is a mapping with ``dist`` and that law's parameters, in the units of the parameter itself
(friction, restitution, a velocity component, a drag coefficient, a stiffness, ...):

============  ==========================  ===================================================
``dist``      parameters                  meaning
============  ==========================  ===================================================
normal        mean, std                   Gaussian
lognormal     mean, std                   mean and standard deviation of the variable itself
                                          (not of its logarithm); mean > 0
uniform       low, high                   uniform on [low, high]
gamma         mean, std                   Gamma law with that mean and standard deviation;
                                          mean > 0
truncnormal   mean, std, low, high        Gaussian N(mean, std²) truncated to [low, high]:
                                          mean and std are those of the untruncated parent
                                          (scipy's convention), not of the result
============  ==========================  ===================================================

References
----------
.. [1] N. L. Johnson, S. Kotz, N. Balakrishnan, Continuous Univariate Distributions, Vol. 1,
       2nd ed., Wiley (1994): lognormal moments (ch. 14), Gamma moments (ch. 17).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping

from scipy import stats

from uncertainty.errors import UncertaintyError

__all__ = ["DISTRIBUTIONS", "make_distribution"]

#: Known distributions and their parameters, in the order a scene lists them.
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "normal": ("mean", "std"),
    "lognormal": ("mean", "std"),
    "uniform": ("low", "high"),
    "gamma": ("mean", "std"),
    "truncnormal": ("mean", "std", "low", "high"),
}


def _number(spec: Mapping, key: str, dist: str, allow_infinite: bool = False) -> float:
    value = spec[key]
    if isinstance(value, bool):
        raise UncertaintyError(f"{key}: a {dist} distribution needs a number, got {value!r}", key)
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UncertaintyError(
            f"{key}: a {dist} distribution needs a number, got {value!r}", key
        ) from None
    if math.isnan(v) or (not allow_infinite and math.isinf(v)):
        raise UncertaintyError(f"{key}: a {dist} distribution needs a finite number, got {v}", key)
    return v


def make_distribution(spec: Mapping):
    """A frozen ``scipy.stats`` distribution from a scene's spec.

    Parameters
    ----------
    spec : mapping
        ``{"dist": name, <parameters>}`` as in the module docstring, e.g.
        ``{"dist": "lognormal", "mean": 0.5, "std": 0.1}``.

    Returns
    -------
    scipy.stats frozen distribution
        Its ``mean()`` and ``std()`` are the spec's (for truncnormal: those of the parent).

    Raises
    ------
    UncertaintyError
        Unknown ``dist`` (the message lists the known names and suggests the closest), a missing
        or unexpected parameter, or an inadmissible value; ``field`` names the key at fault.
    """
    if not isinstance(spec, Mapping):
        raise UncertaintyError(f"dist: expected a mapping with 'dist', got {spec!r}", "dist")
    if "dist" not in spec:
        known = ", ".join(DISTRIBUTIONS)
        raise UncertaintyError(f"dist: missing; expected one of {known}", "dist")
    dist = spec["dist"]
    if dist not in DISTRIBUTIONS:
        near = difflib.get_close_matches(str(dist), list(DISTRIBUTIONS), n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        known = ", ".join(DISTRIBUTIONS)
        raise UncertaintyError(
            f"dist: unknown distribution {dist!r}{hint}; expected one of {known}", "dist"
        )
    params = DISTRIBUTIONS[dist]
    for key in spec:
        if key != "dist" and key not in params:
            raise UncertaintyError(
                f"{key}: a {dist} distribution takes no '{key}'; its parameters are "
                f"{', '.join(params)}",
                str(key),
            )
    for key in params:
        if key not in spec:
            raise UncertaintyError(
                f"{key}: a {dist} distribution needs '{key}' (parameters {', '.join(params)})", key
            )
    bounds = dist == "truncnormal"
    p = {k: _number(spec, k, dist, allow_infinite=bounds and k in ("low", "high")) for k in params}
    if "std" in p and not p["std"] > 0.0:
        raise UncertaintyError(f"std: a {dist} distribution needs std > 0, got {p['std']}", "std")
    if dist in ("lognormal", "gamma") and not p["mean"] > 0.0:
        raise UncertaintyError(
            f"mean: a {dist} distribution needs mean > 0, got {p['mean']}", "mean"
        )
    if "low" in p and not p["low"] < p["high"]:
        raise UncertaintyError(
            f"high: expected low < high, got low = {p['low']}, high = {p['high']}", "high"
        )

    if dist == "normal":
        return stats.norm(loc=p["mean"], scale=p["std"])
    if dist == "lognormal":
        # log X ~ N(m, s²) with E[X] = e^(m + s²/2), Var[X] = (e^(s²) - 1) E[X]²  ([1], ch. 14)
        s2 = math.log1p((p["std"] / p["mean"]) ** 2)
        return stats.lognorm(s=math.sqrt(s2), scale=p["mean"] * math.exp(-0.5 * s2))
    if dist == "uniform":
        return stats.uniform(loc=p["low"], scale=p["high"] - p["low"])
    if dist == "gamma":
        # shape k, scale θ: mean k θ, variance k θ²  ([1], ch. 17)
        return stats.gamma(a=(p["mean"] / p["std"]) ** 2, scale=p["std"] ** 2 / p["mean"])
    a = (p["low"] - p["mean"]) / p["std"]
    b = (p["high"] - p["mean"]) / p["std"]
    return stats.truncnorm(a=a, b=b, loc=p["mean"], scale=p["std"])
