"""Scene description: the validated, immutable input of every run.

A scene is written as a YAML file (see ``docs/scenes.md``) or built in Python (a scene script
exposing ``build(**parameters)`` that returns a :class:`Scene` or a plain dict). Either way it goes
through :func:`scene_from_dict`, which substitutes ``${name}`` parameters, validates every field and
computes each body's mass properties (mass, centre of mass, inertia about the centre of mass in the
body frame). Units are SI; angles in the file are degrees where the field name says ``_deg``.

Invalid input raises :class:`~workbench.errors.SceneError` naming the file, the field path, the line
when known, and what was expected.

This module holds the :class:`Scene` with its :class:`Settings` and :class:`Observer` channels, the
cross-references between its parts, and the entry point with its error messages. The parts live
beside it and are re-exported here: bodies and shapes in :mod:`.bodies`, joints, springs and
prescribed motions in :mod:`.connections`, random parameters and uncertain bodies in
:mod:`.random_inputs`, ``${name}`` and ``--set`` in :mod:`.parameters`, the shared field types in
:mod:`.fields`. See ``docs/architecture.md``.
"""

from __future__ import annotations

import copy
import math
from typing import Annotated, Any

from pydantic import (
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from workbench.errors import SceneError
from workbench.scene import fields
from workbench.scene.bodies import (
    Body,
    Box,
    Capsule,
    Cylinder,
    Drag,
    MassProperties,
    Material,
    Mesh,
    Plane,
    Shape,
    Sphere,
    Urdf,
    resolve_file,
)
from workbench.scene.connections import Joint, Prescribed, Spring
from workbench.scene.fields import WORLD, Name, NonNegFloat, PosFloat, StrictModel, Vec3
from workbench.scene.links import (
    TrackedJoint,
    TrackedLink,
    link_names_of,
    tracked_joints,
    tracked_links,
)
from workbench.scene.parameters import (
    apply_overrides,
    referenced_parameters,
    substitute_parameters,
)
from workbench.scene.random_inputs import (
    DISTRIBUTIONS,
    MAX_DISPERSION,
    BodyUncertainty,
    ComUncertainty,
    InertiaUncertainty,
    MassUncertainty,
    ParameterDistribution,
)

__all__ = [
    # defined here
    "Scene",
    "Settings",
    "ReverseDefaults",
    "Observer",
    "OBSERVER_QUANTITIES",
    "MAX_GRAVITY",
    "MAX_STEP_COUNT",
    "scene_from_dict",
    "TrackedLink",
    "TrackedJoint",
    # re-exported, in the order of the imports above
    "Body",
    "Box",
    "Capsule",
    "Cylinder",
    "Drag",
    "MassProperties",
    "Material",
    "Mesh",
    "Plane",
    "Shape",
    "Sphere",
    "Urdf",
    "resolve_file",
    "Joint",
    "Prescribed",
    "Spring",
    "WORLD",
    "Name",
    "NonNegFloat",
    "PosFloat",
    "Vec3",
    "Vec4",
    "PARAMETERS_GROUP",
    "format_loc",
    "apply_overrides",
    "substitute_parameters",
    "DISTRIBUTIONS",
    "MAX_DISPERSION",
    "BodyUncertainty",
    "ComUncertainty",
    "InertiaUncertainty",
    "MassUncertainty",
    "ParameterDistribution",
]

# Re-exported from .fields: other wings import these from here.
PARAMETERS_GROUP = fields.PARAMETERS_GROUP
Vec4 = fields.Vec4
format_loc = fields.format_loc

#: Observer quantity -> (number of components, unit, component labels, needs a body, uses point).
OBSERVER_QUANTITIES: dict[str, tuple[int, str, tuple[str, ...], bool, bool]] = {
    "point_position": (3, "m", ("x", "y", "z"), True, True),
    "point_velocity": (3, "m/s", ("x", "y", "z"), True, True),
    "point_acceleration": (3, "m/s^2", ("x", "y", "z"), True, True),
    "com_position": (3, "m", ("x", "y", "z"), True, False),
    "com_velocity": (3, "m/s", ("x", "y", "z"), True, False),
    "com_acceleration": (3, "m/s^2", ("x", "y", "z"), True, False),
    "euler_angles": (3, "rad", ("roll", "pitch", "yaw"), True, False),
    "angular_velocity": (3, "rad/s", ("x", "y", "z"), True, False),
    "angular_acceleration": (3, "rad/s^2", ("x", "y", "z"), True, False),
    "kinetic_energy": (1, "J", ("E",), False, False),
    "contact_count": (1, "1", ("n",), False, False),
}


class Observer(StrictModel):
    """A recorded channel; see :data:`OBSERVER_QUANTITIES`.

    ``point`` is in the body frame (m). ``kinetic_energy`` and ``contact_count`` without a body
    sum over the whole scene. ``euler_angles`` are extrinsic x-y-z (roll, pitch, yaw), rad.
    Accelerations are the velocity change of the recorded step divided by dt.

    ``link`` names a link of a URDF ``body`` (its name in the URDF file): the channel is then
    that link's (its tracked row ``"<body>/<link>"``; ``point`` in the URDF link frame); the
    base link's name stands for the body itself. ``contact_count`` takes no link.
    """

    name: Name
    quantity: str
    body: str | None = None
    point: Vec3 | None = None
    link: str | None = None

    @model_serializer(mode="wrap")
    def _without_unset_link(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        # no "link": null in dumps: a scene without links stores the same scene_json (and so
        # the same file bytes) as before observers took a link
        data = handler(self)
        if data.get("link") is None:
            data.pop("link", None)
        return data

    @model_validator(mode="after")
    def _check(self) -> Observer:
        if self.quantity not in OBSERVER_QUANTITIES:
            raise ValueError(
                f"'quantity' must be one of {', '.join(OBSERVER_QUANTITIES)}; "
                f"got '{self.quantity}'{fields.did_you_mean(self.quantity, OBSERVER_QUANTITIES)}"
            )
        _, _, _, needs_body, uses_point = OBSERVER_QUANTITIES[self.quantity]
        if needs_body and self.body is None:
            raise ValueError(f"'{self.quantity}' needs a 'body'")
        if uses_point and self.point is None:
            raise ValueError(f"'{self.quantity}' needs a 'point' (body frame, m)")
        if not uses_point and self.point is not None:
            raise ValueError(f"'{self.quantity}' takes no 'point'")
        if self.link is not None:
            if self.body is None:
                raise ValueError("a 'link' needs the 'body' (a URDF model) it belongs to")
            if self.quantity == "contact_count":
                raise ValueError("'contact_count' counts the contacts of a whole body; no 'link'")
        return self


#: Most steps a scene may ask for: 2^53, the largest count for which the record times k·dt still
#: tell the steps apart, far beyond any run that could finish (at ~1e5 steps/s, 2 850 years); it
#: only keeps the step count an integer. Runs are refused much earlier unless forced
#: (:data:`workbench.sim.forward.MAX_STEPS`).
MAX_STEP_COUNT = 2**53


class Settings(StrictModel):
    """Time stepping and solver settings."""

    dt: PosFloat = 1.0 / 240.0
    duration: PosFloat = 1.0
    record_every: Annotated[int, Field(ge=1)] = 1
    solver_iterations: Annotated[int, Field(ge=1)] = 50
    contact_breaking_threshold: PosFloat | None = None
    restitution_velocity_threshold: NonNegFloat | None = None
    #: PyBullet's contactERP: the fraction of penetration corrected per step. Its correction
    #: adds velocity to a bounce (measured: restitution 0.6 gives 0.634 at dt = 1e-3 with the
    #: default, 0.601 with 0); set 0 for impact studies, keep the default for resting stacks.
    contact_erp: Annotated[float, Field(ge=0, le=1)] | None = None
    #: PyBullet's per-body contactProcessingThreshold (m): contact points found with a *gap*
    #: below it enter the solver as speculative contacts, which let the bodies close the gap in
    #: one step and subtract gap/dt from the bounce, so a restitution depends on where in a step
    #: the impact falls (measured: a 2.5 m/s impact with e = 0.5 found 2.4 mm early at dt = 1e-3
    #: does not bounce at all). 0 processes touching or penetrating contacts only: bounces are
    #: e·v whatever the phase (the law of the reverse stepper).
    contact_processing_threshold: NonNegFloat | None = None

    @model_validator(mode="after")
    def _countable_steps(self) -> Settings:
        steps = self.duration / self.dt if self.duration < self.dt * MAX_STEP_COUNT else math.inf
        if steps > MAX_STEP_COUNT:
            raise ValueError(
                f"dt {self.dt:g} s over {self.duration:g} s is {steps:.3g} steps; expected at most "
                f"2^53 = {MAX_STEP_COUNT:.3g}"
            )
        return self

    @property
    def n_steps(self) -> int:
        return int(round(self.duration / self.dt))


#: ``--contacts`` rules of ``workbench reverse`` a scene's ``reverse.contacts`` may name.
CONTACT_RULES = (
    "persist",
    "joint-unit-restitution",
    "no-free-to-bounce",
    "bounce-apart",
    "separate",
    "cap-bounces",
)


class ReverseDefaults(StrictModel):
    """The reverse settings that make a scene's pasts plausible, carried by the scene
    (``reverse:``): ``workbench reverse`` uses each where its command line gives none, so a demo's
    plain command is its plausible one (docs/reverse.md, "Plausibility controls")."""

    #: How far back to step, s (else ``settings.duration``), and the step, s (else
    #: ``settings.dt``).
    duration: PosFloat | None = None
    dt: PosFloat | None = None
    #: A hints file next to the scene, or ``script`` for a scene script's ``hints()``.
    hints: str | None = None
    restitution_blend: NonNegFloat = 0.0
    angular_damping: NonNegFloat = 0.0
    linear_damping: NonNegFloat = 0.0
    #: 1/s; ``.inf`` (YAML) or ``math.inf``: round bodies roll without slipping.
    slip_damping: Annotated[float, Field(ge=0, allow_inf_nan=True)] = 0.0
    attract: bool = False
    contacts: list[str] = []
    #: PyBullet runs the confirmation may spend refining the earliest state
    #: (:func:`reverse.runs.confirm.refine_confirmation`; 0: it only measures).
    confirm_refine: Annotated[int, Field(ge=0, le=100)] = 0

    @field_validator("slip_damping")
    @classmethod
    def _not_nan(cls, v: float) -> float:
        if math.isnan(v):
            raise ValueError("a rate of at least 0 (or .inf), got nan")
        return v

    @field_validator("contacts")
    @classmethod
    def _known_rules(cls, v: list[str]) -> list[str]:
        unknown = [r for r in v if r not in CONTACT_RULES]
        if unknown:
            raise ValueError(f"rules among {', '.join(CONTACT_RULES)}, got {unknown[0]!r}")
        return v


#: Largest magnitude of gravity, m/s^2 (about 1 000 g). The shipped scenes use 9.81; at this
#: bound a body falls g dt^2 = 0.17 m in one step of the default dt (1/240 s), as far as a
#: typical body is large, so contacts are no longer resolved; beyond it the state overflows
#: (``[0, 0, 1e308]`` left bodies at PyBullet's saturation, 1e30 m, with status ``ok``). A
#: stronger acceleration belongs in a prescribed motion or a force.
MAX_GRAVITY = 1e4


class Scene(StrictModel):
    """A validated scene. Build with :func:`scene_from_dict` or :func:`workbench.load_scene`."""

    description: str = ""
    parameters: dict[Name, Any] = {}
    settings: Settings = Settings()
    gravity: Vec3 = (0.0, 0.0, -9.81)
    bodies: list[Body]
    joints: list[Joint] = []
    springs: list[Spring] = []
    prescribed: list[Prescribed] = []
    observers: list[Observer] = []
    #: Named scalar reductions of a run (``{name: d, reduce: max_displacement, body: block,
    #: direction: [1, 0, 0]}``), the layout of the inverse specs' outputs; checked here for
    #: names and bodies, read by ``workbench.analysis.output_spec.parse_outputs`` (sensitivity,
    #: any analysis that needs a scene's outputs).
    outputs: list[dict[str, Any]] = []
    #: The reverse settings the scene's pasts need (:class:`ReverseDefaults`).
    reverse: ReverseDefaults = ReverseDefaults()

    @field_validator("gravity")
    @classmethod
    def _bounded_gravity(cls, v: Vec3) -> Vec3:
        g = math.hypot(*v)  # no overflow of the squares
        if g > MAX_GRAVITY:
            raise ValueError(
                f"a gravity of at most {MAX_GRAVITY:g} m/s^2 (about 1 000 g), got magnitude {g:.6g}"
            )
        return v

    @model_validator(mode="after")
    def _cross_references(self, info: ValidationInfo) -> Scene:
        if not self.bodies:
            raise ValueError("'bodies' must list at least one body")
        names = [b.name for b in self.bodies]
        seen: set[str] = set()
        for i, n in enumerate(names):
            if n in seen:
                raise _at(("bodies", i, "name"), f"duplicate body name '{n}'")
            seen.add(n)
        joint_names = [j.name for j in self.joints]
        for i, j in enumerate(self.joints):
            for f in ("parent", "child"):
                _check_ref(names, getattr(j, f), ("joints", i, f), allow_world=(f == "parent"))
        for i, s in enumerate(self.springs):
            _check_ref(names, s.body_a, ("springs", i, "body_a"), allow_world=True)
            _check_ref(names, s.body_b, ("springs", i, "body_b"), allow_world=True)
        for i, p in enumerate(self.prescribed):
            if p.body is not None:
                _check_ref(names, p.body, ("prescribed", i, "body"), allow_world=False)
            else:
                _check_ref(joint_names, p.joint, ("prescribed", i, "joint"), what="joint")
                joint = self.joints[joint_names.index(p.joint)]
                if joint.type not in ("revolute", "prismatic"):
                    raise _at(
                        ("prescribed", i, "joint"),
                        "only revolute and prismatic joints take a prescribed motion",
                    )
        obs_seen: set[str] = set()
        for i, o in enumerate(self.observers):
            if o.name in obs_seen:
                raise _at(("observers", i, "name"), f"duplicate observer name '{o.name}'")
            obs_seen.add(o.name)
            if o.body is not None:
                _check_ref(names, o.body, ("observers", i, "body"), allow_world=False)
            if o.link is not None:
                base_dir = (info.context or {}).get("base_dir")
                links = link_names_of(self.bodies[names.index(o.body)], base_dir)
                if o.link not in links:
                    what = f"one of its links: {', '.join(links)}" if links else "a URDF body"
                    raise _at(
                        ("observers", i, "link"),
                        f"body '{o.body}' has no link '{o.link}'; expected {what}"
                        f"{fields.did_you_mean(o.link, links)}",
                    )
        out_seen: set[str] = set()
        for i, o in enumerate(self.outputs):
            name = o.get("name")
            if not isinstance(name, str) or not name:
                raise _at(("outputs", i, "name"), "expected a name for the output")
            if name in out_seen:
                raise _at(("outputs", i, "name"), f"duplicate output name '{name}'")
            out_seen.add(name)
            if not isinstance(o.get("reduce"), str):
                raise _at(("outputs", i, "reduce"), "expected a reduction, e.g. max_displacement")
            if "body" in o:
                _check_ref(names, o["body"], ("outputs", i, "body"), allow_world=False)
        return self

    # Convenience views ----------------------------------------------------------------------
    @property
    def body_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.bodies)

    @property
    def links(self) -> tuple[TrackedLink, ...]:
        """The tracked links of the URDF bodies: rows after the scene's bodies
        (:mod:`workbench.scene.links`); empty without URDF links."""
        cached = self.__dict__.get("_links")
        if cached is None:
            cached = tracked_links(self.bodies, self.base_dir)
            object.__setattr__(self, "_links", cached)
        return cached

    @property
    def tracked_joints(self) -> tuple[TrackedJoint, ...]:
        """The moving joints of the tracked links, in link order."""
        return tracked_joints(self.links)

    @property
    def tracked_names(self) -> tuple[str, ...]:
        """Names of every recorded row: the bodies, then the links (``"<body>/<link>"``)."""
        return self.body_names + tuple(link.name for link in self.links)

    def row_of(self, body: str, link: str | None = None) -> int:
        """Row of ``body`` (or of its URDF ``link``; the base link is the body's row)."""
        j = self.body_names.index(body)
        if link is None:
            return j
        for k, tracked in enumerate(self.links):
            if tracked.body == body and tracked.link == link:
                return len(self.bodies) + k
        if link in link_names_of(self.bodies[j], self.base_dir):
            return j  # the base link
        raise KeyError(f"body {body!r} has no link {link!r}")

    def body(self, name: str) -> Body:
        for b in self.bodies:
            if b.name == name:
                return b
        raise KeyError(name)

    def with_settings(self, **changes) -> Scene:
        """A copy with some settings replaced (e.g. ``dt``, ``duration``), re-validated."""
        changes = {k: v for k, v in changes.items() if v is not None}
        raw = self.__dict__.get("_raw")
        if raw is not None:  # keep the unresolved data so random parameters still resolve
            raw = copy.deepcopy(raw)
            raw["settings"] = {**(raw.get("settings") or {}), **changes}
            return scene_from_dict(
                raw,
                source=self.source,
                base_dir=self.base_dir,
                overrides=self.__dict__.get("_overrides"),
                source_text=self.source_text,
            )
        data = self.model_dump()
        data["settings"].update(changes)
        return _validate(data, self.source, self.base_dir, self.source_text)

    @property
    def parameter_distributions(self) -> dict[str, ParameterDistribution]:
        """Random scene parameters (declared as distributions and not fixed by ``--set``)."""
        return dict(self.__dict__.get("_distributions", {}))

    @property
    def uncertain_bodies(self) -> list[Body]:
        return [b for b in self.bodies if b.uncertainty is not None]

    @property
    def is_random(self) -> bool:
        return bool(self.parameter_distributions or self.uncertain_bodies)

    def with_parameters(self, values: dict[str, Any]) -> Scene:
        """The scene re-resolved with some parameters fixed to ``values`` (one realization)."""
        raw = self.__dict__.get("_raw")
        if raw is None:
            raise SceneError(
                self.source, "parameters", "this scene has no source data to re-resolve"
            )
        merged = {**self.__dict__.get("_overrides", {}), **values}
        return scene_from_dict(
            raw,
            source=self.source,
            base_dir=self.base_dir,
            overrides=merged,
            source_text=self.source_text,
            copy_data=False,  # this scene's own copy, never modified: shared, not copied again
        )

    @property
    def source(self) -> str:
        return self.__dict__.get("_source", "<scene>")

    @property
    def base_dir(self) -> str | None:
        return self.__dict__.get("_base_dir")

    @property
    def source_text(self) -> str:
        return self.__dict__.get("_source_text", "")


class _RefError(ValueError):
    def __init__(self, loc: tuple, msg: str):
        super().__init__(msg)
        self.loc = loc


def _at(loc: tuple, msg: str) -> _RefError:
    return _RefError(loc, msg)


def _check_ref(names, value, loc, *, allow_world=False, what="body") -> None:
    if allow_world and value == WORLD:
        return
    if value not in names:
        hint = fields.did_you_mean(str(value), names)
        extra = f" or '{WORLD}'" if allow_world else ""
        raise _at(
            loc,
            f"unknown {what} '{value}'{hint}; expected one of "
            f"{', '.join(names) or '(none)'}{extra}",
        )


def scene_from_dict(
    data: Any,
    *,
    source: str = "<scene>",
    base_dir: str | None = None,
    overrides: dict[str, Any] | None = None,
    source_text: str = "",
    line_of=None,
    copy_data: bool = True,
) -> Scene:
    """Validate a scene given as plain data (as parsed from YAML).

    Parameters
    ----------
    data : dict
        The scene mapping.
    source : str
        Where it came from, for error messages.
    base_dir : str, optional
        Folder that relative mesh/URDF paths are resolved against.
    overrides : dict, optional
        Parameter values replacing the declared ones (``--set``).
    line_of : callable, optional
        ``line_of(path_tuple) -> int | None`` giving the source line of a field.
    copy_data : bool
        Keep a deep copy of ``data`` (for :meth:`Scene.with_parameters`); False: keep ``data``
        itself, which nobody may modify afterwards (a scene's own copy, re-resolved: the copy
        was ≈ 30% of :meth:`Scene.with_parameters`, which every realization calls).
    """
    if not isinstance(data, dict):
        raise SceneError(source, "", "expected a mapping of scene fields at the top level")
    declared = data.get("parameters") or {}
    if not isinstance(declared, dict):
        raise SceneError(source, "parameters", "expected a mapping of name: value")
    distributions: dict[str, ParameterDistribution] = {}
    for k, v in declared.items():
        if isinstance(v, str) and "${" in v:
            raise SceneError(source, f"parameters.{k}", "a value, not another ${...} reference")
        if isinstance(v, dict):
            try:
                distributions[k] = ParameterDistribution.model_validate(v)
            except ValidationError as exc:
                err = exc.errors(include_url=False)[0]
                loc = ("parameters", k, *_user_loc(v, tuple(err["loc"])))
                raise SceneError(
                    source, format_loc(loc), _message(err), line_of(loc) if line_of else None
                ) from None
    params = apply_overrides(declared, overrides, source)
    # a random parameter takes its mean in single runs, unless --set fixes it
    random_params = {k: d for k, d in distributions.items() if params[k] is declared[k]}
    values = {
        k: (random_params[k].nominal() if k in random_params else v) for k, v in params.items()
    }
    _check_fixed_time_grid(data, random_params, source, line_of)
    body = {k: v for k, v in data.items() if k != "parameters"}
    resolved = substitute_parameters(body, values, source, line_of)
    resolved["parameters"] = values
    scene = _validate(resolved, source, base_dir, source_text, line_of)
    object.__setattr__(scene, "_distributions", random_params)
    object.__setattr__(scene, "_raw", copy.deepcopy(data) if copy_data else data)
    object.__setattr__(scene, "_overrides", dict(overrides or {}))
    return scene


#: The settings that fix a run's record times: the realizations of an ensemble share one ``/time``.
TIME_GRID_SETTINGS = ("dt", "duration", "record_every")


def _check_fixed_time_grid(data: dict, random_params: dict, source: str, line_of) -> None:
    """Refuse a random parameter in a setting of :data:`TIME_GRID_SETTINGS` (issue 39, case 8):
    each realization would record at its own times, which no store of an ensemble can hold, so
    the scene is refused when it is read, naming the field, before anything is run or written."""
    settings = data.get("settings")
    if not random_params or not isinstance(settings, dict):
        return
    for field in TIME_GRID_SETTINGS:
        for name in referenced_parameters(settings.get(field)):
            if name in random_params:
                loc = ("settings", field)
                raise SceneError(
                    source,
                    format_loc(loc),
                    f"refers to the random parameter '{name}'; expected a fixed value: the "
                    f"realizations of an ensemble share their record times (fix it with --set "
                    f"{name}=VALUE)",
                    line_of(loc) if line_of else None,
                )


def _validate(data, source, base_dir, source_text, line_of=None) -> Scene:
    try:
        scene = Scene.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = tuple(err["loc"])
        ctx_err = (err.get("ctx") or {}).get("error")
        if isinstance(ctx_err, _RefError):
            loc, msg = ctx_err.loc, str(ctx_err)
        else:
            raw_loc = loc
            loc = _user_loc(data, loc)
            msg = _message(err)
            if err["type"] == "missing" and raw_loc:
                last = raw_loc[-1]
                loc = loc + (last,)
                if isinstance(last, int):
                    msg = f"too few values: expected an entry at index {last}"
            if err["type"] == "unknown_field":  # point at the unknown key itself
                loc = loc + (err["ctx"]["key"],)
        line = line_of(loc) if line_of else None
        raise SceneError(source, format_loc(loc), msg, line) from None
    object.__setattr__(scene, "_source", source)
    object.__setattr__(scene, "_base_dir", base_dir)
    object.__setattr__(scene, "_source_text", source_text)
    return scene


def _user_loc(data: Any, loc: tuple) -> tuple:
    """Drop pydantic's union-tag and type-name segments so the path matches the user's file."""
    out: list = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            out.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            out.append(part)
            node = node[part]
        elif isinstance(node, (dict, list)):
            continue  # a tag such as 'sphere' or a type name such as 'tuple[...]'
        else:
            break
    return tuple(out) if out or not loc else ()


def _message(err: dict) -> str:
    msg = err["msg"]
    typ = err["type"]
    if typ == "missing":
        return "required field is missing"
    if typ in ("unknown_field", "inertia", "file", "mass_properties"):
        return msg
    if typ == "union_tag_invalid":
        ctx = err.get("ctx", {})
        tags = ctx.get("expected_tags", "")
        tag = ctx.get("tag", "")
        options = [t.strip().strip("'") for t in str(tags).split(",")]
        return (
            f"unknown type '{tag}'{fields.did_you_mean(str(tag), options)}; expected one of {tags}"
        )
    if typ == "union_tag_not_found":
        return "missing 'type' (sphere, box, cylinder, capsule, plane, mesh or urdf)"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    msg = msg.replace("Input should be", "expected").replace("Tuple should have", "expected")
    got = err.get("input")
    if typ not in ("value_error",) and not isinstance(got, (dict,)):
        text = repr(got)
        msg = f"{msg}, got {text if len(text) < 60 else text[:57] + '...'}"
    return msg.replace("\n", " ")
