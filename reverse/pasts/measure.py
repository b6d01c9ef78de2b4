"""How much backward runs look like forward ones: the plausibility measure of a contact model
(Twigg & James 2008 [1]_ §4, Figs. 9–10; issue 15).

Three samples of one scene's single moving body:

* ``forward``: ``n`` PyBullet throws (:func:`reverse.pasts.training.run_throws`, the throw
  distribution a table is trained on) of the scene's duration;
* ``forward2``: ``n`` more, independent: two samples of one law, whose distance is the *noise
  floor* — what sampling alone gives at this ``n``;
* ``backward``: ``n`` reverse runs from the scene's state (at rest) with a contact model, each
  with its own heading and hints if asked (:class:`reverse.runs.sampling.RunVariation`).

Every run becomes a contact-state sequence (0 free, 1 vertex, 2 edge, 3 face; the counting rule
of the training, :func:`reverse.pasts.training.run_throw`: points within
:data:`reverse.runs.contacts.TOUCH_TOLERANCE`, merged within
:data:`reverse.goals.markov.DISTINCT_TOLERANCE`)
and a table of speed, spin and kinetic energy per record, in forward time order. From them
:func:`run_statistics` takes per-run statistics (:data:`STATISTICS`), and :func:`compare` gives,
per statistic, the medians of the three samples, the total-variation distance forward vs
backward and its floor forward vs forward (bins at quantiles of the forward samples,
:mod:`uncertainty.two_sample`), and a classifier two-sample test on per-run features (accuracy
0.5: the classifier cannot tell; the floor is the same test forward vs forward).

Seeds: ``--seed S`` gives four independent streams, ``SeedSequence(S, spawn_key=(k,))`` for
k = 0 forward, 1 forward2, 2 backward, 3 the classifier's folds (:func:`stream_entropy`); run
``i`` of a sample draws from its own ``spawn_key=(i,)`` below that, so every number is
bit-identical whatever the number of workers.

A backward run that does not end ``ok`` (non-finite, energy guard, failed LCP) is counted and
left out of the statistics; so are its records.

The backward sample is one sampler of pasts among others (:data:`reverse.pasts.samplers.SAMPLERS`,
the contract :class:`reverse.runs.sampler.PastSampler`): :func:`measure` draws every named
sample from its own stream (``conditioned``: k = 4) and compares each with the same two forward
samples, the first named one in the result's top level and the others under their names
(:meth:`Measurement.to_json`). ``markov compare --conditioned`` adds conditioned forward pasts
(:mod:`reverse.pasts.conditioned`, ``workbench pasts``), a sampler that does not use the
backward stepper.

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25 (SIGGRAPH 2008).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from reverse.goals.markov import (
    N_STATES,
    STATE_NAMES,
    number_of_transitions,
    time_to_first_liftoff,
)
from reverse.runs.sampler import RunRecord
from uncertainty.two_sample import (
    DEFAULT_BINS,
    ClassifierTest,
    Distance,
    classifier_accuracy,
    distance_with_floor,
)
from workbench.ensemble.run import SceneRef
from workbench.sim.state import State

__all__ = [
    "STATISTICS",
    "SAMPLES",
    "Comparison",
    "stream_entropy",
    "run_statistics",
    "dwell_times",
    "run_features",
    "compare",
    "measure",
    "Measurement",
    "format_table",
    "format_measurement",
]

#: Names of the three samples (keys of :meth:`Comparison.to_dict`'s medians).
SAMPLES = ("forward", "forward2", "backward")

#: Per-run statistics: key, label, unit. ``dwell_*`` are pooled over runs (every stay in a state
#: that neither starts nor ends a run: the final rest is ``liftoff``, the first state is the
#: throw's or the earliest record's); all others are one value per run.
STATISTICS = (
    ("liftoff", "time to first liftoff (reverse time)", "s"),
    ("transitions", "contact-state transitions", "count"),
    *((f"dwell_{s}", f"dwell time, {s}", "s") for s in STATE_NAMES),
    *((f"share_{s}", f"share of steps, {s}", "1") for s in STATE_NAMES),
    ("earliest_speed", "speed at the earliest state", "m/s"),
    ("earliest_spin", "angular speed at the earliest state", "rad/s"),
    ("earliest_energy", "kinetic energy at the earliest state", "J"),
    ("peak_speed", "peak speed", "m/s"),
    ("peak_spin", "peak angular speed", "rad/s"),
    ("peak_energy", "peak kinetic energy", "J"),
)

#: Columns of a run's kinematics table.
_SPEED, _SPIN, _ENERGY = 0, 1, 2

#: Statistics spread over orders of magnitude (backward growth): the classifier sees ``log1p``
#: of them, so that one run at 1e60 J does not set the scale of the rest.
_HEAVY_TAILED = (
    "earliest_speed",
    "earliest_spin",
    "earliest_energy",
    "peak_speed",
    "peak_spin",
    "peak_energy",
)

#: Largest value the features keep (above: clipped), well inside float64 after ``log1p``.
_FEATURE_CAP = 1e300

#: Spawn keys of the streams of one comparison (:func:`stream_entropy`): the two forward
#: samples, the classifier's folds and one per sampler of :data:`reverse.pasts.samplers.SAMPLERS`.
_STREAMS = {"forward": 0, "forward2": 1, "backward": 2, "classifier": 3, "conditioned": 4}


def stream_entropy(seed: int, stream: str) -> int:
    """Seed entropy of one sample of a comparison (module docstring): a 64-bit word of
    ``SeedSequence(seed, spawn_key=(k,))``."""
    word = np.random.SeedSequence(int(seed), spawn_key=(_STREAMS[stream],)).generate_state(
        1, np.uint64
    )
    return int(word[0])


# ----------------------------------------------------------------------------- statistics
def dwell_times(states, dt: float) -> dict[int, np.ndarray]:
    """Durations (s) of the stays in each contact state that neither start nor end the sequence
    (those are censored: the run began or ended during them).

    Parameters
    ----------
    states : array_like of int, shape (n,)
    dt : float

    Returns
    -------
    dict
        State → durations, s (possibly empty).
    """
    s = np.asarray(states)
    out = {k: [] for k in range(N_STATES)}
    if s.size:
        change = np.flatnonzero(np.diff(s) != 0) + 1
        starts = np.concatenate([[0], change])
        ends = np.concatenate([change, [s.size]])
        for a, b in zip(starts[1:-1], ends[1:-1], strict=True):
            out[int(s[a])].append((b - a) * dt)
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}


def run_statistics(records: list[RunRecord], dt: float) -> dict[str, np.ndarray]:
    """The :data:`STATISTICS` of the runs whose status is ``ok``.

    Returns
    -------
    dict
        Key → values: one per run, except ``dwell_*``, pooled over runs (:func:`dwell_times`);
        also ``mean_dwell_*``, per run (NaN when the run never stays in that state inside it),
        for the classifier.
    """
    ok = [r for r in records if r.status == "ok" and r.states.size]
    out: dict[str, np.ndarray] = {}
    seqs = [r.states for r in ok]
    out["liftoff"] = np.array([time_to_first_liftoff(s, dt) for s in seqs], dtype=float)
    out["transitions"] = np.array([number_of_transitions(s) for s in seqs], dtype=float)
    dwell = [dwell_times(s, dt) for s in seqs]
    for k, name in enumerate(STATE_NAMES):
        pooled = [d[k] for d in dwell]
        out[f"dwell_{name}"] = np.concatenate(pooled) if pooled else np.zeros(0)
        out[f"mean_dwell_{name}"] = np.array(
            [d.mean() if d.size else np.nan for d in pooled], dtype=float
        )
        out[f"share_{name}"] = np.array([np.mean(s == k) for s in seqs], dtype=float)
    kin = [r.kinematics for r in ok]
    for col, what in ((_SPEED, "speed"), (_SPIN, "spin"), (_ENERGY, "energy")):
        out[f"earliest_{what}"] = np.array([k[0, col] for k in kin], dtype=float)
        out[f"peak_{what}"] = np.array([np.max(k[:, col]) for k in kin], dtype=float)
    return out


def run_features(stats: dict[str, np.ndarray]) -> np.ndarray:
    """Per-run features of the classifier two-sample test, shape (n_runs, 15): time to first
    liftoff, transitions, shares of steps free/vertex/edge (face is the rest), mean dwell per
    state (0 when none), and ``log1p`` of the earliest and peak speed, spin and energy."""
    cols = [stats["liftoff"], stats["transitions"]]
    cols += [stats[f"share_{s}"] for s in STATE_NAMES[:-1]]
    cols += [np.nan_to_num(stats[f"mean_dwell_{s}"], nan=0.0) for s in STATE_NAMES]
    for key in _HEAVY_TAILED:
        x = np.nan_to_num(stats[key], nan=_FEATURE_CAP, posinf=_FEATURE_CAP)
        cols.append(np.log1p(np.clip(x, 0.0, _FEATURE_CAP)))
    return np.column_stack(cols) if cols[0].size else np.zeros((0, len(cols)))


# ----------------------------------------------------------------------------- the comparison
@dataclass
class Comparison:
    """The measure's outcome (:func:`compare`).

    Attributes
    ----------
    rows : list of dict
        Per statistic: key, label, unit, medians and means of the three samples, the
        :class:`~uncertainty.two_sample.Distance` (``tv``, ``floor``, ``ratio``, ``bins``).
    classifier, classifier_floor : ClassifierTest
        Forward vs backward, and forward vs forward2.
    counts : dict
        Runs per sample and backward runs not ``ok`` (by reason).
    speed_range : dict
        Fastest forward earliest state (speed, spin) and the share of backward runs whose
        earliest state is faster (linear or angular).
    meta : dict
        Scene, table, seed, n, dt, duration, variation (what determines the numbers).
    values : dict
        Statistic key → ``(label, unit, forward, forward2, backward)`` arrays, for the figure
        (not in :meth:`to_dict`).
    """

    rows: list[dict]
    classifier: ClassifierTest
    classifier_floor: ClassifierTest
    counts: dict
    speed_range: dict
    meta: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        def clean(x):
            if isinstance(x, float | np.floating):
                return float(x) if math.isfinite(x) else None
            if isinstance(x, dict):
                return {k: clean(v) for k, v in x.items()}
            if isinstance(x, list | tuple):
                return [clean(v) for v in x]
            if isinstance(x, np.integer):
                return int(x)
            return x

        test = lambda c: {"accuracy": c.accuracy, "n": c.n, "p_value": c.p_value, "folds": c.folds}  # noqa: E731
        out = {
            "meta": self.meta,
            "counts": self.counts,
            "statistics": self.rows,
            "classifier": test(self.classifier),
            "classifier_floor": test(self.classifier_floor),
            "earliest_state_range": self.speed_range,
        }
        return clean(out)

    def to_json(self) -> str:
        """Deterministic JSON (no wall times): the same inputs write the same bytes."""
        return json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n"


def compare(
    forward: list[RunRecord],
    forward2: list[RunRecord],
    backward: list[RunRecord],
    dt: float,
    *,
    classifier_entropy: int,
    bins: int = DEFAULT_BINS,
    cuts: dict | None = None,
    meta: dict | None = None,
) -> Comparison:
    """The plausibility measure of three samples (module docstring).

    Parameters
    ----------
    forward, forward2, backward : list of RunRecord
    dt : float
        Step of the records, s.
    classifier_entropy : int
        Seed of the classifier's folds.
    bins : int
        Bins of the total-variation distances (quantiles of the two forward samples pooled).
    cuts : dict, optional
        Statistic key → explicit bin cut points (e.g. fixed widths to compare with earlier
        numbers); others use ``bins``.
    meta : dict, optional
        Stored with the result.
    """
    samples = {"forward": forward, "forward2": forward2, "backward": backward}
    stats = {k: run_statistics(v, dt) for k, v in samples.items()}
    rows = []
    values = {}
    for key, label, unit in STATISTICS:
        a, a2, b = (stats[s][key] for s in SAMPLES)
        values[key] = (label, unit, a, a2, b)
        d: Distance = distance_with_floor(a, a2, b, bins=bins, cuts=(cuts or {}).get(key))
        row = {"key": key, "label": label, "unit": unit}
        for s, x in zip(SAMPLES, (a, a2, b), strict=True):
            x = x[~np.isnan(x)]
            row[f"median_{s}"] = float(np.median(x)) if x.size else float("nan")
            row[f"mean_{s}"] = float(np.mean(x)) if x.size else float("nan")
            row[f"n_{s}"] = int(x.size)
        row.update(tv=d.distance, floor=d.floor, ratio=d.ratio, bins=d.bins)
        rows.append(row)
    fa, fa2, fb = (run_features(stats[s]) for s in SAMPLES)
    seq = np.random.SeedSequence(classifier_entropy)
    rng_b, rng_f = (np.random.Generator(np.random.PCG64(s)) for s in seq.spawn(2))
    nan_test = ClassifierTest(float("nan"), 0, float("nan"), 0)
    ok = min(len(fa), len(fb)) >= 2
    clf = classifier_accuracy(fa, fb, rng_b, folds=min(5, len(fa), len(fb))) if ok else nan_test
    ok2 = min(len(fa), len(fa2)) >= 2
    clf2 = classifier_accuracy(fa, fa2, rng_f, folds=min(5, len(fa), len(fa2))) if ok2 else nan_test
    reasons: dict[str, int] = {}
    for r in backward:
        if r.status != "ok":
            why = r.status.split(":")[0]
            reasons[why] = reasons.get(why, 0) + 1
    counts = {
        "forward": len(forward),
        "forward2": len(forward2),
        "backward": len(backward),
        "backward_ok": len(stats["backward"]["liftoff"]),
        "backward_not_ok": reasons,
    }
    fwd_speed = np.concatenate([stats[s]["earliest_speed"] for s in ("forward", "forward2")])
    fwd_spin = np.concatenate([stats[s]["earliest_spin"] for s in ("forward", "forward2")])
    bs, bw = stats["backward"]["earliest_speed"], stats["backward"]["earliest_spin"]
    vmax = float(np.max(fwd_speed)) if fwd_speed.size else float("nan")
    wmax = float(np.max(fwd_spin)) if fwd_spin.size else float("nan")
    speed_range = {
        "forward_max_speed": vmax,
        "forward_max_spin": wmax,
        "backward_max_speed": float(np.max(bs)) if bs.size else float("nan"),
        "backward_max_spin": float(np.max(bw)) if bw.size else float("nan"),
        "backward_faster_share": float(np.mean((bs > vmax) | (bw > wmax))) if bs.size else None,
    }
    return Comparison(rows, clf, clf2, counts, speed_range, dict(meta or {}), values)


@dataclass
class Measurement:
    """:func:`measure`'s outcome.

    Attributes
    ----------
    comparisons : dict
        Sample name → :class:`Comparison` against the throws, in the order asked; the first is
        the measurement's own (:attr:`comparison`).
    samples : dict
        ``forward``, ``forward2`` and each named sample's records (:class:`RunRecord` lists).
    pasts : dict
        Sample name → the sampler's :class:`reverse.runs.sampler.Pasts` (its own outcomes).
    seconds : dict
        Wall times, s, of the forward throws, each sample and the statistics (not in the
        JSON: the same inputs write the same bytes).
    samplers : dict
        Sample name → its sampler.
    """

    comparisons: dict
    samples: dict
    pasts: dict
    seconds: dict
    samplers: dict = field(default_factory=dict)

    @property
    def comparison(self) -> Comparison:
        """The first named sample's comparison."""
        return next(iter(self.comparisons.values()))

    def to_dict(self) -> dict:
        """The first comparison's dict, the others under their sample names."""
        first, *others = self.comparisons
        out = self.comparisons[first].to_dict()
        for name in others:
            out[name] = self.comparisons[name].to_dict()
        return out

    def to_json(self) -> str:
        """Deterministic JSON (no wall times): the same inputs write the same bytes."""
        return json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n"

    def figure_samples(self) -> dict:
        """The samples as :func:`workbench.figures.plausibility.plot_measurement` reads them."""
        out = {k: self.samples[k] for k in ("forward", "forward2", "backward") if k in self.samples}
        if "conditioned" in self.samples:
            out["conditioned_runs"] = self.samples["conditioned"]
        return out


def measure(
    scene_path,
    samplers: dict,
    *,
    n: int,
    seed: int,
    dt: float,
    duration: float,
    overrides: tuple = (),
    workers: int = 1,
    bins: int = DEFAULT_BINS,
    cuts: dict | None = None,
    meta: dict | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Measurement:
    """Draw the forward samples and every named sample of a scene and compare each with the
    forward ones (module docstring).

    Parameters
    ----------
    scene_path : str or Path
        Scene with one moving body; its state is the final state of every past.
    samplers : dict
        Sample name (a stream of :func:`stream_entropy`) → sampler of pasts
        (:class:`reverse.runs.sampler.PastSampler`; :data:`reverse.pasts.samplers.SAMPLERS`).
    n : int
        Runs per sample.
    seed : int
        Seed entropy of everything (:func:`stream_entropy`).
    dt, duration : float
        Step and length of every throw, s (the samplers hold their own).
    overrides : tuple of (name, value)
        Scene parameters (``--set``).
    workers : int
        Processes.
    bins, cuts
        As for :func:`compare`.
    meta : dict, optional
        Stored with the first sample's comparison; the others store their sampler's
        ``description`` and the duration.
    progress : callable, optional
        ``progress(done, (2 + len(samplers)) n)`` as runs finish.
    """
    import time

    from reverse.pasts.training import ForwardThrows, release_test

    parts = 2 + len(samplers)

    def part(k):
        if progress is None:
            return None
        return lambda done, _total: progress(k * n + done, parts * n)

    ref = SceneRef(str(scene_path), tuple(sorted(dict(overrides).items())))
    seconds = {}
    t0 = time.perf_counter()
    samples, pasts = {}, {}
    throws = ForwardThrows(dt, duration)
    for k, name in enumerate(("forward", "forward2")):
        entropy = stream_entropy(seed, name)
        samples[name] = throws.sample(ref, n, entropy, workers=workers, progress=part(k)).records
    seconds["forward"] = time.perf_counter() - t0
    for k, (name, sampler) in enumerate(samplers.items()):
        t0 = time.perf_counter()
        entropy = stream_entropy(seed, name)
        pasts[name] = sampler.sample(ref, n, entropy, workers=workers, progress=part(2 + k))
        samples[name] = pasts[name].records
        seconds[name] = time.perf_counter() - t0
    t0 = time.perf_counter()
    comparisons = {}
    for k, (name, sampler) in enumerate(samplers.items()):
        c = compare(
            samples["forward"],
            samples["forward2"],
            samples[name],
            dt,
            classifier_entropy=stream_entropy(seed, "classifier"),
            bins=bins,
            cuts=cuts,
            meta=meta if k == 0 else {"sample": sampler.description, "duration": float(duration)},
        )
        summary = dict(pasts[name].summary)
        if pasts[name].earliest is not None:  # pasts that start at a release: check it
            sr = c.speed_range
            released = release_test(ref, sr["forward_max_speed"], sr["forward_max_spin"])
            summary["earliest_in_release_law"] = sum(
                bool(released(State.from_packed(e))) for e in pasts[name].earliest
            )
        if summary:
            c.counts[name] = summary
        comparisons[name] = c
    seconds["statistics"] = time.perf_counter() - t0
    return Measurement(comparisons, samples, pasts, seconds, dict(samplers))


def format_table(c: Comparison, sample: str = "backward") -> str:
    """The comparison as text: one line per statistic, then the classifier test and the range of
    earliest states. ``sample`` names the compared sample in the text (its first three letters
    head its column of medians)."""
    short = {"backward": "bwd"}.get(sample, sample[:3])

    def num(x: float) -> str:
        if x is None or (isinstance(x, float) and not math.isfinite(x)):
            return "-"
        return f"{x:.3g}"

    head = (
        f"{'statistic':<42} {'unit':>6} {'fwd med':>8} {'fwd2 med':>8} {short + ' med':>8} "
        f"{'TV f-b':>7} {'floor':>7} {'ratio':>6}"
    )
    lines = [head, "-" * len(head)]
    for r in c.rows:
        lines.append(
            f"{r['label']:<42} {r['unit']:>6} {num(r['median_forward']):>8} "
            f"{num(r['median_forward2']):>8} {num(r['median_backward']):>8} {num(r['tv']):>7} "
            f"{num(r['floor']):>7} {num(r['ratio']):>6}"
        )
    shares = " / ".join(
        f"{s} {num(next(r for r in c.rows if r['key'] == f'share_{s}')['mean_forward'])}"
        f" vs {num(next(r for r in c.rows if r['key'] == f'share_{s}')['mean_backward'])}"
        for s in STATE_NAMES
    )
    lines.append(f"share of all steps, forward vs {sample}: {shares}")
    lines.append(
        f"classifier two-sample test (cross-validated accuracy, chance 0.5): forward vs {sample} "
        f"{num(c.classifier.accuracy)} (p = {c.classifier.p_value:.2g}), forward vs forward "
        f"{num(c.classifier_floor.accuracy)}"
    )
    sr = c.speed_range
    lines.append(
        f"earliest state: forward throws reach {num(sr['forward_max_speed'])} m/s, "
        f"{num(sr['forward_max_spin'])} rad/s; {sample} runs {num(sr['backward_max_speed'])} m/s, "
        f"{num(sr['backward_max_spin'])} rad/s; {sample} runs faster than every throw: "
        f"{num(sr['backward_faster_share'])}"
    )
    n = c.counts
    bad = ", ".join(f"{k} {v}" for k, v in sorted(n["backward_not_ok"].items()))
    lines.append(
        f"runs: forward {n['forward']}, forward2 {n['forward2']}, {sample} {n['backward']} "
        f"({n['backward_ok']} ok{'; not ok: ' + bad if bad else ''})"
    )
    return "\n".join(lines)


def format_measurement(m: Measurement) -> str:
    """A measurement as text: each named sample's table (:func:`format_table`), the samples
    after the first headed by what they are, what they took (their sampler's ``report`` of
    its summary, if it has one) and their wall time."""
    parts = []
    for k, (name, c) in enumerate(m.comparisons.items()):
        if k:
            sampler = m.samplers.get(name)
            what = getattr(sampler, "description", name)
            report = getattr(sampler, "report", None)
            lines = [f"{name} vs forward: {what}"]
            if report is not None and name in c.counts:
                lines += report(c.counts[name])
            if name in m.seconds:
                lines.append(f"{name} wall time {m.seconds[name]:.1f} s")
            parts.append("\n".join(lines))
        parts.append(format_table(c, name))
    return "\n".join(parts)
