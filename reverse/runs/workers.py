"""Where the runs of a sample go: one fan-out over the ensembles' executors and one cache of the
PyBullet worlds a worker process keeps between its tasks.

Every sampler of pasts (:mod:`reverse.runs.sampling`, :mod:`reverse.pasts.conditioned`), the
forward verification (:mod:`reverse.runs.verify`) and the Markov training's throws
(:mod:`reverse.pasts.training`) hand out independent runs with :func:`fan_out`; a task builds
its engine, contact detector or training world once per process with :func:`worker_world`.
A run's outcome depends on its index only (each PyBullet run rebuilds its world), so the
results are the same bits whatever the executor and the number of workers.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from workbench.ensemble.run import bounded_map, executor_for

__all__ = ["worker_world", "close_worker_worlds", "fan_out"]

#: This process's worlds: kind → (key, world, close). One entry per kind (an engine of the
#: scene, the training's world, a contact detector), rebuilt when its key changes.
_WORLDS: dict[str, tuple[Any, Any, Callable[[Any], None]]] = {}


def _close(world) -> None:
    world.close()


def worker_world(
    kind: str, key, build: Callable[[], Any], close: Callable[[Any], None] = _close
) -> Any:
    """This process's world of ``kind`` for ``key``: ``build()`` the first time, and again
    (after ``close``-ing the old one) when ``key`` changes.

    Parameters
    ----------
    kind : str
        What the world is (``"scene"``, ``"training"``, ``"detector"``): one cached per kind.
    key
        What built it (a :class:`workbench.ensemble.run.SceneRef`, a recipe tuple); compared
        with ``==``.
    build : callable
        ``build() -> world``.
    close : callable
        ``close(world)``, when it is replaced or :func:`close_worker_worlds` runs (default: its
        ``close()`` method).
    """
    entry = _WORLDS.get(kind)
    if entry is not None and entry[0] == key:
        return entry[1]
    if entry is not None:
        del _WORLDS[kind]
        entry[2](entry[1])
    world = build()
    _WORLDS[kind] = (key, world, close)
    return world


def close_worker_worlds() -> None:
    """Close every world this process holds (the serial executor builds them in the caller)."""
    while _WORLDS:
        _, (_, world, close) = _WORLDS.popitem()
        close(world)


def fan_out(
    task: Callable,
    args: tuple,
    items: Iterable,
    *,
    workers: int = 1,
    scheduler: str | None = None,
    executor: cf.Executor | None = None,
    n_tasks: int | None = None,
) -> Iterator:
    """``task(*args, item)`` for each of ``items``, on this process (one worker or task), a
    forkserver pool of ``workers``, a Dask ``scheduler`` or the caller's ``executor``
    (:func:`workbench.ensemble.run.executor_for`), with a bounded number in flight
    (:func:`workbench.ensemble.run.bounded_map`); yields the results as they complete. Items
    may be a generator that stops handing out work. This process's worlds are closed at the end.

    ``n_tasks``: how many tasks there may be (default ``len(items)``), to pick the executor.
    """
    total = len(items) if n_tasks is None else n_tasks  # type: ignore[arg-type]
    try:
        with executor_for(workers, scheduler, executor, total) as ex:
            yield from bounded_map(ex, task, args, items, workers)
    finally:
        close_worker_worlds()
