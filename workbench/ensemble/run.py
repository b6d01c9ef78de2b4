"""Monte Carlo ensembles of a scene, run serially, on a process pool or on a Dask cluster, into
one HDF5 store (``docs/ensembles.md``).

Reproducibility: realization ``i`` draws everything random from
``numpy.random.Generator(PCG64(SeedSequence(entropy, spawn_key=(i,))))`` (equal to
``SeedSequence(entropy).spawn(n)[i]``, see docs/architecture.md), and a worker rebuilds its
PyBullet world for each realization (``Engine.rebuild``, bit-identical to a fresh engine). So
the stored datasets are bit-identical whatever the executor, the number of workers, the task
sizes and the order in which tasks finish.

Tasks: consecutive realizations worth :data:`TASK_SECONDS` each (:func:`run_chunk`); a worker
keeps the scene of the :class:`Recipe` and its engine across tasks, and returns its
realizations checked and packed, their chunks already compressed
(:class:`~workbench.store.schema.PackedRows`). The first realization of each worker is submitted
before the store exists (while this process runs the nominal realization) and comes back
:class:`Unpacked`; this process packs it with the same code. Realizations longer than
:data:`LONG_TASK_SECONDS` are one per task, one task in flight per worker.

Crash safety: only this (driver) process writes, the bytes the workers made. Realizations are
written in index order, in batches, each with the store's two-phase flush, so a killed ensemble
leaves a readable file and ``resume=True`` runs only the realizations not marked completed, after
checking that they would equal those of the interrupted run (resolved scene, scene text, ``n``,
seed and the code versions of :data:`PROVENANCE_ATTRS`). One driver at a time writes a file
(:class:`~workbench.store.lock.OutputLock`), and pool workers end with their driver, however
it ends (:mod:`~workbench.ensemble.executors`). A realization that raises or goes non-finite is
stored with its status and message and does not stop the ensemble.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import hashlib
import itertools
import time
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from workbench.ensemble.executors import (
    IN_FLIGHT_PER_WORKER,
    LOCAL_SCHEDULER,
    Starting,
    auto_workers,
    bounded_map,
    check_scheduler_address,
    executor_for,
    helper_process,
    in_process,
)
from workbench.ensemble.resume import PROVENANCE_ATTRS, check_resume, provenance_of
from workbench.ensemble.sink import Sink
from workbench.errors import WorkbenchError
from workbench.sim.state import Trajectory

__all__ = [
    "SceneRef",
    "EnsembleResult",
    "run_ensemble",
    "run_realization",
    "realization_rng",
    "NOMINAL_INDEX",
    "IN_FLIGHT_PER_WORKER",
    "executor_for",
    "bounded_map",
    "check_scheduler_address",
    "PROVENANCE_ATTRS",
    "Sampler",
    "Recipe",
    "run_chunk",
    "worker_ready",
    "LOCAL_SCHEDULER",
    "auto_workers",
]

#: Index passed to :func:`run_realization` for the nominal (deterministic) run.
NOMINAL_INDEX = -1

#: Finished realizations are written in batches (:class:`~workbench.store.BatchWriter`) with one
#: two-phase flush each: two flushes cost ≈ 5 ms, more than a cheap realization (measured: 56 s
#: instead of 36 s for 4250 realizations of random_box written one by one). A batch is written at
#: WRITE_BATCH realizations (cut at the same places whatever the tasks) or after WRITE_SECONDS, so
#: a killed run loses at most that much work; the flushes cost ≈ 2% of a random_box realization.
WRITE_BATCH = 32
WRITE_SECONDS = 2.0

#: Work per task, s: a task runs this long's worth of consecutive realizations (from the measured
#: time per realization), so the executor's cost per task (≈ 2 ms on Dask, ≈ 1 ms to pickle a
#: pool task's results) is < 1% of it, and the progress bar and a kill lose at most this much.
TASK_SECONDS = 0.5

#: Work per task, s, of the tasks the driver runs itself while a pool's workers start: a worker
#: that is ready gets work only once the driver's task in hand is done (with 0.5 s tasks, 0.25 s
#: on average, 3% of a 2-worker pool's time over a 15 s serial run); shorter ones cost only
#: more tasks.
STARTUP_TASK_SECONDS = 0.1

#: Seconds per realization (by the latest estimate) from which a parallel run keeps one task in
#: flight per worker rather than :data:`IN_FLIGHT_PER_WORKER`: such a task is one realization,
#: hundreds of times the executor's latency per task (≈ 2 ms on Dask).
LONG_TASK_SECONDS = 2 * TASK_SECONDS

#: Realizations per task at most: bounds what a task holds in memory (≈ 20 kB per realization
#: of random_box, compressed) for realizations of micro-seconds.
MAX_TASK_REALIZATIONS = 1024

#: Seconds of realizations (by the nominal run's time) from which a serial run has a helper
#: process, which runs the realizations while this process compresses and writes them: PyBullet
#: never lets go of the GIL, so a writer thread beside the realizations stopped them at each of
#: its turns; with the realizations in a process of their own, this process's work (unpickling,
#: deflate, HDF5) runs on the other core. Both write the same bytes.
#: Compressing, it saved ≈ 10% of the time when a core was free, and costs ≈ 1.1 s of CPU to
#: start (the fork server's imports), which a shorter run would not repay, and a machine without
#: a free core pays in full (measured on a loaded machine: 100 random_box realizations 50%
#: slower with it). On the idle machine (2026-11-27, docs/ensembles.md) it lost 10% on a 12 s
#: random_box run and won 8% on a 70 s one; 30 s sits between.
HELPER_MIN_SECONDS = 30.0

#: Share of a realization's time that compressing it takes (measured on the nominal run) from
#: which a serial run has the helper process: below, the writer thread's compression costs less
#: than the helper's start. Measured (2026-11-27, busy machine, shuffle + zlib-4):
#: random_box 0.8 ms of a 15 ms realization (5%), the five-body scene 3.8 ms of 2.4 s (0.16%).
HELPER_MIN_SHARE = 0.01

#: Tasks waiting for the writer thread of a serial run: 4 tasks of 0.5 s hide the thread's GIL
#: turns (each up to 5 ms while the realizations hold the GIL), and hold ≈ 2 MB each
#: (random_box, uncompressed).
SINK_QUEUE = 4

#: Near the end, a task holds at most 1/TAIL_SPLIT of each worker's share of what is left, so
#: the workers finish together (guided scheduling): the last tasks are short.
TAIL_SPLIT = 4


@dataclass(frozen=True)
class SceneRef:
    """A picklable recipe for a scene: workers rebuild (and cache) the :class:`Scene` from it.

    Attributes
    ----------
    path : str
        Scene file or script.
    overrides : tuple of (str, value)
        ``--set`` parameter values.
    dt, duration : float or None
        Settings overrides.
    force : bool
        Run realizations larger than the run-size bounds of
        :func:`workbench.sim.forward.run_size_problem` (``--force``).
    """

    path: str
    overrides: tuple = ()
    dt: float | None = None
    duration: float | None = None
    force: bool = False

    def load(self):
        """The validated scene (cached per process)."""
        key = self.key()
        scene = _SCENES.get(key)
        if scene is None:
            from workbench.scene.loader import load_scene  # pydantic, YAML: only when used

            scene = load_scene(self.path, dict(self.overrides)).with_settings(
                dt=self.dt, duration=self.duration
            )
            _SCENES.clear()
            _SCENES[key] = scene
        return scene

    def key(self) -> str:
        text = Path(self.path).read_bytes() if Path(self.path).exists() else b""
        return hashlib.sha256(repr((self, text)).encode() + text).hexdigest()


#: Draws realization ``i`` of a scene from the run's seed entropy:
#: ``sampler(scene, entropy, i) -> Realization``; must be picklable (it travels to the workers).
Sampler = Callable[[Any, int, int], Any]

_SCENES: dict[str, Any] = {}
_ENGINE: list = []  # this process's PyBullet engine (one per worker process, made lazily)
#: Seconds the last engine of :data:`_ENGINE` took to make (once a process): a realization's
#: time without it is what it costs in a run. The nominal run makes the driver's engine
#: (measured 20-43 ms, for random_box realizations of 14-30 ms on a loaded machine): with it,
#: random_box's compression share came out 1.1-2.3% instead of 3.5-11%, near
#: :data:`HELPER_MIN_SHARE`, and 0.2% with the first imports of a fresh process on top.
_ENGINE_SECONDS: list[float] = []


def realization_rng(entropy: int, i: int) -> np.random.Generator:
    """The generator of realization ``i`` (independent of executor and worker count)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(i,))))


def run_realization(
    ref: SceneRef, entropy: int, i: int, sampler: Sampler | None = None
) -> tuple[int, Trajectory, float]:
    """Run realization ``i`` (or the nominal run for ``i = NOMINAL_INDEX``) in this process.

    ``sampler(scene, entropy, i)`` draws realization ``i`` (``None``:
    :func:`~workbench.ensemble.realization.sample_realization` with :func:`realization_rng`);
    the nominal run is always :func:`~workbench.ensemble.realization.nominal_realization`.
    The process keeps its PyBullet engine across realizations (``Engine.rebuild`` gives each
    the world a fresh one would: the determinism tests compare with fresh processes).

    Returns ``(i, trajectory, seconds)``. A failure is returned, not raised: the trajectory then
    has no records and ``status="error"`` with the exception in ``message``.
    """
    t0 = time.perf_counter()
    traj = _run_one(ref.load(), ref.force, entropy, i, sampler)
    return i, traj, time.perf_counter() - t0


def _run_one(scene, force: bool, entropy: int, i: int, sampler: Sampler | None) -> Trajectory:
    # PyBullet and the scene model load in the process that runs realizations, not on import
    from workbench.ensemble.realization import nominal_realization, sample_realization
    from workbench.sim.engine import Engine
    from workbench.sim.forward import run_scene

    params: dict[str, np.ndarray] = {}
    try:
        if i == NOMINAL_INDEX:
            real = nominal_realization(scene)
        elif sampler is None:
            real = sample_realization(scene, realization_rng(entropy, i))
        else:
            real = sampler(scene, entropy, i)
        params = real.params
        realized = scene.with_parameters(real.values) if real.values else scene
        if not _ENGINE:
            t0 = time.perf_counter()
            _ENGINE.append(Engine(realized, mass_overrides=real.mass_overrides))
            _ENGINE_SECONDS[:] = [time.perf_counter() - t0]
        traj = run_scene(
            realized, engine=_ENGINE[0], mass_overrides=real.mass_overrides, force=force
        )
        traj.params.update(params)
    except Exception as exc:  # recorded in the file; the ensemble goes on
        traj = _failed(scene, params, f"{type(exc).__name__}: {exc}")
    return traj


@dataclass(frozen=True)
class Recipe:
    """Everything a worker needs to run realizations of an ensemble; shipped with each task.

    Attributes
    ----------
    scene : Scene
        The resolved scene (a few kB pickled): workers need no scene file, only the mesh files
        it names, if any.
    scene_key : str
        Digest of the resolved scene: workers keep the scene they unpickled under it.
    force : bool
    entropy : int
    schema : StoreSchema
        What the store holds: results are checked and packed in the worker.
    filters : ChunkFilters or None
        The store's chunk filters, applied in the worker (None: rows shipped as arrays).
    sampler : callable or None
        ``sampler(scene, entropy, i) -> Realization``; None: the scene's own law.
    """

    scene: Any
    scene_key: str
    force: bool
    entropy: int
    schema: Any
    filters: Any = None
    sampler: Sampler | None = None


def run_chunk(recipe: Recipe, indices: tuple[int, ...]):
    """Run realizations ``indices`` (increasing) in this process and pack them for the writer.

    Returns
    -------
    PackedRows
        Their rows, filtered into the store's chunk bytes (:func:`workbench.store.schema.pack`),
        status and message (failures included), and the seconds spent.

    With ``recipe.schema`` None (a task submitted before the store exists), returns
    :class:`Unpacked` realizations, which the driver packs.
    """
    t0 = time.perf_counter()
    scene = _WORKER_SCENES.get(recipe.scene_key)
    if scene is None:
        _WORKER_SCENES.clear()
        scene = _WORKER_SCENES[recipe.scene_key] = recipe.scene
    items = []
    for i in indices:
        items.append((i, _run_one(scene, recipe.force, recipe.entropy, i, recipe.sampler)))
    if recipe.schema is None:
        return Unpacked(items, time.perf_counter() - t0)
    packed = _pack(recipe.schema, items, recipe.filters)
    packed.seconds = time.perf_counter() - t0
    return packed


def _pack(schema, items: list, filters):
    from workbench.store.schema import pack

    return pack(schema, [(i, _conform(traj, schema)) for i, traj in items], "ensemble", filters)


@dataclass
class Unpacked:
    """Realizations run before the store's schema was known: ``items`` are ``(i, trajectory)``,
    ``seconds`` their time. :meth:`pack` gives what :func:`run_chunk` would have returned."""

    items: list
    seconds: float

    def pack(self, schema, filters):
        packed = _pack(schema, self.items, filters)
        packed.seconds = self.seconds
        return packed


_WORKER_SCENES: dict[str, Any] = {}


@contextlib.contextmanager
def _helper(pool: cf.Executor | None):
    """``(pool, Starting)``: ``pool`` being started, and shut down at the end (None: None).

    Not shut down when it is still starting (a run shorter than the fork server's imports): the
    thread that starts it holds the pool's lock until then, and shutting down would wait for it.
    Once started, nothing refers to the pool any more, and its manager thread ends its process
    (as it does on the driver's exit, however that ends).
    """
    if pool is None:
        yield None
        return
    starting = Starting(pool, 1, worker_ready)
    failed = False
    try:
        yield pool, starting
    except BaseException:
        failed = True
        raise
    finally:
        if not starting.submitting:
            pool.shutdown(wait=not failed, cancel_futures=failed)


def worker_ready() -> bool:
    """A task that returns at once: done when its worker is up, with its imports done."""
    return True


def _failed(scene, params: dict, message: str) -> Trajectory:
    """An empty trajectory of every recorded row (bodies, then URDF links) and moving joint."""
    n = len(scene.tracked_names)
    empty = {k: np.zeros((0, n, d)) for k, d in (("p", 3), ("q", 4), ("v", 3), ("w", 3))}
    joints = scene.tracked_joints
    return Trajectory(
        time=np.zeros(0),
        body_names=scene.tracked_names,
        link_info={link.name: link.info() for link in scene.links},
        joint_info={j.name: j.info() for j in joints},
        joint_position=np.zeros((0, len(joints))) if joints else None,
        joint_velocity=np.zeros((0, len(joints))) if joints else None,
        position=empty["p"],
        orientation=empty["q"],
        linear_velocity=empty["v"],
        angular_velocity=empty["w"],
        params=dict(params),
        status="error",
        message=" ".join(message.split()),
    )


@dataclass
class EnsembleResult:
    """What an ensemble run did.

    Attributes
    ----------
    path : Path
    n_realizations : int
    ran : int
        Realizations run by this call (all of them, or the missing ones with ``resume``).
    failed : dict of int to str
        Index -> status and message, for realizations of this call that did not finish "ok".
    wall_seconds : float
        Wall time of this call.
    cpu_seconds : float
        CPU time of this process over the same span (all its threads; not its workers' or
        helper's).
    task_seconds : float
        Sum over realizations of the time each took inside its worker.
    entropy : int
    peak_waiting : int
        Most realizations held in memory at once, finished but waiting for earlier ones to be
        written (the file is written in index order).
    """

    path: Path
    n_realizations: int
    ran: int
    failed: dict[int, str] = field(default_factory=dict)
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0
    task_seconds: float = 0.0
    entropy: int = 0
    peak_waiting: int = 0


def run_ensemble(
    ref: SceneRef,
    n: int,
    out: str | Path,
    *,
    entropy: int | None = None,
    workers: int = 1,
    scheduler: str | None = None,
    executor: cf.Executor | None = None,
    resume: bool = False,
    progress: Callable[[int, int], None] | None = None,
    timestamp: bool = False,
    sampler: Sampler | None = None,
    dashboard: str | None = None,
    compression: str | None = "gzip",
) -> EnsembleResult:
    """Run ``n`` realizations of the scene ``ref`` into the store ``out``.

    Parameters
    ----------
    ref : SceneRef
    n : int
        Number of realizations (>= 1).
    out : path-like
        HDF5 file; created (replacing any file) unless ``resume``.
    entropy : int, optional
        Seed entropy; a fresh one is drawn (and stored in the file) when omitted.
    workers : int
        Processes on this machine (1 = serial, in this process).
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:port``), or ``"local"``: a cluster of
        ``workers`` single-threaded Dask workers on 127.0.0.1, started for this run and stopped
        at its end (:func:`~workbench.ensemble.cluster.local_dask_cluster`); needs the ``dask``
        extra. The cluster starts on a thread while this process runs the nominal realization
        and the first tasks, as with a pool.
    executor : concurrent.futures.Executor, optional
        Any executor to use instead (its workers must be able to import ``workbench``).
    resume : bool
        Open ``out`` and run only the realizations not marked completed; refused (naming the
        first difference) unless the resolved scene, scene text, ``n``, ``entropy`` and code
        versions equal those the file was made with.
    progress : callable, optional
        ``progress(done, total)`` after each realization.
    timestamp : bool
        Record the creation time in the file (root attribute ``created``). Off by default, so
        the same scene, ``n`` and ``entropy`` give the same bytes whatever the executor: the
        realizations are also written in index order (an early one waits in memory for those
        before it; see :class:`~workbench.store.BatchWriter`).
    sampler : callable, optional
        ``sampler(scene, entropy, i) -> Realization`` draws realization ``i`` (picklable: it is
        shipped to the workers); default :func:`~workbench.ensemble.realization.sample_realization`
        with :func:`realization_rng`. The nominal run is always the scene's mean.
    dashboard : str, optional
        ``HOST:PORT`` of the Dask dashboard of a ``scheduler="local"`` cluster (none by
        default).
    compression : {"gzip", None}
        Of a new file's per-record datasets (``resume`` keeps the file's): gzip (level 4, with
        shuffle; ≈ 40% smaller for random_box, ≈ 7% more CPU per realization, in the workers)
        or none.

    Notes
    -----
    Tasks hold many consecutive realizations (:data:`TASK_SECONDS` of work each, from the
    measured time per realization); workers keep the scene and their PyBullet engine, check and
    compress their results (:class:`Recipe`, :func:`run_chunk`) and return them packed; this
    process only writes the compressed chunks (:meth:`~workbench.store.Store.write_packed`).

    Raises
    ------
    WorkbenchError
        Bad arguments, a malformed or unreachable ``scheduler`` (before anything runs), a file
        that another process is writing (``FILE.lock`` is held), a resume that does not match.
    """
    # here, not at the top: workers and the Markov training import this module for
    # run_realization and bounded_map, and need neither the scene loader (pydantic, YAML) nor h5py
    from workbench.scene.loader import scene_to_json
    from workbench.store import BatchWriter, StoreSchema, TrajectoryStore
    from workbench.store.lock import OutputLock

    out = Path(out)
    if n < 1:
        raise WorkbenchError(f"-n: expected at least 1 realization, got {n}")
    if workers < 1:
        raise WorkbenchError(f"--workers: expected at least 1, got {workers}")
    if scheduler is not None:
        check_scheduler_address(scheduler)
    scene = ref.load()
    from workbench.sim.forward import check_run_size

    check_run_size(scene, ref.force)  # once, before anything runs: not n failed realizations
    provenance = provenance_of(scene)
    t_start, cpu_start = time.perf_counter(), time.process_time()
    with contextlib.ExitStack() as stack:
        # one writer per file: held until the store is closed (exit order is LIFO)
        stack.enter_context(OutputLock(out))
        stack.callback(_close_engine)
        if resume:
            store = TrajectoryStore.open(out, "r+")
            stack.callback(store.close)
            entropy = check_resume(store, scene, n, entropy, provenance)
            todo = store.missing()
        else:
            todo = np.arange(n)
        # before the nominal run and the new file: an unreachable scheduler costs nothing; a
        # local cluster starts on a thread (≈ 4-7 s until its workers registered), like a pool,
        # while this process runs the nominal realization and the first tasks
        ex = stack.enter_context(
            executor_for(
                workers, scheduler, executor, len(todo), dashboard=dashboard, background=True
            )
        )
        # one process: it runs the realizations, and a thread behind it has them compressed
        # (by a helper process) and writes them; otherwise the workers compress, in parallel
        behind = in_process(ex)
        parallel = getattr(ex, "workbench_workers", None) or workers
        if not resume and entropy is None:
            entropy = int(np.random.SeedSequence().entropy)
        scene_key = hashlib.sha256(scene_to_json(scene).encode()).hexdigest()
        # a pool's processes start now (its fork server imports for ≈ 0.7 s of CPU), while this
        # one runs the nominal realization and creates the file; then, before the file exists,
        # the workers run the first realizations, one each (the driver packs them once it knows
        # the store's schema: :class:`Unpacked`), instead of waiting for the nominal run
        # (≈ 2 s for the five-body scene, a tenth of a 20-realization run on 2 workers)
        early = todo[:parallel] if not (behind or resume) else todo[:0]
        unpacked = Recipe(scene, scene_key, ref.force, entropy, None, None, sampler)
        ready = (
            None
            if behind
            else Starting(
                ex, parallel, worker_ready, tuple((run_chunk, unpacked, (int(i),)) for i in early)
            )
        )
        nominal_seconds = None  # the time of one realization, when measured (not on resume)
        if not resume:
            # what a realization imports (≈ 0.15 s, once a process), before the nominal run's
            # clock: its time stands for a realization's (task sizes, the helper's share)
            import workbench.ensemble.realization  # noqa: F401
            import workbench.sim.forward  # noqa: F401
            from workbench.sim.engine import import_pybullet

            import_pybullet()
            made = bool(_ENGINE)
            _, nominal, nominal_seconds = run_realization(ref, entropy, NOMINAL_INDEX)
            if not made and _ENGINE_SECONDS:  # a realization's own time, without the engine
                nominal_seconds = max(nominal_seconds - _ENGINE_SECONDS[0], 1e-9)
            _close_engine()  # no PyBullet client in the driver while worker processes start
            if nominal.status != "ok":
                raise WorkbenchError(
                    f"{ref.path}: the nominal run failed ({nominal.status}: {nominal.message})"
                )
            store = TrajectoryStore.create(
                out,
                StoreSchema.from_trajectory(nominal),
                n,
                scene_text=scene.source_text,
                scene_json=scene_to_json(scene),
                seed_entropy=entropy,
                kind="ensemble",
                nominal=nominal,
                extra_attrs=provenance,
                timestamp=timestamp,
                compression=compression,
            )
            stack.callback(store.close)
        filters = store.chunk_filters()
        compressing = filters is not None and filters.level is not None
        # serially, a process compresses behind this one, in runs long enough to gain from it
        # (by the nominal run's time; a resumed run is taken as long), whose compression is
        # not negligible (measured on the nominal run's rows)
        work = None if nominal_seconds is None else nominal_seconds * len(todo)
        helped = behind and compressing
        if helped and work is not None:
            share = _compression_seconds(store.schema, nominal, filters) / nominal_seconds
            helped = work >= HELPER_MIN_SECONDS and share >= HELPER_MIN_SHARE
        helper = stack.enter_context(_helper(helper_process() if helped else None))
        runner = None
        if helper is not None:
            # the helper runs the realizations (this process runs them only until it is up);
            # this process compresses and writes what it returns, as for a pool of one
            runner, ready = helper
            ex, behind = runner, False
        result = EnsembleResult(path=out, n_realizations=n, ran=len(todo), entropy=entropy)
        done = n - len(todo)
        if progress is not None:
            progress(done, n)

        def written(k: int) -> None:
            nonlocal done
            done += k
            if progress is not None:
                progress(done, n)

        writer = stack.enter_context(
            BatchWriter(
                store, batch_size=WRITE_BATCH, seconds=WRITE_SECONDS, on_write=written, order=todo
            )
        )
        recipe = Recipe(
            scene=scene,
            scene_key=scene_key,
            force=ref.force,
            entropy=entropy,
            schema=store.schema,
            # behind or with a runner, this process compresses (in its writer thread or here)
            filters=None if behind or runner is not None else store.chunk_filters(),
            sampler=sampler,
        )
        sink = stack.enter_context(
            Sink(
                writer,
                filters,
                threaded=behind,
                queue=SINK_QUEUE,
            )
        )
        timing = _Timing(nominal_seconds)
        tasks = _tasks(todo[len(early) :], parallel, timing)
        got = np.zeros(n, dtype=bool)  # realizations finished (a runner's death resumes here)

        def finished(packed) -> None:
            if isinstance(packed, Unpacked):  # an early task: packed here, as a worker would
                packed = packed.pack(store.schema, recipe.filters)
            got[packed.indices] = True
            timing.add(len(packed), packed.seconds)
            result.task_seconds += packed.seconds
            for j, status in enumerate(packed.status):
                if status != "ok":
                    result.failed[int(packed.indices[j])] = f"{status}: {packed.message[j]}"
            sink.add(packed)

        if not behind:  # the first tasks run here while the workers start (≈ 1 s for a pool),
            # short ones, so that a worker that is ready waits little for its first task
            timing.task_seconds = STARTUP_TASK_SECONDS
            while not _workers_up(ex, ready):
                chunk = next(tasks, None)
                if chunk is None:
                    break
                finished(run_chunk(recipe, chunk))
            timing.task_seconds = TASK_SECONDS
            _close_engine()
            ready.join()
            # an early task the thread could not submit (the pool broke?) goes first, the usual
            # way (which raises if the executor is broken): none is lost
            missing = [(int(i),) for i in early[len(ready.then_futures) :]]
            tasks = itertools.chain(missing, tasks)
        per = timing.per_realization
        # realizations longer than a task's target, one per task: one task in flight per worker,
        # as a Dask scheduler assigns a task to a worker when it is submitted, and a second one
        # queued behind a long realization would be run late at the end while another worker
        # idles (the pool's workers take their tasks from one queue: the same either way)
        long = per is not None and per >= LONG_TASK_SECONDS
        started = () if ready is None else ready.then_futures
        # (a serial run's runner: two, so that it runs one while this process writes the other)
        in_flight = 1 if long and runner is None else None
        try:
            for packed in bounded_map(
                ex, run_chunk, (recipe,), tasks, parallel, started=started, in_flight=in_flight
            ):
                finished(packed)
        except BrokenProcessPool:
            if runner is None:
                raise
            # the serial run's runner died (killed?): this process runs the rest, as before it
            # was up; what it had finished is written, what it held is run again (same seeds)
            rest = todo[~got[todo]]
            for chunk in _tasks(rest, 1, timing):
                finished(run_chunk(recipe, chunk))
        sink.finish()
        result.peak_waiting = sink.peak_waiting
        writer.flush()
    result.wall_seconds = time.perf_counter() - t_start
    result.cpu_seconds = time.process_time() - cpu_start
    return result


class _Timing:
    """Running estimate of the seconds per realization, from the tasks that finished, and the
    work per task wanted (``task_seconds``)."""

    def __init__(self, first: float | None):
        self.seconds = 0.0
        self.count = 0
        self.first = first
        self.task_seconds = TASK_SECONDS

    def add(self, k: int, seconds: float) -> None:
        self.seconds += seconds
        self.count += k

    @property
    def per_realization(self) -> float | None:
        if self.count:
            return self.seconds / self.count
        return self.first


def _tasks(todo: np.ndarray, workers: int, timing: _Timing):
    """Consecutive runs of ``todo`` holding ``timing.task_seconds`` of work each by its
    latest estimate (one realization while there is none), fewer near the end
    (:data:`TAIL_SPLIT`). Sizes do not change the results: seeds are per realization."""
    pos = 0
    while pos < len(todo):
        per = timing.per_realization
        k = 1 if per is None else int(timing.task_seconds / max(per, 1e-9))
        remaining = len(todo) - pos
        k = max(1, min(k, MAX_TASK_REALIZATIONS, -(-remaining // (TAIL_SPLIT * max(workers, 1)))))
        yield tuple(todo[pos : pos + k].tolist())
        pos += k


def _conform(traj: Trajectory, schema) -> Trajectory:
    """A failed realization padded to the store's schema: no records, NaN where a parameter
    was never sampled (the status and message say what went wrong)."""
    if traj.status != "error":
        return traj
    traj.observers = {
        name: np.zeros((0, len(info["components"]))) for name, info in schema.observer_info.items()
    }
    traj.observer_info = {name: dict(info) for name, info in schema.observer_info.items()}
    traj.diagnostics = {name: np.zeros(0) for name in schema.diagnostics}
    traj.params = {
        key: np.asarray(traj.params.get(key, np.full(shape, np.nan)), dtype=float).reshape(shape)
        for key, shape in schema.param_shapes.items()
    }
    return traj


def _compression_seconds(schema, traj: Trajectory, filters) -> float:
    """Seconds that filtering ``traj``'s per-record rows into chunks takes here: the least of
    three times (a preempted one, on a loaded machine, measured 20 ms for 1 ms of work)."""
    _, rows = schema.rows(traj, "nominal")
    rows = [row for name, row in rows.items() if not name.startswith("params/")]
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for row in rows:
            filters.encode(row)
        best = min(best, time.perf_counter() - t0)
    return best


def _workers_up(ex, ready: Starting) -> bool:
    """Whether the workers of ``ex`` can take tasks: a pool's once they answered ``ready``'s
    probes; a Dask cluster's once it is connected (its workers registered, their preload
    imported). Not its probes: their round trip through Dask needs the client's event loop,
    which gets the GIL only every 5 ms while this thread runs realizations (measured
    2026-11-27, loaded machine: 1.2-1.5 s after the cluster was up, ≈ 22 random_box
    realizations run here while both workers idled after their first)."""
    if getattr(ex, "workbench_dask", False):
        return getattr(ex, "started", True)
    return ready.done()


def _close_engine() -> None:
    while _ENGINE:
        _ENGINE.pop().close()
