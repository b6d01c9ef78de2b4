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

With ``markov compare --conditioned`` (:func:`reverse.pasts.conditioned.measure_conditioned`)
another sample, *conditioned forward pasts*, is compared with the throws in a table of its own
(:attr:`Comparison.conditioned`): throws of stream ``k = 4`` kept when they rest on the final
pose's face by the end of the duration, carried onto the final pose by the flat ground's
symmetry and confirmed by PyBullet. It measures ``workbench reverse --conditioned``, a sampler
that does not use the backward stepper.

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25 (SIGGRAPH 2008).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reverse.goals.markov import (
    N_STATES,
    STATE_NAMES,
    count_distinct,
    number_of_transitions,
    time_to_first_liftoff,
)
from uncertainty.two_sample import (
    DEFAULT_BINS,
    ClassifierTest,
    Distance,
    classifier_accuracy,
    distance_with_floor,
)
from workbench.ensemble.run import SceneRef, bounded_map, executor_for

__all__ = [
    "STATISTICS",
    "SAMPLES",
    "RunRecord",
    "Comparison",
    "stream_entropy",
    "forward_records",
    "backward_records",
    "record_of_trajectory",
    "run_statistics",
    "dwell_times",
    "run_features",
    "compare",
    "measure",
    "Measurement",
    "format_table",
    "compare_with_throws",
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

#: Spawn keys of the streams of one comparison (:func:`stream_entropy`).
_STREAMS = {"forward": 0, "forward2": 1, "backward": 2, "classifier": 3, "conditioned": 4}


@dataclass
class RunRecord:
    """One run as the measure sees it (forward time order).

    Attributes
    ----------
    states : ndarray of int8, shape (n_records,)
        Contact state per record.
    kinematics : ndarray, shape (n_records, 3)
        Speed of the centre of mass (m/s), angular speed (rad/s), kinetic energy (J).
    status : str
        ``ok`` or why the run ended early (backward runs).
    ends : ndarray, shape (2, n_bodies, 13), optional
        Backward runs: the first (earliest) and last records of every body (position,
        body-frame quaternion x y z w, linear and angular velocity), for the verification.
    """

    states: np.ndarray
    kinematics: np.ndarray
    status: str = "ok"
    ends: np.ndarray | None = None


def stream_entropy(seed: int, stream: str) -> int:
    """Seed entropy of one sample of a comparison (module docstring): a 64-bit word of
    ``SeedSequence(seed, spawn_key=(k,))``."""
    word = np.random.SeedSequence(int(seed), spawn_key=(_STREAMS[stream],)).generate_state(
        1, np.uint64
    )
    return int(word[0])


# ----------------------------------------------------------------------------- samples
def forward_records(
    scene_path,
    n: int,
    entropy: int,
    *,
    overrides: tuple = (),
    dt: float,
    duration: float,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> list[RunRecord]:
    """``n`` PyBullet throws of the scene's body (:func:`reverse.pasts.training.run_throws`
    with kinematics), as :class:`RunRecord`."""
    from reverse.pasts.training import run_throws

    runs = run_throws(
        scene_path,
        n,
        entropy,
        overrides=overrides,
        dt=dt,
        duration=duration,
        workers=workers,
        progress=progress,
        kinematics=True,
    )
    return [RunRecord(r.states, r.kinematics) for r in runs]


_DETECTOR: dict = {}  # this process's contact detector, keyed by the scene recipe


def _detector(ref: SceneRef, scene):
    from reverse.runs.contacts import ContactDetector

    key = ref.key()
    if _DETECTOR.get("key") != key:
        if "detector" in _DETECTOR:
            _DETECTOR.pop("detector").close()
        _DETECTOR.update(key=key, detector=ContactDetector(scene))
    return _DETECTOR["detector"]


def _close_detector() -> None:
    if "detector" in _DETECTOR:
        _DETECTOR.pop("detector").close()
    _DETECTOR.clear()


def record_of_trajectory(traj, scene, body: int, detector) -> RunRecord:
    """A reverse run's :class:`RunRecord`: its contact states counted again at every record by
    the training's rule (``detector``: a :class:`reverse.runs.contacts.ContactDetector` of the
    scene;
    the run's own diagnostics are not used, so the measure does not depend on what they count),
    and the body's speeds and kinetic energy.
    """
    from workbench.sim.observers import kinetic_energy

    n = traj.n_times
    states = np.empty(n, dtype=np.int8)
    for t in range(n):
        contacts = detector(traj.position[t], traj.orientation[t])
        mine = (contacts.body_a == body) | (contacts.body_b == body)
        states[t] = min(count_distinct(contacts.point[mine]), N_STATES - 1)
    props = scene.bodies[body].mass_properties
    v = np.asarray(traj.linear_velocity[:, body], dtype=float)
    w = np.asarray(traj.angular_velocity[:, body], dtype=float)
    energy = kinetic_energy(
        np.array([props.mass]),
        np.asarray(props.inertia_matrix, dtype=float)[None],
        np.asarray(traj.orientation[:, body : body + 1], dtype=float),
        v[:, None],
        w[:, None],
    )[:, 0]
    kin = np.column_stack([np.linalg.norm(v, axis=1), np.linalg.norm(w, axis=1), energy])
    fields = (traj.position, traj.orientation, traj.linear_velocity, traj.angular_velocity)
    ends = (
        np.stack([np.concatenate([f[t] for f in fields], axis=1) for t in (0, n - 1)])
        if n
        else None
    )
    return RunRecord(states, kin, traj.status, ends)


def _backward_task(ref: SceneRef, options: dict, entropy: int, variation, i: int):
    """Backward run ``i`` as a :class:`RunRecord` (the task of a worker)."""
    from reverse.pasts.training import thrown_body
    from reverse.runs.sampling import run_varied

    out, res, scene = run_varied(ref, options, entropy, i, variation)
    if res is None:
        return i, RunRecord(np.zeros(0, np.int8), np.zeros((0, 3)), f"error: {out.message}")
    body = thrown_body(scene)
    record = record_of_trajectory(res.trajectory, scene, body, _detector(ref, scene))
    if out.rejection:
        record.status = out.rejection
    return i, record


def backward_records(
    ref: SceneRef,
    n: int,
    entropy: int,
    *,
    options: dict[str, Any],
    variation=None,
    workers: int = 1,
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[RunRecord]:
    """``n`` reverse runs of the scene (:func:`reverse.runs.sampling.run_varied`: run ``i`` seeded
    from ``(entropy, i)``, heading and hints drawn by ``variation``), as :class:`RunRecord` in
    run order. ``options`` are keyword arguments of :func:`reverse.runs.run.run_reverse`."""
    out: list = [None] * n
    done = 0
    try:
        with executor_for(workers, scheduler, None, n) as ex:
            args = (ref, options, entropy, variation)
            for i, record in bounded_map(ex, _backward_task, args, range(n), workers):
                out[i] = record
                done += 1
                if progress is not None:
                    progress(done, n)
    finally:
        _close_detector()  # the serial executor ran the runs in this process
    return out


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
    conditioned : Comparison, optional
        Forward vs the conditioned forward pasts (:mod:`reverse.pasts.conditioned`; its
        ``counts["conditioned"]`` what the sample took), under ``"conditioned"`` in the JSON.
    """

    rows: list[dict]
    classifier: ClassifierTest
    classifier_floor: ClassifierTest
    counts: dict
    speed_range: dict
    meta: dict = field(default_factory=dict)
    values: dict = field(default_factory=dict)
    conditioned: Comparison | None = None

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
        if self.conditioned is not None:  # only with --conditioned: the file is otherwise unchanged
            out["conditioned"] = self.conditioned.to_dict()
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
    """:func:`measure`'s outcome: the comparison, the three samples' records, and wall times
    (s) of the forward throws, the backward runs and the statistics (not part of the result's
    JSON: the same inputs write the same bytes)."""

    comparison: Comparison
    samples: dict
    seconds: dict


def measure(
    scene_path,
    model,
    *,
    n: int,
    seed: int,
    dt: float,
    duration: float,
    overrides: tuple = (),
    variation=None,
    options: dict | None = None,
    workers: int = 1,
    bins: int = DEFAULT_BINS,
    cuts: dict | None = None,
    meta: dict | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Measurement:
    """Run the three samples of a scene and compare them (module docstring).

    Parameters
    ----------
    scene_path : str or Path
        Scene with one moving body; its state is the backward runs' final state.
    model
        The contact model of the backward runs (:class:`reverse.goals.markov.TransitionModel`; any
        object :func:`reverse.runs.run.run_reverse` takes as ``markov``).
    n : int
        Runs per sample.
    seed : int
        Seed entropy of everything (:func:`stream_entropy`).
    dt, duration : float
        Step and length of every run, s.
    overrides : tuple of (name, value)
        Scene parameters (``--set``).
    variation : reverse.runs.sampling.RunVariation, optional
        What each backward run draws (heading, hints).
    options : dict, optional
        More keyword arguments of :func:`reverse.runs.run.run_reverse` (the plausibility controls
        of ``StepSettings``, an energy guard); ``duration``, ``dt`` and ``markov`` are set here.
    workers : int
        Processes.
    bins, cuts, meta
        As for :func:`compare`.
    progress : callable, optional
        ``progress(done, 3 n)`` as runs finish.
    """
    import time

    from reverse.step.stepper import StepSettings

    opts = {"hints": [], "settings": StepSettings(dt), **(options or {})}
    opts.update(duration=duration, dt=dt, markov=model)

    def part(k):
        if progress is None:
            return None
        return lambda done, _total: progress(k * n + done, 3 * n)

    seconds = {}
    t0 = time.perf_counter()
    samples = {}
    for k, name in enumerate(("forward", "forward2")):
        samples[name] = forward_records(
            scene_path,
            n,
            stream_entropy(seed, name),
            overrides=tuple(overrides),
            dt=dt,
            duration=duration,
            workers=workers,
            progress=part(k),
        )
    seconds["forward"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = SceneRef(str(scene_path), tuple(sorted(dict(overrides).items())))
    samples["backward"] = backward_records(
        ref,
        n,
        stream_entropy(seed, "backward"),
        options=opts,
        variation=variation,
        workers=workers,
        progress=part(2),
    )
    seconds["backward"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = compare(
        samples["forward"],
        samples["forward2"],
        samples["backward"],
        dt,
        classifier_entropy=stream_entropy(seed, "classifier"),
        bins=bins,
        cuts=cuts,
        meta=meta,
    )
    seconds["statistics"] = time.perf_counter() - t0
    return Measurement(result, samples, seconds)


def compare_with_throws(
    run: Measurement,
    records: list[RunRecord],
    dt: float,
    seed: int,
    *,
    bins: int | None = None,
    cuts: dict | None = None,
    meta: dict | None = None,
) -> Comparison:
    """Another sample (conditioned pasts) against a measurement's throws, with the
    same floor (forward vs forward2) and classifier folds (stream ``classifier`` of ``seed``).
    ``bins`` and ``cuts`` must be the measurement's (default bins: :data:`DEFAULT_BINS`)."""
    return compare(
        run.samples["forward"],
        run.samples["forward2"],
        records,
        dt,
        classifier_entropy=stream_entropy(seed, "classifier"),
        bins=DEFAULT_BINS if bins is None else bins,
        cuts=cuts,
        meta=meta,
    )


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
