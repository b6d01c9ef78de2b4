"""How much energy and spin a forward run has at each time before it comes to rest: the law the
particle filter of :mod:`reverse.smc` weights backward runs by (issue 15 item 3, "energy-
consistent pasts"; Twigg & James 2008 [1]_ §4 "Rapid velocity growth").

Backward steps are exact, and each backward landing of a separating contact multiplies its
speed by 1/α (Eq. 7 of [1]_), so a backward run's energy grows; the forward runs say how fast it
may grow. From the training throws (:func:`reverse.markov_training.run_throws` with kinematics),
per record at reverse time ``τ`` (time before the end of the run):

* the specific mechanical energy above the run's final state,
  ``e = (½ m |v|² + ½ ωᵀ I ω + m |g| (h − h_end)) / m``, J/kg (``h``: height of the centre of
  mass against gravity) — constant in free flight, so it measures the energy a past has gained,
  not where in a bounce it is;
* the angular speed ``|ω|``, rad/s;

each kept as quantiles per bin of :data:`BIN_WIDTH` of ``τ`` (:class:`uncertainty.smc.QuantileLaw`,
of ``log1p`` of the value, so that a backward run 100 times too energetic is far in the tail but
still ordered); the share of records per contact state (0 free … 3 face, as in
:mod:`reverse.markov`) in each bin, with half a record added to each state (the Jeffreys prior,
so that no state has probability 0); and the fastest throw (speed and spin of the first
records). The log-potential of a backward state at ``τ`` is the sum of the three
log-probabilities (the features treated as independent given ``τ``).

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25 (SIGGRAPH 2008).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from uncertainty.smc import (
    MIN_TAIL,
    QUANTILE_LEVELS,
    TAIL_SHARE,
    QuantileLaw,
    histogram_log_ratio,
)

__all__ = [
    "BIN_WIDTH",
    "TAIL_NEUTRAL",
    "EnergyLaw",
    "fit_energy_law",
    "fit_lift_law",
    "log_upper_tail",
    "log_central",
    "CENTRAL_NEUTRAL",
    "specific_energy",
    "trajectory_log_likelihood",
]

#: Width of the reverse-time bins of the law, s: 12 steps of 1/240 s; a backward bounce of the
#: shipped block at 1 m/s lasts 0.2 s, so a bin sees each flight several times, and 200 throws
#: give ~2400 records per bin for the quantiles.
BIN_WIDTH = 0.05

#: Bins per feature of :meth:`EnergyLaw.ratio_log_weights` (quintiles of the forward law): with
#: 200 particles about 40 per bin, so the population's share of a bin is known to ~15%; the 20
#: bins of the stored quantiles left 2 particles per bin at n = 40 and the ``match`` scheme
#: collapsed on that noise (docs/reverse.md, "Energy-consistent pasts").
RATIO_LEVELS = 5

#: Upper-tail probability at and above which :func:`log_upper_tail` is 0 (neutral): a backward
#: state no more energetic than the forward median at its time is not weighted at all, so the
#: filter's scheme ``lift`` only pushes down pasts that are too energetic for their time, and
#: rewards nothing the backward model proposes often (the ``potential`` scheme's rest bias).
TAIL_NEUTRAL = 0.5

#: Tail probability at and above which :func:`log_central` is 0: the forward interquartile
#: range (both tails ≥ 25%) is neutral, the rest is pushed down by its tail probability.
CENTRAL_NEUTRAL = 0.25


def specific_energy(kinetic, mass: float, gravity: float, height, height_end: float) -> np.ndarray:
    """Mechanical energy per unit mass above the final state, J/kg (module docstring)."""
    return np.asarray(kinetic, dtype=float) / mass + gravity * (
        np.asarray(height, dtype=float) - height_end
    )


@dataclass(frozen=True)
class EnergyLaw:
    """Per reverse-time bin, the forward runs' law of energy and spin (module docstring).

    Attributes
    ----------
    energy : QuantileLaw
        Of ``log1p(e)``, ``e`` specific mechanical energy above the final state, J/kg.
    spin : QuantileLaw
        Of ``log1p(|ω|)``, rad/s.
    throw_speed, throw_spin : float
        Largest speed (m/s) and angular speed (rad/s) of the throws' first records.
    states : ndarray, shape (n_bins, 4)
        Probability of each contact state per bin of :attr:`energy`'s width.
    runs : int
        Forward runs it was fitted on (the effective size of each bin's sample: a run's records
        within one bin are strongly correlated).
    """

    energy: QuantileLaw
    spin: QuantileLaw
    throw_speed: float
    throw_spin: float
    states: np.ndarray
    runs: int

    def log_potential(
        self, reverse_time: float, energy: float, spin: float, state: int | None = None
    ) -> float:
        """``log φ_τ(x)``: the log-density of the state's energy and spin at ``τ``, plus the
        log-probability of its contact ``state`` (0–3) when given."""
        e = math.log1p(max(float(energy), 0.0))
        w = math.log1p(max(float(spin), 0.0))
        out = self.energy.log_density(reverse_time, e) + self.spin.log_density(reverse_time, w)
        if state is not None:
            k = min(max(int(reverse_time / self.energy.bin_width), 0), len(self.states) - 1)
            out = out + math.log(self.states[k, min(int(state), self.states.shape[1] - 1)])
        return float(out)

    def population_log_weights(self, reverse_time: float, energy, spin, state) -> np.ndarray:
        """Log-weights that resample a population of backward states at ``τ`` towards the
        forward runs' law there: the sum over energy, spin and contact state of
        ``log p_forward / p_population`` on bins (:func:`uncertainty.smc.histogram_log_ratio`;
        the features treated as independent given ``τ``).

        Parameters
        ----------
        reverse_time : float
            τ, s.
        energy, spin, state : ndarray, shape (n,)
            Specific mechanical energy above the final state (J/kg), angular speed (rad/s) and
            contact state (0–3) of each member.
        """
        e = np.log1p(np.maximum(np.asarray(energy, dtype=float), 0.0))
        w = np.log1p(np.maximum(np.asarray(spin, dtype=float), 0.0))
        out = histogram_log_ratio(self.energy.row(reverse_time), e, self.runs)
        out = out + histogram_log_ratio(self.spin.row(reverse_time), w, self.runs)
        c = np.clip(np.asarray(state, dtype=np.int64), 0, self.states.shape[1] - 1)
        k = min(max(int(reverse_time / self.energy.bin_width), 0), len(self.states) - 1)
        freq = (np.bincount(c, minlength=self.states.shape[1]) + 0.5) / (c.size + 2.0)
        return out + np.log(self.states[k][c]) - np.log(freq[c])

    def ratio_log_weights(
        self, reverse_time: float, energy, spin, state, weights, levels: int = RATIO_LEVELS
    ) -> np.ndarray:
        """Log of the importance ratio ``p_forward(x) / q_backward(x)`` per member of a weighted
        population of backward states at ``τ`` (the particle filter's scheme ``ratio``,
        :mod:`reverse.smc`): ``q_backward`` is the population's own weighted histogram — the law
        the backward model proposes at ``τ`` — on coarse bins cut at the forward quantiles of
        levels ``0, 1/levels, …, 1`` (an atom, the energy 0 of a body at rest, one bin), and the
        sum over energy, spin and contact state is taken (the features independent given
        ``τ``). Multiplying each member's weight by it moves the weighted population's share in
        every bin of each feature to the forward one (Doucet & Johansen 2011 §2, the importance
        weight of a density ratio): a state the backward model already proposes as often as
        forward runs have it — resting on a face — is not rewarded, one it proposes too rarely
        is.

        Both shares get half a count per bin (Jeffreys), the population's with its effective
        size ``1 / Σ w²`` (so a few heavy members do not make a bin look certain), the forward
        one with :attr:`runs`. Beyond the forward range the ratio also falls as ``exp(−d/s)``
        (:meth:`uncertainty.smc.QuantileLaw.log_density`'s tails), so far-out members stay
        ordered.

        Parameters
        ----------
        reverse_time : float
            τ, s.
        energy, spin, state : ndarray, shape (n,)
            As for :meth:`population_log_weights`.
        weights : ndarray, shape (n,)
            Normalised weights of the members (summing to 1).
        levels : int
            Bins per feature inside the forward range (a divisor of 20).
        """
        w = np.asarray(weights, dtype=float)
        n_eff = 1.0 / float(np.sum(w * w)) if np.sum(w) > 0 else 1.0
        out = np.zeros(w.shape)
        for law, x in (
            (self.energy, np.log1p(np.maximum(np.asarray(energy, dtype=float), 0.0))),
            (self.spin, np.log1p(np.maximum(np.asarray(spin, dtype=float), 0.0))),
        ):
            q = law.row(reverse_time)
            if np.isnan(q[0]):
                continue
            step = (len(q) - 1) // levels
            cut = q[::step]
            edges = np.unique(cut)
            cdf = np.array([QUANTILE_LEVELS[::step][cut == u].max() for u in edges])
            p_ref = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
            k = np.searchsorted(edges, x, side="left")
            p_smp = np.bincount(k, weights=w, minlength=p_ref.size)
            nb = p_ref.size
            p_ref = (p_ref * self.runs + 0.5) / (self.runs + 0.5 * nb)
            p_smp = (p_smp * n_eff + 0.5) / (n_eff + 0.5 * nb)
            span = q[-2] - q[1] if q[-2] > q[1] else max(q[-1] - q[0], 1e-12)
            scale = max(TAIL_SHARE * span, MIN_TAIL)
            out += np.log(p_ref[k]) - np.log(p_smp[k])
            out -= np.maximum(x - q[-1], 0.0) / scale + np.maximum(q[0] - x, 0.0) / scale
        c = np.clip(np.asarray(state, dtype=np.int64), 0, self.states.shape[1] - 1)
        kb = min(max(int(reverse_time / self.energy.bin_width), 0), len(self.states) - 1)
        freq = np.bincount(c, weights=w, minlength=self.states.shape[1])
        freq = (freq * n_eff + 0.5) / (n_eff + 2.0)
        return out + np.log(self.states[kb][c]) - np.log(freq[c])

    def inside_throws(self, speed: float, spin: float) -> bool:
        """Whether an earliest state is no faster (linear and angular) than the fastest throw."""
        return speed <= self.throw_speed and spin <= self.throw_spin

    def to_doc(self) -> dict:
        return {
            "features": "log1p of specific mechanical energy above the final state (J/kg); "
            "log1p of angular speed (rad/s)",
            "time": "reverse time: seconds before the end of the run",
            "energy": self.energy.to_doc(),
            "spin": self.spin.to_doc(),
            "throw_speed_max": round(float(self.throw_speed), 9),
            "throw_spin_max": round(float(self.throw_spin), 9),
            "state_probabilities": [[round(float(x), 9) for x in r] for r in self.states],
            "runs": int(self.runs),
        }

    @classmethod
    def from_doc(cls, doc: dict) -> EnergyLaw:
        """Inverse of :meth:`to_doc`; ``ValueError`` naming the field."""
        if not isinstance(doc, dict):
            raise ValueError("energy_law: expected a mapping")
        out = {}
        for key in ("energy", "spin"):
            try:
                out[key] = QuantileLaw.from_doc(doc[key])
            except (KeyError, ValueError) as exc:
                raise ValueError(f"energy_law.{key}: {exc}") from None
        try:
            speed, spin = float(doc["throw_speed_max"]), float(doc["throw_spin_max"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(
                "energy_law: throw_speed_max, throw_spin_max: expected numbers"
            ) from None
        try:
            states = np.array(doc["state_probabilities"], dtype=float)
            good = states.ndim == 2 and states.shape[1] == 4 and np.all(states > 0)
        except (KeyError, TypeError, ValueError):
            good = False
        if not good:
            raise ValueError("energy_law.state_probabilities: expected rows of 4 positive numbers")
        runs = doc.get("runs")
        if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
            raise ValueError("energy_law.runs: expected a positive number of runs")
        return cls(out["energy"], out["spin"], speed, spin, states, runs)


def fit_energy_law(kinematics, states, mass: float, gravity: float, dt: float) -> EnergyLaw:
    """The law of a list of forward runs' kinematics tables.

    Parameters
    ----------
    kinematics : list of ndarray, shape (n_steps + 1, 4)
        Per run, per record: speed (m/s), angular speed (rad/s), kinetic energy (J), height of
        the centre of mass (m) (:class:`reverse.markov_training.ThrowResult`).
    states : list of ndarray of int, shape (n_steps + 1,)
        Per run, the contact state of each record.
    mass : float
        Body mass, kg.
    gravity : float
        |g|, m/s².
    dt : float
        Step between records, s.
    """
    times, energies, spins = [], [], []
    for k in kinematics:
        n = len(k)
        tau = (n - 1 - np.arange(n)) * dt  # reverse time of each record
        times.append(tau)
        energies.append(
            np.log1p(np.maximum(specific_energy(k[:, 2], mass, gravity, k[:, 3], k[-1, 3]), 0.0))
        )
        spins.append(np.log1p(k[:, 1]))
    t = np.concatenate(times)
    duration = float(t.max()) if t.size else 0.0
    # the last bin ends at the runs' duration: a run of 1.5 s at 0.05 s has 30 bins plus the
    # records at exactly τ = 1.5 s, which join the last one
    n_bins = max(1, int(math.floor(duration / BIN_WIDTH + 1e-9)))
    first = np.array([k[0, :2] for k in kinematics]) if kinematics else np.zeros((0, 2))
    bins = np.minimum((t / BIN_WIDTH).astype(np.int64), n_bins - 1)
    counts = np.full((n_bins, 4), 0.5)  # Jeffreys: half a record per state
    np.add.at(counts, (bins, np.concatenate([np.asarray(s, dtype=np.int64) for s in states])), 1.0)
    return EnergyLaw(
        QuantileLaw.fit(t, np.concatenate(energies), BIN_WIDTH, n_bins),
        QuantileLaw.fit(t, np.concatenate(spins), BIN_WIDTH, n_bins),
        float(first[:, 0].max()) if first.size else math.inf,
        float(first[:, 1].max()) if first.size else math.inf,
        counts / counts.sum(axis=1, keepdims=True),
        len(kinematics),
    )


def fit_lift_law(kinematics, states, mass: float, gravity: float, dt: float) -> EnergyLaw:
    """The forward runs' law of energy and spin against ``σ``, the time before the run's *final
    rest began* (reverse time minus the time to first liftoff), for the particle filter's
    scheme ``lift`` (:mod:`reverse.smc`).

    Indexed by ``τ`` (:func:`fit_energy_law`), the law mixes how long the body rested with how
    fast its energy grew before: a backward run that leaves its rest early is judged against
    forward runs still at rest at that ``τ``, and a filter weighting by it delays the liftoff
    (docs/reverse.md, "Energy-consistent pasts": 0.94 s median against 0.44 s forward). Indexed by
    ``σ`` it says how much energy and spin a body has ``σ`` seconds before its final rest, which
    is what a backward cascade of landings after the rest's drop must match (Twigg & James 2008
    §4 "Rapid velocity growth": each backward landing multiplies the normal speed by ``1/α``,
    Eq. 7).

    Run ``r``'s final segment starts after its last record ``m`` in another contact state; record
    ``i ≤ m`` has ``σ = (m − i) dt`` (the backward run's liftoff is the reverse time of record
    ``m``, :func:`reverse.markov.time_to_first_liftoff`). A run in one state throughout gives no
    records. The energy is above the run's *final* state, as for :func:`fit_energy_law`.

    Parameters are those of :func:`fit_energy_law`; :attr:`EnergyLaw.states` holds the contact
    shares against ``σ`` and :attr:`EnergyLaw.throw_speed`, ``throw_spin`` the throws' largest,
    as there.
    """
    times, energies, spins, codes = [], [], [], []
    for k, s in zip(kinematics, states, strict=True):
        s = np.asarray(s, dtype=np.int64)
        other = np.flatnonzero(s != s[-1])
        if other.size == 0:
            continue
        m = int(other[-1])
        times.append((m - np.arange(m + 1)) * dt)
        e = specific_energy(k[: m + 1, 2], mass, gravity, k[: m + 1, 3], k[-1, 3])
        energies.append(np.log1p(np.maximum(e, 0.0)))
        spins.append(np.log1p(k[: m + 1, 1]))
        codes.append(s[: m + 1])
    t = np.concatenate(times) if times else np.zeros(0)
    duration = float(t.max()) if t.size else BIN_WIDTH
    n_bins = max(1, int(math.floor(duration / BIN_WIDTH + 1e-9)))
    first = np.array([k[0, :2] for k in kinematics]) if kinematics else np.zeros((0, 2))
    bins = np.minimum((t / BIN_WIDTH).astype(np.int64), n_bins - 1)
    counts = np.full((n_bins, 4), 0.5)  # Jeffreys: half a record per state
    if t.size:
        np.add.at(counts, (bins, np.concatenate(codes)), 1.0)
    return EnergyLaw(
        QuantileLaw.fit(t, np.concatenate(energies) if t.size else t, BIN_WIDTH, n_bins),
        QuantileLaw.fit(t, np.concatenate(spins) if t.size else t, BIN_WIDTH, n_bins),
        float(first[:, 0].max()) if first.size else math.inf,
        float(first[:, 1].max()) if first.size else math.inf,
        counts / counts.sum(axis=1, keepdims=True),
        len(kinematics),
    )


def _log_tails(law: QuantileLaw, time: float, x: float) -> tuple[float, float] | None:
    """``(log P(X ≤ x), log P(X ≥ x))`` of the forward feature at ``time`` (``x`` already
    transformed as the law's), or None where the bin has no data.

    Read off the piecewise-linear CDF through the stored quantiles; at a repeated quantile (an
    atom, such as the energy 0 of a body at rest) both include the atom, so the most common
    forward value is in neither tail. Beyond the 5% and 95% quantiles each tail falls as
    ``0.05 exp(−d / s)``, ``d`` the distance beyond that quantile and ``s`` the tail scale of
    :meth:`uncertainty.smc.QuantileLaw.log_density` (:data:`TAIL_SHARE` of the 5–95% range, at
    least :data:`MIN_TAIL`), so that states far beyond the forward range stay ordered.
    """
    q = law.row(time)
    if np.isnan(q[0]):
        return None
    levels = QUANTILE_LEVELS
    top = len(levels) - 2  # the 95% quantile; the 5% is index 1
    span = q[-2] - q[1] if q[-2] > q[1] else max(q[-1] - q[0], 1e-12)
    scale = max(TAIL_SHARE * span, MIN_TAIL)
    edges = np.unique(q)
    low = np.array([levels[q == u].min() for u in edges])  # P(X < u)
    high = np.array([levels[q == u].max() for u in edges])  # P(X ≤ u)
    i = int(np.searchsorted(edges, x, side="right")) - 1
    if i < 0:
        f_low = f_high = 0.0
    elif x == edges[i] or i == len(edges) - 1:
        f_low, f_high = float(low[i]), float(high[i])
    else:
        f_low = f_high = float(
            high[i] + (low[i + 1] - high[i]) * (x - edges[i]) / (edges[i + 1] - edges[i])
        )
    floor = 1.0 - levels[top]  # 0.05
    if x > q[top]:
        log_s = math.log(floor) - (x - q[top]) / scale
    else:
        log_s = math.log(max(1.0 - f_low, floor))
    if x < q[1]:
        log_f = math.log(floor) - (q[1] - x) / scale
    else:
        log_f = math.log(max(f_high, floor))
    return log_f, log_s


def log_upper_tail(law: QuantileLaw, time: float, x: float, neutral: float = TAIL_NEUTRAL) -> float:
    """``min(0, log(S(x) / neutral))``, ``S(x) = P(X ≥ x)`` the forward upper-tail probability of
    the feature at ``time`` (``x`` already transformed as the law's, e.g. ``log1p``;
    :func:`_log_tails`). 0 where the bin has no data.
    """
    tails = _log_tails(law, time, x)
    if tails is None:
        return 0.0
    return min(0.0, tails[1] - math.log(neutral))


def log_central(law: QuantileLaw, time: float, x: float, neutral: float = CENTRAL_NEUTRAL) -> float:
    """``min(0, log(min(F(x), S(x)) / neutral))``: 0 inside the forward central range (both tail
    probabilities at least ``neutral``), falling in either tail (:func:`_log_tails`). The filter's
    scheme ``lift-central``: a backward past with too *little* spin for its time before rest (a
    purely vertical cascade of landings, 0 rad/s) is pushed down as well as one with too much.
    """
    tails = _log_tails(law, time, x)
    if tails is None:
        return 0.0
    return min(0.0, min(tails) - math.log(neutral))


def trajectory_log_likelihood(law: EnergyLaw, trajectory, gravity) -> float:
    """Forward log-likelihood of a reverse run: ``Σ_g log φ_{τ_g}(x(τ_g))`` over the ends of the
    law's bins, ``τ_g = g w`` up to the run's duration (:meth:`EnergyLaw.log_potential` without
    the contact state). What sampled runs are ranked by with ``rank="likelihood"``
    (:func:`reverse.sampling.sample_reverse_runs`).

    Parameters
    ----------
    law : EnergyLaw
    trajectory : workbench.sim.state.Trajectory
        A reverse run (forward time order, the scene's state last), with its ``kinetic_energy``
        diagnostic and ``<body>/mass`` parameters.
    gravity : array_like, shape (3,)
        m/s².
    """
    g = np.asarray(gravity, dtype=float)
    up = -g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.zeros(3)
    mass = np.array(
        [float(trajectory.params.get(f"{name}/mass", 0.0)) for name in trajectory.body_names]
    )
    moving = mass > 0
    if not moving.any() or trajectory.n_times < 2:
        return 0.0
    rise = (trajectory.position[:, moving] - trajectory.position[-1, moving]) @ up
    ke = np.asarray(trajectory.diagnostics["kinetic_energy"], dtype=float)
    e = (ke + np.linalg.norm(g) * rise @ mass[moving]) / mass[moving].sum()
    spin = np.linalg.norm(trajectory.angular_velocity[:, moving], axis=2).max(axis=1)
    n = trajectory.n_times
    dt = float(trajectory.time[1] - trajectory.time[0])
    width = law.energy.bin_width
    total = 0.0
    for g_end in np.arange(width, (n - 1) * dt + 0.5 * dt, width):
        k = n - 1 - int(round(g_end / dt))
        if k < 0:
            break
        total += law.log_potential(float(g_end), float(e[k]), float(spin[k]))
    return float(total)
