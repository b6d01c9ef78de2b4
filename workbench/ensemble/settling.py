"""A Dask executor that ends quietly: its tasks cancelled and its results on their way let
arrive before its client closes.

distributed's :class:`~distributed.cfexecutor.ClientExecutor` hands each result to its
:class:`concurrent.futures.Future` from a coroutine on the client's event loop that gathers it
from the workers. A client closed while such a gather is under way (the answer of a probe that
nobody waits for, at the end of a run) makes that coroutine fail with ``CommClosedError``, which
tornado prints as a traceback on stderr after a run that succeeded (issue 39, item 9; measured:
a 200 MB result closed 0.3 s after its submission, every time). :meth:`SettlingExecutor.settle`
cancels what has not finished and waits, bounded, until every future it handed out is done.
"""

from __future__ import annotations

import concurrent.futures as cf
import weakref

from distributed.cfexecutor import ClientExecutor

__all__ = ["SettlingExecutor"]


class SettlingExecutor(ClientExecutor):
    """:class:`~distributed.cfexecutor.ClientExecutor` that remembers the futures it hands out,
    for :meth:`settle`."""

    def __init__(self, client, **kwargs):
        super().__init__(client, **kwargs)
        self._handed_out: weakref.WeakSet[cf.Future] = weakref.WeakSet()

    def submit(self, fn, /, *args, **kwargs) -> cf.Future:
        future = super().submit(fn, *args, **kwargs)
        self._handed_out.add(future)
        return future

    def settle(self, timeout: float) -> bool:
        """Cancel the tasks not finished, then wait at most ``timeout`` seconds until each future
        handed out is done (its result gathered, or its cancellation seen). Returns whether all
        are; the client may then be closed without a gather under way."""
        self.shutdown(wait=False)
        pending = [f for f in list(self._handed_out) if not f.done()]
        _, not_done = cf.wait(pending, timeout=timeout)
        return not not_done
