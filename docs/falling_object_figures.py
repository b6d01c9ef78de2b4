"""Figures and tables of docs/falling_object.md (the falling-object inference and design document).

Regenerate (about 70 s on 2 cores)::

    python docs/falling_object_figures.py

It writes PNGs to docs/figures/falling_object/ and prints the markdown tables of the page: the
examples' MAP, Laplace and exact posteriors (σ = 0.3 column of Table 1), MCMC against the exact
grid, the PyBullet model against the analytic one, and the optimal designs of Figs. 15-17.
Every random number comes from fixed seeds, so reruns print the same tables.
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np
from figure_setup import REPO, plt  # noqa: E402  (the repository on sys.path, Agg)

from uncertainty.bayes import (  # noqa: E402
    find_map,
    grid_posterior,
    grid_ranges,
    laplace,
    sample_posterior,
)
from uncertainty.design import Sensitivity, entropy_of_batch, optimal_times  # noqa: E402
from uncertainty.examples.falling_object import FALLING_OBJECT, position  # noqa: E402
from workbench.analysis.inference import build_posterior, load_spec, run_inference  # noqa: E402
from workbench.figures.inference import plot_pairs  # noqa: E402
from workbench.figures.labels import (  # noqa: E402
    DIMENSIONLESS,
    axis_label,
    density_label,
    unit_of,
)

OUT = REPO / "docs" / "figures" / "falling_object"
SPECS = REPO / "specs"
EX = {k: SPECS / f"falling_object_example{k}.yaml" for k in (1, 2, 3)}
NOMINAL = {"g": 9.81, "c": 0.106, "t0": 1.0}
LEVELS = [math.exp(-0.5 * k * k) for k in (3, 2, 1)]  # 1, 2, 3 std of a Gaussian
ETAS_15 = [0.001, 0.1, 1, 10, 100, 1000]
ETAS_16 = [0.001, 0.002, 0.005, 0.01, 0.1, 1, 10, 100, 1000]
LAMBDA = 2.0
SEED = 2024
#: Unit of the information entropy (Eq. 16): a natural logarithm, so nats (as workbench design).
ENTROPY = "nat"
#: Unit of a count of measurements N on an axis (as workbench design's figures).
COUNT = "count"


def save(fig, name: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT / name, dpi=100, bbox_inches="tight")
    plt.close(fig)
    print(f"<!-- wrote docs/figures/falling_object/{name} -->")


def gauss(x, m, s):
    return np.exp(-0.5 * ((x - m) / s) ** 2) / (math.sqrt(2 * math.pi) * s)


def label(spec, name: str) -> str:
    """``name [unit]`` with the unit the spec declares (``[?]`` if none)."""
    return axis_label(name, unit_of(name, spec.units))


def density(spec, name: str) -> str:
    """The label of a posterior density of ``name``: its unit is the inverse of name's."""
    return density_label(unit_of(name, spec.units), "posterior density")


# ------------------------------------------------------------------------------- Example 1
def example1() -> dict:
    print("\n### Example 1: c only (g = 9.81, t0 = 1, σ = 0.3)\n")
    print("| case | times (s) | MAP ĉ | Laplace std | exact mean | exact std |")
    print("|---|---|---|---|---|---|")
    fit, (axs) = plt.subplots(2, 3, figsize=(13, 7))
    pdf, pax = plt.subplots(2, 3, figsize=(13, 7))
    res = {}
    tt = np.linspace(0.9, 5.2, 300)
    for k, case in enumerate(range(1, 7)):
        r = run_inference(load_spec(EX[1], {"case": case}))
        res[case] = r
        s = r.spec
        ex = r.exact
        times = ", ".join(f"{t:.2f}" for t in s.x) if s.x.size <= 5 else "all 20"
        print(
            f"| {case} | {times} | {r.map.x[0]:.4f} | {r.laplace.std[0]:.5f} | "
            f"{ex.mean[0]:.4f} | {ex.std[0]:.5f} |"
        )
        ax = axs.ravel()[k]
        ax.plot(tt, position(tt, 9.81, 0.106, 1.0), "C2--", label="c_nom = 0.106")
        ax.plot(tt, position(tt, 9.81, r.map.x[0], 1.0), "C0-", label=f"ĉ = {r.map.x[0]:.4f}")
        ax.errorbar(s.x, s.y, yerr=0.3, fmt="ko", ms=4, capsize=2)
        ax.set_title(f"case {case} (N = {s.x.size})")
        ax.set_xlabel(label(s, s.x_name))
        ax.set_ylabel(axis_label("distance fallen z", unit_of(s.y_name, s.units)))
        ax.legend(fontsize=8)
        ax = pax.ravel()[k]
        ax.plot(ex.axes[0], ex.density, "k-", label="exact (Eq. 8)")
        ax.plot(
            ex.axes[0],
            gauss(ex.axes[0], r.map.x[0], r.laplace.std[0]),
            "C0--",
            label="Laplace (Eq. 13)",
        )
        ax.set_title(f"case {case} (N = {s.x.size})")
        ax.set_xlabel(label(s, "c"))
        ax.set_ylabel(density(s, "c"))
        ax.legend(fontsize=8)
    fit.suptitle("Example 1: nominal and MAP predictions (Figs. 5-6)")
    fit.tight_layout()
    save(fit, "example1_fits.png")
    pdf.suptitle("Example 1: Laplace vs exact posterior of c (Figs. 7-8)")
    pdf.tight_layout()
    save(pdf, "example1_posteriors.png")
    return res


# ------------------------------------------------------------------------------- Example 2
def example2(ex1: dict) -> dict:
    print("\n### Example 2: c and t0 (g = 9.81, σ = 0.3); Table 2\n")
    print(
        "| case | ĉ | t̂0 | ρ(c, t0) | document ĉ, t̂0, \\|ρ\\| "
        "| exact mean c, t0 | exact std c, t0 |"
    )
    print("|---|---|---|---|---|---|---|")
    table2 = {
        2: (-0.0471, 1.1000, 0.9961),
        3: (0.1054, 1.0004, 0.7673),
        4: (0.1065, 0.9936, 0.6886),
        5: (0.2393, 0.7699, 0.9742),
        6: (0.1087, 0.9559, 0.9763),
    }
    fig, axs = plt.subplots(2, 3, figsize=(13, 8))
    res = {}
    for k, case in enumerate(range(2, 7)):
        r = run_inference(load_spec(EX[2], {"case": case}))
        res[case] = r
        ex, lap = r.exact, r.laplace
        doc = table2[case]
        print(
            f"| {case} | {r.map.x[0]:.4f} | {r.map.x[1]:.4f} | {lap.corr[0, 1]:.4f} | "
            f"{doc[0]:.4f}, {doc[1]:.4f}, {doc[2]:.4f} | {ex.mean[0]:.6f}, {ex.mean[1]:.6f} | "
            f"{ex.std[0]:.5f}, {ex.std[1]:.5f} |"
        )
        ax = axs.ravel()[k]  # cases 2-6 in panels 0-4, the legend in panel 5
        X, Y = np.meshgrid(*ex.axes, indexing="ij")
        ax.contour(X, Y, ex.density / ex.density.max(), levels=LEVELS, colors="k")
        P = np.column_stack([X.ravel(), Y.ravel()])
        lg = lap.log_density(P).reshape(X.shape)
        ax.contour(X, Y, np.exp(lg - lg.max()), levels=LEVELS, colors="C0", linestyles="--")
        ax.plot(*r.map.x, "C3+", ms=10)
        ax.set_title(f"case {case} (N = {r.spec.x.size}), ρ = {lap.corr[0, 1]:.4f}")
        ax.set_xlabel(label(r.spec, "c"))
        ax.set_ylabel(label(r.spec, "t0"))
    ax = axs.ravel()[5]
    ax.plot([], [], "k-", label="exact (Eq. 8)")
    ax.plot([], [], "C0--", label="Laplace (Eq. 14)")
    ax.legend(loc="center")
    ax.axis("off")
    fig.suptitle("Example 2: posterior contours at 1, 2, 3 Gaussian std (Figs. 9-10)")
    fig.tight_layout()
    save(fig, "example2_contours.png")
    # marginals of c and t0, cases 3 and 4, with Example 1's c (the document's second Fig. 7)
    fig, axs = plt.subplots(2, 2, figsize=(11, 7))
    for row, case in enumerate((3, 4)):
        r, r1 = res[case], ex1[case]
        for col, name in enumerate(("c", "t0")):
            ax = axs[row, col]
            ex = r.exact
            x = ex.axes[col]
            ax.plot(x, ex.marginals[col], "k-", label="Ex. 2 exact marginal")
            ax.plot(x, gauss(x, r.map.x[col], r.laplace.std[col]), "C0--", label="Ex. 2 Laplace")
            if name == "c":
                ax.plot(x, gauss(x, r1.map.x[0], r1.laplace.std[0]), "C1:", label="Ex. 1 Laplace")
            ax.set_title(f"case {case}: p({name} | D)")
            ax.set_xlabel(label(r.spec, name))
            ax.set_ylabel(density(r.spec, name))
            ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, "example2_marginals.png")
    return res


# ------------------------------------------------------------------------------- Example 3
def example3(ex1: dict, ex2: dict) -> None:
    print("\n### Example 3: g, c, t0 and σ (case 3, N = 5); Tables 3, 5, 6\n")
    spec = load_spec(EX[3], {"case": 3})
    post = build_posterior(spec)
    mp = find_map(post, spec.starts)
    lap = laplace(post, mp.x)
    names = mp.names
    print(
        f"MAP converged: {mp.converged}, |∇L| = {mp.gradient_norm:.2e}, "
        f"Newton decrement {mp.newton_decrement:.2e}, {mp.evaluations['evaluations']} model "
        "evaluations\n"
    )
    print("| | g | c | t0 | σ |")
    print("|---|---|---|---|---|")
    print("| MAP (this code) | " + " | ".join(f"{v:.5f}" for v in mp.x) + " |")
    print("| Laplace std | " + " | ".join(f"{v:.5f}" for v in lap.std) + " |")
    t3 = np.array([8.7529, 0.0917, 0.9475, 0.0946])
    print("| Table 3 (document) | " + " | ".join(f"{v:.4f}" for v in t3) + " |")
    g3 = post.gradient(t3)
    print(
        f"\nAt the document's Table 3 point L is {post.neg_log_posterior(t3) - mp.value:.2e} "
        f"above the optimum and |∇L| = {np.linalg.norm(g3):.3g}: an early-stopped optimum.\n"
    )
    pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    doc5 = [0.9876, 0.9497, 0.0206, 0.9004, 0.0203, 0.0197]
    c3 = laplace(post, t3).corr
    print("| | " + " | ".join(f"ρ({names[i]}, {names[j]})" for i, j in pairs) + " |")
    print("|---|" + "---|" * len(pairs))
    print("| at the optimum | " + " | ".join(f"{lap.corr[i, j]:.4f}" for i, j in pairs) + " |")
    print("| at Table 3's point | " + " | ".join(f"{c3[i, j]:.4f}" for i, j in pairs) + " |")
    print("| Table 5 (document) | " + " | ".join(f"{v:.4f}" for v in doc5) + " |")
    t0 = time.perf_counter()
    mc = sample_posterior(post, mp.x, np.random.default_rng(SEED), covariance=lap.covariance)
    wall = time.perf_counter() - t0
    print(
        f"\nMCMC (emcee, 32 walkers, seed {SEED}): {mc.message}; {mc.chain.shape[0]} steps in "
        f"{wall:.0f} s, acceptance {mc.acceptance:.2f}\n"
    )
    print("| | " + " | ".join(names) + " |")
    print("|---|---|---|---|---|")
    print(
        "| MCMC mean ± se | "
        + " | ".join(f"{m:.5f} ± {s:.5f}" for m, s in zip(mc.mean, mc.se_mean, strict=True))
        + " |"
    )
    print(
        "| MCMC std ± se | "
        + " | ".join(f"{m:.5f} ± {s:.5f}" for m, s in zip(mc.std, mc.se_std, strict=True))
        + " |"
    )
    print("| τ (steps) | " + " | ".join(f"{v:.1f}" for v in mc.tau) + " |")
    # Table 6: ĉ for N = 5 by inference case
    print("\n| inference case | IF1 (c) | IF2 (c, t0) | IF3 (g, c, t0, σ) |")
    print("|---|---|---|---|")
    print(f"| ĉ (this code) | {ex1[3].map.x[0]:.4f} | {ex2[3].map.x[0]:.4f} | {mp.x[1]:.4f} |")
    print("| ĉ (Table 6) | 0.1054 | 0.1054 | 0.0917 |")

    class _R:  # the result shape plot_pairs reads
        pass

    r = _R()
    r.laplace, r.map, r.exact, r.exact_method, r.spec = lap, mp, mc, "mcmc", spec
    plot_pairs(
        r,
        OUT / "example3_pairs.png",
        title="Example 3, case 3: Laplace 1-2-3 std ellipses and MCMC samples (Fig. 12)",
        units=spec.units,
    )
    print("<!-- wrote docs/figures/falling_object/example3_pairs.png -->")
    # Fig. 13/14: (c, t0) marginal of the 4-parameter posterior vs Example 2; c and t0 marginals
    r2, r1 = ex2[3], ex1[3]
    fig, axs = plt.subplots(1, 3, figsize=(15, 4.3))
    ax = axs[0]
    ex = r2.exact
    X, Y = np.meshgrid(*ex.axes, indexing="ij")
    ax.contour(X, Y, ex.density / ex.density.max(), levels=LEVELS, colors="k")
    sub = lap.covariance[np.ix_([1, 2], [1, 2])]
    for cov, mean, style in ((r2.laplace.covariance, r2.map.x, "C0--"), (sub, mp.x[[1, 2]], "C3-")):
        Pi = np.linalg.inv(cov)
        d0, d1 = X - mean[0], Y - mean[1]
        q = Pi[0, 0] * d0**2 + 2 * Pi[0, 1] * d0 * d1 + Pi[1, 1] * d1**2
        ax.contour(X, Y, np.exp(-0.5 * q), levels=LEVELS, colors=style[:2], linestyles=style[2:])
    ax.plot([], [], "k-", label="Ex. 2 exact")
    ax.plot([], [], "C0--", label="Ex. 2 Laplace")
    ax.plot([], [], "C3-", label="Ex. 3 Laplace marginal")
    ax.set_xlabel(label(spec, "c"))
    ax.set_ylabel(label(spec, "t0"))
    ax.legend(fontsize=8)
    ax.set_title("p(c, t0 | D), case 3 (Fig. 13)")
    for col, (name, j2, j3) in enumerate((("c", 0, 1), ("t0", 1, 2)), start=1):
        ax = axs[col]
        lo = min(mp.x[j3] - 4 * lap.std[j3], r2.map.x[j2] - 4 * r2.laplace.std[j2])
        hi = max(mp.x[j3] + 4 * lap.std[j3], r2.map.x[j2] + 4 * r2.laplace.std[j2])
        x = np.linspace(lo, hi, 400)
        ax.plot(x, gauss(x, mp.x[j3], lap.std[j3]), "C3-", label="IF3 Laplace")
        v = mc.samples[:, j3]
        w = (hi - lo) / 60  # bins over all samples (so the density is right), shown on [lo, hi]
        ax.hist(
            v, bins=np.arange(v.min(), v.max() + w, w), density=True, color="0.8", label="IF3 MCMC"
        )
        ax.set_xlim(lo, hi)
        ax.plot(x, gauss(x, r2.map.x[j2], r2.laplace.std[j2]), "C0--", label="IF2 Laplace")
        if name == "c":
            ax.plot(x, gauss(x, r1.map.x[0], r1.laplace.std[0]), "C1:", label="IF1 Laplace")
        ax.set_xlabel(label(spec, name))
        ax.set_ylabel(density(spec, name))
        ax.set_title(f"p({name} | D), case 3 (Fig. 14)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, "example3_marginals.png")


# --------------------------------------------------------------------------- MCMC vs grid
def mcmc_check() -> None:
    print("\n### emcee against the exact grid (Example 2, case 4)\n")
    post = build_posterior(load_spec(EX[2], {"case": 4}))
    mp = find_map(post, [[0.106, 1.0]])
    lap = laplace(post, mp.x)
    grid = grid_posterior(post, grid_ranges(post, mp.x, lap))
    mc = sample_posterior(post, mp.x, np.random.default_rng(SEED), covariance=lap.covariance)
    print(
        f"{mc.message}; τ = {mc.tau[0]:.1f}, {mc.tau[1]:.1f} steps; n_eff = "
        f"{mc.n_eff[0]:.0f}, {mc.n_eff[1]:.0f}\n"
    )
    print("| | grid | MCMC | MC se | (MCMC − grid)/se |")
    print("|---|---|---|---|---|")
    for i, n in enumerate(mp.names):
        print(
            f"| mean {n} | {grid.mean[i]:.6f} | {mc.mean[i]:.6f} | {mc.se_mean[i]:.2e} | "
            f"{(mc.mean[i] - grid.mean[i]) / mc.se_mean[i]:+.2f} |"
        )
        print(
            f"| std {n} | {grid.std[i]:.6f} | {mc.std[i]:.6f} | {mc.se_std[i]:.2e} | "
            f"{(mc.std[i] - grid.std[i]) / mc.se_std[i]:+.2f} |"
        )


# ------------------------------------------------------------------------------- PyBullet
def pybullet_check() -> None:
    print("\n### PyBullet model against the analytic one (Example 2, case 4)\n")
    analytic = build_posterior(load_spec(EX[2], {"case": 4}))
    a = find_map(analytic, [[0.106, 1.0]])
    al = laplace(analytic, a.x)
    print("| model | dt (s) | ĉ | t̂0 | Δc/c | Δt0/t0 | std c | std t0 | model runs | wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(
        f"| analytic (Eq. 4) | - | {a.x[0]:.6f} | {a.x[1]:.6f} | - | - | {al.std[0]:.6f} | "
        f"{al.std[1]:.6f} | - | - |"
    )
    for dt in (1e-2, 1e-3, 1e-4):
        spec = load_spec(EX[2], {"case": 4, "model": "pybullet"})
        spec.model = spec.model.model_copy(update={"dt": dt})
        post = build_posterior(spec)
        t0 = time.perf_counter()
        p = find_map(post, [a.x])
        lap = laplace(post, p.x)
        wall = time.perf_counter() - t0
        runs = post.model.model.n_runs
        post.model.model.close()
        rel = (p.x - a.x) / a.x
        print(
            f"| PyBullet | {dt:g} | {p.x[0]:.6f} | {p.x[1]:.6f} | {rel[0]:+.2e} | {rel[1]:+.2e} | "
            f"{lap.std[0]:.6f} | {lap.std[1]:.6f} | {runs} | {wall:.1f} |"
        )


# ------------------------------------------------------------------------------- design
def design() -> None:
    print("\n### Optimal design (θ0 = (9.81, 0.106, 1), λ = 2 s, t ∈ [1, 20] s)\n")
    rng = np.random.default_rng(SEED)
    params = ("g", "c", "t0")
    t = np.linspace(1.0, 20.0, 1901)
    fig15, ax15 = plt.subplots(1, 3, figsize=(15, 4))
    print("Single measurement (N = 1), minimum of the entropy over a 0.01 s scan:\n")
    print("| η | " + " | ".join(f"t* for {p} alone" for p in params) + " |")
    print("|---|---|---|---|")
    best = {}
    for k, p in enumerate(params):
        s = Sensitivity(FALLING_OBJECT, NOMINAL, (p,))
        for eta in ETAS_15:
            e = entropy_of_batch(t[1:, None], s, 1.0, eta, LAMBDA)
            ax15[k].plot(t[1:], e, label=f"η = {eta:g}")
            best[(p, eta)] = t[1:][np.argmin(e)]
        ax15[k].set_title(f"{p} is the only parameter")
        ax15[k].set_xlabel(axis_label("measurement time t", "s"))
        ax15[k].set_ylabel(axis_label("information entropy (Eq. 16)", ENTROPY))
        ax15[k].legend(fontsize=7)
    for eta in ETAS_15:
        print(f"| {eta:g} | " + " | ".join(f"{best[(p, eta)]:.2f}" for p in params) + " |")
    fig15.suptitle("Entropy of one measurement against its time (Fig. 15)")
    fig15.tight_layout()
    save(fig15, "design_n1_entropy.png")
    # Fig. 16: N = 2 against η
    fig16, ax16 = plt.subplots(1, 3, figsize=(15, 4))
    print("\nTwo measurements (N = 2) against η, λ = 2 s (Fig. 16): t1, t2 (s)\n")
    print("| η | " + " | ".join(f"{p} alone" for p in params) + " |")
    print("|---|---|---|---|")
    rows = {eta: [] for eta in ETAS_16}
    for k, p in enumerate(params):
        s = Sensitivity(FALLING_OBJECT, NOMINAL, (p,))
        T = []
        for eta in ETAS_16:
            r = optimal_times(s, 2, rng, eta=eta, correlation_length=LAMBDA)
            T.append(r.times)
            flag = "" if r.converged else " (not confirmed)"
            rows[eta].append(f"{r.times[0]:.3f}, {r.times[1]:.3f}{flag}")
        T = np.array(T)
        ax16[k].semilogx(ETAS_16, T[:, 0], "o-", label="t1")
        ax16[k].semilogx(ETAS_16, T[:, 1], "s-", label="t2")
        ax16[k].set_title(f"{p} is the only parameter")
        ax16[k].set_xlabel(axis_label("η = σ2/σ1", DIMENSIONLESS))
        ax16[k].set_ylabel(axis_label("optimal measurement time", "s"))
        ax16[k].legend()
    for eta in ETAS_16:
        print(f"| {eta:g} | " + " | ".join(rows[eta]) + " |")
    fig16.suptitle("Optimal times of two measurements against η, λ = 2 s (Fig. 16)")
    fig16.tight_layout()
    save(fig16, "design_n2_vs_eta.png")
    # Fig. 17: N = 1..10 at η = 1
    fig17, ax17 = plt.subplots(2, 3, figsize=(15, 8))
    print("\nN = 1 ... 10 measurements, η = 1, λ = 2 s (Fig. 17)\n")
    print("| θ | N | minimum entropy | optimal times (s) | confirmed |")
    print("|---|---|---|---|---|")
    for k, p in enumerate(params):
        s = Sensitivity(FALLING_OBJECT, NOMINAL, (p,))
        ent = []
        for n in range(1, 11):
            r = optimal_times(s, n, rng, eta=1.0, correlation_length=LAMBDA)
            ent.append(r.entropy)
            ax17[0, k].plot(r.times, [n] * n, "o", color="C0", ms=4)
            times = ", ".join(f"{v:.2f}" for v in r.times)
            print(f"| {p} | {n} | {r.entropy:.4f} | {times} | {'yes' if r.converged else 'no'} |")
        ax17[0, k].set_title(f"{p} is the only parameter")
        ax17[0, k].set_xlabel(axis_label("optimal measurement times", "s"))
        ax17[0, k].set_ylabel(axis_label("number of measurements N", COUNT))
        ax17[0, k].set_xlim(0.5, 20.5)
        ax17[1, k].plot(range(1, 11), ent, "o-")
        ax17[1, k].set_xlabel(axis_label("number of measurements N", COUNT))
        ax17[1, k].set_ylabel(axis_label("minimum information entropy", ENTROPY))
    fig17.suptitle(
        "Optimal times for N = 1 ... 10 and the minimum entropy, η = 1, λ = 2 s (Fig. 17)"
    )
    fig17.tight_layout()
    save(fig17, "design_n1_to_10.png")
    # invariance to σ1
    s = Sensitivity(FALLING_OBJECT, NOMINAL, ("c",))
    a = optimal_times(
        s, 3, np.random.default_rng(1), sigma1=1.0, eta=1.0, correlation_length=LAMBDA
    )
    b = optimal_times(
        s, 3, np.random.default_rng(1), sigma1=0.01, eta=1.0, correlation_length=LAMBDA
    )
    print(
        f"\nσ1 = 1 and σ1 = 0.01, c alone, N = 3, η = 1: times {a.times.round(4)} and "
        f"{b.times.round(4)}; entropy difference {b.entropy - a.entropy:.6f} "
        f"(N_θ ln 0.01 = {math.log(0.01):.6f})"
    )


def main() -> int:
    t0 = time.perf_counter()
    ex1 = example1()
    ex2 = example2(ex1)
    example3(ex1, ex2)
    mcmc_check()
    pybullet_check()
    design()
    print(f"\n<!-- total {time.perf_counter() - t0:.0f} s -->")
    return 0


if __name__ == "__main__":
    sys.exit(main())
