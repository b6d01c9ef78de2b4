"""Many seeded reverse runs of one scene, ranked by energy (Twigg & James 2008 §4–5).

A backward simulation from a state at rest has many plausible pasts: the Markov contact model
and the random friction pyramids make each seed a different one, and some gain far more energy
than a forward motion that ends in that state plausibly had ("Importance of initial
conditions", "Rapid velocity growth"). The paper generated several and sorted them by energy;
:func:`sample_reverse_runs` runs ``K`` of them in parallel, rejects the implausible ones and keeps
the ``k`` with the lowest peak kinetic energy.

Reproducibility: run ``i`` uses the seed ``SeedSequence(entropy, spawn_key=(i,))`` (its first
32-bit word, passed to :func:`reverse.run.run_reverse`), so the outcome of every run — and
therefore the ranking — is bit-identical whatever the executor and the number of workers.

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
from typing import Any

import numpy as np

from workbench.ensemble.run import SceneRef, bounded_map, executor_for
from workbench.sim.state import Trajectory

__all__ = [
    "SampleOutcome",
    "SamplingResult",
    "OUTCOME_DTYPE",
    "sample_seed",
    "run_sample",
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


def run_sample(
    ref: SceneRef, options: dict[str, Any], entropy: int, i: int
) -> tuple[SampleOutcome, Trajectory | None, np.ndarray | None]:
    """Run sampled reverse run ``i`` in this process (the task of a worker).

    ``options`` are keyword arguments of :func:`reverse.run.run_reverse` (picklable: hints,
    settings, the Markov table, the energy limit). Failures are returned, not raised.
    """
    # here, not at the top: reverse.run loads the scene model (pydantic) and the engine, which
    # the CLI's import of this module (for its parser) does not need
    from reverse.run import run_reverse

    seed = sample_seed(entropy, i)
    t0 = time.perf_counter()
    try:
        scene = ref.load()
        res = run_reverse(scene, seed=seed, **options)
    except Exception as exc:  # noqa: BLE001 - recorded as the run's outcome
        out = SampleOutcome(i, seed, "error", f"{type(exc).__name__}: {exc}", np.nan, np.nan,
                            np.nan, 0, 0, time.perf_counter() - t0)  # fmt: skip
        return out, None, None
    traj = res.trajectory
    ke = np.asarray(traj.diagnostics["kinetic_energy"], dtype=float)
    final = float(ke[-1]) if ke.size else np.nan
    peak = float(np.max(ke)) if ke.size else np.nan
    growth = peak / final if final > 0 else (np.inf if peak > 0 else 1.0)
    out = SampleOutcome(
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
    return out, traj, res.island_log


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
    progress: Callable[[SampleOutcome], None] | None = None,
) -> SamplingResult:
    """Run ``samples`` seeded reverse runs and keep the ``keep`` lowest-peak-energy ones.

    Parameters
    ----------
    ref : SceneRef
        The scene (rebuilt in each worker).
    samples, keep : int
        K runs; at most k kept (fewer when fewer are accepted).
    options : dict
        Keyword arguments of :func:`reverse.run.run_reverse` other than the scene and the seed.
    entropy : int, optional
        Seed entropy (fresh when ``None``; returned in the result).
    workers, scheduler, executor
        As for ensembles: a process pool of ``workers``, a Dask scheduler address, or any
        executor.
    progress : callable, optional
        Called with each outcome as it arrives.
    """
    if samples < 1:
        raise ValueError(f"--samples: expected at least 1, got {samples}")
    if not 1 <= keep <= samples:
        raise ValueError(f"--keep: expected 1 ≤ k ≤ {samples} (the samples), got {keep}")
    if entropy is None:
        entropy = int(np.random.SeedSequence().entropy)
    t0 = time.perf_counter()
    outcomes: list[SampleOutcome] = []
    best: list[tuple[float, int, int, Any]] = []  # max-heap on (peak, index) via negation
    with executor_for(workers, scheduler, executor, samples) as ex:
        runs = bounded_map(ex, run_sample, (ref, options, entropy), range(samples), workers)
        for out, traj, log in runs:
            outcomes.append(out)
            if progress is not None:
                progress(out)
            if out.rejection or traj is None:
                continue
            item = (-out.peak_energy, -out.index, out.index, (out, traj, log))
            if len(best) < keep:
                heapq.heappush(best, item)
            elif (out.peak_energy, out.index) < (-best[0][0], -best[0][1]):
                heapq.heapreplace(best, item)
    kept = [entry for *_, entry in sorted(best, key=lambda b: (-b[0], -b[1]))]
    return SamplingResult(entropy, outcomes, kept, time.perf_counter() - t0)
