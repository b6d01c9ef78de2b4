"""The physical audit of a reverse run: does the stored past break physics where a viewer looks?

A backward step solves the forward contact law exactly (Twigg & James 2008 §3, Eq. 13–15), but
a past built of such steps can still be impossible as a whole: bodies may pass through each other
(a backward configuration is placed before its contacts are known, Eq. 11), the velocity controls
of §4 (damping, slip removal) inject energy in forward time, and bounces divide speeds by the
restitution backward ("Rapid velocity growth"). The audit measures, from the run's own records:

* **interpenetration**, per record: the deepest overlap between two moving bodies and between a
  moving body and a static one (PyBullet's signed contact distances at the record's
  configuration, :func:`reverse.step.stepper.record_overlaps`), over the run and at the earliest
  state;
* **mechanical energy** in forward time, per record (:func:`mechanical_energy`: kinetic plus the
  potential of gravity and the constant forces, in the form the semi-implicit Euler step keeps
  exactly in free flight), its largest rise between two records, and the part of it the
  velocity controls account for (:attr:`reverse.step.types.StepReport.control_energy`);
  passive contacts can only lose energy, so a rise beyond the controls' share is energy from
  nowhere;
* **speeds and spins**, per body: the peak against what the body's own fall and its hints allow
  (:func:`allowed_speeds`; a body falling at the earliest state was dropped from higher up).

A run that breaks a limit (:class:`AuditLimits`) gets the status ``"implausible"`` with the
reasons (:func:`reverse.runs.run.run_reverse`) and keeps its records. Pure numerics on arrays: no
engine, no store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "AUDIT_DIAGNOSTICS",
    "AuditLimits",
    "Audit",
    "audit_run",
    "mechanical_energy",
    "allowed_speeds",
    "body_radii",
    "largest_rise",
    "summary_lines",
]

#: Per-record diagnostics the audit reads (and a reverse run stores): the deepest overlaps (m),
#: the mechanical energy (J) and the energy the velocity controls injected into the step that
#: led to the record (J, forward time).
AUDIT_DIAGNOSTICS = ("overlap_bodies", "overlap_static", "mechanical_energy", "control_energy")

#: Overlap allowed over the run, as a fraction of the smallest moving body's radius
#: (:func:`body_radii`): 10 % of a 20 mm ball's radius is 2 mm, about what PyBullet's own forward
#: pour of such balls at 1/240 s reaches (issue 35: 4–12 mm at 1/120 s without penetration
#: correction, ≈ 1 mm at 1/240 s), and below what a close-up render shows as one ball inside
#: another.
OVERLAP_FRACTION = 0.10

#: Overlap allowed at the earliest state, as a fraction of the same radius: half the run's
#: allowance, for PyBullet released there pushes overlapping bodies apart with energy that is not
#: in the file (issue 35: 4.3 J, 71 % of the stored kinetic energy, from 35 overlapping pairs).
EARLIEST_OVERLAP_FRACTION = 0.05

#: Energy rise allowed, as a fraction of the run's peak kinetic energy: the discrete energy of
#: :func:`mechanical_energy` is exact in free flight, and contacts solved to the verification
#: tolerance of :func:`reverse.lcp.solve.solve_lcp` (1e-9 relative) change it by far less; the
#: rotational part of the step (``reverse/step/integration.py``) conserves ½ωᵀIω only to its
#: fixed point's tolerance. 1 % is the issue's bound.
ENERGY_FRACTION = 0.01

#: Smallest energy rise (J) ever called a gain: round-off of the sums of many bodies' energies at
#: rest (1e-16 relative of a few joules per body).
ENERGY_FLOOR = 1e-9

#: Peak speed allowed, as a multiple of the body's own allowance (:func:`allowed_speeds`): a
#: collision can hand a body more than its own fall gave it (an equal-mass elastic hit hands
#: over the striker's whole speed, and the striker fell its own height), so the bound is a
#: margin over one body's budget, not an energy identity; the system's energy is checked exactly
#: by the rise.
SPEED_RATIO = 1.5

#: Speed added to every allowance, m/s: the speed a body gains falling for two steps of a
#: typical 1/120 s (g · 2 h ≈ 0.16 m/s), so that bodies at rest with sub-millimetre
#: falls are not flagged for round-off.
SPEED_FLOOR = 0.2


@dataclass(frozen=True)
class AuditLimits:
    """The tolerances of an audit (the module's constants, scaled by the bodies' size)."""

    overlap: float
    earliest_overlap: float
    energy_fraction: float = ENERGY_FRACTION
    speed_ratio: float = SPEED_RATIO

    @classmethod
    def for_radius(cls, radius: float) -> AuditLimits:
        """The default limits for bodies whose smallest radius is ``radius`` (m)."""
        return cls(OVERLAP_FRACTION * radius, EARLIEST_OVERLAP_FRACTION * radius)


@dataclass
class Audit:
    """The audit's figures (:func:`audit_run`); :attr:`problems` is empty when the run passed.

    Times are forward times of the records (s, 0 at the earliest state). Per-body arrays are over
    the scene's bodies (static ones 0).
    """

    limits: AuditLimits
    overlap_bodies: float
    overlap_bodies_at: float
    overlap_bodies_pair: tuple[str, str]
    overlap_static: float
    overlap_static_at: float
    overlap_static_body: str
    earliest_overlap: float
    given_overlap: float
    energy_gain: float
    energy_gain_span: tuple[float, float]
    control_energy: float
    peak_kinetic: float
    peak_speed: np.ndarray
    allowed_speed: np.ndarray
    peak_spin: np.ndarray
    allowed_spin: np.ndarray
    body_names: list[str]
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems

    def worst_speed(self) -> tuple[str, float, float]:
        """The body whose peak speed is largest against its allowance: (name, peak, allowed)."""
        return self._worst(self.peak_speed, self.allowed_speed)

    def worst_spin(self) -> tuple[str, float, float]:
        return self._worst(self.peak_spin, self.allowed_spin)

    def _worst(self, peak, allowed) -> tuple[str, float, float]:
        if not len(peak):
            return ("", 0.0, 0.0)
        ratio = np.divide(peak, allowed, out=np.zeros_like(peak), where=allowed > 0)
        j = int(np.argmax(ratio))
        return (self.body_names[j], float(peak[j]), float(allowed[j]))

    def lines(self) -> list[str]:
        """The audit as a few lines for a terminal (``workbench reverse``, ``inspect``)."""
        return summary_lines(self.summary())

    def summary(self) -> dict:
        """The figures as JSON-ready numbers (the reverse file's ``audit`` attribute)."""
        name_v, v, v_ok = self.worst_speed()
        name_w, w, w_ok = self.worst_spin()
        return {
            "passed": self.passed,
            "problems": list(self.problems),
            "limits": {
                "overlap_m": self.limits.overlap,
                "earliest_overlap_m": self.limits.earliest_overlap,
                "energy_fraction": self.limits.energy_fraction,
                "speed_ratio": self.limits.speed_ratio,
            },
            "overlap_bodies_m": self.overlap_bodies,
            "overlap_bodies_at_s": self.overlap_bodies_at,
            "overlap_bodies_pair": list(self.overlap_bodies_pair),
            "overlap_static_m": self.overlap_static,
            "overlap_static_at_s": self.overlap_static_at,
            "overlap_static_body": self.overlap_static_body,
            "earliest_overlap_m": self.earliest_overlap,
            "given_overlap_m": self.given_overlap,
            "energy_gain_J": self.energy_gain,
            "energy_gain_span_s": list(self.energy_gain_span),
            "control_energy_J": self.control_energy,
            "peak_kinetic_J": self.peak_kinetic,
            "peak_speed_m_s": float(np.max(self.peak_speed, initial=0.0)),
            "worst_speed": {"body": name_v, "peak_m_s": v, "allowed_m_s": v_ok},
            "peak_spin_rad_s": float(np.max(self.peak_spin, initial=0.0)),
            "worst_spin": {"body": name_w, "peak_rad_s": w, "allowed_rad_s": w_ok},
        }

    def to_json(self) -> str:
        return json.dumps(self.summary(), sort_keys=True)


def summary_lines(summary: dict) -> list[str]:
    """An audit's :meth:`Audit.summary` (as a reverse file stores it) as a few lines."""
    a = summary
    lim = a["limits"]
    pair = a["overlap_bodies_pair"]
    v, w = a["worst_speed"], a["worst_spin"]
    gain_limit = lim["energy_fraction"] * a["peak_kinetic_J"]
    out = [
        f"audit: {'passed' if a['passed'] else 'FAILED'}",
        f"  deepest overlap, bodies: {_mm(a['overlap_bodies_m'])}"
        + (f" ({pair[0]}–{pair[1]} at t = {a['overlap_bodies_at_s']:.4g} s)" if pair[0] else "")
        + f"; static: {_mm(a['overlap_static_m'])}"
        + (
            f" ({a['overlap_static_body']} at t = {a['overlap_static_at_s']:.4g} s)"
            if a["overlap_static_body"]
            else ""
        )
        + f"; limit {_mm(lim['overlap_m'])}",
        f"  earliest state overlap: {_mm(a['earliest_overlap_m'])} "
        f"(limit {_mm(lim['earliest_overlap_m'])})",
    ]
    if a.get("given_overlap_m", 0.0) > 0:
        out.append(
            f"  the scene's own state overlaps by {_mm(a['given_overlap_m'])}: the limits "
            "count from there"
        )
    out += [
        f"  mechanical energy gained (forward): {a['energy_gain_J']:.4g} J, of which the "
        f"velocity controls injected {a['control_energy_J']:.4g} J (limit {gain_limit:.3g} J "
        f"= {100 * lim['energy_fraction']:g} % of the peak kinetic energy "
        f"{a['peak_kinetic_J']:.4g} J)",
        f"  peak speed {a['peak_speed_m_s']:.3g} m/s; against its allowance worst {v['body']} "
        f"{v['peak_m_s']:.3g} m/s (allowed {v['allowed_m_s']:.3g})",
        f"  peak spin {a['peak_spin_rad_s']:.3g} rad/s; against its allowance worst {w['body']} "
        f"{w['peak_rad_s']:.3g} rad/s (allowed {w['allowed_rad_s']:.3g})",
    ]
    out += [f"  problem: {p}" for p in a["problems"]]
    return out


def _mm(x: float) -> str:
    return f"{1e3 * x:.3g} mm"


def body_radii(mass: np.ndarray, inertia: np.ndarray) -> np.ndarray:
    """Per body, the radius (m) of the homogeneous sphere of the same mass and smallest principal
    moment of inertia, √(I_min / (0.4 m)): a sphere's own radius, 1.29 a for a cube of half edge
    a, about the half thickness of a plank spun about its long axis. The length by which spins
    turn into surface speeds and overlaps are judged (static bodies: inf)."""
    mass = np.asarray(mass, dtype=float)
    out = np.full(len(mass), np.inf)
    moving = mass > 0
    if moving.any():
        i_min = np.linalg.eigvalsh(np.asarray(inertia, dtype=float)[moving])[:, 0]
        out[moving] = np.sqrt(np.maximum(i_min, 0.0) / (0.4 * mass[moving]))
    return out


def mechanical_energy(
    mass: np.ndarray,
    kinetic: np.ndarray,
    force: np.ndarray,
    position: np.ndarray,
    velocity: np.ndarray,
    dt: float,
) -> np.ndarray:
    """Mechanical energy (J) per record of ``nt`` records of ``n`` bodies.

    ``kinetic`` (nt, n): kinetic energy per body; ``force`` (n, 3): the constant force on each
    body (gravity included); ``position``, ``velocity`` (nt, n, 3). The potential of a constant
    force is −f·x; the semi-implicit Euler step (v⁺ = v⁻ + h f/m, x⁺ = x⁻ + h v⁺) keeps
    ``½m|v|² − f·x + ½h f·v`` exactly in free flight (the difference of two records is
    ½h f·(v⁻ + v⁺) − h f·v⁺ + ½h f·(v⁺ − v⁻) = 0), where ``½m|v|² − f·x`` alone drifts by
    −½h²|f|²/m a step. Static bodies contribute nothing (``mass`` 0)."""
    moving = np.asarray(mass) > 0
    f = np.where(moving[:, None], np.asarray(force, dtype=float), 0.0)
    potential = -np.einsum("nk,tnk->t", f, position)
    shadow = 0.5 * dt * np.einsum("nk,tnk->t", f, velocity)
    return np.sum(np.where(moving[None, :], kinetic, 0.0), axis=1) + potential + shadow


def largest_rise(energy: np.ndarray) -> tuple[float, int, int]:
    """The largest ``energy[j] − energy[i]`` with ``i ≤ j`` (0 for a non-increasing series), and
    ``(i, j)``."""
    e = np.asarray(energy, dtype=float)
    if not len(e):
        return 0.0, 0, 0
    low = np.minimum.accumulate(e)
    rise = e - low
    j = int(np.argmax(rise))
    i = int(np.flatnonzero(e[: j + 1] == low[j])[0])
    return float(rise[j]), i, j


def allowed_speeds(
    position: np.ndarray,
    gravity: np.ndarray,
    hint_speed: np.ndarray,
    earliest_velocity: np.ndarray | None = None,
) -> np.ndarray:
    """Per body, the speed (m/s) its own fall and its hints allow: √(u² + 2|g| H), ``u`` the
    largest speed its hints give it (0 without), ``H`` its largest descent along gravity in
    forward time (the largest drop from a record to a later one) — the speed of a body thrown at
    ``u`` that falls ``H`` with nothing taking energy away, plus :data:`SPEED_FLOOR`.

    ``earliest_velocity`` (n, 3): a body moving down at the earliest state is taken to have been
    dropped from the height that speed implies (v²/2|g| above, a fall before the past starts);
    sideways or upward motion there needs a hint (a throw)."""
    g = np.asarray(gravity, dtype=float)
    g_norm = float(np.linalg.norm(g))
    if g_norm == 0:
        drop = np.zeros(position.shape[1])
    else:
        down = g / g_norm
        height = -np.einsum("tnk,k->tn", position, down)  # up is against gravity
        if earliest_velocity is not None and len(height):
            falling = np.maximum(np.asarray(earliest_velocity, dtype=float) @ down, 0.0)
            height = np.concatenate([height[:1] + falling**2 / (2.0 * g_norm), height])
        # largest height[i] − height[j] with i ≤ j: the running maximum minus the height
        drop = np.max(np.maximum.accumulate(height, axis=0) - height, axis=0)
    return np.sqrt(np.asarray(hint_speed, dtype=float) ** 2 + 2.0 * g_norm * drop) + SPEED_FLOOR


def audit_run(
    *,
    body_names: list[str],
    time: np.ndarray,
    position: np.ndarray,
    linear_velocity: np.ndarray,
    angular_velocity: np.ndarray,
    kinetic: np.ndarray,
    mass: np.ndarray,
    inertia: np.ndarray,
    force: np.ndarray,
    gravity: np.ndarray,
    dt: float,
    overlap_bodies: np.ndarray,
    overlap_static: np.ndarray,
    control_energy: np.ndarray,
    overlap_pairs: list[tuple[tuple[int, int], tuple[int, int]]] | None = None,
    hint_speed: np.ndarray | None = None,
    limits: AuditLimits | None = None,
    energy: np.ndarray | None = None,
) -> Audit:
    """Audit the records of a run (arrays over ``nt`` records in forward time order, ``n``
    bodies; ``kinetic`` (nt, n) per body; ``overlap_*`` and ``control_energy`` (nt,) per record,
    ``control_energy[i]`` the energy the controls injected into the step that led to record i).

    ``overlap_pairs``: per record, the (bodies, static) pairs of body indices of its deepest
    overlaps (for messages). ``hint_speed`` (n,): the largest hint speed per body.
    ``limits``: default :meth:`AuditLimits.for_radius` of the smallest moving body.
    ``energy``: :func:`mechanical_energy` of the records, when the caller has it."""
    n = len(body_names)
    mass = np.asarray(mass, dtype=float)
    moving = mass > 0
    radii = body_radii(mass, inertia)
    if limits is None:
        r = float(np.min(radii[moving])) if moving.any() else 0.0
        limits = AuditLimits.for_radius(r)
    hint_speed = np.zeros(n) if hint_speed is None else np.asarray(hint_speed, dtype=float)
    time = np.asarray(time, dtype=float)
    ob = np.asarray(overlap_bodies, dtype=float)
    os_ = np.asarray(overlap_static, dtype=float)
    kb, ks = int(np.argmax(ob)) if len(ob) else 0, int(np.argmax(os_)) if len(os_) else 0
    pair_names: tuple[str, str] = ("", "")
    static_name = ""
    if overlap_pairs is not None and len(ob):
        a, b = overlap_pairs[kb][0]
        if a >= 0 and ob[kb] > 0:
            pair_names = (body_names[a], body_names[b])
        a, _ = overlap_pairs[ks][1]
        if a >= 0 and os_[ks] > 0:
            static_name = body_names[a]
    earliest = float(max(ob[0], os_[0])) if len(ob) else 0.0
    # the last record is the scene's own state: an overlap there is the user's, not the past's
    # (``workbench reverse`` warns about it); below the earliest-state limit it is contact depth
    given = float(max(ob[-1], os_[-1], 0.0)) if len(ob) else 0.0
    if given <= limits.earliest_overlap:
        given = 0.0
    if energy is None:
        energy = mechanical_energy(mass, kinetic, force, position, linear_velocity, dt)
    gain, i, j = largest_rise(energy)
    controls = float(np.sum(np.asarray(control_energy, dtype=float)[i + 1 : j + 1]))
    ke_total = np.sum(np.where(moving[None, :], kinetic, 0.0), axis=1)
    peak_ke = float(np.max(ke_total, initial=0.0))
    speed = np.linalg.norm(linear_velocity, axis=2)
    spin = np.linalg.norm(angular_velocity, axis=2)
    peak_speed = np.where(moving, np.max(speed, axis=0, initial=0.0), 0.0)
    peak_spin = np.where(moving, np.max(spin, axis=0, initial=0.0), 0.0)
    allowed = np.where(
        moving, allowed_speeds(position, gravity, hint_speed, linear_velocity[0]), 0.0
    )
    # a body spinning at ω carries its surface at ω r: allowed as a roll at its allowed speed
    allowed_spin = np.where(moving, allowed / np.where(moving, radii, 1.0), 0.0)
    audit = Audit(
        limits=limits,
        overlap_bodies=float(ob[kb]) if len(ob) else 0.0,
        overlap_bodies_at=float(time[kb]) if len(ob) else 0.0,
        overlap_bodies_pair=pair_names,
        overlap_static=float(os_[ks]) if len(os_) else 0.0,
        overlap_static_at=float(time[ks]) if len(os_) else 0.0,
        overlap_static_body=static_name,
        earliest_overlap=earliest,
        given_overlap=given,
        energy_gain=gain,
        energy_gain_span=(float(time[i]), float(time[j])) if len(time) else (0.0, 0.0),
        control_energy=controls,
        peak_kinetic=peak_ke,
        peak_speed=peak_speed,
        allowed_speed=allowed,
        peak_spin=peak_spin,
        allowed_spin=allowed_spin,
        body_names=list(body_names),
    )
    audit.problems = _problems(audit)
    return audit


def _problems(a: Audit) -> list[str]:
    lim = a.limits
    out = []
    deepest = max(a.overlap_bodies, a.overlap_static)
    given = (
        f", counted from the {_mm(a.given_overlap)} of the scene's own state"
        if a.given_overlap > 0
        else ""
    )
    if deepest > lim.overlap + a.given_overlap:
        if a.overlap_bodies >= a.overlap_static:
            first, second = a.overlap_bodies_pair
            who = f"{first} inside {second}" if first else "two bodies inside each other"
            what = f"{who} by {_mm(a.overlap_bodies)} at t = {a.overlap_bodies_at:.4g} s"
        else:
            who = a.overlap_static_body or "a body"
            what = (
                f"{who} inside a static body by {_mm(a.overlap_static)} at "
                f"t = {a.overlap_static_at:.4g} s"
            )
        out.append(f"bodies pass through each other ({what}; limit {_mm(lim.overlap)}{given})")
    if a.earliest_overlap > lim.earliest_overlap + a.given_overlap:
        out.append(
            f"the earliest state overlaps by {_mm(a.earliest_overlap)} (limit "
            f"{_mm(lim.earliest_overlap)}{given}): released there, bodies would be pushed apart"
        )
    limit = max(lim.energy_fraction * a.peak_kinetic, ENERGY_FLOOR)
    if a.energy_gain > limit:
        t0, t1 = a.energy_gain_span
        share = (
            f", {a.control_energy:.4g} J of it injected by the velocity controls"
            if a.control_energy > 0
            else ""
        )
        out.append(
            f"energy from nowhere: the forward motion gains {a.energy_gain:.4g} J of mechanical "
            f"energy between t = {t0:.4g} and {t1:.4g} s{share} (limit {limit:.3g} J, "
            f"{100 * lim.energy_fraction:g} % of the peak kinetic energy)"
        )
    for kind, (name, peak, allowed), unit in (
        ("speed", a.worst_speed(), "m/s"),
        ("spin", a.worst_spin(), "rad/s"),
    ):
        if allowed > 0 and peak > lim.speed_ratio * allowed:
            out.append(
                f"{name} reaches a {kind} of {peak:.3g} {unit}, more than {lim.speed_ratio:g}× "
                f"the {allowed:.3g} {unit} its fall and hints allow"
            )
    return out
