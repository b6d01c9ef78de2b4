"""The attributes that make a store file self-describing: units, frames, axis names, descriptions.

Every dataset of the layout (``docs/hdf5.md``) carries

- ``units`` (str): SI units in the spelling of the observers (``"m"``, ``"m/s"``, ``"rad/s"``,
  ``"kg m^2"``, ``"J"``); ``"1"`` for a dimensionless number (a count, a quaternion, an index);
  ``""`` for text, flags and the sampled scene parameters, whose unit the scene file does not
  declare;
- ``description`` (str): what the numbers are, in one sentence;
- ``dims`` (array of str, one per axis): the axis names, ``realization``, ``time``, ``body``,
  ``component`` (x, y, z), ``quaternion`` (x, y, z, w), ``row``/``column`` (x, y, z) of a 3 x 3
  tensor, ``<observer>_component`` for an observer whose labels are not x, y, z; the
  :func:`workbench.store.open_dataset` view uses the same names;

and, where they apply, ``frame`` (the frame the vector or tensor is expressed in),
``components`` (labels of the last axis), ``quaternion_order`` (``"x, y, z, w"``), and, for a
table (compound dtype), ``field_units`` and ``field_descriptions`` (one per field, in field order).
The root holds ``format_version`` and ``conventions`` (:data:`CONVENTIONS`, the paragraph
above in short).

Pure: plain dicts and numpy shapes; :mod:`workbench.store.hdf5` writes them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from workbench.errors import StoreError
from workbench.sim.state import STATE_FIELDS
from workbench.store.schema import StoreSchema

__all__ = [
    "FORMAT_VERSION",
    "READABLE_VERSIONS",
    "CONVENTIONS",
    "REQUIRED_ATTRS",
    "XYZ",
    "QUATERNION",
    "observer_dim",
    "param_dims",
    "layout_attrs",
    "describe_extra_dataset",
]

#: Version of the file layout. 2 (issue 19): the attributes of this module on every dataset,
#: ``conventions`` at the root, no ``created`` unless asked, text fields of tables as UTF-8.
#: Version 1 files have the same datasets and are still read.
FORMAT_VERSION = 2

#: Layout versions :meth:`~workbench.store.hdf5.TrajectoryStore.open` reads.
READABLE_VERSIONS = (1, 2)

#: Attributes every dataset of a version-2 file has.
REQUIRED_ATTRS = ("units", "description", "dims")

#: Root attribute ``conventions``: how to read the attributes of the datasets.
CONVENTIONS = (
    "rigid-workbench store, format 2. SI units. Every dataset has attributes 'units' "
    "('1' dimensionless, '' text, flags or undeclared), 'description' and 'dims' (axis names: "
    "realization, time, body, component = x, y, z; quaternion = x, y, z, w; row, column = x, "
    "y, z). "
    "Vectors and tensors name their 'frame'. Quaternions are unit, scalar last "
    "('quaternion_order' = 'x, y, z, w'), and rotate the body frame (the frame in which the scene "
    "defines a body) into the world frame. Positions and velocities are those of the centre of "
    "mass, in the world frame; angular velocities are in the world frame. Rows of realizations "
    "not marked in /completed, and records past /recorded, are NaN. /nominal holds an "
    "ensemble's nominal run in the same layout."
)

#: Component labels of 3-vectors and of quaternions.
XYZ = ("x", "y", "z")
QUATERNION = ("x", "y", "z", "w")
QUATERNION_ORDER = "x, y, z, w"

_WORLD = "world"
_BODY = "body frame (the frame in which the scene defines the body)"
_LINK_FRAME = "link frame (the URDF frame of the link)"

#: Per state field: units, frame, description.
_STATES: dict[str, tuple[str, str, str]] = {
    "position": ("m", _WORLD, "position of each body's centre of mass"),
    "orientation": (
        "1",
        "body frame -> world",
        "unit quaternion (x, y, z, w: scalar last, PyBullet's order) rotating each body's frame "
        "(the frame in which the scene defines its shape, centre of mass and inertia; not "
        "PyBullet's principal-axes frame) into the world frame",
    ),
    "linear_velocity": ("m/s", _WORLD, "velocity of each body's centre of mass"),
    "angular_velocity": ("rad/s", _WORLD, "angular velocity of each body"),
}

#: Diagnostics written by forward runs (workbench/sim/forward.py) and reverse runs
#: (reverse/runs/run.py, DIAGNOSTICS): units and description. Others get units "" and say so.
_DIAGNOSTICS: dict[str, tuple[str, str]] = {
    "kinetic_energy": ("J", "total kinetic energy of the tracked bodies"),
    "contact_count": ("1", "number of contact points between all bodies"),
    "islands": ("1", "reverse runs: contact islands solved in the backward step into the record"),
    "sleeping_bodies": ("1", "reverse runs: bodies at rest (not stepped) in that step"),
    "lcp_rows_max": ("1", "reverse runs: rows of the largest island LCP of that step"),
    "lcp_pivots": ("1", "reverse runs: Lemke pivots summed over the islands of that step"),
    "lcp_failed": ("1", "reverse runs: island LCPs of that step left unsolved"),
    "lcp_fallbacks": ("1", "reverse runs: island LCPs of that step solved by a fallback rung"),
    "lcp_residual_max": (
        "1",
        "reverse runs: largest verification residual of the island LCPs of that step "
        "(scaled, reverse/lcp/solve.py lcp_residual)",
    ),
    "orientation_iterations": (
        "1",
        "reverse runs: iterations of the backward orientation solve of that step (fixed point, "
        "plus Newton where it did not converge; reverse/step/integration.py)",
    ),
    "orientation_residual": (
        "1",
        "reverse runs: largest residual of the backward orientation solve of that step "
        "(quaternion components)",
    ),
    "overlap_bodies": (
        "m",
        "reverse runs: deepest interpenetration of two moving bodies at the record's "
        "configuration (the physical audit, reverse/runs/audit.py)",
    ),
    "overlap_static": (
        "m",
        "reverse runs: deepest interpenetration of a moving body into a static one at the "
        "record's configuration (the physical audit)",
    ),
    "control_energy": (
        "J",
        "reverse runs: mechanical energy the velocity controls (damping, slip removal, "
        "restitution blend) injected, in forward time, into the step that led to the record",
    ),
    "mechanical_energy": (
        "J",
        "reverse runs: kinetic plus potential energy of the moving bodies in the form the "
        "semi-implicit Euler step keeps exactly in free flight (reverse/runs/audit.py)",
    ),
}

#: Observer quantities (workbench/scene/model.py, OBSERVER_QUANTITIES): frame and description.
_OBSERVERS: dict[str, tuple[str, str]] = {
    "point_position": (_WORLD, "position of a point fixed in the body"),
    "point_velocity": (_WORLD, "velocity of a point fixed in the body"),
    "point_acceleration": (_WORLD, "acceleration of a point fixed in the body"),
    "com_position": (_WORLD, "position of the body's centre of mass"),
    "com_velocity": (_WORLD, "velocity of the body's centre of mass"),
    "com_acceleration": (_WORLD, "acceleration of the body's centre of mass"),
    "euler_angles": (
        "body frame -> world",
        "orientation of the body frame as extrinsic x-y-z angles about the world axes "
        "(roll, pitch, yaw)",
    ),
    "angular_velocity": (_WORLD, "angular velocity of the body"),
    "angular_acceleration": (_WORLD, "angular acceleration of the body"),
    "kinetic_energy": ("", "kinetic energy"),
    "contact_count": ("", "number of contact points"),
}

#: Per-body parameters: units, frame, description.
_BODY_PARAMS: dict[str, tuple[str, str, str]] = {
    "mass": ("kg", "", "realized mass"),
    "com": ("m", _BODY, "realized centre of mass, in the body frame"),
    "inertia": ("kg m^2", _BODY, "realized inertia tensor about the centre of mass, body axes"),
    "G": (
        "1",
        _BODY,
        "random germ G of the inertia tensor (Batou & Soize 2012, Eq. 36; E[G] = I), "
        "J = M (tr(Z) I - Z), Z = L^T G L",
    ),
}

#: The store's group of sampled scene parameters (workbench/scene/fields.py, PARAMETERS_GROUP).
_PARAMETERS = "parameters"

#: Tables a reverse run adds (workbench/cli/reverse.py): description, axis name, and per field
#: (reverse/runs/run.py ISLAND_LOG_DTYPE, reverse/runs/sampling.py OUTCOME_DTYPE) units and
#: description.
_ISLANDS = (
    "per-island LCP log of a reverse run: one row per island per backward step",
    "island_step",
    {
        "step": ("1", "index of the record the backward step led into (forward order)"),
        "time": ("s", "time of that record"),
        "n_bodies": ("1", "bodies in the island"),
        "n_contacts": ("1", "contact points in the island"),
        "n_rows": ("1", "rows of the island's LCP"),
        "status": ("", "LCP status: solved, ray, max_pivots or failed (UTF-8 text)"),
        "pivots": ("1", "Lemke pivots taken"),
        "fallback": ("", "fallback rung that solved it, '' for plain Lemke (UTF-8 text)"),
        "residual": ("1", "verification residual of the answer (scaled, dimensionless)"),
    },
)
_OUTCOMES = (
    "sampled reverse runs: one row per run, kept or not, and why",
    "sample",
    {
        "index": ("1", "run index (seed spawn key)"),
        "seed": ("1", "seed of the run"),
        "status": ("", "ok, nonfinite, energy or error (UTF-8 text)"),
        "kept": ("", "whether the run is stored as a realization"),
        "rank": ("1", "realization index of a kept run (0 = lowest peak energy); -1 otherwise"),
        "peak_energy": ("J", "peak kinetic energy of the run"),
        "earliest_energy": ("J", "kinetic energy at the start of the (forward-time) motion"),
        "growth": ("1", "peak energy over the energy of the scene's state"),
        "lcp_failed": ("1", "island LCPs left unsolved"),
        "markov_transitions": ("1", "contact drops the Markov model drew"),
        "reason": ("", "why the run was not kept, '' when it was (UTF-8 text)"),
    },
)
_EXTRA_TABLES = {
    re.compile(r"reverse/islands(_\d+)?"): _ISLANDS,
    re.compile(r"sampling/outcomes"): _OUTCOMES,
}


def observer_dim(name: str, components: list[str] | tuple[str, ...]) -> str:
    """Name of the last axis of observer ``name``: ``component`` when its labels are x, y, z
    (shared with the states), else ``<name>_component``."""
    return "component" if tuple(components) == XYZ else f"{name}_component"


def param_dims(key: str, shape: tuple[int, ...]) -> tuple[str, ...]:
    """Axis names of parameter ``key`` (``<body>/<quantity>``) of per-realization ``shape``."""
    if shape == ():
        return ("realization",)
    if shape == (3,):
        return ("realization", "component")
    if shape == (3, 3):
        return ("realization", "row", "column")
    flat = key.replace("/", "_")
    return ("realization", *(f"{flat}_axis{k}" for k in range(len(shape))))


def _param_attrs(key: str, shape: tuple[int, ...]) -> dict[str, Any]:
    group, _, quantity = key.rpartition("/")
    dims = param_dims(key, shape)
    if group == _PARAMETERS:
        attrs = {
            "units": "",
            "description": f"sampled value of scene parameter ${{{quantity}}} (the scene file "
            "declares no unit)",
        }
    elif quantity in _BODY_PARAMS:
        units, frame, text = _BODY_PARAMS[quantity]
        body, _, link = group.partition("/")
        if link:  # a URDF body's random link: its values are in the link frame
            text = text.replace("body frame", "link frame").replace("body axes", "link axes")
            attrs = {"units": units, "description": f"link {link} of body {body}: {text}"}
            frame = _LINK_FRAME if frame else frame
        else:
            attrs = {"units": units, "description": f"body {group}: {text}"}
        if frame:
            attrs["frame"] = frame
    else:
        attrs = {"units": "", "description": f"parameter {quantity} of {group} (not registered)"}
    attrs["dims"] = dims
    if "component" in dims:
        attrs["components"] = XYZ
    return attrs


def _observer_attrs(name: str, info: Mapping[str, Any]) -> dict[str, Any]:
    frame, text = _OBSERVERS.get(info["quantity"], ("", f"observer quantity {info['quantity']}"))
    body = info["body"]
    attrs = {
        "units": info["unit"],
        "description": f"observer {name}: {text}" + (f" (body {body})" if body else ""),
        "dims": ("realization", "time", observer_dim(name, info["components"])),
    }
    if frame:
        attrs["frame"] = frame
    return attrs


#: The ``/links`` datasets (workbench/store/links.py): units and description; axis ``link``.
_LINKS: dict[str, tuple[str, str]] = {
    "name": ("", "name of the link's row in /states and /body_names: '<body>/<link>'"),
    "body": ("", "the scene body (a URDF model) the link belongs to"),
    "link": ("", "the link's name in the URDF file"),
    "index": ("1", "PyBullet's link index (the base link, -1, is the body's own row)"),
    "parent": ("", "row name of the parent link ('<body>' when the parent is the base link)"),
    "joint": ("", "name of the URDF joint from the parent link to the link"),
    "joint_type": ("", "type of that joint: revolute, continuous, prismatic, fixed, ..."),
}

#: Per joint dataset: description and the unit of its values per unit of a joint coordinate.
_JOINTS: dict[str, tuple[str, str]] = {
    "position": ("joint coordinate (PyBullet's getJointState: angle or displacement)", ""),
    "velocity": ("joint rate (PyBullet's getJointState)", "/s"),
}


def _link_attrs(schema: StoreSchema) -> dict[str, dict[str, Any]]:
    """Attributes of ``/links/*``, ``/joint_names`` and ``/joints/*`` (none without links)."""
    out: dict[str, dict[str, Any]] = {}
    if not schema.link_info:
        return out
    for key, (units, text) in _LINKS.items():
        out[f"links/{key}"] = {"units": units, "description": text, "dims": ("link",)}
    if not schema.joint_info:
        return out
    out["joint_names"] = {
        "units": "",
        "description": "moving joints of URDF bodies, '<body>/<joint>', in the order of the "
        "joint axis of /joints",
        "dims": ("joint",),
    }
    units = [info["unit"] for info in schema.joint_info.values()]
    for name, (text, rate) in _JOINTS.items():
        per_joint = [u + rate for u in units]
        same = per_joint[0] if len(set(per_joint)) == 1 else ""
        out[f"joints/{name}"] = {
            "units": same,
            "description": f"{text} of each moving joint; units per joint in joint_units"
            + ("" if same else " (mixed: revolute rad, prismatic m)"),
            "dims": ("realization", "time", "joint"),
            "joint_units": tuple(per_joint),
            "joint_links": tuple(info["link"] for info in schema.joint_info.values()),
            "joint_types": tuple(info["type"] for info in schema.joint_info.values()),
        }
    return out


def layout_attrs(schema: StoreSchema) -> dict[str, dict[str, Any]]:
    """The attributes of every dataset of a store with ``schema``, by path relative to its group
    (``time``, ``states/position``, ``params/ball/mass``, ...).

    Observer datasets also keep their ``quantity``, ``unit``, ``components`` and ``body``
    (written by :mod:`workbench.store.hdf5` from ``schema.observer_info``); here they gain
    ``units``, ``description``, ``dims`` and ``frame``.
    """
    out: dict[str, dict[str, Any]] = {
        "time": {"units": "s", "description": "instants of the records", "dims": ("time",)},
        "body_names": {
            "units": "",
            "description": "names of the tracked bodies, in the order of the body axis",
            "dims": ("body",),
        },
    }
    for name, k in STATE_FIELDS.items():
        units, frame, text = _STATES[name]
        last = "quaternion" if k == 4 else "component"
        out[f"states/{name}"] = {
            "units": units,
            "description": text,
            "dims": ("realization", "time", "body", last),
            "frame": frame,
            "components": QUATERNION if k == 4 else XYZ,
            **({"quaternion_order": QUATERNION_ORDER} if k == 4 else {}),
        }
    for name, info in schema.observer_info.items():
        out[f"observers/{name}"] = _observer_attrs(name, info)
    for name in schema.diagnostics:
        units, text = _DIAGNOSTICS.get(name, ("", f"diagnostic {name} (not registered)"))
        out[f"diagnostics/{name}"] = {
            "units": units,
            "description": text,
            "dims": ("realization", "time"),
        }
    out.update(_link_attrs(schema))
    for key, shape in schema.param_shapes.items():
        out[f"params/{key}"] = _param_attrs(key, shape)
    out["completed"] = {
        "units": "",
        "description": "true once every dataset of the realization is written and flushed",
        "dims": ("realization",),
    }
    out["recorded"] = {
        "units": "1",
        "description": "valid records of the realization; later records are NaN",
        "dims": ("realization",),
    }
    out["status"] = {
        "units": "",
        "description": "'ok', or why the run stopped (nonfinite, error, energy, ...); '' until "
        "written",
        "dims": ("realization",),
    }
    out["message"] = {
        "units": "",
        "description": "detail for a status other than 'ok'",
        "dims": ("realization",),
    }
    return out


def describe_extra_dataset(
    name: str, data: np.ndarray, given: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The attributes of an extra dataset (``extra_datasets`` of
    :meth:`~workbench.store.hdf5.TrajectoryStore.create`) named ``name``.

    The tables of reverse runs (``reverse/islands``, ``reverse/islands_<r>``,
    ``sampling/outcomes``) are described here; any other dataset needs ``given`` with at least
    ``units`` and ``description`` (``dims`` defaults to ``<name>_axis<k>``), which also override
    the built-in ones.

    Raises
    ------
    StoreError
        ``name`` is not described here and ``given`` lacks ``units`` or ``description``.
    """
    attrs: dict[str, Any] = {}
    for pattern, (text, axis, fields) in _EXTRA_TABLES.items():
        if pattern.fullmatch(name):
            attrs = {"units": "", "description": text, "dims": (axis,)}
            if data.dtype.names:
                attrs["field_units"] = tuple(fields.get(f, ("", ""))[0] for f in data.dtype.names)
                attrs["field_descriptions"] = tuple(
                    fields.get(f, ("", f"{f} (not registered)"))[1] for f in data.dtype.names
                )
    attrs.update(given or {})
    missing = [key for key in ("units", "description") if key not in attrs]
    if missing:
        raise StoreError(
            f"extra dataset {name!r}: give its {' and '.join(missing)} in extra_dataset_attrs "
            "(every dataset of a store describes itself)"
        )
    if "dims" not in attrs:
        flat = name.replace("/", "_")
        attrs["dims"] = tuple(f"{flat}_axis{k}" for k in range(data.ndim))
    return attrs
