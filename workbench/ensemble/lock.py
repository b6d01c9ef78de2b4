"""An advisory lock on an output file: one writer at a time (a fresh run or a resume).

The lock is :func:`fcntl.flock` on a sidecar file ``FILE.lock`` beside the output, holding the
pid of the writer. Why a sidecar and not the output itself: a fresh store is built under a
temporary name and moved onto ``FILE`` with :func:`os.replace` (``TrajectoryStore.create``),
which gives the path a new inode, so a lock on the old inode would not stop a second writer from
replacing the file under a driver that is resuming it. Why ``flock``: the kernel releases it when
its holder dies, SIGKILL included, so a killed driver never leaves a stale lock (the sidecar file
may stay; a lock on it is free until someone holds it). Why here and not in ``workbench/store/``:
the lock guards a whole driver session (open, compare, run the missing realizations, write), not
one file operation of the store, and the store stays usable by readers, which take no lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from workbench.errors import WorkbenchError

__all__ = ["OutputLock", "lock_path"]


def lock_path(path: str | os.PathLike) -> Path:
    """The sidecar lock file of the output ``path`` (``FILE.lock``)."""
    path = Path(path)
    return path.with_name(path.name + ".lock")


class OutputLock:
    """Hold the write lock of an output file (a context manager; not reentrant).

    Parameters
    ----------
    path : path-like
        The output file (it need not exist yet).

    Raises
    ------
    WorkbenchError
        On entering: another process holds the lock (its pid is named), or the lock file cannot
        be made.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.lock_path = lock_path(self.path)
        self._fd: int | None = None

    def acquire(self) -> OutputLock:
        """Take the lock, or raise :class:`WorkbenchError` naming the process that holds it."""
        while True:
            try:
                fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise WorkbenchError(
                    f"{self.path}: cannot make the lock file {self.lock_path} ({exc.strerror})"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_pid(fd)
                os.close(fd)
                who = f"pid {holder}" if holder else "a process that is starting"
                raise WorkbenchError(
                    f"{self.path}: in use by another workbench process ({who}, lock "
                    f"{self.lock_path}); wait for it to end or stop it"
                ) from None
            # a holder that released between our open and flock unlinked that file: lock the
            # file now at the path instead, or two writers would each hold a different inode
            try:
                same = os.stat(self.lock_path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        """Drop the lock and remove the sidecar file (removed while held, see :meth:`acquire`)."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.lock_path)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    """The pid written in a lock file (None while its holder has not written it yet)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
