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

A *hints distribution* (for ``workbench reverse --samples`` and ``workbench markov compare``,
where each run draws its own hints) may give a range instead of a number and ``random`` instead
of a direction::

    hints:
      - body: block
        slide: {direction: random, speed: {uniform: [0.0, 1.5]}}   # any heading, 0–1.5 m/s
      - body: ball
        bounce: {uniform: [0.05, 0.15]}
        at: {uniform: [0.0, 0.2]}

``random`` is a direction uniform on the circle perpendicular to gravity
(:meth:`HintsDistribution.draw`); ``{uniform: [lo, hi]}`` a value uniform in that range (both
ends checked like a fixed value); ``at: rest`` a time drawn from the forward runs' final rest
(the dwell of the final rest of a semi-Markov table, :meth:`reverse.goals.semi_markov.DwellHazards.
sample_dwell`; ``workbench markov compare`` and ``benchmarks/plausibility.py`` pass the table's):
a body that slid into its rest has rested that long before the slide's backward step.
:func:`parse_hint_distribution` reads such files, :func:`load_hints` refuses them (a single run
has nothing to draw them with).

``free`` overrides the free-to-bounce test of §4 "Stacking" for a body (the paper's user
override): ``true`` lets goals start it moving whatever its contacts, ``false`` never does; a
body with ``free: false`` is also treated as constrained by the attraction option.

This module is pure (no PyBullet); :func:`load_hints` reports bad files in one line.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reverse.step.dynamics import ContactSet, Goals, perpendicular_pair
from workbench.errors import SceneError, UserCodeError
from workbench.specs import dump_yaml, load_user_object, read_document

__all__ = [
    "Hint",
    "HintPolicy",
    "HintsDistribution",
    "parse_hint_distribution",
    "load_hint_distribution",
    "script_takes_seed",
    "load_hints",
    "parse_hints",
    "free_overrides",
    "script_hints",
    "late_hints",
    "ResolvedHints",
    "resolve_hints",
    "MAX_HINT_SPEED",
    "MIN_ROLL_ARM",
]

_KINDS = ("slide", "bounce", "roll", "free")

#: ``at: rest`` in a hints distribution: drawn from the forward runs' final rest (module doc).
REST = "rest"

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
    # np.isfinite fails on an int beyond float's range (YAML's 1000000000000000000000000000000)
    finite = isinstance(value, int | float) and abs(value) <= sys.float_info.max  # NaN: False
    if isinstance(value, bool) or not finite:
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


def _value(source, where, value, check, random_ok):
    """A fixed value checked by ``check``, or with ``random_ok`` a ``{uniform: [lo, hi]}`` range
    (returned as a tuple ``("uniform", lo, hi)``) whose ends pass ``check``."""
    if random_ok and isinstance(value, dict):
        if (
            set(value) != {"uniform"}
            or not isinstance(value["uniform"], list | tuple)
            or len(value["uniform"]) != 2
        ):
            raise SceneError(source, where, "expected a number or {uniform: [low, high]}")
        # a range of speeds may start at 0 (a draw of exactly 0 has probability 0); its upper
        # end is checked like a fixed speed and bounds the lower one
        lo = _number(source, f"{where}.uniform[0]", value["uniform"][0])
        hi = check(source, f"{where}.uniform[1]", value["uniform"][1])
        if hi < lo:
            raise SceneError(source, f"{where}.uniform", f"expected low ≤ high, got [{lo}, {hi}]")
        return ("uniform", lo, hi)
    return check(source, where, value)


def _any_number(source, where, value) -> float:
    return _number(source, where, value)


def _parse_items(data, body_names, source: str, random_ok: bool) -> list[dict]:
    """Validated hint entries: dicts of body, kind, direction, speed, at, where (values may be
    ranges or ``"random"`` when ``random_ok``)."""
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
        at = item.get("at", 0.0)
        if not (random_ok and at == REST):
            at = _value(source, f"{loc}.at", at, _any_number, random_ok)
        spec = item[kind]
        entry = {"body": body, "kind": kind, "direction": np.zeros(3), "at": at, "where": loc}
        if kind == "bounce":
            entry["speed"] = _value(source, f"{loc}.bounce", spec, _speed, random_ok)
        elif kind == "free":
            if not isinstance(spec, bool):
                raise SceneError(source, f"{loc}.free", f"expected true or false, got {spec!r}")
            entry["speed"] = float(spec)
        else:
            if not isinstance(spec, dict) or set(spec) != {"direction", "speed"}:
                raise SceneError(
                    source, f"{loc}.{kind}", "expected {direction: [x, y, z], speed: m/s}"
                )
            if random_ok and spec["direction"] == "random":
                entry["direction"] = "random"
            else:
                entry["direction"] = _unit(source, f"{loc}.{kind}.direction", spec["direction"])
            entry["speed"] = _value(source, f"{loc}.{kind}.speed", spec["speed"], _speed, random_ok)
        out.append(entry)
    return out


def parse_hints(data, body_names, source: str = "<hints>") -> list[Hint]:
    """Validate parsed YAML ``data`` against the scene's ``body_names``."""
    items = _parse_items(data, body_names, source, random_ok=False)
    return [
        Hint(e["body"], e["kind"], e["direction"], e["speed"], e["at"], e["where"]) for e in items
    ]


@dataclass(frozen=True)
class HintsDistribution:
    """Hints whose values each run draws for itself (module docstring; picklable).

    Attributes
    ----------
    items : tuple of dict
        Validated entries; a value is a number, ``("uniform", lo, hi)`` or, for a direction,
        ``"random"``.
    source : str
        Where they came from (for messages).
    """

    items: tuple
    source: str = "<hints>"

    @property
    def is_random(self) -> bool:
        """Whether any value is drawn (otherwise :meth:`draw` always gives the same hints)."""
        return any(
            isinstance(e[k], tuple) or (isinstance(e[k], str) and e[k] in ("random", REST))
            for e in self.items
            for k in ("direction", "speed", "at")
        )

    @property
    def needs_rest(self) -> bool:
        """Whether some ``at`` is drawn from the final rest (``at: rest``)."""
        return any(isinstance(e["at"], str) and e["at"] == REST for e in self.items)

    def draw(self, rng: np.random.Generator, up=(0.0, 0.0, 1.0), rest=None) -> list[Hint]:
        """One run's hints. Values are drawn in file order, per hint: direction, speed, ``at``
        (a fixed value draws nothing).

        Parameters
        ----------
        rng : numpy.random.Generator
        up : array_like, shape (3,)
            The vertical (against gravity): ``random`` directions are uniform on the circle
            perpendicular to it.
        rest : callable, optional
            ``rest(rng) -> seconds``: the final-rest draw of ``at: rest`` (required then).
        """
        if rest is None and self.needs_rest:
            raise SceneError(self.source, "hints", "at: rest needs a semi-Markov table")
        u = np.asarray(up, dtype=float)
        u = u / np.linalg.norm(u)
        e1, e2 = perpendicular_pair(u)
        out = []
        for e in self.items:
            d = e["direction"]
            if isinstance(d, str):  # "random": uniform heading in the horizontal plane
                phi = rng.uniform(0.0, 2.0 * np.pi)
                d = np.cos(phi) * e1 + np.sin(phi) * e2
            speed = _draw(e["speed"], rng)
            at = float(rest(rng)) if isinstance(e["at"], str) else _draw(e["at"], rng)
            d = np.asarray(d, dtype=float)
            out.append(Hint(e["body"], e["kind"], d, speed, at, e["where"]))
        return out


def _draw(value, rng: np.random.Generator) -> float:
    if isinstance(value, tuple):
        _, lo, hi = value
        return float(rng.uniform(lo, hi))
    return float(value)


def parse_hint_distribution(data, body_names, source: str = "<hints>") -> HintsDistribution:
    """Validate a hints distribution (module docstring) against the scene's ``body_names``."""
    return HintsDistribution(tuple(_parse_items(data, body_names, source, random_ok=True)), source)


def load_hint_distribution(path, body_names) -> HintsDistribution:
    """Read a hints file that may give ranges and random directions (module docstring)."""
    doc = read_document(path, "hints", SceneError)
    return parse_hint_distribution(doc.data, body_names, doc.source)


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
    """Read and validate a hints file; :class:`~workbench.errors.SceneError` names the field.
    A file with drawn values (a hints distribution) is refused with a pointer to ``--samples``."""
    doc = read_document(path, "hints", SceneError)
    dist = parse_hint_distribution(doc.data, body_names, doc.source)
    return _fixed_hints(dist, doc.data, body_names, doc.source)


def _fixed_hints(dist: HintsDistribution, data, body_names, source: str) -> list[Hint]:
    """``data``'s hints, refused (one line) if ``dist``, their distribution, draws values."""
    if dist.is_random:
        first = next(
            e for e in dist.items if any(not isinstance(e[k], float | np.ndarray) for k in
                                         ("direction", "speed", "at"))
        )  # fmt: skip
        raise SceneError(
            source,
            first["where"],
            "a drawn value (random or {uniform: [low, high]}) needs --samples: each sampled run "
            "draws its own hints",
        )
    return parse_hints(data, body_names, source)


def _hints_function(path):
    source = str(path)
    if not source.endswith(".py"):
        raise SceneError(source, "--hints script", "only a scene script (.py) can give hints")
    try:
        fn = load_user_object(source, name="hints")
    except UserCodeError as exc:
        raise SceneError(source, "", str(exc)) from None
    if not callable(fn):
        raise SceneError(source, "hints", "--hints script needs a function hints(**parameters)")
    return fn


def script_takes_seed(path) -> bool:
    """Whether a scene script's ``hints`` function takes a ``seed`` argument (by name or through
    ``**kwargs``): then each sampled run passes its own seed and gets its own hints."""
    sig = inspect.signature(_hints_function(path))
    return "seed" in sig.parameters or any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())


def script_hints(
    path, parameters, body_names, seed: int | None = None, *, text: bool = True
) -> tuple[list[Hint], str | None]:
    """Hints from a scene script's ``hints(**parameters)`` function (``--hints script``): the
    script that builds a large final state (thousands of balls) also says how each body got
    there. Returns the hints and their YAML text (stored with the run), or None for the text
    with ``text=False`` (callers that do not store it: PyYAML writes the 4368 hints of
    ``spelling_balls`` in about 2 s).

    ``parameters`` are the scene's resolved parameters; ``hints`` receives those its signature
    accepts (or all of them with ``**kwargs``). With ``seed`` (sampled runs: each run's own,
    :func:`reverse.runs.sampling.variation_seed`) it is also passed as ``seed=`` — the script draws
    that run's hints from it (:func:`script_takes_seed` says whether it can).
    """
    source = str(path)
    fn = _hints_function(path)
    sig = inspect.signature(fn)
    takes_all = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    kwargs = {k: v for k, v in parameters.items() if takes_all or k in sig.parameters}
    if seed is not None:
        if not (takes_all or "seed" in sig.parameters):
            raise SceneError(
                source, "hints", "each sampled run draws its hints: expected hints(seed=..., ...)"
            )
        kwargs["seed"] = int(seed)
    try:
        data = fn(**kwargs)
    except Exception as exc:
        raise SceneError(source, "hints", f"raised {type(exc).__name__}: {exc}") from None
    hints = parse_hints(data, body_names, f"{source}: hints()")
    return hints, dump_yaml(data) if text else None


@dataclass(frozen=True)
class ResolvedHints:
    """What ``--hints`` stands for, for a single run or for sampled runs (:func:`resolve_hints`).

    Attributes
    ----------
    hints : list of Hint
        Every run's hints; when runs draw their own (:attr:`draws`), one draw, for the checks.
    text : str
        What a file stores of them (the file's text, a script's hints as YAML, or ``""``).
    source : str
        Where they came from, for messages.
    distribution : HintsDistribution, optional
        Drawn per run (sampled runs with random values).
    script : str, optional
        A scene script whose ``hints(seed=...)`` each sampled run calls.
    rest : FinalRest, optional
        The draw of ``at: rest`` (:class:`reverse.goals.semi_markov.FinalRest`).
    """

    hints: list = field(default_factory=list)
    text: str = ""
    source: str = ""
    distribution: Any = None
    script: str | None = None
    rest: Any = None

    @property
    def draws(self) -> bool:
        """Whether each sampled run draws its own hints (a distribution or a seeded script)."""
        return self.distribution is not None or self.script is not None


#: The contact state whose final rest ``at: rest`` draws from: a face, the state every shipped
#: one-body scene rests in (``reverse.goals.markov.STATE_NAMES[3]``).
REST_STATE = 3


def resolve_hints(option, scene_path, scene, *, sampled: bool, table=None) -> ResolvedHints:
    """The one reading of ``--hints`` for ``workbench reverse``, ``markov compare`` and the
    plausibility benchmark.

    Parameters
    ----------
    option : str, dict or None
        ``None`` (no hints), ``"script"`` (the scene script's ``hints()``), a hints file or its
        name (:func:`workbench.scene.catalog.find_hints`), or a parsed hints document (a dict
        with ``hints:``).
    scene_path : path
        The scene (file or script).
    scene : Scene
        The loaded scene (its parameters and body names).
    sampled : bool
        Many seeded runs: a script taking ``seed`` is called by each run, and a file with drawn
        values is a distribution each run draws from. A single run refuses drawn values.
    table : TransitionModel, optional
        The run's contact-transition table; ``at: rest`` draws the final rest of its
        semi-Markov hazards (:data:`REST_STATE`) and needs one.

    Raises
    ------
    SceneError
        One line naming the file and field.
    """
    if option is None or option == "":
        return ResolvedHints()
    if option == "script":
        path = str(scene_path)
        if sampled and script_takes_seed(path):
            hints, text = script_hints(path, scene.parameters, scene.body_names, seed=0)
            text = f"# drawn per run by hints(seed=...); this is seed 0's\n{text}"
            return ResolvedHints(hints, text, f"{path}: hints(seed=...)", script=path)
        hints, text = script_hints(path, scene.parameters, scene.body_names)
        return ResolvedHints(hints, text, f"{path}: hints()")
    if isinstance(option, dict):
        data, where, source, text = option, "<hints>", "<hints>", dump_yaml(option)
    else:
        from workbench.scene.catalog import find_hints

        path = find_hints(option, scene_path)
        doc = read_document(path, "hints", SceneError)
        data, where, source = doc.data, doc.source, str(path)
        text = path.read_text(encoding="utf-8")
    dist = parse_hint_distribution(data, scene.body_names, where)
    if not (sampled and dist.is_random):
        return ResolvedHints(_fixed_hints(dist, data, scene.body_names, where), text, source)
    rest = None
    if dist.needs_rest:
        from reverse.goals.semi_markov import FinalRest

        if table is None or table.hazards is None:
            raise SceneError(source, "hints", "at: rest needs a semi-Markov table")
        rest = FinalRest(table.hazards, state=REST_STATE)
    hints = dist.draw(np.random.default_rng(0), rest=rest)  # the checks; each run draws its own
    return ResolvedHints(hints, text, source, distribution=dist, rest=rest)


class HintPolicy:
    """Goals of each backward step from the hints (the ``goals`` callable of
    :meth:`reverse.step.stepper.Stepper.backward`).

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
        # The hints that act (not "free"), sorted by time, for active()'s binary search: a run
        # asks every step and a scene may carry one hint per body (3875 for spelling balls).
        acting = [k for k, x in enumerate(self.hints) if x.kind != "free"]
        at = np.array([self.hints[k].at for k in acting], dtype=float)
        order = np.argsort(at, kind="stable")
        self._at = at[order]
        self._acting = np.array(acting, dtype=int)[order]

    def active(self) -> list[Hint]:
        """Hints whose step is the one starting at the current reverse time, in their order."""
        t, h = self.reverse_time, self.dt
        lo, hi = np.searchsorted(self._at, [t - 0.5 * h, t + 0.5 * h], side="left")
        return [self.hints[k] for k in np.sort(self._acting[lo:hi]).tolist()]

    def __call__(self, contacts: ContactSet, position, velocity):
        """The goals of this step's hints on ``contacts`` (``Goals`` with ``explicit`` set, the
        preferred sliding and rolling directions).

        Each active hint sets the goals of every contact of its body, hint after hint in their
        order (a later hint overwrites an earlier one's goal of the same kind on a contact). All
        (hint, contact) pairs are evaluated at once, with the arithmetic of one pair at a time:
        ``d · n`` and ``|p − x|`` as BLAS does a 1-D product (:func:`_row_dots`), ``n × v``
        with ``np.cross`` — the same numbers to the bit as the loop over pairs they replace."""
        k = len(contacts)
        goals = Goals.zeros(k)
        goals.explicit = np.zeros(k, dtype=bool)
        pref = np.zeros((k, 3))
        pref_roll = np.zeros((k, 3))
        active = self.active()
        if not active or not k:
            return goals, pref, pref_roll
        body_a, body_b = contacts.body_a, contacts.body_b
        js = np.array([self.index[h.body] for h in active], dtype=int)
        # (hint, contact) pairs in the order of a loop over hints, then contacts ascending
        hi, ci = np.nonzero((body_a[None, :] == js[:, None]) | (body_b[None, :] == js[:, None]))
        if not hi.size:
            return goals, pref, pref_roll
        j = js[hi]
        kind = np.array([h.kind for h in active])[hi]
        speed = np.array([h.speed for h in active], dtype=float)[hi]
        sign = np.where(body_a[ci] == j, 1.0, -1.0)
        n = contacts.normal[ci] * sign[:, None]  # from the other body into this one
        arm = contacts.point[ci] - position[j]
        r = np.sqrt(_row_dots(arm, arm))  # np.linalg.norm of one vector: sqrt(x · x)
        acts = (kind != "roll") | ~(r < MIN_ROLL_ARM)  # a contact at the centre of mass: no axis
        goals.explicit[ci[acts]] = True
        bounce = np.flatnonzero(kind == "bounce")
        if bounce.size:
            b_speed = speed[bounce]
            cap = (contacts.restitution[ci[bounce]] > 0) & (b_speed >= self.epsilon)
            b_speed = np.where(cap, np.nextafter(self.epsilon, 0.0), b_speed)
            last = _last(ci[bounce])
            goals.normal[ci[bounce][last]] = b_speed[last]
        moving = np.flatnonzero(((kind == "slide") | (kind == "roll")) & acts)
        if moving.size:
            d = np.array([h.direction for h in active], dtype=float)[hi[moving]]
            nm = n[moving]
            v = speed[moving][:, None] * (d - _row_dots(d, nm)[:, None] * nm)
            sm = sign[moving][:, None]
            slide = kind[moving] == "slide"
            if slide.any():
                c = ci[moving][slide]
                last = _last(c)
                goals.tangential[c[last]] = (sm[slide] * v[slide])[last]
                pref[c[last]] = v[slide][last]
            roll = ~slide
            if roll.any():
                c = ci[moving][roll]
                w = np.cross(nm[roll], v[roll]) / r[moving][roll][:, None]
                last = _last(c)
                goals.rolling[c[last]] = (sm[roll] * w)[last]
                pref_roll[c[last]] = w[last]
        return goals, pref, pref_roll


def _row_dots(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a[i] @ b[i]`` of 3-vectors, each as numpy computes one 1-D product (BLAS ``ddot``,
    through the stacked ``matmul`` of ``(1, 3) @ (3, 1)`` slices): the same bits as the product
    of one pair, whatever the CPU's ``ddot`` kernel does."""
    return np.matmul(a[:, None, :], b[:, :, None])[:, 0, 0]


def _last(c: np.ndarray) -> np.ndarray:
    """Positions of the last occurrence of each value of ``c`` (a later hint overwrites)."""
    _, first_from_end = np.unique(c[::-1], return_index=True)
    return c.size - 1 - first_from_end
