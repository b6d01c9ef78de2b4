"""Inference and design specs: a YAML file naming a model, data, priors and an error model.

A spec drives ``workbench infer`` (MAP, Laplace, exact posterior) and ``workbench design``
(optimal measurement times); the numerics live in :mod:`uncertainty.bayes` and
:mod:`uncertainty.design`, this module only reads files and assembles them. A spec is not a scene
(``workbench run`` does not take it); it is recognized by ``kind: inference``.

Layout (every field is checked; unknown fields are errors)::

    description: one line
    kind: inference
    parameters: {case: 4, column: sigma_0.3}     # ${name} below; --set name=value overrides
    data:
      file: ../data/falling_object_table1.csv    # CSV with a header row; '#' lines are comments
      x: t                                        # column of the independent variable (times, s)
      y: ${column}                                # column of the measurements
      rows: [1, 7, 12, 17, 19]                    # zero-based rows, or "all" (default)
    model:                                        # either a Python response function ...
      function: uncertainty.examples.falling_object:FALLING_OBJECT   # module:name or file.py:name
      constants: {g: 9.81}                        # its parameters that are not inferred
    # ... or a scene run in PyBullet and reduced to an observer channel:
    #   {scene: falling_object.yaml, observer: height, component: z, scale: -1,
    #    time_shift: t0, dt: 1.0e-3, constants: {g: 9.81}}
    infer:                                        # inferred parameters, in this order
      c: {prior: {dist: uniform, low: -0.3, high: 1.0}, start: [0.106, 0.3]}
    error:
      sigma: 0.3                                  # fixed, > 0; or inferred:
      # sigma: {prior: {dist: uniform, low: 0.001, high: 5}, start: [0.3]}
      eta: 0                                      # model/measurement error ratio (Eq. 21)
      correlation_length: .inf                    # λ of R(δ) = exp(-δ/λ), s
    exact: {method: auto, points: 401, walkers: 32, max_steps: 20000, seed: 2024}
    design: {nominal: {g: 9.81, c: 0.106, t0: 1.0}, interval: [1, 20], eta: [1.0],
             correlation_length: 2.0, n: [1, 2, 3], sigma1: 1.0, seed: 2024}

Any value may be ``{select: KEY, from: {KEY1: value1, ...}}``: it becomes the entry of ``from``
named by ``KEY`` (typically ``"${case}"``), so one spec covers several data subsets or models.
Relative paths are resolved against the spec's folder. Errors name the file, the line, the field
and what was expected (:class:`SpecError`).
"""

from __future__ import annotations

import csv
import difflib
import importlib
import importlib.util
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from uncertainty.errors import UncertaintyError
from workbench.errors import SceneError, WorkbenchError
from workbench.scene.model import apply_overrides, format_loc, substitute_parameters

__all__ = [
    "SpecError",
    "InferenceSpec",
    "load_spec",
    "read_spec",
    "is_spec",
    "read_table",
    "build_model",
    "build_posterior",
    "InferenceResult",
    "run_inference",
    "inference_report",
    "format_inference",
    "DesignRun",
    "run_design",
    "design_report",
    "format_design",
    "parse_counts",
]

#: Default number of measurements for ``design``: N = 1 ... 10, as Fig. 17 of the document.
DEFAULT_N = tuple(range(1, 11))


class SpecError(WorkbenchError):
    """An inference/design spec, its data file or its model reference is invalid.

    Parameters
    ----------
    source : str
        The spec (or data) file.
    field : str
        Dotted field path (``data.y``); empty when the whole file is at fault.
    expected : str
        What is wrong, phrased for the user.
    line : int, optional
        1-based line in ``source`` when known.
    """

    def __init__(self, source: str, field: str, expected: str, line: int | None = None):
        self.source, self.field, self.expected, self.line = source, field, expected, line
        where = source if line is None else f"{source}:{line}"
        super().__init__(f"{where}: {field}: {expected}" if field else f"{where}: {expected}")


# --------------------------------------------------------------------------------------------
# Schema
# --------------------------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class DataSpec(_Model):
    file: str
    x: str
    y: str
    rows: list[int] | Literal["all"] = "all"


class FunctionModelSpec(_Model):
    function: str
    constants: dict[str, float] = {}


class SceneModelSpec(_Model):
    scene: str
    observer: str
    component: int | str = 0
    scale: float = 1.0
    time_shift: str | None = None
    dt: float | None = Field(default=None, gt=0)
    constants: dict[str, float] = {}
    before: Literal["mirror", "hold"] = "mirror"


class ParameterSpec(_Model):
    prior: dict[str, Any]
    start: list[float] = []


class InferredSigma(_Model):
    prior: dict[str, Any]
    start: list[float] = []


class ErrorSpec(_Model):
    sigma: float | InferredSigma
    eta: float = Field(default=0.0, ge=0)
    correlation_length: float = Field(default=math.inf, ge=0, allow_inf_nan=True)


class ExactSpec(_Model):
    method: Literal["auto", "grid", "mcmc", "none"] = "auto"
    points: int = Field(default=401, ge=21)
    walkers: int = Field(default=32, ge=4)
    max_steps: int = Field(default=20000, ge=100)
    seed: int = 0


class DesignSpec(_Model):
    nominal: dict[str, float]
    parameters: list[str] | None = None
    interval: tuple[float, float] = (1.0, 20.0)
    eta: list[float] = [1.0]
    correlation_length: float = Field(default=2.0, ge=0, allow_inf_nan=True)
    n: list[int] = list(DEFAULT_N)
    sigma1: float = Field(default=1.0, gt=0)
    seed: int = 0
    restarts: int = Field(default=4, ge=1)


class _SpecSchema(_Model):
    description: str = ""
    kind: Literal["inference"]
    data: DataSpec
    model: dict[str, Any]
    infer: dict[str, ParameterSpec]
    error: ErrorSpec
    exact: ExactSpec = ExactSpec()
    design: DesignSpec | None = None


@dataclass
class InferenceSpec:
    """A loaded and checked spec.

    Attributes
    ----------
    source : str
        The spec file.
    base_dir : Path
        Folder relative paths are resolved against.
    description : str
    parameters : dict
        Spec parameters after ``--set`` overrides.
    data_file : Path
    x_name, y_name : str
        Columns of the data file.
    rows : ndarray of int, shape (N,)
        Zero-based rows used.
    x, y : ndarray, shape (N,)
        Independent variable (times, s) and measurements.
    model : FunctionModelSpec or SceneModelSpec
    names : tuple of str
        Inferred model parameters, in order.
    priors : dict of str to Prior
    starts : ndarray, shape (k, n)
        Starting points (the product of each parameter's start values; σ last when inferred).
    sigma : float or None
        Fixed σ, or None when inferred.
    sigma_prior : Prior or None
    eta, correlation_length : float
    exact : ExactSpec
    design : DesignSpec or None
    """

    source: str
    base_dir: Path
    description: str
    parameters: dict
    data_file: Path
    x_name: str
    y_name: str
    rows: np.ndarray
    x: np.ndarray
    y: np.ndarray
    model: FunctionModelSpec | SceneModelSpec
    names: tuple[str, ...]
    priors: dict
    starts: np.ndarray
    sigma: float | None
    sigma_prior: Any
    eta: float
    correlation_length: float
    exact: ExactSpec
    design: DesignSpec | None
    line_of: Any = field(default=None, repr=False)

    @property
    def n_parameters(self) -> int:
        return len(self.names) + (1 if self.sigma is None else 0)

    def model_label(self) -> str:
        if isinstance(self.model, FunctionModelSpec):
            return f"function {self.model.function}"
        dt = self.model.dt
        return f"scene {self.model.scene} (PyBullet{'' if dt is None else f', dt = {dt:g} s'})"


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def is_spec(path: str | Path) -> bool:
    """True for a YAML file whose top level says ``kind: inference``."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and data.get("kind") == "inference"


def _resolve_select(node: Any, path: tuple, source: str, line_of) -> Any:
    """Replace every ``{select: key, from: {...}}`` by the chosen entry (recursively)."""
    if isinstance(node, list):
        return [_resolve_select(v, path + (i,), source, line_of) for i, v in enumerate(node)]
    if not isinstance(node, dict):
        return node
    if set(node) == {"select", "from"}:
        key, table = node["select"], node["from"]
        if not isinstance(table, dict):
            raise SpecError(
                source,
                format_loc(path + ("from",)),
                "expected a mapping of choices",
                line_of(path + ("from",)),
            )
        for k, v in table.items():
            if k == key or str(k) == str(key):
                return _resolve_select(v, path, source, line_of)
        options = ", ".join(map(str, table))
        near = difflib.get_close_matches(str(key), [str(k) for k in table], n=1)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        raise SpecError(
            source,
            format_loc(path),
            f"'{key}' is not one of {options}{hint}",
            line_of(path + ("select",)),
        )
    return {k: _resolve_select(v, path + (k,), source, line_of) for k, v in node.items()}


def _pydantic_error(exc: ValidationError, source: str, prefix: tuple, line_of) -> SpecError:
    err = exc.errors(include_url=False)[0]
    loc = prefix + tuple(p for p in err["loc"] if not str(p).startswith(("function-", "union")))
    typ, msg = err["type"], err["msg"]
    if typ == "missing":
        msg = "required field is missing"
    elif typ == "extra_forbidden":
        msg = "unknown field"
    else:
        msg = msg.replace("Input should be", "expected").removeprefix("Value error, ")
        got = err.get("input")
        if not isinstance(got, dict):
            text = repr(got)
            msg = f"{msg}, got {text if len(text) < 60 else text[:57] + '...'}"
    return SpecError(source, format_loc(loc), msg, line_of(loc))


def read_spec(
    path: str | Path,
    kind: str,
    overrides: Mapping[str, Any] | None,
    scene_hint: str,
    schema: type[BaseModel],
) -> tuple[Any, dict, Any]:
    """Read a spec file of ``kind`` (``kind: inference`` / ``kind: inverse``): YAML with line
    numbers, the kind checked, ``parameters`` resolved with ``overrides`` (``--set``) and
    substituted, ``select`` nodes resolved, and the rest validated by the pydantic ``schema``.

    Returns
    -------
    spec : schema
        The validated spec (without ``parameters``).
    parameters : dict
        The parameter values used (declared, with the overrides).
    line_of : callable
        ``line_of(loc)``: the line of a field path (or of its nearest parent), for errors.

    Raises
    ------
    SpecError
        One line naming the file, the line, the field and what was expected.
    """
    from workbench.scene.loader import line_index

    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise SpecError(source, "", "file not found" if not path.exists() else "not a file")
    try:
        text = path.read_text(encoding="utf-8")
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        raw = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(source, "", f"cannot read the file ({exc})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise SpecError(source, "", f"YAML syntax error{where}") from None
    lines = line_index(node) if node is not None else {}

    def line_of(loc: tuple) -> int | None:
        for k in range(len(loc), -1, -1):
            if loc[:k] in lines:
                return lines[loc[:k]]
        return None

    if not isinstance(raw, dict):
        raise SpecError(source, "", "expected a mapping of spec fields at the top level")
    if raw.get("kind") != kind:
        hint = f" (this looks like a scene: {scene_hint})" if "bodies" in raw else ""
        raise SpecError(
            source, "kind", f"expected '{kind}' for an {kind} spec{hint}", line_of(("kind",))
        )
    declared = raw.get("parameters") or {}
    if not isinstance(declared, dict):
        raise SpecError(source, "parameters", "expected a mapping of name: value")
    try:
        params = apply_overrides(declared, dict(overrides or {}), source)
        body = {k: v for k, v in raw.items() if k != "parameters"}
        body = substitute_parameters(body, params, source, line_of)
    except SceneError as exc:
        raise SpecError(exc.source, exc.field, exc.expected, exc.line) from None
    body = _resolve_select(body, (), source, line_of)
    try:
        return schema.model_validate(body), params, line_of
    except ValidationError as exc:
        raise _pydantic_error(exc, source, (), line_of) from None


def load_spec(path: str | Path, overrides: Mapping[str, Any] | None = None) -> InferenceSpec:
    """Load, resolve and check a spec and its data.

    Parameters
    ----------
    path : str or Path
        The spec file (YAML).
    overrides : mapping, optional
        Values for declared spec parameters (``--set``).

    Raises
    ------
    SpecError
        One line naming the file, the line, the field and what was expected.
    """
    from uncertainty.bayes import prior_from_spec

    path = Path(path)
    source = str(path)
    schema, params, line_of = read_spec(
        path, "inference", overrides, "use 'workbench run'", _SpecSchema
    )
    try:
        if "function" in schema.model:
            model: FunctionModelSpec | SceneModelSpec = FunctionModelSpec.model_validate(
                schema.model
            )
        elif "scene" in schema.model:
            model = SceneModelSpec.model_validate(schema.model)
        else:
            raise SpecError(
                source,
                "model",
                "give 'function: module:name' or 'scene: FILE'",
                line_of(("model",)),
            )
    except ValidationError as exc:
        raise _pydantic_error(exc, source, ("model",), line_of) from None

    base_dir = path.parent
    data = schema.data
    data_file = (base_dir / data.file) if not Path(data.file).is_absolute() else Path(data.file)
    x, y, rows = read_table(data_file, data.x, data.y, data.rows, source, line_of)

    names = tuple(schema.infer)
    if not names:
        raise SpecError(
            source, "infer", "name at least one parameter to infer", line_of(("infer",))
        )
    priors = {}
    start_lists = []
    for name, ps in schema.infer.items():
        try:
            priors[name] = prior_from_spec(ps.prior, f"infer.{name}.prior")
        except UncertaintyError as exc:
            raise SpecError(source, "", str(exc), line_of(("infer", name, "prior"))) from None
        start_lists.append(_starts(ps.start, priors[name], f"infer.{name}.start", source, line_of))
    if isinstance(schema.error.sigma, InferredSigma):
        sigma = None
        try:
            sigma_prior = prior_from_spec(schema.error.sigma.prior, "error.sigma.prior")
        except UncertaintyError as exc:
            raise SpecError(source, "", str(exc), line_of(("error", "sigma", "prior"))) from None
        if sigma_prior.low < 0:
            raise SpecError(
                source,
                "error.sigma.prior",
                f"sigma must stay positive; got low = {sigma_prior.low}",
                line_of(("error", "sigma", "prior")),
            )
        start_lists.append(
            _starts(schema.error.sigma.start, sigma_prior, "error.sigma.start", source, line_of)
        )
    else:
        sigma, sigma_prior = float(schema.error.sigma), None
        if not sigma > 0:
            raise SpecError(
                source,
                "error.sigma",
                f"expected a positive number, got {sigma}",
                line_of(("error", "sigma")),
            )
    grids = np.meshgrid(*start_lists, indexing="ij")
    starts = np.column_stack([g.ravel() for g in grids])
    n_par = len(names) + (1 if sigma is None else 0)
    if x.size < n_par:
        all_names = ", ".join(names + (("sigma",) if sigma is None else ()))
        raise SpecError(
            source,
            "data.rows",
            f"{x.size} data point{'s' if x.size != 1 else ''} for {n_par} parameters "
            f"({all_names}); need at least as many points as parameters",
            line_of(("data", "rows")),
        )
    constants = model.constants
    clash = set(constants) & set(names)
    if clash:
        raise SpecError(
            source,
            "model.constants",
            f"{', '.join(sorted(clash))} is also inferred",
            line_of(("model", "constants")),
        )
    return InferenceSpec(
        source=source,
        base_dir=base_dir,
        description=schema.description,
        parameters=params,
        data_file=data_file,
        x_name=data.x,
        y_name=data.y,
        rows=rows,
        x=x,
        y=y,
        model=model,
        names=names,
        priors=priors,
        starts=starts,
        sigma=sigma,
        sigma_prior=sigma_prior,
        eta=schema.error.eta,
        correlation_length=schema.error.correlation_length,
        exact=schema.exact,
        design=schema.design,
        line_of=line_of,
    )


def _starts(values, prior, field_name: str, source: str, line_of) -> np.ndarray:
    loc = tuple(field_name.split("."))
    if not values:
        return np.array([prior.mean])
    out = np.asarray(values, dtype=float)
    bad = [v for v in out if not (prior.low < v < prior.high)]
    if bad:
        raise SpecError(
            source,
            field_name,
            f"start {bad[0]} is outside the prior support ({prior.low}, {prior.high})",
            line_of(loc),
        )
    return out


def read_table(
    path: Path,
    x: str,
    y: str,
    rows: list[int] | str = "all",
    spec: str = "",
    line_of=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns ``x`` and ``y`` of a CSV file (header row; lines starting with '#' skipped).

    Returns
    -------
    x, y : ndarray, shape (N,)
        The selected rows.
    rows : ndarray of int, shape (N,)
        Zero-based row indices used.

    Raises
    ------
    SpecError
        Missing file or column, unparseable or non-finite numbers (naming the line), rows out of
        range.
    """
    line_of = line_of or (lambda loc: None)
    source = str(path)
    if not path.is_file():
        raise SpecError(spec, "data.file", f"{source}: file not found", line_of(("data", "file")))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(source, "", f"cannot read the file ({exc})") from None
    records = [
        (n, row)
        for n, row in enumerate(csv.reader(text.splitlines()), start=1)
        if row and not row[0].lstrip().startswith("#")
    ]
    if not records:
        raise SpecError(source, "", "no header row")
    (_, header), body = records[0], records[1:]
    header = [h.strip() for h in header]
    cols = {}
    for key, name in (("x", x), ("y", y)):
        if name not in header:
            near = difflib.get_close_matches(name, header, n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            raise SpecError(
                spec,
                f"data.{key}",
                f"no column '{name}' in {source}{hint}; columns: {', '.join(header)}",
                line_of(("data", key)),
            )
        cols[key] = header.index(name)
    xs, ys = [], []
    for lineno, row in body:
        vals = []
        for key in ("x", "y"):
            j = cols[key]
            name = x if key == "x" else y
            if j >= len(row):
                raise SpecError(source, "", f"line {lineno}: no value in column '{name}'", lineno)
            try:
                v = float(row[j])
            except ValueError:
                raise SpecError(
                    source, "", f"column '{name}': '{row[j].strip()}' is not a number", lineno
                ) from None
            if not math.isfinite(v):
                raise SpecError(
                    source, "", f"column '{name}': {row[j].strip()} is not a finite number", lineno
                )
            vals.append(v)
        xs.append(vals[0])
        ys.append(vals[1])
    n = len(xs)
    if rows == "all":
        idx = np.arange(n)
    else:
        idx = np.asarray(rows, dtype=int)
        bad = [int(i) for i in idx if not 0 <= i < n]
        if bad:
            raise SpecError(
                spec,
                "data.rows",
                f"row {bad[0]} out of range: {source} has rows 0 to {n - 1}",
                line_of(("data", "rows")),
            )
    if idx.size == 0:
        raise SpecError(spec, "data.rows", "no data rows selected", line_of(("data", "rows")))
    return np.asarray(xs)[idx], np.asarray(ys)[idx], idx


# --------------------------------------------------------------------------------------------
# Model and posterior
# --------------------------------------------------------------------------------------------


def _load_function(spec: InferenceSpec):
    """The response function named by ``model.function`` (``module:name`` or ``file.py:name``)."""
    from uncertainty.model import ResponseFunction

    ref = spec.model.function  # type: ignore[union-attr]
    loc = ("model", "function")
    if ":" not in ref:
        raise SpecError(
            spec.source,
            "model.function",
            f"expected 'module:name' or 'file.py:name', got {ref!r}",
            spec.line_of(loc),
        )
    mod_name, _, attr = ref.rpartition(":")
    try:
        if mod_name.endswith(".py"):
            file = spec.base_dir / mod_name
            if not file.is_file():
                raise SpecError(
                    spec.source, "model.function", f"{file}: file not found", spec.line_of(loc)
                )
            mspec = importlib.util.spec_from_file_location(f"_workbench_spec_{file.stem}", file)
            module = importlib.util.module_from_spec(mspec)  # type: ignore[arg-type]
            mspec.loader.exec_module(module)  # type: ignore[union-attr]
        else:
            module = importlib.import_module(mod_name)
    except SpecError:
        raise
    except Exception as exc:
        raise SpecError(
            spec.source,
            "model.function",
            f"cannot import {mod_name} ({type(exc).__name__}: {exc})",
            spec.line_of(loc),
        ) from None
    obj = getattr(module, attr, None)
    if obj is None or not callable(obj) and not isinstance(obj, ResponseFunction):
        raise SpecError(
            spec.source, "model.function", f"{mod_name} has no function '{attr}'", spec.line_of(loc)
        )
    try:
        return ResponseFunction.from_callable(obj)
    except UncertaintyError as exc:
        raise SpecError(spec.source, "model.function", str(exc), spec.line_of(loc)) from None


def build_model(spec: InferenceSpec, x: np.ndarray | None = None):
    """The spec's model at points ``x`` (default the data's), wrapped in a CachedModel whose
    finite-difference scales are the priors' standard deviations."""
    from uncertainty.model import CachedModel, FunctionModel

    x = spec.x if x is None else np.asarray(x, float)
    typical = [spec.priors[n].std for n in spec.names]
    if isinstance(spec.model, FunctionModelSpec):
        response = _load_function(spec)
        try:
            model = FunctionModel(response, x, spec.names, spec.model.constants)
        except UncertaintyError as exc:
            raise SpecError(spec.source, "model", str(exc), spec.line_of(("model",))) from None
    else:
        from workbench.analysis.scene_model import SceneModel

        m = spec.model
        scene_path = spec.base_dir / m.scene if not Path(m.scene).is_absolute() else Path(m.scene)
        constants = dict(m.constants)
        shift: str | float | None = m.time_shift
        if shift is not None and shift not in spec.names:  # a known clock offset
            if shift not in constants:
                raise SpecError(
                    spec.source,
                    "model.time_shift",
                    f"'{shift}' is neither inferred nor given in model.constants",
                    spec.line_of(("model", "time_shift")),
                )
            shift = constants.pop(shift)
        try:
            model = SceneModel(
                scene_path,
                spec.names,
                x,
                m.observer,
                m.component,
                scale=m.scale,
                time_shift=shift,
                overrides=constants,
                dt=m.dt,
                before=m.before,
            )
        except SpecError:
            raise
        except WorkbenchError as exc:
            raise SpecError(spec.source, "model", str(exc), spec.line_of(("model",))) from None
    return CachedModel(model, typical=typical)


def build_posterior(spec: InferenceSpec):
    """The :class:`~uncertainty.bayes.Posterior` of a spec (prediction error of Eq. 18-21)."""
    from uncertainty.bayes import Posterior, prediction_error_covariance

    model = build_model(spec)
    corr = None
    if spec.eta > 0:
        # Eq. (21) with σ1 = 1: Σ = σ² (I + η² ŷ ŷᵀ ∘ R), ŷ the data
        corr = prediction_error_covariance(spec.x, spec.y, 1.0, spec.eta, spec.correlation_length)
    try:
        return Posterior(
            model,
            spec.y,
            [spec.priors[n] for n in spec.names],
            sigma=spec.sigma,
            sigma_prior=spec.sigma_prior,
            correlation=corr,
        )
    except UncertaintyError as exc:
        raise SpecError(spec.source, "", str(exc)) from None


# --------------------------------------------------------------------------------------------
# infer
# --------------------------------------------------------------------------------------------


@dataclass
class InferenceResult:
    """Everything ``workbench infer`` computed: the spec, the posterior and the results."""

    spec: InferenceSpec
    posterior: Any
    map: Any
    laplace: Any
    exact: Any = None
    exact_method: str = "none"

    @property
    def converged(self) -> bool:
        ok = bool(self.map.converged and self.laplace.available)
        if self.exact_method == "mcmc":
            ok = ok and bool(self.exact.converged)
        return ok

    def problems(self) -> list[str]:
        """What did not converge or is not available, one phrase each."""
        out = []
        if not self.map.converged:
            out.append(f"MAP not converged ({self.map.message})")
        if not self.laplace.available:
            out.append(f"Laplace approximation not available: {self.laplace.message}")
        if self.exact_method == "mcmc" and not self.exact.converged:
            out.append(f"MCMC {self.exact.message}")
        return out


def run_inference(spec: InferenceSpec, *, exact: str | None = None, seed: int | None = None):
    """MAP, Laplace and (for ``exact`` = grid/mcmc, or auto) the exact posterior of a spec.

    ``auto`` computes the grid posterior for one or two parameters of a function model and
    skips it otherwise (a scene model would need a PyBullet run per grid point).
    """
    from uncertainty.bayes import (
        find_map,
        grid_posterior,
        grid_ranges,
        laplace,
        sample_posterior,
    )

    post = build_posterior(spec)
    try:
        try:
            mp = find_map(post, spec.starts)
        except UncertaintyError as exc:
            raise SpecError(spec.source, "", str(exc)) from None
        lap = laplace(post, mp.x)
        method = exact or spec.exact.method
        if method == "auto":
            cheap = isinstance(spec.model, FunctionModelSpec)
            method = "grid" if post.n <= 2 and cheap else "none"
        result = InferenceResult(spec, post, mp, lap, exact_method=method)
        if method == "grid":
            if post.n > 2:
                raise SpecError(
                    spec.source,
                    "exact.method",
                    f"the grid is for 1 or 2 parameters, this spec has {post.n}; use mcmc",
                )
            result.exact = grid_posterior(
                post, grid_ranges(post, mp.x, lap), n_points=spec.exact.points
            )
        elif method == "mcmc":
            rng = np.random.default_rng(spec.exact.seed if seed is None else seed)
            result.exact = sample_posterior(
                post,
                mp.x,
                rng,
                covariance=lap.covariance,
                n_walkers=spec.exact.walkers,
                max_steps=spec.exact.max_steps,
            )
    finally:
        close = getattr(post.model.model, "close", None)
        if callable(close):
            close()
    return result


def _named(names, values) -> dict[str, float] | None:
    if values is None:
        return None
    return {n: float(v) for n, v in zip(names, values, strict=True)}


def _matrix(a) -> list | None:
    return None if a is None else [[float(v) for v in row] for row in np.asarray(a)]


def inference_report(result: InferenceResult) -> dict:
    """The JSON document of ``workbench infer --json``."""
    spec, mp, lap = result.spec, result.map, result.laplace
    names = list(mp.names)
    out: dict[str, Any] = {
        "spec": spec.source,
        "description": spec.description,
        "parameters": spec.parameters,
        "model": spec.model_label(),
        "data": {
            "file": str(spec.data_file),
            "x": spec.x_name,
            "y": spec.y_name,
            "rows": [int(i) for i in spec.rows],
            "n": int(spec.x.size),
        },
        "sigma": spec.sigma if spec.sigma is not None else "inferred",
        "map": _named(names, mp.x),
        "map_info": {
            "neg_log_posterior": mp.value,
            "gradient_norm": mp.gradient_norm,
            "newton_decrement": None if math.isnan(mp.newton_decrement) else mp.newton_decrement,
            "converged": mp.converged,
            "at_bound": list(mp.at_bound),
            "message": mp.message,
            "starts": mp.n_starts,
            "local_optima": [{"x": _named(names, x), "neg_log_posterior": v} for x, v in mp.optima],
            "model_evaluations": mp.evaluations.get("evaluations"),
        },
        "laplace": {
            "names": names,
            "std": _named(names, lap.std),
            "corr": _matrix(lap.corr),
            "covariance": _matrix(lap.covariance),
            "hessian_eigenvalues": [float(v) for v in lap.eigenvalues],
            "hessian_eigenvectors": _matrix(lap.eigenvectors),
            "positive_definite": lap.positive_definite,
            "singular": lap.singular,
            "message": lap.message,
        },
    }
    ex = result.exact
    if result.exact_method == "grid" and ex is not None:
        out["exact"] = {
            "method": "grid",
            "mean": _named(names, ex.mean),
            "std": _named(names, ex.std),
            "corr": _matrix(ex.covariance / np.outer(ex.std, ex.std)),
            "points": [int(a.size) for a in ex.axes],
            "ranges": {n: [float(a[0]), float(a[-1])] for n, a in zip(names, ex.axes, strict=True)},
            "edge_density": ex.edge_density,
        }
    elif result.exact_method == "mcmc" and ex is not None:
        out["exact"] = {
            "method": "mcmc",
            "mean": _named(names, ex.mean),
            "std": _named(names, ex.std),
            "se_mean": _named(names, ex.se_mean),
            "se_std": _named(names, ex.se_std),
            "tau": _named(names, ex.tau),
            "n_eff": _named(names, ex.n_eff),
            "walkers": int(ex.chain.shape[1]),
            "steps": int(ex.chain.shape[0]),
            "burn": int(ex.burn),
            "acceptance": ex.acceptance,
            "converged": ex.converged,
            "seed": ex.seed,
            "message": ex.message,
        }
    out["converged"] = result.converged
    out["problems"] = result.problems()
    return out


def format_inference(report: dict) -> str:
    """Human-readable summary of :func:`inference_report`."""
    names = report["laplace"]["names"]
    info = report["map_info"]
    sig = report["sigma"]
    params = ", ".join(f"{k}={v}" for k, v in report["parameters"].items())
    lines = [
        f"{report['spec']}" + (f" ({params})" if params else "") + f": {report['model']}",
        f"  data: {report['data']['n']} points of {report['data']['y']} against "
        f"{report['data']['x']}; sigma "
        + ("inferred" if sig == "inferred" else f"{sig:g} (fixed)"),
        f"  MAP: {'converged' if info['converged'] else 'NOT converged'} ({info['message']}); "
        f"|grad L| = {info['gradient_norm']:.2e}, {info['model_evaluations']} model evaluations",
    ]
    std = report["laplace"]["std"]
    ex = report.get("exact")
    head = f"    {'':<8} {'MAP':>12} {'Laplace std':>12}"
    if ex:
        head += f" {ex['method'] + ' mean':>12} {ex['method'] + ' std':>12}"
    lines.append(head)
    for n in names:
        row = f"    {n:<8} {report['map'][n]:>12.6g} "
        row += f"{std[n]:>12.6g}" if std else f"{'-':>12}"
        if ex:
            row += f" {ex['mean'][n]:>12.6g} {ex['std'][n]:>12.6g}"
        lines.append(row)
    corr = report["laplace"]["corr"]
    if corr is not None and len(names) > 1:
        lines.append("  Laplace correlation:")
        lines.append("    " + " " * 8 + "".join(f" {n:>9}" for n in names))
        for n, row in zip(names, corr, strict=True):
            lines.append(f"    {n:<8}" + "".join(f" {v:>9.4f}" for v in row))
    if not report["laplace"]["std"]:
        lines.append(f"  Laplace: {report['laplace']['message']}")
    if ex and ex["method"] == "mcmc":
        tau = ", ".join(f"{k} {v:.1f}" for k, v in ex["tau"].items())
        lines.append(f"  MCMC: {ex['message']}; tau: {tau}; acceptance {ex['acceptance']:.2f}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# design
# --------------------------------------------------------------------------------------------


def parse_counts(text: str) -> list[int]:
    """``"1..10"``, ``"3"`` or ``"1,2,5"`` -> the measurement counts."""
    out: list[int] = []
    try:
        for part in str(text).split(","):
            part = part.strip()
            if ".." in part:
                a, b = part.split("..")
                out.extend(range(int(a), int(b) + 1))
            else:
                out.append(int(part))
    except ValueError:
        raise WorkbenchError(
            f"--n: expected a count, a range like 1..10 or a list like 1,2,5; got {text!r}"
        ) from None
    if not out or min(out) < 1:
        raise WorkbenchError(f"--n: counts must be at least 1, got {text!r}")
    return out


class _SceneSensitivity:
    """z(t; θ0) and ∇z from PyBullet runs: one at θ0 and two per parameter (central
    differences with the model's noise-based step), each interpolated at any time."""

    def __init__(self, spec: InferenceSpec, nominal: Mapping[str, float], params, interval):
        from uncertainty.model import CachedModel
        from workbench.analysis.scene_model import SceneModel

        m = spec.model
        assert isinstance(m, SceneModelSpec)
        inputs = tuple(params)
        fixed = {k: v for k, v in nominal.items() if k not in inputs and k != m.time_shift}
        scene_path = spec.base_dir / m.scene
        t0_name = m.time_shift
        self.inputs = inputs
        model = SceneModel(
            scene_path,
            inputs if t0_name is None or t0_name in inputs else inputs + (t0_name,),
            np.asarray(interval, float),
            m.observer,
            m.component,
            scale=m.scale,
            time_shift=t0_name,
            overrides={**m.constants, **fixed},
            dt=m.dt,
            before=m.before,
        )
        x0 = np.array([float(nominal[n]) for n in model.input_names])
        self._t0 = float(nominal.get(t0_name, 0.0)) if t0_name else 0.0
        self._mirror = m.before == "mirror"
        steps = CachedModel(model).steps(x0, 1)
        self._base = model.run(x0)
        self._pm = []
        for name in inputs:
            j = model.input_names.index(name)
            e = np.zeros_like(x0)
            e[j] = steps[j]
            self._pm.append((model.run(x0 + e), model.run(x0 - e), steps[j], name == t0_name))
        model.close()
        if self._base is None or any(a is None or b is None for a, b, _, _ in self._pm):
            raise WorkbenchError("design: a PyBullet run at the nominal parameters failed")

    def __call__(self, times: np.ndarray):
        t = np.asarray(times, float).reshape(-1)
        s = t - self._t0
        tau = np.abs(s) if self._mirror else np.maximum(s, 0.0)
        dtau = np.sign(s) if self._mirror else (s > 0).astype(float)  # dτ/dt
        z = self._base(tau)
        J = np.empty((t.size, len(self.inputs)))
        for i, (up, dn, h, is_shift) in enumerate(self._pm):
            if is_shift:  # the clock shift: ∂y(τ(t − t0))/∂t0 = −y'(τ) dτ/dt
                J[:, i] = -dtau * self._base(tau, 1)
            else:
                J[:, i] = (up(tau) - dn(tau)) / (2 * h)
        return z, J


@dataclass
class DesignRun:
    """Results of ``workbench design``: per η and N the optimal times, plus Ĩ(t) for N = 1."""

    spec: InferenceSpec
    parameters: tuple[str, ...]
    nominal: dict
    interval: tuple[float, float]
    correlation_length: float
    sigma1: float
    etas: list
    counts: list
    designs: list  # (eta, n, DesignResult)
    curve_t: np.ndarray
    curve: np.ndarray  # (n_eta, n_t): entropy of one measurement at each time


def run_design(
    spec: InferenceSpec,
    *,
    etas: list[float] | None = None,
    counts: list[int] | None = None,
    parameters: list[str] | None = None,
    correlation_length: float | None = None,
    seed: int | None = None,
) -> DesignRun:
    """Optimal measurement times for every (η, N) of the spec's ``design`` section (or the
    arguments), Eq. (16)-(21) of the document."""
    from uncertainty.design import Sensitivity, entropy_of_batch, optimal_times

    d = spec.design
    if d is None:
        raise SpecError(
            spec.source, "design", "this spec has no 'design' section (nominal, interval, ...)"
        )
    params = tuple(parameters or d.parameters or spec.names)
    etas = list(d.eta if etas is None else etas)
    counts = list(d.n if counts is None else counts)
    lam = d.correlation_length if correlation_length is None else correlation_length
    if any(not e >= 0 for e in etas):
        raise SpecError(spec.source, "design.eta", f"expected values >= 0, got {etas}")
    if not lam >= 0:
        raise SpecError(spec.source, "design.correlation_length", f"expected >= 0, got {lam}")
    a, b = d.interval
    if not a < b:
        raise SpecError(spec.source, "design.interval", f"expected [a, b] with a < b, got {[a, b]}")
    nominal = dict(d.nominal)
    if isinstance(spec.model, FunctionModelSpec):
        response = _load_function(spec)
        nominal = {**spec.model.constants, **nominal}
        try:
            sens = Sensitivity(response, nominal, params)
        except UncertaintyError as exc:
            raise SpecError(spec.source, "design", str(exc)) from None
    else:
        nominal = {**spec.model.constants, **nominal}
        unknown = [p for p in params if p not in nominal]
        if unknown:
            raise SpecError(spec.source, "design.nominal", f"no value for {', '.join(unknown)}")
        sens = _SceneSensitivity(spec, nominal, params, (a, b))
    rng = np.random.default_rng(d.seed if seed is None else seed)
    designs = []
    for eta in etas:
        for n in counts:
            try:
                res = optimal_times(
                    sens,
                    n,
                    rng,
                    interval=(a, b),
                    sigma1=d.sigma1,
                    eta=eta,
                    correlation_length=lam,
                    restarts=d.restarts,
                )
            except UncertaintyError as exc:
                raise SpecError(spec.source, "design.n", str(exc)) from None
            designs.append((eta, n, res))
    t = np.linspace(a, b, 400)
    curve = np.array([entropy_of_batch(t[:, None], sens, d.sigma1, e, lam) for e in etas])
    return DesignRun(
        spec=spec,
        parameters=params,
        nominal=nominal,
        interval=(a, b),
        correlation_length=lam,
        sigma1=d.sigma1,
        etas=etas,
        counts=counts,
        designs=designs,
        curve_t=t,
        curve=curve,
    )


def design_report(run: DesignRun) -> dict:
    """The JSON document of ``workbench design --json``."""
    return {
        "spec": run.spec.source,
        "parameters": list(run.parameters),
        "nominal": run.nominal,
        "interval": list(run.interval),
        "correlation_length": run.correlation_length,
        "sigma1": run.sigma1,
        "designs": [
            {
                "eta": eta,
                "n": n,
                "times": [float(v) for v in res.times],
                "entropy": res.entropy,
                "converged": res.converged,
                "message": res.message,
                "evaluations": res.evaluations,
            }
            for eta, n, res in run.designs
        ],
        "converged": all(res.converged for _, _, res in run.designs),
    }


def format_design(report: dict) -> str:
    """Human-readable table of :func:`design_report`."""
    lines = [
        f"{report['spec']}: optimal measurement times for {', '.join(report['parameters'])} on "
        f"[{report['interval'][0]:g}, {report['interval'][1]:g}] s, lambda = "
        f"{report['correlation_length']:g} s (information entropy, Eq. 16)",
        f"  {'eta':>8} {'N':>3} {'entropy':>10}  times (s)",
    ]
    for d in report["designs"]:
        flag = "" if d["converged"] else f"   [{d['message']}]"
        times = " ".join(f"{t:.3f}" for t in d["times"])
        lines.append(f"  {d['eta']:>8g} {d['n']:>3d} {d['entropy']:>10.5f}  {times}{flag}")
    return "\n".join(lines)
