"""State and trajectory of a set of rigid bodies: the one representation shared by forward runs,
reverse runs, the HDF5 store and the viewer.

Conventions (SI units throughout):

- ``position`` is the world position of each body's centre of mass, m.
- ``orientation`` is the unit quaternion (x, y, z, w — PyBullet's order) of the *body frame*, the
  frame in which the scene file defines the body (its shape, centre-of-mass offset and inertia).
  It is not PyBullet's principal-axes inertial frame; :mod:`workbench.sim.engine` converts.
- ``linear_velocity`` is the centre-of-mass velocity, m/s, world frame.
- ``angular_velocity`` is in the world frame, rad/s.

The links of a URDF body other than its base are tracked rows of their own, after the scene's
bodies, named ``"<body>/<link>"``, in the same convention: ``position`` is the link's centre of
mass, ``orientation`` its URDF link frame (the frame in which the URDF places the link's
inertial, visual and collision origins), the velocities those of the centre of mass and the
world angular velocity. :attr:`Trajectory.link_info` says which row is which link of which body,
and :attr:`Trajectory.joint_position` / ``joint_velocity`` hold the states of the links' moving
joints (what places the links of a multibody in PyBullet: the replay sets them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from workbench.errors import WorkbenchError

__all__ = [
    "State",
    "Trajectory",
    "RecordShape",
    "STATE_FIELDS",
    "FRAME_SLACK",
    "finite_records",
    "MAX_COORDINATE",
    "QUATERNION_NORM_TOL",
    "state_problems",
    "state_problem_text",
    "state_in_bounds",
    "first_state_problem",
    "check_same_bodies",
    "records_at_rate",
    "ROW_CHANNELS",
    "JOINT_CHANNELS",
    "channel",
]

#: What a plot or statistic can take of a tracked row (a body or a link, ``"<body>/<link>"``):
#: per state field, the observer quantity it equals, its unit and component labels.
ROW_CHANNELS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "position": ("com_position", "m", ("x", "y", "z")),
    "linear_velocity": ("com_velocity", "m/s", ("x", "y", "z")),
    "angular_velocity": ("angular_velocity", "rad/s", ("x", "y", "z")),
    "orientation": ("orientation", "1", ("x", "y", "z", "w")),
}

#: What a plot can take of a recorded joint: per field, its quantity and the unit's suffix.
JOINT_CHANNELS: dict[str, tuple[str, str]] = {
    "position": ("joint_position", ""),
    "velocity": ("joint_velocity", "/s"),
}

#: Names and trailing sizes of the per-body state arrays, in storage order.
STATE_FIELDS: dict[str, int] = {
    "position": 3,
    "orientation": 4,
    "linear_velocity": 3,
    "angular_velocity": 3,
}

#: Slack, in frames, when counting how many frames of a given rate fit between two record times:
#: record times are sums of float steps (6 * (1/240) is not exactly 0.025), so a frame due
#: exactly at the last record must not be lost to rounding.
FRAME_SLACK = 1e-6


@dataclass(frozen=True)
class State:
    """Instantaneous state of ``n`` bodies.

    Attributes
    ----------
    position : ndarray, shape (n, 3)
        Centre-of-mass positions, m.
    orientation : ndarray, shape (n, 4)
        Body-frame quaternions (x, y, z, w).
    linear_velocity : ndarray, shape (n, 3)
        Centre-of-mass velocities, m/s.
    angular_velocity : ndarray, shape (n, 3)
        Angular velocities in the world frame, rad/s.
    """

    position: np.ndarray
    orientation: np.ndarray
    linear_velocity: np.ndarray
    angular_velocity: np.ndarray

    def __post_init__(self) -> None:
        n = np.shape(self.position)[0]
        for name, k in STATE_FIELDS.items():
            arr = np.asarray(getattr(self, name), dtype=float)
            if arr.shape != (n, k):
                raise ValueError(f"State.{name} must have shape ({n}, {k}), got {arr.shape}")
            object.__setattr__(self, name, arr)

    @property
    def n_bodies(self) -> int:
        return self.position.shape[0]

    def packed(self) -> np.ndarray:
        """Shape (n, 13): position, body-frame quaternion (x, y, z, w), linear and angular
        velocity of every body (:meth:`from_packed` reads it back)."""
        return np.concatenate(
            [self.position, self.orientation, self.linear_velocity, self.angular_velocity], axis=1
        )

    @classmethod
    def from_packed(cls, a) -> State:
        """The state of :meth:`packed`'s array ``a`` (n, 13)."""
        a = np.asarray(a, dtype=float)
        return cls(a[:, :3], a[:, 3:7], a[:, 7:10], a[:, 10:13])

    def is_finite(self) -> np.ndarray:
        """Boolean mask, shape (n,), true where every component of a body's state is finite."""
        ok = np.ones(self.n_bodies, dtype=bool)
        for name in STATE_FIELDS:
            ok &= np.all(np.isfinite(getattr(self, name)), axis=1)
        return ok


class RecordShape:
    """``n_times`` and ``n_bodies`` of anything recorded with a ``time`` array, shape (nt,), and
    ``body_names``: a :class:`Trajectory`, or the schema of a store of them."""

    @property
    def n_times(self) -> int:
        return int(self.time.shape[0])

    @property
    def n_bodies(self) -> int:
        return len(self.body_names)


@dataclass
class Trajectory(RecordShape):
    """Recorded states of one run.

    Attributes
    ----------
    time : ndarray, shape (nt,)
        Recording times, s.
    body_names : tuple of str
        Names of the ``n`` tracked bodies, in state order.
    position, orientation, linear_velocity, angular_velocity : ndarray, shape (nt, n, k)
        Stacked :class:`State` fields (see the module docstring for conventions).
    observers : dict of str to ndarray, shape (nt, k)
        Observer channels by name.
    observer_info : dict of str to dict
        Per observer: ``quantity``, ``unit``, ``components`` (labels of the k columns), ``body``.
    diagnostics : dict of str to ndarray, shape (nt,)
        Per-record diagnostics (``contact_count``, ``kinetic_energy``, ...).
    params : dict of str to ndarray
        Realization parameters by ``"<body>/<quantity>"`` (mass, com, inertia, ...).
    link_info : dict of str to dict
        Per tracked link row name (``"<body>/<link>"``, in row order after the scene's bodies):
        ``body`` (the scene body), ``link`` (its URDF name), ``index`` (PyBullet's link index),
        ``parent`` (the tracked row of its parent link: the body itself for the base),
        ``joint`` and ``joint_type`` (the URDF joint to the parent). Empty without URDF links.
    joint_info : dict of str to dict
        Per moving joint ``"<body>/<joint>"`` (revolute, continuous, prismatic), in column
        order: ``link`` (the tracked row it moves), ``type``, ``unit`` (rad or m).
    joint_position, joint_velocity : ndarray, shape (nt, n_joints), or None
        Joint coordinates (rad or m) and their rates (rad/s or m/s); None without joints.
    status : str
        ``"ok"`` or the reason the run stopped early (``"nonfinite"``, ``"error"``).
    message : str
        Human-readable detail when ``status != "ok"``.
    """

    time: np.ndarray
    body_names: tuple[str, ...]
    position: np.ndarray
    orientation: np.ndarray
    linear_velocity: np.ndarray
    angular_velocity: np.ndarray
    observers: dict[str, np.ndarray] = field(default_factory=dict)
    observer_info: dict[str, dict] = field(default_factory=dict)
    diagnostics: dict[str, np.ndarray] = field(default_factory=dict)
    params: dict[str, np.ndarray] = field(default_factory=dict)
    status: str = "ok"
    message: str = ""
    link_info: dict[str, dict] = field(default_factory=dict)
    joint_info: dict[str, dict] = field(default_factory=dict)
    joint_position: np.ndarray | None = None
    joint_velocity: np.ndarray | None = None

    def state(self, i: int) -> State:
        """The :class:`State` at record ``i`` (negative indices count from the end)."""
        return State(
            self.position[i],
            self.orientation[i],
            self.linear_velocity[i],
            self.angular_velocity[i],
        )

    def body_index(self, name: str) -> int:
        try:
            return self.body_names.index(name)
        except ValueError:
            near = _did_you_mean(name, self.body_names)
            raise KeyError(
                f"no body {name!r}{near}; bodies are {', '.join(self.body_names)}"
            ) from None

    def truncated(self, n: int) -> Trajectory:
        """The first ``n`` records (used to keep the steps before a failure)."""
        return Trajectory(
            time=self.time[:n].copy(),
            body_names=self.body_names,
            position=self.position[:n].copy(),
            orientation=self.orientation[:n].copy(),
            linear_velocity=self.linear_velocity[:n].copy(),
            angular_velocity=self.angular_velocity[:n].copy(),
            observers={k: v[:n].copy() for k, v in self.observers.items()},
            observer_info=dict(self.observer_info),
            diagnostics={k: v[:n].copy() for k, v in self.diagnostics.items()},
            params=dict(self.params),
            status=self.status,
            message=self.message,
            link_info=dict(self.link_info),
            joint_info=dict(self.joint_info),
            joint_position=None if self.joint_position is None else self.joint_position[:n].copy(),
            joint_velocity=None if self.joint_velocity is None else self.joint_velocity[:n].copy(),
        )

    def joint_index(self, name: str) -> int:
        """Column of joint ``name`` (``"<body>/<joint>"``) in :attr:`joint_position`."""
        names = list(self.joint_info)
        try:
            return names.index(name)
        except ValueError:
            raise KeyError(
                f"no joint {name!r}{_did_you_mean(name, names)}; joints are "
                f"{', '.join(names) or '(none)'}"
            ) from None


#: Largest coordinate of a position taken as a motion, m. PyBullet does not overflow to inf: it
#: saturates coordinates at 1e30 (Bullet's ``BT_LARGE_FLOAT``; measured: a sphere pushed by
#: 1e308 N, or falling at 1e308 m/s^2, sits at exactly 1e30 m and the run ended ``ok``). At 1e15 m
#: a double resolves 0.125 m, coarser than the bodies a scene holds, so beyond it a position no
#: longer describes a motion.
MAX_COORDINATE = 1e15

#: Largest deviation from 1 of a recorded quaternion's norm. PyBullet renormalises every step
#: (measured over box_stack5, mesh_tumble and pendulum_chain: within 2.3e-16 of 1); a deviation
#: beyond the scene reader's tolerance for a given quaternion (a zero quaternion, which made
#: scipy raise "zero norm quaternions") is a broken state.
QUATERNION_NORM_TOL = 1e-3


def state_problems(block: np.ndarray) -> np.ndarray:
    """Which rows' states are not a motion, shape (r, m) of bool, for records ``block`` of
    shape (r, m, 13) (position, quaternion, velocity, angular velocity): a non-finite value, a
    coordinate beyond :data:`MAX_COORDINATE` (PyBullet's saturation, the README's bound) or a
    quaternion whose norm is off by more than :data:`QUATERNION_NORM_TOL`. The one check every
    run (forward, reverse, sampled) applies before it says ``ok``."""
    block = np.asarray(block, dtype=float)
    with np.errstate(all="ignore"):
        nonfinite = ~np.isfinite(block).all(axis=2)
        saturated = (np.abs(block[..., 0:3]) > MAX_COORDINATE).any(axis=2)
        norm = np.linalg.norm(block[..., 3:7], axis=2)
        degenerate = ~(np.abs(norm - 1.0) <= QUATERNION_NORM_TOL)
    return nonfinite | saturated | degenerate


def state_problem_text(r: np.ndarray) -> str:
    """What is wrong with the states ``r``, shape (k, 13), of the rows that have a problem."""
    r = np.asarray(r, dtype=float)
    if not np.isfinite(r).all():
        return "non-finite state"
    if (np.abs(r[:, 0:3]) > MAX_COORDINATE).any():
        return f"diverged state (a coordinate beyond {MAX_COORDINATE:g} m)"
    return "degenerate orientation (a quaternion that is not of unit norm)"


def _packed_records(traj: Trajectory) -> np.ndarray:
    """The records of ``traj`` as shape (n_times, n_rows, 13)."""
    return np.concatenate(
        [
            np.asarray(traj.position, dtype=float),
            np.asarray(traj.orientation, dtype=float),
            np.asarray(traj.linear_velocity, dtype=float),
            np.asarray(traj.angular_velocity, dtype=float),
        ],
        axis=2,
    )


def state_in_bounds(state: State) -> bool:
    """True when every body of ``state`` is a motion: finite, within :data:`MAX_COORDINATE`,
    unit quaternions (:func:`state_problems`)."""
    block = np.concatenate(
        [state.position, state.orientation, state.linear_velocity, state.angular_velocity], axis=1
    )
    return not state_problems(block[None]).any()


def first_state_problem(traj: Trajectory) -> tuple[int, str] | None:
    """The first record of ``traj`` that is not a motion and what is wrong with it,
    ``(index, "non-finite state of body 'b' at t = 0.1 s")``, or None when every record is
    finite and within bounds (:func:`state_problems`); a run that gets a result here must not
    report ``ok`` (README, "Limits, trust and safety"). Also flags a non-finite record time."""
    if traj.n_times == 0:
        return None
    block = _packed_records(traj)
    bad = state_problems(block)
    times = np.asarray(traj.time, dtype=float)
    rows_bad = bad.any(axis=1) | ~np.isfinite(times)
    if not rows_bad.any():
        return None
    k = int(np.argmax(rows_bad))
    if not bad[k].any():
        return k, f"non-finite record time at record {k}"
    names = ", ".join(repr(traj.body_names[j]) for j in np.flatnonzero(bad[k]))
    return k, f"{state_problem_text(block[k][bad[k]])} of body {names} at t = {times[k]:.6g} s"


# ------------------------------------------------------------------ helpers of the replays


def finite_records(traj: Trajectory) -> np.ndarray:
    """Indices, shape (k,), increasing, of the records whose time, positions and orientations are
    all finite: the records a replay can show (a store pads a run stopped early with NaN)."""
    ok = (
        np.all(np.isfinite(traj.position), axis=(1, 2))
        & np.all(np.isfinite(traj.orientation), axis=(1, 2))
        & np.isfinite(np.asarray(traj.time, dtype=float))
    )
    return np.flatnonzero(ok)


def check_same_bodies(traj: Trajectory, body_names: Sequence[str], what: str = "") -> None:
    """Raise :class:`~workbench.errors.WorkbenchError` unless ``traj`` records the bodies
    ``body_names`` (a scene's), in that order; ``what`` prefixes the message (e.g. ``run 'a': ``).
    """
    if tuple(traj.body_names) != tuple(body_names):
        raise WorkbenchError(
            f"{what}the trajectory's bodies ({', '.join(traj.body_names)}) are not the "
            f"scene's ({', '.join(body_names)})"
        )


def records_at_rate(t: np.ndarray, rate: float) -> np.ndarray:
    """For frames every ``1/rate`` s from ``t[0]`` to ``t[-1]``, the index in ``t`` of the record
    nearest each frame's time (the earlier one on ties).

    Parameters
    ----------
    t : ndarray, shape (n,)
        Record times, s, non-decreasing, n >= 1.
    rate : float
        Frames per second of ``t``'s time, > 0.

    Returns
    -------
    ndarray of int, shape (n_frames,)
        ``n_frames = floor((t[-1] - t[0]) rate) + 1`` (with :data:`FRAME_SLACK`); an index repeats
        when records are sparser than ``rate``.
    """
    t = np.asarray(t, dtype=float)
    n_frames = int(math.floor((t[-1] - t[0]) * rate + FRAME_SLACK)) + 1
    if len(t) == 1:
        return np.zeros(n_frames, dtype=int)
    at = t[0] + np.arange(n_frames) / rate
    j = np.clip(np.searchsorted(t, at), 1, len(t) - 1)
    earlier = (at - t[j - 1]) <= (t[j] - at)
    return np.where(earlier, j - 1, j)


def channel(
    traj: Trajectory, *, body: str | None = None, joint: str | None = None, field: str
) -> tuple[np.ndarray, dict]:
    """A tracked row's state field, or a joint's coordinate or rate, as an observer channel.

    Parameters
    ----------
    traj : Trajectory
    body : str, optional
        A row name (a body, or a link ``"<body>/<link>"``) with ``field`` of
        :data:`ROW_CHANNELS`.
    joint : str, optional
        A joint ``"<body>/<joint>"`` with ``field`` of :data:`JOINT_CHANNELS`.

    Returns
    -------
    values : ndarray, shape (nt, k)
    info : dict
        ``quantity``, ``unit``, ``components``, ``body``, as observers have.

    Raises
    ------
    KeyError
        An unknown row, joint or field (the message lists the known ones).
    """
    if body is not None:
        if field not in ROW_CHANNELS:
            raise KeyError(f"no state field {field!r}; fields are {', '.join(ROW_CHANNELS)}")
        quantity, unit, comps = ROW_CHANNELS[field]
        values = np.asarray(getattr(traj, field))[:, traj.body_index(body)]
        return values, {"quantity": quantity, "unit": unit, "components": list(comps), "body": body}
    if field not in JOINT_CHANNELS:
        raise KeyError(f"no joint field {field!r}; fields are {', '.join(JOINT_CHANNELS)}")
    k = traj.joint_index(joint)
    quantity, rate = JOINT_CHANNELS[field]
    values = np.asarray(getattr(traj, f"joint_{field}"))[:, k : k + 1]
    info = traj.joint_info[joint]
    return values, {
        "quantity": quantity,
        "unit": info.get("unit", "") + rate,
        "components": [joint.rpartition("/")[2]],
        "body": info.get("link", ""),
    }


def _did_you_mean(word: str, options) -> str:
    from workbench.scene.fields import did_you_mean  # pydantic: only for a message

    return did_you_mean(word, options)
