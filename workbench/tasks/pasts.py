"""``workbench.pasts``: conditioned forward pasts of a scene whose one moving body rests on a flat
ground: throws that PyBullet brings to rest on the final face, carried onto the final pose and
refined until PyBullet confirms them; the task of ``workbench pasts``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reverse.pasts.conditioned import CONDITIONED_BUDGET, MAX_THROWS_PER_PAST
from reverse.runs.verify import DEFAULT_RADIUS
from workbench.errors import SceneError
from workbench.tasks.inputs import (
    check_count,
    check_positive,
    check_seed,
    pose_tolerances,
    scene_input,
    seed_entropy,
    where,
)
from workbench.tasks.result import TaskResult

__all__ = ["pasts", "PastsResult", "CONDITIONED_BUDGET", "MAX_THROWS_PER_PAST", "DEFAULT_RADIUS"]


@dataclass
class PastsResult(TaskResult):
    """Conditioned forward pasts.

    Attributes
    ----------
    kept : list
        The confirmed pasts, in throw order: ``.trajectory`` (PyBullet's motion from the refined
        release), ``.earliest`` (n_bodies, 13).
    tried : list
        One outcome per throw tried (status, residuals, PyBullet runs).
    summary : dict
        Counts and medians (``kept``, ``asked``, ``throws``, ``by_status``, ...).
    body : int
        The moving body's index.
    asked : int
    complete : bool
        As many pasts as asked were found.
    entropy : int
    wall_seconds : float
    """

    scene: Any
    kept: list
    tried: list
    summary: dict
    body: int
    asked: int
    dt: float
    duration: float
    max_throws: int
    settings: dict
    entropy: int
    start_overlap: float
    wall_seconds: float
    timestamp: bool = False

    @property
    def complete(self) -> bool:
        return len(self.kept) == self.asked

    def save(self, path: str | os.PathLike) -> Path:
        """Write the file ``workbench pasts`` writes (:func:`reverse.pasts.files.
        write_conditioned_pasts`); refused when no past was found."""
        from reverse.pasts.files import write_conditioned_pasts
        from workbench.store.lock import output_lock

        if not self.kept:
            raise SceneError("-n", "", "no past was found: nothing to write")
        path = Path(path)
        with output_lock(path):
            write_conditioned_pasts(
                path, self.scene, self.kept, self.tried, self.summary, body=self.body,
                dt=self.dt, asked=self.asked, max_throws=self.max_throws,
                settings=self.settings, entropy=self.entropy, start_overlap=self.start_overlap,
                timestamp=self.timestamp,
            )  # fmt: skip
        return path

    def report_lines(self) -> list[str]:
        """What the sample took, its residuals, and its earliest states' range."""
        s, body = self.summary, self.body
        statuses = ", ".join(f"{s_} {n}" for s_, n in s["by_status"].items())
        speed = [float(np.linalg.norm(r.earliest[body, 7:10])) for r in self.kept]
        spin = [float(np.linalg.norm(r.earliest[body, 10:13])) for r in self.kept]
        return [
            f"conditioned forward pasts: kept {s['kept']} of {s['asked']} asked from "
            f"{s['throws']} throws ({statuses})",
            f"PyBullet runs: {s['pybullet_runs']} in {self.wall_seconds:.1f} s, "
            f"{s['pybullet_runs_per_kept']:.3g} per kept past (refinement "
            f"{s['refinement_runs_per_kept']:.3g}); median residual "
            f"{s['median_residual_position_m']:.3g} m, {s['median_residual_angle_deg']:.3g} deg",
            f"earliest states: speed {min(speed):.3g}-{max(speed):.3g} m/s, spin "
            f"{min(spin):.3g}-{max(spin):.3g} rad/s",
        ]


def pasts(
    scene,
    n: int,
    *,
    set: Mapping[str, Any] | None = None,  # noqa: A002 - named as the command's --set
    dt: float | None = None,
    duration: float | None = None,
    seed: int | None = None,
    workers: int | str = 1,
    max_throws: int | None = None,
    verify_budget: int | None = None,
    verify_tolerance: str | Sequence[float] = "0.01,5",
    force: bool = False,
    timestamp: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> PastsResult:
    """Sample ``n`` pasts of ``scene`` forward: motions PyBullet brings to rest at the scene's
    state (``workbench pasts``); throw i draws from ``SeedSequence(seed, spawn_key=(i,))``, so
    the pasts are the same bits for any ``workers``.

    Parameters
    ----------
    scene : str or path
        A scene file or a shipped scene's name whose one moving body rests on a flat ground.
    n : int
        Pasts to sample.
    set : dict, optional
        Scene parameters to override (``--set``).
    dt, duration : float, optional
        Time step and the pasts' duration, s (the scene's by default).
    seed : int, optional
        Entropy of the throws (default: fresh, stored).
    workers : int or str
        ``N`` processes, ``"tcp://HOST:PORT"`` or ``"local:N"``.
    max_throws : int, optional
        Most throws to try (default: :data:`~reverse.pasts.conditioned.MAX_THROWS_PER_PAST` × n).
    verify_budget : int, optional
        Most PyBullet runs of one refinement.
    verify_tolerance : str
        ``"M,DEG[,M,DEG]"``: the rest pose's tolerance, then the release's radius.
    force : bool
        Run above the bound on record memory.
    timestamp : bool
        Record the creation time in the saved file.
    progress : callable, optional
        ``progress(done, total)`` in pasts; None is silent.

    Returns
    -------
    PastsResult
        ``.kept``, ``.summary``, ``.to_xarray()``, ``.save(path)``.

    Examples
    --------
    >>> import workbench
    >>> p = workbench.pasts("markov_block", 1, seed=1, duration=1.0)
    >>> p.complete, len(p.kept)
    (True, 1)
    """
    from reverse.pasts.conditioned import conditioned_pasts, conditioned_summary, final_rest_body
    from reverse.runs.run import plan_reverse_run
    from reverse.runs.verify import verify_settings
    from workbench.sim.forward import start_overlap

    given = scene_input(scene, set)
    scene = given.scene
    if duration is None:
        if "duration" not in scene.settings.model_fields_set:
            raise SceneError(
                "--duration", "", "expected the pasts' duration, s (the scene sets none)"
            )
        duration = scene.settings.duration
    for name, value in (("dt", dt), ("duration", duration)):
        check_positive(name, value)
    check_seed(seed)
    check_count("-n", n, "past")
    if max_throws is not None:
        check_count("--max-throws", max_throws, "throw")
    place = where(workers)
    tolerance, radius = pose_tolerances(verify_tolerance, DEFAULT_RADIUS)
    budget = CONDITIONED_BUDGET if verify_budget is None else verify_budget
    check_count("--verify-budget", budget, "PyBullet run")
    step = dt or scene.settings.dt
    option = "--dt" if dt else "--duration"
    held = n + (1 if place.scheduler else place.workers)  # kept + in flight here
    plan = plan_reverse_run(duration, step, len(scene.bodies), runs=n, held=held, option=option)
    problem = plan.problem("forward")
    if problem and not force:
        what = f"{n} pasts of {duration:g} s at dt = {step:g} s are"
        raise SceneError(option, "", f"{what} {problem}; pass --force to run them anyway")
    body = final_rest_body(scene, step, tolerance)
    limit = MAX_THROWS_PER_PAST * n if max_throws is None else max_throws
    entropy = seed_entropy(seed)
    if given.path is None:
        raise ValueError("pasts rebuilds the scene in workers from its file: pass its path")
    from workbench.ensemble.run import SceneRef

    ref = SceneRef(str(given.path), tuple(sorted(dict(given.overrides).items())), dt=dt)
    settings = verify_settings(budget, tolerance, radius)
    t0 = time.perf_counter()
    kept, tried = conditioned_pasts(
        ("scene", ref), n, entropy, duration=duration, settings=settings, max_throws=limit,
        trajectory=True, workers=place.workers, scheduler=place.scheduler, progress=progress,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    return PastsResult(
        scene=scene, kept=kept, tried=tried, summary=conditioned_summary(kept, tried, n),
        body=body, asked=n, dt=step, duration=duration, max_throws=limit, settings=settings,
        entropy=entropy, start_overlap=start_overlap(scene.with_settings(dt=step)).depth,
        wall_seconds=wall, timestamp=timestamp,
    )  # fmt: skip
