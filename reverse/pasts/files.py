"""The files of backward runs and pasts: what ``workbench reverse`` and ``workbench pasts`` write
beside the trajectories — the extra datasets, their units and descriptions, and the root
attributes — owned here and written through the store (:mod:`workbench.store`;
``docs/hdf5.md`` lists them).

* :func:`write_reverse_run`: one backward run (:func:`reverse.runs.run.run_reverse`), optionally
  continued forward, with its island log, audit, PyBullet confirmation and verification;
* :func:`write_sampled_runs`: the kept runs of :func:`reverse.runs.sampling.sample_reverse_runs`
  as realizations, with the table of every run;
* :func:`write_conditioned_pasts`: the pasts of :func:`reverse.pasts.conditioned.conditioned_pasts`
  as realizations, with the table of every throw tried;
* :func:`verification_parts`: what the forward verification (:mod:`reverse.runs.verify`) adds to
  either kind of file.

Identical inputs give identical bytes (no wall times are stored; ``timestamp`` adds the creation
time).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from reverse.runs.verify import VERIFY_DTYPE, verify_states, verify_table
from workbench.scene.loader import scene_to_json
from workbench.sim.state import Trajectory
from workbench.store import StoreSchema, TrajectoryStore, write_trajectory

__all__ = [
    "CONDITIONED_DTYPE",
    "FileParts",
    "reverse_attrs",
    "confirmation_parts",
    "verification_parts",
    "write_reverse_run",
    "write_sampled_runs",
    "past_trajectory",
    "conditioned_table",
    "write_conditioned_pasts",
]

_STATE_TEXT = (
    "every body: position (3), body-frame quaternion x y z w (4), linear (3) and angular "
    "velocity (3)"
)


@dataclass
class FileParts:
    """What a part of a run adds to its file: ``datasets`` (path → array), their attributes
    (``described``: path → the store's ``extra_dataset_attrs`` entry) and root ``attrs``."""

    datasets: dict = field(default_factory=dict)
    described: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)

    def add(self, other: FileParts) -> None:
        self.datasets.update(other.datasets)
        self.described.update(other.described)
        self.attrs.update(other.attrs)


def reverse_attrs(
    *,
    dt: float,
    settings,
    hints_text: str,
    start_overlap: float,
    markov=None,
    energy_limit: float | None = None,
    persist_contacts: bool = False,
    cap_bounces: bool = False,
    sample_heading: str | None = None,
) -> dict:
    """The root attributes every backward-run file carries: time reversal, the step and its
    settings (``repr`` of :class:`~reverse.step.stepper.StepSettings`), the hints as YAML, the
    scene's own overlap at the final state, and the table and limits that were used."""
    return {
        "time_reversed": 1,
        "reverse_dt": dt,
        "hints": hints_text,
        "start_overlap": start_overlap,
        "reverse_settings": repr(settings),
        **({"markov_table": markov.to_json()} if markov is not None else {}),
        **({"energy_limit": energy_limit} if energy_limit else {}),
        **({"persist_contacts": 1} if persist_contacts else {}),
        **({"cap_bounces": 1} if cap_bounces else {}),
        **({"sample_heading": sample_heading} if sample_heading is not None else {}),
    }


def confirmation_parts(confirmation) -> FileParts:
    """``/reverse/confirmation`` and the attribute ``confirmed_share`` of a
    :class:`~reverse.runs.confirm.Confirmation` (the past played forward by PyBullet); a refined
    confirmation adds the earliest state PyBullet played (``/reverse/confirmed_earliest``) and
    the runs spent (``confirm_refine_runs``)."""
    parts = _confirmation_table(confirmation)
    if confirmation.refine_runs:
        parts.attrs["confirm_refine_runs"] = confirmation.refine_runs
    if confirmation.refined:
        e = confirmation.earliest
        parts.datasets["reverse/confirmed_earliest"] = np.concatenate(
            [e.position, e.orientation, e.linear_velocity, e.angular_velocity], axis=1
        )
        parts.described["reverse/confirmed_earliest"] = {
            "units": "m, 1, m/s, rad/s",
            "description": "the earliest state PyBullet played for the confirmation: the run's "
            "own, its missing bodies' positions shifted toward their miss "
            "(reverse/runs/confirm.py refine_confirmation), " + _STATE_TEXT,
            "dims": ("body", "state_component"),
        }
    return parts


def _confirmation_table(confirmation) -> FileParts:
    return FileParts(
        datasets={"reverse/confirmation": confirmation.table()},
        described={
            "reverse/confirmation": {
                "units": "",
                "description": "PyBullet's confirmation of the run (reverse/runs/confirm.py): "
                "each moving body's distance and turn from its place in the scene after PyBullet "
                "played the earliest state forward for the run's duration",
                "dims": ("moving_body",),
                "field_units": ("", "m", "deg"),
                "field_descriptions": (
                    "body name",
                    "distance from its place in the scene (inf: the run went non-finite)",
                    "rotation from its orientation in the scene",
                ),
            }
        },
        attrs={"confirmed_share": confirmation.share},
    )


# ----------------------------------------------------------------------------- verification
#: Units and descriptions of the :data:`~reverse.runs.verify.VERIFY_DTYPE` fields.
_VERIFY_FIELDS = {
    "run": ("1", "realization in the file that was verified"),
    "index": ("1", "sampled run index (the key of its refinement stream)"),
    "status": ("", "refined | not refined | error"),
    "at_rest": ("1", "the best forward PyBullet run came to rest"),
    "residual_position": (
        "m",
        "best forward run: largest distance of a body from its final position",
    ),
    "residual_angle": (
        "deg",
        "best forward run: largest angle of a body's rotation from its final one",
    ),
    "initial_position": ("m", "the reverse run's own earliest state: position residual"),
    "initial_angle": ("deg", "the reverse run's own earliest state: angle residual"),
    "pybullet_runs": ("1", "forward PyBullet runs the refinement made"),
    "rest_time": ("s", "time from the earliest state to rest in the best forward run"),
    "pose_shift": ("m", "largest distance of a refined earliest position from the reverse one"),
    "pose_turn": (
        "deg",
        "largest angle between a refined earliest orientation and the reverse one",
    ),
    "velocity_change": ("m/s", "largest change of a linear velocity at the earliest state"),
    "spin_change": ("rad/s", "largest change of an angular velocity at the earliest state"),
}


def verification_parts(outcomes, settings: dict, entropy: int) -> FileParts:
    """``verify/outcomes`` (one row per verified run), ``verify/earliest`` (the refined earliest
    states) and the refinement's settings as root attributes, from the outcomes of
    :func:`reverse.runs.verify.verify_runs` and its ``settings``
    (:func:`~reverse.runs.verify.verify_settings`)."""
    table = verify_table(outcomes)
    names = VERIFY_DTYPE.names
    tol, radius = settings["tolerance"], settings["radius"]
    return FileParts(
        datasets={"verify/outcomes": table, "verify/earliest": verify_states(outcomes)},
        described={
            "verify/outcomes": {
                "units": "",
                "description": "forward verification of each kept run's earliest state "
                "(reverse/runs/verify.py): residual of the best PyBullet forward run and its cost",
                "dims": ("verified_run",),
                "field_units": tuple(_VERIFY_FIELDS[f][0] for f in names),
                "field_descriptions": tuple(_VERIFY_FIELDS[f][1] for f in names),
            },
            "verify/earliest": {
                "units": "m, 1, m/s, rad/s",
                "description": "refined earliest state of each verified run, " + _STATE_TEXT,
                "dims": ("verified_run", "body", "state_component"),
            },
        },
        attrs={
            "verify_budget": settings["budget"],
            "verify_tolerance": [tol[0], math.degrees(tol[1])],
            "verify_radius": [radius[0], math.degrees(radius[1])],
            "verify_entropy": str(entropy),
            "verified_runs": int(np.sum(table["status"] == b"refined")),
        },
    )


# ----------------------------------------------------------------------------- backward runs
def write_reverse_run(
    out: str | Path,
    scene,
    result,
    trajectory: Trajectory,
    *,
    attrs: dict,
    parts: FileParts | None = None,
    forward_from: float | None = None,
    seed_entropy: int | None = None,
    timestamp: bool = False,
) -> None:
    """Write one backward run: ``trajectory`` (the run's, or the run stitched to a forward
    continuation that starts at ``forward_from`` s), ``/reverse/islands`` (the island log of
    ``result``, a :class:`~reverse.runs.run.ReverseResult`), the audit and the Markov draws of
    ``result``, ``attrs`` (:func:`reverse_attrs`) and ``parts`` (confirmation,
    verification)."""
    run = result.trajectory
    attrs = {**attrs, "reverse_duration": float(run.time[-1])}
    if result.audit is not None:
        attrs["audit"] = result.audit.to_json()
    if result.markov_entropy is not None:
        attrs["markov_seed"] = str(result.markov_entropy)
        attrs["markov_transitions"] = result.markov_transitions
    if forward_from is not None:
        attrs["forward_from"] = forward_from
    parts = parts or FileParts()
    write_trajectory(
        out,
        trajectory,
        scene_text=scene.source_text,
        scene_json=scene_to_json(scene),
        seed_entropy=seed_entropy,
        extra_attrs={**attrs, **parts.attrs},
        extra_datasets={"reverse/islands": result.island_log, **parts.datasets},
        extra_dataset_attrs=parts.described or None,
        timestamp=timestamp,
    )


def write_sampled_runs(
    out: str | Path,
    scene,
    result,
    *,
    attrs: dict,
    samples: int,
    parts: FileParts | None = None,
    timestamp: bool = False,
) -> None:
    """Write the kept runs of a :class:`~reverse.runs.sampling.SampleResult` as realizations
    (lowest peak kinetic energy first), ``/sampling/outcomes`` (every run, kept or not),
    ``/reverse/islands_<r>`` per realization, ``attrs`` and ``parts`` (verification)."""
    parts = parts or FileParts()
    first = result.kept[0][1]
    datasets = {"sampling/outcomes": result.table()}
    for r, (_, _, log) in enumerate(result.kept):
        datasets[f"reverse/islands_{r}"] = log
    datasets.update(parts.datasets)
    with TrajectoryStore.create(
        out,
        StoreSchema.from_trajectory(first),
        len(result.kept),
        scene_text=scene.source_text,
        scene_json=scene_to_json(scene),
        seed_entropy=result.entropy,
        kind="ensemble",
        timestamp=timestamp,
        extra_attrs={
            **attrs,
            "reverse_duration": float(first.time[-1]),
            "samples": samples,
            "kept_runs": ",".join(str(o.index) for o, _, _ in result.kept),
            **parts.attrs,
        },
        extra_datasets=datasets,
        extra_dataset_attrs=parts.described or None,
    ) as store:
        store.write_many((r, traj) for r, (_, traj, _) in enumerate(result.kept))


# ----------------------------------------------------------------------------- conditioned pasts
#: One row per throw tried in ``/conditioned/outcomes`` (no wall times: identical inputs give
#: identical bytes, docs/hdf5.md), in throw order.
CONDITIONED_DTYPE = np.dtype(
    [
        ("throw", "i8"),
        ("realization", "i8"),
        ("status", "S12"),
        ("carry_position", "f8"),
        ("carry_angle", "f8"),
        ("residual_position", "f8"),
        ("residual_angle", "f8"),
        ("pybullet_runs", "i8"),
        ("rest_time", "f8"),
        ("message", "S120"),
    ]
)

#: Units and descriptions of the :data:`CONDITIONED_DTYPE` fields, for the file.
_CONDITIONED_FIELDS = {
    "throw": ("1", "throw index: its draws SeedSequence(seed_entropy, spawn_key=(throw,))"),
    "realization": ("1", "realization in the file holding its past (-1: not kept)"),
    "status": ("", "refined (kept) | not refined | error | moving | other face"),
    "carry_position": (
        "m",
        "the throw's rest pose, turned about the vertical and shifted onto the final pose: "
        "distance from the final position (NaN: no rest by the end of the duration)",
    ),
    "carry_angle": ("deg", "the same: rotation angle from the final orientation"),
    "residual_position": ("m", "kept past: its rest position's distance from the final one"),
    "residual_angle": ("deg", "kept past: its rest orientation's angle from the final one"),
    "pybullet_runs": (
        "1",
        "PyBullet forward runs: the throw, its record when on the face, the refinement's and "
        "the past's record",
    ),
    "rest_time": ("s", "kept past: time from its earliest state to rest"),
    "message": ("", "why the throw was not kept (first 120 bytes)"),
}


def past_trajectory(past, body_names, dt: float, params: dict) -> Trajectory:
    """A kept :class:`reverse.pasts.conditioned.ConditionedPast` as a
    :class:`~workbench.sim.state.Trajectory` in a reverse run's conventions
    (:func:`reverse.runs.run.run_reverse`: ``time`` = k·dt from 0, the earliest state, to the
    duration, the scene's state; status ``ok``)."""
    a = past.trajectory
    return Trajectory(
        time=np.arange(len(a)) * dt,  # as reverse.runs.run: int to float, then one product
        body_names=tuple(body_names),
        position=np.ascontiguousarray(a[:, :, 0:3]),
        orientation=np.ascontiguousarray(a[:, :, 3:7]),
        linear_velocity=np.ascontiguousarray(a[:, :, 7:10]),
        angular_velocity=np.ascontiguousarray(a[:, :, 10:13]),
        diagnostics={"kinetic_energy": np.array(past.kinematics[:, 2], dtype=float)},
        params=params,
    )


def conditioned_table(tried, kept) -> np.ndarray:
    """Every throw tried as a row of :data:`CONDITIONED_DTYPE`, in throw order."""
    realization = {r.throw: k for k, r in enumerate(kept)}
    return np.array(
        [
            (
                r.throw,
                realization.get(r.throw, -1),
                r.status.encode()[:12],
                r.carry_position,
                math.degrees(r.carry_angle),
                r.residual_position,
                math.degrees(r.residual_angle),
                r.pybullet_runs,
                r.rest_time,
                r.message.encode("ascii", "replace")[:120],
            )
            for r in tried
        ],
        dtype=CONDITIONED_DTYPE,
    )


def _conditioned_described() -> dict[str, dict]:
    names = CONDITIONED_DTYPE.names
    return {
        "conditioned/outcomes": {
            "units": "",
            "description": "conditioned forward pasts (reverse/pasts/conditioned.py): one row "
            "per throw tried, in throw order, and what became of it",
            "dims": ("throw",),
            "field_units": tuple(_CONDITIONED_FIELDS[f][0] for f in names),
            "field_descriptions": tuple(_CONDITIONED_FIELDS[f][1] for f in names),
        },
        "conditioned/earliest": {
            "units": "m, 1, m/s, rad/s",
            "description": "refined earliest state of each realization (its first record), "
            + _STATE_TEXT,
            "dims": ("realization", "body", "state_component"),
        },
        "conditioned/release": {
            "units": "m, 1, m/s, rad/s",
            "description": "each realization's throw release carried onto the final pose (the "
            "refinement's start), " + _STATE_TEXT,
            "dims": ("realization", "body", "state_component"),
        },
        "conditioned/contact_state": {
            "units": "1",
            "description": "contact state of the moving body per record, as the Markov "
            "training counts it (0 free, 1 vertex, 2 edge, 3 face; reverse/goals/markov.py)",
            "dims": ("realization", "time"),
        },
    }


def write_conditioned_pasts(
    out: str | Path,
    scene,
    kept,
    tried,
    summary: dict,
    *,
    body: int,
    dt: float,
    asked: int,
    max_throws: int,
    settings: dict,
    entropy: int,
    start_overlap: float,
    timestamp: bool = False,
) -> None:
    """Write the ``kept`` pasts of :func:`reverse.pasts.conditioned.conditioned_pasts` as
    realizations in a reverse run's conventions, with ``/conditioned/outcomes`` (every throw
    ``tried``), the refined earliest states, the carried releases and the contact states, and
    the sampler's settings and ``summary`` (:func:`~reverse.pasts.conditioned.conditioned_summary`)
    as attributes; ``body`` is the moving body whose mass and inertia are the realizations'
    parameters."""
    b = scene.bodies[body]
    props = b.mass_properties
    params = {f"{b.name}/mass": np.array(props.mass), f"{b.name}/inertia": props.inertia_matrix}
    trajs = [past_trajectory(r, scene.body_names, dt, params) for r in kept]
    tol, radius = settings["tolerance"], settings["radius"]
    attrs = {
        "time_reversed": 1,
        "reverse_dt": dt,
        "reverse_duration": float(trajs[0].time[-1]),
        "start_overlap": start_overlap,
        "reverse_sampler": "conditioned",
        "conditioned_sampler": "conditioned forward pasts (reverse/pasts/conditioned.py): "
        "throws of the training's throw law resting on the final pose's face at the end of the "
        "duration, carried onto it by a turn about the vertical and a horizontal shift, their "
        "release refined until PyBullet rests within the tolerance; not the backward stepper",
        "conditioned_asked": asked,
        "conditioned_kept": len(kept),
        "conditioned_throws": len(tried),
        "conditioned_max_throws": max_throws,
        "conditioned_complete": int(len(kept) == asked),
        "conditioned_summary": json.dumps(summary, sort_keys=True),
        "conditioned_verify_budget": settings["budget"],
        "conditioned_verify_tolerance": [tol[0], math.degrees(tol[1])],
        "conditioned_verify_radius": [radius[0], math.degrees(radius[1])],
        "kept_throws": ",".join(str(r.throw) for r in kept),
    }
    datasets = {
        "conditioned/outcomes": conditioned_table(tried, kept),
        "conditioned/earliest": np.stack([r.earliest for r in kept]).astype(float),
        "conditioned/release": np.stack([r.release for r in kept]).astype(float),
        "conditioned/contact_state": np.stack([r.states for r in kept]).astype(np.int8),
    }
    with TrajectoryStore.create(
        out,
        StoreSchema.from_trajectory(trajs[0]),
        len(trajs),
        scene_text=scene.source_text,
        scene_json=scene_to_json(scene),
        seed_entropy=entropy,
        kind="ensemble",
        timestamp=timestamp,
        extra_attrs=attrs,
        extra_datasets=datasets,
        extra_dataset_attrs=_conditioned_described(),
    ) as store:
        store.write_many(enumerate(trajs))
