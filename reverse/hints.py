"""User hints for reverse runs: how a body at rest got there (Twigg & James 2008 §3, §4
"Sliding, skidding, and bouncing": per-contact friction directions, goal speeds and normal goals).

A hints file (YAML)::

    hints:
      - body: block
        slide: {direction: [1, 0, 0], speed: 2.0}   # it slid in along +x (forward time)
      - body: ball
        bounce: 0.15                                # it landed at 0.15 m/s (m/s, < ε)
      - body: wheel
        roll: {direction: [0, 1, 0], speed: 1.0}    # it rolled in along +y without slipping
        at: 0.2                                     # 0.2 s before the final state
      - body: base
        free: false                                 # never starts moving (§4 "Stacking")

Each hint sets the goal velocities of the body's contacts at the one backward step taken at
reverse time ``at`` (seconds before the scene's final state, default 0): ``slide`` the goal
tangential velocity of Eq. 9–10 (and the friction direction ``w_i``), ``bounce`` the normal goal
``v_n^goal`` of Eq. 8, ``roll`` the goal angular velocity ``n × v / r`` of the rolling rows
(``r``: distance from the centre of mass to the contact) with zero slip. After that step the
body's own motion carries on: a sliding contact has maximal friction, a rolling one maximal
rolling resistance, so the body keeps gaining speed backward.

``free`` overrides the free-to-bounce test of §4 "Stacking" for a body (the paper's user
override): ``true`` lets goals start it moving whatever its contacts, ``false`` never does; a
body with ``free: false`` is also treated as constrained by the attraction option.

This module is pure (no PyBullet); :func:`load_hints` reports bad files in one line.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

from reverse.dynamics import ContactSet, Goals
from workbench.errors import SceneError, UserCodeError
from workbench.specs import dump_yaml, load_user_object, read_document

__all__ = [
    "Hint",
    "HintPolicy",
    "load_hints",
    "parse_hints",
    "free_overrides",
    "script_hints",
    "late_hints",
    "MAX_HINT_SPEED",
    "MIN_ROLL_ARM",
]

_KINDS = ("slide", "bounce", "roll", "free")

#: Largest hint speed (slide, roll, bounce), m/s. The contact laws of the stepper (Newton
#: restitution, Coulomb friction, rigid bodies) describe impacts and sliding far below the speed
#: of sound in the bodies (≈ 1–6 km/s in solids); at 1 km/s (three times the speed of sound in
#: air, a rifle bullet's speed) an impact is ballistic: the bodies deform, melt or break. Beyond
#: it a speed is a unit slip (mm/s typed as m/s), and at 1e200 m/s the LCP's rows overflow and
#: the goal was silently lost. The bound is inclusive.
MAX_HINT_SPEED = 1.0e3

#: Shortest lever arm of a rolling goal, m: the distance from the body's centre of mass to the
#: contact point. Below it the contact sits at the centre of mass (a body inside another), no
#: rolling axis is defined and ω = n × v / r would be infinite; such contacts get no rolling goal.
#: 1 nm is far below any body size the engine resolves (PyBullet's collision margins are ≥ 1e-4 m).
MIN_ROLL_ARM = 1.0e-9


@dataclass(frozen=True)
class Hint:
    body: str
    kind: str  # slide | bounce | roll | free (speed 1: free, 0: constrained)
    direction: np.ndarray  # unit (zeros for bounce)
    speed: float
    at: float = 0.0
    #: Where the hint is in its file (``hints[2]``), for messages.
    where: str = ""


def _unit(source, where, value) -> np.ndarray:
    try:
        d = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        d = np.zeros(0)
    if d.shape != (3,) or not np.all(np.isfinite(d)) or np.linalg.norm(d) == 0:
        raise SceneError(source, where, "expected a non-zero vector of 3 numbers")
    return d / np.linalg.norm(d)


def _number(source, where, value, *, positive=False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
        raise SceneError(source, where, f"expected a number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise SceneError(
            source,
            where,
            f"expected a {'positive' if positive else 'non-negative'} number, got {value!r}",
        )
    return float(value)


def _speed(source, where, value) -> float:
    """A positive speed of at most :data:`MAX_HINT_SPEED`, m/s."""
    speed = _number(source, where, value, positive=True)
    if speed > MAX_HINT_SPEED:
        raise SceneError(
            source,
            where,
            f"expected a speed of at most {MAX_HINT_SPEED:g} m/s (beyond it no rigid-body "
            f"contact law holds), got {value!r}",
        )
    return speed


def parse_hints(data, body_names, source: str = "<hints>") -> list[Hint]:
    """Validate parsed YAML ``data`` against the scene's ``body_names``."""
    if data is None:
        return []
    if not isinstance(data, dict) or set(data) - {"hints"}:
        raise SceneError(source, "", "expected a mapping with one key 'hints' (a list)")
    items = data.get("hints") or []
    if not isinstance(items, list):
        raise SceneError(source, "hints", "expected a list of hints")
    out = []
    for i, item in enumerate(items):
        loc = f"hints[{i}]"
        if not isinstance(item, dict):
            raise SceneError(
                source, loc, "expected a mapping with 'body' and one of " + ", ".join(_KINDS)
            )
        unknown = set(item) - {"body", "at", *_KINDS}
        if unknown:
            raise SceneError(
                source,
                f"{loc}.{sorted(unknown)[0]}",
                "unknown key; expected body, at, " + ", ".join(_KINDS),
            )
        body = item.get("body")
        if body not in body_names:
            raise SceneError(
                source, f"{loc}.body", f"no body {body!r}; bodies are {', '.join(body_names)}"
            )
        kinds = [k for k in _KINDS if k in item]
        if len(kinds) != 1:
            raise SceneError(source, loc, "expected exactly one of " + ", ".join(_KINDS))
        kind = kinds[0]
        at = _number(source, f"{loc}.at", item.get("at", 0.0))
        spec = item[kind]
        if kind == "bounce":
            speed = _speed(source, f"{loc}.bounce", spec)
            out.append(Hint(body, kind, np.zeros(3), speed, at, loc))
            continue
        if kind == "free":
            if not isinstance(spec, bool):
                raise SceneError(source, f"{loc}.free", f"expected true or false, got {spec!r}")
            out.append(Hint(body, kind, np.zeros(3), float(spec), at, loc))
            continue
        if not isinstance(spec, dict) or set(spec) != {"direction", "speed"}:
            raise SceneError(source, f"{loc}.{kind}", "expected {direction: [x, y, z], speed: m/s}")
        d = _unit(source, f"{loc}.{kind}.direction", spec["direction"])
        speed = _speed(source, f"{loc}.{kind}.speed", spec["speed"])
        out.append(Hint(body, kind, d, speed, at, loc))
    return out


def late_hints(hints, n_steps: int, dt: float) -> list[Hint]:
    """The hints whose ``at`` lies after the last backward step of a run of ``n_steps`` steps of
    ``dt`` seconds: they never act (:meth:`HintPolicy.active` picks the step starting within
    half a step of ``at``). ``free`` hints act on every step and are never late. A shorter run
    than the hints were written for is legitimate (a script's hints cover its whole fall), so
    the caller warns rather than refuses."""
    last = (n_steps - 0.5) * dt
    return [h for h in hints if h.kind != "free" and h.at >= last]


def free_overrides(hints, body_names) -> np.ndarray:
    """Per body: 1 free to bounce, 0 constrained, −1 decided by the test (the ``free`` hints)."""
    out = np.full(len(body_names), -1, dtype=int)
    index = {name: k for k, name in enumerate(body_names)}
    for h in hints:
        if h.kind == "free":
            out[index[h.body]] = int(h.speed > 0)
    return out


def load_hints(path, body_names) -> list[Hint]:
    """Read and validate a hints file; :class:`~workbench.errors.SceneError` names the field."""
    doc = read_document(path, "hints", SceneError)
    return parse_hints(doc.data, body_names, doc.source)


def script_hints(path, parameters, body_names) -> tuple[list[Hint], str]:
    """Hints from a scene script's ``hints(**parameters)`` function (``--hints script``): the
    script that builds a large final state (thousands of balls) also says how each body got
    there. Returns the hints and their YAML text (stored with the run).

    ``parameters`` are the scene's resolved parameters; ``hints`` receives those its signature
    accepts (or all of them with ``**kwargs``).
    """
    source = str(path)
    if not source.endswith(".py"):
        raise SceneError(source, "--hints script", "only a scene script (.py) can give hints")
    try:
        fn = load_user_object(source, name="hints")
    except UserCodeError as exc:
        raise SceneError(source, "", str(exc)) from None
    if not callable(fn):
        raise SceneError(source, "hints", "--hints script needs a function hints(**parameters)")
    sig = inspect.signature(fn)
    takes_all = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    kwargs = {k: v for k, v in parameters.items() if takes_all or k in sig.parameters}
    try:
        data = fn(**kwargs)
    except Exception as exc:
        raise SceneError(source, "hints", f"raised {type(exc).__name__}: {exc}") from None
    hints = parse_hints(data, body_names, f"{source}: hints()")
    return hints, dump_yaml(data)


class HintPolicy:
    """Goals of each backward step from the hints (the ``goals`` callable of
    :meth:`reverse.stepper.Stepper.backward`).

    Parameters
    ----------
    hints : list of Hint
    body_names : tuple of str
    dt : float
    epsilon : float
        Restitution cut-off; a bounce goal must stay below it where the contact's restitution is
        positive, or the forward step would bounce instead of landing (§3.1: 0 < v_goal < ε).
    """

    def __init__(self, hints, body_names, dt: float, epsilon: float):
        self.hints = list(hints)
        self.index = {name: k for k, name in enumerate(body_names)}
        self.dt = dt
        self.epsilon = epsilon
        self.reverse_time = 0.0

    def active(self) -> list[Hint]:
        """Hints whose step is the one starting at the current reverse time."""
        t, h = self.reverse_time, self.dt
        return [x for x in self.hints if x.kind != "free" and t - 0.5 * h <= x.at < t + 0.5 * h]

    def __call__(self, contacts: ContactSet, position, velocity):
        k = len(contacts)
        goals = Goals.zeros(k)
        goals.explicit = np.zeros(k, dtype=bool)
        pref = np.zeros((k, 3))
        pref_roll = np.zeros((k, 3))
        for hint in self.active():
            j = self.index[hint.body]
            for i in range(k):
                if contacts.body_a[i] == j:
                    sign = 1.0
                elif contacts.body_b[i] == j:
                    sign = -1.0
                else:
                    continue
                n = contacts.normal[i] * sign  # from the other body into this one
                r = np.linalg.norm(contacts.point[i] - position[j])
                if hint.kind == "roll" and r < MIN_ROLL_ARM:
                    continue  # a contact at the centre of mass: no rolling axis
                goals.explicit[i] = True
                if hint.kind == "bounce":
                    speed = hint.speed
                    if contacts.restitution[i] > 0 and speed >= self.epsilon:
                        speed = np.nextafter(self.epsilon, 0.0)
                    goals.normal[i] = speed
                elif hint.kind == "slide":
                    v = hint.speed * (hint.direction - (hint.direction @ n) * n)
                    goals.tangential[i] = sign * v
                    pref[i] = v
                else:  # roll: ω = n × v / r, no slip
                    v = hint.speed * (hint.direction - (hint.direction @ n) * n)
                    w = np.cross(n, v) / r
                    goals.rolling[i] = sign * w
                    pref_roll[i] = w
        return goals, pref, pref_roll
