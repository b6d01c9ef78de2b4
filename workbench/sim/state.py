"""State and trajectory of a set of rigid bodies: the one representation shared by forward runs,
reverse runs, the HDF5 store and the viewer.

Conventions (SI units throughout):

- ``position`` is the world position of each body's centre of mass, m.
- ``orientation`` is the unit quaternion (x, y, z, w — PyBullet's order) of the *body frame*, the
  frame in which the scene file defines the body (its shape, centre-of-mass offset and inertia).
  It is not PyBullet's principal-axes inertial frame; :mod:`workbench.sim.engine` converts.
- ``linear_velocity`` is the centre-of-mass velocity, m/s, world frame.
- ``angular_velocity`` is in the world frame, rad/s.
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
    "check_same_bodies",
    "records_at_rate",
]

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
            raise KeyError(f"no body {name!r}; bodies are {', '.join(self.body_names)}") from None

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
        )


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
