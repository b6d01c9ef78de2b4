"""Dwell-time hazards of the semi-Markov contact model: memory for the contact-transition table of
Twigg & James 2008 [1]_ §4 (Figs. 9–10).

The table of [1]_ is a Markov chain: "the probability P(η^t | η^{t−Δt}) … is independent of all
the other states η^{t+Δt}, η^{t+2Δt}, …". Its holding time in each contact state is therefore
geometric, with one per-step rate that mixes every visit of the state. For a block thrown at the
ground the visits of the face state are of two kinds that no single rate describes: brief flat
landings during a tumble (one or two steps) and the final rest (0.44 s on average, measured on
``markov_block``). A backward run with the Markov table leaves the final rest after ≈ 0.2 s.

A semi-Markov chain ([2]_ Ch. 3, the discrete-time semi-Markov kernel ``q_ij(k)``, estimated
empirically in Ch. 4; [3]_, the explicit-duration models) lets the probability of leaving a
state depend on the time already spent in it. Here, in reverse time as the backward run sees it,
each contact state ``i`` of a body has a discrete-time cause-specific hazard: for a segment of
state ``i`` (a maximal run of steps in one state) that has lasted ``a`` steps so far,

    h_ij(a) = D_ij(a) / R_i(a),   j < i,

where ``R_i(a)`` counts the backward steps of the forward runs taken from state ``i`` at age ``a``
(the segments "at risk") and ``D_ij(a)`` those among them that drop to ``j`` contacts — the
discrete life-table estimator of competing risks ([4]_ Ch. 8, cause-specific hazards): a segment
that ends by a rise (the dynamics, not the model, make it) or at the start of its run counts as
at risk up to then, and as censored after. Only drops are modelled, as in [1]_ Fig. 10: a
backward step can make a contact separate but not make one stick. A backward run that draws its
drops with ``h_ij(a)`` reproduces the forward distribution of the dwell time of every segment
that ends by a drop — as far as the backward dynamics carry a drawn drop out, and no further:
a backward landing that bounces off at once (the elastic branch of Eq. 7) ends a segment
whatever the hazard says.

The final rest is modelled apart: the first segment of each reversed run (the state the body
ends in, forward) is of kind ``"rest"``, every later one of kind ``"tumble"``. Ages with fewer
than :data:`MIN_AT_RISK` steps at risk are pooled into one tail bin with a constant hazard (the
total drops over the total steps at risk of those ages: a geometric tail).

Pure numpy; :mod:`reverse.goals.markov` holds the table and the sampling that use these hazards.

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25 (SIGGRAPH 2008).
.. [2] Barbu & Limnios, Semi-Markov Chains and Hidden Semi-Markov Models toward Applications,
       Lecture Notes in Statistics 191, Springer 2008.
.. [3] Yu, Hidden semi-Markov models, Artificial Intelligence 174(2) 215–243 (2010).
.. [4] Kalbfleisch & Prentice, The Statistical Analysis of Failure Time Data, 2nd ed., Wiley 2002.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["KINDS", "MIN_AT_RISK", "DwellHazards", "FinalRest", "estimate_hazards"]

#: Segment kinds: the first segment of a backward run (the final rest of the forward run) and
#: every later one (contacts during a tumble).
KINDS = ("rest", "tumble")

#: Ages (steps in the current segment) with fewer steps at risk than this pool into the tail
#: bin: the per-age hazard of ``n`` at-risk steps has a standard error of ≈ sqrt(h/n); at 20 a
#: hazard of 0.05 is known to ±0.05, below that the per-age estimates are mostly noise.
MIN_AT_RISK = 20


def _segment_steps(seq: np.ndarray):
    """``(kind, state, age, next_state)`` of every backward step of one forward sequence."""
    r = np.asarray(seq, dtype=np.int64)[::-1]  # reverse time: the final state first
    if r.size < 2:
        return r[:0], r[:0], r[:0], r[:0]
    cur, nxt = r[:-1], r[1:]
    change = np.concatenate([[False], r[1:-1] != r[:-2]])  # a new segment starts at step k
    seg = np.cumsum(change)
    starts = np.flatnonzero(np.concatenate([[True], change[1:]]))
    age = np.arange(cur.size) - starts[seg]
    kind = (seg > 0).astype(np.int64)  # 0 "rest" (first segment), 1 "tumble"
    return kind, cur, age, nxt


def estimate_hazards(sequences, dt: float, n_states: int = 4, min_at_risk: int = MIN_AT_RISK):
    """The :class:`DwellHazards` of forward contact-state sequences.

    Parameters
    ----------
    sequences : list of 1-D int arrays
        Contact states in forward time order (one array per run).
    dt : float
        Step of the runs, s.
    n_states : int
        Number of contact states (4: free, vertex, edge, face).
    min_at_risk : int
        :data:`MIN_AT_RISK`.

    Returns
    -------
    DwellHazards
    """
    raw: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}
    parts = [_segment_steps(s) for s in sequences] or [(np.zeros(0, np.int64),) * 4]
    kind, cur, age, nxt = (np.concatenate([p[c] for p in parts]) for c in range(4))
    for k, name in enumerate(KINDS):
        for i in range(1, n_states):  # state 0 (free flight) has nothing to drop to
            sel = (kind == k) & (cur == i)
            if not sel.any():
                continue
            n_age = int(age[sel].max()) + 1
            at_risk = np.bincount(age[sel], minlength=n_age)
            drops = np.zeros((i, n_age), dtype=np.int64)
            for j in range(i):
                drops[j] = np.bincount(age[sel & (nxt == j)], minlength=n_age)[:n_age]
            # Ages 0..A-1 kept, ages >= A pooled into the tail bin A (module docstring)
            small = np.flatnonzero(at_risk < min_at_risk)
            cut = int(small[0]) if small.size else n_age  # 0: all ages in the tail bin
            a = np.concatenate([at_risk[:cut], [at_risk[cut:].sum()]])
            d = np.concatenate([drops[:, :cut], drops[:, cut:].sum(axis=1, keepdims=True)], axis=1)
            raw[(name, i)] = (a.astype(np.int64), d.astype(np.int64))
    return DwellHazards(float(dt), raw, int(min_at_risk))


@dataclass(frozen=True)
class DwellHazards:
    """Duration-dependent drop hazards per segment kind and contact state (module docstring).

    Attributes
    ----------
    dt : float
        Step of the training runs, s: ages count steps of this length.
    tables : dict
        ``(kind, state) -> (at_risk, drops)``: ``at_risk`` int array (A + 1,), the backward steps
        taken at age 0 … A − 1 and (last entry) at ages ≥ A; ``drops`` int array (state, A + 1),
        ``drops[j, a]`` those of them that dropped to ``j`` contacts.
    min_at_risk : int
        The pooling threshold used (:data:`MIN_AT_RISK`).
    """

    dt: float
    tables: dict = field(default_factory=dict)
    min_at_risk: int = MIN_AT_RISK

    def __post_init__(self) -> None:
        for (kind, i), (a, d) in self.tables.items():  # (a, d): at-risk and drop counts
            a, d = np.asarray(a), np.asarray(d)
            if kind not in KINDS or not 1 <= i:
                raise ValueError(f"unknown segment {kind!r} {i}")
            if a.ndim != 1 or a.size < 1 or d.shape != (i, a.size):
                raise ValueError(f"{kind} {i}: expected at_risk (A+1,) and drops ({i}, A+1)")
            if np.any(a < 0) or np.any(d < 0) or np.any(d.sum(axis=0) > a):
                raise ValueError(f"{kind} {i}: counts must be >= 0 and drops <= at_risk")

    def row(self, kind: str, state: int, age: int, dt: float | None = None) -> np.ndarray | None:
        """``P(η^{t−Δt} = j | η^t = state, age)`` for ``j = 0 … state``, per step of ``dt``.

        ``age``: steps of ``dt`` already spent in the current segment (0 on its first step).
        ``None`` when no forward run took a step from such a segment (``kind "rest"`` falls back
        to ``"tumble"`` first: the caller then uses the Markov row).

        A step of another length than the training one looks up the training age
        ``⌊age · dt / dt_train⌋`` and keeps the hazard's rate: stay ``(1 − h)^(dt/dt_train)``,
        the drops sharing the rest in their proportions (as
        :meth:`reverse.goals.markov.TransitionModel.step_probabilities`).
        """
        table = self.tables.get((kind, int(state)))
        if table is None or table[0].sum() == 0:
            if kind != "tumble":
                return self.row("tumble", state, age, dt)
            return None
        at_risk, drops = table
        ratio = 1.0 if dt is None else float(dt) / self.dt
        a = int(math.floor(age * ratio + 1e-9)) if ratio != 1.0 else int(age)
        a = min(a, at_risk.size - 1)
        if at_risk[a] == 0:  # an age no run reached below the tail: use the tail bin
            a = at_risk.size - 1
            if at_risk[a] == 0:
                return None
        # h_ij(a) = D_ij(a) / R_i(a): the discrete cause-specific hazard ([4] Ch. 8; module doc)
        p = drops[:, a] / at_risk[a]
        out = np.zeros(int(state) + 1)
        leave = float(p.sum())
        stay = (1.0 - leave) ** ratio if ratio != 1.0 else 1.0 - leave
        if leave > 0:
            out[: int(state)] = p / leave * (1.0 - stay)
        out[int(state)] = 1.0 - out[: int(state)].sum()
        return out

    def mean_dwell(self, kind: str, state: int) -> float:
        """Mean dwell, s, of a segment that only ends by a drop (rises ignored): Σ_a S(a) dt,
        with the tail bin's constant hazard summed as a geometric series."""
        at_risk, drops = self.tables[(kind, int(state))]
        h = np.where(at_risk > 0, drops.sum(axis=0) / np.maximum(at_risk, 1), 0.0)
        survive, total = 1.0, 0.0
        for a in range(h.size - 1):
            total += survive
            survive *= 1.0 - h[a]
        tail = h[-1]
        if tail > 0:
            total += survive / tail
        elif survive > 0:  # segments outlive the last bin and the tail never ends them
            total = math.inf
        # else every segment ended before the tail bin (no one at risk there): nothing to add
        return total * self.dt

    def sample_dwell(self, kind: str, state: int, rng: np.random.Generator) -> float:
        """A dwell (s) of a segment of ``kind`` in ``state`` that ends by a drop, drawn from the
        hazards with one uniform (inverse transform of ``F(a) = 1 − Π_{k ≤ a} (1 − h(k))``; the
        tail bin's constant hazard a geometric tail): the drop comes at age ``a``, after ``a``
        steps in the segment. ``at: rest`` of a hints distribution (:mod:`reverse.goals.hints`)."""
        at_risk, drops = self.tables[(kind, int(state))]
        h = np.where(at_risk > 0, drops.sum(axis=0) / np.maximum(at_risk, 1), 0.0)
        u = float(rng.random())
        survive = 1.0
        for a in range(h.size - 1):
            survive *= 1.0 - h[a]
            if 1.0 - survive >= u:
                return a * self.dt
        tail = float(h[-1])
        if tail <= 0.0 or survive <= 0.0:
            return (h.size - 1) * self.dt
        # ages A, A+1, …: survive·(1 − tail)^(k+1) at risk after age A + k
        k = math.floor(math.log((1.0 - u) / survive) / math.log1p(-tail)) if u < 1.0 else 0
        return (h.size - 1 + max(k, 0)) * self.dt

    # ------------------------------------------------------------------ storage
    def to_doc(self) -> dict:
        """A JSON-ready mapping (deterministic key order)."""
        doc: dict = {"min_at_risk": int(self.min_at_risk)}
        for kind in KINDS:
            for i in sorted(i for k, i in self.tables if k == kind):
                a, d = self.tables[(kind, i)]
                entry = {"at_risk": [int(x) for x in a]}
                for j in range(i):
                    entry[f"drops_to_{j}"] = [int(x) for x in d[j]]
                doc[f"{kind} {i}"] = entry
        return doc

    @classmethod
    def from_doc(cls, doc, dt: float) -> DwellHazards:
        """Parse :meth:`to_doc`; ``ValueError`` with the field at fault."""
        if not isinstance(doc, dict):
            raise ValueError("dwell_hazards: expected a mapping")
        min_at_risk = doc.get("min_at_risk", MIN_AT_RISK)
        if isinstance(min_at_risk, bool) or not isinstance(min_at_risk, int) or min_at_risk < 1:
            raise ValueError("dwell_hazards.min_at_risk: expected a positive integer")
        tables = {}
        for key, entry in doc.items():
            if key == "min_at_risk":
                continue
            parts = key.split(" ")
            if len(parts) != 2 or parts[0] not in KINDS or not parts[1].isdigit():
                raise ValueError(f"dwell_hazards.{key}: expected 'rest N' or 'tumble N'")
            i = int(parts[1])
            try:
                a = np.asarray(entry["at_risk"])
                d = np.asarray([entry[f"drops_to_{j}"] for j in range(i)])
                ok = a.dtype.kind in "iu" and d.dtype.kind in "iu" and d.shape == (i, a.size)
            except (KeyError, TypeError, ValueError):
                ok = False
            if not ok or i < 1:
                raise ValueError(
                    f"dwell_hazards.{key}: expected at_risk and drops_to_0 … drops_to_{i - 1}, "
                    "lists of integers of one length"
                )
            tables[(parts[0], i)] = (a.astype(np.int64), d.astype(np.int64))
        try:
            return cls(float(dt), tables, int(min_at_risk))
        except ValueError as exc:
            raise ValueError(f"dwell_hazards: {exc}") from None


@dataclass(frozen=True)
class FinalRest:
    """The forward runs' final rest in ``state`` as a draw ``rest(rng) -> seconds`` (picklable;
    :meth:`DwellHazards.sample_dwell` of kind ``"rest"``): the ``at: rest`` of a hints
    distribution (:meth:`reverse.goals.hints.HintsDistribution.draw`)."""

    hazards: DwellHazards
    state: int = 3

    def __call__(self, rng: np.random.Generator) -> float:
        return self.hazards.sample_dwell("rest", self.state, rng)
