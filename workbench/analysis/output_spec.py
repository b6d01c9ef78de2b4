"""Declarations of scene-run outputs: what a reduction of a run to one number is (:class:`Output`,
:class:`Event`), and their parsing and checking from plain mappings (the layout a YAML spec
uses), e.g. the two outputs of Du's particle-impact example ([1]_, Appendix;
``scenes/du_impact.py``)::

    {name: dA, reduce: position_at_event, body: A, component: x,
     event: {first_contact: [A, floor]}, relative_to: initial, scale: -1}
    {name: dB, reduce: max_displacement, body: B, direction: [0.9397, 0, 0.3420]}

:mod:`workbench.analysis.outputs` evaluates them on runs.

References
----------
.. [1] X. Du, Inverse simulation under uncertainty by optimization, J. Comput. Inf. Sci. Eng.
       13(2) (2013) 021005: the particle-impact example (§4) and its Appendix, Eqs. (36)-(43).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.errors import SceneError

__all__ = [
    "REDUCTIONS",
    "Event",
    "Output",
    "parse_output",
    "parse_outputs",
]

#: Reductions: ``reduce`` name -> what it returns.
REDUCTIONS = {
    "value_at_event": "a body's position or velocity component at an event",
    "position_at_event": "a body's position component at an event (value_at_event, position)",
    "value_at_time": "a body's position or velocity component at a time",
    "max_displacement": "the largest displacement of a body along a direction from t = 0",
    "event_time": "the time of an event",
}

_QUANTITIES = ("position", "velocity")
_COMPONENTS = {"x": 0, "y": 1, "z": 2}
_EVENT_KINDS = ("first_contact", "crossing")


@dataclass(frozen=True)
class Event:
    """An event of a run, located between records by interpolation.

    Attributes
    ----------
    kind : str
        ``"first_contact"``: the signed distance between ``bodies[0]`` and ``bodies[1]`` first
        reaches 0. ``"crossing"``: ``axis · x_com(bodies[0])`` first reaches ``level`` moving
        ``moving`` (``"down"``: from above, ``"up"``: from below).
    bodies : tuple of str
    axis : tuple of float, length 3, optional
        Unit vector of the crossing coordinate (world frame).
    level : float
        Crossing level, m.
    moving : str
        ``"down"`` or ``"up"``.
    after : float
        Only records at or after this time, s, are searched.
    """

    kind: str
    bodies: tuple[str, ...]
    axis: tuple[float, float, float] | None = None
    level: float = 0.0
    moving: str = "down"
    after: float = 0.0

    def __str__(self) -> str:
        tail = f" after t = {self.after:g} s" if self.after else ""
        if self.kind == "first_contact":
            return f"first_contact [{', '.join(self.bodies)}]{tail}"
        below = "below" if self.moving == "down" else "above"
        return f"crossing of {self.bodies[0]}·{_axis_text(self.axis)} {below} {self.level:g}{tail}"


@dataclass(frozen=True)
class Output:
    """One reduction of a run to a number; build it with :func:`parse_output`.

    The result is ``scale × (value − reference)``; ``reference`` is 0, a number, the same
    quantity at t = 0 (``"initial"``), or the same quantity at another :class:`Event`.
    """

    name: str
    reduce: str
    body: str | None = None
    quantity: str = "position"
    axis: tuple[float, float, float] | None = None
    event: Event | None = None
    time: float | None = None
    relative_to: float | str | Event | None = None
    scale: float = 1.0


def _axis_text(axis) -> str:
    for label, j in _COMPONENTS.items():
        if axis is not None and axis[j] == 1.0:
            return label
    return "[" + ", ".join(f"{a:.4g}" for a in (axis or ())) + "]"


class _SpecError(ValueError):
    def __init__(self, field: str, msg: str):
        super().__init__(msg)
        self.field = field


def _unit(value: Any, field: str) -> tuple[float, float, float]:
    try:
        v = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise _SpecError(field, f"expected a 3-vector, got {value!r}") from None
    n = float(np.linalg.norm(v)) if v.shape == (3,) else 0.0
    if v.shape != (3,) or not math.isfinite(n) or n == 0:
        raise _SpecError(field, f"expected a non-zero 3-vector, got {value!r}")
    return tuple(float(a) for a in v / n)  # type: ignore[return-value]


def _component_axis(spec: Mapping, required: bool) -> tuple[float, float, float] | None:
    if "component" in spec and "direction" in spec:
        raise _SpecError("component", "give 'component' or 'direction', not both")
    if "direction" in spec:
        return _unit(spec["direction"], "direction")
    if "component" in spec:
        c = spec["component"]
        j = _COMPONENTS.get(c) if isinstance(c, str) else c
        if not isinstance(j, int) or isinstance(j, bool) or j not in (0, 1, 2):
            raise _SpecError("component", f"expected x, y, z or 0, 1, 2, got {c!r}")
        axis = [0.0, 0.0, 0.0]
        axis[j] = 1.0
        return tuple(axis)  # type: ignore[return-value]
    if required:
        raise _SpecError("component", "expected 'component' (x, y, z) or 'direction' [dx, dy, dz]")
    return None


def _number(value: Any, field: str) -> float:
    if isinstance(value, bool):
        raise _SpecError(field, f"expected a number, got {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise _SpecError(field, f"expected a number, got {value!r}") from None
    if not math.isfinite(out):
        raise _SpecError(field, f"expected a finite number, got {value!r}")
    return out


def _check_keys(spec: Mapping, allowed: Sequence[str], where: str = "") -> None:
    for key in spec:
        if key not in allowed:
            near = difflib.get_close_matches(str(key), list(allowed), n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            raise _SpecError(
                f"{where}{key}", f"unknown field{hint}; expected one of {', '.join(allowed)}"
            )


def _body(name: Any, bodies: Sequence[str], field: str) -> str:
    if name not in bodies:
        raise _SpecError(field, f"no body {name!r}; the scene has {', '.join(bodies)}")
    return str(name)


def _parse_event(spec: Mapping, bodies: Sequence[str]) -> Event:
    """An :class:`Event` from ``{first_contact: [a, b]}`` or ``{crossing: {body, component (or
    a 3-vector direction), level, moving: down|up}}``, each with an optional ``after: t`` (s).
    Raises ``_SpecError`` naming the field; :func:`parse_output` turns it into a SceneError."""
    if not isinstance(spec, Mapping):
        raise _SpecError(
            "event", f"expected a mapping such as {{first_contact: [A, B]}}, got {spec!r}"
        )
    _check_keys(spec, (*_EVENT_KINDS, "after"), "event.")
    kinds = [k for k in _EVENT_KINDS if k in spec]
    if len(kinds) != 1:
        raise _SpecError("event", f"expected exactly one of {', '.join(_EVENT_KINDS)}")
    after = _number(spec.get("after", 0.0), "event.after")
    if kinds[0] == "first_contact":
        pair = spec["first_contact"]
        if not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2:
            raise _SpecError("event.first_contact", f"expected two body names, got {pair!r}")
        a = _body(pair[0], bodies, "event.first_contact[0]")
        b = _body(pair[1], bodies, "event.first_contact[1]")
        if a == b:
            raise _SpecError("event.first_contact", "expected two different bodies")
        return Event("first_contact", (a, b), after=after)
    cross = spec["crossing"]
    if not isinstance(cross, Mapping):
        raise _SpecError("event.crossing", "expected {body, component, level, moving}")
    _check_keys(cross, ("body", "component", "direction", "level", "moving"), "event.crossing.")
    body = _body(cross.get("body"), bodies, "event.crossing.body")
    # the axis is 'component' or a 3-vector 'direction'; 'moving' says down or up
    axis = _component_axis(cross, required=True)
    moving = cross.get("moving", "down")
    if moving not in ("down", "up"):
        raise _SpecError("event.crossing.moving", f"expected 'down' or 'up', got {moving!r}")
    if "level" not in cross:
        raise _SpecError("event.crossing.level", "expected the level to cross, m")
    level = _number(cross["level"], "event.crossing.level")
    return Event("crossing", (body,), axis=axis, level=level, moving=moving, after=after)


_OUTPUT_KEYS = (
    "name",
    "reduce",
    "body",
    "quantity",
    "component",
    "direction",
    "event",
    "time",
    "relative_to",
    "scale",
)


def parse_output(spec: Mapping, bodies: Sequence[str], source: str = "outputs") -> Output:
    """Check one reduction spec against the scene's bodies and build an :class:`Output`.

    Fields: ``name``; ``reduce`` (one of :data:`REDUCTIONS`); ``body``; ``quantity``
    (``position`` or ``velocity``, of the centre of mass); ``component`` (x, y, z) or
    ``direction`` (3-vector, normalized): the value is its projection; ``event``
    (``{first_contact: [a, b]}`` or ``{crossing: {body, component or direction, level,
    moving: down|up}}``, each with an optional ``after: t``; see :class:`Event`); ``time`` (s,
    for ``value_at_time``); ``relative_to`` (``initial``, a number, or ``{event: ...}``:
    subtract the same quantity there); ``scale`` (factor, default 1).

    Raises
    ------
    SceneError
        ``source: name.field: what was expected``.
    """
    name = spec.get("name", "?") if isinstance(spec, Mapping) else "?"
    try:
        return _parse_output(spec, bodies)
    except _SpecError as exc:
        raise SceneError(source, f"{name}.{exc.field}", str(exc)) from None


def _parse_output(spec: Any, bodies: Sequence[str]) -> Output:
    if not isinstance(spec, Mapping):
        raise _SpecError("", f"expected a mapping with 'name' and 'reduce', got {spec!r}")
    _check_keys(spec, _OUTPUT_KEYS)
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise _SpecError("name", "expected a name for the output")
    reduce = spec.get("reduce")
    if reduce not in REDUCTIONS:
        raise _SpecError("reduce", f"expected one of {', '.join(REDUCTIONS)}, got {reduce!r}")
    scale = _number(spec.get("scale", 1.0), "scale")

    def forbid(*keys: str) -> None:
        for k in keys:
            if k in spec:
                raise _SpecError(k, f"'{reduce}' takes no '{k}'")

    def event_of(value: Any, field: str) -> Event:
        try:
            return _parse_event(value, bodies)
        except _SpecError as exc:
            raise _SpecError(exc.field.replace("event", field, 1), str(exc)) from None

    def relative(allow_initial: bool) -> float | str | Event | None:
        ref = spec.get("relative_to")
        if ref is None:
            return None
        if isinstance(ref, str) and ref == "initial" and allow_initial:
            return "initial"
        if isinstance(ref, Mapping):
            _check_keys(ref, ("event",), "relative_to.")
            if "event" not in ref:
                raise _SpecError("relative_to", "expected {event: {...}}")
            return event_of(ref["event"], "relative_to.event")
        if isinstance(ref, (int, float)) and not isinstance(ref, bool):
            return _number(ref, "relative_to")
        what = (
            "'initial', a number or {event: ...}" if allow_initial else "a number or {event: ...}"
        )
        raise _SpecError("relative_to", f"expected {what}, got {ref!r}")

    if reduce == "event_time":
        forbid("body", "quantity", "component", "direction", "time")
        if "event" not in spec:
            raise _SpecError("event", "expected the event whose time is the output")
        return Output(
            name,
            reduce,
            event=event_of(spec["event"], "event"),
            relative_to=relative(False),
            scale=scale,
        )
    body = _body(spec.get("body"), bodies, "body")
    if reduce == "max_displacement":
        forbid("quantity", "event", "time", "relative_to")
        return Output(name, reduce, body=body, axis=_component_axis(spec, True), scale=scale)
    quantity = "position" if reduce == "position_at_event" else spec.get("quantity", "position")
    if reduce == "position_at_event" and spec.get("quantity", "position") != "position":
        raise _SpecError("quantity", "position_at_event is a position; use value_at_event")
    if quantity not in _QUANTITIES:
        raise _SpecError("quantity", f"expected one of {', '.join(_QUANTITIES)}, got {quantity!r}")
    axis = _component_axis(spec, required=True)
    if reduce == "value_at_time":
        forbid("event")
        if "time" not in spec:
            raise _SpecError("time", "expected the time, s")
        t = _number(spec["time"], "time")
        if t < 0:
            raise _SpecError("time", f"expected a time >= 0, got {t}")
        return Output(
            name,
            reduce,
            body=body,
            quantity=quantity,
            axis=axis,
            time=t,
            relative_to=relative(True),
            scale=scale,
        )
    forbid("time")
    if "event" not in spec:
        raise _SpecError("event", "expected the event, e.g. {first_contact: [A, floor]}")
    return Output(
        name,
        "value_at_event",
        body=body,
        quantity=quantity,
        axis=axis,
        event=event_of(spec["event"], "event"),
        relative_to=relative(True),
        scale=scale,
    )


def parse_outputs(
    specs: Sequence[Mapping | Output], bodies: Sequence[str], source: str = "outputs"
) -> tuple[Output, ...]:
    """:func:`parse_output` for each spec (an :class:`Output` passes through); names unique."""
    out = tuple(s if isinstance(s, Output) else parse_output(s, bodies, source) for s in specs)
    if not out:
        raise SceneError(source, "", "expected at least one output")
    seen: set[str] = set()
    for o in out:
        if o.name in seen:
            raise SceneError(source, o.name, "duplicate output name")
        seen.add(o.name)
    return out
