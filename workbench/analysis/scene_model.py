"""PyBullet adapter of the analysis :class:`~uncertainty.model.Model` protocol.

A :class:`SceneModel` maps named scene parameters (and optionally a time shift) to one observer
channel of a forward run, read at given times: for the falling object, (g, c, t0) -> the distance
fallen z(t_k) at the measurement times, the PyBullet counterpart of Eq. (4) of the falling-object
document. Every evaluation re-resolves the scene with the parameter values, runs it in one reused
DIRECT client (rebuilt with ``resetSimulation``, bit-reproducible) recording every step, and
interpolates the channel at the requested times with a C² cubic spline through the records
(interpolation error O(dt⁴), far below the integrator's O(dt)), so the output is smooth in a time
shift and finite differences in it are meaningful.

Why not a Hermite spline with the recorded velocities: PyBullet's semi-implicit Euler step sets
x_n = x_(n−1) + dt v_n, so the recorded v_n is the slope of the positions at t_(n−1/2), not at
t_n. Hermite interpolation with it makes the curve's second derivative oscillate within every step
(by ~2 v_err/dt ≈ g); measured on the falling object at dt = 1e-3, the t0-curvature of the
posterior seen by steps of 1e-5 s was 2.3% larger than over 1e-2 s, and Newton's method with
finite-difference Hessians converged only linearly. The C² spline through the positions has no
such inconsistency.

Wrap it in :class:`~uncertainty.model.CachedModel` to count, cache and differentiate it;
:class:`SceneSensitivity` gives the channel and its parameter gradient at any time (for the
experimental design of ``workbench design``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from scipy.interpolate import CubicSpline

from uncertainty.model import CachedModel
from workbench.errors import SceneError, WorkbenchError
from workbench.scene.fields import did_you_mean
from workbench.scene.loader import load_scene
from workbench.scene.model import Scene
from workbench.sim.forward import run_scene

__all__ = ["SCENE_NOISE", "SceneModel", "SceneSensitivity"]

#: Relative noise level declared for scene models (finite-difference steps follow from it). A
#: forward run is a deterministic chain of ~10⁴ floating-point steps whose result is smooth in
#: the parameters; measured with :func:`uncertainty.model.estimate_noise` on the falling object
#: (c and t0 directions, dt = 1e-3, 5 s): ~1e-15 relative. Declaring 1e-12 keeps a margin of
#: 10³ for longer or contact-free runs of other scenes; a scene with contacts can be far noisier
#: and should be measured.
SCENE_NOISE = 1e-12


class SceneModel:
    """A scene run forward in PyBullet, reduced to one observer channel at given times.

    Parameters
    ----------
    scene : str, Path or Scene
        Scene file (or loaded scene) with the parameters to vary declared in ``parameters``.
    inputs : sequence of str
        Model inputs: declared scene parameters, plus ``time_shift`` if given.
    times : array_like, shape (N,)
        Times at which the channel is read, s (data times).
    observer : str
        Observer whose channel is the output.
    component : int or str
        Column of the observer (index or label, e.g. ``"z"``).
    scale : float
        Factor on the channel (−1 turns the scene's upward z into the distance fallen).
    time_shift : str or float, optional
        Name of an input t0 that shifts the scene's clock, or a fixed value of it: the output at
        t is the channel at t − t0. Before the shift (t < t0) the channel is mirrored,
        y(t0 − s) = y(t0 + s), as the falling-object document's ln cosh model is even in t − t0;
        ``before="hold"`` holds the initial value instead.
    overrides : mapping, optional
        Fixed values of other scene parameters.
    dt : float, optional
        Time step, s (default: the scene's).
    noise : float
        Relative noise level for finite-difference steps (:data:`SCENE_NOISE`).
    before : str
        ``"mirror"`` (default) or ``"hold"``; see ``time_shift``.
    """

    def __init__(
        self,
        scene: str | Path | Scene,
        inputs: Sequence[str],
        times: np.ndarray,
        observer: str,
        component: int | str = 0,
        *,
        scale: float = 1.0,
        time_shift: str | float | None = None,
        overrides: Mapping[str, float] | None = None,
        dt: float | None = None,
        noise: float = SCENE_NOISE,
        before: str = "mirror",
    ):
        self.scene = scene if isinstance(scene, Scene) else load_scene(scene, dict(overrides or {}))
        if isinstance(scene, Scene) and overrides:
            self.scene = scene.with_parameters(dict(overrides))
        src = self.scene.source
        self.input_names = tuple(inputs)
        if isinstance(time_shift, (int, float)):
            self.fixed_shift, self.time_shift = float(time_shift), None
        else:
            self.fixed_shift, self.time_shift = 0.0, time_shift
        declared = set(self.scene.parameters)
        for name in self.input_names:
            if name != self.time_shift and name not in declared:
                raise SceneError(
                    src,
                    "parameters",
                    f"model input '{name}' is not a declared scene parameter; declared: "
                    f"{', '.join(sorted(declared)) or '(none)'}",
                )
        if self.time_shift is not None and self.time_shift not in self.input_names:
            raise WorkbenchError(f"time_shift '{time_shift}' must be one of the model inputs")
        self.times = np.asarray(times, dtype=float).reshape(-1)
        if self.times.size == 0 or not np.all(np.isfinite(self.times)):
            raise WorkbenchError("scene model: expected finite measurement times")
        names = {o.name: o for o in self.scene.observers}
        if observer not in names:
            raise SceneError(
                src,
                "observers",
                f"no observer '{observer}'{did_you_mean(observer, names)}; the scene has "
                f"{', '.join(names) or '(none)'}",
            )
        self.observer = observer
        self.component = component
        self.scale = float(scale)
        self.dt = float(dt) if dt is not None else self.scene.settings.dt
        if not self.dt > 0:
            raise WorkbenchError(f"scene model: dt must be positive, got {dt}")
        if before not in ("mirror", "hold"):
            raise WorkbenchError(f"scene model: before must be 'mirror' or 'hold', got {before!r}")
        self.before = before
        self.noise = float(noise)
        self.output_names = tuple(f"{observer}({t:g})" for t in self.times)
        self._engine = None
        self.n_runs = 0

    def _column(self, traj, name: str) -> np.ndarray:
        data = traj.observers[name]
        comp = self.component
        if isinstance(comp, str):
            labels = list(traj.observer_info[name]["components"])
            if comp not in labels:
                raise WorkbenchError(
                    f"observer '{name}': no component '{comp}'; it has {', '.join(labels)}"
                )
            comp = labels.index(comp)
        return self.scale * np.asarray(data[:, comp], dtype=float)

    def run(self, x: np.ndarray):
        """Run the scene at inputs ``x``, shape (n_in,): the channel as a spline in time, or
        ``None`` if the values make no valid scene (e.g. c < 0) or the run became non-finite."""
        from workbench.sim.engine import Engine

        values = dict(zip(self.input_names, map(float, x), strict=True))
        t0 = values.pop(self.time_shift) if self.time_shift else self.fixed_shift
        tau = self._local_times(t0)
        duration = self.dt * (math.ceil(float(np.max(tau)) / self.dt) + 2)
        try:
            scene = self.scene.with_parameters(values) if values else self.scene
            scene = scene.with_settings(dt=self.dt, duration=duration, record_every=1)
        except SceneError:  # e.g. a negative drag coefficient: no such scene, zero likelihood
            return None
        if self._engine is None:
            self._engine = Engine(scene)
        traj = run_scene(scene, engine=self._engine)
        self.n_runs += 1
        if traj.status != "ok":
            return None
        return CubicSpline(traj.time, self._column(traj, self.observer))

    def _local_times(self, t0: float) -> np.ndarray:
        tau = self.times - t0
        if self.before == "mirror":
            return np.abs(tau)
        return np.maximum(tau, 0.0)

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """The channel at the measurement times, shape (N,); +∞ where :meth:`run` gives no run
        (the posterior is then zero there)."""
        spline = self.run(x)
        if spline is None:
            return np.full(self.times.size, np.inf)
        values = dict(zip(self.input_names, map(float, x), strict=True))
        t0 = values[self.time_shift] if self.time_shift else self.fixed_shift
        return np.asarray(spline(self._local_times(t0)), dtype=float)

    def close(self) -> None:
        """Disconnect the PyBullet client."""
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def __enter__(self) -> SceneModel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SceneSensitivity:
    """y(t; θ0) and ∇θ y(t; θ0) of a :class:`SceneModel` at any times: one PyBullet run at θ0
    and two per parameter (central differences with the model's noise-based steps), each
    interpolated; the clock shift's derivative comes from the spline's slope.

    Parameters
    ----------
    model : SceneModel
        Its inputs include ``parameters`` (and its clock shift, if named); closed when done.
    nominal : mapping
        Value of every input of ``model``, θ0.
    parameters : sequence of str
        The inputs to differentiate with respect to, in order.

    Raises
    ------
    WorkbenchError
        A run at the nominal parameters (or a step away) failed.
    """

    def __init__(self, model: SceneModel, nominal: Mapping[str, float], parameters: Sequence[str]):
        self.inputs = tuple(parameters)
        t0_name = model.time_shift
        x0 = np.array([float(nominal[n]) for n in model.input_names])
        self._t0 = float(nominal.get(t0_name, 0.0)) if t0_name else 0.0
        self._mirror = model.before == "mirror"
        steps = CachedModel(model).steps(x0, 1)
        self._base = model.run(x0)
        self._pm = []
        for name in self.inputs:
            j = model.input_names.index(name)
            e = np.zeros_like(x0)
            e[j] = steps[j]
            self._pm.append((model.run(x0 + e), model.run(x0 - e), steps[j], name == t0_name))
        model.close()
        if self._base is None or any(a is None or b is None for a, b, _, _ in self._pm):
            raise WorkbenchError("design: a PyBullet run at the nominal parameters failed")

    def __call__(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """y at ``times``, shape (N,), and its Jacobian, shape (N, n_parameters)."""
        t = np.asarray(times, float).reshape(-1)
        s = t - self._t0
        tau = np.abs(s) if self._mirror else np.maximum(s, 0.0)
        dtau = np.sign(s) if self._mirror else (s > 0).astype(float)  # dτ/dt
        z = self._base(tau)
        J = np.empty((t.size, len(self.inputs)))
        for i, (up, dn, h, is_shift) in enumerate(self._pm):
            if is_shift:  # the clock shift: ∂y(τ(t − t0))/∂t0 = −y'(τ) dτ/dt
                J[:, i] = -dtau * self._base(tau, 1)
            else:
                J[:, i] = (up(tau) - dn(tau)) / (2 * h)
        return z, J
