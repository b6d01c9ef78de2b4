"""Du's particle-impact example: a ball A strikes a block B on an incline (Appendix of [1]_).

The inputs are the velocities before impact, vA0 (ball) and vB0 (block, down the incline), the
restitution e, the block's friction coefficient μ, the masses mA and mB, the launch height h and
the incline angle θ; the outputs are the ball's horizontal flight distance d_A and the block's
slide up the incline d_B. The inverse simulation of Sec. 4 of [1] identifies (vA0, vB0) from
measured (d_A, d_B) = (0.582, 0.708) m with e ~ N(0.6, 0.06²) and μ ~ N(0.4, 0.04²) uncertain.

Corrections to the Appendix as printed (Eq. 36-43 of [1])
---------------------------------------------------------
As printed, the Appendix does not reproduce Tables 1-2 of [1]. Two readings make it reproduce
every "New method" value of both tables to the four printed digits (|ΔF| ≤ 5e-5, the rounding):

1. **g = 9.81 m/s².** The paper does not give g; g = 9.8 already moves F(10.65) of Table 1 from
   0.7073 to 0.7087.
2. **Flight angle α = arctan(v_Ay / |v_Ax|) + θ** instead of Eq. (42)'s arctan(v_Ay / v_Ax) + θ.
   The ball rebounds, so v_Ax < 0 on the physical branch, and with the signed v_Ax the angle is
   θ − arctan(v_Ay/|v_Ax|): the median inverse solution then is vA0 ≈ 6.7 m/s with vB0 ≈ −1.05
   m/s (B moving up the incline before impact), F(10.65) = 1.0, nothing like the tables.

With φ = arctan(v_Ay/|v_Ax|), v_A cos α = |v_Ax| cos θ − v_Ay sin θ (the horizontal speed p) and
v_A sin α = |v_Ax| sin θ + v_Ay cos θ (the downward speed q, the sign Eq. 43 implies), so the
landing time, the positive root of Eq. (43), is t = 2h / (q + sqrt(q² + 2gh)) (written without
the cancellation of (−q + sqrt(q² + 2gh))/g) and d_A = p t.

Physical branch
---------------
The formulas are smooth through the unphysical branches, so a solver can land on them; the
checks of :func:`branch_violations` say why a point is rejected: the ball must rebound
(v_Ax < 0: Eq. 42 is written for it, and with |v_Ax| a ball going on forward gives the same d_A),
the block must slide up the incline after impact (v_B > 0: Eq. 40 has v_B², so a block sliding
down gives the same d_B), the ball must fly away from the incline (p > 0), e must lie in [0, 1] and
μ be non-negative. The landing equation (43) has real roots of both signs for every h > 0, so its
positive root always exists.

For fixed (e, μ) the inverse is closed-form (:func:`solve_velocities`): d_B gives v_B, v_B is
linear in (vA0, vB0), and squaring d_A = p t leaves a quadratic in vA0. Its leading coefficient
vanishes at the restitution :func:`min_restitution` (≈ 0.1875 for the paper's data), where the
solution runs off to infinity: below it the measured distances have **no physical solution**
(the roots left put the block sliding down, v_B < 0). The CDF of vA0 therefore has a tail of
probability Φ((0.1875 − 0.6)/0.06) ≈ 3e-12 at infinity; strictly E[vA0] diverges
(logarithmically, vA0 ~ 1/(e − e0)), and the "exact" moments below are those over e > 0.19,
where the rest of the tail weighs less than 1e-11.

References
----------
.. [1] X. Du, Inverse simulation under uncertainty by optimization, J. Comput. Inf. Sci. Eng.
       13(2) (2013) 021005: Sec. 4, Tables 1-3, Appendix Eq. (36)-(43).
"""

from __future__ import annotations

import math

import numpy as np

from uncertainty.distributions import IndependentTransform
from uncertainty.errors import UncertaintyError
from uncertainty.model import MACHINE_NOISE

__all__ = [
    "INPUTS",
    "OUTPUTS",
    "G",
    "M_A",
    "M_B",
    "H",
    "THETA",
    "E_MEAN",
    "E_STD",
    "MU_MEAN",
    "MU_STD",
    "D_A",
    "D_B",
    "TABLE1",
    "TABLE2",
    "TABLE3",
    "EXACT_MEAN",
    "EXACT_STD",
    "impact_distances",
    "impact_jacobian",
    "branch_violations",
    "solve_velocities",
    "min_restitution",
    "DuImpactModel",
    "inverse_problem",
]

#: Model inputs, in input-vector order: vA0, vB0 (m/s), e, μ (-), mA, mB (kg), h (m), θ (rad).
INPUTS = ("vA0", "vB0", "e", "mu", "mA", "mB", "h", "theta")
#: Model outputs: the ball's horizontal flight distance d_A and the block's slide d_B (m).
OUTPUTS = ("dA", "dB")

#: Gravitational acceleration (m/s²): not given in [1]; 9.81 reproduces Tables 1-2 (see above).
G = 9.81
#: Known inputs of Sec. 4 of [1]: masses (kg), height (m), incline angle (20°, in rad).
M_A = 2.0
M_B = 6.0
H = 2.0
THETA = math.radians(20.0)
#: Uncertain inputs of Sec. 4 of [1], independent normals: restitution e and friction μ_k.
E_MEAN, E_STD = 0.6, 0.06
MU_MEAN, MU_STD = 0.4, 0.04
#: Measured outputs of Sec. 4 of [1] (m).
D_A = 0.582
D_B = 0.708

_X1 = [7.50, 7.95, 8.40, 8.85, 9.30, 9.75, 10.20, 10.65, 11.10, 11.55, 12.0]
_X1 += [12.45, 12.90, 13.35, 13.80, 14.25, 14.70, 15.15, 15.60, 16.05, 16.50]
_F1 = [0.0007, 0.0072, 0.0372, 0.1146, 0.2459, 0.4090, 0.5709, 0.7073, 0.8095, 0.8802, 0.9263]
_F1 += [0.9552, 0.9729, 0.9836, 0.9900, 0.9939, 0.9962, 0.9976, 0.9985, 0.9990, 0.9994]
_M1 = [0.0007, 0.0073, 0.0372, 0.1148, 0.2467, 0.4098, 0.5717, 0.7081, 0.8100, 0.8807, 0.9266]
_M1 += [0.9552, 0.9728, 0.9838, 0.9901, 0.9939, 0.9962, 0.9976, 0.9985, 0.9991, 0.9994]
_X2 = [0.090, 0.2555, 0.4210, 0.5865, 0.7520, 0.9175, 1.0830, 1.2485, 1.4140, 1.5795, 1.7450]
_X2 += [1.9105, 2.0760, 2.2415, 2.4070, 2.5725, 2.7380, 2.9035, 3.0690, 3.2345, 3.40]
_F2 = [0.0009, 0.0090, 0.0433, 0.1261, 0.2596, 0.4201, 0.5766, 0.7079, 0.8069, 0.8762, 0.9221]
_F2 += [0.9516, 0.9700, 0.9814, 0.9885, 0.9928, 0.9954, 0.9971, 0.9981, 0.9988, 0.9992]
_M2 = [0.0010, 0.0089, 0.0431, 0.1262, 0.2601, 0.4203, 0.5770, 0.7087, 0.8076, 0.8766, 0.9225]
_M2 += [0.9516, 0.9700, 0.9815, 0.9886, 0.9928, 0.9954, 0.9971, 0.9981, 0.9988, 0.9992]

#: Table 1 of [1], CDF of vA0: points x (m/s), the "New method" (single-loop FORM) CDF and the
#: MCS CDF (10⁷ samples), each an array of shape (21,).
TABLE1 = {"x": np.array(_X1), "new_method": np.array(_F1), "mcs": np.array(_M1)}
#: Table 2 of [1], CDF of vB0, as :data:`TABLE1`.
TABLE2 = {"x": np.array(_X2), "new_method": np.array(_F2), "mcs": np.array(_M2)}
#: Table 3 of [1]: means and standard deviations (m/s), (proposed method, MCS). The printed
#: proposed-method values 10.1594 / 1.2211 are not what the percentile integral of Eq. (19)-(20)
#: gives for the FORM CDF of Table 1 (about 10.157 / 1.208).
TABLE3 = {
    "mean_vA0": (10.1594, 10.1555),
    "mean_vB0": (1.0631, 1.0626),
    "std_vA0": (1.2211, 1.2074),
    "std_vB0": (0.4615, 0.4586),
}
#: Exact means and standard deviations (m/s) of vA0 and vB0 (over e > :func:`min_restitution`):
#: 2-D Gauss-Hermite quadrature of :func:`solve_velocities` in (e, μ); rules of 40² to 80² nodes
#: agree to 3e-9 in the means and 3e-7 in the standard deviations (the integrand is singular at
#: e ≈ 0.1875, 6.9 standard deviations out), so the last digit given is uncertain by ±3.
EXACT_MEAN = {"vA0": 10.1565374, "vB0": 1.0629869}
EXACT_STD = {"vA0": 1.2073988, "vB0": 0.4587900}

#: Reasons of :func:`branch_violations`, by check.
_REASONS = (
    ("e", "restitution e outside [0, 1]"),
    ("mu", "friction coefficient mu < 0"),
    ("rebound", "the ball does not rebound (v_Ax >= 0; Eq. 42 assumes it goes backward)"),
    ("block", "the block does not slide up the incline after impact (v_B <= 0)"),
    ("flight", "the ball does not fly away from the incline (horizontal speed <= 0)"),
)


def _args(vA0, vB0, e, mu, mA, mB, h, theta):
    arrays = np.broadcast_arrays(
        *(np.asarray(v, dtype=float) for v in (vA0, vB0, e, mu, mA, mB, h, theta))
    )
    return arrays


def _kinematics(a, b, e, mu, mA, mB, h, th, g):
    """Intermediate quantities of Eq. (36)-(43) (with the corrections of the module docstring)."""
    # inputs far outside the model's range (a spec's 1e30 m) give inf or NaN here, which the
    # callers report as no solution: no RuntimeWarning on stderr beside that one line
    with np.errstate(all="ignore"):
        M = mA + mB
        C, S = np.cos(th), np.sin(th)
        vAx = ((mA - e * mB) * a * C - mB * (1.0 + e) * b) / M  # Eq. (36)
        vAy = a * S  # Eq. (37)
        vB = vAx + e * (a * C + b)  # Eq. (39)
        D = S + mu * C
        w = np.abs(vAx)
        p = w * C - vAy * S  # v_A cos α with α = arctan(v_Ay/|v_Ax|) + θ, Eq. (42) corrected
        q = w * S + vAy * C  # v_A sin α
        r = np.sqrt(q * q + 2.0 * g * h)
        t = 2.0 * h / (q + r)  # positive root of Eq. (43)
        return M, C, S, vAx, vAy, vB, D, w, p, q, r, t


def impact_distances(vA0, vB0, e, mu, mA=M_A, mB=M_B, h=H, theta=THETA, g=G) -> np.ndarray:
    """Distances (d_A, d_B) of Eq. (40)-(41) of [1]_, corrected as in the module docstring.

    Parameters
    ----------
    vA0, vB0 : array_like
        Velocities of ball and block before impact (m/s); vB0 points down the incline.
    e, mu : array_like
        Restitution and the block's friction coefficient (-).
    mA, mB, h, theta : array_like
        Masses (kg), launch height (m), incline angle (rad); default the paper's.
    g : float
        Gravitational acceleration (m/s²).

    Returns
    -------
    ndarray, shape (..., 2)
        (d_A, d_B) in m, broadcast over the inputs. The formulas are evaluated on every branch;
        :func:`branch_violations` says which points are physical.
    """
    a, b, e, mu, mA, mB, h, th = _args(vA0, vB0, e, mu, mA, mB, h, theta)
    _, _, _, _, _, vB, D, _, p, _, _, t = _kinematics(a, b, e, mu, mA, mB, h, th, g)
    dB = vB * vB / (2.0 * g * D)  # Eq. (40)
    dA = p * t  # Eq. (41)
    return np.stack([dA, dB], axis=-1)


def impact_jacobian(vA0, vB0, e, mu, mA=M_A, mB=M_B, h=H, theta=THETA, g=G) -> np.ndarray:
    """∂(d_A, d_B)/∂(vA0, vB0, e, μ, mA, mB, h, θ), shape (..., 2, 8), by the chain rule.

    Each intermediate of :func:`impact_distances` carries its gradient in the eight inputs
    (forward-mode differentiation written out). At v_Ax = 0 the derivative of |v_Ax| is taken
    from the rebound side.
    """
    a, b, e, mu, mA, mB, h, th = _args(vA0, vB0, e, mu, mA, mB, h, theta)
    M, C, S, vAx, vAy, vB, D, w, p, q, r, t = _kinematics(a, b, e, mu, mA, mB, h, th, g)
    one = np.eye(8)
    da, db, de, dmu, dmA, dmB, dh, dth = (one[k] for k in range(8))

    def x(v):  # scalar field times a unit gradient -> shape (..., 8)
        return v[..., None]

    dM = dmA + dmB
    dC, dS = -x(S) * dth, x(C) * dth
    N = (mA - e * mB) * a * C - mB * (1.0 + e) * b
    dN = (
        x(a * C) * (dmA - x(e) * dmB - x(mB) * de)
        + x(mA - e * mB) * (x(C) * da + x(a) * dC)
        - x((1.0 + e) * b) * dmB
        - x(mB * b) * de
        - x(mB * (1.0 + e)) * db
    )
    dvAx = (dN - x(N / M) * dM) / x(M)
    dvAy = x(S) * da + x(a) * dS
    dvB = dvAx + x(a * C + b) * de + x(e) * (x(C) * da + x(a) * dC + db)
    dD = dS + x(C) * dmu + x(mu) * dC
    dw = x(np.where(vAx > 0.0, 1.0, -1.0)) * dvAx
    dp = x(C) * dw + x(w) * dC - x(S) * dvAy - x(vAy) * dS
    dq = x(S) * dw + x(w) * dS + x(C) * dvAy + x(vAy) * dC
    dr = (x(q) * dq + g * dh) / x(r)
    dt = (2.0 * dh - x(t) * (dq + dr)) / x(q + r)
    dB = vB * vB / (2.0 * g * D)
    ddB = x(vB / (g * D)) * dvB - x(dB / D) * dD
    ddA = x(t) * dp + x(p) * dt
    return np.stack([ddA, ddB], axis=-2)


def branch_violations(vA0, vB0, e, mu, mA=M_A, mB=M_B, h=H, theta=THETA, g=G) -> np.ndarray:
    """Why each input point is off the physical branch: '' where it is physical.

    Returns
    -------
    ndarray of str, broadcast shape of the inputs
        The first failed check of: e in [0, 1]; μ ≥ 0; the ball rebounds (v_Ax < 0); the block
        slides up after impact (v_B > 0); the ball flies away from the incline (p > 0).
    """
    a, b, e, mu, mA, mB, h, th = _args(vA0, vB0, e, mu, mA, mB, h, theta)
    _, _, _, vAx, _, vB, _, _, p, _, _, _ = _kinematics(a, b, e, mu, mA, mB, h, th, g)
    bad = {
        "e": ~((e >= 0.0) & (e <= 1.0)),
        "mu": ~(mu >= 0.0),
        "rebound": ~(vAx < 0.0),
        "block": ~(vB > 0.0),
        "flight": ~(p > 0.0),
    }
    out = np.full(a.shape, "", dtype=object)
    for key, reason in reversed(_REASONS):  # the first failed check wins
        out[bad[key]] = reason
    return out.astype(str)


def min_restitution(dA=D_A, mA=M_A, mB=M_B, h=H, theta=THETA) -> float:
    """Restitution below which the measured d_A has no physical solution (vA0 → ∞ at it).

    The quadratic in vA0 of :func:`solve_velocities` loses its leading term where the rebound
    slope κ = cos θ e (mA + mB)/(mB − e mA) (−∂v_Ax/∂vA0 at fixed v_B) equals
    sin θ (h sin θ + d_A cos θ)/(h cos θ − d_A sin θ); solved for e.
    """
    C, S = math.cos(theta), math.sin(theta)
    kappa = S * (h * S + dA * C) / (h * C - dA * S)
    return kappa * mB / (C * (mA + mB) + kappa * mA)


def solve_velocities(dA, dB, e, mu, mA=M_A, mB=M_B, h=H, theta=THETA, g=G):
    """Closed-form inverse: the physical (vA0, vB0) giving distances (d_A, d_B) at (e, μ).

    d_B fixes v_B = sqrt(2 g d_B (sin θ + μ cos θ)) > 0 (Eq. 40). By Eq. (36) and (39),
    v_B = (mA (1 + e) vA0 cos θ + (e mA − mB) vB0)/(mA + mB), so vB0 and v_Ax are linear in vA0.
    Squaring d_A sqrt(q² + 2gh) = 2hp − d_A q (Eq. 41, 43) gives g d_A² = 2h p² − 2 d_A p q,
    a quadratic in vA0 since p and q are linear in it on the rebound branch. Of its roots the
    one on the physical branch (:func:`branch_violations`) with 2hp − d_A q ≥ 0 is returned.

    Returns
    -------
    vA0, vB0 : ndarray
        Broadcast shape of the inputs (m/s); NaN where no physical solution exists (e.g.
        e < :func:`min_restitution`).
    """
    dA, dB, e, mu, mA, mB, h, th = _args(dA, dB, e, mu, mA, mB, h, theta)
    M = mA + mB
    C, S = np.cos(th), np.sin(th)
    V = np.sqrt(2.0 * g * dB * (S + mu * C))
    den = e * mA - mB
    kappa = -C * e * M / den  # |v_Ax| = -v_Ax = kappa vA0 - k0
    k0 = -mB * (1.0 + e) * V / den
    p1, p0 = kappa * C - S * S, -k0 * C
    q1, q0 = kappa * S + S * C, -k0 * S
    A2 = 2.0 * h * p1 * p1 - 2.0 * dA * p1 * q1
    A1 = 4.0 * h * p1 * p0 - 2.0 * dA * (p1 * q0 + p0 * q1)
    A0 = 2.0 * h * p0 * p0 - 2.0 * dA * p0 * q0 - g * dA * dA
    disc = A1 * A1 - 4.0 * A2 * A0
    with np.errstate(invalid="ignore", divide="ignore"):
        sq = np.sqrt(disc)
        # the two roots without cancellation: q = -(A1 + sign(A1) sq)/2, roots q/A2 and A0/q
        qq = -0.5 * (A1 + np.copysign(sq, A1))
        roots = (qq / A2, A0 / qq)
    vA0 = np.full(dA.shape, np.nan)
    vB0 = np.full(dA.shape, np.nan)
    for a in roots:
        b = (M * V - mA * (1.0 + e) * C * a) / den
        with np.errstate(invalid="ignore"):
            w = kappa * a - k0
            p, q = p1 * a + p0, q1 * a + q0
            ok = np.isfinite(a) & (disc >= 0.0) & (2.0 * h * p - dA * q >= 0.0)
        ok &= branch_violations(a, b, e, mu, mA, mB, h, th, g) == ""
        ok &= w > 0.0
        take = ok & np.isnan(vA0)
        vA0[take], vB0[take] = a[take], b[take]
    return vA0, vB0


class DuImpactModel:
    """The impact model as a :class:`~uncertainty.model.Model`: inputs :data:`INPUTS`, outputs
    :data:`OUTPUTS`, with analytic Jacobian, batches and branch checks.

    Parameters
    ----------
    analytic_jacobian : bool
        Offer ``jacobian``/``jacobian_many``; with False an analysis falls back to finite
        differences (the black-box setting of [1]_).
    g : float
        Gravitational acceleration (m/s²).

    Methods beyond the protocol: ``jacobian_many(X) -> (m, 2, 8)``, ``unphysical(x) -> str |
    None`` and ``unphysical_many(X) -> ndarray of str`` ('' where physical), which
    :mod:`uncertainty.inverse` uses to reject solutions on an unphysical branch.
    """

    input_names = INPUTS
    output_names = OUTPUTS
    noise = MACHINE_NOISE

    def __init__(self, analytic_jacobian: bool = True, g: float = G):
        self.g = float(g)
        if not analytic_jacobian:  # hide the optional methods: finite differences take over
            self.jacobian = None  # type: ignore[assignment]
            self.jacobian_many = None  # type: ignore[assignment]

    def _columns(self, X: np.ndarray):
        X = np.asarray(X, dtype=float)
        if X.shape[-1] != len(INPUTS):
            raise UncertaintyError(
                f"x: expected {len(INPUTS)} inputs {', '.join(INPUTS)}, got shape {X.shape}", "x"
            )
        return tuple(X[..., k] for k in range(len(INPUTS)))

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """(d_A, d_B), shape (2,), at inputs ``x``, shape (8,)."""
        return impact_distances(*self._columns(x), g=self.g)

    def evaluate_many(self, X: np.ndarray) -> np.ndarray:
        """(d_A, d_B) for a batch, shape (m, 8) -> (m, 2)."""
        return impact_distances(*self._columns(X), g=self.g)

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """∂(d_A, d_B)/∂x, shape (2, 8)."""
        return impact_jacobian(*self._columns(x), g=self.g)

    def jacobian_many(self, X: np.ndarray) -> np.ndarray:
        """Jacobians for a batch, shape (m, 8) -> (m, 2, 8)."""
        return impact_jacobian(*self._columns(X), g=self.g)

    def unphysical(self, x: np.ndarray) -> str | None:
        """Why ``x`` is on an unphysical branch, or None."""
        reason = str(branch_violations(*self._columns(x), g=self.g))
        return reason or None

    def unphysical_many(self, X: np.ndarray) -> np.ndarray:
        """Reasons for a batch, shape (m, 8) -> (m,) str, '' where physical."""
        return branch_violations(*self._columns(X), g=self.g)


def inverse_problem(analytic_jacobian: bool = True, g: float = G):
    """The inverse problem of Sec. 4 of [1]_ as an :class:`~uncertainty.inverse.InverseProblem`.

    Unknown vA0, vB0; known mA, mB, h, θ; uncertain e ~ N(0.6, 0.06²), μ ~ N(0.4, 0.04²);
    measured d_A = 0.582 m, d_B = 0.708 m; the solver starts from vA0 = 10, vB0 = 1 m/s.
    """
    from scipy import stats

    from uncertainty.inverse import InverseProblem

    return InverseProblem(
        model=DuImpactModel(analytic_jacobian=analytic_jacobian, g=g),
        outputs={"dA": D_A, "dB": D_B},
        unknowns=("vA0", "vB0"),
        uncertain=("e", "mu"),
        transform=IndependentTransform([stats.norm(E_MEAN, E_STD), stats.norm(MU_MEAN, MU_STD)]),
        known={"mA": M_A, "mB": M_B, "h": H, "theta": THETA},
        guess={"vA0": 10.0, "vB0": 1.0},
    )
