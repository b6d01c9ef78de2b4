"""Contact-transition Markov model of Twigg & James 2008 [1]_ §4 ("Sliding, skidding, and
bouncing", Figs. 9–10): how often, and to which state, a body's contact state drops per backward
step, estimated from forward runs.

Contact state ``η`` of a body: the number of distinct contact points, classified as 0 (free
flight), 1 (vertex), 2 (edge) or 3 (three or more: flat on a face) — the states of Fig. 9. The
model holds ``P(η^{t−Δt} | η^t)`` for one step ``Δt`` (``[1]`` writes ``P(η^t | η^{t−Δt})`` for the
same quantity: "the probability of transitioning from η^t contacts to η^{t−Δt}").

Only transitions to *fewer* contacts are modelled: a backward step can make a contact separate
(a normal goal ``v_n^goal``, Eq. 8) but cannot make a separating contact stick ([1]_ §4, Fig. 10).
Backward transitions to more contacts happen by themselves (a body falls backward onto the
ground). So, from the forward counts ``N[i, j]`` = number of forward steps from ``j`` contacts to
``i`` contacts (a backward step from ``i`` to ``j``),

    P(j | i) = N[i, j] / Σ_k N[i, k]      for j < i,
    P(i | i) = 1 − Σ_{j<i} P(j | i),

i.e. every step that does not drop to fewer contacts — staying, or rising, which the dynamics
produce — counts as "no transition", and the per-step rate of each drop equals its forward rate.

The table has no memory (the Markov condition of [1]_ §4): a semi-Markov table
(``kind = "semi-markov"``, ``workbench markov train --kind semi-markov``) adds the dwell-time
hazards of :mod:`reverse.goals.semi_markov` — the probability of a drop depends on how long the body
has been in its contact state, and the final rest has its own — and
:class:`~reverse.goals.policy.MarkovPolicy` tracks
each body's segment itself from the contacts it is given every step.

The backward stepper's sampling from the table (:func:`~reverse.goals.policy.sample_separation`,
:class:`~reverse.goals.policy.MarkovPolicy`) is :mod:`reverse.goals.policy`. Also here: the
statistics of Fig. 9 (:func:`contact_states`,
:func:`time_to_first_liftoff`, :func:`number_of_transitions`).
Pure numpy (no PyBullet): the forward runs are in :mod:`reverse.pasts.training`.

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25 (SIGGRAPH 2008).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from reverse.goals.semi_markov import DwellHazards
from workbench.errors import MarkovModelError

__all__ = [
    "FORMAT_VERSION",
    "FORMATS",
    "KINDS",
    "N_STATES",
    "STATE_NAMES",
    "DISTINCT_TOLERANCE",
    "QUANTILE_LEVELS",
    "TransitionModel",
    "classify",
    "count_distinct",
    "contact_states",
    "count_transitions",
    "transition_probabilities",
    "speed_quantiles",
    "time_to_first_liftoff",
    "number_of_transitions",
    "load_model",
]

#: Version of the JSON layout written by :meth:`TransitionModel.save`.
FORMAT_VERSION = 1

#: The ``format`` of each kind of table file: the Markov table of [1]_ and the semi-Markov one.
FORMATS = {
    "plain": "rigid-workbench contact-transition table",
    "semi-markov": "rigid-workbench semi-Markov contact-transition table",
}

#: Kinds of table (``workbench markov train --kind``).
KINDS = tuple(FORMATS)

#: Contact states of [1]_ Fig. 9: 0 free, 1 vertex, 2 edge, 3 (3 or more contacts) face.
N_STATES = 4
STATE_NAMES = ("free", "vertex", "edge", "face")

#: Contact points closer than this (m) are one contact: PyBullet's manifolds can report the same
#: corner twice (a point of the last step and a new one); distinct corners of the bodies this
#: model is meant for (blocks of ≥ 1 cm) are ten times farther apart.
DISTINCT_TOLERANCE = 1e-3

#: Probability levels at which the normal approach speeds of forward landings are stored; the
#: sampler interpolates between them (inverse CDF, piecewise linear).
QUANTILE_LEVELS = np.linspace(0.0, 1.0, 21)


# ----------------------------------------------------------------------------- states
def classify(n_contacts) -> np.ndarray:
    """Contact state (0, 1, 2, 3) of contact counts (any shape): ``min(n, 3)`` ([1]_ Fig. 9)."""
    n = np.asarray(n_contacts)
    if np.any(n < 0):
        raise ValueError("contact counts must be non-negative")
    return np.minimum(n, N_STATES - 1).astype(np.int8)


def count_distinct(points: np.ndarray, tol: float = DISTINCT_TOLERANCE) -> int:
    """Number of distinct points among ``points`` (k, 3), m: points within ``tol`` of an earlier
    kept point are the same contact."""
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    kept: list[np.ndarray] = []
    for p in points:
        if all(np.linalg.norm(p - q) > tol for q in kept):
            kept.append(p)
    return len(kept)


def contact_states(contact_counts) -> np.ndarray:
    """Contact-state sequences from per-step contact counts.

    Parameters
    ----------
    contact_counts : array_like of int, shape (n_steps,) or (n_runs, n_steps)
        Distinct contact points of one body per step (forward time order).

    Returns
    -------
    ndarray of int8, same shape
        States 0–3.
    """
    return classify(np.asarray(contact_counts, dtype=np.int64))


def _sequences(states) -> tuple[bool, list[np.ndarray]]:
    """``(is_one_sequence, sequences)`` of a 1-D or 2-D array or a list of 1-D arrays."""
    if isinstance(states, np.ndarray):
        return states.ndim == 1, [states] if states.ndim == 1 else list(states)
    items = list(states)
    if items and np.ndim(items[0]) == 0:
        return True, [np.asarray(items)]
    return False, [np.asarray(s) for s in items]


def count_transitions(states) -> np.ndarray:
    """Backward transition counts of forward state sequences.

    Parameters
    ----------
    states : array_like of int, shape (n_steps,) or (n_runs, n_steps), or a list of 1-D arrays
        Contact states in forward time order.

    Returns
    -------
    ndarray of int64, shape (4, 4)
        ``N[i, j]``: steps with ``η^t = i`` and ``η^{t−Δt} = j`` (a backward step from ``i`` to
        ``j``). The diagonal counts steps without a change.
    """
    _, seqs = _sequences(states)
    counts = np.zeros((N_STATES, N_STATES), dtype=np.int64)
    for seq in seqs:
        s = np.asarray(seq, dtype=np.int64)
        if s.size and (s.min() < 0 or s.max() >= N_STATES):
            raise ValueError(f"contact states must be in 0..{N_STATES - 1}")
        np.add.at(counts, (s[1:], s[:-1]), 1)
    return counts


def transition_probabilities(counts) -> np.ndarray:
    """``P(η^{t−Δt} = j | η^t = i)`` from backward transition counts (module docstring).

    Implements the model of [1]_ Fig. 10: only drops (``j < i``) have their forward rate; all
    other steps count as "no transition". A state never visited stays put with probability 1.

    Parameters
    ----------
    counts : array_like, shape (4, 4)
        :func:`count_transitions`.

    Returns
    -------
    ndarray, shape (4, 4)
        Rows sum to 1; zero above the diagonal.
    """
    counts = np.asarray(counts, dtype=float)
    if counts.shape != (N_STATES, N_STATES) or np.any(counts < 0):
        raise ValueError("counts must be a (4, 4) array of non-negative numbers")
    total = counts.sum(axis=1)
    P = np.zeros((N_STATES, N_STATES))
    for i in range(N_STATES):
        if total[i] > 0:
            # Fig. 10 of [1]: P(η^{t−Δt} = j | η^t = i) = N[i, j] / Σ_k N[i, k] for j < i
            P[i, :i] = counts[i, :i] / total[i]
        P[i, i] = 1.0 - P[i, :i].sum()
    return P


def speed_quantiles(samples) -> list[float] | None:
    """Quantiles of normal approach speeds (m/s) at :data:`QUANTILE_LEVELS`; ``None`` if empty."""
    s = np.asarray(samples, dtype=float)
    if s.size == 0:
        return None
    return [float(x) for x in np.quantile(s, QUANTILE_LEVELS)]


# ----------------------------------------------------------------------------- the model
@dataclass(frozen=True)
class TransitionModel:
    """A trained contact-transition table.

    Attributes
    ----------
    counts : ndarray of int64, shape (4, 4)
        Backward transition counts ``N[i, j]`` (:func:`count_transitions`) of the training runs.
    dt : float
        Step of the training runs, s; the probabilities are per step of this length.
    speeds : dict
        ``(i, j) -> list`` of quantiles (:data:`QUANTILE_LEVELS`) of the normal approach speed,
        m/s, with which the forward runs landed in a step from ``j`` to ``i > j`` contacts: the
        normal goals ``v_n^goal`` that undo such a landing backward (key ``"i->j"`` in the
        file). ``(-1, -1)`` (``"all"``) holds all landings pooled.
    meta : dict
        How the table was made (command, seed, number of runs, duration, sampling ranges).
    hazards : DwellHazards, optional
        Dwell-time hazards (:mod:`reverse.goals.semi_markov`): with them the table is semi-Markov
        and
        :meth:`sample_target` given a segment's age draws from them.
    """

    counts: np.ndarray
    dt: float
    speeds: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    hazards: DwellHazards | None = None

    def __post_init__(self) -> None:
        counts = np.asarray(self.counts)
        if counts.shape != (N_STATES, N_STATES):
            raise ValueError("counts must have shape (4, 4)")
        if not (math.isfinite(self.dt) and self.dt > 0):
            raise ValueError("dt must be a positive number of seconds")
        object.__setattr__(self, "counts", counts.astype(np.int64))

    @property
    def kind(self) -> str:
        """``"plain"`` (Markov, [1]_ Fig. 10) or ``"semi-markov"`` (with :attr:`hazards`)."""
        return "plain" if self.hazards is None else "semi-markov"

    @property
    def probabilities(self) -> np.ndarray:
        """``P[i, j] = P(η^{t−Δt} = j | η^t = i)`` per step of :attr:`dt`, shape (4, 4)."""
        return transition_probabilities(self.counts)

    def step_probabilities(self, dt: float | None = None) -> np.ndarray:
        """Transition probabilities per step of ``dt`` (default: the training step).

        A step of another length keeps each state's mean holding time: ``P(i | i)`` becomes
        ``P(i | i)^(dt/dt_train)`` and the drops share the rest in the trained proportions
        (exact for a continuous-time chain whose states only drop, first order otherwise).
        """
        P = self.probabilities
        if dt is None or dt == self.dt:
            return P
        if not (math.isfinite(dt) and dt > 0):
            raise ValueError("dt must be a positive number of seconds")
        out = np.zeros_like(P)
        for i in range(N_STATES):
            leave = 1.0 - P[i, i]
            stay = P[i, i] ** (dt / self.dt)
            if leave > 0:
                out[i, :i] = P[i, :i] / leave * (1.0 - stay)
            out[i, i] = 1.0 - out[i, :i].sum()
        return out

    def sample_target(
        self,
        state: int,
        rng: np.random.Generator,
        dt: float | None = None,
        age: int | None = None,
        first: bool = False,
    ) -> int:
        """Draw ``η^{t−Δt}`` given ``η^t = state`` ([1]_ §4: "use a random-number generator to
        decide whether to transition to a different contact state").

        With :attr:`hazards` and an ``age`` (steps of ``dt`` already spent in the state; ``first``:
        the run's first segment, the final rest) the row is the dwell-time hazard's
        (:meth:`DwellHazards.row`), else the Markov row. One uniform draw either way.
        """
        row = None
        if self.hazards is not None and age is not None:
            row = self.hazards.row("rest" if first else "tumble", int(state), int(age), dt)
        if row is None:
            row = self.step_probabilities(dt)[int(state)]
        return int(min(np.searchsorted(np.cumsum(row), rng.random(), side="right"), state))

    def sample_speed(self, state: int, target: int, rng: np.random.Generator) -> float:
        """A normal goal speed, m/s, for the contacts that separate in a drop from ``state`` to
        ``target``: drawn from the forward landings ``target → state`` (pooled landings when
        there were none; 0 when the table has no landings at all)."""
        q = self.speeds.get((int(state), int(target))) or self.speeds.get((-1, -1))
        if not q:
            return 0.0
        return float(np.interp(rng.random(), QUANTILE_LEVELS, q))

    # ------------------------------------------------------------------ storage
    def to_json(self) -> str:
        """The table as JSON text (deterministic: the same table gives the same bytes)."""
        kind = {"kind": self.kind} if self.hazards is not None else {}
        doc = {
            "format": FORMATS[self.kind],
            "format_version": FORMAT_VERSION,
            **kind,
            "states": list(STATE_NAMES),
            "convention": "rows: contact state at t (eta_t); columns: state at t - dt "
            "(eta_{t-dt}); counts[i][j] = forward steps from j to i contacts",
            "dt": float(self.dt),
            **{k: self.meta[k] for k in sorted(self.meta)},
            "counts": self.counts.tolist(),
            "probabilities": [[round(float(x), 12) for x in row] for row in self.probabilities],
            "speed_quantile_levels": [round(float(x), 12) for x in QUANTILE_LEVELS],
            "goal_speeds": {
                ("all" if i < 0 else f"{i}->{j}"): [round(x, 9) for x in q]
                for (i, j), q in sorted(self.speeds.items())
            },
        }
        if self.hazards is not None:
            doc["dwell_hazards"] = self.hazards.to_doc()
        text = json.dumps(doc, indent=1, allow_nan=False)
        # lists of numbers or strings on one line each (a 4 x 4 table reads as 4 rows)
        text = re.sub(
            r"\[\n\s+([^\[\]{}]*?)\n\s*\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text
        )
        return text + "\n"

    def save(self, path) -> Path:
        """Write :meth:`to_json` to ``path`` (through a temporary file and ``os.replace``)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.to_json(), encoding="utf-8")
        os.replace(tmp, path)
        return path

    @classmethod
    def from_json(cls, text: str, source: str = "<table>") -> TransitionModel:
        """Parse :meth:`to_json` text; :class:`MarkovModelError` (one line) if it is not one."""
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise MarkovModelError(f"{source}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        if not isinstance(doc, dict) or "format_version" not in doc:
            raise MarkovModelError(
                f"{source}: not a contact-transition table (no format_version; make one with "
                "`workbench markov train`)"
            )
        fmt = doc.get("format", FORMATS["plain"])
        if fmt not in FORMATS.values():
            raise MarkovModelError(
                f"{source}: format {fmt!r} is not a contact-transition table (expected one of "
                + ", ".join(repr(f) for f in FORMATS.values())
                + ")"
            )
        if doc["format_version"] != FORMAT_VERSION:
            raise MarkovModelError(
                f"{source}: format_version {doc['format_version']!r} is not supported "
                f"(expected {FORMAT_VERSION})"
            )
        counts = doc.get("counts")
        try:
            arr = np.asarray(counts)
            ok = arr.shape == (N_STATES, N_STATES) and arr.dtype.kind in "iu" and np.all(arr >= 0)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise MarkovModelError(
                f"{source}: counts: expected a 4 x 4 table of non-negative integers"
            )
        dt = doc.get("dt")
        if isinstance(dt, bool) or not isinstance(dt, int | float) or not (0 < dt < math.inf):
            raise MarkovModelError(f"{source}: dt: expected a positive number of seconds")
        speeds = {}
        goal = doc.get("goal_speeds", {})
        if not isinstance(goal, dict):
            raise MarkovModelError(f"{source}: goal_speeds: expected a mapping 'i->j': [...]")
        for key, q in goal.items():
            try:
                i, j = (-1, -1) if key == "all" else (int(x) for x in key.split("->"))
                qs = [float(x) for x in q]
                good = len(qs) == len(QUANTILE_LEVELS) and all(
                    0 <= a <= b < math.inf for a, b in zip(qs, qs[1:], strict=False)
                )
            except (ValueError, TypeError, AttributeError):
                good = False
            if not good:
                raise MarkovModelError(
                    f"{source}: goal_speeds.{key}: expected {len(QUANTILE_LEVELS)} "
                    "non-decreasing speeds (m/s) >= 0"
                )
            speeds[(i, j)] = qs
        skip = {
            "format",
            "format_version",
            "states",
            "convention",
            "dt",
            "counts",
            "probabilities",
            "speed_quantile_levels",
            "goal_speeds",
            "kind",
            "dwell_hazards",
        }
        hazards = None
        if fmt == FORMATS["semi-markov"]:
            if "dwell_hazards" not in doc:
                raise MarkovModelError(
                    f"{source}: dwell_hazards: missing (a semi-Markov table has them; make one "
                    "with `workbench markov train --kind semi-markov`)"
                )
            try:
                hazards = DwellHazards.from_doc(doc["dwell_hazards"], float(dt))
            except ValueError as exc:
                raise MarkovModelError(f"{source}: {exc}") from None
        meta = {k: v for k, v in doc.items() if k not in skip}
        return cls(np.asarray(counts, dtype=np.int64), float(dt), speeds, meta, hazards)


def load_model(path) -> TransitionModel:
    """Read a table written by :meth:`TransitionModel.save`; one-line errors."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MarkovModelError(
            f"{path}: cannot read contact-transition table: {exc.strerror}"
        ) from None
    except UnicodeDecodeError:
        raise MarkovModelError(f"{path}: not valid JSON (not UTF-8 text)") from None
    return TransitionModel.from_json(text, str(path))


# ----------------------------------------------------------------------------- statistics
def time_to_first_liftoff(states, dt: float) -> np.ndarray:
    """Reverse time, s, from the end of each sequence to its first state in another contact
    state.

    In [1]_ Fig. 9 time runs from right to left: a backward run starts from the final state (at
    rest) and "lifts off" at its first transition. A sequence that never changes gives its whole
    duration, ``(n_steps − 1) dt`` (censored).

    Parameters
    ----------
    states : array_like of int, shape (n_steps,) or (n_runs, n_steps), or a list of 1-D arrays
        Contact states in forward time order (the last entry is the final state).
    dt : float
        Step, s.

    Returns
    -------
    ndarray, shape () or (n_runs,)
    """
    one, seqs = _sequences(states)
    out = np.empty(len(seqs))
    for r, seq in enumerate(seqs):
        s = np.asarray(seq)
        same = s[::-1] == s[-1]  # reverse time order: does the state still equal the final one?
        steps = len(s) - 1 if same.all() else int(np.argmin(same))
        out[r] = steps * dt
    return out[0] if one else out


def number_of_transitions(states) -> np.ndarray:
    """Changes of contact state in each sequence (steps whose state differs from the last).

    Parameters
    ----------
    states : array_like of int, shape (n_steps,) or (n_runs, n_steps), or a list of 1-D arrays

    Returns
    -------
    ndarray of int, shape () or (n_runs,)
    """
    one, seqs = _sequences(states)
    out = np.array([int(np.sum(np.diff(np.asarray(s)) != 0)) for s in seqs])
    return out[0] if one else out
