"""Large-island LCP cost: backward steps of N spheres settled in a bin, all awake (one island).

The scene and the settling are those of ``benchmarks/reverse.py`` (its ``bin_scene`` and
``settle``: spheres of radius 5 cm, 0.1 kg, friction 0.5, rolling friction 0.001, dropped into a
walled bin and settled by PyBullet at dt = 1/240 s); the reverse steps run at dt = 1 ms with
``StepSettings(sleep=False)``, so every sphere is stepped every step and the connected pile is one
island (N = 100, seed 0: 97 spheres, ≈ 248 contacts, ≈ 2700 rows; 106 s per step with the
numpy Lemke of before issue 17).

Every LCP the stepper solves is intercepted (the ``solve_lcp`` that :mod:`reverse.step.dynamics`
calls is wrapped, not changed) and timed. Columns per step: ``rows`` of the largest island,
``pivots``, ``method`` (how the answer was reached: ``trivial``, ``warm`` — the previous step's
basis verified —, ``advanced`` — Lemke's path started from that basis —, ``cold`` — Lemke from
the standard start —, or ``ladder``), ``status`` (with the fallback rung, if any), ``lcp s``
(wall time of that solve), ``lcp cpu`` (its CPU time, ``time.process_time``: the number to
compare on a shared machine), ``step s`` (wall time of the whole backward step).

``--save FILE.npz`` stores every intercepted LCP (``M0, q0, M1, q1, …``, plus the basis each
solve returned as ``J0, J1, …``) so that the solver can be studied without PyBullet:
``--load FILE.npz`` re-solves the stored problems in sequence (cold, then warm-started from the
previous problem's basis) and prints the same columns; with ``--dense`` each cold solve is run
twice, interleaved: as shipped (the blocked path of :mod:`reverse.lcp.lemke_kernel` from
``reverse.lcp.solve.BLOCKED_MIN_ROWS`` rows) and with the dense path forced (``method`` then reads
``dense``), and whether the two answers are the same to the bit. ``lcp s`` is wall time
and ``lcp cpu`` CPU time; on a loaded machine compare the pivots and the CPU times.

``--replay`` measures what the choice among the solutions of the first step's LCP does to the
motion (the pile is statically indeterminate: the LCP has many solutions, and which one Lemke
ends on depends on rounding, ``reverse.lcp.solve.BLOCKED_MIN_ROWS``). After step 1 it steps the same
state again, with the contacts that step detected, once per alternative answer of the largest
LCP, and prints how far each alternative's post-step velocities (``v⁺ = u_move − A Wᵀ z``,
:mod:`reverse.step.dynamics`) and the configuration the next step moves to are from the shipped
answer's. The alternatives: ``--replay-block B`` (the same LCP solved with the blocked path's
``reverse.lcp.solve.UPDATE_BLOCK = B``) and ``--replay-z FILE.npz`` (an array ``z`` saved by
``--save-z FILE.npz`` from another run, e.g. with ``OPENBLAS_NUM_THREADS=2``). Every
alternative is checked with ``reverse.lcp.solve.lcp_residual`` first.

``--siconos`` (with ``--load``): each stored LCP also solved once by Siconos numerics' solvers
(:mod:`benchmarks._siconos`: its Lemke, its semismooth Newton methods at tolerance 1e-10 and its
projected Gauss–Seidel at 1e-6), when an interpreter imports Siconos; ``method`` reads
``sic-<solver>``, ``pivots`` its iterations, ``status`` ``solved`` only when the answer verifies
on our residual (else ``unverified`` or ``no answer``, with Siconos' ``info``, or ``timeout``
after ``--siconos-timeout`` seconds), ``lcp s`` its solve time.

``--relaxation`` (with ``--load``): the study of docs/studies/large-islands.md "The monotone
relaxation" on each stored LCP. Making the normal rows blind to the friction-cone slacks (``M̃`` =
``M`` with ``M̃[F, S] = −M[S, F]ᵀ``, ``S`` the slack rows, ``F`` the others) gives the LCP of
Anitescu's convex relaxation (a monotone LCP: its symmetric part is ``[[G, 0], [0, 0]]`` with ``G``
the PSD Delassus block), which an interior point solves reliably; its answer solves ``M`` too
wherever no contact both carries a load and slips (sticks on a cone's edge with a positive slack).
Rows: the interior point (Mehrotra predictor–corrector on the reduced SPD Newton system, dense
Cholesky), its answer's residual on the stored ``M``, the contacts loaded and slipping; three
rounds of the fixed point that moves ``μ λ`` into ``q`` of the normal rows (De Saxcé's modified
velocity, Acary et al. 2011); and Lemke's advanced start from two bases guessed from the answer.

``OPENBLAS_NUM_THREADS`` is set to 1 unless given (see ``benchmarks/lcp.py``).

Usage: ``python benchmarks/island.py [--n 100] [--steps 5] [--settle 3] [--save F | --load F
[--dense] [--siconos] [--relaxation]] [--save-z F] [--replay-block B …] [--replay-z F …]``
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy.linalg as scipy_linalg  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._table import print_head  # noqa: E402
from reverse.lcp import solve as lcp  # noqa: E402

HEAD = (
    f"{'step':>5}{'rows':>7}{'pivots':>8}  {'method':<10}{'status':<28}{'lcp s':>9}{'lcp cpu':>9}"
    f"{'step s':>9}{'residual':>10}"
)


def _line(step, res, t_lcp, t_step, cpu=float("nan")) -> str:
    """One table row; ``method`` is :attr:`reverse.lcp.solve.LCPResult.start` (``trivial``,
    ``warm``,
    ``advanced``, ``cold``) or ``ladder`` when the fallback ladder gave (or failed to give) the
    answer."""
    status = res.status + (f" ({res.fallback})" if res.fallback else "")
    method = res.start or "ladder"
    return (
        f"{step:>5}{res.z.size:>7}{res.pivots:>8}  {method:<10}{status:<28}"
        f"{t_lcp:>9.3f}{cpu:>9.3f}{t_step:>9.3f}{res.residual:>10.1e}"
    )


def run_scene_steps(
    n: int,
    steps: int,
    settle_s: float,
    seed: int,
    save: str | None,
    save_z: str | None = None,
    replay_blocks: tuple[int, ...] = (),
    replay_z: tuple[str, ...] = (),
) -> list[dict]:
    """Settle the bin, then ``steps`` backward steps with every sphere awake; after step 1, the
    ``--replay`` comparison (module docstring) when alternatives are given. Returns its rows
    (:func:`_replay`; empty without alternatives)."""
    from benchmarks.reverse import DT, bin_scene, settle
    from reverse.goals.hints import HintPolicy
    from reverse.runs.run import build_stepper
    from reverse.step import dynamics
    from reverse.step.stepper import StepSettings

    data = bin_scene(n, np.random.default_rng(seed), settle_s)
    scene, wall, _ = settle(data)
    print(f"N = {n}: settled {settle_s:g} s in {wall:.1f} s wall", flush=True)
    settings = StepSettings(DT, sleep=False)
    stepper, detector, state = build_stepper(scene, settings, seed=seed)
    policy = HintPolicy([], scene.body_names, DT, settings.epsilon)
    log: list[tuple] = []
    real = dynamics.solve_lcp

    def recording(M, q, **kw):
        t0, c0 = time.perf_counter(), time.process_time()
        res = real(M, q, **kw)
        t, c = time.perf_counter() - t0, time.process_time() - c0
        log.append((M.copy(), q.copy(), res, t, kw.get("warm_start"), c))
        return res

    dynamics.solve_lcp = recording
    source = stepper.contact_source
    seen: list = []

    def detecting(x, q):
        seen[:] = [source(x, q)]
        return seen[0]

    stepper.contact_source = detecting
    replaying = bool(replay_blocks or replay_z)
    stored: dict = {}
    rows: list[dict] = []
    print_head(f"backward steps, dt = {DT:g} s, all awake: the largest island's LCP", HEAD)
    try:
        for k in range(steps):
            policy.reverse_time = k * DT
            log.clear()
            before = stepper.memory() if replaying and k == 0 else None
            t0 = time.perf_counter()
            start, (state, _) = state, stepper.backward(state, policy)
            t_step = time.perf_counter() - t0
            if not log:
                print(f"{k + 1:>5}  (no LCP)")
                continue
            M, q, res, t_lcp, ws, c_lcp = max(log, key=lambda e: e[1].size)
            print(_line(k + 1, res, t_lcp, t_step, c_lcp), flush=True)
            stored[f"M{k}"], stored[f"q{k}"], stored[f"J{k}"] = M, q, res.basis
            if k == 0 and save_z:
                np.savez_compressed(save_z, z=res.z)
                print(f"saved step 1's z to {save_z}")
            if before is not None:
                after = stepper.memory()
                alts = [("shipped answer (replay check)", res.z)]
                alts += _alternatives(M, q, replay_blocks, replay_z)
                rows = _replay(stepper, policy, start, state, seen[0], M, q, res, alts, before)
                stepper.restore(after)
    finally:
        dynamics.solve_lcp = real
        stepper.contact_source = source
        detector.close()
    if save:
        np.savez_compressed(save, **stored)
        print(f"saved {len(stored) // 3} LCPs to {save}")
    return rows


def _alternatives(M, q, blocks, files) -> list[tuple[str, np.ndarray]]:
    """Other answers of the largest LCP: solved with another update block, or loaded."""
    out = []
    for b in blocks:
        shipped = lcp.UPDATE_BLOCK
        lcp.UPDATE_BLOCK = int(b)
        try:
            res = lcp.solve_lcp(M, q)
        finally:
            lcp.UPDATE_BLOCK = shipped
        out.append((f"UPDATE_BLOCK={b} ({res.pivots} pivots, {res.status})", res.z))
    for f in files:
        with np.load(f) as data:
            z = data["z"] if "z" in data.files else None
        if z is None or z.shape != q.shape or not np.all(np.isfinite(z)):
            found = "no field z" if z is None else f"shape {z.shape}"
            print(f"{f}: field z: expected {q.size} finite numbers, found {found}", file=sys.stderr)
            raise SystemExit(2)
        out.append((f, z))
    return out


def _replay(stepper, policy, start, out, contacts, M, q, res, alts, before) -> list[dict]:
    """Step ``start`` again with each alternative ``z`` of the largest LCP (``M``, ``q``, whose
    shipped answer ``res`` gave ``out``), from the stepper's memory ``before`` the step and with
    its ``contacts``; print and return, per alternative, its residual and how far the motion
    moves (``dz``, ``dv`` m/s, ``dw`` rad/s, and the next configuration's ``dx`` m, ``dq``).
    The first alternative given is the shipped answer itself: its zeros show that the replay
    reproduces the step."""
    from reverse.step import dynamics
    from reverse.step.integration import backward_configuration

    rigid, dt = stepper.rigid, stepper.settings.dt
    ref_cfg = backward_configuration(out, rigid, dt)
    v_ref = np.concatenate([out.linear_velocity, out.angular_velocity], axis=1)
    tiny = np.finfo(float).tiny  # a scene at rest: relative changes print as huge, not fail
    scale_v = max(float(np.max(np.abs(v_ref[:, :3]))), tiny)
    scale_w = max(float(np.max(np.abs(v_ref[:, 3:]))), tiny)
    print(
        f"replay of step 1 (max|v| {scale_v:.3e} m/s, max|ω| {scale_w:.3e} rad/s, "
        f"max|z| {np.max(np.abs(res.z)):.3e}):"
    )
    solving = dynamics.solve_lcp
    rows = []
    for name, z in alts:

        def substitute(M2, q2, z=z, **kw):
            if q2.size == q.size and np.array_equal(M2, M) and np.array_equal(q2, q):
                w = M @ z + q
                r = lcp.lcp_residual(M, q, z)
                return lcp.LCPResult(z, w, "solved", 0, np.flatnonzero(z > 0), r, "", "cold")
            return solving(M2, q2, **kw)

        stepper.restore(before)
        dynamics.solve_lcp = substitute
        try:
            alt, _ = stepper.backward(start, policy, contacts=contacts)
        finally:
            dynamics.solve_lcp = solving
        cfg = backward_configuration(alt, rigid, dt)
        v = np.concatenate([alt.linear_velocity, alt.angular_velocity], axis=1)
        row = {
            "name": name,
            "residual": lcp.lcp_residual(M, q, z),
            "dz": float(np.max(np.abs(z - res.z))),
            "dv": float(np.max(np.abs(v[:, :3] - v_ref[:, :3]))),
            "dw": float(np.max(np.abs(v[:, 3:] - v_ref[:, 3:]))),
            "dx": float(np.max(np.abs(cfg.position - ref_cfg.position))),
            "dq": float(np.max(np.abs(cfg.orientation - ref_cfg.orientation))),
        }
        rows.append(row)
        print(
            f"  {name}: residual {row['residual']:.1e}, max|Δz| {row['dz']:.2e}; max|Δv| "
            f"{row['dv']:.2e} m/s ({row['dv'] / scale_v:.1e} of max), max|Δω| {row['dw']:.2e} "
            f"rad/s ({row['dw'] / scale_w:.1e}); next configuration max|Δx| {row['dx']:.2e} m, "
            f"max|Δq| {row['dq']:.2e}",
            flush=True,
        )
    return rows


def _timed(M, q, dense: bool):
    """One cold :func:`reverse.lcp.solve.solve_lcp`, optionally with the dense path forced; returns
    the result, wall and CPU seconds."""
    shipped = lcp.BLOCKED_MIN_ROWS
    if dense:
        lcp.BLOCKED_MIN_ROWS = q.size + 1
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        res = lcp.solve_lcp(M, q)
        return res, time.perf_counter() - t0, time.process_time() - c0
    finally:
        lcp.BLOCKED_MIN_ROWS = shipped


def run_stored(
    path: str, dense: bool = False, siconos: bool = False, siconos_timeout: float = 600.0
) -> None:
    """Re-solve the stored LCPs in sequence: cold, and warm from the previous basis; with
    ``dense``, each cold solve also with the dense path forced (interleaved); with ``siconos``,
    then each by Siconos' solvers (:func:`siconos_rows`)."""
    data = np.load(path)
    keys = sorted(int(k[1:]) for k in data.files if k.startswith("M"))
    _run_stored(data, keys, path, dense)
    if siconos:
        siconos_rows([(data[f"M{k}"], data[f"q{k}"]) for k in keys], keys, siconos_timeout)


def siconos_rows(problems, keys, timeout: float) -> None:
    """One row per stored LCP and Siconos solver (module docstring), or a line saying why none."""
    from benchmarks import _siconos

    if not _siconos.available():
        print("Siconos: no interpreter imports siconos.numerics; its rows are left out")
        return
    print_head(f"the same LCPs by Siconos numerics ({_siconos.interpreter()}, one solve)", HEAD)
    for name in _siconos.SOLVERS:
        rows = _siconos.solve_all(problems, name, 0.0, 1, timeout)
        for k, (M, q), (z, secs, info, iters) in zip(keys, problems, rows, strict=True):
            if info == "timeout":
                status, r = f"timeout ({timeout:g} s)", float("nan")
            elif z is None:
                status, r = f"no answer (info {info})", float("nan")
            else:
                r = lcp.lcp_residual(M, q, z)
                status = "solved" if r <= lcp.VERIFY_RTOL else f"unverified (info {info})"
            print(
                f"{k + 1:>5}{q.size:>7}{iters:>8}  {'sic-' + name:<15}{status:<23}"
                f"{secs:>9.3f}{'':>9}{'':>9}{r:>10.1e}",
                flush=True,
            )


def _run_stored(data, keys, path: str, dense: bool) -> None:
    """Our rows of :func:`run_stored`."""
    lcp.solve_lcp(np.eye(2), -np.ones(2))  # load (or compile) the kernel outside the timings
    print_head(f"stored LCPs of {path}: cold, then warm-started from the previous basis", HEAD)
    prev = None
    for k in keys:
        M, q = data[f"M{k}"], data[f"q{k}"]
        res, wall, cpu = _timed(M, q, False)
        print(_line(k + 1, res, wall, float("nan"), cpu), flush=True)
        if dense:
            ref, wall_d, cpu_d = _timed(M, q, True)
            line = _line(k + 1, ref, wall_d, float("nan"), cpu_d)
            print(line.replace(f"  {ref.start:<10}", f"  {'dense':<10}"), flush=True)
            same = np.array_equal(res.z, ref.z) and np.array_equal(res.basis, ref.basis)
            print(
                f"      CPU s: {cpu:.3f} as shipped, {cpu_d:.3f} dense; same z and basis to the "
                f"bit: {same}",
                flush=True,
            )
        if prev is not None and prev.size and prev.max() < q.size:
            t0 = time.perf_counter()
            res = lcp.solve_lcp(M, q, warm_start=prev)
            print(_line(k + 1, res, time.perf_counter() - t0, float("nan")), flush=True)
        prev = res.basis


#: Interior-point stop of the relaxation study: complementarity gap and residual of ``w = M̃z + q``
#: per row in the equilibrated units (``max|M̂| ≈ max|q̂| = 1``); 1e-13 is ten times the rounding
#: of the residual's own evaluation, so it stops where rounding does.
_IP_TOL = 1e-13
#: Interior-point iteration cap of the study (a monotone LCP takes 20–45 here).
_IP_ITERS = 80
#: Fraction of the step to the boundary an interior-point step takes (Mehrotra's usual 0.99).
_IP_STEP = 0.99
#: A relaxation answer's entry counts as positive above this share of its largest entry (the
#: interior point's iterates approach 0 as √(gap) ≈ 1e-7 of the largest).
_IP_ZERO = 1e-6


def _relaxed(M: np.ndarray):
    """``M̃`` of the relaxation (module docstring), the slack rows ``S`` and the others ``F``."""
    zero = np.flatnonzero(np.diag(M) == 0.0)
    S = zero[np.all(M[np.ix_(zero, zero)] == 0.0, axis=1)]  # rows with no slack-slack term
    F = np.setdiff1d(np.arange(M.shape[0]), S)
    Mr = M.copy()
    Mr[np.ix_(F, S)] = -M[np.ix_(S, F)].T
    return Mr, S, F


def _interior_point(Mr, q, S, F):
    """Mehrotra's predictor–corrector for the monotone LCP ``w = M̃z + q`` (equilibrated as our
    Lemke is; Newton systems reduced to the SPD block ``G + Z_F⁻¹W_F + Cᵀ(Z_S⁻¹W_S)⁻¹C`` of the
    non-slack rows). Returns ``z`` in the caller's units and the iterations."""
    d = lcp._equilibrate(Mr)
    Mh = Mr * d[:, None] * d[None, :]
    qh = d * q
    scale = float(np.max(np.abs(qh)))
    qh = qh / scale
    G = Mh[np.ix_(F, F)]
    G = 0.5 * (G + G.T)
    C = Mh[np.ix_(S, F)]
    n = q.size
    z, w = np.ones(n), np.ones(n)
    it = 0
    while it < _IP_ITERS:
        it += 1
        rp = Mh @ z + qh - w
        mu = float(z @ w) / n
        if mu < _IP_TOL and float(np.max(np.abs(rp))) < _IP_TOL:
            break
        ds = (w / z)[S]
        factor = scipy_linalg.cho_factor(G + np.diag((w / z)[F]) + C.T @ (C / ds[:, None]))

        def direction(rc, rp=rp, ds=ds, factor=factor, z=z):
            a = rc / z - rp
            dF = scipy_linalg.cho_solve(factor, a[F] + C.T @ (a[S] / ds))
            dz = np.empty(n)
            dz[F], dz[S] = dF, (a[S] - C @ dF) / ds
            return dz, Mh @ dz + rp

        def longest(v, dv):
            neg = dv < 0
            return min(1.0, float(np.min(-v[neg] / dv[neg]))) if neg.any() else 1.0

        dz, dw = direction(-z * w)
        a = min(longest(z, dz), longest(w, dw))
        sigma = (float((z + a * dz) @ (w + a * dw)) / n / mu) ** 3
        dz, dw = direction(sigma * mu - z * w - dz * dw)
        a = _IP_STEP * min(longest(z, dz), longest(w, dw))
        z, w = z + a * dz, w + a * dw
    return d * z * scale, it


def _guessed_basis(M, z, S, F):
    """A complementary basis guessed from a relaxation answer: every positive ``z`` of a normal
    or slack row, and of each opposite pair of friction rows (``M[i, F] = −M[j, F]``) the one
    carrying the net impulse."""
    big = _IP_ZERO * float(np.max(np.abs(z)))
    cone = M[np.ix_(F, S)] > 0  # the friction rows of each slack row's cone (its E column)
    basis = [int(s) for s in S if z[s] > big]
    friction = set(F[np.any(cone, axis=1)].tolist())
    basis += [int(i) for i in F if i not in friction and z[i] > big]
    for k in range(S.size):
        rows = F[cone[:, k]]
        done = set()
        for i in rows:
            if i in done:
                continue
            pair = [j for j in rows if j != i and np.allclose(M[i, F], -M[j, F])]
            j = pair[0] if pair else None
            net = z[i] - (z[j] if j is not None else 0.0)
            if abs(net) > big:
                basis.append(int(i) if net > 0 else int(j))
            done.update([i] if j is None else [i, j])
    return np.array(sorted(set(basis)), dtype=int)


def relaxation_rows(problems, keys) -> None:
    """The relaxation study's rows (module docstring) for each stored LCP."""
    for k, (M, q) in zip(keys, problems, strict=True):
        Mr, S, F = _relaxed(M)
        if not S.size:
            print(f"{k + 1:>5}{q.size:>7}  no slack rows: the LCP is its own relaxation")
            continue
        c0 = time.process_time()
        z, its = _interior_point(Mr, q, S, F)
        cpu = time.process_time() - c0
        big = _IP_ZERO * float(np.max(np.abs(z)))
        normal = M[np.ix_(S, F)] > 0  # each cone's normal row (its μ or ρ coefficient)
        slipping = sum(
            1 for c, s in enumerate(S) if z[s] > big and np.any(z[F[normal[c]]] > big)
        )  # fmt: skip
        print(
            f"{k + 1:>5}{q.size:>7}{its:>8}  {'relaxation':<10}{'monotone interior pt':<28}"
            f"{'':>9}{cpu:>9.3f}{'':>9}{lcp.lcp_residual(M, q, z):>10.1e}"
            f"   ({slipping} of {S.size} cones loaded and slipping)",
            flush=True,
        )
        offset = np.zeros_like(q)
        for rnd in range(3):  # the fixed point on the normal rows' offset μλ
            offset = (M - Mr) @ z
            z, its = _interior_point(Mr, q + offset, S, F)
            r = lcp.lcp_residual(M, q, z)
            print(f"{'':>12}{its:>8}  {'fixed pt ' + str(rnd + 1):<10}{'':<28}{'':>27}{r:>10.1e}")
        z, _ = _interior_point(Mr, q, S, F)
        w = Mr @ z + q
        for name, J in (("z>w", np.flatnonzero(z > w)), ("guessed", _guessed_basis(M, z, S, F))):
            t0, c0 = time.perf_counter(), time.process_time()
            res = lcp.solve_lcp(M, q, warm_start=J)
            t, c = time.perf_counter() - t0, time.process_time() - c0
            print(_line(k + 1, res, t, float("nan"), c) + f"   (start basis {name}, {J.size})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100, help="spheres (default 100)")
    ap.add_argument("--steps", type=int, default=5, help="backward steps (default 5)")
    ap.add_argument("--settle", type=float, default=3.0, help="settling time, s (default 3)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the drop-grid jitter")
    ap.add_argument("--save", help="store the intercepted LCPs in this .npz file")
    ap.add_argument("--load", help="re-solve the LCPs stored in this .npz file (no PyBullet)")
    ap.add_argument(
        "--dense", action="store_true", help="with --load: also each cold solve on the dense path"
    )
    ap.add_argument(
        "--siconos", action="store_true", help="with --load: also Siconos' solvers (if importable)"
    )
    ap.add_argument(
        "--siconos-timeout", type=float, default=600.0,
        help="seconds per Siconos solve (default 600)",
    )  # fmt: skip
    ap.add_argument(
        "--relaxation", action="store_true",
        help="with --load: the monotone-relaxation study (docs/studies/large-islands.md)",
    )  # fmt: skip
    ap.add_argument("--save-z", help="store step 1's answer z of the largest LCP in this .npz")
    ap.add_argument(
        "--replay-block", type=int, nargs="*", default=[],
        help="replay step 1 with the largest LCP solved at these UPDATE_BLOCK sizes",
    )  # fmt: skip
    ap.add_argument(
        "--replay-z", nargs="*", default=[], help="replay step 1 with the z of these .npz files"
    )
    args = ap.parse_args(argv)
    if args.load:
        run_stored(args.load, args.dense, args.siconos, args.siconos_timeout)
        if args.relaxation:
            data = np.load(args.load)
            keys = sorted(int(k[1:]) for k in data.files if k.startswith("M"))
            print_head("the monotone relaxation (docs/studies/large-islands.md)", HEAD)
            relaxation_rows([(data[f"M{k}"], data[f"q{k}"]) for k in keys], keys)
    else:
        run_scene_steps(
            args.n, args.steps, args.settle, args.seed, args.save, args.save_z,
            tuple(args.replay_block), tuple(args.replay_z),
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
