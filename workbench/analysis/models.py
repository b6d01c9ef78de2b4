"""The model a spec names: one :func:`build_model` for inference and inverse specs.

A spec's ``model`` section names Python code (``function: module:name`` or ``file.py:name``,
loaded by :func:`workbench.specs.load_user_object`) or a scene run in PyBullet. The result is an
:class:`uncertainty.model.Model`:

- inference spec: a response function y(x; θ) (:class:`~uncertainty.model.FunctionModel`) or a
  scene's observer channel (:class:`~workbench.analysis.scene_model.SceneModel`) at the data's x,
  in a :class:`~uncertainty.model.CachedModel` whose finite-difference scales are the priors'
  standard deviations;
- inverse spec: a Model class (with ``options``), object or plain function (with ``outputs``),
  or a scene's output reductions (:class:`~workbench.analysis.outputs.SceneOutputModel`), checked
  against the spec's unknown, known, uncertain and measured names.

Errors are :class:`~workbench.specs.SpecError` lines naming the spec's ``model`` field.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from uncertainty.errors import UncertaintyError
from uncertainty.model import (
    MACHINE_NOISE,
    CachedModel,
    FunctionModel,
    NamedFunctionModel,
    ResponseFunction,
)
from workbench.analysis.inference_spec import FunctionModelSpec, InferenceSpec, SceneModelSpec
from workbench.analysis.inverse_spec import InverseSpec
from workbench.errors import SceneError, SpecError, UserCodeError, WorkbenchError
from workbench.specs import LocatedSpec, load_user_object

__all__ = ["build_model", "response_function", "build_scene_model"]

#: Where a spec names its Python model.
_FUNCTION = ("model", "function")


def build_model(spec: InferenceSpec | InverseSpec, x: np.ndarray | None = None):
    """The :class:`~uncertainty.model.Model` of a spec's ``model`` section.

    Parameters
    ----------
    spec : InferenceSpec or InverseSpec
    x : array_like, shape (N,), optional
        Inference specs: where the response is evaluated (default: the data's x).

    Raises
    ------
    SpecError
        The model cannot be loaded or built, or (inverse) its inputs and outputs do not match the
        spec's roles.
    """
    if isinstance(spec, InverseSpec):
        return _checked_roles(spec, _inverse_model(spec))
    x = spec.x if x is None else np.asarray(x, float)
    typical = [spec.priors[n].std for n in spec.names]
    if isinstance(spec.model, FunctionModelSpec):
        try:
            model = FunctionModel(response_function(spec), x, spec.names, spec.model.constants)
        except UncertaintyError as exc:
            raise spec.error(("model",), str(exc)) from None
    else:
        constants = dict(spec.model.constants)
        shift: str | float | None = spec.model.time_shift
        if shift is not None and shift not in spec.names:  # a known clock offset
            if shift not in constants:
                raise spec.error(
                    ("model", "time_shift"),
                    f"'{shift}' is neither inferred nor given in model.constants",
                )
            shift = constants.pop(shift)
        try:
            model = build_scene_model(spec, spec.names, x, time_shift=shift, overrides=constants)
        except SpecError:
            raise
        except WorkbenchError as exc:
            raise spec.error(("model",), str(exc)) from None
    return CachedModel(model, typical=typical)


def _user_object(spec: LocatedSpec, ref: str):
    """The object ``model.function`` names, or None when its module has no such name."""
    try:
        return load_user_object(ref, base_dir=spec.base_dir)  # type: ignore[attr-defined]
    except UserCodeError as exc:
        raise spec.error(_FUNCTION, str(exc)) from None


def response_function(spec: InferenceSpec) -> ResponseFunction:
    """The response function named by an inference spec's ``model.function``."""
    ref = spec.model.function  # type: ignore[union-attr]
    obj = _user_object(spec, ref)
    if obj is None or not callable(obj) and not isinstance(obj, ResponseFunction):
        mod_name, _, attr = ref.rpartition(":")
        raise spec.error(_FUNCTION, f"{mod_name} has no function '{attr}'")
    try:
        return ResponseFunction.from_callable(obj)
    except UncertaintyError as exc:
        raise spec.error(_FUNCTION, str(exc)) from None


def build_scene_model(
    spec: InferenceSpec,
    inputs: Sequence[str],
    times: np.ndarray,
    *,
    time_shift: str | float | None,
    overrides: Mapping[str, float],
):
    """The :class:`~workbench.analysis.scene_model.SceneModel` of an inference spec's scene
    model section, with these inputs, times, clock shift and fixed scene parameters.

    Raises
    ------
    WorkbenchError
        The scene's own errors (a missing file, an undeclared parameter, ...).
    """
    # PyBullet is loaded only when a spec runs a scene
    from workbench.analysis.scene_model import SceneModel

    m = spec.model
    assert isinstance(m, SceneModelSpec)
    return SceneModel(
        spec.base_dir / m.scene,
        inputs,
        times,
        m.observer,
        m.component,
        scale=m.scale,
        time_shift=time_shift,
        overrides=overrides,
        dt=m.dt,
        before=m.before,
    )


def _inverse_model(spec: InverseSpec):
    """The model of an inverse spec, before its roles are checked."""
    ms = dict(spec.model_spec)
    if "function" in ms:
        extra = set(ms) - {"function", "options", "outputs", "noise"}
        if extra:
            raise spec.error(("model", sorted(extra)[0]), "unknown field")
        ref = str(ms["function"])
        obj = _user_object(spec, ref)
        if obj is None:
            mod_name, _, attr = ref.rpartition(":")
            raise spec.error(_FUNCTION, f"{mod_name} has no attribute '{attr}'")
        if inspect.isclass(obj):
            try:
                return obj(**(ms.get("options") or {}))
            except TypeError as exc:
                raise spec.error(("model", "options"), str(exc)) from None
        if hasattr(obj, "evaluate") and hasattr(obj, "input_names"):
            return obj
        if not callable(obj):
            raise spec.error(_FUNCTION, "expected a Model class, object or function")
        outputs = ms.get("outputs")
        if not outputs:
            raise spec.error(
                ("model", "outputs"), "a plain function needs the names of its outputs"
            )
        return NamedFunctionModel(obj, outputs, float(ms.get("noise", MACHINE_NOISE)))
    # PyBullet is loaded only when a spec runs a scene
    from workbench.analysis.outputs import SceneOutputModel

    scene = spec.base_dir / str(ms["scene"])
    if not Path(scene).is_file():
        raise spec.error(("model", "scene"), f"{scene}: file not found")
    inputs = list(spec.unknowns) + list(spec.known) + list(spec.uncertain)
    try:
        return SceneOutputModel(
            scene,
            inputs,
            ms.get("outputs") or [],
            **{k: v for k, v in ms.items() if k not in ("scene", "outputs")},
        )
    except (SceneError, UncertaintyError, ValueError, TypeError) as exc:
        raise spec.error(("model",), str(exc)) from None


def _checked_roles(spec: InverseSpec, model):
    """``model`` if every input has exactly one role in the spec and every output is measured."""
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
