"""Figures of docs/sensitivity.md from the files of its three examples.

Regenerate (runtimes in docs/sensitivity.md)::

    workbench sensitivity sliding_block_random --output stop -n 1024 --seed 7 -o sb.h5 --workers 2
    workbench sensitivity batou_soize_5body --set case=4 --observer p_obs_acc \\
        --observer rb5_angular_acc -n 64 --seed 2012 --workers 2 -o bs64.h5
    workbench sensitivity du_impact --set random_inputs=true -n 256 --seed 2013 --workers 2 \\
        -o du.h5
    python docs/sensitivity_figures.py sb.h5 bs64.h5 du.h5

It writes PNGs to docs/figures/sensitivity/ (``workbench plot FILE --sensitivity OUTPUT``
draws any one of them).
"""

from __future__ import annotations

import sys

from figure_setup import REPO

from workbench.ensemble import report

OUT = REPO / "docs" / "figures" / "sensitivity"

#: (file argument, output, figure name)
FIGURES = [
    (0, "stop", "sliding_stop.png"),
    (1, "p_obs_acc.z", "batou_soize_p_obs_acc_z.png"),
    (1, "rb5_angular_acc.x", "batou_soize_rb5_angular_acc_x.png"),
    (1, "rb5_angular_acc.y", "batou_soize_rb5_angular_acc_y.png"),
    (2, "dA", "du_dA.png"),
    (2, "dB", "du_dB.png"),
]


def main(paths: list[str]) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for k, output, name in FIGURES:
        print(report.plot_sensitivity(paths[k], output, OUT / name))
    for path in paths:
        print("\n".join(report.sensitivity_lines(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
