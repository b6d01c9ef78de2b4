"""The contract of a sampler of pasts: what every way of drawing the pasts of a final state takes
and returns (Twigg & James 2008 [1]_ §4–5: many plausible pasts of one state, to be compared
with forward motion).

A sampler (:class:`PastSampler`) is an object holding its own settings (a backward run's
options, a refinement budget); :meth:`PastSampler.sample` takes the final scene (its state is
the final state), a count, the seed entropy, the workers and a progress callback, and returns
:class:`Pasts`: one :class:`RunRecord` per past, as the plausibility measure
(:mod:`reverse.pasts.measure`) reads it, plus a summary of what the sample took. Run ``i`` of a
sample draws from ``(entropy, i)`` only, so a sample is the same bits for any number of
workers. The implementations are looked up by name in
:data:`reverse.pasts.samplers.SAMPLERS`: sampled backward runs
(:class:`reverse.runs.sampling.BackwardRuns`) and conditioned forward pasts
(:class:`reverse.pasts.conditioned.ConditionedPasts`).

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25 (SIGGRAPH 2008).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, Protocol, runtime_checkable

import numpy as np

from reverse.goals.markov import N_STATES, count_distinct

__all__ = ["RunRecord", "Pasts", "PastSampler", "record_of_trajectory"]


@dataclass
class RunRecord:
    """One past as the measure sees it (forward time order).

    Attributes
    ----------
    states : ndarray of int8, shape (n_records,)
        Contact state of the moving body per record (0 free, 1 vertex, 2 edge, 3 face; the
        training's counting rule, :func:`reverse.pasts.training.run_throw`).
    kinematics : ndarray, shape (n_records, 3) or (n_records, 4)
        Speed of the centre of mass (m/s), angular speed (rad/s), kinetic energy (J) and, for
        forward runs, the height of the centre of mass (m).
    status : str
        ``ok`` or why the run ended early (backward runs); only ``ok`` records are measured.
    ends : ndarray, shape (2, n_bodies, 13), optional
        Backward runs: the first (earliest) and last records of every body (position,
        body-frame quaternion x y z w, linear and angular velocity).
    """

    states: np.ndarray
    kinematics: np.ndarray
    status: str = "ok"
    ends: np.ndarray | None = None


@dataclass
class Pasts:
    """What a sampler returns (:meth:`PastSampler.sample`).

    Attributes
    ----------
    sampler : str
        Its name in :data:`reverse.pasts.samplers.SAMPLERS`.
    records : list of RunRecord
        The sample, in run order.
    summary : dict
        What the sample took beyond its records (JSON-able, no wall times; empty when the
        records' statuses say it all).
    outcomes : list
        The sampler's own outcome of every run tried, in run order
        (:class:`reverse.runs.sampling.SampleOutcome`,
        :class:`reverse.pasts.conditioned.ConditionedPast`): what a file stores of them.
    kept : list
        The sampler's own outcomes of the pasts kept, in sample order, with what a file needs
        of them (trajectories).
    earliest : list of ndarray, optional
        Pasts that start at a release (forward samplers): each past's earliest state,
        (n_bodies, 13), for the check against the throws' release law.
    entropy : int
        The seed entropy the sample drew from.
    seconds : float
        Wall time (not in any file).
    """

    sampler: str
    records: list[RunRecord]
    summary: dict = field(default_factory=dict)
    outcomes: list = field(default_factory=list)
    kept: list = field(default_factory=list)
    earliest: list | None = None
    entropy: int = 0
    seconds: float = 0.0


@runtime_checkable
class PastSampler(Protocol):
    """A way of drawing pasts of a final state (module docstring)."""

    #: Its name in :data:`reverse.pasts.samplers.SAMPLERS`.
    name: ClassVar[str]
    #: One line for a comparison's ``meta["sample"]``: what the sample is.
    description: ClassVar[str]

    def sample(
        self,
        scene,
        n: int,
        entropy: int,
        *,
        workers: int = 1,
        scheduler: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Pasts:
        """``n`` pasts of ``scene``'s state (a :class:`workbench.ensemble.run.SceneRef`, rebuilt
        in each worker): run ``i`` draws from ``(entropy, i)``; ``progress(done, n)`` as
        pasts arrive."""
        ...


def record_of_trajectory(traj, scene, body: int, detector) -> RunRecord:
    """A reverse run's :class:`RunRecord`: its contact states counted again at every record by
    the training's rule (``detector``: a :class:`reverse.runs.contacts.ContactDetector` of the
    scene; the run's own diagnostics are not used, so the measure does not depend on what they
    count), and the body's speeds and kinetic energy.
    """
    from workbench.sim.observers import kinetic_energy

    n = traj.n_times
    states = np.empty(n, dtype=np.int8)
    for t in range(n):
        contacts = detector(traj.position[t], traj.orientation[t])
        mine = (contacts.body_a == body) | (contacts.body_b == body)
        states[t] = min(count_distinct(contacts.point[mine]), N_STATES - 1)
    props = scene.bodies[body].mass_properties
    v = np.asarray(traj.linear_velocity[:, body], dtype=float)
    w = np.asarray(traj.angular_velocity[:, body], dtype=float)
    energy = kinetic_energy(
        np.array([props.mass]),
        np.asarray(props.inertia_matrix, dtype=float)[None],
        np.asarray(traj.orientation[:, body : body + 1], dtype=float),
        v[:, None],
        w[:, None],
    )[:, 0]
    kin = np.column_stack([np.linalg.norm(v, axis=1), np.linalg.norm(w, axis=1), energy])
    fields = (traj.position, traj.orientation, traj.linear_velocity, traj.angular_velocity)
    ends = (
        np.stack([np.concatenate([f[t] for f in fields], axis=1) for t in (0, n - 1)])
        if n
        else None
    )
    return RunRecord(states, kin, traj.status, ends)
