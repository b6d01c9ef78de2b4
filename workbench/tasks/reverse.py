"""``workbench.reverse``: a scene stepped backward in time from its final state (Twigg & James
2008), one run or K seeded runs with the k lowest-peak-energy kept, optionally refined until
PyBullet confirms them; the task of ``workbench reverse``.

The options a call leaves unset take the scene's ``reverse:`` section
(:class:`workbench.scene.model.ReverseDefaults`), then the defaults (plausibility controls off,
so each backward step mirrors a forward one).

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, SIGGRAPH 2008.
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from reverse.runs.run import MAX_REVERSE_STEPS
from reverse.runs.verify import DEFAULT_BUDGET, DEFAULT_RADIUS
from workbench.errors import SceneError
from workbench.tasks.inputs import (
    check_count,
    check_positive,
    check_seed,
    note,
    pose_tolerances,
    scene_input,
    seed_entropy,
    where,
)
from workbench.tasks.result import TaskResult

__all__ = [
    "reverse",
    "ReverseResult",
    "rejection_reasons",
    "MAX_REVERSE_STEPS",
    "DEFAULT_BUDGET",
    "DEFAULT_RADIUS",
]

#: The default of ``--verify-tolerance``: rest pose within 0.01 m and 5 degrees.
VERIFY_TOLERANCE = "0.01,5"


@dataclass
class ReverseResult(TaskResult):
    """A reverse run (``samples`` None) or the kept runs of ``samples`` seeded runs.

    Attributes
    ----------
    scene : Scene
    options : SimpleNamespace
        The options as run: the call's, completed from the scene's ``reverse:`` section and
        checked (``dt``, ``duration``, ``contacts``, ``energy_limit``, ``verify_tolerance``...).
    attrs : dict
        The file's root attributes (:func:`reverse.pasts.files.reverse_attrs`).
    parts : FileParts or None
        What the confirmation and the verification add to the file.
    trajectory : Trajectory or None
        The single run in forward time order (stitched to ``then_forward``'s continuation).
    run : reverse.runs.run.ReverseResult or None
        The single run's diagnostics: ``audit``, ``island_log``, Markov draws.
    sampling : reverse.runs.sampling.SamplingResult or None
        The sampled runs: ``kept`` (lowest peak kinetic energy first), ``table()`` (every run's
        outcome), ``entropy``.
    confirmation : Confirmation or None
        The single run's past played forward by PyBullet.
    verification : ndarray or None
        ``/verify/outcomes``: one row per verified run.
    wall_seconds : float
    notes : list of str
        Warnings the command prints (a deep overlap, hints acting after the last step).
    """

    scene: Any
    options: Any
    attrs: dict
    parts: Any
    trajectory: Any = None
    run: Any = None
    sampling: Any = None
    confirmation: Any = None
    forward_from: float | None = None
    wall_seconds: float = 0.0
    verify_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def kept(self) -> list:
        """The kept runs' trajectories (a single run: the one run)."""
        if self.sampling is None:
            return [self.trajectory]
        return [traj for _, traj, _ in self.sampling.kept]

    @property
    def verification(self):
        """``/verify/outcomes`` (None without ``verify``)."""
        return self.parts.datasets.get("verify/outcomes") if self.parts is not None else None

    def save(self, path: str | os.PathLike) -> Path:
        """Write the file ``workbench reverse`` writes (:mod:`reverse.pasts.files`); refused
        (:class:`SceneError`) when no sampled run was kept."""
        from reverse.pasts.files import write_reverse_run, write_sampled_runs
        from workbench.store.lock import output_lock

        path, o = Path(path), self.options
        with output_lock(path):
            if self.sampling is None:
                write_reverse_run(
                    path, self.scene, self.run, self.trajectory, attrs=self.attrs,
                    parts=self.parts, forward_from=self.forward_from, seed_entropy=o.seed,
                    timestamp=o.timestamp,
                )  # fmt: skip
            else:
                if not self.sampling.kept:
                    raise SceneError("--samples", "", "no run was accepted: nothing to write")
                write_sampled_runs(
                    path, self.scene, self.sampling, attrs=self.attrs, samples=o.samples,
                    parts=self.parts, timestamp=o.timestamp,
                )  # fmt: skip
        return path

    def warnings(self) -> list[str]:
        """What the command says about a single run that ended ``ok`` but deserves a look:
        failed LCPs solved again without friction, a flagged energy limit, nothing moving."""
        from reverse.runs.run import moved_bodies

        traj, out = self.trajectory, []
        if self.sampling is not None or traj.status != "ok":
            return out
        failed = int(np.sum(traj.diagnostics["lcp_failed"]))
        if failed:
            out.append(
                f"warning: {failed} island LCP(s) failed and were solved again without "
                "friction for that step (see /reverse/islands in the file)"
            )
        if traj.message:  # e.g. the energy guard in flag mode
            out.append(f"warning: {traj.message}")
        if not moved_bodies(self.run.trajectory):
            out.append(
                f"warning: nothing moved in the {self.run.trajectory.time[-1]:g} s back: the "
                "bodies rest and nothing starts one backward; give hints (--hints FILE, --hints "
                "script, or the scene's reverse: hints) or a table (--markov TABLE)"
            )
        return out

    def verification_lines(self) -> list[str]:
        """The summary of the forward verification (empty without ``verify``)."""
        table = self.verification
        if table is None:
            return []
        tol = self.options.verify_tolerance
        runs_total = int(np.sum(table["pybullet_runs"]))
        lines = [
            f"forward verification: {self.parts.attrs['verified_runs']} of {len(table)} run(s) "
            f"refined to rest within {tol[0]:g} m and {math.degrees(tol[1]):g} deg of the "
            f"final pose; {runs_total} PyBullet runs in {self.verify_seconds:.1f} s "
            f"({runs_total / max(len(table), 1):.1f} per run)"
        ]
        for row in table:
            lines.append(
                f"  run {row['run']}: {row['status'].decode()}, residual "
                f"{row['residual_position']:.4g} m, {row['residual_angle']:.3g} deg after "
                f"{row['pybullet_runs']} PyBullet runs (reverse state: "
                f"{row['initial_position']:.3g} m, {row['initial_angle']:.3g} deg)"
            )
        return lines

    def sampling_lines(self) -> list[str]:
        """A few lines on the sampled runs: peak energies and why runs were not kept."""
        table = self.sampling.table()
        peak = table["peak_energy"][np.isfinite(table["peak_energy"])]
        lines = []
        if peak.size:
            q = np.percentile(peak, [0, 50, 90, 100])
            limit = self.options.energy_limit
            lines.append(
                "peak kinetic energy of the runs (J): min {:.4g}, median {:.4g}, 90% {:.4g}, "
                "max {:.4g}".format(*q)
                + (f"; limit {limit:g}" if limit else "")
            )
        kept = table[table["kept"]]
        lines.append(
            "kept: "
            + ", ".join(
                f"run {r['index']} ({r['peak_energy']:.4g} J)" for r in np.sort(kept, order="rank")
            )
        )
        rejected = table[~table["kept"]]
        if rejected.size:
            lines.append(f"not kept: {rejection_reasons(rejected)}")
        return lines


def rejection_reasons(table) -> str:
    """``"3 energy, 1 lcp"``: why the rows of a sampling table were not kept, most first."""
    c = Counter(r.decode().split(":")[0] for r in table["reason"])
    return ", ".join(f"{n} {k}" for k, n in c.most_common())


def reverse(
    scene,
    *,
    set: Mapping[str, Any] | None = None,  # noqa: A002 - named as the command's --set
    duration: float | None = None,
    dt: float | None = None,
    hints: str | os.PathLike | None = None,
    seed: int | None = None,
    markov: str | os.PathLike | None = None,
    restitution_blend: float | None = None,
    angular_damping: float | None = None,
    linear_damping: float | None = None,
    slip_damping: float | None = None,
    attract: bool | None = None,
    contacts: str | Sequence[str] | None = None,
    energy_limit: float | str | None = None,
    samples: int | None = None,
    keep: int = 1,
    workers: int | str = 1,
    heading: str = "scene",
    verify: int | None = None,
    verify_tolerance: str | Sequence[float] = VERIFY_TOLERANCE,
    then_forward: float | None = None,
    force: bool = False,
    timestamp: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ReverseResult:
    """Step ``scene`` backward in time from its state, taken as the final state of a motion
    (``workbench reverse``; Twigg & James 2008 [1]_).

    Parameters
    ----------
    scene : str, path or Scene
        A scene file or script, or a shipped scene's name.
    set : dict, optional
        Scene parameters to override (``--set``).
    duration, dt : float, optional
        How far back to step and the time step, s (default: the scene's ``reverse:`` section,
        then its settings).
    hints : str or path, optional
        Hints file or its name, or ``"script"`` for the scene script's ``hints()``.
    seed : int, optional
        Seed of the friction pyramids' turn and the Markov draws; with ``samples``, of all runs.
    markov : str or path, optional
        Contact-transition table (``workbench markov train``, or a shipped name).
    restitution_blend, angular_damping, linear_damping, slip_damping, attract
        The plausibility controls of [1]_ §4 (``--restitution-blend`` ...).
    contacts : str or list of str, optional
        Contact rules (``"persist,separate"``, see ``workbench reverse --help``).
    energy_limit : float or str, optional
        Guard on the kinetic energy, J; ``"J,flag"`` runs on, marked.
    samples, keep : int
        Run ``samples`` seeded runs and keep the ``keep`` lowest-peak-energy ones.
    workers : int or str
        Where the sampled runs and the verification go: ``N`` processes, ``"tcp://HOST:PORT"``
        or ``"local:N"``.
    heading : {"scene", "random"}
        With ``samples``: turn the moving bodies by a random angle in each run.
    verify : int, optional
        Refine each kept run's earliest state with at most ``verify`` PyBullet runs.
    verify_tolerance : str
        ``"M,DEG[,M,DEG]"``: the rest pose's tolerance, then the earliest pose's radius.
    then_forward : float, optional
        Append this many seconds of PyBullet forward simulation.
    force : bool
        Run above the bounds on steps and record memory.
    timestamp : bool
        Record the creation time in the saved file.
    progress : callable, optional
        ``progress(done, total)``: steps (a single run) or runs, then verified runs; None is
        silent.

    Returns
    -------
    ReverseResult
        ``.trajectory`` (single) or ``.kept`` and ``.sampling``, ``.to_xarray()``,
        ``.save(path)``.

    Examples
    --------
    >>> import workbench
    >>> r = workbench.reverse("reverse_landing", duration=0.05)
    >>> r.trajectory.status, round(float(r.trajectory.time[-1] - r.trajectory.time[0]), 3)
    ('ok', 0.05)
    >>> ds = r.to_xarray()
    >>> int(ds.attrs["time_reversed"])
    1
    """
    o = SimpleNamespace(
        duration=duration, dt=dt, hints=hints, seed=seed, markov=markov,
        restitution_blend=restitution_blend, angular_damping=angular_damping,
        linear_damping=linear_damping, slip_damping=slip_damping, attract=attract,
        contacts=contacts, energy_limit=energy_limit, samples=samples, keep=keep,
        heading=heading, verify=verify, then_forward=then_forward, force=force,
        timestamp=timestamp,
    )  # fmt: skip
    place = where(workers) if samples is not None else where(1)
    o.workers, o.scheduler = place.workers, place.scheduler
    given = scene_input(scene, set)
    _scene_defaults(o, given.scene)
    return _plan_and_run(o, given, verify_tolerance, progress)


def _scene_defaults(o, scene) -> None:
    """Options left unset take the scene's ``reverse:`` section, then the defaults."""
    given = scene.reverse
    for name in (
        "duration", "dt", "hints", "restitution_blend", "angular_damping", "linear_damping",
        "slip_damping", "attract",
    ):  # fmt: skip
        if getattr(o, name) is None:
            setattr(o, name, getattr(given, name))
    if o.contacts is None:
        o.contacts = list(given.contacts)
    if o.duration is None:
        if "duration" not in scene.settings.model_fields_set:
            raise SceneError(
                "--duration",
                "",
                "expected how far back to step, s (the scene sets neither reverse.duration nor "
                "settings.duration)",
            )
        o.duration = scene.settings.duration


def _check(o, verify_tolerance) -> None:
    """Every option checked before anything runs (one line naming the option)."""
    from reverse.runs.run import contact_rules

    o.energy_limit, o.on_energy = _energy_limit(o.energy_limit)
    if isinstance(o.contacts, str):
        o.contacts = [r.strip() for r in o.contacts.split(",") if r.strip()]
    try:
        contact_rules(o.contacts)
    except ValueError as exc:
        raise SceneError("--contacts", "", str(exc)) from None
    for name in ("dt", "duration", "energy_limit", "then_forward"):
        check_positive(name.replace("_", "-"), getattr(o, name))
    for name in ("restitution_blend", "angular_damping", "linear_damping"):
        check_positive(name.replace("_", "-"), getattr(o, name), allow_zero=True)
    check_positive("slip-damping", o.slip_damping, allow_zero=True, finite=False)
    check_seed(o.seed)
    if o.samples is not None:
        check_count("--samples", o.samples, "run")
        if not 1 <= o.keep <= o.samples:
            raise SceneError("--keep", "", f"expected 1 ≤ k ≤ --samples {o.samples}")
        if o.then_forward:
            raise SceneError("--then-forward", "", "cannot be combined with --samples")
    elif o.heading != "scene":
        raise SceneError("--heading", "", "a random heading needs --samples")
    o.verify_tolerance, o.verify_radius = pose_tolerances(verify_tolerance, DEFAULT_RADIUS)
    if o.verify is not None:
        check_count("--verify", o.verify, "PyBullet run")
    if o.verify is not None and o.then_forward:
        raise SceneError("--verify", "", "cannot be combined with --then-forward")


def _energy_limit(value) -> tuple[float | None, str]:
    """``energy_limit`` (J, or ``"J[,flag]"``) as (J or None, ``"stop"`` or ``"flag"``)."""
    if value is None:
        return None, "stop"
    text = str(value)
    number, _, mode = text.partition(",")
    if mode and mode not in ("stop", "flag"):
        raise SceneError("--energy-limit", "", f"expected J or J,flag, got {text!r}")
    try:
        return float(number), mode or "stop"
    except ValueError:
        raise SceneError(
            "--energy-limit", "", f"expected a number of joules, got {text!r}"
        ) from None


def _check_size(o, scene, dt) -> None:
    """Refuse, unless ``force``, a run whose estimated steps or record memory exceed the bounds
    of :mod:`reverse.runs.run` (one line with the numbers)."""
    from reverse.runs.run import plan_reverse_run

    option = "--dt" if o.dt else "--duration"
    n_bodies = len(scene.bodies)
    if o.samples is not None:
        held = o.keep + (1 if o.scheduler else o.workers)  # kept + in flight here
        plan = plan_reverse_run(o.duration, dt, n_bodies, runs=o.samples, held=held, option=option)
        what = f"{o.samples} runs of {o.duration:g} s at dt = {dt:g} s are"
    else:
        plan = plan_reverse_run(o.duration, dt, n_bodies, option=option)
        what = f"{o.duration:g} s at dt = {dt:g} s is"
    problem = plan.problem()
    if not problem and o.then_forward:
        plan = plan_reverse_run(o.then_forward, dt, n_bodies, option="--then-forward")
        problem = plan.problem("forward")
        option, what = "--then-forward", f"{o.then_forward:g} s at dt = {dt:g} s is"
    if problem and not o.force:
        raise SceneError(option, "", f"{what} {problem}; pass --force to run it anyway")


def _plan_and_run(o, given, verify_tolerance, progress) -> ReverseResult:
    """The run's options and file attributes from ``o``, then the run(s)."""
    from reverse.goals.hints import late_hints, resolve_hints
    from reverse.goals.markov import load_model
    from reverse.pasts.files import reverse_attrs
    from reverse.runs.run import start_overlap, step_settings
    from reverse.runs.sampling import RunVariation
    from workbench.scene.catalog import find_data

    scene, path = given.scene, given.path
    _check(o, verify_tolerance)
    dt = o.dt or scene.settings.dt
    _check_size(o, scene, dt)
    table = find_data(o.markov, what="contact-transition table") if o.markov else None
    markov = load_model(table) if table is not None else None
    sampled = o.samples is not None
    resolved = resolve_hints(o.hints, path, scene, sampled=sampled, table=markov)
    variation = RunVariation.of(resolved, o.heading == "random") if sampled else None
    notes: list[str] = []
    n_steps = int(round(o.duration / dt))
    late = late_hints(resolved.hints, n_steps, dt)
    if late and not resolved.draws:
        first = min(late, key=lambda h: h.at)
        note(
            notes,
            f"warning: {resolved.source}: {len(late)} hint(s) act after the last backward step "
            f"of the run ({n_steps} steps of {dt:g} s) and are not used; the earliest: "
            f"{first.where or first.body}.at = {first.at:g} s",
        )
    settings, run_rules = step_settings(
        dt, o.contacts, restitution_blend=o.restitution_blend, angular_damping=o.angular_damping,
        linear_damping=o.linear_damping, slip_damping=o.slip_damping, attract=o.attract,
    )  # fmt: skip
    options = {
        "duration": o.duration, "dt": dt, "hints": resolved.hints, "settings": settings,
        "markov": markov, "energy_limit": o.energy_limit, "on_energy": o.on_energy, **run_rules,
    }  # fmt: skip
    overlap = start_overlap(scene)
    if overlap.warning(path or scene.source):
        note(notes, overlap.warning(path or scene.source))
    attrs = reverse_attrs(
        dt=dt, settings=settings, hints_text=resolved.text, start_overlap=overlap.depth,
        markov=markov, energy_limit=o.energy_limit,
        persist_contacts="persist_contacts" in run_rules, cap_bounces="cap_bounces" in run_rules,
        sample_heading=o.heading if sampled else None,
    )  # fmt: skip
    if sampled:
        if resolved.draws:
            options["hints"] = []  # each run draws its own
        result = _sample(o, given, options, attrs, variation, progress)
    else:
        result = _single(o, given, options, attrs, progress)
    result.notes[:0] = notes
    return result


def _verify(o, given, runs, entropy, progress):
    """Refine the kept runs' earliest states (:func:`reverse.runs.verify.verify_runs`): what
    they add to the file, and the seconds it took."""
    from reverse.pasts.files import verification_parts
    from reverse.runs.verify import verify_runs, verify_settings
    from workbench.ensemble.run import SceneRef

    if given.path is None:
        raise ValueError("verify= rebuilds the scene from its file: pass the scene's path")
    ref = SceneRef(str(given.path), tuple(sorted(dict(given.overrides).items())), dt=o.dt)
    settings = verify_settings(o.verify, o.verify_tolerance, o.verify_radius)
    t0 = time.perf_counter()
    outcomes = verify_runs(
        ref, runs, entropy=entropy, **settings, workers=o.workers, scheduler=o.scheduler,
        progress=progress,
    )  # fmt: skip
    return verification_parts(outcomes, settings, entropy), time.perf_counter() - t0


def _single(o, given, options, attrs, progress) -> ReverseResult:
    from reverse.pasts.files import FileParts, confirmation_parts
    from reverse.runs.confirm import refine_confirmation
    from reverse.runs.run import run_reverse, stitch_forward

    scene = given.scene
    t0 = time.perf_counter()
    run = run_reverse(scene, seed=o.seed, progress=progress, **options)
    traj, forward_from = run.trajectory, None
    if o.then_forward and traj.status == "ok":
        traj = stitch_forward(traj, scene, o.then_forward, options["dt"])
        forward_from = float(run.trajectory.time[-1])
    wall = time.perf_counter() - t0
    parts, confirmation, seconds = FileParts(), None, 0.0
    past = run.trajectory
    if past.status in ("ok", "implausible") and len(past.time) > 1:
        confirmation = refine_confirmation(
            scene, past.state(0), past.state(len(past.time) - 1), float(past.time[-1]),
            budget=scene.reverse.confirm_refine,
        )  # fmt: skip
        parts.add(confirmation_parts(confirmation))
    if o.verify is not None and traj.status == "ok":
        verified, seconds = _verify(o, given, [(0, traj)], seed_entropy(o.seed), progress)
        parts.add(verified)
    return ReverseResult(
        scene=scene, options=o, attrs=attrs, parts=parts, trajectory=traj, run=run,
        confirmation=confirmation, forward_from=forward_from, wall_seconds=wall,
        verify_seconds=seconds,
    )  # fmt: skip


def _sample(o, given, options, attrs, variation, progress) -> ReverseResult:
    from reverse.runs.sampling import sample_reverse_runs
    from workbench.ensemble.run import SceneRef

    if given.path is None:
        raise ValueError("samples= rebuilds the scene in workers from its file: pass its path")
    ref = SceneRef(str(given.path), tuple(sorted(dict(given.overrides).items())))
    sampling = sample_reverse_runs(
        ref, samples=o.samples, keep=o.keep, options=options, entropy=o.seed,
        workers=o.workers, scheduler=o.scheduler, progress=progress, variation=variation,
    )  # fmt: skip
    parts, seconds = None, 0.0
    if o.verify is not None and sampling.kept:
        runs = [(out.index, traj) for out, traj, _ in sampling.kept]
        parts, seconds = _verify(o, given, runs, sampling.entropy, progress)
    return ReverseResult(
        scene=given.scene, options=o, attrs=attrs, parts=parts, sampling=sampling,
        wall_seconds=sampling.wall_seconds, verify_seconds=seconds,
    )  # fmt: skip
