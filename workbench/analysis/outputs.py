"""Scalar outputs of a scene run evaluated on its trajectory, and the scene-with-outputs adapter of
the analysis :class:`~uncertainty.model.Model` protocol: the forward model of an inverse
simulation (FORM) with PyBullet in the loop.

The outputs are declared in :mod:`workbench.analysis.output_spec` (:func:`parse_outputs`); the
numerics between records (event crossing times, values at a time, maximum displacement, and why
they are interpolated) are in :mod:`workbench.analysis.interpolation`. This module locates events
on a trajectory — a ``first_contact`` event by the engine's closest-point queries at recorded
poses — and runs scenes for named parameter values (:class:`SceneOutputModel`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from workbench.analysis.interpolation import crossing_time, max_displacement, stencil, value_at
from workbench.analysis.output_spec import Event, Output, parse_outputs
from workbench.errors import EventNotFoundError, SceneError, SimulationError, WorkbenchError
from workbench.scene.loader import load_scene
from workbench.scene.model import Scene
from workbench.sim.engine import Engine
from workbench.sim.forward import run_scene
from workbench.sim.frames import box_reach
from workbench.sim.state import Trajectory

__all__ = ["EVENT_NOISE", "reduce_trajectory", "SceneOutputModel"]

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

#: Closest-point query range (m) for contact gaps: large enough that PyBullet reports a distance
#: for any two bodies of a scene (its pair test does not cost more for a larger range; 7 µs
#: measured for a sphere and a plane).
QUERY_DISTANCE = 1e3


# --------------------------------------------------------------------------------------------
# Events on a trajectory
# --------------------------------------------------------------------------------------------


class _ContactGap:
    """Signed distance between two bodies at recorded poses, by PyBullet's closest points.

    Poses are put back into the engine the trajectory was run in (same scene, same body order),
    and the engine answers the queries (:meth:`~workbench.sim.engine.Engine.closest_distance`).
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
        for j in self.moving:
            self.engine.set_pose(j, self.traj.position[k, j], self.q_inertial[j][k])
        d = self.engine.closest_distance(*self.pair, QUERY_DISTANCE)
        self.cache[k] = d
        return d

    def motion_bound(self) -> np.ndarray:
        """Per record i ≥ 1, an upper bound on how far any point of either body moved since
        record i−1: |Δx_com| + ρ θ, with ρ the body's reach from its centre of mass (from its
        bounding box at record 0) and θ the rotation angle. The gap changes by at most this."""
        if self._bound is not None:
            return self._bound
        nt = self.traj.n_times
        bound = np.zeros(nt)
        for j in self.moving:
            x0 = self.traj.position[0, j]
            self.engine.set_pose(j, x0, self.q_inertial[j][0])
            reach = box_reach(*self.engine.aabb(j), x0)
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
            for i in stencil(k, first):
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
