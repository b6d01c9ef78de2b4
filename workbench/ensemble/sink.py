"""Where a finished ensemble task goes: :class:`Sink`, the driver's side of the writer (the
store's :class:`~workbench.store.BatchWriter`), here or on a thread behind the realizations,
with a helper process compressing for it when asked (:mod:`workbench.ensemble.run` decides which:
``SERIAL_WRITER_THREAD``, ``SERIAL_RUNNER``, ``SERIAL_SWITCH_SECONDS``, ``SINK_QUEUE``)."""

from __future__ import annotations

import concurrent.futures as cf
import sys
from concurrent.futures.process import BrokenProcessPool

__all__ = ["Sink", "filter_packed"]


def filter_packed(packed, filters):
    """``packed.filtered(filters)``: what a serial run's helper process does for it."""
    return packed.filtered(filters)


class Sink:
    """Where finished tasks go: the writer, here or on one thread behind the caller.

    Threaded (``threaded=True``), the thread filters the rows into chunks and writes them; at
    most ``queue`` tasks wait for it (its switch interval ``switch`` while it runs, if given),
    and leaving the ``with`` block waits for it to finish, so the writer's own exit (which
    writes what is pending) runs after it. Its errors reach the caller at the next :meth:`add`
    or at :meth:`finish`.

    The thread has the ``helper`` process compress once it is up (it compresses itself before):
    PyBullet never lets go of the GIL, so a thread gets it only when the interpreter takes it
    from the realizations, every 5 ms (``sys.getswitchinterval``), and the thread needs it back
    after each of its ≈ 8 zlib calls per realization, and each turn stops the realizations.
    Measured on a loaded machine with 2 tasks queued, the realizations waited for the thread
    about as long as it worked (≈ 1 ms a random_box realization, 10%). A task goes to the helper
    and back in two pickles, a few GIL turns.
    """

    def __init__(
        self,
        writer,
        filters,
        *,
        threaded: bool,
        helper: tuple | None = None,
        switch: float | None = None,
        queue: int = 4,
    ):
        self.writer = writer
        self.filters = filters
        self.peak_waiting = 0
        self._switch_wanted = switch
        self._queue_size = queue
        self._pool = cf.ThreadPoolExecutor(1, "workbench-writer") if threaded else None
        # (executor, its Starting: done once its process is up)
        self._helper, self._helper_up = helper or (None, None)
        self._queued: list[cf.Future] = []
        self._error: BaseException | None = None

    def _write(self, packed) -> None:
        if self._error is not None:  # nothing more once a write failed (the store is closed)
            raise self._error
        try:
            self.writer.add_packed(self._filtered(packed))
        except BaseException as exc:
            self._error = exc
            raise
        self.peak_waiting = max(self.peak_waiting, self.writer.waiting)

    def _filtered(self, packed):
        """``packed`` filtered, by the helper when it is up (the same bytes: the same code)."""
        if self._helper is not None and self._helper_up.done():
            try:
                return self._helper.submit(filter_packed, packed, self.filters).result()
            except BrokenProcessPool:  # the helper died (killed?): compress here from now on
                self._helper = None
        return packed.filtered(self.filters)

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
        self._switch = sys.getswitchinterval()
        if self._pool is not None and self._switch_wanted is not None:
            sys.setswitchinterval(self._switch_wanted)
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self._pool is not None:
                self._pool.shutdown(wait=True)  # what finished is written
        finally:
            sys.setswitchinterval(self._switch)
