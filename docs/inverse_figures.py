"""Figures and numbers of docs/inverse.md (inverse simulation under uncertainty, Du 2013).

Regenerate (about 40 s on 2 cores)::

    python docs/inverse_figures.py

It runs the two shipped specs the way ``workbench inverse`` does (``specs/du_impact_analytic.yaml``
and ``specs/du_impact_pybullet.yaml``), a 4 × 10⁶-sample Monte Carlo of the analytic model (seeds
10-13), and writes to docs/figures/inverse/:

- ``du_cdf.png``: the CDFs of vA0 and vB0 by FORM with the analytic model and with PyBullet in the
  loop, the paper's "New method" column and our Monte Carlo;
- ``du_cdf_difference.png``: F_PyBullet − F_analytic, F_MC − F_FORM (ours) and the paper's
  MCS − New method, against x.

It prints the numbers quoted in the page.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from figure_setup import REPO, plt  # noqa: E402  (the repository on sys.path, Agg)

from uncertainty.examples import du_impact as du  # noqa: E402
from uncertainty.inverse import inverse_form, inverse_monte_carlo  # noqa: E402
from workbench.analysis.inverse import build_problem, load_inverse_spec  # noqa: E402
from workbench.figures.labels import DIMENSIONLESS, axis_label, unit_of  # noqa: E402

OUT = REPO / "docs" / "figures" / "inverse"
TABLES = {"vA0": du.TABLE1, "vB0": du.TABLE2}
POINTS = {name: table["x"] for name, table in TABLES.items()}
MC_SEEDS = (10, 11, 12, 13)
MC_N = 1_000_000


def _form(spec_name: str):
    spec = load_inverse_spec(REPO / "specs" / spec_name)
    problem, model = build_problem(spec)
    t = time.perf_counter()
    result = inverse_form(problem, spec.cdf_points)
    seconds = time.perf_counter() - t
    close = getattr(model, "close", None)
    if close:
        close()
    return result, seconds, spec.units


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    analytic, t_an, units = _form("du_impact_analytic.yaml")  # units of the spec (m/s)
    pyb, t_pb, _ = _form("du_impact_pybullet.yaml")
    mc_F = {name: [] for name in TABLES}
    t = time.perf_counter()
    for seed in MC_SEEDS:
        mc = inverse_monte_carlo(
            du.inverse_problem(), MC_N, np.random.default_rng(seed), points=POINTS
        )
        for name in TABLES:
            mc_F[name].append(mc[name].F)
    t_mc = time.perf_counter() - t
    n_mc = MC_N * len(MC_SEEDS)
    F_mc = {name: np.mean(v, axis=0) for name, v in mc_F.items()}

    print(f"analytic FORM {t_an:.2f} s, {analytic.model_calls} calls; PyBullet FORM {t_pb:.1f} s,"
          f" {pyb.model_calls} calls; MC {n_mc:.0e} samples {t_mc:.1f} s")  # fmt: skip
    print(
        "| unknown | analytic mean / std | PyBullet mean / std | exact mean / std | "
        "calls/point analytic | calls/point PyBullet | max abs(F_PyBullet − F_analytic) |"
    )
    print("|---|---|---|---|---:|---:|---:|")
    for name in TABLES:
        a, p = analytic[name], pyb[name]
        print(
            f"| {name} | {a.mean:.4f} / {a.std:.4f} | {p.mean:.4f} / {p.std:.4f} | "
            f"{du.EXACT_MEAN[name]:.4f} / {du.EXACT_STD[name]:.4f} | {a.calls.mean():.1f} | "
            f"{p.calls.mean():.1f} | {np.max(np.abs(p.F - a.F)):.1e} |"
        )
    for name, table in TABLES.items():
        d = F_mc[name] - analytic[name].F
        k = int(np.argmax(np.abs(d)))
        dp = table["mcs"] - table["new_method"]
        kp = int(np.argmax(np.abs(dp)))
        print(
            f"{name}: FORM error by our MC (4e6): max {d[k]:+.1e} at x = {table['x'][k]:.4g}; "
            f"paper MCS − New method: max {dp[kp]:+.1e} at x = {table['x'][kp]:.4g}; "
            f"max abs(F_FORM − paper New method) "
            f"{np.max(np.abs(analytic[name].F - table['new_method'])):.1e}"
        )

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.9), constrained_layout=True)
    for ax, name in zip(axes, TABLES, strict=True):
        x = TABLES[name]["x"]
        ax.plot(x, analytic[name].F, "-", color="C0", label="FORM, analytic model (Appendix)")
        ax.plot(x, pyb[name].F, "--", color="C3", label="FORM, PyBullet in the loop")
        ax.plot(x, TABLES[name]["new_method"], "o", ms=4, mfc="none", color="k",
                label="paper, New method")  # fmt: skip
        ax.plot(x, F_mc[name], "x", ms=4, color="C2", label="Monte Carlo 4e6 (analytic)")
        ax.set_xlabel(axis_label(name, unit_of(name, units)))
        ax.set_ylabel(axis_label(f"CDF F({name}) = P({name} ≤ x)", DIMENSIONLESS))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle("Du (2013) impact example: CDFs of the velocities before impact")
    fig.savefig(OUT / "du_cdf.png", dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), constrained_layout=True)
    for ax, name in zip(axes, TABLES, strict=True):
        x, table = TABLES[name]["x"], TABLES[name]
        se = np.sqrt(F_mc[name] * (1 - F_mc[name]) / n_mc)
        ax.plot(x, 1e4 * (pyb[name].F - analytic[name].F), "o-", ms=3, color="C3",
                label="F PyBullet − F analytic")  # fmt: skip
        ax.errorbar(x, 1e4 * (F_mc[name] - analytic[name].F), yerr=2e4 * se, fmt="s", ms=3,
                    color="C2", label="our MC − FORM (± 2 SE)")  # fmt: skip
        ax.plot(x, 1e4 * (table["mcs"] - table["new_method"]), "^", ms=4, mfc="none",
                color="k", label="paper: MCS − New method")  # fmt: skip
        ax.axhline(0, color="0.5", lw=0.8)
        ax.set_xlabel(axis_label(name, unit_of(name, units)))
        ax.set_ylabel(axis_label("ΔF × 10⁴", DIMENSIONLESS))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.savefig(OUT / "du_cdf_difference.png", dpi=110)
    plt.close(fig)
    print(f"wrote {OUT / 'du_cdf.png'} and {OUT / 'du_cdf_difference.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
