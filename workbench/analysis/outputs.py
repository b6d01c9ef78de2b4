"""Scalar outputs of a scene run (reductions of its trajectory), and the scene-with-outputs adapter
of the analysis :class:`~uncertainty.model.Model` protocol.

A *reduction* turns one recorded run into one number: the value of a body's position or velocity
at an *event* (first contact between two bodies, a coordinate crossing a level) or at a time, the
maximum displacement of a body along a direction, or the time of an event. Reductions are
declared as plain mappings (the layout a YAML spec would use), e.g. the two outputs of Du's
particle-impact example ([1]_, Appendix; ``scenes/du_impact.py``)::

    {name: dA, reduce: position_at_event, body: A, component: x,
     event: {first_contact: [A, floor]}, relative_to: initial, scale: -1}
    {name: dB, reduce: max_displacement, body: B, direction: [0.9397, 0, 0.3420]}

:class:`SceneOutputModel` runs the scene in PyBullet for named parameter values and returns the
reductions: the forward model of an inverse simulation (FORM) with PyBullet in the loop.

Why events are interpolated, not snapped to a record
----------------------------------------------------
FORM and finite-difference gradients need outputs that are smooth in the inputs. A reduction that
picks "the first record in contact" is piecewise constant in time: as an input changes, the event
jumps from one step to the next and the output moves in steps of (speed × dt), e.g. 1.7 mm of d_A
at dt = 1e-3 — a noise level of 3e-3 relative, and finite-difference slopes that are zero or
huge. So every step is recorded, the event's *gap function* g(t) (signed distance between the two
bodies, or the coordinate minus the level) is evaluated at the records around the first record
with g ≤ 0, and the crossing time t* is the root of the cubic through the last four records
(t_(k-3) … t_k, the last being the first at or past contact). The body's position at t* comes from
the cubic through the same records. Those records are all free motion when contacts are processed
only once touching (scene setting ``contact_processing_threshold: 0``): the step that ends at the
first penetrating record detected no contact at its start. PyBullet's semi-implicit Euler step puts
the records of a free flight exactly on a parabola (x_n = x0 + (v0 − g dt/2) t_n − g t_n²/2), so the
cubic reproduces it exactly and t*, x(t*) are as smooth in the inputs as the flight itself;
when the crossing moves past a record, the stencil shifts by one record and still lies on the same
parabola — no jump.

The maximum displacement is treated the same way: the vertex of a parabola fitted to the records
of the rising phase just before the stop. Under constant deceleration (a block sliding to rest
against Coulomb friction) those records lie exactly on one parabola, whichever are used, so the
vertex is smooth in the inputs; the records after a stop are not used, because PyBullet's
resting contacts creep at a few µm/s and the plain maximum of the records would follow the creep
(measured: 2e-6 m over 0.5 s on the sliding block) instead of the stop.

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
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.spatial.transform import Rotation

from workbench.errors import SceneError, SimulationError, WorkbenchError
from workbench.sim.forward import run_scene
from workbench.scene.loader import load_scene
from workbench.scene.model import Scene
from workbench.sim.state import Trajectory

__all__ = [
    "EVENT_NOISE",
    "MOTION_TOL",
    "STOP_SKIP",
    "FIT_RECORDS",
    "REDUCTIONS",
    "Event",
    "Output",
    "EventNotFoundError",
    "parse_output",
    "parse_outputs",
    "crossing_time",
    "value_at",
    "max_displacement",
    "reduce_trajectory",
    "SceneOutputModel",
]

#: Relative noise level declared for scene-output models (finite-difference steps follow from
#: it: h = ε^(1/3) max(|x|, typical) for gradients, ε^(1/4) for Hessians). Measured on
#: ``scenes/du_impact.py`` at (vA0, vB0, e, mu) = (10, 1, 0.6, 0.4), dt = 1e-3:
#: :func:`uncertainty.model.estimate_noise` along each input and along (1, 1, 1, 1)/2 gives
#: 1e-15 … 7e-15 for d_A and d_B with spacing 1e-6, and up to 1.4e-11 for d_B along mu with
#: spacing 1e-4, where the block's stop crosses a record; third differences of 121 evaluations
#: over ±1% of each input put those crossings' jumps at ≤ 4e-11 of d_B (the ball's flight, d_A,
#: shows none). Declaring 1e-10 keeps them below the noise the steps are designed for
#: (h ≈ 5e-4 |x|; truncation and noise errors of a gradient both ~1e-7 relative). Another scene
#: can be noisier: measure it (``estimate_noise(model.evaluate, x, p, 1e-6)`` and a scan) and
#: pass ``noise=``.
EVENT_NOISE = 1e-10

#: Motion along a direction slower than this fraction of the fastest motion along it (per record)
#: counts as rest for :func:`max_displacement`. PyBullet's resting contacts creep at a few µm/s
#: (4e-6 m/s on the sliding block, tests/integration/test_physics.py), 1e-6 of a sliding speed
#: of metres per second; the slowest records just before a stop may fall below the threshold,
#: which only leaves them out of the fit (they lie on the same parabola).
MOTION_TOL = 1e-3

#: Rising records left out before a stop by :func:`max_displacement`, and records fitted. Near
#: rest PyBullet's iterative friction solver deviates: on ``du_impact`` the block's deceleration
#: is constant to 1e-6 relative while sliding but off by up to 1e-4 in the last 3 steps, so a
#: parabola through the last three records moves by ~2e-9 relative each time the stop crosses a
#: record (measured by third differences of d_B along each input). Leaving out 3 records and
#: fitting 20 (least squares, exact for constant deceleration) brings that to ~4e-11; for smooth
#: motion the fit's error over 20 records is about (10 ω dt)⁴/24 of the amplitude for an
#: oscillation of ω rad/s: 3e-8 for ω = 3 rad/s at dt = 1e-3 (estimate).
STOP_SKIP = 3
FIT_RECORDS = 20

#: Closest-point query range (m) for contact gaps: large enough that PyBullet reports a distance
#: for any two bodies of a scene (its pair test does not cost more for a larger range; 7 µs
#: measured for a sphere and a plane).
QUERY_DISTANCE = 1e3

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


class EventNotFoundError(WorkbenchError):
    """An output's event did not happen in the run, so the output is undefined there.

    An inverse solver should treat the inputs as infeasible (no such outcome), not as an error of
    the model. Attributes ``output`` (name) and ``event`` (its description) say which.
    """

    def __init__(self, output: str, event: str, detail: str = ""):
        self.output = output
        self.event = event
        text = f"output '{output}': event {event} did not happen"
        super().__init__(f"{text} ({detail})" if detail else text)


# --------------------------------------------------------------------------------------------
# Specs
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Pure numerics on records
# --------------------------------------------------------------------------------------------

#: Records in an interpolation stencil: a cubic through four records is exact for the parabolic
#: records of a free flight and O(dt⁴) for smooth motion.
STENCIL = 4


def _stencil(k: int, first: int) -> np.ndarray:
    return np.arange(max(first, k - STENCIL + 1), k + 1)


def _poly(t: np.ndarray, y: np.ndarray, idx: np.ndarray, t0: float, scale: float):
    """Coefficients (lowest degree first) of the polynomial through records ``idx`` in
    τ = (t − t0)/scale, which keeps the Vandermonde system well conditioned."""
    tau = (t[idx] - t0) / scale
    return np.polynomial.polynomial.polyfit(tau, y[idx], len(idx) - 1)


def crossing_time(t: np.ndarray, g: np.ndarray, k: int, first: int = 0) -> float:
    """Time where the gap function crosses zero between records k−1 and k.

    Parameters
    ----------
    t : ndarray, shape (nt,)
        Record times, s.
    g : ndarray, shape (nt,)
        Gap at the records (only the stencil k−3 … k is read): g[k−1] > 0 ≥ g[k].
    k : int
        First record at or past the crossing.
    first : int
        Records before it are not used (the search started there).

    Returns
    -------
    float
        The root in [t[k−1], t[k]] of the cubic through records max(first, k−3) … k (a lower
        degree if fewer records exist); ``t[k]`` when k == first.
    """
    if k <= first:
        return float(t[k])
    idx = _stencil(k, first)
    h = float(t[k] - t[k - 1])
    c = _poly(t, np.asarray(g, float), idx, float(t[k]), h)
    lo, hi = float(g[k - 1]), float(g[k])
    if hi == 0.0:
        return float(t[k])
    if not lo > 0 >= hi:
        raise ValueError(f"crossing_time: expected g[k-1] > 0 >= g[k], got {lo}, {hi}")
    f = np.polynomial.polynomial.Polynomial(c)
    # f(-1) = g[k-1] > 0 >= f(0) = g[k] (interpolation), so a root lies in [-1, 0]
    tau = brentq(f, -1.0, 0.0, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    return float(t[k]) + tau * h


def value_at(
    t: np.ndarray, y: np.ndarray, t_star: float, k: int | None = None, first: int = 0
) -> np.ndarray:
    """Value of recorded data at ``t_star`` by the cubic through four records.

    Parameters
    ----------
    t : ndarray, shape (nt,)
    y : ndarray, shape (nt, ...)
    t_star : float
    k : int, optional
        Last record of the stencil (an event's first record at or past it: the stencil then
        holds only records before the event's consequences). Default: the four records around
        ``t_star`` (two on each side where the run allows).
    first : int
        Records before it are not used.
    """
    t = np.asarray(t, float)
    y = np.asarray(y, float)
    nt = t.size
    if k is None:
        j = int(np.searchsorted(t, t_star, side="right"))  # t[j-1] <= t_star < t[j]
        k = min(max(j + 1, first + STENCIL - 1), nt - 1)
    idx = _stencil(k, first)
    if idx.size == 1:
        return y[k].copy()
    h = float(t[idx[-1]] - t[idx[-2]])
    c = _poly(t, y.reshape(nt, -1), idx, float(t[k]), h)
    out = np.polynomial.polynomial.polyval((t_star - float(t[k])) / h, c)
    return np.asarray(out).reshape(y.shape[1:])


def max_displacement(t: np.ndarray, s: np.ndarray, tol: float = MOTION_TOL) -> float:
    """Largest value of a displacement history s(t), s[0] = 0, located between records.

    A record whose increment s[i] − s[i−1] is at most ``tol`` × the largest increment is at rest
    (or moving back). Each rising run of records that ends is a turning point; its maximum is the
    vertex of the parabola fitted to the rising records just before it (:data:`STOP_SKIP`,
    :data:`FIT_RECORDS`; under constant deceleration they all lie on one parabola, so the value
    does not depend on which records are used), or the last rising record if that parabola is
    not concave (an abrupt stop). The result is the largest of
    s[0] and the turning points; creep after a stop (increments below ``tol``) is not counted.

    Raises
    ------
    ValueError
        If s is still rising at the end and above every turning point (the run is too short).
    """
    t = np.asarray(t, float)
    s = np.asarray(s, float)
    if s.size < 2:
        return float(s[0])
    ds = np.diff(s)
    peak = float(np.max(np.abs(ds)))
    if peak == 0:
        return float(s[0])
    rising = ds > tol * peak  # rising[i]: record i+1 moved forward from record i
    best = float(s[0])
    i = 0
    n = rising.size
    while i < n:
        if not rising[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and rising[j + 1]:
            j += 1
        m = j + 1  # last rising record
        if j + 1 >= n:  # still rising at the end of the run
            if s[m] >= best:
                raise ValueError(
                    f"still increasing at the end of the run (t = {t[-1]:g} s): run longer"
                )
            break
        best = max(best, _vertex(t, s, m, first=i))
        i = j + 1
    return best


def _vertex(t: np.ndarray, s: np.ndarray, m: int, first: int) -> float:
    """Maximum near the last rising record m: the vertex of the least-squares parabola through
    the :data:`FIT_RECORDS` rising records before the last :data:`STOP_SKIP` (records from
    ``first`` on); the last three records if the rising run is shorter."""
    idx = np.arange(max(first, m - STOP_SKIP - FIT_RECORDS + 1), m - STOP_SKIP + 1)
    if idx.size < 3:
        idx = np.arange(max(first, m - 2), m + 1)
    if idx.size < 3:
        return float(s[m])
    h = float(t[m] - t[m - 1])
    tau = (t[idx] - t[m]) / h
    c = np.polynomial.polynomial.polyfit(tau, s[idx], 2)
    if not c[2] < 0:  # not decelerating: an abrupt stop, the record is the answer
        return float(s[m])
    tv = -c[1] / (2 * c[2])
    if not tau[0] <= tv <= 3.0:  # the vertex belongs within a few records of the last rising one
        return float(s[m])
    return float(c[0] + c[1] * tv + c[2] * tv * tv)


# --------------------------------------------------------------------------------------------
# Events on a trajectory
# --------------------------------------------------------------------------------------------


class _ContactGap:
    """Signed distance between two bodies at recorded poses, by PyBullet's closest points.

    Poses are put back into the engine the trajectory was run in (same scene, same body order);
    the queries go through ``engine.p`` as the forward run's do.
    """

    def __init__(self, engine, traj: Trajectory, a: int, b: int):
        self.engine = engine
        self.traj = traj
        self.pair = (a, b)
        self.cache: dict[int, float] = {}
        self._bound: np.ndarray | None = None
        frames = engine.frames
        self.moving = [j for j in self.pair if frames[j].mass > 0]
        self.q_inertial = {
            j: (
                Rotation.from_quat(traj.orientation[:, j]) * Rotation.from_quat(frames[j].principal)
            ).as_quat()
            for j in self.moving
        }

    def __call__(self, k: int) -> float:
        hit = self.cache.get(k)
        if hit is not None:
            return hit
        p, c, uids = self.engine.p, self.engine.client, self.engine.uids
        for j in self.moving:
            p.resetBasePositionAndOrientation(
                uids[j],
                self.traj.position[k, j].tolist(),
                self.q_inertial[j][k].tolist(),
                physicsClientId=c,
            )
        a, b = self.pair
        pts = p.getClosestPoints(uids[a], uids[b], QUERY_DISTANCE, physicsClientId=c)
        d = min((pt[8] for pt in pts), default=QUERY_DISTANCE)
        self.cache[k] = float(d)
        return float(d)

    def motion_bound(self) -> np.ndarray:
        """Per record i ≥ 1, an upper bound on how far any point of either body moved since
        record i−1: |Δx_com| + ρ θ, with ρ the body's reach from its centre of mass (from its
        bounding box at record 0) and θ the rotation angle. The gap changes by at most this."""
        if self._bound is not None:
            return self._bound
        nt = self.traj.n_times
        bound = np.zeros(nt)
        p, c, uids = self.engine.p, self.engine.client, self.engine.uids
        for j in self.moving:
            x0 = self.traj.position[0, j]
            p.resetBasePositionAndOrientation(
                uids[j], x0.tolist(), self.q_inertial[j][0].tolist(), physicsClientId=c
            )
            lo, hi = (np.asarray(v) for v in p.getAABB(uids[j], physicsClientId=c))
            corners = np.array(
                [[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
            )
            reach = float(np.max(np.linalg.norm(corners - x0, axis=1)))
            dx = np.linalg.norm(np.diff(self.traj.position[:, j], axis=0), axis=1)
            q = Rotation.from_quat(self.traj.orientation[:, j])
            theta = (q[1:] * q[:-1].inv()).magnitude()
            bound[1:] += dx + reach * theta
        self._bound = bound
        return bound


class _Reducer:
    """Evaluates :class:`Output` s on one trajectory, locating each event once."""

    def __init__(self, traj: Trajectory, engine=None):
        self.traj = traj
        self.engine = engine
        self.t = np.asarray(traj.time, float)
        self._events: dict[Event, tuple[float, int, int]] = {}
        self._gaps: dict[tuple[int, int], _ContactGap] = {}

    # events ----------------------------------------------------------------------------------
    def locate(self, event: Event, output: str) -> tuple[float, int, int]:
        """(t*, k, first): crossing time, first record at or past it, first searched record."""
        if event not in self._events:
            self._events[event] = self._locate(event, output)
        return self._events[event]

    def _locate(self, event: Event, output: str) -> tuple[float, int, int]:
        t = self.t
        first = int(np.searchsorted(t, event.after - 1e-12 * max(1.0, abs(event.after))))
        if first >= t.size:
            raise EventNotFoundError(output, str(event), f"the run ends at t = {t[-1]:g} s")
        if event.kind == "crossing":
            j = self.traj.body_index(event.bodies[0])
            height = self.traj.position[:, j] @ np.asarray(event.axis)
            g = height - event.level if event.moving == "down" else event.level - height
            hits = np.flatnonzero(g[first:] <= 0)
            if hits.size == 0:
                raise EventNotFoundError(output, str(event), f"not by t = {t[-1]:g} s")
            k = first + int(hits[0])
            return crossing_time(t, g, k, first), k, first
        gap = self._gap(event, output)
        k = self._first_contact_record(gap, first)
        if k is None:
            raise EventNotFoundError(output, str(event), f"no contact by t = {t[-1]:g} s")
        g = np.full(t.size, np.nan)
        while True:  # the advancement bound guarantees g > 0 before k; check the stencil
            for i in _stencil(k, first):
                g[i] = gap(int(i))
            early = np.flatnonzero(g[first:k] <= 0)
            if early.size == 0:
                return crossing_time(t, g, k, first), k, first
            k = first + int(early[0])

    def _gap(self, event: Event, output: str) -> _ContactGap:
        if self.engine is None:
            raise WorkbenchError(
                f"output '{output}': a first_contact event needs the PyBullet engine the "
                "trajectory was run in (pass engine=)"
            )
        a, b = (self.traj.body_index(n) for n in event.bodies)
        key = (a, b)
        if key not in self._gaps:
            self._gaps[key] = _ContactGap(self.engine, self.traj, a, b)
        return self._gaps[key]

    def _first_contact_record(self, gap: _ContactGap, first: int) -> int | None:
        """First record ≥ ``first`` with gap ≤ 0, by conservative advancement: from a record
        with gap d > 0, no record is in contact before the bodies could have moved d in total,
        so those records are skipped unqueried."""
        bound = gap.motion_bound()
        reach = np.cumsum(bound)  # reach[i] - reach[k]: motion from record k to i
        nt = self.t.size
        k = first
        while k < nt:
            d = gap(k)
            if d <= 0:
                return k
            # first record whose accumulated motion since k could close the gap (1e-9 margin
            # against rounding of the running sum)
            need = reach[k] + d * (1 - 1e-9)
            k_next = int(np.searchsorted(reach, need, side="left"))
            k = max(k + 1, k_next)
        return None

    # outputs ---------------------------------------------------------------------------------
    def _series(self, out: Output) -> np.ndarray:
        j = self.traj.body_index(out.body)
        data = self.traj.position if out.quantity == "position" else self.traj.linear_velocity
        return data[:, j] @ np.asarray(out.axis)

    def _at_event(self, out: Output, event: Event) -> float:
        t_star, k, first = self.locate(event, out.name)
        if out.reduce == "event_time":
            return t_star
        return float(value_at(self.t, self._series(out), t_star, k=k, first=first))

    def value(self, out: Output) -> float:
        if out.reduce == "max_displacement":
            s = self._series(Output(out.name, out.reduce, body=out.body, axis=out.axis))
            try:
                v = max_displacement(self.t, s - s[0])
            except ValueError as exc:
                raise EventNotFoundError(out.name, "maximum displacement", str(exc)) from None
            return out.scale * v
        if out.reduce == "event_time":
            v = self._at_event(out, out.event)
        elif out.reduce == "value_at_time":
            if out.time > self.t[-1] * (1 + 1e-12):
                raise WorkbenchError(
                    f"output '{out.name}': time {out.time:g} s is after the run's end "
                    f"({self.t[-1]:g} s)"
                )
            v = float(value_at(self.t, self._series(out), out.time))
        else:
            v = self._at_event(out, out.event)
        ref = out.relative_to
        if isinstance(ref, Event):
            v -= self._at_event(out, ref)
        elif ref == "initial":
            v -= float(self._series(out)[0])
        elif ref is not None:
            v -= float(ref)
        return out.scale * v


def reduce_trajectory(traj: Trajectory, outputs: Sequence[Output], engine=None) -> np.ndarray:
    """Values of ``outputs`` on a recorded run, shape (n_out,).

    Parameters
    ----------
    traj : Trajectory
        Recorded every step (events are interpolated between records; coarser records give
        coarser answers).
    outputs : sequence of Output
    engine : Engine, optional
        The :class:`~workbench.sim.engine.Engine` built with the trajectory's scene; needed for
        ``first_contact`` events (closest-point queries). Its bodies are moved.

    Raises
    ------
    EventNotFoundError
        An output's event did not happen.
    """
    r = _Reducer(traj, engine)
    return np.array([r.value(o) for o in outputs], dtype=float)


# --------------------------------------------------------------------------------------------
# Model adapter
# --------------------------------------------------------------------------------------------


class SceneOutputModel:
    """A scene run forward in PyBullet, reduced to named scalar outputs: the
    :class:`~uncertainty.model.Model` protocol with PyBullet in the loop.

    Parameters
    ----------
    scene : str, Path or Scene
        A YAML scene or a scene script (``.py``: rebuilt by its ``build(**parameters)`` for
        every evaluation, so its file must stay readable), or a loaded scene.
    inputs : sequence of str
        Model inputs: declared scene parameters.
    outputs : sequence of mapping or Output
        Reductions (see :func:`parse_output`); their names are the output names.
    overrides : mapping, optional
        Fixed values of other scene parameters.
    dt, duration : float, optional
        Time step and run length, s (default: the scene's, for each input). Every step is
        recorded.
    noise : float
        Relative noise level for finite-difference steps (default :data:`EVENT_NOISE`, measured
        on the du_impact scene).

    Notes
    -----
    ``evaluate`` raises :class:`EventNotFoundError` when an output's event does not happen (an
    inverse solver should treat the point as infeasible), :class:`~workbench.errors.SceneError`
    when the inputs make no valid scene (e.g. a negative friction), and
    :class:`~workbench.errors.SimulationError` when the run becomes non-finite. One DIRECT client
    is reused (rebuilt with ``resetSimulation``, bit-reproducible); :meth:`close` it.
    """

    def __init__(
        self,
        scene: str | Path | Scene,
        inputs: Sequence[str],
        outputs: Sequence[Mapping | Output],
        *,
        overrides: Mapping[str, Any] | None = None,
        dt: float | None = None,
        duration: float | None = None,
        noise: float = EVENT_NOISE,
    ):
        self.overrides = dict(overrides or {})
        if not isinstance(scene, Scene):
            scene = Path(scene).resolve()
        src = str(scene if isinstance(scene, Path) else scene.source)
        # A script's bodies are computed by its build(): it is re-run for every evaluation (a
        # loaded script scene keeps build()'s numbers, so with_parameters would change nothing);
        # a loaded one keeps the parameter values it was built with.
        self._script: Path | None = None
        if src.endswith(".py"):
            if isinstance(scene, Scene):
                self.overrides = {**scene.parameters, **self.overrides}
            self._script = Path(src).resolve()
            if not self._script.is_file():
                raise SceneError(
                    src, "", "scene script not found: pass its path to re-run build() per input"
                )
            self.scene = load_scene(self._script, self.overrides)
        elif isinstance(scene, Scene):
            self.scene = scene.with_parameters(self.overrides) if self.overrides else scene
        else:
            self.scene = load_scene(scene, self.overrides)
        src = self.scene.source
        self.input_names = tuple(inputs)
        declared = set(self.scene.parameters)
        for name in self.input_names:
            if name not in declared:
                raise SceneError(
                    src,
                    "parameters",
                    f"model input '{name}' is not a declared scene parameter; declared: "
                    f"{', '.join(sorted(declared)) or '(none)'}",
                )
        if len(set(self.input_names)) != len(self.input_names):
            raise WorkbenchError(f"scene output model: repeated inputs {self.input_names}")
        self.outputs = parse_outputs(outputs, self.scene.body_names, f"{src} outputs")
        self.output_names = tuple(o.name for o in self.outputs)
        # None: the scene's own, per evaluation (a script may size its run to the inputs)
        self.dt = None if dt is None else float(dt)
        self.duration = None if duration is None else float(duration)
        for name, value in (("dt", self.dt), ("duration", self.duration)):
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise WorkbenchError(f"scene output model: {name} must be positive, got {value}")
        end = self.duration if self.duration is not None else self.scene.settings.duration
        for o in self.outputs:
            if o.time is not None and o.time > end:
                raise SceneError(
                    src,
                    f"outputs.{o.name}.time",
                    f"{o.time:g} s is after the end of the run ({end:g} s)",
                )
        self.noise = float(noise)
        self._engine = None
        self.n_runs = 0
        self.last_trajectory: Trajectory | None = None

    def scene_at(self, x: np.ndarray) -> Scene:
        """The scene with inputs ``x``, shape (n_in,), recording every step."""
        values = dict(zip(self.input_names, map(float, x), strict=True))
        if self._script is not None:
            scene = load_scene(self._script, {**self.overrides, **values})
        else:
            scene = self.scene.with_parameters(values) if values else self.scene
        return scene.with_settings(dt=self.dt, duration=self.duration, record_every=1)

    def run(self, x: np.ndarray) -> Trajectory:
        """Run the scene at inputs ``x``; the trajectory is also kept as ``last_trajectory``."""
        from workbench.sim.engine import Engine

        scene = self.scene_at(np.asarray(x, float).reshape(-1))
        if self._engine is None:
            self._engine = Engine(scene)
        traj = run_scene(scene, engine=self._engine)
        self.n_runs += 1
        self.last_trajectory = traj
        if traj.status != "ok":
            inputs = ", ".join(f"{n}={v:g}" for n, v in zip(self.input_names, x, strict=True))
            raise SimulationError(f"{scene.source} at {inputs}: {traj.message}", traj)
        return traj

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """Outputs, shape (n_out,), at inputs ``x``, shape (n_in,)."""
        traj = self.run(x)
        return reduce_trajectory(traj, self.outputs, self._engine)

    def __call__(self, inputs: Mapping[str, float]) -> dict[str, float]:
        """Named inputs -> named outputs (uncached; wrap in CachedModel for analyses)."""
        x = np.array([float(inputs[k]) for k in self.input_names])
        return dict(zip(self.output_names, map(float, self.evaluate(x)), strict=True))

    def close(self) -> None:
        """Disconnect the PyBullet client."""
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def __getstate__(self) -> dict:
        """Picklable for process pools: the client is not sent (each process makes its own)."""
        state = dict(self.__dict__)
        state["_engine"] = None
        state["last_trajectory"] = None
        return state

    def __enter__(self) -> SceneOutputModel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
