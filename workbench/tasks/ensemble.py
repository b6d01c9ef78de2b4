"""``workbench.ensemble``: a Monte Carlo ensemble of a random scene into one HDF5 file, with its
statistics; the task of ``workbench ensemble`` (and of ``workbench stats``' numbers).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import OptionError
from workbench.tasks.inputs import (
    check_count,
    check_positive,
    check_seed,
    note,
    scene_input,
    where,
)
from workbench.tasks.result import StoreResult, temporary_output

__all__ = ["ensemble", "EnsembleResult", "ObserverStatistics"]


@dataclass(frozen=True)
class ObserverStatistics:
    """Mean response, confidence band and convergence of one observer over an ensemble.

    Attributes
    ----------
    time : ndarray, shape (nt,)
        s.
    mean, lower, upper : ndarray, shape (nt, k)
        Mean response and the band at probability ``p_c`` (Batou & Soize 2012, Sec. 3.4), in
        the observer's unit.
    convergence : ndarray, shape (m,)
        Root mean square of the response over the first 1..m realizations.
    p_c : float
    unit : str
    """

    time: np.ndarray
    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    convergence: np.ndarray
    p_c: float
    unit: str


@dataclass
class EnsembleResult(StoreResult):
    """An ensemble, computed into :attr:`path` as it ran.

    Attributes
    ----------
    path : Path
        The file (``output``, or a temporary file); :meth:`save` copies it.
    n_realizations, ran : int
        Realizations in the file, and run by this call.
    failed : dict of int to str
        Realizations that did not finish "ok": index -> status and message.
    entropy : int
        The seed entropy (given, or drawn and stored).
    wall_seconds : float
    notes : list of str
        Remarks the command prints (a scene that declares nothing random).
    """

    path: Path
    n_realizations: int
    ran: int
    failed: dict[int, str]
    entropy: int
    wall_seconds: float
    notes: list[str] = field(default_factory=list)

    def statistics(self, observer: str, p_c: float = 0.9) -> ObserverStatistics:
        """Mean, band at probability ``p_c`` and convergence of ``observer`` (streamed from the
        file: bounded memory)."""
        from workbench.ensemble.streaming import observer_statistics
        from workbench.store import TrajectoryStore

        with TrajectoryStore.open(self.path) as store:
            name = f"observers/{observer}"
            mean, lower, upper, conv = observer_statistics(store, name, p_c)
            unit = str(store.dataset_attrs(name).get("units", ""))
            time = np.asarray(store.schema.time, dtype=float)
        return ObserverStatistics(time, mean, lower, upper, conv, p_c, unit)

    def summary(self, p_c: float = 0.9) -> dict:
        """What ``workbench stats`` reports (JSON-ready): realizations, failures, sampled
        parameters, and per observer the peaks of the nominal and mean responses and the widest
        band (:func:`workbench.ensemble.report.ensemble_summary`)."""
        from workbench.ensemble.report import ensemble_summary

        return ensemble_summary(self.path, p_c)

    def summary_text(self, p_c: float = 0.9) -> str:
        """:meth:`summary` as ``workbench stats`` prints it."""
        from workbench.ensemble.report import summary_lines

        return "\n".join(summary_lines(self.path, self.summary(p_c)))


def ensemble(
    scene,
    n: int,
    *,
    set: Mapping[str, Any] | None = None,  # noqa: A002 - named as the command's --set
    dt: float | None = None,
    duration: float | None = None,
    seed: int | None = None,
    workers: int | str = 1,
    output: str | os.PathLike | None = None,
    compression: str | None = "gzip",
    resume: bool = False,
    force: bool = False,
    timestamp: bool = False,
    dashboard: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> EnsembleResult:
    """Run ``n`` realizations of a random scene, with its nominal run, into one HDF5 file
    (``workbench ensemble``). Realization i draws from ``SeedSequence(seed, spawn_key=(i,))``:
    the file has the same bytes whatever ``workers``.

    Parameters
    ----------
    scene : str, path or Scene
        A scene file or script, a shipped scene's name, or a :class:`Scene` loaded from a file.
    n : int
        Number of realizations.
    set : dict, optional
        Scene parameters to override (``--set``).
    dt, duration : float, optional
        Time step and simulated time, s.
    seed : int, optional
        Seed entropy (default: a fresh one, stored in the file and in ``.entropy``).
    workers : int or str
        ``N`` processes (1: this process), ``"auto"``, ``"tcp://HOST:PORT"`` (a Dask scheduler)
        or ``"local:N"`` (N Dask workers on 127.0.0.1 for the job).
    output : path, optional
        The file to write as the ensemble runs (default: a file in a new temporary folder,
        left for the result to read; ``.save`` copies it).
    compression : {"gzip", None}
        Of the records.
    resume : bool
        Fill in the realizations missing from an interrupted ``output``.
    force : bool
        Run realizations above the run-size bounds.
    timestamp : bool
        Record the creation time in the file.
    dashboard : str, optional
        ``HOST:PORT`` of Dask's dashboard, with ``workers="local:N"``.
    progress : callable, optional
        ``progress(done, total)`` in realizations; None (default) is silent.

    Returns
    -------
    EnsembleResult
        ``.statistics(observer)``, ``.summary()``, ``.to_xarray()``, ``.save(path)``.

    Examples
    --------
    >>> import workbench
    >>> e = workbench.ensemble("random_box", 4, seed=1, duration=0.1)
    >>> e.ran, e.failed
    (4, {})
    >>> s = e.statistics("com")
    >>> s.mean.shape == s.upper.shape == (s.time.size, 3)
    True
    >>> e.to_xarray().position.sizes["realization"]
    4
    >>> e.summary_text().splitlines()[0].split(": ", 1)[1]
    "4 of 4 realizations completed; status {'ok': 4}; seed 1"
    """
    from workbench.ensemble.executors import start_fork_server
    from workbench.ensemble.run import LOCAL_SCHEDULER, run_ensemble

    place = where(workers)
    check_count("-n", n, "realization")
    check_seed(seed)
    for name, value in (("dt", dt), ("duration", duration)):
        check_positive(name, value, what="number of seconds", finite=False)
    if dashboard is not None and place.scheduler != LOCAL_SCHEDULER:
        raise OptionError(
            "--dashboard", "only with --scheduler local (a cluster you started has its own)"
        )
    if place.scheduler is None and place.workers > 1:
        # the pool's fork server imports what workers need while the scene loads here
        start_fork_server()
    given = scene_input(scene, set)
    ref = given.ref("an ensemble", dt=dt, duration=duration, force=force)
    loaded = ref.load()  # validate before anything runs
    notes: list[str] = []
    if not loaded.is_random:
        note(
            notes,
            f"note: {given.path} declares nothing random; every realization will equal the "
            "nominal run",
        )
    out = Path(output) if output is not None else temporary_output(f"{given.stem}_ensemble")
    done = run_ensemble(
        ref,
        n,
        out,
        entropy=seed,
        workers=place.workers,
        scheduler=place.scheduler,
        resume=resume,
        progress=progress,
        timestamp=timestamp,
        dashboard=dashboard,
        compression=compression,
    )
    return EnsembleResult(
        path=out,
        n_realizations=done.n_realizations,
        ran=done.ran,
        failed=dict(done.failed),
        entropy=done.entropy,
        wall_seconds=done.wall_seconds,
        notes=notes,
    )
