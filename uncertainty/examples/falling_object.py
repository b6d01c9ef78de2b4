"""Falling object with quadratic drag: z(t) = (1/c) ln cosh(√(gc)(t − t0)) and its derivatives.

Implements the position of Eq. (4) of [1]_ (z measured downward from the release point, released
from rest at t0, dv/dt = g − c v², Eq. 2), the velocity of Eq. (3), and the first and second
derivatives in θ = (g, c, t0) of its Appendix 1.2, in a form that stays exact through c = 0 and for
c < 0.

Write τ = t − t0 and u = g c τ². Then z = g τ² F(u) with F(u) = H(u)/u and H(u) = ln cosh √u, an
entire function of u near 0 (H = u/2 − u²/12 + u³/45 − …). For u < 0 (negative drag, c < 0),
H(u) = ln cos √(−u): this is the analytic continuation the document's Matlab code evaluated through
complex arithmetic, and it is what produces its case-2 optimum c = −0.0471 (Table 2). The motion
then blows up at √(−u) = π/2, where z = +∞; beyond it the model has no solution and z = +∞.

With G = H' = tanh(√u)/(2√u) and primes for d/du, every derivative follows from the chain rule
(∂u/∂g = cτ², ∂u/∂c = gτ², ∂u/∂t0 = −2gcτ)::

    ∂z/∂g  = τ² G             ∂²z/∂g²    = c τ⁴ G'          ∂²z/∂g∂t0 = −2τ (G + u G')
    ∂z/∂c  = g² τ⁴ F'         ∂²z/∂g∂c   = g τ⁴ G'          ∂²z/∂c∂t0 = −2g²τ³ (2F' + u F'')
    ∂z/∂t0 = −2 g τ G         ∂²z/∂c²    = g³ τ⁶ F''         ∂²z/∂t0²  = 2g (G + 2u G')

These equal the Appendix 1.2 expressions of [1] for c > 0 (e.g. ∂z/∂g = τ T/(2√(gc)),
∂z/∂t0 = −√(gc) T / c with T = tanh(√(gc) τ)); the Appendix's printed ∂²z/∂C² has typos (C^{2/3}
for C^{3/2}) and is not used. Like the document, z is evaluated for every t, also t < t0: z is even
in τ (no clamp to z = 0 before release). Near u = 0 the functions of u are summed from their Taylor
series, elsewhere from closed forms written to avoid overflow
(ln cosh s = s + log1p(e^(−2s)) − ln 2).

References
----------
.. [1] Bayesian Inference for the Mechanical Model of a Falling Object (course project document,
       ../shared/papers/falling-object-bayesian-inference-and-design.md): Eq. (2)-(4), Table 1,
       Appendix 1.1 and 1.2.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from uncertainty.model import ResponseFunction

__all__ = [
    "PARAMETERS",
    "G_NOMINAL",
    "C_NOMINAL",
    "T0_NOMINAL",
    "position",
    "velocity",
    "position_derivatives",
    "FALLING_OBJECT",
]

#: Parameter order of the derivative arrays: gravity g (m/s²), drag coefficient c (1/m), release
#: time t0 (s).
PARAMETERS = ("g", "c", "t0")
#: Nominal values used to simulate Table 1 of [1]: g_nom = 9.81 m/s², c_nom = 0.106 1/m,
#: t0,nom = 1 s.
G_NOMINAL = 9.81
C_NOMINAL = 0.106
T0_NOMINAL = 1.0

#: |u| below which the functions of u are summed from their Taylor series. The series of
#: ln cosh √u converges for |u| < π²/4 (poles of tanh at ±iπ/2); at |u| = 0.5 its terms shrink by
#: 0.5/(π²/4) ≈ 0.2 each, so 30 terms leave < 1e-20. Above 0.5 the closed forms lose at most
#: about one digit to cancellation in F' and F''.
U_SERIES = 0.5


def _ln_cosh_coefficients(n_terms: int) -> np.ndarray:
    """a_n of ln cosh √u = Σ_{n≥1} a_n uⁿ: a_n = 2^{2n}(2^{2n} − 1) B_{2n} / (2n (2n)!)."""
    # Bernoulli numbers by the Akiyama-Tanigawa algorithm, in exact rational arithmetic.
    top = 2 * n_terms
    work = [Fraction(0)] * (top + 1)
    bern = []
    for m in range(top + 1):
        work[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            work[j - 1] = j * (work[j - 1] - work[j])
        bern.append(work[0])
    return np.array(
        [
            float(
                Fraction(2 ** (2 * n) * (2 ** (2 * n) - 1))
                * bern[2 * n]
                / (2 * n * math.factorial(2 * n))
            )
            for n in range(1, n_terms + 1)
        ]
    )


_A = _ln_cosh_coefficients(30)  # a_1 = 1/2, a_2 = -1/12, a_3 = 1/45, a_4 = -17/2520, ...
_N = np.arange(1, _A.size + 1, dtype=float)


def _series(u: np.ndarray, weights: np.ndarray, shift: int) -> np.ndarray:
    """Σ_{n ≥ shift} weights_n a_n u^(n − shift), n = 1, 2, ... (Horner's rule)."""
    c = (weights * _A)[shift - 1 :]
    out = np.zeros_like(u)
    for coef in c[::-1]:
        out = out * u + coef
    return out


def _functions_of_u(u: np.ndarray, order: int):
    """F, G (and F', G', F'' for ``order`` 2; F' for ``order`` 1) at u, elementwise.

    F = H/u, G = H', F' = (G − F)/u, F'' = (G' − 2F')/u with H = ln cosh √u (ln cos √(−u) for
    u < 0). Returns a dict of arrays shaped like ``u``; +∞/NaN where the motion has blown up
    (u ≤ −π²/4).
    """
    u = np.asarray(u, dtype=float)
    small = np.abs(u) < U_SERIES
    pos = (u > 0) & ~small
    neg = (u < 0) & ~small
    out = {}
    F = np.empty_like(u)
    G = np.empty_like(u)
    Gp = np.empty_like(u)
    # Taylor series near 0 (the coefficients of F, G, G', F', F'' follow from those of H).
    us = u[small]
    F[small] = _series(us, np.ones_like(_N), 1)
    G[small] = _series(us, _N, 1)
    Gp[small] = _series(us, _N * (_N - 1), 2)
    # u > 0: s = √u, H = ln cosh s, G = tanh s / (2s), G' = (s sech² s − tanh s) / (4 s³).
    s = np.sqrt(u[pos])
    e = np.exp(-2 * s)
    lncosh = s + np.log1p(e) - math.log(2.0)
    th = np.tanh(s)
    sech2 = 4 * e / (1 + e) ** 2
    F[pos] = lncosh / u[pos]
    G[pos] = th / (2 * s)
    Gp[pos] = (s * sech2 - th) / (4 * s**3)
    # u < 0: s = √(−u), H = ln cos s, G = tan s / (2s), G' = −(s sec² s − tan s) / (4 s³);
    # the motion blows up at s = π/2.
    s = np.sqrt(-u[neg])
    with np.errstate(divide="ignore", invalid="ignore"):
        alive = s < math.pi / 2
        cos = np.cos(s)
        tan = np.tan(s)
        Fn = np.where(alive, np.log(np.where(alive, cos, 1.0)) / u[neg], np.inf)
        Gn = np.where(alive, tan / (2 * s), np.inf)
        Gpn = np.where(alive, -(s / cos**2 - tan) / (4 * s**3), np.inf)
    F[neg], G[neg], Gp[neg] = Fn, Gn, Gpn
    out["F"], out["G"] = F, G
    if order >= 1:
        Fp = np.empty_like(u)
        Fp[small] = _series(us, _N - 1, 2)
        big = ~small
        with np.errstate(invalid="ignore"):
            Fp[big] = (G[big] - F[big]) / u[big]
        out["Fp"] = Fp
    if order >= 2:
        Fpp = np.empty_like(u)
        Fpp[small] = _series(us, (_N - 1) * (_N - 2), 3)
        with np.errstate(invalid="ignore"):
            Fpp[big] = (Gp[big] - 2 * Fp[big]) / u[big]
        out["Gp"], out["Fpp"] = Gp, Fpp
    return out


def position(t, g=G_NOMINAL, c=C_NOMINAL, t0=T0_NOMINAL) -> np.ndarray:
    """Distance fallen z(t) = (1/c) ln cosh(√(gc)(t − t0)), m (downward). Eq. (4) of [1].

    Parameters
    ----------
    t : array_like
        Times, s.
    g, c, t0 : float or array_like
        Gravity (m/s²), drag coefficient (1/m, any sign) and release time (s); all arguments
        broadcast against each other.

    Returns
    -------
    ndarray
        Broadcast shape of the arguments; +∞ where negative drag has blown the motion up.
    """
    t, g, c, t0 = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (t, g, c, t0)))
    tau = t - t0
    f = _functions_of_u(g * c * tau**2, 0)
    # Eq. (4) in [1]: z = (1/c) ln cosh(√(gc) τ) = g τ² F(g c τ²)
    return g * tau**2 * f["F"]


def velocity(t, g=G_NOMINAL, c=C_NOMINAL, t0=T0_NOMINAL) -> np.ndarray:
    """dz/dt = √(g/c) tanh(√(gc)(t − t0)), m/s. Eq. (3) of [1] (odd in t − t0)."""
    t, g, c, t0 = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (t, g, c, t0)))
    tau = t - t0
    f = _functions_of_u(g * c * tau**2, 0)
    # Eq. (3) in [1]: v = v∞ tanh(√(gc) τ) = 2 g τ G(g c τ²)
    return 2 * g * tau * f["G"]


def position_derivatives(
    t, g=G_NOMINAL, c=C_NOMINAL, t0=T0_NOMINAL
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """z and its first and second derivatives in θ = (g, c, t0). Appendix 1.2 of [1].

    Parameters
    ----------
    t : array_like, shape (N,)
        Times, s.
    g, c, t0 : float
        Parameters (m/s², 1/m, s).

    Returns
    -------
    z : ndarray, shape (N,)
        Position, m.
    dz : ndarray, shape (N, 3)
        ∂z/∂θ in the order of :data:`PARAMETERS`.
    d2z : ndarray, shape (N, 3, 3)
        ∂²z/∂θ∂θ, symmetric.
    """
    tau = np.asarray(t, dtype=float).reshape(-1) - float(t0)
    g, c = float(g), float(c)
    u = g * c * tau**2
    f = _functions_of_u(u, 2)
    F, G, Fp, Gp, Fpp = f["F"], f["G"], f["Fp"], f["Gp"], f["Fpp"]
    z = g * tau**2 * F
    dz = np.empty(tau.shape + (3,))
    # Appendix 1.2 of [1], first derivatives of z (see the module docstring for the form in u)
    dz[:, 0] = tau**2 * G  # ∂z/∂g = τ T / (2√(gc))
    dz[:, 1] = g**2 * tau**4 * Fp  # ∂z/∂c = g τ T / (2c√(gc)) − z/c
    dz[:, 2] = -2 * g * tau * G  # ∂z/∂t0 = −√(gc) T / c
    d2z = np.empty(tau.shape + (3, 3))
    # Appendix 1.2 of [1], second derivatives of z
    d2z[:, 0, 0] = c * tau**4 * Gp
    d2z[:, 0, 1] = d2z[:, 1, 0] = g * tau**4 * Gp
    d2z[:, 0, 2] = d2z[:, 2, 0] = -2 * tau * (G + u * Gp)
    d2z[:, 1, 1] = g**3 * tau**6 * Fpp
    d2z[:, 1, 2] = d2z[:, 2, 1] = -2 * g**2 * tau**3 * (2 * Fp + u * Fpp)
    d2z[:, 2, 2] = 2 * g * (G + 2 * u * Gp)
    return z, dz, d2z


#: The falling-object response for :class:`~uncertainty.model.FunctionModel` (analytic first and
#: second derivatives, vectorized over parameter batches).
FALLING_OBJECT = ResponseFunction(
    value=position, parameters=PARAMETERS, derivatives=position_derivatives, vectorized=True
)
