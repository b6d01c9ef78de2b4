"""Monte Carlo ensembles of a scene, run serially, on a process pool or on a Dask cluster, into
one HDF5 store.

Reproducibility: realization ``i`` draws everything random from
``numpy.random.Generator(PCG64(SeedSequence(entropy, spawn_key=(i,))))`` (equal to
``SeedSequence(entropy).spawn(n)[i]``, see docs/architecture.md), and every worker rebuilds its
PyBullet world from scratch for each realization, which is bit-reproducible. So the stored
datasets are bit-identical whatever the executor, the number of workers and the order in which
realizations finish.

Crash safety: only this (driver) process writes; workers return arrays. Realizations are
written in batches, each with the store's two-phase flush, so a killed ensemble leaves a
readable file and ``resume=True`` runs only the realizations not marked completed. A realization
that raises or goes non-finite is stored with its status and message and does not stop the
ensemble.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import WorkbenchError
from workbench.sim.state import Trajectory

__all__ = [
    "SceneRef",
    "EnsembleResult",
    "run_ensemble",
    "run_realization",
    "realization_rng",
    "NOMINAL_INDEX",
    "executor_for",
    "bounded_map",
]

#: Index passed to :func:`run_realization` for the nominal (deterministic) run.
NOMINAL_INDEX = -1

#: Tasks kept in flight per worker: enough to hide scheduling latency, few enough that a huge
#: ensemble does not hold all its pending results in memory.
IN_FLIGHT_PER_WORKER = 4

#: Finished realizations are written in batches (:class:`~workbench.store.BatchWriter`) with one
#: two-phase flush each: two flushes cost ≈ 5 ms, more than a cheap realization (measured: 56 s
#: instead of 36 s for 4250 realizations of random_box written one by one). A batch is written at
#: WRITE_BATCH realizations or after WRITE_SECONDS, so a killed run loses at most that much work.
WRITE_BATCH = 32
WRITE_SECONDS = 2.0


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
    """

    path: str
    overrides: tuple = ()
    dt: float | None = None
    duration: float | None = None

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


_SCENES: dict[str, Any] = {}
_ENGINE: list = []  # this process's PyBullet engine (one per worker process, made lazily)


def realization_rng(entropy: int, i: int) -> np.random.Generator:
    """The generator of realization ``i`` (independent of executor and worker count)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(i,))))


def run_realization(ref: SceneRef, entropy: int, i: int) -> tuple[int, Trajectory, float]:
    """Run realization ``i`` (or the nominal run for ``i = NOMINAL_INDEX``) in this process.

    Returns ``(i, trajectory, seconds)``. A failure is returned, not raised: the trajectory then
    has no records and ``status="error"`` with the exception in ``message``.
    """
    # PyBullet and the scene model load in the process that runs realizations, not on import
    from workbench.ensemble.realization import nominal_realization, sample_realization
    from workbench.sim.engine import Engine
    from workbench.sim.forward import run_scene

    t0 = time.perf_counter()
    scene = ref.load()
    params: dict[str, np.ndarray] = {}
    try:
        if i == NOMINAL_INDEX:
            real = nominal_realization(scene)
        else:
            real = sample_realization(scene, realization_rng(entropy, i))
        params = real.params
        realized = scene.with_parameters(real.values) if real.values else scene
        if not _ENGINE:
            _ENGINE.append(Engine(realized, mass_overrides=real.mass_overrides))
        traj = run_scene(realized, engine=_ENGINE[0], mass_overrides=real.mass_overrides)
        traj.params.update(params)
    except Exception as exc:  # recorded in the file; the ensemble goes on
        traj = _failed(scene, params, f"{type(exc).__name__}: {exc}")
    return i, traj, time.perf_counter() - t0


def _failed(scene, params: dict, message: str) -> Trajectory:
    n = len(scene.bodies)
    empty = {k: np.zeros((0, n, d)) for k, d in (("p", 3), ("q", 4), ("v", 3), ("w", 3))}
    return Trajectory(
        time=np.zeros(0),
        body_names=scene.body_names,
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
    task_seconds : float
        Sum over realizations of the time each took inside its worker.
    entropy : int
    """

    path: Path
    n_realizations: int
    ran: int
    failed: dict[int, str] = field(default_factory=dict)
    wall_seconds: float = 0.0
    task_seconds: float = 0.0
    entropy: int = 0


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
        Address of a Dask scheduler (``tcp://host:port``); needs the ``dask`` extra.
    executor : concurrent.futures.Executor, optional
        Any executor to use instead (its workers must be able to import ``workbench``).
    resume : bool
        Open ``out`` and run only the realizations not marked completed.
    progress : callable, optional
        ``progress(done, total)`` after each realization.
    timestamp : bool
        Record the creation time in the file (root attribute ``created``). Off by default, so
        the same scene, ``n`` and ``entropy`` give the same bytes whatever the executor: the
        realizations are also written in index order (an early one waits in memory for those
        before it; see :class:`~workbench.store.BatchWriter`).
    """
    # here, not at the top: workers and the Markov training import this module for
    # run_realization and bounded_map, and need neither the scene loader (pydantic, YAML) nor h5py
    from workbench.scene.loader import scene_to_json
    from workbench.store import BatchWriter, StoreSchema, TrajectoryStore

    out = Path(out)
    if n < 1:
        raise WorkbenchError(f"-n: expected at least 1 realization, got {n}")
    if workers < 1:
        raise WorkbenchError(f"--workers: expected at least 1, got {workers}")
    scene = ref.load()
    t_start = time.perf_counter()
    if resume:
        store = TrajectoryStore.open(out, "r+")
        entropy = _check_resume(store, scene, n, entropy)
        todo = [int(i) for i in store.missing()]
    else:
        if entropy is None:
            entropy = int(np.random.SeedSequence().entropy)
        _, nominal, _ = run_realization(ref, entropy, NOMINAL_INDEX)
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
            timestamp=timestamp,
        )
        todo = list(range(n))
    result = EnsembleResult(path=out, n_realizations=n, ran=len(todo), entropy=entropy)
    done = n - len(todo)
    if progress is not None:
        progress(done, n)

    def written(k: int) -> None:
        nonlocal done
        done += k
        if progress is not None:
            progress(done, n)

    writer = BatchWriter(
        store, batch_size=WRITE_BATCH, seconds=WRITE_SECONDS, on_write=written, order=todo
    )
    try:
        with writer, executor_for(workers, scheduler, executor, len(todo)) as ex:
            for i, traj, seconds in _map(ex, ref, entropy, todo, workers):
                result.task_seconds += seconds
                if traj.status != "ok":
                    result.failed[i] = f"{traj.status}: {traj.message}"
                writer.add(i, _conform(traj, store.schema))
            writer.flush()
    finally:
        store.close()
        _close_engine()
    result.wall_seconds = time.perf_counter() - t_start
    return result


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


def _check_resume(store, scene, n: int, entropy: int | None) -> int:
    attrs = store.attrs
    path = store.path
    if attrs.get("kind") != "ensemble":
        raise WorkbenchError(
            f"{path}: --resume needs an ensemble file, this is a {attrs.get('kind')}"
        )
    if store.n_realizations != n:
        raise WorkbenchError(
            f"{path}: --resume with -n {n}, but the file was created for {store.n_realizations}"
        )
    if attrs.get("scene", "") != scene.source_text:
        raise WorkbenchError(f"{path}: --resume with a scene that differs from the one stored")
    stored = int(attrs["seed_entropy"])
    if entropy is not None and entropy != stored:
        raise WorkbenchError(f"{path}: --resume with --seed {entropy}, the file used {stored}")
    return stored


def _close_engine() -> None:
    while _ENGINE:
        _ENGINE.pop().close()


class _Serial(cf.Executor):
    """Runs tasks in this process when submitted (the default for one worker)."""

    def submit(self, fn, /, *args, **kwargs):
        fut: cf.Future = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - delivered through the future
            fut.set_exception(exc)
        return fut


def executor_for(workers: int, scheduler: str | None, executor, n_tasks: int):
    """A context manager giving the executor of a parallel job: the caller's ``executor``
    (not shut down), a Dask cluster's at ``scheduler``, this process for one worker or task, or
    a forkserver process pool of ``workers``."""
    if executor is not None:
        return _Borrowed(executor)
    if scheduler is not None:
        return _dask_executor(scheduler)
    if workers == 1 or n_tasks <= 1:
        return _Serial()
    import multiprocessing as mp

    # forkserver: workers fork from a clean server process, never from a driver that holds an
    # open HDF5 file or had a PyBullet client
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(
        ["workbench.ensemble.run", "workbench.sim.forward", "workbench.ensemble.realization"]
    )
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx)


class _Borrowed:
    """A caller's executor: used, not shut down."""

    def __init__(self, ex):
        self.ex = ex

    def __enter__(self):
        return self.ex

    def __exit__(self, *exc):
        return False


class _dask_executor:
    def __init__(self, address: str):
        try:
            from distributed import Client
        except ImportError:
            raise WorkbenchError(
                "--scheduler needs Dask: pip install 'rigid-workbench[dask]'"
            ) from None
        try:
            self.client = Client(address, timeout=20, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise WorkbenchError(f"--scheduler {address}: cannot connect ({exc})") from None

    def __enter__(self):
        # pure=False: tasks with equal arguments are distinct realizations, never merged
        return self.client.get_executor(pure=False)

    def __exit__(self, *exc):
        self.client.close()
        return False


def _map(ex, ref: SceneRef, entropy: int, todo: Iterable[int], workers: int):
    """Realizations ``todo`` on ``ex``, as they complete (:func:`bounded_map`)."""
    return bounded_map(ex, run_realization, (ref, entropy), todo, workers)


def bounded_map(ex, fn, args: tuple, todo: Iterable, workers: int):
    """Submit ``fn(*args, i)`` for each item ``i`` of ``todo`` with at most
    :data:`IN_FLIGHT_PER_WORKER` per worker in flight; yield the results as they complete."""
    window = max(1, IN_FLIGHT_PER_WORKER * max(workers, 1))
    pending: set = set()
    try:
        for i in todo:
            pending.add(ex.submit(fn, *args, i))
            if len(pending) >= window:
                finished, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    yield fut.result()
        while pending:
            finished, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for fut in finished:
                yield fut.result()
    finally:
        for fut in pending:
            fut.cancel()
