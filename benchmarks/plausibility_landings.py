"""Landings of forward throws and of backward runs, σ seconds before the final rest began
(issue 15 item 3: why backward pasts gain energy faster than forward runs lose it).

A landing is a corner of the box arriving at the ground: not within :data:`TOUCH` of it at
record ``k``, within it at ``k + 1``, its velocity ``u = v + ω × r`` pointing down faster than
:data:`APPROACH`. Per landing, at record ``k`` (forward time: just before the impact), it prints
quartiles of

- the angle between ``u`` and the inward normal;
- ``f = ½ m_eff u_n² / KE``, the share of the kinetic energy in the corner's normal motion
  (``m_eff = 1 / (1/m + (r × n)ᵀ I⁻¹ (r × n))``): Newton restitution α on the normal part alone
  keeps ``1 − (1 − α²) f`` of the energy (Twigg & James 2008 Eq. 7 is that law read backward);
- the ratio of the specific energy above the final state, ``e = KE/m + g (h − h_end)``, three
  records after to the record before (PyBullet resolves an impact in the step after the one that
  detects it) — forward runs lose it, backward runs gain its inverse;
- the corner's tangential slip before the landing and :data:`WINDOW` records after it (forward
  time): after it is what a *backward* landing arrives with, and a slipping arrival makes the
  backward friction impulse maximal (Twigg & James §3.2), a sticking one leaves it free in the
  cone (their Eq. 9).

Forward: the first ``--forward`` throws of the table's training (its seed, distribution and
duration). Backward: the benchmark's runs 0…``--backward``−1 (``benchmarks/plausibility.py
--hints none``: seed 1, random heading, no hint), plain Markov steps of the table, no filter. σ
is counted from the record after which the contact state (corners within :data:`TOUCH`, 1, 2,
3+) stays the final one.

With ``--reconstruct DELTA …`` it also steps the backward stepper from each forward landing's
state :data:`WINDOW` records after it, :data:`WINDOW` steps back with no goals (Eq. 7 and the
friction of §3.2 alone; ``StepSettings.delta`` = each DELTA given), and compares the energy it
reconstructs before the landing with the throw's: how much a backward landing gains when it
arrives in a forward state.

``--landing-delta L`` runs the backward runs and the reconstructions with
``StepSettings.landing_delta = L``: landing contacts (the elastic branch of Eq. 7) slipping at
most ``L`` m/s stick (the goal LCP of Eq. 9–10) instead of sliding with maximal friction.

Usage::

    python benchmarks/plausibility_landings.py                    # markov_block_energy, 200 v 120
    python benchmarks/plausibility_landings.py --table markov_block_semi --backward 40
    python benchmarks/plausibility_landings.py --backward 0 --forward 60 --reconstruct 1e-4 0.2
    python benchmarks/plausibility_landings.py --backward 60 --landing-delta 0.2
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as benchmarks/lcp.py: small solves

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # before benchmarks/, whose reverse.py would shadow the package

from reverse.markov import load_model  # noqa: E402
from workbench.scene.catalog import find_data, find_scene  # noqa: E402
from workbench.scene.loader import load_scene  # noqa: E402

#: A corner within 1 mm of the ground touches it: a landing corner moves 2–12 mm per 1/240 s
#: step at the 0.5–3 m/s measured, and a resting one sits within PyBullet's ~0.1 mm penetration.
TOUCH = 1e-3
#: Arrivals slower than 2 cm/s are a resting corner's jitter, not a landing.
APPROACH = 0.02
#: Records after the one before the landing at which "after" is read (forward PyBullet applies
#: the impulse in the step after the detecting one; the backward elastic step in one).
WINDOW = 3
#: σ ranges reported, s: the rocking, the departure of report_plaus2 (0.3–0.8 s), the rest.
RANGES = ((0.0, 0.3), (0.3, 0.8), (0.8, 10.0))


def landings(x, q, v, w, half, mass, inertia, gravity, dt) -> list[dict]:
    """The landings of one trajectory (records in forward time order: position, quaternion
    x, y, z, w, linear and angular velocity of the box's centre)."""
    from scipy.spatial.transform import Rotation

    corners = np.array([[a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)]) * half
    R = Rotation.from_quat(q).as_matrix()
    r = np.einsum("kij,cj->kci", R, corners)
    h = x[:, None, 2] + r[:, :, 2]
    touch = h < h[-1].min() + TOUCH  # the final record rests on the ground
    state = np.minimum(touch.sum(1), 3)
    Iw = np.einsum("kij,jl,kml->kim", R, inertia, R)
    ke = 0.5 * mass * (v**2).sum(1) + 0.5 * np.einsum("ki,kij,kj->k", w, Iw, w)
    e = ke / mass + gravity * (x[:, 2] - x[-1, 2])
    other = np.flatnonzero(state != state[-1])
    if other.size == 0:
        return []
    m = int(other[-1])
    n = len(x)
    out = []
    for k in range(n - 1):
        new = np.flatnonzero(touch[k + 1] & ~touch[k])
        us = [(c, v[k] + np.cross(w[k], r[k, c])) for c in new]
        us = [(c, u) for c, u in us if u[2] < -APPROACH]
        if not us or e[k] <= 1e-9 or ke[k] <= 0:
            continue
        c, u = min(us, key=lambda cu: cu[1][2])  # the fastest arriving corner
        rn = np.cross(r[k, c], [0.0, 0.0, 1.0])
        m_eff = 1.0 / (1.0 / mass + rn @ np.linalg.solve(Iw[k], rn))
        k2 = min(k + WINDOW, n - 1)
        u2 = v[k2] + np.cross(w[k2], r[k2, c])
        out.append(
            {
                "sigma": (m - k) * dt,
                "k": k,
                "angle": math.degrees(math.acos(min(1.0, -u[2] / np.linalg.norm(u)))),
                "f": 0.5 * m_eff * u[2] ** 2 / ke[k],
                "ratio": e[k2] / e[k],
                "normal": -u[2],
                "slip_before": math.hypot(u[0], u[1]),
                "slip_after": math.hypot(u2[0], u2[1]),
                "energy": e[k],
            }
        )
    return out


def forward(scene_path, model, count: int, dt: float) -> list[np.ndarray]:
    from reverse.markov_training import _engine, box_reach, sample_throw, throw_rng
    from workbench.sim.state import State

    seed, n_steps = int(model.meta["seed"]), round(float(model.meta["duration"]) / dt)
    _, eng, j = _engine((str(scene_path), (), dt))
    out = []
    for i in range(count):  # run_throw's throw i, recording the whole state
        eng.rebuild()
        lo, hi = eng.aabb(j)
        st = eng.state()
        top = max(float(eng.aabb(b)[1][2]) for b in range(eng.n_bodies) if b != j)
        throw = sample_throw(
            throw_rng(seed, i), st.position[j, :2], top, box_reach(lo, hi, st.position[j])
        )
        pos, qq = st.position.copy(), st.orientation.copy()
        vv, ww = st.linear_velocity.copy(), st.angular_velocity.copy()
        pos[j], qq[j], vv[j], ww[j] = (throw.position, throw.orientation, throw.linear_velocity,
                                       throw.angular_velocity)  # fmt: skip
        eng.set_state(State(pos, qq, vv, ww))
        eng.detect_collisions()
        rec = []
        for k in range(1, n_steps + 1):
            rec.append(eng.read_body(j))
            eng.step((k - 1) * dt)
        rec.append(eng.read_body(j))
        out.append([np.array([np.asarray(t[c], float) for t in rec]) for c in range(4)])
    return out


def backward(
    scene_path, model, count: int, dt: float, duration: float, landing_delta: float = 0.0
) -> list:
    from reverse.hints import HintPolicy
    from reverse.lcp import LCPError
    from reverse.markov_policy import MarkovPolicy
    from reverse.run import build_stepper
    from reverse.sampling import RunVariation, sample_seed
    from reverse.stepper import StepSettings
    from workbench.ensemble.run import SceneRef

    ref, variation = SceneRef(str(scene_path), ()), RunVariation(heading=True)
    out = []
    for i in range(count):  # the benchmark's backward run i (seed 1), without the filter
        scene, _, _ = variation.draw(ref.load(), 1, i)
        seed = sample_seed(1, i)
        settings = StepSettings(dt, landing_delta=landing_delta)
        stepper, detector, state = build_stepper(scene, settings, seed=seed)
        j = int(np.flatnonzero(stepper.rigid.moving)[0])
        seq = np.random.SeedSequence(np.random.SeedSequence(seed).entropy, spawn_key=(1,))
        policy = HintPolicy([], scene.body_names, dt, stepper.settings.epsilon)
        goals = MarkovPolicy(
            model, policy, np.random.default_rng(seq), dt, stepper.settings.epsilon
        )
        recs = [state]
        try:
            for k in range(1, round(duration / dt) + 1):
                policy.reverse_time = (k - 1) * dt
                try:
                    state, _ = stepper.backward(state, goals)
                except LCPError:
                    break
                if not np.all(state.is_finite()):
                    break
                recs.append(state)
        finally:
            detector.close()
        recs = recs[::-1]
        fields = ("position", "orientation", "linear_velocity", "angular_velocity")
        out.append([np.array([getattr(s, a)[j] for s in recs]) for a in fields])
    return out


def reconstruct(
    scene, runs, found, half, props, gravity, dt, delta, landing_delta: float = 0.0
) -> str:
    """Backward steps from the forward landings' after-states (σ in the second of
    :data:`RANGES`): geometric means of the true and the reconstructed energy gain."""
    from reverse.hints import HintPolicy
    from reverse.lcp import LCPError
    from reverse.run import build_stepper
    from reverse.stepper import StepSettings
    from workbench.sim.state import State

    lo, hi = RANGES[1]
    stepper, detector, s0 = build_stepper(
        scene, StepSettings(dt, delta=delta, landing_delta=landing_delta)
    )
    no_goals = HintPolicy([], scene.body_names, dt, stepper.settings.epsilon)
    j = int(np.flatnonzero(stepper.rigid.moving)[0])
    rows = []
    try:
        for (x, q, v, w), marks in zip(runs, found, strict=True):

            def energy(i, state=None, x=x, q=q, v=v, w=w):
                from scipy.spatial.transform import Rotation

                if state is not None:
                    xi, qi = state.position[j], state.orientation[j]
                    vi, wi = state.linear_velocity[j], state.angular_velocity[j]
                else:
                    xi, qi, vi, wi = x[i], q[i], v[i], w[i]
                R = Rotation.from_quat(qi).as_matrix()
                inertia = R @ props.inertia_matrix @ R.T
                ke = 0.5 * props.mass * vi @ vi + 0.5 * wi @ inertia @ wi
                return ke / props.mass + gravity * (xi[2] - x[-1, 2])

            for d in marks:
                k = d["k"]
                if not lo <= d["sigma"] < hi or k + WINDOW >= len(x):
                    continue
                st = State(s0.position.copy(), s0.orientation.copy(),
                           s0.linear_velocity.copy(), s0.angular_velocity.copy())  # fmt: skip
                st.position[j], st.orientation[j] = x[k + WINDOW], q[k + WINDOW]
                st.linear_velocity[j], st.angular_velocity[j] = v[k + WINDOW], w[k + WINDOW]
                try:
                    for _ in range(WINDOW):
                        st, _ = stepper.backward(st, no_goals)
                except LCPError:
                    continue
                after = energy(k + WINDOW)
                rows.append((after / energy(k), after / energy(k, st), d["slip_after"]))
    finally:
        detector.close()
    a = np.array(rows).reshape(-1, 3)

    def gain(c):
        return float(np.exp(-np.mean(np.log(np.clip(c, 1e-12, None))))) if len(c) else np.nan

    slow = a[:, 2] < 0.2
    return (
        f"  δ = {delta:g} m/s, landing cut-off {landing_delta:g} m/s: {len(a)} forward "
        f"landings at σ in [{lo:g}, {hi:g}) s; energy "
        f"gain read backward (geometric mean), true ×{gain(a[:, 0]):.2f}, reconstructed "
        f"×{gain(a[:, 1]):.2f}; arriving below 0.2 m/s of slip ({slow.mean():.2f}): true "
        f"×{gain(a[slow, 0]):.2f}, reconstructed ×{gain(a[slow, 1]):.2f}; the others: true "
        f"×{gain(a[~slow, 0]):.2f}, reconstructed ×{gain(a[~slow, 1]):.2f}"
    )


def summary(name: str, found: list[dict], alpha: float) -> None:
    print(f"{name}: {len(found)} landings")
    for lo, hi in RANGES:
        sel = [d for d in found if lo <= d["sigma"] < hi]
        if not sel:
            continue

        def col(key, sel=sel):
            return np.array([d[key] for d in sel], dtype=float)

        def qs(c):
            return " / ".join(f"{x:.3g}" for x in np.percentile(c, [25, 50, 75]))

        f, ratio = col("f"), col("ratio")
        normal_only = 1.0 - (1.0 - alpha**2) * f  # Newton restitution on the normal part
        geo = float(np.exp(np.mean(np.log(np.clip(ratio, 1e-12, None)))))
        geo_n = float(np.exp(np.mean(np.log(normal_only))))
        slow = col("slip_after") < 0.2

        def gain(c):  # energy gain read backward, geometric mean
            return f"×{np.exp(-np.mean(np.log(np.clip(c, 1e-12, None)))):.2f}" if len(c) else "-"

        print(
            f"  σ in [{lo:g}, {hi:g}) s: {len(sel)} landings\n"
            f"    angle to the normal, deg (quartiles) {qs(col('angle'))}\n"
            f"    normal share of KE f                 {qs(f)}\n"
            f"    energy after / before                {qs(ratio)}; geometric mean {geo:.3g} "
            f"(×{1 / geo:.2f} read backward): normal restitution alone {geo_n:.3g}, the rest "
            f"(friction) {geo / geo_n:.3g}\n"
            f"    normal approach speed, m/s           {qs(col('normal'))}\n"
            f"    slip before (forward time), m/s      {qs(col('slip_before'))}; ÷ normal speed "
            f"{qs(col('slip_before') / col('normal'))}\n"
            f"    slip after (the backward arrival)    {qs(col('slip_after'))}; share < 0.2 m/s "
            f"{np.mean(col('slip_after') < 0.2):.2f}\n"
            f"    gain read backward, arrival < 0.2 m/s {gain(ratio[slow])}, the others "
            f"{gain(ratio[~slow])}\n"
            f"    energy before, J/kg                  {qs(col('energy'))}"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scene", default="markov_block")
    ap.add_argument("--table", default="markov_block_energy")
    ap.add_argument("--forward", type=int, default=200, help="forward throws (default 200)")
    ap.add_argument("--backward", type=int, default=120, help="backward runs (default 120)")
    ap.add_argument(
        "--reconstruct",
        type=float,
        nargs="*",
        default=[],
        metavar="DELTA",
        help="also step backward from the forward landings with these sliding cut-offs, m/s",
    )
    ap.add_argument(
        "--landing-delta",
        type=float,
        default=0.0,
        metavar="M_PER_S",
        help="backward runs and reconstructions: landing contacts slipping at most this much "
        "stick (StepSettings.landing_delta; default 0: off)",
    )
    args = ap.parse_args(argv)
    if not args.landing_delta >= 0.0:
        print(f"--landing-delta: expected >= 0 m/s, got {args.landing_delta}", file=sys.stderr)
        return 2
    path = find_scene(args.scene)
    scene = load_scene(path)
    model = load_model(find_data(args.table, what="contact-transition table"))
    body = next(b for b in scene.bodies if not b.fixed)
    props = body.mass_properties
    if body.shape.type != "box" or np.any(np.asarray(props.com) != 0):
        print(
            f"{path}: bodies: expected a box with its centre of mass at its centre", file=sys.stderr
        )
        return 2
    half = np.asarray(body.shape.half_extents, dtype=float)
    g = float(np.linalg.norm(np.asarray(scene.gravity, dtype=float)))
    dt, duration = float(model.dt), float(model.meta["duration"])
    args_l = (half, props.mass, props.inertia_matrix, g, dt)
    t0 = time.perf_counter()
    runs = forward(path, model, args.forward, dt)
    found = [landings(*run, *args_l) for run in runs]
    fwd = [d for marks in found for d in marks]
    t1 = time.perf_counter()
    bwd = [d for run in backward(path, model, args.backward, dt, duration, args.landing_delta)
           for d in landings(*run, *args_l)]  # fmt: skip
    t2 = time.perf_counter()
    print(
        f"{path.name} with {args.table}: {args.forward} forward throws, "
        f"{args.backward} backward runs, landing cut-off {args.landing_delta:g} m/s"
    )
    # PyBullet's restitution of a pair is the product of the two bodies' (markov_block 0.5 × 1)
    ground = next(b for b in scene.bodies if b.fixed)
    alpha = body.material.restitution * ground.material.restitution
    print(f"restitution α = {alpha:g}")
    summary("forward", fwd, alpha)
    summary("backward", bwd, alpha)
    if args.reconstruct:
        print("backward steps from the forward landings (no goals):")
    for delta in args.reconstruct:
        print(reconstruct(scene, runs, found, half, props, g, dt, delta, args.landing_delta))
    print(
        f"wall time: forward {t1 - t0:.1f} s, backward {t2 - t1:.1f} s, "
        f"all {time.perf_counter() - t0:.1f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
