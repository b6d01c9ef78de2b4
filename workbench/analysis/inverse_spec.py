"""Specs of inverse simulations under uncertainty (`workbench inverse SPEC.yaml`): read and
checked (the model is built by :func:`workbench.analysis.models.build_model`, the analyses run by
:mod:`workbench.analysis.inverse`).

A spec names the model, which of its inputs are unknown, known and uncertain, the measured
outputs and the CDF points to compute (Du 2013, Sec. 3; ``uncertainty/inverse.py``)::

    kind: inverse
    description: Du (2013) impact example, analytic model
    parameters: {dA: 0.582, dB: 0.708}        # --set dA=0.6 overrides; ${dA} below
    model:
      function: uncertainty.examples.du_impact:DuImpactModel  # a Model class, object, function
      options: {analytic_jacobian: true}          # keyword arguments of a Model class
    unknown:
      vA0: {guess: 10.0, unit: m/s}           # starting value of the solver
      vB0: {guess: 1.0}
    known:
      mA: {value: 2.0, unit: kg}              # a value with its unit, or
      mB: 6.0                                 # the value alone
      h: 2.0
      theta: 0.3490658503988659
    uncertain:
      e: {dist: normal, mean: 0.6, std: 0.06, unit: "1"}
      mu: {dist: normal, mean: 0.4, std: 0.04}
    correlation: [[1, 0.3], [0.3, 1]]         # optional, Nataf, in the order of 'uncertain'
    measured:
      dA: ${dA}
      dB: {value: ${dB}, unit: m}             # or {value, std, unit}: a measurement error, given
                                              # for every measured output or for none
    cdf:
      vA0: [7.5, 7.95, 8.4]                   # points, or
      vB0: {from: 0.09, to: 3.4, n: 21}       # an evenly spaced range

A scene model runs PyBullet (``workbench/analysis/outputs.py``)::

    model:
      scene: du_impact.yaml                   # relative to the spec
      outputs:
        - {name: dA, reduce: ..., ...}        # reductions over the trajectory

Every entry of unknown, known, uncertain and measured may say its ``unit:`` (text, ``"1"``
quoted for a dimensionless quantity): the figures label their axes with it (``vA0 [m/s]``), or
``[?]`` when none is given. Units are labels only: nothing is converted.

Every input of the model must be exactly one of unknown, known or uncertain; every output of the
model must be measured. Mistakes are reported as one :class:`SpecError` line naming the file, the
line, the field and what was expected.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from uncertainty.distributions import make_distribution
from uncertainty.errors import UncertaintyError
from workbench.analysis.inference_spec import Unit, check_unit, unknown_field_hint
from workbench.errors import SpecError
from workbench.scene.fields import did_you_mean
from workbench.specs import LocatedSpec, SpecSchema, document_kind, read_spec

__all__ = [
    "UnknownSpec",
    "KnownSpec",
    "MeasuredSpec",
    "RangeSpec",
    "OptionsSpec",
    "InverseSpec",
    "is_inverse_spec",
    "load_inverse_spec",
]


#: The key of an uncertain input's mapping that gives its unit (the rest is its distribution).
_UNIT = "unit"


def _value_alone(data: Any) -> Any:
    """``{value: x}`` for a bare ``x``: a known input or measurement may be written either way."""
    return data if isinstance(data, Mapping) else {"value": data}


class UnknownSpec(SpecSchema):
    guess: float
    bounds: tuple[float, float] | None = None
    unit: Unit | None = None


class KnownSpec(SpecSchema):
    """A known input: ``2.0`` or ``{value: 2.0, unit: kg}``."""

    value: float
    unit: Unit | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_value(cls, data: Any) -> Any:
        return _value_alone(data)


class MeasuredSpec(SpecSchema):
    """A measured output: ``0.582`` or ``{value: 0.582, std: 0.005, unit: m}``."""

    value: float
    std: float = Field(default=0.0, ge=0)
    unit: Unit | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_value(cls, data: Any) -> Any:
        return _value_alone(data)


class RangeSpec(SpecSchema):
    from_: float = Field(alias="from")
    to: float
    n: int = Field(ge=2, le=10_000)


class OptionsSpec(SpecSchema):
    sorm: bool = False
    double_loop: bool = False
    moments: bool = True
    max_iter: int | None = Field(default=None, ge=1)  # per point; default uncertainty.inverse's


class _SpecSchema(SpecSchema):
    kind: str
    description: str = ""
    model: dict[str, Any]
    unknown: dict[str, UnknownSpec]
    known: dict[str, KnownSpec] = {}
    uncertain: dict[str, dict[str, Any]] = {}
    correlation: list[list[float]] | None = None
    measured: dict[str, MeasuredSpec]
    cdf: dict[str, list[float] | RangeSpec] = {}
    options: OptionsSpec = OptionsSpec()


@dataclass
class InverseSpec(LocatedSpec):
    """A loaded and checked inverse-simulation spec.

    Attributes
    ----------
    source : str
        The spec file.
    base_dir : Path
        Folder relative paths (scenes, ``file.py:name`` functions) are resolved against.
    description : str
    parameters : dict
        Spec parameters after ``--set`` overrides.
    model_spec : dict
        The ``model`` mapping as written (after substitution).
    unknowns : tuple of str
    guess : dict of str to float
    bounds : dict of str to (float, float)
    known : dict of str to float
    uncertain : tuple of str
    marginals : list of frozen scipy.stats distributions, in the order of ``uncertain``
    correlation : ndarray or None
    measured : dict of str to float
    measured_std : dict of str to float
        Standard deviations of the measurements (0: exact).
    cdf_points : dict of str to ndarray
    options : OptionsSpec
    units : dict of str to str
        Declared units (``unit:``) of the unknown, known, uncertain and measured names; names
        without one are absent (figures label them ``[?]``).
    """

    source: str
    base_dir: Path
    description: str
    parameters: dict
    model_spec: dict
    unknowns: tuple[str, ...]
    guess: dict[str, float]
    bounds: dict[str, tuple[float, float]]
    known: dict[str, float]
    uncertain: tuple[str, ...]
    marginals: list
    correlation: np.ndarray | None
    measured: dict[str, float]
    measured_std: dict[str, float]
    cdf_points: dict[str, np.ndarray]
    options: OptionsSpec
    line_of: Any = field(default=None, repr=False)
    units: dict[str, str] = field(default_factory=dict)


def is_inverse_spec(path: str | Path) -> bool:
    """True for a YAML file whose top level says ``kind: inverse``."""
    return document_kind(path) == "inverse"


def load_inverse_spec(path: str | Path, overrides: Mapping[str, Any] | None = None) -> InverseSpec:
    """Load, resolve and check an inverse spec (not its model: see
    :func:`workbench.analysis.models.build_model`).

    Parameters
    ----------
    path : str or Path
        The inverse spec (YAML, ``kind: inverse``).
    overrides : mapping, optional
        Values of its ``parameters`` (``--set name=value``).

    Raises
    ------
    SpecError
        One line naming the file, the line, the field and what was expected: roles given twice,
        distributions, the correlation matrix's shape, too few measurements, CDF points.
    """
    try:
        schema, params, doc = read_spec(path, "inverse", _SpecSchema, overrides)
    except SpecError as exc:
        raise unknown_field_hint(exc, _SpecSchema) from None
    source, line_of, fail = doc.source, doc.line_of, doc.error
    if "function" not in schema.model and "scene" not in schema.model:
        raise fail(("model",), "give 'function: module:name' or 'scene: FILE'")
    unknowns = tuple(schema.unknown)
    if not unknowns:
        raise fail(("unknown",), "name at least one unknown input")
    uncertain = tuple(schema.uncertain)
    roles = {}
    for role, names in (("unknown", unknowns), ("known", schema.known), ("uncertain", uncertain)):
        for name in names:
            if name in roles:
                raise fail((role, name), f"'{name}' is already {roles[name]}")
            roles[name] = role
    units = {}
    for entries in (schema.unknown, schema.known, schema.measured):
        units.update({name: e.unit for name, e in entries.items() if e.unit is not None})
    marginals = []
    for name, spec in schema.uncertain.items():
        dist = {k: v for k, v in spec.items() if k != _UNIT}
        if _UNIT in spec:
            try:
                units[name] = check_unit(spec[_UNIT])
            except ValueError as exc:
                raise fail(("uncertain", name, _UNIT), f"{exc}, got {spec[_UNIT]!r}") from None
        for key in dist:  # 'units:' and other misspellings of 'unit', before the law's check
            hint = did_you_mean(str(key), [_UNIT])
            if hint:
                raise fail(("uncertain", name, key), f"unknown field{hint}")
        try:
            marginals.append(make_distribution(dist))
        except UncertaintyError as exc:
            loc = ("uncertain", name) + ((exc.field,) if getattr(exc, "field", "") else ())
            raise SpecError(source, "", str(exc), line_of(loc)) from None
    correlation = None
    if schema.correlation is not None:
        correlation = np.asarray(schema.correlation, dtype=float)
        if correlation.shape != (len(uncertain), len(uncertain)):
            raise fail(
                ("correlation",),
                f"expected a {len(uncertain)}×{len(uncertain)} matrix in the order of "
                f"'uncertain' ({', '.join(uncertain)}), got shape {correlation.shape}",
            )
    measured = {name: m.value for name, m in schema.measured.items()}
    measured_std = {name: m.std for name, m in schema.measured.items()}
    if len(measured) < len(unknowns):
        raise fail(
            ("measured",),
            f"{len(unknowns)} unknowns ({', '.join(unknowns)}) need at least as many measured "
            f"outputs, got {len(measured)}",
        )
    cdf_points = {}
    for name, pts in schema.cdf.items():
        if name not in unknowns:
            raise fail(("cdf", name), f"not an unknown; the unknowns are {', '.join(unknowns)}")
        if isinstance(pts, RangeSpec):
            if not pts.to > pts.from_:
                raise fail(("cdf", name, "to"), f"expected to > from = {pts.from_}")
            arr = np.linspace(pts.from_, pts.to, pts.n)
        else:
            arr = np.asarray(pts, dtype=float)
            if arr.size == 0 or np.any(np.diff(arr) <= 0):
                raise fail(("cdf", name), "expected a non-empty increasing list of points")
        cdf_points[name] = arr
    bounds = {}
    for name, u in schema.unknown.items():
        if u.bounds is not None:
            lo, hi = u.bounds
            if not (lo < u.guess < hi):
                raise fail(("unknown", name, "bounds"), f"expected low < guess {u.guess} < high")
            bounds[name] = (lo, hi)
    return InverseSpec(
        source=source, base_dir=doc.path.parent, description=schema.description, parameters=params,
        model_spec=dict(schema.model), unknowns=unknowns,
        guess={k: v.guess for k, v in schema.unknown.items()}, bounds=bounds,
        known={k: v.value for k, v in schema.known.items()}, uncertain=uncertain,
        marginals=marginals, correlation=correlation, measured=measured,
        measured_std=measured_std, cdf_points=cdf_points, options=schema.options,
        line_of=line_of, units=units,
    )  # fmt: skip
