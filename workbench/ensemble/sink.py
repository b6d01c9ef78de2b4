"""Where a finished ensemble task goes: :class:`Sink`, the driver's side of the writer (the
store's :class:`~workbench.store.BatchWriter`), here or on a thread behind the realizations
(:mod:`workbench.ensemble.run` decides which; ``SINK_QUEUE``)."""

from __future__ import annotations

import concurrent.futures as cf

__all__ = ["Sink"]


class Sink:
    """Where finished tasks go: the writer, here or on one thread behind the caller.

    Threaded (``threaded=True``), the thread filters the rows into chunks and writes them; at
    most ``queue`` tasks wait for it, and leaving the ``with`` block waits for it to finish, so
    the writer's own exit (which writes what is pending) runs after it. Its errors reach the
    caller at the next :meth:`add` or at :meth:`finish`.
    """

    def __init__(self, writer, filters, *, threaded: bool, queue: int = 4):
        self.writer = writer
        self.filters = filters
        self.peak_waiting = 0
        self._queue_size = queue
        self._pool = cf.ThreadPoolExecutor(1, "workbench-writer") if threaded else None
        self._queued: list[cf.Future] = []
        self._error: BaseException | None = None

    def _write(self, packed) -> None:
        if self._error is not None:  # nothing more once a write failed (the store is closed)
            raise self._error
        try:
            self.writer.add_packed(packed.filtered(self.filters))
        except BaseException as exc:
            self._error = exc
            raise
        self.peak_waiting = max(self.peak_waiting, self.writer.waiting)

    def add(self, packed) -> None:
        if self._pool is None:
            self._write(packed)
            return
        while len(self._queued) >= self._queue_size:
            self._queued.pop(0).result()
        self._queued.append(self._pool.submit(self._write, packed))

    def finish(self) -> None:
        while self._queued:
            self._queued.pop(0).result()

    def __enter__(self) -> Sink:
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)  # what finished is written
