"""The processes of a local Dask cluster, forked from one that has done their imports once.

``python -m workbench.ensemble.forked_cluster SPEC`` (``SPEC``: JSON ``{"scheduler": [...],
"worker": [...], "workers": n}``, the arguments of ``dask scheduler`` and of ``dask worker``)
imports Dask's command lines and what the scheduler and the workers preload
(:mod:`workbench.ensemble.scheduler_preload`, :mod:`workbench.ensemble.preload`: the scene model,
scipy, PyBullet's module), then forks the scheduler and ``n`` workers, each running Dask's own
command line with those arguments, and prints their process ids as one JSON line. It then waits
for them. :func:`~workbench.ensemble.cluster.local_dask_cluster` starts it and stops every
process by its id.

Why: each ``dask`` process imported Dask and its preload by itself, ≈ 1.7-2.5 s of CPU each, three
times for a 2-worker cluster, on the cores the realizations need while the cluster starts (the
driver runs realizations meanwhile). Forked, the imports are done once: measured 2026-12-08 on
the 2-core machine (load ≈ 1.9, two samples each), 2 workers registered 2.2-2.8 s after the start
against 3.3-4.5 s for three separate ``dask`` processes. A process pool's fork server does the
same for ``--workers N``.

Nothing runs before the forks but imports: no event loop, no thread but the lifeline's
(:mod:`workbench.ensemble.lifeline`, which each child starts again for itself: a thread does not
survive ``fork``), so each child starts Dask as ``dask scheduler`` or ``dask worker`` would.
"""

from __future__ import annotations

import json
import os
import signal
import sys

__all__ = ["main"]


def _fork(command, args: list[str]) -> int:
    """Fork a child that runs Dask's ``command`` line (a click command) with ``args``."""
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        from workbench.ensemble import lifeline

        lifeline.watch()  # the parent's watcher thread is not in this process
        command.main(args=args, prog_name="dask", standalone_mode=False)
        code = 0
    except SystemExit as exc:  # Dask's command line ends so on a bad argument or a signal
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os._exit(code)  # never back into the parent's code
    return 0  # not reached


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    spec = json.loads(argv[0])
    # the imports, once, before the forks (the module docstring)
    import distributed.cli.dask_scheduler as dask_scheduler
    import distributed.cli.dask_worker as dask_worker

    import workbench.ensemble.lifeline  # noqa: F401  (this process ends with the driver too)
    import workbench.ensemble.preload  # noqa: F401
    import workbench.ensemble.scheduler_preload  # noqa: F401

    pids = [_fork(dask_scheduler.main, spec["scheduler"])]
    pids += [_fork(dask_worker.main, spec["worker"]) for _ in range(int(spec["workers"]))]
    print(json.dumps(pids), flush=True)

    def stop(signum, frame):  # asked to stop: so are the children
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
