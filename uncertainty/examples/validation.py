"""The two example problems of Ao, Hu & Mahadevan [1] for the time-domain validation metrics.

1. **Simply supported beam** under a random point load F(t) at mid-span and a random distributed
   load q(t) (Eq. 29, Table 1 of [1]): the mid-span deflection, with synthetic experiments for a
   good model (model + white noise) and a bad model (+ the bias of Eq. 32 after 1 s).
2. **Mass-spring-damper chain** of the Sandia structural dynamics challenge problem (Sec. 4.2 of
   [1]): three masses in series with lognormal stiffnesses and damping ratios (Table 2), the
   acceleration of the last mass as output, a bad model with the bias of Eq. (34). The paper does
   not give the beam that carries the chain, nor the masses; this module uses a documented
   stand-in (:data:`CHAIN_MASS`, :data:`BEAM_STANDIN`): the chain sits on the beam's first mode,
   an oscillator driven by P(t) = 3000 sin(350 t), with one-way coupling (the chain does not load
   the beam).

Everything is pure numpy/scipy with the randomness passed in as ``rng``. Model realizations can be
produced chunk by chunk (:func:`beam_model_chunks`, :func:`chain_model_chunks`) so that 1e5
realizations never sit in memory at once; chunk ``c`` draws from ``SeedSequence(seed,
spawn_key=(c,))``, so the realizations depend on the seed and the chunk size only.

References
----------
.. [1] Y. Ao, Z. Hu, S. Mahadevan, Dynamics Model Validation Using Time-Domain Metrics,
       ASME J. Verif. Valid. Uncert. 2(1):011004 (2017).
.. [2] J. Red-Horse, T. Paez, Sandia National Laboratories Validation Workshop: Structural
       Dynamics Application, Comput. Methods Appl. Mech. Eng. 197:2578-2584 (2008).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from uncertainty.errors import UncertaintyError
from uncertainty.random_fields import GaussianProcess, gaussian_process, sample_lognormal

__all__ = [
    "BEAM_TABLE1",
    "BEAM_NOISE_STD_PAPER",
    "BEAM_BIAS_AMPLITUDE",
    "BEAM_BIAS_START",
    "BeamProblem",
    "beam_deflection",
    "beam_bias",
    "beam_model_chunks",
    "beam_experiments",
    "CHAIN_TABLE2",
    "CHAIN_MASS",
    "CHAIN_FORCE_AMPLITUDE",
    "CHAIN_FORCE_FREQUENCY",
    "CHAIN_BIAS_AMPLITUDE",
    "CHAIN_BIAS_FREQUENCY",
    "CHAIN_BIAS_START_STEP",
    "CHAIN_NOISE_STD",
    "BEAM_STANDIN",
    "ChainProblem",
    "chain_bias",
    "chain_model_chunks",
    "chain_experiments",
]

# ----------------------------------------------------------------------------- beam, Table 1
#: Table 1 of [1]: (mean, std) of the lognormal cross-section dimensions a0, b0 (m); Gaussian
#: loads F(t) (N; mean 1000 (1 + sin(2 + t)) as printed) and q(t) (N/m) with the
#: squared-exponential autocorrelations of Eq. (30)-(31) (correlation lengths 1/8 s and 1/2 s);
#: deterministic span L (m), weight density ρ_st (N/m³) and Young's modulus E (Pa).
BEAM_TABLE1 = {
    "a0": (0.2, 0.005),
    "b0": (0.04, 0.0008),
    "F_amplitude": 1000.0,
    "F_std": 100.0,
    "F_correlation_length": 1.0 / 8.0,
    "q_mean": 450.0,
    "q_std": 20.0,
    "q_correlation_length": 1.0 / 2.0,
    "L": 5.0,
    "rho_st": 78.5e3,
    "E": 30e9,
}
#: Standard deviation of the white measurement noise as printed in [1] (Sec. 4.1.1), m.
BEAM_NOISE_STD_PAPER = 0.1
#: Eq. (32) of [1]: δg = 0.08 B* sin(2t), B* = 1 for t >= 1 s, else 0 (m, s).
BEAM_BIAS_AMPLITUDE = 0.08
BEAM_BIAS_START = 1.0


def beam_deflection(a0, b0, F, q, *, table: dict | None = None) -> np.ndarray:
    """Mid-span deflection of the simply supported beam, Eq. (29) of [1].

    Parameters
    ----------
    a0, b0 : ndarray, shape (n, 1) or broadcastable
        Cross-section width and height, m.
    F : ndarray, shape (n, n_t)
        Point load at mid-span, N.
    q : ndarray, shape (n, n_t)
        Distributed load, N/m.
    table : dict, optional
        Constants; :data:`BEAM_TABLE1` by default.

    Returns
    -------
    ndarray, shape (n, n_t)
        Deflection, m (positive downwards).
    """
    c = BEAM_TABLE1 if table is None else table
    L, E, rho = c["L"], c["E"], c["rho_st"]
    inertia = a0 * b0**3 / 12.0  # I = a0 b0³ / 12
    # Eq. (29) in [1]: g = F L³/(48 E I) + 5 (q + ρ_st a0 b0) L⁴/(384 E I)
    return F * L**3 / (48.0 * E * inertia) + 5.0 * (q + rho * a0 * b0) * L**4 / (
        384.0 * E * inertia
    )


def beam_bias(time: np.ndarray) -> np.ndarray:
    """Model-form bias of the bad-model experiments, Eq. (32) of [1], shape (n_t,), m."""
    t = np.asarray(time, dtype=np.float64)
    b_star = (t >= BEAM_BIAS_START).astype(np.float64)  # B* = 0 before 1 s, 1 after
    return BEAM_BIAS_AMPLITUDE * b_star * np.sin(2.0 * t)


@dataclass(frozen=True)
class BeamProblem:
    """The beam's random inputs discretised on a time grid.

    Attributes
    ----------
    time : ndarray, shape (n_t,)
        Instants, s.
    F : GaussianProcess
        Point load, N (Table 1, Eq. 30).
    q : GaussianProcess
        Distributed load, N/m (Table 1, Eq. 31).
    """

    time: np.ndarray
    F: GaussianProcess
    q: GaussianProcess

    @classmethod
    def build(cls, time: np.ndarray, *, method: str = "kl") -> BeamProblem:
        """Samplers for F(t) and q(t) on ``time`` (KL truncated at the default tolerance)."""
        t = np.asarray(time, dtype=np.float64)
        c = BEAM_TABLE1
        # Table 1 of [1]: mean of F(t) = 1000 (1 + sin(2 + t)) N, as printed
        F = gaussian_process(
            t,
            c["F_amplitude"] * (1.0 + np.sin(2.0 + t)),
            c["F_std"],
            c["F_correlation_length"],
            method=method,
        )
        q = gaussian_process(t, c["q_mean"], c["q_std"], c["q_correlation_length"], method=method)
        return cls(t, F, q)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` model realizations of the deflection, shape (n, n_t), m."""
        c = BEAM_TABLE1
        a0 = sample_lognormal(rng, *c["a0"], (n, 1))
        b0 = sample_lognormal(rng, *c["b0"], (n, 1))
        return beam_deflection(a0, b0, self.F.sample(rng, n), self.q.sample(rng, n))


def beam_model_chunks(
    problem: BeamProblem, n: int, seed: int, chunk_size: int = 10_000
) -> Iterator[np.ndarray]:
    """``n`` model realizations in chunks of at most ``chunk_size`` rows, shape (m, n_t).

    Chunk ``c`` draws from ``SeedSequence(seed, spawn_key=(c,))``: calling again gives the same
    realizations, so several thresholds can stream the same model.
    """
    for c, start in enumerate(range(0, n, chunk_size)):
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(c,)))
        yield problem.sample(rng, min(chunk_size, n - start))


def beam_experiments(
    problem: BeamProblem,
    rng: np.random.Generator,
    n_experiments: int,
    noise_std: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic experiments of Sec. 4.1.1 of [1], good and bad, from the same draws.

    Each experiment is one realization of the model (its own a0, b0, F(t), q(t)) plus white
    noise N(0, noise_std²) at every instant; the bad-model experiments add the bias of Eq. (32)
    to the same series, so both cases agree before 1 s.

    Returns
    -------
    good, bad : ndarray, shape (n_experiments, n_t)
        Deflections, m.
    """
    truth = problem.sample(rng, n_experiments)
    good = truth + noise_std * rng.standard_normal(truth.shape)
    return good, good + beam_bias(problem.time)


# ------------------------------------------------------------------------ chain, Table 2
#: Table 2 of [1]: (mean, std) of the lognormal spring stiffnesses k1..k3 and damping ratios
#: ζ1..ζ3 (units as in the challenge problem [2]; the paper gives none).
CHAIN_TABLE2 = {
    "k": ((5000.0, 100.0), (9000.0, 180.0), (8000.0, 160.0)),
    "zeta": ((0.025, 0.0005), (0.025, 0.0005), (0.025, 0.0005)),
}
#: Masses m1 = m2 = m3 (not given in [1]; stand-in). With the mean stiffnesses the chain's
#: undamped natural frequencies are 319, 958 and 1493 rad/s: the first lies near the forcing.
CHAIN_MASS = 0.012
#: P(t) = 3000 sin(350 t) (Sec. 4.2.1 of [1]).
CHAIN_FORCE_AMPLITUDE = 3000.0
CHAIN_FORCE_FREQUENCY = 350.0
#: Eq. (34) of [1]: bias 500 sin(100 t) from the tenth step (0.0005 s, so dt = 5e-5 s).
CHAIN_BIAS_AMPLITUDE = 500.0
CHAIN_BIAS_FREQUENCY = 100.0
CHAIN_BIAS_START_STEP = 10
#: Eq. (34) of [1]: white noise N(0, 1²) on the acceleration.
CHAIN_NOISE_STD = 1.0
#: Stand-in for the beam that carries the chain (not given in [1]): its first bending mode as an
#: oscillator of modal mass ``mass``, natural frequency ``omega`` (rad/s) and damping ratio
#: ``zeta``, loaded by P(t); its displacement and velocity drive the chain's base. The modal mass
#: sets the response level: 5 gives a peak acceleration of m3 of about 3.5e3 over 0.1 s, so the
#: bias of Eq. (34) (amplitude 500) is a 10-50 % error, the range the thresholds λ = 8-16 % of
#: the paper resolve (with mass 1 the bias would be 3 % of the peak and undetectable).
BEAM_STANDIN = {"mass": 5.0, "omega": 600.0, "zeta": 0.02}

_N_STATE = 10  # forcing oscillator (2), beam mode (2), chain displacements (3), velocities (3)


def _system_matrices(k: np.ndarray, zeta: np.ndarray) -> np.ndarray:
    """Continuous-time system matrices, shape (n, 10, 10), of the autonomous linear system.

    State ``z = [s, c, u_b, v_b, x1, x2, x3, v1, v2, v3]``: ``s = sin(Ω t)``, ``c = cos(Ω t)``
    generate the load exactly (s' = Ω c, c' = -Ω s), ``u_b, v_b`` is the beam mode, ``x, v`` the
    absolute displacements and velocities of the masses.
    """
    n = k.shape[0]
    m = CHAIN_MASS
    Om = CHAIN_FORCE_FREQUENCY
    mb, wb, zb = BEAM_STANDIN["mass"], BEAM_STANDIN["omega"], BEAM_STANDIN["zeta"]
    c = 2.0 * zeta * np.sqrt(k * m)  # dashpot of spring i: c_i = 2 ζ_i sqrt(k_i m_i)
    A = np.zeros((n, _N_STATE, _N_STATE))
    A[:, 0, 1] = Om
    A[:, 1, 0] = -Om
    # beam mode: m_b u'' + 2 ζ_b ω_b m_b u' + ω_b² m_b u = P0 sin(Ω t)
    A[:, 2, 3] = 1.0
    A[:, 3, 2] = -(wb**2)
    A[:, 3, 3] = -2.0 * zb * wb
    A[:, 3, 0] = CHAIN_FORCE_AMPLITUDE / mb
    # chain on the base (u_b, v_b): x_i' = v_i
    for i in range(3):
        A[:, 4 + i, 7 + i] = 1.0
    k1, k2, k3 = k.T
    c1, c2, c3 = c.T
    # m x1'' = -k1 (x1 - u_b) - c1 (v1 - v_b) + k2 (x2 - x1) + c2 (v2 - v1)
    A[:, 7, 4], A[:, 7, 5], A[:, 7, 2] = -(k1 + k2) / m, k2 / m, k1 / m
    A[:, 7, 7], A[:, 7, 8], A[:, 7, 3] = -(c1 + c2) / m, c2 / m, c1 / m
    # m x2'' = -k2 (x2 - x1) - c2 (v2 - v1) + k3 (x3 - x2) + c3 (v3 - v2)
    A[:, 8, 4], A[:, 8, 5], A[:, 8, 6] = k2 / m, -(k2 + k3) / m, k3 / m
    A[:, 8, 7], A[:, 8, 8], A[:, 8, 9] = c2 / m, -(c2 + c3) / m, c3 / m
    # m x3'' = -k3 (x3 - x2) - c3 (v3 - v2)
    A[:, 9, 5], A[:, 9, 6] = k3 / m, -k3 / m
    A[:, 9, 8], A[:, 9, 9] = c3 / m, -c3 / m
    return A


def _chain_response(time: np.ndarray, k: np.ndarray, zeta: np.ndarray) -> np.ndarray:
    """Acceleration of m3, shape (n, n_t), from rest at t = 0, in closed form at ``time``.

    The system z' = A z is linear, time-invariant and autonomous (the load is generated by the
    state), with distinct eigenvalues (forcing ±iΩ, the beam mode and three damped chain modes),
    so z(t) = V exp(Λ t) V⁻¹ z(0) and a3(t) = Re Σ_j w_j exp(λ_j t) with w = (A[9] V) ⊙ (V⁻¹ z0).
    No time stepping: the only error is the round-off of the eigendecomposition (checked against
    ``scipy.linalg.expm`` propagation in the tests).
    """
    t = np.asarray(time, dtype=np.float64)
    A = _system_matrices(k, zeta)
    lam, V = np.linalg.eig(A)  # (n, 10), (n, 10, 10)
    z0 = np.zeros((k.shape[0], _N_STATE))
    z0[:, 1] = 1.0  # c = cos(0) = 1; everything else at rest
    coef = np.linalg.solve(V, z0[:, :, None].astype(complex))[:, :, 0]  # V⁻¹ z0
    w = np.einsum("mi,mij->mj", A[:, 9, :].astype(complex), V) * coef  # acceleration of m3
    out = np.zeros((k.shape[0], t.shape[0]))
    for j in range(_N_STATE):
        out += (w[:, j, None] * np.exp(lam[:, j, None] * t[None, :])).real
    return out


def chain_bias(time: np.ndarray) -> np.ndarray:
    """Bias of the bad-model experiments, Eq. (34) of [1]: 500 sin(100 t) from the 10th step."""
    t = np.asarray(time, dtype=np.float64)
    on = np.arange(t.shape[0]) >= CHAIN_BIAS_START_STEP
    return CHAIN_BIAS_AMPLITUDE * on * np.sin(CHAIN_BIAS_FREQUENCY * t)


@dataclass(frozen=True)
class ChainProblem:
    """The chain problem on a time grid starting at 0, where the system is at rest.

    The response is evaluated in closed form at the given instants (any spacing); the bias of
    Eq. (34) starts at the 10th instant, 0.0005 s on the paper's grid of dt = 5e-5 s.
    """

    time: np.ndarray

    def __post_init__(self) -> None:
        t = np.asarray(self.time, dtype=np.float64)
        if t.ndim != 1 or t.size < 1 or t[0] != 0.0 or np.any(np.diff(t) <= 0.0):
            raise UncertaintyError(
                "time: expected increasing instants starting at 0 (the chain starts at rest)",
                "time",
            )
        object.__setattr__(self, "time", t)

    def sample_inputs(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Stiffnesses and damping ratios (Table 2), each shape (n, 3)."""
        k = np.column_stack([sample_lognormal(rng, *ms, n) for ms in CHAIN_TABLE2["k"]])
        z = np.column_stack([sample_lognormal(rng, *ms, n) for ms in CHAIN_TABLE2["zeta"]])
        return k, z

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` model realizations of the acceleration of m3, shape (n, n_t)."""
        k, z = self.sample_inputs(rng, n)
        return _chain_response(self.time, k, z)


def chain_model_chunks(
    problem: ChainProblem, n: int, seed: int, chunk_size: int = 2_000
) -> Iterator[np.ndarray]:
    """``n`` realizations in chunks, chunk ``c`` from ``SeedSequence(seed, spawn_key=(c,))``."""
    for c, start in enumerate(range(0, n, chunk_size)):
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(c,)))
        yield problem.sample(rng, min(chunk_size, n - start))


def chain_experiments(
    problem: ChainProblem, rng: np.random.Generator, n_experiments: int
) -> tuple[np.ndarray, np.ndarray]:
    """Good and bad synthetic experiments of Eq. (34) of [1] from the same draws.

    Returns
    -------
    good, bad : ndarray, shape (n_experiments, n_t)
        ``g_g = model(own k, ζ) + ε`` and ``g_b = g_g + 500 sin(100 t)`` from the 10th step.
    """
    truth = problem.sample(rng, n_experiments)
    good = truth + CHAIN_NOISE_STD * rng.standard_normal(truth.shape)
    return good, good + chain_bias(problem.time)
