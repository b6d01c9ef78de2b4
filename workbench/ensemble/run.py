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
readable file and ``resume=True`` runs only the realizations not marked completed, after checking
that they would equal those of the interrupted run (resolved scene, scene text, ``n``, seed and
the code versions of :data:`PROVENANCE_ATTRS`). One driver at a time writes a file
(:class:`~workbench.ensemble.lock.OutputLock`), and pool workers end with their driver, however
it ends (``_die_with_driver``). A realization that raises or goes non-finite is stored with its
status and message and does not stop the ensemble.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import hashlib
import json
import os
import re
import select
import signal
import sys
import threading
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
    "check_scheduler_address",
    "PROVENANCE_ATTRS",
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

#: Seconds to wait for a Dask scheduler to answer: a scheduler on a LAN answers in milliseconds,
#: and a user who mistyped an address should hear so in seconds, not after distributed's 30 s.
CONNECT_TIMEOUT_SECONDS = 10.0

#: What a ``--scheduler`` address must look like (distributed's ``[protocol://]host:port``):
#: checked before anything runs, so "notaurl" fails at once instead of after a connect timeout.
_SCHEDULER_ADDRESS = re.compile(
    r"^(?:(?P<scheme>tcp|tls|ucx|ws|wss)://)?"
    r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)"
    r":(?P<port>[0-9]{1,5})$"
)

#: Root attributes that, with the resolved scene (``scene_json``), ``n_realizations``,
#: ``seed_entropy`` and ``workbench_version``, decide the bits of a realization; ``--resume``
#: refuses a file whose values differ from this run's. numpy and scipy draw the random inputs,
#: PyBullet integrates them.
PROVENANCE_ATTRS = ("scene_sha256", "pybullet_version", "numpy_version", "scipy_version")

#: Seconds between checks that the driver is alive, in pool workers where ``os.pidfd_open`` is
#: missing (not Linux >= 5.3): an orphan lingers at most this long.
WATCH_SECONDS = 1.0


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
        traj = run_scene(
            realized, engine=_ENGINE[0], mass_overrides=real.mass_overrides, force=ref.force
        )
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

    Raises
    ------
    WorkbenchError
        Bad arguments, a malformed or unreachable ``scheduler`` (before anything runs), a file
        that another process is writing (``FILE.lock`` is held), a resume that does not match.
    """
    # here, not at the top: workers and the Markov training import this module for
    # run_realization and bounded_map, and need neither the scene loader (pydantic, YAML) nor h5py
    from workbench.ensemble.lock import OutputLock
    from workbench.scene.loader import scene_to_json
    from workbench.store import BatchWriter, StoreSchema, TrajectoryStore

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
    provenance = _provenance(scene)
    t_start = time.perf_counter()
    with contextlib.ExitStack() as stack:
        # one writer per file: held until the store is closed (exit order is LIFO)
        stack.enter_context(OutputLock(out))
        stack.callback(_close_engine)
        if resume:
            store = TrajectoryStore.open(out, "r+")
            stack.callback(store.close)
            entropy = _check_resume(store, scene, n, entropy, provenance)
            todo = [int(i) for i in store.missing()]
        else:
            todo = list(range(n))
        # before the nominal run and the new file: an unreachable scheduler costs nothing
        ex = stack.enter_context(executor_for(workers, scheduler, executor, len(todo)))
        if not resume:
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
                extra_attrs=provenance,
                timestamp=timestamp,
            )
            stack.callback(store.close)
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
        for i, traj, seconds in _map(ex, ref, entropy, todo, workers):
            result.task_seconds += seconds
            if traj.status != "ok":
                result.failed[i] = f"{traj.status}: {traj.message}"
            writer.add(i, _conform(traj, store.schema))
        writer.flush()
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


def _provenance(scene) -> dict[str, str]:
    """The :data:`PROVENANCE_ATTRS` of this run (versions from package metadata: PyBullet is
    imported by the engine only)."""
    from importlib.metadata import PackageNotFoundError, version

    def dist(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "unknown"

    text = str(scene.source_text).encode("utf-8", "surrogateescape")
    return {
        "scene_sha256": hashlib.sha256(text).hexdigest(),
        "pybullet_version": dist("pybullet"),
        "numpy_version": np.__version__,
        "scipy_version": dist("scipy"),
    }


def _check_resume(store, scene, n: int, entropy: int | None, provenance: dict[str, str]) -> int:
    """The stored seed entropy, after checking that the realizations this run would add equal
    those it would have made when the file was created; else a one-line error naming the first
    difference."""
    from workbench import __version__
    from workbench.scene.loader import scene_to_json

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
    stored = int(attrs["seed_entropy"])
    if entropy is not None and entropy != stored:
        raise WorkbenchError(f"{path}: --resume with --seed {entropy}, the file used {stored}")
    difference = _scene_difference(str(attrs.get("scene_json", "")), scene_to_json(scene))
    if difference:
        raise WorkbenchError(f"{path}: --resume: the file was made with {difference}")
    if "scene_sha256" in attrs:
        same_source = str(attrs["scene_sha256"]) == provenance["scene_sha256"]
    else:
        same_source = attrs.get("scene", "") == scene.source_text
    if not same_source:
        raise WorkbenchError(
            f"{path}: --resume with a scene file whose text differs from the one stored "
            "(the resolved scene is the same: compare with `workbench inspect`)"
        )
    versions = {"workbench_version": __version__, **provenance}
    for key, now in versions.items():
        if key in attrs and str(attrs[key]) != now:
            name = key.removesuffix("_version")
            raise WorkbenchError(
                f"{path}: --resume: the file was made with {name} {attrs[key]}, this is "
                f"{name} {now}; its realizations would not match the new ones"
            )
    missing = [key for key in versions if key not in attrs]
    if missing:
        raise WorkbenchError(
            f"{path}: --resume: the file was written by an older workbench that did not record "
            f"{', '.join(missing)}, so it cannot be checked against this run; run it again "
            "without --resume"
        )
    return stored


def _scene_difference(stored: str, now: str) -> str:
    """The first difference between two :func:`scene_to_json` texts, as "what then, now"
    ("duration 1.0 s, now 0.5 s"); "" when the resolved scenes are equal. The scene file's
    location (``source``, ``base_dir``) is not compared: the same file may be named differently."""
    try:
        old = json.loads(stored)["scene"]
    except (ValueError, KeyError, TypeError):
        return "a resolved scene (scene_json) this workbench cannot read"
    new = json.loads(now)["scene"]
    where = _first_difference(old, new, ())
    if where is None:
        return ""
    keys, a, b = where
    if len(keys) == 2 and keys[0] == "settings" and keys[1] in ("dt", "duration"):
        return f"{keys[1]} {a} s, now {b} s"
    if len(keys) == 2 and keys[0] == "settings":
        return f"{keys[1]} {a}, now {b}"
    if len(keys) == 2 and keys[0] == "parameters":
        return f"parameter {keys[1]} = {a}, now {b}"
    dotted = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys).lstrip(".")
    return f"{dotted or 'the scene'} = {a}, now {b}"


_ABSENT = "(absent)"


def _first_difference(a, b, keys: tuple):
    """``(keys, a_value, b_value)`` at the first place two JSON values differ, else None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in [*a, *(k for k in b if k not in a)]:
            found = _first_difference(a.get(k, _ABSENT), b.get(k, _ABSENT), (*keys, k))
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_difference(x, y, (*keys, k))
            if found is not None:
                return found
        return None
    if a == b and type(a) is type(b):
        return None
    return keys, _short(a), _short(b)


def _short(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


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
    return cf.ProcessPoolExecutor(
        max_workers=workers,
        mp_context=ctx,
        initializer=_die_with_driver,
        initargs=(os.getpid(),),
    )


def check_scheduler_address(address: str) -> None:
    """Raise :class:`WorkbenchError` unless ``address`` looks like a Dask scheduler address
    (``[tcp://]HOST:PORT``); it is not contacted."""
    match = _SCHEDULER_ADDRESS.match(address)
    if match is None or not 0 < int(match["port"]) < 65536:
        raise WorkbenchError(
            f"--scheduler {address}: expected a Dask scheduler address tcp://HOST:PORT, "
            "e.g. tcp://127.0.0.1:8786"
        )


def _die_with_driver(driver_pid: int) -> None:
    """Initializer of pool workers: end this worker when the driver process ends, however it
    ends (SIGKILL included).

    A forkserver worker is a child of the forkserver, not of the driver, and blocks on a queue
    whose write end it holds itself, so it would outlive a killed driver forever; the forkserver
    and multiprocessing's resource tracker stay alive as long as any worker holds their pipes,
    and end on their own once the workers are gone. So each worker watches the driver: a daemon
    thread blocks on a pidfd of the driver (readable when it exits; polls where pidfds are
    missing) and then ends the process. The parent-death signal (Linux) also ends the worker if
    the forkserver dies.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    try:
        fd: int | None = os.pidfd_open(driver_pid)
    except ProcessLookupError:  # the driver is already gone
        os._exit(1)
    except (AttributeError, OSError):
        fd = None
    threading.Thread(
        target=_watch_driver, args=(driver_pid, fd), name="workbench-driver-watch", daemon=True
    ).start()


def _watch_driver(driver_pid: int, fd: int | None) -> None:
    if fd is not None:
        select.select([fd], [], [])  # a pidfd turns readable when its process exits
    else:
        while True:
            try:
                os.kill(driver_pid, 0)
            except ProcessLookupError:
                break
            except PermissionError:  # another user's process: the driver's pid was reused
                break
            time.sleep(WATCH_SECONDS)
    os._exit(1)


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
            _probe_scheduler(address)
            self.client = Client(address, timeout=CONNECT_TIMEOUT_SECONDS, set_as_default=False)
        except Exception as exc:  # noqa: BLE001 - whatever answered (or not), one line
            reason = " ".join(str(exc).split())[:200] or type(exc).__name__
            raise WorkbenchError(f"--scheduler {address}: cannot connect ({reason})") from None

    def __enter__(self):
        # pure=False: tasks with equal arguments are distinct realizations, never merged
        return self.client.get_executor(pure=False)

    def __exit__(self, *exc):
        self.client.close()
        return False


def _probe_scheduler(address: str) -> None:
    """Raise unless a Dask scheduler answers at ``address`` within
    :data:`CONNECT_TIMEOUT_SECONDS`.

    Before :class:`distributed.Client`, which retries a refused connection until its timeout
    (losing the reason) and, when something else answers (an HTTP port, say), fails in ways
    that leave a half-made client whose clean-up blocks the exit for 20 s more.
    """
    import asyncio
    import socket

    from distributed.comm import connect

    match = _SCHEDULER_ADDRESS.match(address)
    if match is not None and match["scheme"] in (None, "tcp", "tls"):
        host = match["host"].strip("[]")
        # the reason, at once: "Connection refused", "No route to host", "timed out"
        with socket.create_connection((host, int(match["port"])), CONNECT_TIMEOUT_SECONDS):
            pass

    async def handshake() -> None:  # distributed's connect reads the scheduler's handshake
        comm = await connect(address, timeout=CONNECT_TIMEOUT_SECONDS)
        await comm.close()

    try:
        asyncio.run(asyncio.wait_for(handshake(), CONNECT_TIMEOUT_SECONDS))
    except TimeoutError:
        raise OSError(
            f"no Dask handshake within {CONNECT_TIMEOUT_SECONDS:g} s: is it a scheduler's port?"
        ) from None
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - a foreign protocol fails in many ways
        raise OSError(f"what answered is not a Dask scheduler ({type(exc).__name__})") from None


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
