"""The samplers of pasts by name, and the plausibility measurement's recipe (issue 34 item 3).

:data:`SAMPLERS` maps a name to a class meeting :class:`reverse.runs.sampler.PastSampler`
(scipy's ``integrate`` ``METHODS``, emcee's ``moves``): the product's samplers. Variants kept
for study are apart in :data:`STUDY_SAMPLERS` (dm_control's ``BENCHMARKING`` beside ``EXTRA``).
:func:`measure_plausibility` is the one recipe of ``workbench markov compare`` and
``benchmarks/plausibility.py``: the checks, the backward runs' settings and hints
(:func:`reverse.goals.hints.resolve_hints`), the samplers, the provenance and
:func:`reverse.pasts.measure.measure`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from reverse.pasts.conditioned import CONDITIONED_BUDGET, ConditionedPasts
from reverse.pasts.training import ForwardThrows
from reverse.runs.sampling import BackwardRuns
from uncertainty.two_sample import DEFAULT_BINS

__all__ = [
    "SAMPLERS",
    "STUDY_SAMPLERS",
    "SelectedThrows",
    "BACKWARD_CONTROLS",
    "measure_plausibility",
]


@dataclass(frozen=True)
class SelectedThrows(ConditionedPasts):
    """Throws selected by the condition alone (at rest on the final face at the end of the
    duration; no carry, no refinement): the reference of what ending at the pose does to the
    statistics (``benchmarks/plausibility.py``)."""

    name: ClassVar[str] = "selected"
    description: ClassVar[str] = (
        "throws at rest on the final pose's face at the end of the duration, as thrown"
    )
    confirm: bool = False


#: The product's samplers of pasts, by name.
SAMPLERS = {"backward": BackwardRuns, "conditioned": ConditionedPasts}

#: Samplers kept for study: the throw law itself (a perfect sampler on the measure) and the
#: selected throws.
STUDY_SAMPLERS = {"throws": ForwardThrows, "selected": SelectedThrows}

#: The backward runs' settings that ``markov compare --backward NAME=VALUE`` takes, with their
#: defaults: the plausibility controls of :class:`reverse.step.types.StepSettings`, contact
#: persistence and a random heading per run.
BACKWARD_CONTROLS = {
    "restitution_blend": 0.0,
    "angular_damping": 0.0,
    "linear_damping": 0.0,
    "persist_contacts": False,
    "heading": True,
}


def measure_plausibility(
    scene_path,
    scene,
    table,
    *,
    n: int,
    seed: int,
    dt: float,
    duration: float,
    overrides: tuple = (),
    hints=None,
    backward: dict | None = None,
    conditioned: bool = False,
    verify_budget: int | None = None,
    bins: int = DEFAULT_BINS,
    workers: int = 1,
    names: dict | None = None,
    progress: Callable[[int, int], None] | None = None,
):
    """The plausibility measure of a contact-transition table on a one-body scene: ``n``
    throws, ``n`` more (the floor), ``n`` backward runs and, with ``conditioned``, ``n``
    conditioned forward pasts (:func:`reverse.pasts.measure.measure`).

    Parameters
    ----------
    scene_path, scene
        The scene file and the loaded scene (one moving body, at rest: the final state).
    table : path
        The contact-transition table (:func:`reverse.goals.markov.load_model`).
    n, seed, dt, duration, overrides, bins, workers
        As for :func:`reverse.pasts.measure.measure`.
    hints : str or dict, optional
        ``--hints`` of the backward runs (:func:`reverse.goals.hints.resolve_hints`).
    backward : dict, optional
        :data:`BACKWARD_CONTROLS` to change.
    conditioned : bool
        Also compare conditioned forward pasts (refinement budget ``verify_budget``, default
        :data:`reverse.pasts.conditioned.CONDITIONED_BUDGET`).
    names : dict, optional
        How the command line spelled ``scene``, ``table``, ``hints`` and ``sets`` (the
        ``--set`` texts), for the provenance (default: the paths and parsed pairs).

    Returns
    -------
    Measurement
    """
    from reverse.goals.hints import resolve_hints
    from reverse.goals.markov import load_model
    from reverse.pasts.measure import measure
    from reverse.pasts.training import thrown_body
    from reverse.runs.run import check_reversible
    from reverse.runs.sampling import RunVariation
    from reverse.runs.verify import verify_settings
    from reverse.step.stepper import StepSettings

    body = thrown_body(scene)
    check_reversible(scene)
    unknown = set(backward or {}) - set(BACKWARD_CONTROLS)
    if unknown:
        raise ValueError(f"unknown backward settings {sorted(unknown)}")
    b = {**BACKWARD_CONTROLS, **(backward or {})}
    model = load_model(table)
    resolved = resolve_hints(hints, scene_path, scene, sampled=True, table=model)
    settings = StepSettings(
        dt,
        restitution_blend=b["restitution_blend"],
        angular_damping=b["angular_damping"],
        linear_damping=b["linear_damping"],
    )
    options = {
        "hints": [] if resolved.draws else resolved.hints,
        "settings": settings,
        **({"persist_contacts": True} if b["persist_contacts"] else {}),
        "duration": duration,
        "dt": dt,
        "markov": model,
    }
    names = {
        "scene": str(scene_path),
        "table": str(table),
        "hints": hints if isinstance(hints, str) else None,
        "sets": [f"{k}={v}" for k, v in overrides],
        **(names or {}),
    }
    scene_name, table_name, hints_name = names["scene"], names["table"], names["hints"]
    controls = "".join(
        f" --backward {name.replace('_', '-')}={b[name]!r}"
        for name in ("restitution_blend", "angular_damping", "linear_damping")
        if b[name]
    )
    sets = "".join(f" --set {s}" for s in names["sets"])
    command = (
        f"workbench markov compare {scene_name} --table {table_name} -n {n} --seed "
        f"{seed} --dt {dt!r} --duration {duration!r} --bins {bins}"
        f"{'' if b['heading'] else ' --backward heading=scene'}"
        f"{f' --hints {hints_name}' if hints_name else ''}{controls}{sets}"
        f"{' --backward contacts=persist' if b['persist_contacts'] else ''}"
        f"{' --conditioned' if conditioned else ''}"
        f"{f' --verify-budget {verify_budget}' if verify_budget is not None else ''}"
    )
    meta = {
        "command": command,
        "scene": getattr(scene_path, "name", str(scene_path)),
        "body": scene.body_names[body],
        "table": model.meta.get("command", ""),
        "table_kind": model.kind,
        "seed": int(seed),
        "n": int(n),
        "dt": float(dt),
        "duration": float(duration),
        "heading": "random" if b["heading"] else "the scene's",
        "hints": resolved.text if not (hints == "script" and resolved.draws) else
        "script: hints(seed=...)",
        "reverse_settings": repr(settings),
    }  # fmt: skip
    samplers = {
        "backward": BackwardRuns(options, RunVariation.of(resolved, b["heading"]), body=body)
    }
    if conditioned:
        budget = CONDITIONED_BUDGET if verify_budget is None else verify_budget
        samplers["conditioned"] = ConditionedPasts(
            float(duration), verify_settings(budget), dt=float(dt)
        )
    return measure(
        scene_path, samplers, n=n, seed=seed, dt=dt, duration=duration,
        overrides=tuple(overrides), workers=workers, bins=bins, meta=meta, progress=progress,
    )  # fmt: skip
