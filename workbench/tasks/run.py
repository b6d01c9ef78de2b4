"""``workbench.run``: a scene run forward in PyBullet, the task of ``workbench run``."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.sim.forward import MAX_RECORD_BYTES, MAX_STEPS
from workbench.tasks.inputs import check_positive, note, scene_input
from workbench.tasks.result import TaskResult

__all__ = ["run", "RunResult", "MAX_STEPS", "MAX_RECORD_BYTES"]


@dataclass
class RunResult(TaskResult):
    """A forward run.

    Attributes
    ----------
    trajectory : Trajectory
        The records: ``trajectory.time`` (nt,) s, ``trajectory.states`` (nt, n_bodies, 13),
        observers, diagnostics; ``status`` ``"ok"`` or why the run stopped early.
    scene : Scene
        The scene as run (settings overrides applied).
    start_overlap : float
        Deepest overlap between two bodies in the scene's state, m.
    wall_seconds : float
    notes : list of str
        Warnings the command prints (a deep overlap in the scene's state).
    timestamp : bool
        Whether :meth:`save` records the creation time.
    """

    trajectory: Any
    scene: Any
    start_overlap: float
    wall_seconds: float
    notes: list[str] = field(default_factory=list)
    timestamp: bool = False

    @property
    def time(self):
        """Record times, shape (nt,), s."""
        return self.trajectory.time

    @property
    def status(self) -> str:
        """``"ok"``, or why the run stopped (the file keeps the records before it)."""
        return self.trajectory.status

    def save(self, path: str | os.PathLike) -> Path:
        """Write the run as ``workbench run`` does (:func:`workbench.store.write_trajectory`)."""
        from workbench.scene.loader import scene_to_json
        from workbench.store import write_trajectory
        from workbench.store.lock import output_lock

        path = Path(path)
        with output_lock(path):
            write_trajectory(
                path,
                self.trajectory,
                scene_text=self.scene.source_text,
                scene_json=scene_to_json(self.scene),
                timestamp=self.timestamp,
                extra_attrs={"start_overlap": self.start_overlap},
            )
        return path


def run(
    scene,
    *,
    set: Mapping[str, Any] | None = None,  # noqa: A002 - named as the command's --set
    dt: float | None = None,
    duration: float | None = None,
    force: bool = False,
    timestamp: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Run ``scene`` forward in PyBullet (``workbench run``).

    Parameters
    ----------
    scene : str, path or Scene
        A scene file or script, a shipped scene's name, or a loaded :class:`Scene`.
    set : dict, optional
        Scene parameters to override (``--set NAME=VALUE``).
    dt, duration : float, optional
        Time step and simulated time, s (the scene's by default).
    force : bool
        Run even when the run is estimated beyond the step and record-memory bounds.
    timestamp : bool
        Record the creation time in the saved file (off: the same inputs, the same bytes).
    progress : callable, optional
        ``progress(done, total)`` in steps; None (default) is silent.

    Returns
    -------
    RunResult
        ``.trajectory``, ``.time``, ``.to_xarray()``, ``.save(path)``.

    Examples
    --------
    >>> import workbench
    >>> r = workbench.run("falling_object", duration=0.2)
    >>> r.status, r.time.shape
    ('ok', (21,))
    >>> z = r.to_xarray().observer_height.sel(realization=0, component="z")
    >>> z.dims, z.attrs["units"], round(float(z.isel(time=-1)), 3)
    (('time',), 'm', -0.196)
    """
    from workbench.sim.forward import check_run_size, run_scene, start_overlap

    given = scene_input(scene, set)
    for name, value in (("dt", dt), ("duration", duration)):
        check_positive(name, value, what="number of seconds", finite=False)
    resolved = given.scene.with_settings(dt=dt, duration=duration)
    check_run_size(resolved, force=force)
    overlap = start_overlap(resolved)
    notes: list[str] = []
    if overlap.warning(given.path or resolved.source):
        note(notes, overlap.warning(given.path or resolved.source))
    t0 = time.perf_counter()
    traj = run_scene(resolved, progress=progress, force=force)
    return RunResult(
        trajectory=traj,
        scene=resolved,
        start_overlap=overlap.depth,
        wall_seconds=time.perf_counter() - t0,
        notes=notes,
        timestamp=timestamp,
    )
