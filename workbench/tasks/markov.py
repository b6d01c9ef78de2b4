"""``workbench.markov_train`` and ``workbench.markov_compare``: the contact-transition table of
the reverse stepper's Markov model (Twigg & James 2008 §4, Figs. 9-10), trained from forward
throws, and its plausibility measure against them; the tasks of ``workbench markov train`` and
``workbench markov compare``.

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, SIGGRAPH 2008.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reverse.goals.markov import KINDS, STATE_NAMES
from reverse.pasts.conditioned import CONDITIONED_BUDGET
from reverse.pasts.training import MAX_TRAIN_STEPS
from uncertainty.two_sample import DEFAULT_BINS
from workbench.errors import MarkovModelError, SceneError
from workbench.tasks.inputs import (
    check_count,
    check_positive,
    check_seed,
    scene_input,
    seed_entropy,
)
from workbench.tasks.result import TaskResult

__all__ = [
    "markov_train",
    "markov_compare",
    "TrainResult",
    "CompareResult",
    "BACKWARD_OPTIONS",
    "KINDS",
    "CONDITIONED_BUDGET",
    "DEFAULT_BINS",
    "MAX_TRAIN_STEPS",
]

#: ``backward=`` of :func:`markov_compare` (``--backward NAME=VALUE``): the names, the setting
#: each sets (:data:`reverse.pasts.samplers.BACKWARD_CONTROLS`) and how its value is read (the
#: values ``workbench reverse`` takes for the option of that name).
BACKWARD_OPTIONS = {
    "restitution-blend": ("restitution_blend", float),
    "angular-damping": ("angular_damping", float),
    "linear-damping": ("linear_damping", float),
    "contacts": ("persist_contacts", {"persist": True}.__getitem__),
    "heading": ("heading", {"scene": False, "random": True}.__getitem__),
}


@dataclass
class TrainResult(TaskResult):
    """A trained contact-transition table.

    Attributes
    ----------
    model : MarkovModel
        ``probabilities`` (4, 4): P(state at t - dt | state at t) per step, states
        :data:`~reverse.goals.markov.STATE_NAMES`; ``hazards`` (semi-Markov) or None.
    runs : list
        The forward throws it was counted from.
    entropy : int
    dt, duration, wall_seconds : float
    """

    model: Any
    runs: list
    entropy: int
    dt: float
    duration: float
    wall_seconds: float

    def save(self, path: str | os.PathLike) -> Path:
        """Write the table as JSON (``workbench markov train -o``)."""
        path = Path(path)
        try:
            self.model.save(path)
        except OSError as exc:
            raise MarkovModelError(f"{path}: cannot write: {exc.strerror}") from None
        return path

    def to_xarray(self):
        """The transition probabilities over (``state``, ``previous_state``)."""
        from workbench.store.xarray_view import make_dataset

        names = list(STATE_NAMES)
        variables = {
            "probabilities": (("state", "previous_state"), self.model.probabilities,
                              {"units": "1", "description": "P(state at t - dt | state at t)"}),
        }  # fmt: skip
        return make_dataset(variables, {"state": names, "previous_state": names})

    def lines(self) -> list[str]:
        """The table as ``workbench markov train`` prints it."""
        steps = sum(len(r.states) - 1 for r in self.runs)
        out = [
            f"{len(self.runs)} runs of {self.duration:g} s at dt = {self.dt:.6g} s ({steps} "
            f"steps) in {self.wall_seconds:.2f} s, seed {self.entropy}",
            "P(state at t - dt | state at t), per step:",
            "  t \\ t-dt " + "".join(f"{s:>10}" for s in STATE_NAMES),
        ]
        for i, name in enumerate(STATE_NAMES):
            out.append(f"  {name:>8} " + "".join(f"{x:10.5f}" for x in self.model.probabilities[i]))
        hazards = self.model.hazards
        if hazards is not None:
            dwell = ", ".join(
                f"{kind} {STATE_NAMES[i]} {hazards.mean_dwell(kind, i):.3g} s"
                for kind, i in sorted(hazards.tables)
            )
            out.append(f"mean dwell until a drop (semi-Markov): {dwell}")
        return out


def markov_train(
    scene,
    n: int = 1000,
    *,
    set: Mapping[str, Any] | None = None,  # noqa: A002 - named as the command's --set
    dt: float | None = None,
    duration: float | None = None,
    seed: int | None = None,
    workers: int = 1,
    kind: str = "plain",
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> TrainResult:
    """Throw the scene's one moving body ``n`` times forward and count its contact-state
    transitions (``workbench markov train``; [1]_ §4).

    Parameters
    ----------
    scene : str or path
        A scene with exactly one moving body, or a shipped scene's name.
    n : int
        Forward throws.
    set : dict, optional
        Scene parameters to override.
    dt, duration : float, optional
        s (the scene's by default).
    seed : int, optional
        Seed entropy (default: fresh, stored in the table).
    workers : int
        Processes.
    kind : {"plain", "semi"}
        A plain table, or one with dwell-time hazards per contact state.
    force : bool
        Train above the bound on steps.
    progress : callable, optional
        ``progress(done, total)`` in throws; None is silent.

    Returns
    -------
    TrainResult
        ``.model``, ``.to_xarray()``, ``.save(path)`` (the JSON table).

    Examples
    --------
    >>> import workbench
    >>> t = workbench.markov_train("markov_block", 4, seed=1, duration=0.5)
    >>> t.to_xarray().probabilities.shape
    (4, 4)
    """
    from reverse.pasts.training import thrown_body, train, training_problem

    given = scene_input(scene, set)
    thrown_body(given.scene)  # exactly one moving body, before any work
    for name, value in (("dt", dt), ("duration", duration)):
        check_positive(name, value, what="number of seconds")
    check_count("-n", n, "run")
    check_seed(seed)
    check_count("--workers", workers, "worker")
    dt = dt or given.scene.settings.dt
    duration = duration or given.scene.settings.duration
    problem = training_problem(n, duration, dt)  # refuses < 1 or uncountable steps too
    if problem and not force:
        raise SceneError("--duration", "", f"{problem}; pass --force to train anyway")
    entropy = seed_entropy(seed)
    sets = "".join(f" --set {k}={v}" for k, v in given.overrides)
    kinds = "" if kind == "plain" else f" --kind {kind}"  # plain: as before
    command = (
        f"workbench markov train {scene} -n {n} --seed {entropy} --dt {dt!r} "
        f"--duration {duration!r}{kinds}{sets}"
    )
    t0 = time.perf_counter()
    model, runs = train(
        given.path, n, entropy, overrides=given.overrides, dt=dt, duration=duration,
        workers=workers, command=command, progress=progress, kind=kind,
    )  # fmt: skip
    return TrainResult(model, runs, entropy, dt, duration, time.perf_counter() - t0)


@dataclass
class CompareResult(TaskResult):
    """The plausibility measure of a table.

    Attributes
    ----------
    measurement : object
        Per statistic the medians, the total-variation distances forward vs backward and
        forward vs forward (the floor), the classifier test (:mod:`reverse.pasts.measure`).
    entropy : int
    dt, duration, wall_seconds : float
    """

    measurement: Any
    entropy: int
    dt: float
    duration: float
    wall_seconds: float

    def save(self, path: str | os.PathLike) -> Path:
        """Write the report folder (``workbench markov compare -o``): ``plausibility.json``,
        ``sequences.png`` and ``statistics.png``; returns the folder."""
        from workbench.figures.plausibility import plot_measurement

        folder = Path(path)
        folder.mkdir(exist_ok=True)
        run = self.measurement
        (folder / "plausibility.json").write_text(run.to_json(), encoding="utf-8")
        self.figures = plot_measurement(
            run.figure_samples(), run.comparison.values, self.dt, folder
        )
        return folder

    def to_xarray(self):
        """Per ``statistic`` (its key; ``label`` and ``unit`` as coordinates): the medians of
        the throws, the second throws and the backward runs, and the total-variation distance
        forward vs backward (``tv``), its ``floor`` (forward vs forward) and their ``ratio``."""
        from workbench.store.xarray_view import make_dataset

        rows = self.measurement.comparison.rows
        dim = ("statistic",)

        def column(name):
            return [np.nan if r.get(name) is None else float(r[name]) for r in rows]

        variables = {
            name: (dim, column(name), {"units": "as the statistic's unit"})
            for name in ("median_forward", "median_forward2", "median_backward")
        }
        for name in ("tv", "floor", "ratio"):
            variables[name] = (dim, column(name), {"units": "1"})
        coords = {
            "statistic": [r["key"] for r in rows],
            "label": (dim, [r["label"] for r in rows]),
            "unit": (dim, [r["unit"] for r in rows]),
        }
        return make_dataset(variables, coords, {"seed": self.entropy})

    def text(self) -> str:
        """The report as ``workbench markov compare`` prints it."""
        from reverse.pasts.measure import format_measurement

        return format_measurement(self.measurement)


def _backward(options: Mapping[str, Any]) -> dict:
    """``backward=`` (``--backward NAME=VALUE``) as settings of :data:`BACKWARD_OPTIONS`."""
    out = {}
    for name, value in options.items():
        name = name.replace("_", "-")
        if name not in BACKWARD_OPTIONS:
            raise SceneError(
                "--backward", "", f"expected NAME=VALUE, NAME among {', '.join(BACKWARD_OPTIONS)};"
                f" got {name}={value!r}"
            )  # fmt: skip
        key, read = BACKWARD_OPTIONS[name]
        try:
            out[key] = read(value)
        except (KeyError, ValueError):
            raise SceneError("--backward", "", f"{name}: unexpected value {value!r}") from None
    for key in ("restitution_blend", "angular_damping", "linear_damping"):
        check_positive(f"backward {key.replace('_', '-')}", out.get(key), allow_zero=True)
    return out


def markov_compare(
    scene,
    table: str | os.PathLike,
    n: int = 200,
    *,
    set: Mapping[str, Any] | None = None,  # noqa: A002 - named as the command's --set
    dt: float | None = None,
    duration: float | None = None,
    seed: int | None = None,
    workers: int = 1,
    hints: str | None = None,
    backward: Mapping[str, Any] | None = None,
    conditioned: bool = False,
    verify_budget: int | None = None,
    bins: int = DEFAULT_BINS,
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
    names: Mapping[str, Any] | None = None,
) -> CompareResult:
    """The plausibility measure of a contact-transition table (``workbench markov compare``):
    ``n`` forward throws, ``n`` more (the floor), ``n`` backward runs with the table and, with
    ``conditioned``, ``n`` conditioned forward pasts, compared statistic by statistic.

    Parameters
    ----------
    scene : str or path
        A scene with one moving body at rest (the final state).
    table : str or path
        The table (``workbench markov train``, or a shipped name).
    n : int
        Runs per sample (at least 2).
    set, dt, duration, seed, workers
        As for :func:`markov_train`.
    hints : str, optional
        Hints of the backward runs (a file, a distribution, or ``"script"``).
    backward : dict, optional
        Options of the backward runs as ``workbench reverse`` spells them
        (``{"restitution-blend": 0.1, "heading": "scene"}``, :data:`BACKWARD_OPTIONS`).
    conditioned : bool
        Also compare conditioned forward pasts (refinement budget ``verify_budget``).
    bins : int
        Bins of the total-variation distances.
    force : bool
        Run above the bounds on steps.
    progress : callable, optional
        ``progress(done, total)`` in runs; None is silent.
    names : dict, optional
        How the command line spelled ``scene``, ``table`` and ``sets``, for the provenance.

    Returns
    -------
    CompareResult
        ``.measurement``, ``.text()``, ``.save(folder)``.

    Examples
    --------
    >>> import workbench
    >>> c = workbench.markov_compare("markov_block", "markov_block", 2, seed=1, duration=0.2)
    >>> c.text().splitlines()[0].split()[:2]
    ['statistic', 'unit']
    >>> c.to_xarray().tv.dims
    ('statistic',)
    """
    from reverse.pasts.samplers import measure_plausibility
    from reverse.pasts.training import thrown_body, training_problem
    from reverse.runs.run import check_reversible, plan_reverse_run
    from workbench.scene.catalog import find_data

    given = scene_input(scene, set)
    thrown_body(given.scene)  # exactly one moving body, before any work
    check_reversible(given.scene)
    for name, value in (("dt", dt), ("duration", duration)):
        check_positive(name, value, what="number of seconds")
    check_count("-n", n, "run")
    check_seed(seed)
    check_count("--workers", workers, "worker")
    if n < 2:
        raise SceneError("-n", "", f"expected at least 2 runs per sample, got {n}")
    settings = _backward(backward or {})
    if bins < 2:
        raise SceneError("--bins", "", f"expected at least 2 bins, got {bins}")
    option = "--dt" if dt else "--duration"
    dt = dt or given.scene.settings.dt
    duration = duration or given.scene.settings.duration
    problem = training_problem(2 * n, duration, dt)
    if not problem:
        plan = plan_reverse_run(
            duration, dt, len(given.scene.bodies), runs=n, held=workers, option=option
        )
        problem = plan.problem()
    if problem and not force:
        raise SceneError("--duration", "", f"{problem}; pass --force to run it anyway")
    path = find_data(table, what="contact-transition table")
    if verify_budget is not None and not conditioned:
        raise SceneError("--verify-budget", "", "needs --conditioned")
    if conditioned:
        budget = CONDITIONED_BUDGET if verify_budget is None else verify_budget
        check_count("--verify-budget", budget, "PyBullet run")
    entropy = seed_entropy(seed)
    spelled = {"scene": str(scene), "table": str(table), "sets": [f"{k}={v}" for k, v in
               given.overrides], **dict(names or {})}  # fmt: skip
    t0 = time.perf_counter()
    measurement = measure_plausibility(
        given.path, given.scene, path, n=n, seed=entropy, dt=dt, duration=duration,
        overrides=given.overrides, hints=hints, backward=settings, conditioned=conditioned,
        verify_budget=verify_budget, bins=bins, workers=workers, progress=progress,
        names=spelled,
    )  # fmt: skip
    return CompareResult(measurement, entropy, dt, duration, time.perf_counter() - t0)
