"""Figures and tables of docs/validation.md: the paper's two examples and a PyBullet case.

Ao, Hu & Mahadevan (2017), time-domain validation metrics:

- the simply supported beam (Eq. 29, Table 1): good and bad model at λ = 8 % and 16 %
  (Figs. 5-11 of the paper), the λ study (Figs. 12-13), the effect of the measurement noise;
- the mass-spring-damper chain of the Sandia challenge problem (Table 2, Eq. 34) on a stand-in
  beam (see :mod:`uncertainty.examples.validation`), Figs. 15-21;
- a PyBullet pendulum: model = ``workbench ensemble scenes/validation_pendulum.yaml``,
  experiments = ``workbench run`` of the same scene with other release angles (good) and with air
  drag (bad), plus measurement noise; validated with ``workbench validate`` on the files.

Regenerate (about 5 minutes on 2 cores)::

    python docs/validation_figures.py            # all three
    python docs/validation_figures.py beam       # or: chain, pendulum

It writes PNGs to docs/figures/validation/ and prints the numbers quoted in the doc. Every random
draw is seeded (constants below), so the output is reproducible.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
from figure_setup import REPO, plt  # noqa: E402  (the repository on sys.path, Agg)

from uncertainty.examples.validation import (  # noqa: E402
    BEAM_NOISE_STD_PAPER,
    BeamProblem,
    ChainProblem,
    beam_bias,
    beam_experiments,
    beam_model_chunks,
    chain_experiments,
    chain_model_chunks,
)
from uncertainty.validation import METRICS, streamed_reliability  # noqa: E402

OUT = REPO / "docs" / "figures" / "validation"
LAMBDAS = (0.08, 0.16)  # the paper's two thresholds
LAMBDA_STUDY = (0.04, 0.06, 0.08, 0.10, 0.12, 0.16, 0.20, 0.24)
LABEL = {
    "instantaneous": "instantaneous",
    "first_passage": "first-passage",
    "accumulated": "accumulated",
}

# beam
BEAM_TIME = np.linspace(0.0, 5.0, 501)  # s; dt = 0.01 s resolves ℓ_F = 1/8 s with 12 points
BEAM_M = 100_000  # the paper's 1e5 model realizations
BEAM_MODEL_SEED = 1
BEAM_EXP_SEED = 2017
BEAM_NOISE_STD = 0.001  # m, used for the figures: see docs/validation.md "What did not reproduce"
NOISE_STUDY = (0.1, 0.03, 0.01, 0.003, 0.001, 0.0)
# chain
CHAIN_TIME = np.arange(2001) * 5e-5  # s: dt = 5e-5 s (the 10th step is 0.0005 s), 0.1 s
CHAIN_M = 10_000
CHAIN_MODEL_SEED = 3
CHAIN_EXP_SEED = 2017
# pendulum
PENDULUM_N = 200
PENDULUM_SEED = 2017
PENDULUM_GOOD_THETA = (59.2, 60.5, 61.1)  # release angles of the three "real" runs, degrees
PENDULUM_DRAG = 0.5  # 1/m: the air drag the model leaves out (bad case)
PENDULUM_NOISE_STD = 0.002  # m, measurement noise on the tip position
PENDULUM_NOISE_SEED = 7
PENDULUM_EPSILON = 0.05  # m, absolute threshold on the tip x position


def _metric_grid(time, results: dict, title: str, out: Path, mark: float | None = None) -> None:
    """3 x len(results) panels: metric rows, threshold columns (like the paper's Figs. 6-11)."""
    cols = list(results)
    fig, axes = plt.subplots(3, len(cols), figsize=(4.2 * len(cols), 7.5), sharex=True)
    axes = np.atleast_2d(axes).reshape(3, len(cols))
    for c, key in enumerate(cols):
        res = results[key]
        for r, name in enumerate(METRICS):
            ax = axes[r, c]
            ax.plot(time, res.metric(name), lw=1.0, color=f"C{r}")
            ax.set_ylim(-0.02, 1.02)
            ax.grid(alpha=0.3)
            if mark is not None:
                ax.axvline(mark, color="0.5", lw=0.8, ls=":")
            if c == 0:
                ax.set_ylabel(f"{LABEL[name]} r(t)")
            if r == 0:
                ax.set_title(key, fontsize=10)
        axes[-1, c].set_xlabel("time [s]")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def _data_figure(time, model_rows, exps: dict, ylabel: str, out: Path) -> None:
    fig, axes = plt.subplots(1, len(exps), figsize=(5.5 * len(exps), 3.6), sharey=True)
    for ax, (title, values) in zip(np.atleast_1d(axes), exps.items(), strict=True):
        ax.plot(time, model_rows.T, color="0.65", lw=0.4, alpha=0.6)
        ax.plot([], [], color="0.65", label=f"model ({len(model_rows)} of the realizations)")
        for j, row in enumerate(values):
            ax.plot(time, row, lw=1.0, color=f"C{j + 1}", label=f"experiment {j + 1}")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("time [s]")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    np.atleast_1d(axes)[0].set_ylabel(ylabel)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def _row(res, t, times=()) -> str:
    cells = [f"{res.metric(m)[-1]:.4f}" for m in METRICS]
    cells += [f"{res.first_passage[np.searchsorted(t, s)]:.4f}" for s in times]
    cells.append(f"{res.instantaneous.mean():.4f}")
    return " | ".join(cells)


def _lambda_case(model, case, exps, t, prefix, times, title, out, mark=None) -> None:
    """One model against one set of experiments at each relative threshold λ of LAMBDAS: a table
    row per λ (threshold column ``prefix`` + λ), then the metric grid of all of them."""
    results = {}
    for lam in LAMBDAS:
        res = streamed_reliability(model(), exps, lam=lam)
        results[f"λ = {100 * lam:g} %"] = res
        print(f"| {case} | {prefix}{100 * lam:g} % | {_row(res, t, times)} |")
    _metric_grid(t, results, title, out, mark=mark)


# ---------------------------------------------------------------------------------------- beam
def beam() -> None:
    t = BEAM_TIME
    problem = BeamProblem.build(t)
    print(
        f"beam: KL terms F {problem.F.n_terms} (variance error {problem.F.truncation_error:.1e}),"
        f" q {problem.q.n_terms} ({problem.q.truncation_error:.1e})"
    )

    def model():
        return beam_model_chunks(problem, BEAM_M, BEAM_MODEL_SEED)

    good, bad = beam_experiments(problem, np.random.default_rng(BEAM_EXP_SEED), 3, BEAM_NOISE_STD)
    first = next(beam_model_chunks(problem, 60, BEAM_MODEL_SEED))
    _data_figure(
        t,
        first,
        {"good model: experiments = model + noise": good, "bad model: + bias of Eq. (32)": bad},
        "mid-span deflection [m]",
        OUT / "beam_data.png",
    )
    print(
        "\n| case | λ | r_inst(5 s) | r_fp(5 s) | r_acc(5 s) | r_fp(0.99 s) | r_fp(1 s) "
        "| r_fp(2 s) | mean r_inst |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for case, exps in (("good", good), ("bad", bad)):
        _lambda_case(
            model,
            case,
            exps,
            t,
            "",
            (0.99, 1.0, 2.0),
            f"beam, {case} model: M = {BEAM_M}, 3 experiments, noise std {BEAM_NOISE_STD} m",
            OUT / f"beam_{case}_metrics.png",
            mark=1.0 if case == "bad" else None,
        )
    # the λ study (Figs. 12-13), good model
    study = {lam: streamed_reliability(model(), good, lam=lam) for lam in LAMBDA_STUDY}
    print("\n| λ | " + " | ".join(f"{100 * lam:g} %" for lam in LAMBDA_STUDY) + " |")
    print("|---|" + "---|" * len(LAMBDA_STUDY))
    for name in ("first_passage", "accumulated"):
        fig, ax = plt.subplots(figsize=(6.5, 4.0))
        for lam, res in study.items():
            ax.plot(t, res.metric(name), lw=1.0, label=f"λ = {100 * lam:g} %")
        ax.set_xlabel("time [s]")
        ax.set_ylabel(f"{LABEL[name]} r(t)")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, ncol=2)
        ax.set_title(f"beam, good model: {LABEL[name]} reliability vs threshold", fontsize=10)
        fig.tight_layout()
        fig.savefig(OUT / f"beam_lambda_{name}.png", dpi=100)
        plt.close(fig)
        cells = " | ".join(f"{res.metric(name)[-1]:.3f}" for res in study.values())
        print(f"| r_{name}(5 s) | {cells} |")
    # the measurement noise: the printed σ = 0.1 m and smaller
    print(
        "\n| noise std [m] | good r_fp(5 s) | good r_acc(5 s) | good mean r_inst "
        "| bad r_fp(5 s) | bad r_acc(5 s) |"
    )
    print("|---|---|---|---|---|---|")
    paper = {}
    for sigma in NOISE_STUDY:
        g, b = beam_experiments(problem, np.random.default_rng(BEAM_EXP_SEED), 3, sigma)
        rg = streamed_reliability(model(), g, lam=0.16)
        rb = streamed_reliability(model(), b, lam=0.16)
        print(
            f"| {sigma:g} | {rg.first_passage[-1]:.4f} | {rg.accumulated[-1]:.4f} | "
            f"{rg.instantaneous.mean():.4f} | {rb.first_passage[-1]:.4f} | "
            f"{rb.accumulated[-1]:.4f} |"
        )
        if sigma == BEAM_NOISE_STD_PAPER:
            paper = {"good, λ = 16 %": rg, "bad, λ = 16 %": rb}
            first_zero = t[np.flatnonzero(rg.first_passage == 0.0)[0]]
            print(f"  (σ = {sigma} m: good-model first passage is 0 from t = {first_zero:g} s)")
    _metric_grid(
        t,
        paper,
        f"beam with the printed noise std {BEAM_NOISE_STD_PAPER} m (28 % of the mean deflection)",
        OUT / "beam_paper_noise.png",
        mark=1.0,
    )
    mean_y = np.mean(first)
    print(f"  mean deflection {mean_y:.3f} m; bias amplitude / mean = {0.08 / mean_y:.2f}")
    print(f"  bias at t = 1 s: {beam_bias(np.array([1.0]))[0]:.4f} m")


# --------------------------------------------------------------------------------------- chain
def chain() -> None:
    t = CHAIN_TIME
    problem = ChainProblem(t)

    def model():
        return chain_model_chunks(problem, CHAIN_M, CHAIN_MODEL_SEED)

    good, bad = chain_experiments(problem, np.random.default_rng(CHAIN_EXP_SEED), 3)
    first = next(chain_model_chunks(problem, 40, CHAIN_MODEL_SEED))
    print(
        f"\nchain: peak |a3| of the model {np.max(np.abs(first)):.0f}, "
        f"mean |a3| {np.mean(np.abs(first)):.0f}"
    )
    _data_figure(
        t,
        first,
        {"good model: experiments = model + noise": good, "bad model: + 500 sin(100 t)": bad},
        "acceleration of m3",
        OUT / "chain_data.png",
    )
    print(
        "\n| case | threshold | r_inst(0.1 s) | r_fp(0.1 s) | r_acc(0.1 s) | r_fp(0.0005 s) "
        "| r_fp(0.01 s) | mean r_inst |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for case, exps in (("good", good), ("bad", bad)):
        _lambda_case(
            model,
            case,
            exps,
            t,
            "λ = ",
            (0.0005, 0.01),
            f"chain, {case} model: M = {CHAIN_M}, 3 experiments",
            OUT / f"chain_{case}_metrics.png",
        )
        # a threshold that does not vanish at zero crossings: λ times the experiment's peak
        results = {}
        for lam in LAMBDAS:
            eps = lam * np.max(np.abs(exps))
            res = streamed_reliability(model(), exps, epsilon=eps)
            results[f"ε = {100 * lam:g} % of peak"] = res
            print(f"| {case} | ε = {100 * lam:g} % · max|Y_D| | {_row(res, t, (0.0005, 0.01))} |")
        _metric_grid(
            t,
            results,
            f"chain, {case} model, absolute threshold ε = λ max|Y_D|",
            OUT / f"chain_{case}_peak_threshold.png",
        )


# ------------------------------------------------------------------------------------ pendulum
def _wb(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "workbench.cli", *map(str, args)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {r.stderr.strip()}")
    return r


def _noisy_copy(src: Path, dst: Path, rng: np.random.Generator) -> None:
    from workbench.store import TrajectoryStore, write_trajectory

    with TrajectoryStore.open(src) as store:
        traj = store.read(0)
        text, js = store.attrs.get("scene", ""), store.attrs.get("scene_json", "{}")
    tip = traj.observers["tip"] + PENDULUM_NOISE_STD * rng.standard_normal(
        traj.observers["tip"].shape
    )
    write_trajectory(
        dst, replace(traj, observers={**traj.observers, "tip": tip}), scene_text=text, scene_json=js
    )


def pendulum(workdir: Path) -> None:
    scene = "validation_pendulum"
    model = workdir / "model.h5"
    _wb(
        "ensemble",
        scene,
        "-n",
        PENDULUM_N,
        "--seed",
        PENDULUM_SEED,
        "--workers",
        2,
        "-q",
        "-o",
        model,
    )
    rng = np.random.default_rng(PENDULUM_NOISE_SEED)
    sets = {"good": [], "bad": []}
    for j, theta in enumerate(PENDULUM_GOOD_THETA):
        for case, extra in (("good", ()), ("bad", ("--set", f"c_drag={PENDULUM_DRAG}"))):
            raw = workdir / f"{case}{j}_raw.h5"
            _wb("run", scene, "--set", f"theta0={theta}", *extra, "-q", "-o", raw)
            noisy = workdir / f"{case}{j + 1}.h5"
            _noisy_copy(raw, noisy, rng)
            sets[case].append(noisy)
    print(f"\npendulum: {PENDULUM_N} realizations, ε = {PENDULUM_EPSILON} m on tip x")
    print("\n| case | r_inst(4 s) | r_fp(4 s) | r_acc(4 s) | r_fp(1 s) | r_fp(2 s) | mean r_inst |")
    print("|---|---|---|---|---|---|---|")
    for case, files in sets.items():
        out = OUT / f"pendulum_{case}.png"
        r = _wb(
            "validate",
            "--model",
            model,
            "--experiments",
            *files,
            "--observer",
            "tip",
            "--component",
            "x",
            "--epsilon",
            PENDULUM_EPSILON,
            "--plot",
            out,
            "--json",
        )
        info = json.loads(r.stdout)
        t = np.array(info["time"])
        m = {k: np.array(v) for k, v in info["metrics"].items()}
        fp = m["first_passage"]
        print(
            f"| {case} | {m['instantaneous'][-1]:.3f} | {fp[-1]:.3f} | {m['accumulated'][-1]:.3f}"
            f" | {fp[np.searchsorted(t, 1.0)]:.3f} | {fp[np.searchsorted(t, 2.0)]:.3f} | "
            f"{m['instantaneous'].mean():.3f} |"
        )


def main(argv: list[str]) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    which = set(argv) or {"beam", "chain", "pendulum"}
    if "beam" in which:
        beam()
    if "chain" in which:
        chain()
    if "pendulum" in which:
        with tempfile.TemporaryDirectory() as tmp:
            pendulum(Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
