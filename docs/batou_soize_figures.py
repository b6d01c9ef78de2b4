"""Figures and the sensitivity table of docs/batou_soize.md from the four case ensembles.

Regenerate (about 30 min on 2 cores for the ensembles, a minute for the figures)::

    for c in 1 2 3 4; do
      workbench ensemble scenes/batou_soize_5body.py --set case=$c -n 500 --seed 2012 \\
          -o case$c.h5 --workers 2
    done
    python docs/batou_soize_figures.py case1.h5 case2.h5 case3.h5 case4.h5

It writes PNGs to docs/figures/batou_soize/ and prints the markdown table: for each case and
each component of the acceleration of P_obs and of the angular acceleration of Rb5, the largest
width over time of the 90% confidence region (Batou & Soize 2012, Figs. 11-38).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from workbench.ensemble import report  # noqa: E402
from workbench.ensemble.statistics import confidence_band, mean_square_convergence  # noqa: E402
from workbench.store import TrajectoryStore  # noqa: E402

OUT = REPO / "docs" / "figures" / "batou_soize"
P_C = 0.9
CASES = {1: "random mass", 2: "random inertia", 3: "random centre of mass", 4: "all three"}


def main(paths: list[str]) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for case, path in enumerate(paths, start=1):
        for name in ("p_obs_acc", "rb5_angular_acc"):
            report.plot_ensemble_observer(path, name, OUT / f"case{case}_{name}.png", P_C)
        with TrajectoryStore.open(path) as store:
            time = store.schema.time
            widths = {}
            for name in ("p_obs_acc", "rb5_angular_acc"):
                Y = store.read_array(f"observers/{name}")
                lo, hi = confidence_band(Y, P_C)
                widths[name] = np.max(hi - lo, axis=0)
                conv = mean_square_convergence(Y, time)
                widths[name + "_conv"] = float(np.ptp(conv[-50:]) / conv[-1])
            n_ok = int(np.sum(store.completed))
        rows.append((case, n_ok, widths))
        if case == 1:
            report.plot_parameter(path, "rb5/mass", OUT / "case1_mass_pdf.png")
        if case == 2:
            report.plot_parameter(path, "rb5/G", OUT / "case2_trace_G_pdf.png")
        if case == 3:
            report.plot_parameter(path, "rb5/com", OUT / "case3_com_scatter.png")
        if case == 4:
            for name in ("p_obs_acc", "rb5_angular_acc"):
                report.plot_ensemble_convergence(path, name, OUT / f"case4_{name}_conv.png")
    print(
        "| case | realizations | a_x | a_y | a_z (m/s²) | α_x | α_y | α_z (rad/s²) |"
        " conv. change, last 50 |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for case, n_ok, w in rows:
        a, al = w["p_obs_acc"], w["rb5_angular_acc"]
        print(
            f"| {case}: {CASES[case]} | {n_ok} | "
            + " | ".join(f"{x:.3g}" for x in a)
            + " | "
            + " | ".join(f"{x:.3g}" for x in al)
            + f" | {100 * w['p_obs_acc_conv']:.2f}% / {100 * w['rb5_angular_acc_conv']:.2f}% |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
