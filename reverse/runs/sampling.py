"""Many seeded reverse runs of one scene, ranked by energy (Twigg & James 2008 §4–5).

A backward simulation from a state at rest has many plausible pasts: the Markov contact model
and the random friction pyramids make each seed a different one, and some gain far more energy
than a forward motion that ends in that state plausibly had ("Importance of initial
conditions", "Rapid velocity growth"). The paper generated several and sorted them by energy;
:func:`sample_reverse_runs` runs ``K`` of them in parallel, rejects the implausible ones and keeps
the ``k`` with the lowest peak kinetic energy.

Reproducibility: run ``i`` uses the seed ``SeedSequence(entropy, spawn_key=(i,))`` (its first
32-bit word, passed to :func:`reverse.runs.run.run_reverse`), so the outcome of every run — and
therefore the ranking — is bit-identical whatever the executor and the number of workers.

Per-run variation (:class:`RunVariation`): each run may draw its own heading (the moving bodies
turned as one about the vertical through their centre of mass) and its own hints (a hints
distribution, :class:`reverse.goals.hints.HintsDistribution`, or a scene script's
``hints(seed=…)``),
so that many different pasts run in one process pool. The draws come from
``SeedSequence(entropy, spawn_key=(i, 1))`` (:func:`variation_rng`), a stream independent of the
run's own seed, in a fixed order: heading, script seed, distribution hints.

A run is rejected, with the reason recorded, when it did not finish (a non-finite state, or its
kinetic energy passed ``energy_limit`` and it was stopped), when an island's LCP failed, or when
it raised. Ties in peak energy are broken by the run index.
"""

from __future__ import annotations

import concurrent.futures as cf
import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from reverse.runs.sampler import Pasts, RunRecord, record_of_trajectory
from reverse.runs.workers import fan_out, worker_world
from workbench.ensemble.run import SceneRef
from workbench.sim.state import Trajectory

__all__ = [
    "SampleOutcome",
    "SamplingResult",
    "OUTCOME_DTYPE",
    "sample_seed",
    "variation_rng",
    "RunVariation",
    "turn_moving_bodies",
    "run_varied",
    "BackwardRuns",
    "sample_reverse_runs",
]


#: One row per sampled run in ``/sampling/outcomes`` of the file. A run's wall time is not among
#: them: the same inputs must give the same bytes (docs/hdf5.md, "Identical bytes").
OUTCOME_DTYPE = np.dtype(
    [
        ("index", "i8"),
        ("seed", "u8"),
        ("status", "S12"),
        ("kept", "?"),
        ("rank", "i8"),  # 0 = lowest peak energy among the accepted runs; -1 rejected
        ("peak_energy", "f8"),  # J
        ("earliest_energy", "f8"),  # J, at the start of the (forward-time) motion
        ("growth", "f8"),  # peak energy / energy of the scene's state (inf for a scene at rest)
        ("lcp_failed", "i8"),
        ("markov_transitions", "i8"),
        ("reason", "S120"),
    ]
)


@dataclass(frozen=True)
class SampleOutcome:
    """What one sampled reverse run gave (its trajectory travels separately)."""

    index: int
    seed: int
    status: str  # ok | nonfinite | energy | error
    message: str
    peak_energy: float
    earliest_energy: float
    growth: float
    lcp_failed: int
    markov_transitions: int
    seconds: float

    @property
    def rejection(self) -> str:
        """Why the run is not a candidate ('' when it is)."""
        if self.status != "ok":
            return f"{self.status}: {self.message}"
        if self.lcp_failed:
            return f"{self.lcp_failed} island LCP(s) failed"
        return ""


@dataclass
class SamplingResult:
    """:func:`sample_reverse_runs`' outcome."""

    entropy: int
    outcomes: list[SampleOutcome]
    #: The kept runs, lowest peak energy first: (outcome, trajectory, island log).
    kept: list[tuple[SampleOutcome, Trajectory, np.ndarray]] = field(default_factory=list)
    wall_seconds: float = 0.0

    def table(self) -> np.ndarray:
        """All outcomes as a structured array (:data:`OUTCOME_DTYPE`), in run order."""
        rank = {o.index: r for r, (o, _, _) in enumerate(self.kept)}
        rows = []
        for o in sorted(self.outcomes, key=lambda o: o.index):
            reason = o.rejection
            if not reason and o.index not in rank:
                reason = "accepted, not among the lowest-energy runs kept"
            rows.append(
                (
                    o.index,
                    o.seed,
                    _utf8_prefix(o.status, 12),
                    o.index in rank,
                    rank.get(o.index, -1),
                    o.peak_energy,
                    o.earliest_energy,
                    o.growth,
                    o.lcp_failed,
                    o.markov_transitions,
                    _utf8_prefix(reason, 120),
                )
            )
        return np.array(rows, dtype=OUTCOME_DTYPE)


def _utf8_prefix(text: str, size: int) -> bytes:
    """``text`` in UTF-8, cut to at most ``size`` bytes without splitting a character."""
    return text.encode("utf-8", "replace")[:size].decode("utf-8", "ignore").encode("utf-8")


def sample_seed(entropy: int, i: int) -> int:
    """Seed of sampled run ``i``: independent of executors and worker counts."""
    return int(np.random.SeedSequence(entropy, spawn_key=(i,)).generate_state(1)[0])


#: Spawn key (after the run index) of the stream of a run's variation draws.
_VARIATION_KEY = 1


def variation_rng(entropy: int, i: int) -> np.random.Generator:
    """Generator of run ``i``'s variation draws (heading, hints): independent of the run's seed
    (:func:`sample_seed`), of executors and of worker counts."""
    seq = np.random.SeedSequence(entropy, spawn_key=(i, _VARIATION_KEY))
    return np.random.Generator(np.random.PCG64(seq))


def turn_moving_bodies(scene, angle: float):
    """``scene`` with its moving bodies turned as one rigid group by ``angle`` (rad) about the
    vertical (against gravity; +z without gravity) through their common centre of mass; their
    velocities turn with them. Fixed bodies stay: a turn keeps every contact with a flat ground
    (and among the moving bodies) as it is."""
    from scipy.spatial.transform import Rotation

    from workbench.scene.model import scene_from_dict

    g = np.asarray(scene.gravity, dtype=float)
    up = -g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.array([0.0, 0.0, 1.0])
    turn = Rotation.from_rotvec(float(angle) * up)
    moving = [k for k, b in enumerate(scene.bodies) if not b.fixed]
    if not moving:
        return scene
    masses, coms = [], []
    for k in moving:
        b = scene.bodies[k]
        props = b.mass_properties
        masses.append(props.mass)
        coms.append(np.asarray(b.position) + b.rotation.apply(np.asarray(props.com)))
    centre = np.average(np.array(coms), axis=0, weights=np.array(masses))
    data = scene.model_dump()
    for k in moving:
        b, entry = scene.bodies[k], data["bodies"][k]
        entry["position"] = (centre + turn.apply(np.asarray(b.position) - centre)).tolist()
        entry["quaternion"] = (turn * b.rotation).as_quat().tolist()
        entry["euler_deg"] = None
        entry["linear_velocity"] = turn.apply(np.asarray(b.linear_velocity)).tolist()
        entry["angular_velocity"] = turn.apply(np.asarray(b.angular_velocity)).tolist()
    return scene_from_dict(
        data, source=scene.source, base_dir=scene.base_dir, source_text=scene.source_text
    )


@dataclass(frozen=True)
class RunVariation:
    """What each sampled run draws for itself (module docstring). Picklable.

    Attributes
    ----------
    heading : bool
        Turn the moving bodies by an angle uniform in [0, 2π) about the vertical.
    hints : HintsDistribution, optional
        Hints whose values each run draws (:class:`reverse.goals.hints.HintsDistribution`).
    script : str, optional
        A scene script whose ``hints(seed=…, **parameters)`` each run calls with its own seed
        (a 63-bit integer drawn from the run's variation stream).
    rest : callable, optional
        The draw of ``at: rest`` in :attr:`hints` (:class:`reverse.goals.semi_markov.FinalRest`).
    """

    heading: bool = False
    hints: Any = None
    script: str | None = None
    rest: Any = None

    @classmethod
    def of(cls, resolved, heading: bool = False) -> RunVariation | None:
        """What each run draws given ``--hints`` resolved for sampled runs
        (:func:`reverse.goals.hints.resolve_hints`) and the heading; ``None`` when nothing."""
        if not (heading or resolved.draws):
            return None
        return cls(heading, resolved.distribution, resolved.script, resolved.rest)

    def draw(self, scene, entropy: int, i: int):
        """Run ``i``'s scene and hints: ``(scene, hints or None, heading in rad)``; ``None``
        hints when this variation draws none (the run keeps the options' hints)."""
        rng = variation_rng(entropy, i)
        angle = float(rng.uniform(0.0, 2.0 * np.pi)) if self.heading else 0.0
        if self.heading:
            scene = turn_moving_bodies(scene, angle)
        hints = None
        if self.script is not None:
            from reverse.goals.hints import script_hints

            seed = int(rng.integers(0, 2**63))
            hints, _ = script_hints(
                self.script, scene.parameters, scene.body_names, seed=seed, text=False
            )
        if self.hints is not None:
            g = np.asarray(scene.gravity, dtype=float)
            up = -g if np.linalg.norm(g) > 0 else np.array([0.0, 0.0, 1.0])
            hints = [*(hints or []), *self.hints.draw(rng, up, rest=self.rest)]
        return scene, hints, angle


def run_varied(ref: SceneRef, options: dict[str, Any], entropy: int, i: int, variation=None):
    """Sampled reverse run ``i`` in this process: ``(outcome, result or None, scene or None)``.

    The scene is ``ref``'s, turned and with hints drawn by ``variation``
    (:class:`RunVariation`) when given; ``result`` is the :class:`reverse.runs.run.ReverseResult`.
    Failures are returned as the outcome, not raised.
    """
    # here, not at the top: reverse.runs.run loads the scene model (pydantic) and the engine, which
    # the CLI's import of this module (for its parser) does not need
    from reverse.runs.run import run_reverse

    seed = sample_seed(entropy, i)
    t0 = time.perf_counter()
    scene = None
    try:
        scene = ref.load()
        if variation is not None:
            scene, hints, _ = variation.draw(scene, entropy, i)
            if hints is not None:
                options = {**options, "hints": hints}
        res = run_reverse(scene, seed=seed, **options)
    except Exception as exc:  # noqa: BLE001 - recorded as the run's outcome
        out = SampleOutcome(i, seed, "error", f"{type(exc).__name__}: {exc}", np.nan, np.nan,
                            np.nan, 0, 0, time.perf_counter() - t0)  # fmt: skip
        return out, None, scene
    return _outcome(i, seed, res, t0), res, scene


def _outcome(i: int, seed: int, res, t0: float) -> SampleOutcome:
    traj = res.trajectory
    ke = np.asarray(traj.diagnostics["kinetic_energy"], dtype=float)
    final = float(ke[-1]) if ke.size else np.nan
    peak = float(np.max(ke)) if ke.size else np.nan
    growth = peak / final if final > 0 else (np.inf if peak > 0 else 1.0)
    return SampleOutcome(
        index=i,
        seed=seed,
        status=traj.status,
        message=traj.message,
        peak_energy=peak,
        earliest_energy=float(ke[0]) if ke.size else np.nan,
        growth=float(growth),
        lcp_failed=int(np.sum(traj.diagnostics["lcp_failed"])),
        markov_transitions=int(res.markov_transitions),
        seconds=time.perf_counter() - t0,
    )


def _backward_task(ref: SceneRef, options: dict, entropy: int, variation, body, keep: bool, i):
    """Backward run ``i`` in this process (the task of a worker): ``(outcome, trajectory and
    island log or None, record or None)``; failures are returned, not raised."""
    out, res, scene = run_varied(ref, options, entropy, i, variation)
    record = None
    if body is not None:
        if res is None:
            record = RunRecord(np.zeros(0, np.int8), np.zeros((0, 3)), f"error: {out.message}")
        else:
            from reverse.runs.contacts import ContactDetector

            detector = worker_world("detector", ref.key(), lambda: ContactDetector(scene))
            record = record_of_trajectory(res.trajectory, scene, body, detector)
            if out.rejection:
                record.status = out.rejection
    run = (res.trajectory, res.island_log) if keep and res is not None else None
    return out, run, record


@dataclass(frozen=True)
class BackwardRuns:
    """Sampled backward runs as a sampler of pasts (:class:`reverse.runs.sampler.PastSampler`):
    run ``i`` is :func:`run_varied` seeded from ``(entropy, i)``.

    Attributes
    ----------
    options : dict
        Keyword arguments of :func:`reverse.runs.run.run_reverse` other than the scene and the
        seed (picklable: hints, settings, the Markov table, the energy limit).
    variation : RunVariation, optional
        What each run draws for itself (heading, hints).
    keep : int
        Keep the ``keep`` accepted runs of lowest peak kinetic energy (ties: the run index) with
        their trajectories and island logs (``Pasts.kept``, lowest first); 0 keeps none.
    body : int, optional
        Record every run as the measure reads it (:func:`reverse.runs.sampler.
        record_of_trajectory` of this moving body; ``Pasts.records``), not-ok runs marked.
    """

    name: ClassVar[str] = "backward"
    description: ClassVar[str] = "backward runs of the reverse stepper from the final state"
    options: dict = field(default_factory=dict)
    variation: RunVariation | None = None
    keep: int = 0
    body: int | None = None

    def sample(
        self,
        scene: SceneRef,
        n: int,
        entropy: int,
        *,
        workers: int = 1,
        scheduler: str | None = None,
        executor: cf.Executor | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Pasts:
        """``n`` backward runs of ``scene`` (:class:`reverse.runs.sampler.PastSampler`)."""
        t0 = time.perf_counter()
        outcomes: list[SampleOutcome] = [None] * n  # type: ignore[list-item]
        records: list = [None] * n
        best: list[tuple[float, int, int, Any]] = []  # max-heap on (peak, index) via negation
        args = (scene, self.options, entropy, self.variation, self.body, self.keep > 0)
        done = 0
        for out, run, record in fan_out(
            _backward_task, args, range(n), workers=workers, scheduler=scheduler, executor=executor
        ):
            outcomes[out.index], records[out.index] = out, record
            done += 1
            if progress is not None:
                progress(done, n)
            if out.rejection or run is None:
                continue
            item = (-out.peak_energy, -out.index, out.index, (out, *run))
            if len(best) < self.keep:
                heapq.heappush(best, item)
            elif (out.peak_energy, out.index) < (-best[0][0], -best[0][1]):
                heapq.heapreplace(best, item)
        kept = [entry for *_, entry in sorted(best, key=lambda b: (-b[0], -b[1]))]
        return Pasts(
            self.name,
            records if self.body is not None else [],
            outcomes=outcomes,
            kept=kept,
            entropy=entropy,
            seconds=time.perf_counter() - t0,
        )


def sample_reverse_runs(
    ref: SceneRef,
    *,
    samples: int,
    keep: int,
    options: dict[str, Any],
    entropy: int | None = None,
    workers: int = 1,
    scheduler: str | None = None,
    executor: cf.Executor | None = None,
    progress: Callable[[int, int], None] | None = None,
    variation: RunVariation | None = None,
) -> SamplingResult:
    """Run ``samples`` seeded reverse runs and keep the ``keep`` lowest-peak-energy ones (ties:
    the run index): :class:`BackwardRuns` with ``keep``.

    Parameters
    ----------
    ref : SceneRef
        The scene (rebuilt in each worker).
    samples, keep : int
        K runs; at most k kept (fewer when fewer are accepted).
    options : dict
        Keyword arguments of :func:`reverse.runs.run.run_reverse` other than the scene and the seed.
    entropy : int, optional
        Seed entropy (fresh when ``None``; returned in the result).
    workers, scheduler, executor
        As for ensembles: a process pool of ``workers``, a Dask scheduler address, or any
        executor.
    progress : callable, optional
        ``progress(done, samples)`` as runs finish.
    variation : RunVariation, optional
        What each run draws for itself (heading, hints).
    """
    if samples < 1:
        raise ValueError(f"--samples: expected at least 1, got {samples}")
    if not 1 <= keep <= samples:
        raise ValueError(f"--keep: expected 1 ≤ k ≤ {samples} (the samples), got {keep}")
    if entropy is None:
        entropy = int(np.random.SeedSequence().entropy)
    pasts = BackwardRuns(options, variation, keep).sample(
        ref, samples, entropy, workers=workers, scheduler=scheduler, executor=executor,
        progress=progress,
    )  # fmt: skip
    return SamplingResult(entropy, pasts.outcomes, pasts.kept, pasts.seconds)
