"""Specs of inverse simulations under uncertainty (`workbench inverse SPEC.yaml`), checked.

A spec names the model, which of its inputs are unknown, known and uncertain, the measured
outputs and the CDF points to compute (Du 2013, Sec. 3; ``uncertainty/inverse.py``)::

    kind: inverse
    description: Du (2013) impact example, analytic model
    parameters: {dA: 0.582, dB: 0.708}        # --set dA=0.6 overrides; ${dA} below
    model:
      function: uncertainty.examples.du_impact:DuImpactModel   # a Model class, object or plain function
      options: {analytic_jacobian: true}              # keyword arguments of a Model class
    unknown:
      vA0: {guess: 10.0}                      # starting value of the solver
      vB0: {guess: 1.0}
    known: {mA: 2.0, mB: 6.0, h: 2.0, theta: 0.3490658503988659}
    uncertain:
      e: {dist: normal, mean: 0.6, std: 0.06}
      mu: {dist: normal, mean: 0.4, std: 0.04}
    correlation: [[1, 0.3], [0.3, 1]]         # optional, Nataf, in the order of 'uncertain'
    measured:
      dA: ${dA}
      dB: {value: ${dB}, std: 0.005}          # a measurement with its own uncertainty
    cdf:
      vA0: [7.5, 7.95, 8.4]                   # points, or
      vB0: {from: 0.09, to: 3.4, n: 21}       # an evenly spaced range

A scene model runs PyBullet (``workbench/analysis/outputs.py``)::

    model:
      scene: du_impact.yaml                   # relative to the spec
      outputs:
        - {name: dA, reduce: ..., ...}        # reductions over the trajectory

Every input of the model must be exactly one of unknown, known or uncertain; every output of the
model must be measured. Mistakes are reported as one :class:`SpecError` line naming the file, the
line, the field and what was expected.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field

from uncertainty.errors import UncertaintyError
from workbench.errors import SceneError
from workbench.analysis.inference import SpecError, read_spec

__all__ = ["InverseSpec", "is_inverse_spec", "load_inverse_spec", "build_model"]


class _Schema(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class UnknownSpec(_Schema):
    guess: float
    bounds: tuple[float, float] | None = None


class MeasuredSpec(_Schema):
    value: float
    std: float = Field(default=0.0, ge=0)


class RangeSpec(_Schema):
    from_: float = Field(alias="from")
    to: float
    n: int = Field(ge=2, le=10_000)


class OptionsSpec(_Schema):
    sorm: bool = False
    double_loop: bool = False
    moments: bool = True
    max_iter: int | None = Field(default=None, ge=1)  # per point; default uncertainty.inverse's


class _SpecSchema(_Schema):
    kind: str
    description: str = ""
    model: dict[str, Any]
    unknown: dict[str, UnknownSpec]
    known: dict[str, float] = {}
    uncertain: dict[str, dict[str, Any]] = {}
    correlation: list[list[float]] | None = None
    measured: dict[str, float | MeasuredSpec]
    cdf: dict[str, list[float] | RangeSpec] = {}
    options: OptionsSpec = OptionsSpec()


@dataclass
class InverseSpec:
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

    def error(self, loc: tuple, expected: str) -> SpecError:
        """A :class:`SpecError` for field ``loc`` of this spec."""
        return SpecError(self.source, ".".join(map(str, loc)), expected, self.line_of(loc))


def is_inverse_spec(path: str | Path) -> bool:
    """True for a YAML file whose top level says ``kind: inverse``."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and data.get("kind") == "inverse"


def load_inverse_spec(path: str | Path, overrides: Mapping[str, Any] | None = None) -> InverseSpec:
    """Load, resolve and check an inverse spec (not the model: see :func:`build_model`).

    Raises
    ------
    SpecError
        One line naming the file, the line, the field and what was expected.
    """
    from uncertainty.distributions import make_distribution

    path = Path(path)
    source = str(path)
    schema, params, line_of = read_spec(
        path, "inverse", overrides, "use 'workbench run'", _SpecSchema
    )

    def fail(loc: tuple, expected: str) -> SpecError:
        return SpecError(source, ".".join(map(str, loc)), expected, line_of(loc))

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
    marginals = []
    for name, dist in schema.uncertain.items():
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
    measured, measured_std = {}, {}
    for name, m in schema.measured.items():
        value, std = (m, 0.0) if isinstance(m, float | int) else (m.value, m.std)
        measured[name], measured_std[name] = float(value), float(std)
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
        source=source,
        base_dir=path.parent,
        description=schema.description,
        parameters=params,
        model_spec=dict(schema.model),
        unknowns=unknowns,
        guess={k: v.guess for k, v in schema.unknown.items()},
        bounds=bounds,
        known=dict(schema.known),
        uncertain=uncertain,
        marginals=marginals,
        correlation=correlation,
        measured=measured,
        measured_std=measured_std,
        cdf_points=cdf_points,
        options=schema.options,
        line_of=line_of,
    )


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------


def _import(ref: str, spec: InverseSpec):
    loc = ("model", "function")
    if ":" not in ref:
        raise spec.error(loc, f"expected 'module:name' or 'file.py:name', got {ref!r}")
    mod_name, _, attr = ref.rpartition(":")
    try:
        if mod_name.endswith(".py"):
            file = spec.base_dir / mod_name
            if not file.is_file():
                raise spec.error(loc, f"{file}: file not found")
            mspec = importlib.util.spec_from_file_location(f"_workbench_inverse_{file.stem}", file)
            module = importlib.util.module_from_spec(mspec)  # type: ignore[arg-type]
            mspec.loader.exec_module(module)  # type: ignore[union-attr]
        else:
            module = importlib.import_module(mod_name)
    except SpecError:
        raise
    except Exception as exc:
        raise spec.error(loc, f"cannot import {mod_name} ({type(exc).__name__}: {exc})") from None
    obj = getattr(module, attr, None)
    if obj is None:
        raise spec.error(loc, f"{mod_name} has no attribute '{attr}'")
    return obj


def build_model(spec: InverseSpec):
    """The model the spec names, checked against its unknown, known, uncertain and measured
    names (every input has exactly one role; every output is measured)."""
    from uncertainty.model import MACHINE_NOISE, NamedFunctionModel

    ms = dict(spec.model_spec)
    if "function" in ms:
        allowed = {"function", "options", "outputs", "noise"}
        extra = set(ms) - allowed
        if extra:
            raise spec.error(("model", sorted(extra)[0]), "unknown field")
        obj = _import(str(ms["function"]), spec)
        options = ms.get("options") or {}
        if inspect.isclass(obj):
            try:
                model = obj(**options)
            except TypeError as exc:
                raise spec.error(("model", "options"), str(exc)) from None
        elif hasattr(obj, "evaluate") and hasattr(obj, "input_names"):
            model = obj
        elif callable(obj):
            outputs = ms.get("outputs")
            if not outputs:
                raise spec.error(
                    ("model", "outputs"), "a plain function needs the names of its outputs"
                )
            model = NamedFunctionModel(obj, outputs, float(ms.get("noise", MACHINE_NOISE)))
        else:
            raise spec.error(("model", "function"), "expected a Model class, object or function")
    else:
        from workbench.analysis.outputs import SceneOutputModel

        scene = spec.base_dir / str(ms["scene"])
        if not scene.is_file():
            raise spec.error(("model", "scene"), f"{scene}: file not found")
        inputs = list(spec.unknowns) + list(spec.known) + list(spec.uncertain)
        try:
            model = SceneOutputModel(
                scene,
                inputs,
                ms.get("outputs") or [],
                **{k: v for k, v in ms.items() if k not in ("scene", "outputs")},
            )
        except (SceneError, UncertaintyError, ValueError, TypeError) as exc:
            raise spec.error(("model",), str(exc)) from None
    inputs = set(model.input_names)
    declared = set(spec.unknowns) | set(spec.known) | set(spec.uncertain)
    for role, names in (
        ("unknown", spec.unknowns),
        ("known", spec.known),
        ("uncertain", spec.uncertain),
    ):
        for name in names:
            if name not in inputs:
                raise spec.error(
                    (role, name),
                    f"not an input of the model; its inputs are {', '.join(model.input_names)}",
                )
    missing = [n for n in model.input_names if n not in declared]
    if missing:
        raise spec.error(
            ("known",),
            f"no value or role for the model input(s) {', '.join(missing)}: "
            "list each under unknown, known or uncertain",
        )
    outputs = set(model.output_names)
    for name in spec.measured:
        if name not in outputs:
            raise spec.error(
                ("measured", name),
                f"not an output of the model; its outputs are {', '.join(model.output_names)}",
            )
    unmeasured = [n for n in model.output_names if n not in spec.measured]
    if unmeasured:
        raise spec.error(("measured",), f"missing measured output(s) {', '.join(unmeasured)}")
    return model
