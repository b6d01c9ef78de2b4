"""Inference and design specs: a YAML file naming a model, data, priors and an error model.

A spec drives ``workbench infer`` (MAP, Laplace, exact posterior) and ``workbench design``
(optimal measurement times). This module reads and checks a spec and its data table; the driver
is :mod:`workbench.analysis.inference`, the numerics :mod:`uncertainty.bayes` and
:mod:`uncertainty.design`. A spec is not a scene (``workbench run`` does not take it); it is
recognized by ``kind: inference``.

Layout (every field is checked; unknown fields are errors)::

    description: one line
    kind: inference
    parameters: {case: 4, column: sigma_0.3}     # ${name} below; --set name=value overrides
    data:
      file: ../data/falling_object_table1.csv    # CSV with a header row; '#' lines are comments
      x: t                                        # column of the independent variable (times, s)
      y: ${column}                                # column of the measurements
      unit: m                                     # unit of the y column (optional)
      label: distance fallen z                    # what y measures, for figures (optional)
      rows: [1, 7, 12, 17, 19]                    # zero-based rows, or "all" (default)
    model:                                        # either a Python response function ...
      function: uncertainty.examples.falling_object:FALLING_OBJECT   # module:name or file.py:name
      constants: {g: 9.81}                        # its parameters that are not inferred
    # ... or a scene run in PyBullet and reduced to an observer channel:
    #   {scene: falling_object.yaml, observer: height, component: z, scale: -1,
    #    time_shift: t0, dt: 1.0e-3, constants: {g: 9.81}}
    infer:                                        # inferred parameters, in this order
      c: {prior: {dist: uniform, low: -0.3, high: 1.0}, start: [0.106, 0.3], unit: 1/m}
    error:
      sigma: 0.3                                  # fixed, > 0; or inferred:
      # sigma: {prior: {dist: uniform, low: 0.001, high: 5}, start: [0.3]}
      eta: 0                                      # model/measurement error ratio (Eq. 21)
      correlation_length: .inf                    # λ of R(δ) = exp(-δ/λ), s
    exact: {method: auto, points: 401, walkers: 32, max_steps: 20000, seed: 2024}
    design: {nominal: {g: 9.81, c: 0.106, t0: 1.0}, interval: [1, 20], eta: [1.0],
             correlation_length: 2.0, n: [1, 2, 3], sigma1: 1.0, seed: 2024}

Units (``unit:``, optional) label the figures' axes (``name [unit]``,
:mod:`workbench.figures.labels`): ``data.unit`` is the unit of the y column (an inferred σ has
the same unit), ``infer.<name>.unit`` that of a parameter; x is time in s. A unit is text
(``"1"``, quoted, for a dimensionless quantity); an axis whose unit no spec declares shows
``[?]``. Units are labels only: nothing is converted. ``data.label`` names what the y column
measures on the fit's axis ("distance fallen z (sigma_0.3) [m]"; "measured sigma_0.3" without it).

Any value may be ``{select: KEY, from: {KEY1: value1, ...}}``: it becomes the entry of ``from``
named by ``KEY`` (typically ``"${case}"``), so one spec covers several data subsets or models.
Relative paths are resolved against the spec's folder. Errors name the file, the line, the field
and what was expected (:class:`SpecError`).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import numpy as np
from pydantic import BaseModel, BeforeValidator, Field, StringConstraints, ValidationError

from uncertainty.bayes import prior_from_spec
from uncertainty.errors import UncertaintyError
from workbench.errors import SpecError
from workbench.scene.fields import did_you_mean
from workbench.specs import (
    LocatedSpec,
    SpecSchema,
    document_kind,
    read_spec,
    schema_error,
)

__all__ = [
    "DEFAULT_N",
    "SIGMA",
    "TIME_UNIT",
    "Unit",
    "check_unit",
    "unknown_field_hint",
    "DataSpec",
    "FunctionModelSpec",
    "SceneModelSpec",
    "ParameterSpec",
    "InferredSigma",
    "ErrorSpec",
    "ExactSpec",
    "DesignSpec",
    "InferenceSpec",
    "is_spec",
    "load_spec",
    "read_table",
]

#: Default number of measurements for ``design``: N = 1 ... 10, as Fig. 17 of the document.
DEFAULT_N = tuple(range(1, 11))

#: Unit of the x column: the model's independent variable is time in s (its docstring above).
TIME_UNIT = "s"

#: Name of an inferred prediction-error standard deviation among the posterior's parameters
#: (``error.sigma``); its unit is the y column's.
SIGMA = "sigma"


def check_unit(value: Any) -> str:
    """A spec's ``unit:``: non-empty printable text, e.g. ``"m/s"``, ``"kg m^2"`` or ``"1"``
    (dimensionless). Surrounding spaces are dropped; nothing is converted.

    Raises
    ------
    ValueError
        Not text (a bare YAML ``1`` is a number: quote it), empty, or with control characters
        (a newline, a tab); pydantic turns it into the spec's one-line error, which adds the
        value given.
    """
    if not isinstance(value, str):
        raise ValueError(
            "expected a unit as text such as 'm/s', or '1' (quoted) for a dimensionless quantity"
        )
    text = value.strip()
    if not text or not text.isprintable():
        raise ValueError("expected a non-empty unit of printable characters")
    return text


#: The type of every ``unit:`` field of the inference and inverse specs.
Unit = Annotated[str, BeforeValidator(check_unit)]


def unknown_field_hint(exc: SpecError, schema: type[BaseModel]) -> SpecError:
    """``exc`` with a "did you mean" added when it reports an unknown field of ``schema`` (a
    spec's pydantic model) close to one it has: ``data.unti: unknown field (did you mean
    'unit'?)``; ``exc`` itself otherwise."""
    if exc.expected != "unknown field" or not exc.field:
        return exc
    *path, word = exc.field.split(".")
    node: Any = schema
    for part in path:
        node = _child(node, part)
    hint = did_you_mean(word, _field_names(node))
    if not hint:
        return exc
    return SpecError(exc.source, exc.field, exc.expected + hint, exc.line)


def _members(annotation: Any) -> list:
    """The alternatives of a union or Optional (the annotation itself otherwise), unwrapped
    from ``Annotated``."""
    if get_origin(annotation) is Annotated:
        return _members(get_args(annotation)[0])
    if get_origin(annotation) in (Union, type(int | None)):
        return [m for a in get_args(annotation) for m in _members(a)]
    return [annotation]


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _child(annotation: Any, part: str) -> Any:
    """The annotation of ``part`` below ``annotation``: a model's field, or a mapping's value."""
    for member in _members(annotation):
        if _is_model(member):
            for name, info in member.model_fields.items():
                if part in (name, info.alias):
                    return info.annotation
        elif get_origin(member) is dict:
            return get_args(member)[1]
    return None


def _field_names(annotation: Any) -> list[str]:
    """The field names (as written in YAML: aliases) of the models ``annotation`` allows."""
    return [
        info.alias or name
        for member in _members(annotation)
        if _is_model(member)
        for name, info in member.model_fields.items()
    ]


class DataSpec(SpecSchema):
    file: str
    x: str
    y: str
    rows: list[int] | Literal["all"] = "all"
    unit: Unit | None = None  # of the y column
    label: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] | None = None


class FunctionModelSpec(SpecSchema):
    function: str
    constants: dict[str, float] = {}


class SceneModelSpec(SpecSchema):
    scene: str
    observer: str
    component: int | str = 0
    scale: float = 1.0
    time_shift: str | None = None
    dt: float | None = Field(default=None, gt=0)
    constants: dict[str, float] = {}
    before: Literal["mirror", "hold"] = "mirror"


class ParameterSpec(SpecSchema):
    prior: dict[str, Any]
    start: list[float] = []
    unit: Unit | None = None


class InferredSigma(SpecSchema):
    prior: dict[str, Any]
    start: list[float] = []


class ErrorSpec(SpecSchema):
    sigma: float | InferredSigma
    eta: float = Field(default=0.0, ge=0)
    correlation_length: float = Field(default=math.inf, ge=0, allow_inf_nan=True)


class ExactSpec(SpecSchema):
    method: Literal["auto", "grid", "mcmc", "none"] = "auto"
    points: int = Field(default=401, ge=21)
    walkers: int = Field(default=32, ge=4)
    max_steps: int = Field(default=20000, ge=100)
    seed: int = 0


class DesignSpec(SpecSchema):
    nominal: dict[str, float]
    parameters: list[str] | None = None
    interval: tuple[float, float] = (1.0, 20.0)
    eta: list[float] = [1.0]
    correlation_length: float = Field(default=2.0, ge=0, allow_inf_nan=True)
    n: list[int] = list(DEFAULT_N)
    sigma1: float = Field(default=1.0, gt=0)
    seed: int = 0
    restarts: int = Field(default=4, ge=1)


class _SpecSchema(SpecSchema):
    description: str = ""
    kind: Literal["inference"]
    data: DataSpec
    model: dict[str, Any]
    infer: dict[str, ParameterSpec]
    error: ErrorSpec
    exact: ExactSpec = ExactSpec()
    design: DesignSpec | None = None


@dataclass
class InferenceSpec(LocatedSpec):
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
    units : dict of str to str
        Declared units by name (``data.unit``, ``infer.<name>.unit``): the y column and, when
        inferred, σ have ``data.unit``; the x column is time in s. Names without one are
        absent (figures label them ``[?]``).
    y_label : str
        What the measurements are, for figures (``data.label``, e.g. "distance fallen z"; the
        y column's name when the spec gives none).
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
    units: dict[str, str] = field(default_factory=dict)
    y_label: str = ""

    @property
    def n_parameters(self) -> int:
        return len(self.names) + (1 if self.sigma is None else 0)

    def model_label(self) -> str:
        if isinstance(self.model, FunctionModelSpec):
            return f"function {self.model.function}"
        dt = self.model.dt
        return f"scene {self.model.scene} (PyBullet{'' if dt is None else f', dt = {dt:g} s'})"


def is_spec(path: str | Path) -> bool:
    """True for a YAML file whose top level says ``kind: inference``."""
    return document_kind(path) == "inference"


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
    try:
        schema, params, doc = read_spec(path, "inference", _SpecSchema, overrides)
    except SpecError as exc:
        raise unknown_field_hint(exc, _SpecSchema) from None
    source, line_of, fail = doc.source, doc.line_of, doc.error
    try:
        if "function" in schema.model:
            model: FunctionModelSpec | SceneModelSpec = FunctionModelSpec.model_validate(
                schema.model
            )
        elif "scene" in schema.model:
            model = SceneModelSpec.model_validate(schema.model)
        else:
            raise fail(("model",), "give 'function: module:name' or 'scene: FILE'")
    except ValidationError as exc:
        raise schema_error(exc, source, ("model",), line_of) from None

    base_dir = doc.path.parent
    data = schema.data
    data_file = (base_dir / data.file) if not Path(data.file).is_absolute() else Path(data.file)
    x, y, rows = read_table(data_file, data.x, data.y, data.rows, source, line_of)

    names = tuple(schema.infer)
    if not names:
        raise fail(("infer",), "name at least one parameter to infer")
    priors = {}
    start_lists = []
    for name, ps in schema.infer.items():
        try:
            priors[name] = prior_from_spec(ps.prior, f"infer.{name}.prior")
        except UncertaintyError as exc:
            raise fail(("infer", name, "prior"), str(exc), field="") from None
        start_lists.append(_starts(ps.start, priors[name], ("infer", name, "start"), fail))
    if isinstance(schema.error.sigma, InferredSigma):
        sigma = None
        try:
            sigma_prior = prior_from_spec(schema.error.sigma.prior, "error.sigma.prior")
        except UncertaintyError as exc:
            raise fail(("error", "sigma", "prior"), str(exc), field="") from None
        if sigma_prior.low < 0:
            raise fail(
                ("error", "sigma", "prior"),
                f"sigma must stay positive; got low = {sigma_prior.low}",
            )
        start_lists.append(
            _starts(schema.error.sigma.start, sigma_prior, ("error", "sigma", "start"), fail)
        )
    else:
        sigma, sigma_prior = float(schema.error.sigma), None
        if not sigma > 0:
            raise fail(("error", "sigma"), f"expected a positive number, got {sigma}")
    grids = np.meshgrid(*start_lists, indexing="ij")
    starts = np.column_stack([g.ravel() for g in grids])
    n_par = len(names) + (1 if sigma is None else 0)
    if x.size < n_par:
        all_names = ", ".join(names + (("sigma",) if sigma is None else ()))
        raise fail(
            ("data", "rows"),
            f"{x.size} data point{'s' if x.size != 1 else ''} for {n_par} parameters "
            f"({all_names}); need at least as many points as parameters",
        )
    clash = set(model.constants) & set(names)
    if clash:
        raise fail(("model", "constants"), f"{', '.join(sorted(clash))} is also inferred")
    units = {data.x: TIME_UNIT}
    if data.unit is not None:
        units[data.y] = data.unit
        if sigma is None:
            units[SIGMA] = data.unit
    units.update({n: ps.unit for n, ps in schema.infer.items() if ps.unit is not None})
    err = schema.error
    return InferenceSpec(
        source=source, base_dir=base_dir, description=schema.description, parameters=params,
        data_file=data_file, x_name=data.x, y_name=data.y, rows=rows, x=x, y=y, model=model,
        names=names, priors=priors, starts=starts, sigma=sigma, sigma_prior=sigma_prior,
        eta=err.eta, correlation_length=err.correlation_length, exact=schema.exact,
        design=schema.design, line_of=line_of, units=units, y_label=data.label or data.y,
    )  # fmt: skip


def _starts(values, prior, loc: tuple, fail) -> np.ndarray:
    """The start values of one parameter (its prior mean by default), inside its support."""
    if not values:
        return np.array([prior.mean])
    out = np.asarray(values, dtype=float)
    bad = [v for v in out if not (prior.low < v < prior.high)]
    if bad:
        raise fail(loc, f"start {bad[0]} is outside the prior support ({prior.low}, {prior.high})")
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
    try:
        found = path.is_file()
    except OSError as exc:  # a name too long for the system (ENAMETOOLONG), ...
        found, why = False, exc.strerror
    else:
        why = "file not found"
    if not found:
        raise SpecError(spec, "data.file", f"{source}: {why}", line_of(("data", "file")))
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
            raise SpecError(
                spec,
                f"data.{key}",
                f"no column '{name}' in {source}{did_you_mean(name, header)}; columns: "
                f"{', '.join(header)}",
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
