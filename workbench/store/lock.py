"""An advisory lock on an output file: one writer at a time, whatever the command.

Every command that writes an output file (``run``, ``ensemble``, ``sensitivity``, ``reverse``,
``pasts``, ``markov train``/``compare``, ``infer``, ``design``, ``inverse``, ``validate``,
``replay``: :func:`workbench.cli.common.hold_output_lock`) holds :func:`output_lock` on the file
until it has written, so two writers never share a path: ``workbench run -o X`` while
``workbench ensemble -o X`` writes X is refused, naming the holder (issue 39, case 7; HDF5's own
rule is that one process writes a file).

The lock is :func:`fcntl.flock` on a sidecar file ``FILE.lock`` beside the output, holding the
pid of the writer. Why a sidecar and not the output itself: a fresh store is built under a
temporary name and moved onto ``FILE`` with :func:`os.replace` (``TrajectoryStore.create``, and
``write_trajectory`` likewise), which gives the path a new inode, so a lock on the old inode would
not stop a second writer from replacing the file under a driver that is resuming it. Why
``flock``: the kernel releases it when its holder dies, SIGKILL included, so a killed driver never
leaves a stale lock (the sidecar file may stay; a lock on it is free until someone holds it).
Readers take no lock; a reader that fails on a file another process writes (HDF5 keeps no
reader's view consistent with a writer's) says so, naming the writer (:func:`busy_error`),
rather than calling the file damaged.

A disk without a free byte (``ENOSPC`` writing the pid, or making the file) is the promised one
line (:class:`~workbench.store.failures.StoreWriteError`, "disk full while writing FILE: nothing
written"), and the sidecar is removed rather than left empty.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from workbench.errors import StoreError
from workbench.store.failures import StoreWriteError, is_disk_full

__all__ = ["OutputLock", "busy_error", "lock_path", "output_lock", "writer_of"]


def lock_path(path: str | os.PathLike) -> Path:
    """The sidecar lock file of the output ``path`` (``FILE.lock``)."""
    path = Path(path)
    return path.with_name(path.name + ".lock")


#: The locks this process holds: (pid, lock file) -> [fd, holders]. A command holds the lock of
#: its output for all its work and the library function it calls takes it again (``workbench
#: sensitivity`` around :func:`~workbench.ensemble.run.run_ensemble`): within one process the
#: lock is counted, not taken twice (a second ``flock`` on a new descriptor would refuse its own
#: process). The pid keeps a forked child from counting its parent's locks as its own.
_HELD: dict[tuple[int, str], list[int]] = {}
_HELD_GUARD = threading.Lock()


class OutputLock:
    """Hold the write lock of an output file (a context manager; reentrant within a process:
    every other process is refused while any holder in this one holds it).

    Parameters
    ----------
    path : path-like
        The output file (it need not exist yet).

    Raises
    ------
    StoreError
        On entering: another process holds the lock (its pid is named), or the lock file cannot
        be made.
    StoreWriteError
        On entering: the disk is full (nothing written, no lock file left).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.lock_path = lock_path(self.path)
        self._fd: int | None = None
        self._key: tuple[int, str] | None = None

    def acquire(self) -> OutputLock:
        """Take the lock, or raise :class:`StoreError` naming the process that holds it."""
        key = (os.getpid(), os.path.abspath(self.lock_path))
        with _HELD_GUARD:
            if key in _HELD:  # this process holds it already: one more holder
                _HELD[key][1] += 1
                self._key = key
                return self
            self._take()
            _HELD[key] = [self._fd, 1]
            self._key = key
        return self

    def _take(self) -> None:
        """The ``flock`` of :meth:`acquire` (the first holder in this process)."""
        while True:
            try:
                fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                if is_disk_full(exc):
                    raise StoreWriteError(self.path, 0, 0, True, resumable=False) from None
                raise StoreError(
                    f"{self.path}: cannot make the lock file {self.lock_path} ({exc.strerror})"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_pid(fd)
                os.close(fd)
                who = f"pid {holder}" if holder else "a process that is starting"
                raise StoreError(
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
        try:
            os.ftruncate(fd, 0)
            text = f"{os.getpid()}\n".encode()
            if os.write(fd, text) != len(text):
                raise OSError(28, "No space left on device")  # a short write: no byte left
        except OSError as exc:
            # no pid written: remove the (empty) sidecar while it is held, then refuse
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.lock_path)
            os.close(fd)
            if is_disk_full(exc):
                raise StoreWriteError(self.path, 0, 0, True, resumable=False) from None
            raise StoreError(
                f"{self.path}: cannot write the lock file {self.lock_path} ({exc.strerror})"
            ) from None
        self._fd = fd

    def release(self) -> None:
        """Drop the lock and remove the sidecar file (removed while held, see :meth:`acquire`)
        when the last holder in this process releases it."""
        key, self._key = getattr(self, "_key", None), None
        if key is None:
            return
        with _HELD_GUARD:
            held = _HELD[key]
            held[1] -= 1
            if held[1] > 0:
                return
            del _HELD[key]
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.lock_path)
            os.close(held[0])
            self._fd = None

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def output_lock(path: str | os.PathLike | None) -> Iterator[OutputLock | None]:
    """Hold the one write lock of the output file ``path`` for the ``with`` block (None: no
    output, nothing held). The function every writing command calls, around the whole of its
    work (compute and write), so that a second writer of any kind is refused at once.

    Raises
    ------
    StoreError
        Another process writes ``path`` (its pid is named).
    StoreWriteError
        The disk is full (exit status 1, nothing written, no lock file left).
    """
    if path is None:
        yield None
        return
    with OutputLock(path) as lock:
        yield lock


def _read_pid(fd: int) -> int | None:
    """The pid written in a lock file (None while its holder has not written it yet)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def writer_of(path: str | os.PathLike) -> int | None:
    """The pid of the live workbench process writing ``path``, or None.

    Read from the sidecar without taking its lock (a reader must never make a starting writer
    fail): its pid, if that process is alive. A writer that ended released its lock and removed
    the sidecar; a killed one left a sidecar naming a dead pid.
    """
    try:
        pid = int(lock_path(path).read_text(encoding="ascii").strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if pid <= 0 or pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # alive, another user's
        pass
    return pid


def busy_error(path: str | os.PathLike) -> StoreError | None:
    """The one line for a read of ``path`` that failed while another process writes it (None
    when nobody does: the failure is then the file's own)."""
    pid = writer_of(path)
    if pid is None:
        return None
    return StoreError(
        f"{path}: being written by another workbench process (pid {pid}, lock "
        f"{lock_path(path)}); read it when that process has ended"
    )
