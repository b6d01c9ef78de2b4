"""A local Dask cluster's processes end with the driver that started them (issue 39, case 4).

Imported by the scheduler and the workers of :func:`~workbench.ensemble.cluster.
local_dask_cluster` (``--preload workbench.ensemble.lifeline``). The driver keeps the write end
of a pipe and gives each process its read end, named by :data:`FD_VARIABLE`; a thread here
blocks reading it. Nothing is ever written: the read returns only when every write end is
closed, which the kernel does when the driver ends, however it ends (SIGKILL, a crash, an
out-of-memory kill). The process then removes the cluster's scratch directory
(:data:`SCRATCH_VARIABLE`, which the driver's own clean-up would have removed) and ends at once.

Measured (2026-12-03, 2 workers, shared machine): after SIGKILL of ``workbench ensemble
--scheduler local`` mid-run the scheduler and both workers were gone 0.10 s later, its port
closed and the scratch directory removed, where before all three were alive after 90 s
(issue 39) and 10 s (the test, ``tests/unit/workbench/ensemble/test_cluster.py``). A death
signal (Linux ``prctl(PR_SET_PDEATHSIG)`` through ctypes) does not fit: it fires when the
*thread* that started the child ends (measured: a ``sleep`` started so from a thread was killed
as that thread ended), and the driver starts its cluster on a short-lived thread (``_Late`` in
``executors.py``), so the cluster would die as soon as it was up. A poll of the parent's pid
would work too, but late by its period.
"""

from __future__ import annotations

import os
import shutil
import threading

__all__ = ["FD_VARIABLE", "SCRATCH_VARIABLE", "watch"]

#: The environment variable naming the file descriptor of the pipe's read end.
FD_VARIABLE = "WORKBENCH_LIFELINE_FD"
#: The environment variable naming the directory to remove when the driver is gone.
SCRATCH_VARIABLE = "WORKBENCH_LIFELINE_SCRATCH"


def _wait_and_end(fd: int, scratch: str | None) -> None:
    try:
        while os.read(fd, 1):  # nothing is written: b"" (end of file) once the driver is gone
            pass
    except OSError:
        pass  # a closed or broken descriptor says the same
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    os._exit(0)  # at once: no graceful close, the driver that wanted the results is gone


def watch(environ=os.environ) -> bool:
    """Start the thread that ends this process when the driver's pipe closes; ``False`` (and
    nothing started) when ``environ`` names no pipe."""
    fd = environ.get(FD_VARIABLE)
    if not fd:
        return False
    threading.Thread(
        target=_wait_and_end,
        args=(int(fd), environ.get(SCRATCH_VARIABLE)),
        name="workbench-lifeline",
        daemon=True,
    ).start()
    return True


watch()
