"""Summarise an ensemble: realizations and failures, sampled parameters (mean, std, cv), and per
observer the peaks of the nominal and mean responses, the widest confidence band and the
mean-square convergence; the indices of `workbench sensitivity` when the file has them. A file
holding one run (`workbench run`, `workbench reverse`) is refused: `workbench inspect`
describes it.
"""

from __future__ import annotations

import argparse
import json

from workbench.ensemble.report import ensemble_summary
from workbench.errors import StoreError

__all__ = ["add_stats_parser", "cmd_stats"]

EPILOG = """\
examples:
  workbench ensemble random_box -n 200 -o box.h5 --workers 2
  workbench stats box.h5
  workbench stats box.h5 --band 0.95 --json
  workbench plot box.h5 --observer com --band 0.9
  workbench stats sb.h5                   with the indices of `workbench sensitivity`
"""


def add_stats_parser(sub) -> None:
    stt = sub.add_parser(
        "stats",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    stt.add_argument("file", help="ensemble file (HDF5) from `workbench ensemble`")
    stt.add_argument(
        "--band",
        type=float,
        default=0.9,
        metavar="P_C",
        help="probability level of the confidence region (default 0.9)",
    )
    stt.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    stt.set_defaults(func=cmd_stats)


def _number(value: float | None, width: int) -> str:
    """``value`` right-aligned in ``width`` columns, or "-" when it does not exist."""
    return f"{value:>{width}.6g}" if value is not None else f"{'-':>{width}}"


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
        f"completed; status {info['status_counts']}; seed {info['seed_entropy'] or '-'}"
    )
    if info["n_completed"] < 2:
        print(
            "note: fewer than 2 completed realizations, so no spread: parameters, bands and "
            "convergence need at least 2 (run the ensemble with a larger -n)"
        )
    if info["params"]:
        print(
            "sampled parameters (mean, standard deviation, coefficient of variation std/|mean|, "
            "min, max; unit):"
        )
        units = info.get("param_units", {})
        for key, val in info["params"].items():
            unit = _unit(units.get(key, ""))
            for j, st in enumerate(val if isinstance(val, list) else [val]):
                label = key if not isinstance(val, list) else f"{key}[{j}]"
                if st.get("n"):
                    print(
                        f"  {label:<28} {st['mean']:>12.6g} {st['std']:>12.6g} "
                        f"{st['cv']:>8.3f} {st['min']:>12.6g} {st['max']:>12.6g} {unit}"
                    )
    from workbench.ensemble.report import sensitivity_lines

    for line in sensitivity_lines(args.file):
        print(line)
    if info["observers_without_finite_records"]:
        names = ", ".join(info["observers_without_finite_records"])
        print(f"observers without a finite record in any realization: {names}")
    if not info["observers"]:
        if not info["observers_without_finite_records"]:
            print("observers: none (the scene declares none)")
        return 0
    print(
        f"observers (peak |nominal run|, peak |ensemble mean|, widest {100 * info['p_c']:g}% "
        "confidence band over time; unit):"
    )
    width = max(
        len(f"{name}.{row['component']}")
        for name, obs in info["observers"].items()
        for row in obs["components"]
    )
    for name, obs in info["observers"].items():
        for row in obs["components"]:
            unit = f" {row['unit']}" if row["unit"] else ""
            label = f"{name}.{row['component']}"
            print(
                f"  {label:<{width}} {_number(row.get('nominal_peak'), 12)}"
                f" {row['mean_peak']:>12.6g} {_number(row['band_max_width'], 12)}{unit}"
            )
        change = obs["convergence_change_last_10pct"]
        trend = (
            f"changed {100 * change:.2f}% over the last 10% of realizations"
            if change is not None
            else "one realization, no trend"
        )
        unit = _unit(obs["components"][0]["unit"] if obs["components"] else "")
        conv_unit = f"{unit} s^0.5" if not unit.startswith("(") else "s^0.5"
        print(f"  {name}: conv(n) = {obs['convergence_final']:.6g} {conv_unit}, {trend}")
    print(
        "conv(n): root mean square of the response over the n realizations and the run "
        "(Batou & Soize 2012, Sec. 3.4); an ensemble is large enough when it stops changing"
    )
    return 0


def _unit(unit: str) -> str:
    """A unit for a table column: "1" and "" (a ratio or a parameter the scene gives no unit)
    said as such."""
    return {"": "(no unit given)", "1": "(ratio)"}.get(unit, unit)
