"""Global sensitivity of a scene's outputs: which uncertain input drives them (``workbench
sensitivity``).

The path: the scene's uncertain inputs (random parameters; each uncertain body's mass, centre of
mass and inertia) become design columns and groups (:func:`sensitivity_problem`); a Sobol' or
Morris design on the unit hypercube is drawn from the seed (:class:`DesignSpec`); realization i of
an ordinary ensemble takes its inputs from row i (:class:`DesignSampler`, the ``sampler`` of
:func:`~workbench.ensemble.run.run_ensemble`, so the run is seeded, resumable and bit-identical
for any executor); the scene's declared ``outputs:`` are evaluated on the stored runs, or an
observer's channel at every recorded time; the indices (``uncertainty/sensitivity.py``, SALib)
are written beside the realizations (``workbench/store/sensitivity.py``).

Groupings (``grouping``): ``input`` (default) — each random parameter, and each body's mass,
centre of mass and inertia (the centre of mass on a box is one group of three coordinates);
``body`` — all the randomness of one body together; ``kind`` — ``mass``, ``com`` and
``inertia`` across bodies (Batou & Soize's four cases in one analysis). Each random link of a
URDF body is a body of its own here, named ``<body>/<link>`` (its base keeps the body's name).

Inputs must be independent: a random body whose mass properties depend on a random parameter
(its ``mass: ${m}``) is refused (:func:`check_independent`).

The same path serves a :class:`~uncertainty.model.Model`-like function of the random parameters
(:func:`model_sensitivity`): same design, same :func:`realization_from_row`, same indices and
file layout, the function in place of the forward run; the Ishigami test drives it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from uncertainty import sensitivity as gsa
from workbench.ensemble.realization import (
    Realization,
    design_columns,
    realization_from_row,
)
from workbench.errors import WorkbenchError

__all__ = [
    "GROUPINGS",
    "DesignSpec",
    "DesignSampler",
    "SensitivityResult",
    "sensitivity_problem",
    "check_independent",
    "scene_outputs",
    "run_sensitivity",
    "model_sensitivity",
    "analyse",
]

#: How design columns are grouped into the inputs whose indices are reported.
GROUPINGS = ("input", "body", "kind")

#: Spawn keys of the design's and the bootstrap's seeds, derived from the run's entropy (any
#: keys distinct from each other: realizations use their index only through their design row).
_DESIGN_KEY = 0x5A17
_BOOTSTRAP_KEY = 0x5A18

#: Bootstrap resamples and confidence level of the intervals (SALib's defaults; the intervals
#: are ±half-widths of the 95% bootstrap interval).
NUM_RESAMPLES = 100
CONF_LEVEL = 0.95


def _derived_seed(entropy: int, key: int) -> int:
    seq = np.random.SeedSequence(int(entropy), spawn_key=(key,))
    return int(seq.generate_state(1, np.uint32)[0])


@dataclass(frozen=True)
class DesignSpec:
    """Everything that decides a design's bits.

    Attributes
    ----------
    method : str
        ``sobol`` or ``morris``.
    n : int
        Base sample size N (a power of 2) or number of Morris trajectories.
    entropy : int
        The run's seed entropy; the design's seed is derived from it.
    columns, groups : tuple of str
        Design columns and the group of each (:func:`sensitivity_problem`).
    second_order : bool
        Sobol' second-order rows.
    """

    method: str
    n: int
    entropy: int
    columns: tuple[str, ...]
    groups: tuple[str, ...]
    second_order: bool = False

    @property
    def problem(self) -> gsa.SensitivityProblem:
        return gsa.SensitivityProblem(self.columns, self.groups)

    @property
    def rows(self) -> int:
        return gsa.design_rows(
            self.method, self.n, len(self.problem.group_names), self.second_order
        )

    @property
    def design_seed(self) -> int:
        return _derived_seed(self.entropy, _DESIGN_KEY)

    def matrix(self) -> np.ndarray:
        """The design, shape (rows, columns) (computed once per process)."""
        return _design_matrix(self)

    def attrs(self) -> dict[str, Any]:
        """What ``/design`` records; :func:`run_sensitivity` compares it on ``--resume``."""
        return {
            "method": self.method,
            "n": int(self.n),
            "columns": list(self.columns),
            "groups": list(self.groups),
            "inputs": list(self.problem.group_names),
            "second_order": int(self.second_order),
            "levels": int(gsa.MORRIS_LEVELS),
            "design_seed": int(self.design_seed),
            "salib_version": gsa.salib_version(),
        }


@functools.lru_cache(maxsize=4)
def _design_matrix(spec: DesignSpec) -> np.ndarray:
    if spec.method == "sobol":
        x = gsa.sobol_design(spec.problem, spec.n, spec.design_seed, spec.second_order)
    else:
        x = gsa.morris_design(spec.problem, spec.n, spec.design_seed)
    x.setflags(write=False)
    return x


@dataclass(frozen=True)
class DesignSampler:
    """The ``sampler`` of :func:`~workbench.ensemble.run.run_ensemble`: realization i takes its
    inputs from row i of the design. Small and picklable: workers rebuild the design from the
    spec (once per process)."""

    spec: DesignSpec

    def __call__(self, scene, entropy: int, i: int) -> Realization:
        return realization_from_row(scene, self.spec.matrix()[i], entropy)


def sensitivity_problem(scene, grouping: str = "input") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Design columns of ``scene`` and the group of each, for ``grouping`` (:data:`GROUPINGS`).

    Raises
    ------
    WorkbenchError
        Nothing in the scene is random, the grouping is unknown, or inputs are dependent.
    """
    if grouping not in GROUPINGS:
        raise WorkbenchError(
            f"--group-by: expected one of {', '.join(GROUPINGS)}, got {grouping!r}"
        )
    cols = design_columns(scene)
    if not cols:
        raise WorkbenchError(
            f"{scene.source}: nothing is random; sensitivity needs random parameters "
            "(parameters: {name: {dist: ...}}) or bodies with 'uncertainty'"
        )
    check_independent(scene)
    if grouping == "input":
        groups = [c.part for c in cols]
    elif grouping == "body":
        groups = [c.owner for c in cols]
    else:
        groups = [c.owner if c.kind == "parameter" else c.kind for c in cols]
    return tuple(c.name for c in cols), tuple(groups)


def check_independent(scene) -> None:
    """Refuse dependent inputs: an uncertain body whose nominal mass properties change with a
    random parameter would have a mass, centre-of-mass or inertia law that depends on that
    parameter. Checked by moving each random parameter to its 0.9 quantile.

    Raises
    ------
    WorkbenchError
        Naming the body and the parameter.
    """
    bodies = scene.uncertain_bodies
    if not bodies:
        return
    nominal = {b.name: _props(b) for b in bodies}
    for name, dist in scene.parameter_distributions.items():
        moved = scene.with_parameters({name: float(dist.frozen().ppf(0.9))})
        for b in bodies:
            if not _same(nominal[b.name], _props(moved.body(b.name))):
                raise WorkbenchError(
                    f"{scene.source}: dependent inputs: body {b.name}'s random mass properties "
                    f"depend on the random parameter {name}; sensitivity needs independent "
                    "inputs (fix the parameter with --set or drop the body's uncertainty)"
                )


def _props(body) -> list[np.ndarray]:
    """The nominal mass properties and laws of an uncertain body: its own, or those of each of
    its random links (a URDF body; a random parameter may move a link's nominal values only
    through ``global_scaling``, or change which links are random)."""
    parts = [body.mass_properties] if body.shape.type != "urdf" else []
    parts += [link.props for link in body.random_links]
    out = [np.array([repr(body.uncertainty), len(parts)], object)]
    for p in parts:
        out += [
            np.atleast_1d(np.asarray(p.mass, float)),
            np.asarray(p.com, float),
            np.asarray(p.inertia_matrix, float),
        ]
    return out


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def scene_outputs(scene, names: Sequence[str] | None = None):
    """The scene's declared ``outputs:`` as :class:`~workbench.analysis.output_spec.Output` s,
    all of them or those ``names`` (in that order).

    Raises
    ------
    WorkbenchError
        No outputs declared, an unknown name ("did you mean"), or a malformed output.
    """
    from workbench.analysis.output_spec import parse_outputs
    from workbench.scene.fields import did_you_mean

    declared = list(scene.outputs)
    if not declared:
        raise WorkbenchError(
            f"{scene.source}: declares no outputs; add e.g. outputs: [{{name: d, reduce: "
            "max_displacement, body: ..., direction: [1, 0, 0]}] or use --observer"
        )
    parsed = parse_outputs(declared, scene.body_names, f"{scene.source}: outputs")
    by_name = {o.name: o for o in parsed}
    if not names:
        return parsed
    chosen = []
    for n in names:
        if n not in by_name:
            raise WorkbenchError(
                f"--output {n}: no such output in {scene.source}{did_you_mean(n, by_name)}; "
                f"declared: {', '.join(by_name)}"
            )
        chosen.append(by_name[n])
    return tuple(chosen)


@dataclass
class SensitivityResult:
    """What :func:`run_sensitivity` computed.

    Attributes
    ----------
    path : Path
    spec : DesignSpec
    indices : dict
        Output name -> dataset name -> array (as stored).
    inputs : tuple of str
        Group names, the order of the indices' last axis.
    ran, failed : int
        Realizations run by this call and realizations that did not end ok.
    wall_seconds, task_seconds, analysis_seconds : float
    """

    path: Path
    spec: DesignSpec
    indices: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    ran: int = 0
    failed: int = 0
    wall_seconds: float = 0.0
    task_seconds: float = 0.0
    analysis_seconds: float = 0.0


def analyse(spec: DesignSpec, y: np.ndarray) -> dict[str, np.ndarray]:
    """Indices of the outputs ``y`` (rows,) or, time-resolved, (rows, nt) on ``spec``'s design:
    per time, with the generalized (variance-weighted) indices for Sobol'."""
    problem = spec.problem
    seed = _derived_seed(spec.entropy, _BOOTSTRAP_KEY)
    y = np.asarray(y, float)

    def one(col: np.ndarray) -> dict[str, np.ndarray]:
        if spec.method == "sobol":
            return gsa.sobol_indices(
                problem,
                col,
                second_order=spec.second_order,
                num_resamples=NUM_RESAMPLES,
                conf_level=CONF_LEVEL,
                seed=seed,
            )
        return gsa.morris_indices(
            problem,
            spec.matrix(),
            col,
            num_resamples=NUM_RESAMPLES,
            conf_level=CONF_LEVEL,
            seed=seed,
        )

    try:
        if y.ndim == 1:
            return one(y)
        per = [one(y[:, k]) for k in range(y.shape[1])]
    except gsa.UncertaintyError as exc:
        raise WorkbenchError(f"sensitivity: {exc}") from None
    out = {key: np.stack([p[key] for p in per]) for key in per[0]}
    if spec.method == "sobol":
        # the A and B rows (first and last of each block of G + 2) sample the inputs' joint law
        width = spec.rows // spec.n
        ab = np.concatenate([y[0::width], y[width - 1 :: width]])
        var = np.var(ab, axis=0)
        out["variance"] = var
        out["S1_generalized"] = gsa.aggregate_indices(out["S1"], var)
        out["ST_generalized"] = gsa.aggregate_indices(out["ST"], var)
    return out


def _check_name(name: str) -> str:
    if not name or "/" in name or name.startswith("."):
        raise WorkbenchError(f"output name {name!r}: expected a name without '/' or leading '.'")
    return name


def run_sensitivity(
    ref,
    out: str | Path,
    *,
    outputs: Sequence[str] | None = None,
    observers: Sequence[str] = (),
    method: str = "sobol",
    n: int = 1024,
    grouping: str = "input",
    second_order: bool = False,
    entropy: int | None = None,
    workers: int = 1,
    scheduler: str | None = None,
    resume: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> SensitivityResult:
    """Run the design of a scene as an ensemble into ``out`` and store the indices there.

    Parameters
    ----------
    ref : SceneRef
    out : path-like
    outputs : sequence of str, optional
        Names among the scene's ``outputs:`` (default: all of them, unless ``observers``).
    observers : sequence of str
        ``NAME`` or ``NAME.COMPONENT`` (``p_obs_acc.z``): indices at every recorded time of that
        observer channel (all components when none is named).
    method, n, grouping, second_order
        See :class:`DesignSpec` and :data:`GROUPINGS`.
    entropy, workers, scheduler, resume, progress
        As :func:`~workbench.ensemble.run.run_ensemble`; ``resume`` also checks that the stored
        realizations are those of this design.

    Raises
    ------
    WorkbenchError
        One line: bad options, dependent inputs, unknown outputs, a resume that does not match,
        failed realizations (the indices need every run).
    """
    import time

    from workbench.ensemble.run import run_ensemble
    from workbench.store import TrajectoryStore

    t0 = time.perf_counter()
    if method not in gsa.METHODS:
        raise WorkbenchError(f"--method: expected one of {', '.join(gsa.METHODS)}, got {method!r}")
    try:
        gsa.check_design_size(method, n)
    except gsa.UncertaintyError as exc:
        raise WorkbenchError(f"-n: {exc}") from None
    if second_order and method != "sobol":
        raise WorkbenchError("--second-order: only with --method sobol")
    scene = ref.load()
    columns, groups = sensitivity_problem(scene, grouping)
    chosen = () if observers and not outputs else scene_outputs(scene, outputs)
    for o in chosen:
        _check_name(o.name)
    channels = [_observer_channel(scene, obs) for obs in observers]
    out = Path(out)
    if resume:
        entropy = _stored_entropy(out, entropy)
    if entropy is None:
        entropy = int(np.random.SeedSequence().entropy)
    spec = DesignSpec(method, int(n), int(entropy), columns, groups, bool(second_order))
    if resume:
        _check_resume(out, spec, scene)
    result = SensitivityResult(path=out, spec=spec, inputs=spec.problem.group_names)
    run = run_ensemble(
        ref,
        spec.rows,
        out,
        entropy=entropy,
        workers=workers,
        scheduler=scheduler,
        resume=resume,
        progress=progress,
        sampler=DesignSampler(spec),
    )
    result.ran, result.failed = run.ran, len(run.failed)
    result.task_seconds = run.task_seconds
    t1 = time.perf_counter()
    with TrajectoryStore.open(out) as store:
        statuses = store.statuses()
        bad = [i for i, s in enumerate(statuses) if s != "ok"]
        if bad:
            raise WorkbenchError(
                f"{out}: {len(bad)} of {spec.rows} realizations did not end ok (first: {bad[0]}, "
                f"{statuses[bad[0]]}: {store.messages()[bad[0]]}); the indices need every run "
                "of the design (see `workbench stats`)"
            )
        values: dict[str, np.ndarray] = {}
        attrs: dict[str, dict] = {}
        base = {
            "method": method,
            "inputs": list(spec.problem.group_names),
            "conf_level": CONF_LEVEL,
            "num_resamples": NUM_RESAMPLES,
        }
        if chosen:
            y = _evaluate_outputs(store, scene, spec, chosen)
            for k, o in enumerate(chosen):
                values[o.name] = analyse(spec, y[:, k])
                attrs[o.name] = {**base, "kind": "scalar"}
        for name, comps in channels:
            series = np.asarray(store.read_array(f"observers/{name}"), float)  # (rows, nt, k)
            times = np.asarray(store.schema.time, float)
            labels = store.schema.observer_info[name]["components"]
            for c in comps:
                key = _check_name(f"{name}.{labels[c]}")
                res = analyse(spec, series[:, :, c])
                res["time"] = times
                values[key] = res
                attrs[key] = {
                    **base,
                    "kind": "time_resolved",
                    "observer": name,
                    "component": labels[c],
                    "unit": str(store.schema.observer_info[name].get("unit", "")),
                }
    from workbench.store.sensitivity import write_sensitivity

    write_sensitivity(out, spec.matrix(), spec.attrs(), values, attrs)
    result.indices = values
    result.analysis_seconds = time.perf_counter() - t1
    result.wall_seconds = time.perf_counter() - t0
    return result


def _observer_channel(scene, observer: str) -> tuple[str, list[int]]:
    from workbench.scene.fields import did_you_mean
    from workbench.scene.model import OBSERVER_QUANTITIES

    name, _, comp = observer.partition(".")
    obs = {o.name: o for o in scene.observers}
    if name not in obs:
        raise WorkbenchError(
            f"--observer {observer}: no observer {name!r} in {scene.source}"
            f"{did_you_mean(name, obs)}; observers: {', '.join(obs) or '(none)'}"
        )
    labels = OBSERVER_QUANTITIES[obs[name].quantity][2]
    if not comp:
        return name, list(range(len(labels)))
    if comp not in labels:
        raise WorkbenchError(
            f"--observer {observer}: no component {comp!r}; {name} has {', '.join(labels)}"
        )
    return name, [labels.index(comp)]


def _stored_entropy(out: Path, entropy: int | None) -> int | None:
    from workbench.store import TrajectoryStore

    if not out.exists():
        raise WorkbenchError(f"{out}: --resume: no such file")
    with TrajectoryStore.open(out) as store:
        stored = store.attrs.get("seed_entropy")
    if stored is None:
        return entropy
    if entropy is not None and int(stored) != entropy:
        raise WorkbenchError(f"{out}: --resume with --seed {entropy}, the file used {stored}")
    return int(stored)


#: On --resume of an interrupted file (no ``/design`` yet), completed realizations whose stored
#: inputs are compared with their design rows: spread evenly over the completed ones (another
#: design differs in nearly every row; each check re-draws the row, ~1 ms, a body by
#: Metropolis-Hastings more).
RESUME_CHECKS = 32


def _check_resume(out: Path, spec: DesignSpec, scene) -> None:
    """Refuse to resume ``out`` unless its realizations are rows of ``spec``'s design: the
    stored ``/design`` (written when an analysis finished) must equal it; otherwise the stored
    inputs of the completed realizations must equal those its rows give."""
    from workbench.scene.model import PARAMETERS_GROUP
    from workbench.store import TrajectoryStore
    from workbench.store.sensitivity import read_design

    stored = read_design(out)
    if stored is not None:
        x, attrs = stored
        mine = spec.attrs()
        for key, value in mine.items():
            if attrs.get(key) != value:
                raise WorkbenchError(
                    f"{out}: --resume: the file's design has {key} = {attrs.get(key)}, this run "
                    f"{value}"
                )
        if not np.array_equal(x, spec.matrix()):
            raise WorkbenchError(f"{out}: --resume: the stored design differs from this run's")
        return
    with TrajectoryStore.open(out) as store:
        if store.n_realizations != spec.rows:
            raise WorkbenchError(
                f"{out}: --resume: the file holds {store.n_realizations} realizations, this "
                f"design {spec.rows} ({spec.method}, n {spec.n})"
            )
        done = np.flatnonzero(store.completed)
        if done.size == 0:
            return
        x = spec.matrix()
        picks = done[np.unique(np.linspace(0, done.size - 1, RESUME_CHECKS).round().astype(int))]
        for i in picks:
            real = realization_from_row(scene, x[i], spec.entropy)
            stored = {
                key: store.read_array(f"params/{key}", [int(i)])[0]
                for key in real.params
                if key.startswith(PARAMETERS_GROUP + "/")
            }
            masses = {  # a URDF body's base only when random; its links are in real.params
                f"{b}/mass": p["mass"] for b, p in real.mass_overrides.items() if "mass" in p
            }
            masses.update({k: v for k, v in real.params.items() if k.endswith("/mass")})
            stored.update({key: store.read_array(f"params/{key}", [int(i)])[0] for key in masses})
            mine = {k: v for k, v in real.params.items() if k in stored}
            mine.update(masses)
            for key, value in mine.items():
                if not np.array_equal(stored[key], value):
                    raise WorkbenchError(
                        f"{out}: --resume: realization {int(i)} has {key} = "
                        f"{float(stored[key]):.17g}, this design gives {float(value):.17g} "
                        "(another method, -n, --group-by or seed?)"
                    )


#: Realizations read at once when the outputs are evaluated: the states of a chunk in memory
#: (256 × records × bodies × 13 floats: 27 MB for 1000 records of 5 bodies).
READ_CHUNK = 256


def _stored_runs(store):
    """``(i, trajectory)`` of every realization, in index order, from chunked reads of the
    state datasets (one read per chunk, not one per realization; observers are not needed)."""
    from workbench.sim.state import STATE_FIELDS, Trajectory

    recorded = store.recorded
    times = np.asarray(store.schema.time, float)
    names = store.schema.body_names
    streams = [store.iter_rows(f"states/{f}", READ_CHUNK) for f in STATE_FIELDS]
    i = 0
    for chunks in zip(*streams, strict=True):
        for k in range(chunks[0].shape[0]):
            n = int(recorded[i])
            fields = {f: c[k, :n] for f, c in zip(STATE_FIELDS, chunks, strict=True)}
            yield i, Trajectory(time=times[:n], body_names=names, **fields)
            i += 1


def _evaluate_outputs(store, scene, spec: DesignSpec, outputs) -> np.ndarray:
    """Outputs of every realization, shape (rows, n_outputs). ``first_contact`` events need the
    realization's own world: it is rebuilt (its design row, the engine) for those."""
    from workbench.analysis.outputs import reduce_trajectory

    needs_engine = any(_uses_contact(o) for o in outputs)
    engine = None
    x = spec.matrix() if needs_engine else None
    y = np.full((spec.rows, len(outputs)), np.nan)
    try:
        for i, traj in _stored_runs(store):
            if needs_engine:
                from workbench.sim.engine import Engine

                real = realization_from_row(scene, x[i], spec.entropy)
                realized = scene.with_parameters(real.values) if real.values else scene
                if engine is None:
                    engine = Engine(realized, mass_overrides=real.mass_overrides)
                else:
                    engine.rebuild(realized, mass_overrides=real.mass_overrides)
            try:
                y[i] = reduce_trajectory(traj, outputs, engine)
            except WorkbenchError as exc:
                raise WorkbenchError(
                    f"{store.path}: realization {i}: {exc}; the indices need the output of "
                    "every run (lengthen the run or choose another output)"
                ) from None
    finally:
        if engine is not None:
            engine.close()
    return y


def _uses_contact(o) -> bool:
    events = [o.event, o.relative_to]
    return any(getattr(e, "kind", None) == "first_contact" for e in events)


def model_sensitivity(
    function: Callable[[Mapping[str, float]], Mapping[str, float]],
    scene,
    out: str | Path | None = None,
    *,
    method: str = "sobol",
    n: int = 1024,
    entropy: int = 0,
    second_order: bool = False,
) -> SensitivityResult:
    """The sensitivity path with ``function(parameters) -> {output: value}`` in place of the
    forward run: ``scene`` declares the random parameters (its other contents are not run);
    realization i is :func:`realization_from_row` of design row i, as in
    :func:`run_sensitivity`. Writes ``/sensitivity/<output>`` into ``out`` when given (an
    ensemble file)."""
    columns, groups = sensitivity_problem(scene, "input")
    spec = DesignSpec(method, int(n), int(entropy), columns, groups, second_order)
    x = spec.matrix()
    sampler = DesignSampler(spec)
    rows = [function(sampler(scene, entropy, i).values) for i in range(spec.rows)]
    names = list(rows[0])
    result = SensitivityResult(
        path=Path(out) if out else Path(), spec=spec, inputs=spec.problem.group_names, ran=spec.rows
    )
    base = {
        "method": method,
        "inputs": list(spec.problem.group_names),
        "conf_level": CONF_LEVEL,
        "num_resamples": NUM_RESAMPLES,
        "kind": "scalar",
    }
    for name in names:
        result.indices[name] = analyse(spec, np.array([r[name] for r in rows], float))
    if out is not None:
        from workbench.store.sensitivity import write_sensitivity

        write_sensitivity(out, x, spec.attrs(), result.indices, {k: base for k in names})
    return result
