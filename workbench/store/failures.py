"""What the store does when a write fails: the error it raises, and how it sees HDF5's failures.

A full disk or another I/O error must neither crash the writer nor damage what is already on
disk (issue 21): :class:`~workbench.store.hdf5.TrajectoryStore` refuses a batch when the
filesystem lacks :data:`WRITE_HEADROOM` plus the batch's bytes, catches HDF5's errors (also those
h5py can only print, :func:`catching_io_errors`), closes the file at once and raises
:class:`StoreWriteError`, whose :attr:`~StoreWriteError.exit_status` is 1.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from workbench.errors import StoreError

__all__ = [
    "WRITE_HEADROOM",
    "StoreWriteError",
    "is_disk_full",
    "catching_io_errors",
    "free_bytes",
]


#: Free space a batch needs beyond the bytes of its rows before it is written: the HDF5 metadata
#: written with it (chunk B-tree nodes, a global-heap collection for ``status``/``message``;
#: measured: at most 43 KiB beyond the rows per batch of 32 uncompressed realizations of 101
#: records, 10 batches of the synthetic trajectory of tests/unit/workbench/test_store.py) and
#: deflate's worst-case growth of incompressible chunks (5 bytes per 16 KiB block, < 0.1%).
#: 256 KiB is six times the measured metadata, and an eighth of the smallest filesystem it
#: matters for (the 2 MiB tmpfs of tests/integration/test_disk_full.py).
WRITE_HEADROOM = 256 * 1024


class StoreWriteError(StoreError):
    """Writing a store failed (disk full, or another I/O error): the file was closed at once,
    every realization marked completed before the failure is kept and readable, and an
    ensemble can be finished with ``--resume`` once the cause is fixed.

    The CLI exits with :attr:`exit_status` 1 (a run that failed part-way, results kept), not
    the 2 of a bad input.

    Attributes
    ----------
    path : Path
    kept : int
        Realizations completed on disk.
    total : int
        Realizations of the store.
    disk_full : bool
        The cause is a lack of space (``ENOSPC``, ``EDQUOT``, or too little free space for the
        next batch), not another I/O error.
    reason : str
        HDF5's or the system's message for another I/O error.

    With ``resumable`` false (the file was never created, or holds a single run) the message
    says to run again instead of ``--resume``.
    """

    exit_status = 1

    def __init__(
        self,
        path: str | os.PathLike,
        kept: int,
        total: int,
        disk_full: bool,
        reason: str = "",
        *,
        resumable: bool = True,
    ):
        self.path, self.kept, self.total, self.disk_full = Path(path), kept, total, disk_full
        self.reason = reason
        what = "disk full" if disk_full else f"I/O error ({reason})"
        if resumable and total > 1:
            text = (
                f"{what} while writing {path}: {kept} of {total} realizations kept; "
                f"{'free space' if disk_full else 'fix it'} and run with --resume"
            )
        else:
            text = (
                f"{what} while writing {path}: nothing written; "
                f"{'free space' if disk_full else 'fix it'} and run again"
            )
        super().__init__(text)


def is_disk_full(exc: BaseException) -> bool:
    """Whether an error of HDF5 or the OS is a lack of space; HDF5 reports the ``errno`` only in
    its message ("errno = 28, error message = 'No space left on device'")."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc)
    return any(
        mark in text
        for mark in (f"errno = {errno.ENOSPC},", f"errno = {errno.EDQUOT},", "No space left")
    )


@contextlib.contextmanager
def catching_io_errors(caught: list[BaseException]) -> Iterator[None]:
    """Collect the HDF5 errors that h5py cannot raise.

    HDF5 writes cached metadata and chunks when it evicts them, which can happen when h5py
    releases an object identifier: a failed write there (ENOSPC) is raised in
    ``ObjectID.__dealloc__``, where Python can only print it ("Exception ignored in ...",
    thousands of lines for one full disk) and carry on with a store whose last flush did not
    reach the disk. Here those errors go to ``caught`` instead, so the writer can stop.
    """
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, OSError | RuntimeError):
            caught.append(unraisable.exc_value)
        else:
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def free_bytes(directory: Path) -> int | None:
    """Bytes free for an unprivileged writer on the filesystem of ``directory``; None when the
    system cannot say."""
    try:
        st = os.statvfs(directory)
    except (OSError, AttributeError):
        return None
    return st.f_bavail * st.f_frsize
