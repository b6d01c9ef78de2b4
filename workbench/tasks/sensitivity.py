"""``workbench.sensitivity``: global sensitivity of a scene's outputs to its random inputs,
Sobol' indices or Morris screening through SALib, computed as a seeded ensemble whose realization
i takes its inputs from row i of the design; the task of ``workbench sensitivity``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import OptionError
from workbench.tasks.inputs import check_count, check_positive, check_seed, scene_input, where
from workbench.tasks.result import StoreResult, temporary_output

__all__ = ["sensitivity", "SensitivityResult"]


@dataclass
class SensitivityResult(StoreResult):
    """A sensitivity analysis, computed into :attr:`path` (the ensemble layout plus ``/design``
    and ``/sensitivity/<output>/``).

    Attributes
    ----------
    path : Path
    indices : dict
        Output name -> index name (``S1``, ``ST``, ``S1_conf``, ``mu_star``, ...) -> array,
        whose last axis runs over :attr:`inputs`.
    inputs : tuple of str
        The inputs (or groups) the indices are of.
    method : str
    entropy : int
    ran : int
        Realizations run by this call.
    wall_seconds, analysis_seconds : float
    """

    path: Path
    indices: dict
    inputs: tuple
    method: str
    entropy: int
    ran: int
    wall_seconds: float
    analysis_seconds: float

    def lines(self) -> list[str]:
        """The indices as ``workbench sensitivity`` and ``stats`` print them."""
        from workbench.ensemble.report import sensitivity_lines

        return sensitivity_lines(self.path)


def sensitivity(
    scene,
    n: int,
    *,
    output: Sequence[str] = (),
    observer: Sequence[str] = (),
    method: str = "sobol",
    group_by: str = "input",
    second_order: bool = False,
    set: Mapping[str, Any] | None = None,  # noqa: A002 - named as the command's --set
    dt: float | None = None,
    duration: float | None = None,
    seed: int | None = None,
    workers: int | str = 1,
    file: str | os.PathLike | None = None,
    resume: bool = False,
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> SensitivityResult:
    """Sobol' indices (S1, ST, with bootstrap intervals) or Morris screening (mu*, sigma) of a
    scene's outputs to its random inputs (``workbench sensitivity``).

    Parameters
    ----------
    scene : str, path or Scene
        A scene file or script with random inputs, or a shipped scene's name.
    n : int
        Sobol': base sample N, a power of 2 (N (G + 2) runs for G inputs); Morris: trajectories.
    output : sequence of str
        Outputs declared under the scene's ``outputs:`` (default: all).
    observer : sequence of str
        ``NAME[.COMPONENT]``: indices at every recorded time of that observer channel.
    method : {"sobol", "morris"}
    group_by : {"input", "body", "kind"}
    second_order : bool
        Also S2 (Sobol' only).
    set : dict, optional
        Scene parameters to override.
    dt, duration : float, optional
        s.
    seed : int, optional
        Seed entropy (default: fresh, stored).
    workers : int or str
        ``N`` processes, ``"auto"``, ``"tcp://HOST:PORT"`` or ``"local:N"``.
    file : path, optional
        The HDF5 file to write as it runs (default: a temporary file; ``.save`` copies).
    resume : bool
        Fill in the realizations missing from an interrupted ``file``.
    force : bool
        Run realizations above the run-size bounds.
    progress : callable, optional
        ``progress(done, total)`` in realizations; None is silent.

    Returns
    -------
    SensitivityResult
        ``.indices``, ``.inputs``, ``.to_xarray()``, ``.save(path)``.

    Examples
    --------
    >>> import workbench
    >>> s = workbench.sensitivity("sliding_block_random", 4, output=["stop"], seed=1)
    >>> sorted(s.indices["stop"])[:2], len(s.inputs) == s.indices["stop"]["S1"].shape[-1]
    (['S1', 'S1_conf'], True)
    """
    from workbench.analysis.sensitivity import run_sensitivity

    outputs, observers = [str(x) for x in output], [str(x) for x in observer]
    place = where(workers)
    check_count("-n", n, "sample")
    check_seed(seed)
    for name, value in (("dt", dt), ("duration", duration)):
        check_positive(name, value, what="number of seconds", finite=False)
    if second_order and method != "sobol":
        raise OptionError("--second-order: only with --method sobol")
    given = scene_input(scene, set)
    ref = given.ref("a sensitivity analysis", dt=dt, duration=duration, force=force)
    out = Path(file) if file is not None else temporary_output(f"{given.stem}_sensitivity")
    done = run_sensitivity(
        ref, out, outputs=outputs, observers=observers, method=method, n=n, grouping=group_by,
        second_order=second_order, entropy=seed, workers=place.workers,
        scheduler=place.scheduler, resume=resume, progress=progress,
    )  # fmt: skip
    return SensitivityResult(
        path=out, indices=done.indices, inputs=tuple(done.inputs), method=method,
        entropy=done.spec.entropy, ran=done.ran, wall_seconds=done.wall_seconds,
        analysis_seconds=done.analysis_seconds,
    )  # fmt: skip
