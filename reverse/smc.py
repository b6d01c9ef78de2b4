"""Backward runs as a sequential Monte Carlo: particles weighted by the forward likelihood of
their state at each reverse time, and resampled (issue 15 item 3; Twigg & James 2008 [1]_ §4
"Rapid velocity growth": among the exact backward branches, keep those whose history a forward
run would have).

``n`` particles start as the ``n`` sampled reverse runs of :mod:`reverse.sampling` (run ``i``'s
heading, hints and seeds), and are stepped backward together in *generations* of one bin of the
table's energy law (:class:`reverse.energy_law.EnergyLaw`, 0.05 s). After generation ``g``, at
reverse time ``τ_g``, particle ``i`` with state ``x_i`` gets the incremental weight
``φ_g(x_i) / φ_{g−1}(x_i^{prev})`` (the twisted potentials of a guided particle filter, Del
Moral 2004 [2]_; ``φ_g``: density of the forward runs' energy, spin and contact state at
``τ_g``, :meth:`reverse.energy_law.EnergyLaw.log_potential`, optionally tempered by a power
``β``), so that its accumulated weight is its current potential; when the effective sample size
falls below :data:`ESS_SHARE` of ``n`` the particles are resampled systematically (Doucet &
Johansen 2011 [3]_ §3.4–3.5) and the weights reset. (Scheme ``match`` instead resamples every
generation by the ratio of the forward law to the particles' own histogram.) Each particle also
accumulates ``Σ_g log φ_g``, its forward log-likelihood. A particle whose step fails
(non-finite, LCP, orientation) has weight 0. After the last generation the particles are
resampled once more, by their weight times, when any particle's earliest state lies inside the
throws' range, the indicator of that range: the kept runs then start no faster than the fastest
forward throw. With ``release=True`` the range is the throws' whole release law
(:data:`reverse.markov_training.THROW`) where it does not depend on the heading: the centre's
height above the ground's top within ``reach + clearance``, falling (``−vertical_speed ≤ v_z ≤
0``), the horizontal speed at most ``√2 horizontal_speed`` and the speed and spin at most the
fastest throw's; the final resampling keeps the particles whose earliest state is such a release
when there are any (the throws' record 0 is one: a forward run starts at a release, so a past
whose earliest state is none is not a throw's; terminal potential of the Feynman–Kac model [2]_).

With ``generation="drop"`` (:data:`GENERATIONS`) a generation takes each particle to the end of
its next step in which the contact model drew a drop, or one bin on, whichever comes first; the
particles then stand at their own reverse times ``τ_i = k_i dt`` and each is weighted there (a
Feynman–Kac model with a stopping time per particle, [2]_; the schemes whose weights compare the
population at one ``τ`` take bins only), and the filter ends when all have reached the duration.

Determinism: every draw is seeded from the run entropy — particle ``i``'s first generation is
exactly the first steps of sampled run ``i`` (its seeds, :func:`reverse.sampling.sample_seed`);
in later generations slot ``i`` draws its Markov choices and friction-pyramid turns from
``SeedSequence(entropy, spawn_key=(i, g, 3))`` (``g`` the generation, of bins or of drops),
and the resampling of generation ``g`` its uniform from ``spawn_key=(g, 4)``. Each generation
of a particle starts from a fresh contact detection
(:meth:`reverse.contacts.ContactDetector.fresh`: PyBullet's persistent manifolds dropped), so
its result depends on its state and seeds only — the same bits for any number of workers.

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25 (SIGGRAPH 2008).
.. [2] Del Moral, Feynman–Kac Formulae, Springer 2004.
.. [3] Doucet & Johansen, A Tutorial on Particle Filtering and Smoothing: Fifteen Years Later,
   2011.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from uncertainty.smc import effective_sample_size, normalised_weights, systematic_resample
from workbench.ensemble.run import SceneRef, bounded_map, executor_for
from workbench.errors import SceneError

__all__ = [
    "BETA",
    "ESS_SHARE",
    "GENERATIONS",
    "SCHEMES",
    "SMCRun",
    "SMCResult",
    "smc_reverse_runs",
]

#: Resample when the effective sample size falls below this share of the particles (the usual
#: rule, [3]_ §3.5).
ESS_SHARE = 0.5

#: Weighting schemes: ``potential``, the twisted potentials of the forward density (module
#: docstring), resampled when the ESS is low; ``match``, every generation resampled by the ratio
#: of the forward law to the particles' own histogram (:meth:`EnergyLaw.population_log_weights`);
#: ``ratio``, each weight multiplied every generation by the importance ratio of the forward law
#: to the weighted population's own coarse histogram (:meth:`EnergyLaw.ratio_log_weights`),
#: resampled when the ESS is low — the weighted particles then have the forward runs' share of
#: energy, spin and contact state at each ``τ``, where ``potential`` rewards what the backward
#: model already proposes often (resting on a face).
#: ``lift``, the twisted potentials of the forward *upper-tail* probability of energy and spin
#: ``σ`` seconds before the final rest began (:func:`reverse.energy_law.log_upper_tail` of the
#: law of :func:`reverse.energy_law.fit_lift_law`; ``σ`` = reverse time minus the particle's own
#: liftoff; 0 for a particle still in its final rest and for one no more energetic than the
#: forward median), so that only cascades too energetic for their time since liftoff are pushed
#: down, and resting is not rewarded.
#: ``lift-central`` is ``lift`` with both tails pushed down
#: (:func:`reverse.energy_law.log_central`).
SCHEMES = ("potential", "match", "ratio", "lift", "lift-central")

#: Generations: ``bin`` (default), one bin of the energy law (0.05 s) for every particle at
#: once; ``drop``, each particle to the end of its next step in which the contact model drew a
#: drop (a contact-separation event, :attr:`reverse.markov_policy.MarkovPolicy.transitions`),
#: at most one bin of steps, so that the particles are weighted, and resampled when the ESS is
#: low, at their own drops: the children of a particle share its drops so far and draw the next one
#: apart. Particles then stand at different reverse times ``τ = k dt`` and each is weighted at
#: its own (schemes ``potential``, ``lift``, ``lift-central``; ``match`` and ``ratio`` compare
#: the population at one ``τ`` and take ``bin`` only); the filter ends when every particle has
#: reached the run's duration.
GENERATIONS = ("bin", "drop")

#: Default tempering of the potentials: measured on ``markov_block`` (40 particles, docs/reverse.md
#: "Energy-consistent pasts"), β = 1 left the kept runs descended from 1–2 of 40 sampled runs and
#: all faster than the fastest throw at the end; β = 0.3 kept 6 and 95% inside the throws' range.
BETA = 0.3

#: Spawn keys (after the slot and generation) of a later generation's draws and (after the
#: generation) of a resampling's uniform.
_STEP_KEY, _RESAMPLE_KEY = 3, 4

#: Particles per task handed to a worker.
_PER_TASK = 10


@dataclass
class _Particle:
    root: int  # the sampled run it descends from (heading, hints)
    state: Any = None  # reverse.State at the end of its last generation
    hints: Any = None
    segments: dict = field(default_factory=dict)  # MarkovPolicy.segments
    transitions: int = 0
    history: list = field(default_factory=list)  # arrays (m, bodies, 13), reverse time order
    phi: float = 0.0  # Σ_g log φ_g: the forward log-likelihood of its states so far
    log_w: float = 0.0  # log-weight since the last resampling
    last: float = 0.0  # log φ of its latest generation
    status: str = "ok"
    message: str = ""
    start: Any = None  # reverse.State of the scene (turned): the final state of the run
    memory: Any = None  # its contact detector's previous query (persist_contacts only)
    lift: float | None = None  # reverse time it left its final rest, s (None: still resting)
    k: int = 0  # backward steps done (its reverse time is k dt)
    feats: Any = None  # (energy, speed, spin, contact state) at its latest generation's end


@dataclass
class SMCRun:
    """One particle after the last generation.

    Attributes
    ----------
    root : int
        The sampled run it descends from.
    states : ndarray, shape (n_records, n_bodies, 13)
        Position, orientation (x, y, z, w), linear and angular velocity per record, forward
        time order (the earliest state first).
    status, message : str
    log_potential : float
        ``Σ_g log φ_g`` over its generations: its forward log-likelihood (of the scheme's φ).
    transitions : int
        Contact drops drawn.
    lift : float or None
        Reverse time, s, of its first record in another contact state than the final rest's
        (None: it never left); ``σ = τ − lift`` in scheme ``lift``.
    """

    root: int
    states: np.ndarray
    status: str
    message: str
    log_potential: float
    transitions: int
    lift: float | None = None


@dataclass
class SMCResult:
    """:func:`smc_reverse_runs`' outcome: the ``n`` resampled runs and what it took.

    Attributes
    ----------
    runs : list of SMCRun
    resamplings : int
        Generations after which the particles were resampled (the last included).
    raw_faster_share : float
        Share of the particles before the final resampling whose earliest state is faster
        (linear or angular) than the fastest throw.
    raw_release_share : float or None
        With ``release``: share of the particles before the final resampling whose earliest
        state is a release of the throws' law (module docstring); None without.
    unique_roots : int
        Distinct sampled runs the kept particles descend from.
    ess : list of float
        Effective sample size after each generation, before any resampling.
    """

    runs: list
    resamplings: int
    raw_faster_share: float
    unique_roots: int
    ess: list
    raw_release_share: float | None = None


_CACHE: dict = {}  # this process's contact detector and stepping scene, keyed by the scene ref


def _detector(ref: SceneRef, persist: bool = False):
    from reverse.contacts import ContactDetector

    key = (ref.key(), persist)
    if _CACHE.get("key") != key:
        if "detector" in _CACHE:
            _CACHE.pop("detector").close()
        scene = ref.load()
        _CACHE.update(key=key, scene=scene, detector=ContactDetector(scene, persist=persist))
    return _CACHE["scene"], _CACHE["detector"]


def _close() -> None:
    if "detector" in _CACHE:
        _CACHE.pop("detector").close()
    _CACHE.clear()


def _measure(scene, rigid, state, start) -> tuple[float, float, float]:
    """Specific mechanical energy above the final state (J/kg), speed and spin of the moving
    bodies (summed energies over their summed mass; largest speed and spin)."""
    from workbench.sim.observers import kinetic_energy

    moving = rigid.moving
    ke = kinetic_energy(
        rigid.mass,
        rigid.inertia,
        state.orientation[None],
        state.linear_velocity[None],
        state.angular_velocity[None],
    )[0]
    g = np.asarray(scene.gravity, dtype=float)
    up = -g / np.linalg.norm(g) if np.linalg.norm(g) > 0 else np.zeros(3)
    rise = (state.position - start.position) @ up
    mass = rigid.mass[moving]
    energy = float(
        (ke[moving].sum() + np.linalg.norm(g) * (mass * rise[moving]).sum()) / mass.sum()
    )
    speed = float(np.max(np.linalg.norm(state.linear_velocity[moving], axis=1)))
    spin = float(np.max(np.linalg.norm(state.angular_velocity[moving], axis=1)))
    return energy, speed, spin


def _advance(ref: SceneRef, options: dict, entropy: int, variation, jobs):
    """Step each job's particle through one generation (the task of a worker)."""
    from reverse.hints import HintPolicy, free_overrides
    from reverse.lcp import LCPError
    from reverse.markov_policy import MarkovPolicy
    from reverse.run import build_stepper, initial_state, stepper_on
    from reverse.sampling import sample_seed
    from reverse.stepper import StepSettings

    model = options["markov"]
    dt = float(options["dt"])
    settings = options.get("settings") or StepSettings(dt)
    persist = bool(options.get("persist_contacts", False))
    at_drop = options.get("generation", "bin") == "drop"
    out = []
    for slot, g, root, state, hints, segments, transitions, k0, k1, start, memory, lift in jobs:
        close = None
        if g == 0:  # the first steps of sampled run `root`, exactly
            scene = ref.load()
            hints = options.get("hints") or []
            if variation is not None:
                scene, drawn, _ = variation.draw(scene, entropy, root)
                hints = drawn if drawn is not None else hints
            seed = sample_seed(entropy, root)
            over = free_overrides(hints, scene.body_names)
            stepper, close, state = build_stepper(
                scene, settings, seed=seed, free_override=over, persist_contacts=persist
            )
            start = state
            seq = np.random.SeedSequence(seed)
            rng = np.random.default_rng(np.random.SeedSequence(seq.entropy, spawn_key=(1,)))
            detector = close
        else:
            scene, detector = _detector(ref, persist)
            seq = np.random.SeedSequence(entropy, spawn_key=(slot, g, _STEP_KEY))
            rng_m, rng_d = (np.random.default_rng(s) for s in seq.spawn(2))
            detector.fresh(state.position, state.orientation)  # no manifold from earlier runs
            # the particle's previous detection, as if its run had not been cut (None without
            # persistence): what persists depends on the particle alone
            detector.memory = memory
            detector.rng = rng_d
            over = free_overrides(hints, scene.body_names)
            stepper = stepper_on(scene, detector, settings, initial_state(scene, detector), over)
            stepper.reverse_time = k0 * dt
            rng = rng_m
        policy = HintPolicy(hints, scene.body_names, dt, settings.epsilon)
        goals = MarkovPolicy(
            model,
            policy,
            rng,
            dt,
            settings.epsilon,
            per_contact_goals=bool(options.get("per_contact_goals", False)),
            pivot=bool(options.get("pivot", False)),
        )
        goals.segments = copy.deepcopy(segments)
        goals.transitions = transitions
        records, status, message = [], "ok", ""
        body = int(np.flatnonzero(stepper.rigid.moving)[0])
        end = k1  # the last step of this generation (generation "drop": maybe a drop's)
        try:
            for k in range(k0 + 1, k1 + 1):
                if lift is None and not goals.segments.get(body, [0, 0, True])[2]:
                    # the policy's last call (step k − 1) counted another state than the rest's
                    # at reverse time (k − 2) dt: the first record in another contact state
                    lift = (k - 2) * dt
                policy.reverse_time = (k - 1) * dt
                try:
                    new, rep = stepper.backward(state, goals)
                except LCPError as exc:
                    status, message = "lcp_failed", f"contact LCP not posed ({exc})"
                    break
                if rep.unsolved:
                    status, message = "lcp_failed", "contact LCP not solved"
                    break
                if not rep.orientation_converged:
                    status, message = "unconverged", "orientation solve did not converge"
                    break
                if not np.all(new.is_finite()):
                    status, message = "nonfinite", f"non-finite state at {k * dt:.6g} s"
                    break
                records.append(new.packed())
                state = new
                if at_drop and goals.transitions > transitions:
                    end = k  # a drop was drawn in this step: the generation ends with it
                    break
            memory = detector.memory
        finally:
            if close is not None:
                close.close()
        if lift is None and status == "ok" and not goals.segments.get(body, [0, 0, True])[2]:
            lift = (end - 1) * dt  # the last step's call counted another state
        energy, speed, spin = _measure(scene, stepper.rigid, state, start)
        contact = goals.segments.get(body, [0])[0] if status == "ok" else 0
        arr = np.stack(records) if records else np.zeros((0, *state.packed().shape))
        out.append(
            (slot, state, hints, goals.segments, goals.transitions, arr, status, message,
             energy, speed, spin, start, contact, memory, lift, end)
        )  # fmt: skip
    return out


def smc_reverse_runs(
    ref: SceneRef,
    n: int,
    entropy: int,
    *,
    options: dict[str, Any],
    variation=None,
    workers: int = 1,
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    scheme: str = "potential",
    beta: float = BETA,
    lift_law=None,
    generation: str = "bin",
    release: bool = False,
) -> SMCResult:
    """``n`` backward runs of the scene as a particle filter (module docstring).

    Parameters
    ----------
    ref : SceneRef
        The scene (no joints).
    n : int
        Particles.
    entropy : int
        Seed entropy (the sampled runs' and the filter's).
    options : dict
        Keyword arguments of :func:`reverse.run.run_reverse`: ``duration``, ``dt``, ``markov``
        (a table of kind ``energy``), ``hints``, ``settings``; and the policy's options
        ``per_contact_goals`` and ``pivot`` (:class:`reverse.markov_policy.MarkovPolicy`).
    variation : reverse.sampling.RunVariation, optional
        Each particle's heading and hints (drawn for its sampled run).
    workers, scheduler
        As for :func:`reverse.sampling.sample_reverse_runs`.
    progress : callable, optional
        ``progress(done, total)`` after each generation, in particle-generations.
    scheme : str
        :data:`SCHEMES`: ``potential`` (default), ``match``, ``ratio``, ``lift`` or
        ``lift-central`` (the last two need ``lift_law``).
    beta : float
        Tempering: the potentials ``G_g^β`` (``potential``) or the ratios to the power β
        (``match``); below 1 the particles stay more diverse, at the price of weaker guidance.
    lift_law : EnergyLaw, optional
        Scheme ``lift`` only (and needed by it): the forward law against time before the final
        rest (:func:`reverse.markov_training.table_lift_law` of the table).
    generation : str
        :data:`GENERATIONS`: ``bin`` (default: every particle one bin of 0.05 s per
        generation) or ``drop`` (every particle to its next drop, at most one bin).
    release : bool
        Keep, at the end, the particles whose earliest state is a release of the throws' law
        when there are any (module docstring); off by default (the same bits as before).
    """
    from reverse.run import reverse_steps

    model = options.get("markov")
    law = getattr(model, "energy_law", None)
    if law is None:
        raise SceneError(
            "--smc", "", "needs a table of kind energy (`workbench markov train --kind energy`)"
        )
    if ref.load().joints:
        raise SceneError("--smc", "", "scenes with joints are not supported by the particle filter")
    dt = float(options["dt"])
    n_steps = int(reverse_steps(options["duration"], dt))
    per = max(1, round(law.energy.bin_width / dt))
    bounds = list(range(0, n_steps, per)) + [n_steps]
    parts = [_Particle(root=i) for i in range(n)]
    if scheme not in SCHEMES:
        raise ValueError(f"scheme: expected one of {', '.join(SCHEMES)}, got {scheme!r}")
    if scheme.startswith("lift") and lift_law is None:
        raise ValueError("scheme lift needs lift_law (reverse.markov_training.table_lift_law)")
    if generation not in GENERATIONS:
        raise ValueError(
            f"generation: expected one of {', '.join(GENERATIONS)}, got {generation!r}"
        )
    if generation == "drop" and scheme in ("match", "ratio"):
        raise ValueError(
            f"generation drop: scheme {scheme} compares the particles at one reverse time; "
            "expected potential, lift or lift-central"
        )
    ess_log: list[float] = []
    resamplings = 0
    raw_faster = math.nan
    raw_released = None
    if release:
        from reverse.markov_training import release_test

        released_at = release_test(ref, law.throw_speed, law.throw_spin)
    opts = {k: v for k, v in options.items() if k not in ("energy_limit", "on_energy", "seed")}
    drop = generation == "drop"
    opts["generation"] = generation
    total = (len(bounds) - 1) * n  # particle-generations of the bins, for progress
    done = 0
    g = 0
    try:
        with executor_for(workers, scheduler, None, n) as ex:
            while True:
                if drop:  # each particle to its next drop, at most one bin of steps
                    jobs = [
                        (i, g, p.root, p.state, p.hints, p.segments, p.transitions, p.k,
                         min(p.k + per, n_steps), p.start, p.memory, p.lift)
                        for i, p in enumerate(parts)
                        if p.status == "ok" and p.k < n_steps
                    ]  # fmt: skip
                else:
                    k0, k1 = bounds[g], bounds[g + 1]
                    jobs = [
                        (i, g, p.root, p.state, p.hints, p.segments, p.transitions, k0, k1,
                         p.start, p.memory, p.lift)
                        for i, p in enumerate(parts)
                        if p.status == "ok"
                    ]  # fmt: skip
                chunks = [jobs[s : s + _PER_TASK] for s in range(0, len(jobs), _PER_TASK)]
                for res in bounded_map(
                    ex, _advance, (ref, opts, entropy, variation), chunks, workers
                ):
                    for item in res:
                        slot, state, hints, segs, trans, arr, status, msg, e, v, w, start, c = item[
                            :13
                        ]
                        p = parts[slot]
                        p.state, p.hints, p.segments, p.transitions = state, hints, segs, trans
                        p.start, p.memory, p.lift, p.k = start, item[13], item[14], item[15]
                        p.history.append(arr)
                        p.status, p.message = status, msg
                        if status == "ok":
                            p.feats = (e, v, w, c)
                            tau = p.k * dt  # the end of its generation (bins: τ_g)
                            if scheme in ("lift", "lift-central"):
                                phi = _lift_potential(
                                    lift_law, tau, p.lift, e, w, scheme == "lift-central"
                                )
                            else:
                                phi = law.log_potential(tau, e, w, c)
                            if scheme in ("potential", "lift", "lift-central"):
                                # the twisted potential G_g = (φ_g / φ_{g−1})^β
                                p.log_w += beta * (phi - p.last)
                            p.last = phi
                            p.phi += phi
                        else:
                            p.log_w = -math.inf
                alive = np.array([p.status == "ok" for p in parts])
                # energy, speed, spin, contact state of the living particles (latest generation)
                feats = np.full((n, 4), np.nan)
                for i, p in enumerate(parts):
                    if alive[i]:
                        feats[i] = p.feats
                if scheme == "ratio":
                    # w_g = w_{g−1} · (p_forward / q_backward)^β at τ_g, q_backward the weighted
                    # population's histogram (EnergyLaw.ratio_log_weights)
                    before = np.array([p.log_w for p in parts])
                    before[~alive] = -math.inf
                    if alive.any():
                        wa = normalised_weights(before[alive])
                        f = feats[alive]
                        r = law.ratio_log_weights(k1 * dt, f[:, 0], f[:, 2], f[:, 3], wa)
                        for j, i in enumerate(np.flatnonzero(alive)):
                            parts[i].log_w = float(before[i] + beta * r[j])
                log_w = np.array([p.log_w for p in parts])
                if scheme == "match":
                    log_w = np.full(n, -math.inf)
                    if alive.any():
                        f = feats[alive]
                        log_w[alive] = beta * law.population_log_weights(
                            k1 * dt, f[:, 0], f[:, 2], f[:, 3]
                        )
                if drop:
                    last = not any(a and p.k < n_steps for a, p in zip(alive, parts, strict=True))
                else:
                    last = k1 == n_steps
                if last:
                    inside = (
                        alive & (feats[:, 1] <= law.throw_speed) & (feats[:, 2] <= law.throw_spin)
                    )
                    raw_faster = float(np.mean(~inside[alive])) if alive.any() else math.nan
                    if release:  # a release of the throws' law, where there is one
                        pairs = zip(alive, parts, strict=True)
                        released = inside & np.array([a and released_at(p.state) for a, p in pairs])
                        raw_released = float(np.mean(released[alive])) if alive.any() else 0.0
                        if released.any():
                            inside = released
                    if inside.any():  # the kept runs start inside the throws' range
                        log_w = np.where(inside, log_w, -math.inf)
                ess_log.append(effective_sample_size(log_w))
                if last or scheme == "match" or ess_log[-1] < ESS_SHARE * n:
                    rng = np.random.default_rng(
                        np.random.SeedSequence(entropy, spawn_key=(g, _RESAMPLE_KEY))
                    )
                    idx = systematic_resample(normalised_weights(log_w), float(rng.random()))
                    parts = [_child(parts[j]) for j in idx]
                    resamplings += 1
                if progress is not None:
                    if drop:  # the share of the steps done, in particle-generations of bins
                        steps = sum(p.k if p.status == "ok" else n_steps for p in parts)
                        done = max(done, total if last else (total * steps) // (n * n_steps))
                    else:
                        done = (g + 1) * n
                    progress(done, total)
                g += 1
                if last:
                    break
    finally:
        _close()
    runs = []
    for p in parts:
        first = p.start.packed()[None]
        states = np.concatenate([first, *p.history], axis=0)[::-1].copy()
        runs.append(SMCRun(p.root, states, p.status, p.message, p.phi, p.transitions, p.lift))
    return SMCResult(
        runs, resamplings, raw_faster, len({p.root for p in parts}), ess_log, raw_released
    )


def _lift_potential(
    lift_law, reverse_time: float, lift, energy: float, spin: float, central: bool = False
) -> float:
    """``log φ`` of scheme ``lift``: 0 while the particle rests (``lift`` None), else the sum of
    :func:`reverse.energy_law.log_upper_tail` of its energy and spin at ``σ = τ − lift``
    (:func:`reverse.energy_law.log_central` with ``central``, scheme ``lift-central``)."""
    from reverse.energy_law import log_central, log_upper_tail

    tail = log_central if central else log_upper_tail
    if lift is None:
        return 0.0
    sigma = max(reverse_time - lift, 0.0)
    e = math.log1p(max(float(energy), 0.0))
    w = math.log1p(max(float(spin), 0.0))
    return tail(lift_law.energy, sigma, e) + tail(lift_law.spin, sigma, w)


def _child(p: _Particle) -> _Particle:
    c = _Particle(
        root=p.root,
        state=p.state,
        hints=p.hints,
        segments=copy.deepcopy(p.segments),
        transitions=p.transitions,
        history=list(p.history),
        phi=p.phi,
        last=p.last,
        status=p.status,
        message=p.message,
        start=p.start,
        memory=p.memory,
        lift=p.lift,
        k=p.k,
        feats=p.feats,
    )
    return c
