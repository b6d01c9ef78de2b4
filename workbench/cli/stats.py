"""Summarise an ensemble: realizations and failures, sampled parameters (mean, std, cv), and per
observer the peaks of the nominal and mean responses, the widest confidence band and the
mean-square convergence.
"""

from __future__ import annotations

import json

from workbench.ensemble.report import ensemble_summary
from workbench.errors import StoreError

__all__ = ["add_stats_parser", "cmd_stats"]


def add_stats_parser(sub) -> None:
    stt = sub.add_parser("stats", description=__doc__)
    stt.add_argument("file")
    stt.add_argument(
        "--band",
        type=float,
        default=0.9,
        metavar="P_C",
        help="probability level of the confidence region (default 0.9)",
    )
    stt.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    stt.set_defaults(func=cmd_stats)


def cmd_stats(args) -> int:
    """``workbench stats`` (the work is :func:`workbench.ensemble.report.ensemble_summary`)."""
    if not 0 < args.band < 1:
        raise StoreError(f"--band: expected a probability in (0, 1), got {args.band}")
    info = ensemble_summary(args.file, args.band)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(
        f"{info['path']}: {info['n_completed']} of {info['n_realizations']} realizations "
        f"completed; status {info['status_counts']}; seed {info['seed_entropy']}"
    )
    if info["params"]:
        print("sampled parameters (mean, std, cv, min, max):")
        for key, val in info["params"].items():
            for j, st in enumerate(val if isinstance(val, list) else [val]):
                label = key if not isinstance(val, list) else f"{key}[{j}]"
                if st.get("n"):
                    print(
                        f"  {label:<28} {st['mean']:>12.6g} {st['std']:>12.6g} "
                        f"{st['cv']:>8.3f} {st['min']:>12.6g} {st['max']:>12.6g}"
                    )
    print(f"observers (peak |nominal|, peak |mean|, widest {100 * info['p_c']:g}% band):")
    for name, obs in info["observers"].items():
        for row in obs["components"]:
            unit = f" {row['unit']}" if row["unit"] else ""
            print(
                f"  {name}.{row['component']:<10} {row.get('nominal_peak', float('nan')):>12.6g}"
                f" {row['mean_peak']:>12.6g} {row['band_max_width']:>12.6g}{unit}"
            )
        print(
            f"  {name}: conv(n) = {obs['convergence_final']:.6g}, changed "
            f"{100 * obs['convergence_change_last_10pct']:.2f}% over the last 10% of realizations"
        )
    return 0
