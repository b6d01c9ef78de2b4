"""Scalar parameter distributions declared in scenes, and maps to and from standard normal space.

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
weibull       scale, shape [, loc]        F(x) = 1 - exp(-((x - loc)/scale)^shape), x >= loc;
                                          ``loc`` is optional (default 0)
============  ==========================  ===================================================

Reliability methods (FORM, SORM, inverse simulation) work in standard normal space U. The
transforms map a point u (independent standard normal coordinates) to the physical point x and
back, with the Jacobian dx/du:

* :class:`IndependentTransform` for independent marginals: x_i = F_i^{-1}(Φ(u_i)) ([2]_);
* :class:`NatafTransform` for marginals with a target correlation matrix (the Nataf model of [2]_):
  z = L0 u with L0 L0ᵀ = R0, the equivalent normal correlation, then x_i = F_i^{-1}(Φ(z_i)).

References
----------
.. [1] N. L. Johnson, S. Kotz, N. Balakrishnan, Continuous Univariate Distributions, Vol. 1,
       2nd ed., Wiley (1994): lognormal moments (ch. 14), Gamma moments (ch. 17).
.. [2] P.-L. Liu, A. Der Kiureghian, Multivariate distribution models with prescribed marginals
       and covariances, Probabilistic Engineering Mechanics 1(2) (1986) 105-112.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy import linalg, optimize, stats

from uncertainty.errors import UncertaintyError

__all__ = ["DISTRIBUTIONS", "make_distribution", "IndependentTransform", "NatafTransform"]

#: Known distributions and their parameters, in the order a scene lists them.
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "normal": ("mean", "std"),
    "lognormal": ("mean", "std"),
    "uniform": ("low", "high"),
    "gamma": ("mean", "std"),
    "truncnormal": ("mean", "std", "low", "high"),
    "weibull": ("scale", "shape", "loc"),
}

#: Gauss-Hermite nodes per dimension for the Nataf correlation integral of [2]: a
#: 32-point rule integrates polynomials up to degree 63 exactly, and reproduces the closed-form
#: lognormal-lognormal ρ0 of [2] to 1e-12 for coefficients of variation up to 0.5.
NATAF_NODES = 32

#: Largest |R - Rᵀ| and |R_ii - 1| accepted in a correlation matrix: entries are O(1), so this
#: tolerates the roundoff of a computed matrix (~1e-16) and rejects any real asymmetry.
CORRELATION_TOL = 1e-12

#: Parameters a spec may leave out, with their defaults.
_OPTIONAL: dict[str, dict[str, float]] = {"weibull": {"loc": 0.0}}


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
    if not isinstance(dist, str) or dist not in DISTRIBUTIONS:  # a list is no name (unhashable)
        near = difflib.get_close_matches(str(dist), list(DISTRIBUTIONS), n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        known = ", ".join(DISTRIBUTIONS)
        raise UncertaintyError(
            f"dist: unknown distribution {dist!r}{hint}; expected one of {known}", "dist"
        )
    params = DISTRIBUTIONS[dist]
    optional = _OPTIONAL.get(dist, {})
    listed = ", ".join(f"{k} (optional)" if k in optional else k for k in params)
    for key in spec:
        if key != "dist" and key not in params:
            raise UncertaintyError(
                f"{key}: a {dist} distribution takes no '{key}'; its parameters are {listed}",
                str(key),
            )
    for key in params:
        if key not in spec and key not in optional:
            raise UncertaintyError(
                f"{key}: a {dist} distribution needs '{key}' (parameters {listed})", key
            )
    bounds = dist == "truncnormal"
    p = {
        k: _number(spec, k, dist, allow_infinite=bounds and k in ("low", "high"))
        if k in spec
        else optional[k]
        for k in params
    }
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
    for key in ("scale", "shape"):
        if key in p and not p[key] > 0.0:
            raise UncertaintyError(
                f"{key}: a {dist} distribution needs {key} > 0, got {p[key]}", key
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
    if dist == "weibull":
        return stats.weibull_min(c=p["shape"], loc=p["loc"], scale=p["scale"])
    a = (p["low"] - p["mean"]) / p["std"]
    b = (p["high"] - p["mean"]) / p["std"]
    return stats.truncnorm(a=a, b=b, loc=p["mean"], scale=p["std"])


# -------------------------------------------------------------------------- normal-space transforms
def _marginal(m, i: int):
    """A frozen scipy distribution from a frozen law or a scene spec."""
    if isinstance(m, Mapping):
        return make_distribution(m)
    if not all(callable(getattr(m, k, None)) for k in ("ppf", "isf", "cdf", "sf", "logpdf")):
        raise UncertaintyError(
            f"marginals[{i}]: expected a frozen scipy.stats distribution or a spec, got {m!r}",
            f"marginals[{i}]",
        )
    return m


def _x_of_z(dist, z: np.ndarray) -> np.ndarray:
    """x = F^{-1}(Φ(z)) elementwise; the upper tail through the survival function (isf), so
    that x keeps full relative accuracy for z up to ~37 instead of saturating at Φ(z) = 1."""
    z = np.asarray(z, dtype=float)
    x = np.empty_like(z)
    lo = z <= 0.0
    x[lo] = dist.ppf(stats.norm.cdf(z[lo]))
    x[~lo] = dist.isf(stats.norm.sf(z[~lo]))
    return x


def _z_of_x(dist, x: np.ndarray) -> np.ndarray:
    """z = Φ^{-1}(F(x)) elementwise, through the survival function in the upper tail."""
    x = np.asarray(x, dtype=float)
    F = dist.cdf(x)
    z = np.empty_like(x)
    lo = F <= 0.5
    z[lo] = stats.norm.ppf(F[lo])
    z[~lo] = stats.norm.isf(dist.sf(x[~lo]))
    return z


def _dx_dz(dist, z: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dx/dz = φ(z)/f(x) of x = F^{-1}(Φ(z)), in logarithms so that both tails stay finite."""
    return np.exp(stats.norm.logpdf(z) - dist.logpdf(x))


class IndependentTransform:
    """Map between independent standard normal coordinates u and independent marginals x.

    x_i = F_i^{-1}(Φ(u_i)), u_i = Φ^{-1}(F_i(x_i)) (the marginal transformation of [2]_).

    Parameters
    ----------
    marginals : sequence of frozen scipy.stats distributions (or scene specs), length dim
        Continuous laws of x_1 .. x_dim, in the units of each variable.

    Attributes
    ----------
    marginals : tuple
    dim : int
    """

    def __init__(self, marginals: Sequence):
        self.marginals = tuple(_marginal(m, i) for i, m in enumerate(marginals))
        if not self.marginals:
            raise UncertaintyError("marginals: expected at least one distribution", "marginals")
        self.dim = len(self.marginals)

    def _check(self, v, name: str) -> np.ndarray:
        v = np.asarray(v, dtype=float)
        if v.ndim not in (1, 2) or v.shape[-1] != self.dim:
            raise UncertaintyError(
                f"{name}: expected shape ({self.dim},) or (m, {self.dim}), got {v.shape}", name
            )
        return v

    def _z_to_x(self, z: np.ndarray) -> np.ndarray:
        x = np.empty_like(z)
        for i, dist in enumerate(self.marginals):
            x[..., i] = _x_of_z(dist, z[..., i])
        return x

    def _x_to_z(self, x: np.ndarray) -> np.ndarray:
        z = np.empty_like(x)
        for i, dist in enumerate(self.marginals):
            z[..., i] = _z_of_x(dist, x[..., i])
        return z

    def to_x(self, u) -> np.ndarray:
        """Physical point(s) x, same shape as ``u``: (dim,) or (m, dim)."""
        return self._z_to_x(self._check(u, "u"))

    def to_u(self, x) -> np.ndarray:
        """Standard normal point(s) u, same shape as ``x``: (dim,) or (m, dim)."""
        return self._x_to_z(self._check(x, "x"))

    def jacobian(self, u) -> np.ndarray:
        """dx/du at one point ``u``, shape (dim,) -> (dim, dim): diag(φ(u_i)/f_i(x_i))."""
        u = self._check(u, "u").reshape(self.dim)
        x = self._z_to_x(u)
        return np.diag(
            [_dx_dz(d, u[i : i + 1], x[i : i + 1])[0] for i, d in enumerate(self.marginals)]
        )


class NatafTransform(IndependentTransform):
    """Map between independent standard normals u and correlated marginals x (the Nataf model).

    u -> z = L0 u -> x_i = F_i^{-1}(Φ(z_i)), where z is standard normal with the correlation R0
    that makes corr(x) equal the target R ([2]_), and L0 L0ᵀ = R0 (Cholesky).
    Each ρ0_ij solves ρ_ij = E[h_i(z_i) h_j(z_j)] ([2]), h = (x - μ)/σ, with the
    expectation by a 2-D Gauss-Hermite rule of :data:`NATAF_NODES` points per dimension and the
    root by Brent's method on [-1, 1] (ρ is increasing in ρ0, [2] §3).

    Parameters
    ----------
    marginals : sequence of frozen scipy.stats distributions (or scene specs), length dim
        Continuous laws with finite variance.
    correlation : array_like, shape (dim, dim)
        Target (Pearson) correlation matrix of x: symmetric, unit diagonal, positive definite.

    Attributes
    ----------
    correlation : ndarray, shape (dim, dim)
        The target R.
    correlation0 : ndarray, shape (dim, dim)
        The equivalent normal correlation R0.
    cholesky : ndarray, shape (dim, dim)
        Lower-triangular L0.

    Raises
    ------
    UncertaintyError
        A matrix that is not a correlation matrix, a correlation the marginals cannot attain,
        or an R0 that is not positive definite (``field`` is ``correlation``).
    """

    def __init__(self, marginals: Sequence, correlation):
        super().__init__(marginals)
        R = self._check_correlation(correlation)
        self.correlation = R
        R0 = np.eye(self.dim)
        if self.dim > 1 and np.any(R[~np.eye(self.dim, dtype=bool)] != 0.0):
            t, w = hermegauss(NATAF_NODES)
            w = w / math.sqrt(2.0 * math.pi)  # weights of E[.] under N(0, 1)
            h = []
            for dist in self.marginals:  # standardized h(t) at the nodes, moments by the same rule
                x = _x_of_z(dist, t)
                mu = float(w @ x)
                sd = math.sqrt(float(w @ (x - mu) ** 2))
                if not (math.isfinite(sd) and sd > 0.0):
                    raise UncertaintyError(
                        f"correlation: the Nataf model needs marginals with finite, positive "
                        f"variance; marginal {len(h)} has std {sd}",
                        "correlation",
                    )
                h.append((mu, sd))
            for i in range(self.dim):
                for j in range(i):
                    if R[i, j] != 0.0:
                        R0[i, j] = R0[j, i] = self._rho0(i, j, R[i, j], t, w, h)
        self.correlation0 = R0
        try:
            self.cholesky = np.linalg.cholesky(R0)
        except np.linalg.LinAlgError:
            raise UncertaintyError(
                "correlation: the equivalent normal correlation of the Nataf model is not "
                "positive definite for these marginals; lower the correlations",
                "correlation",
            ) from None

    def _check_correlation(self, correlation) -> np.ndarray:
        R = np.asarray(correlation, dtype=float)
        n = self.dim
        if R.shape != (n, n) or not np.all(np.isfinite(R)):
            raise UncertaintyError(
                f"correlation: expected a finite ({n}, {n}) matrix, got shape {R.shape}",
                "correlation",
            )
        if np.max(np.abs(R - R.T)) > CORRELATION_TOL:
            raise UncertaintyError("correlation: the matrix is not symmetric", "correlation")
        if np.max(np.abs(np.diag(R) - 1.0)) > CORRELATION_TOL:
            raise UncertaintyError("correlation: the diagonal must be 1", "correlation")
        off = R[~np.eye(n, dtype=bool)]
        if off.size and np.max(np.abs(off)) >= 1.0:
            raise UncertaintyError(
                "correlation: off-diagonal entries must satisfy |ρ| < 1", "correlation"
            )
        R = 0.5 * (R + R.T)
        np.fill_diagonal(R, 1.0)
        try:
            np.linalg.cholesky(R)
        except np.linalg.LinAlgError:
            raise UncertaintyError(
                "correlation: the matrix is not positive definite", "correlation"
            ) from None
        return R

    def _rho0(self, i: int, j: int, rho: float, t, w, moments) -> float:
        """ρ0_ij from the target ρ_ij: root of the correlation integral of [2] by 2-D Gauss-Hermite
        quadrature and Brent's method."""
        (mi, si), (mj, sj) = moments[i], moments[j]
        hi = (_x_of_z(self.marginals[i], t) - mi) / si  # z_i = t_a
        W = np.outer(w, w)

        def rho_of(r0: float) -> float:
            # z_j = r0 t_a + sqrt(1 - r0²) t_b with t_a, t_b independent N(0, 1)
            zj = r0 * t[:, None] + math.sqrt(max(1.0 - r0 * r0, 0.0)) * t[None, :]
            hj = (_x_of_z(self.marginals[j], zj.ravel()).reshape(zj.shape) - mj) / sj
            return float(np.sum(W * hi[:, None] * hj))

        lo, hi_ = rho_of(-1.0), rho_of(1.0)
        if not lo < rho < hi_:
            raise UncertaintyError(
                f"correlation: ρ[{i}][{j}] = {rho} is not attainable by the Nataf model with "
                f"these marginals; the range is ({lo:.6g}, {hi_:.6g})",
                "correlation",
            )
        return float(optimize.brentq(lambda r: rho_of(r) - rho, -1.0, 1.0, xtol=1e-15))

    def to_x(self, u) -> np.ndarray:
        """Physical point(s) x, same shape as ``u``: (dim,) or (m, dim)."""
        u = self._check(u, "u")
        return self._z_to_x(u @ self.cholesky.T)

    def to_u(self, x) -> np.ndarray:
        """Standard normal point(s) u, same shape as ``x``: (dim,) or (m, dim)."""
        z = self._x_to_z(self._check(x, "x"))
        return linalg.solve_triangular(self.cholesky, z.T, lower=True).T

    def jacobian(self, u) -> np.ndarray:
        """dx/du at one point ``u``, shape (dim,) -> (dim, dim): diag(φ(z_i)/f_i(x_i)) L0."""
        u = self._check(u, "u").reshape(self.dim)
        z = self.cholesky @ u
        x = self._z_to_x(z)
        d = np.array(
            [_dx_dz(m, z[i : i + 1], x[i : i + 1])[0] for i, m in enumerate(self.marginals)]
        )
        return d[:, None] * self.cholesky
