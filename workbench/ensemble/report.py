"""Summaries and figures of stored ensembles: reads the store, calls
:mod:`workbench.ensemble.statistics` and hands the results to :mod:`workbench.figures.trajectories`.
``workbench stats`` and ``workbench plot`` print and write what these functions return.

The figure functions import :mod:`workbench.figures.trajectories` when called: matplotlib takes
half a second to import, and the summary (``workbench stats``) needs none of it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from workbench.ensemble.statistics import (
    confidence_band,
    mean_response,
    mean_square_convergence,
    summarize_samples,
)
from workbench.ensemble.streaming import observer_statistics
from workbench.errors import StoreError
from workbench.scene.fields import did_you_mean
from workbench.store import TrajectoryStore

__all__ = [
    "ensemble_summary",
    "plot_ensemble_observer",
    "plot_parameter",
    "plot_ensemble_convergence",
    "sensitivity_summary",
    "sensitivity_lines",
    "summary_lines",
    "plot_sensitivity",
]


def _observer(store: TrajectoryStore, name: str) -> tuple[np.ndarray, dict]:
    info = store.schema.observer_info
    if name not in info:
        options = ", ".join(info) or "none"
        near = did_you_mean(name, info)
        raise StoreError(f"{store.path}: no observer '{name}'{near}; the file has {options}")
    return store.read_array(f"observers/{name}"), info[name]


def _finite_rows(Y: np.ndarray, store: TrajectoryStore, what: str) -> None:
    """Refuse to draw ``what`` when no realization of ``Y`` (n_real, nt, ...) has finite
    records: a figure of nothing (every realization missing, failed or damaged)."""
    if Y.shape[0] and np.any(np.all(np.isfinite(Y.reshape(Y.shape[0], -1)), axis=1)):
        return
    done = int(store.completed.sum())
    raise StoreError(
        f"{store.path}: no completed realization with finite records of {what} to plot "
        f"({done} of {store.n_realizations} completed); see `workbench inspect {store.path}`"
    )


def _require_ensemble(store: TrajectoryStore, path) -> None:
    """Refuse a file that holds one run (``kind = "run"``): it has no spread to summarise."""
    attrs = store.attrs
    if attrs.get("kind") != "run":
        return
    if attrs.get("time_reversed"):
        what, instead = "one reverse run (workbench reverse)", f"`workbench replay {path}`"
    else:
        what, instead = "one run (workbench run)", f"`workbench plot {path} --observer NAME`"
    raise StoreError(
        f"{path}: not an ensemble but {what}, so it has no statistics; see what it holds with "
        f"`workbench inspect {path}` or {instead}"
    )


def ensemble_summary(path, p_c: float = 0.9) -> dict:
    """A JSON-ready summary: realizations, failures, sampled parameters, and per observer and
    component the peak of the nominal and mean responses and the widest band.

    With fewer than 2 realizations whose records are finite, the band width and the convergence
    change are None (one realization has no spread).

    Raises
    ------
    StoreError
        The file holds a single run (forward or reverse), not an ensemble.
    """
    with TrajectoryStore.open(path) as store:
        _require_ensemble(store, path)
        completed = store.completed
        out: dict = {
            "path": str(path),
            "n_realizations": store.n_realizations,
            "n_completed": int(completed.sum()),
            "seed_entropy": store.attrs.get("seed_entropy", ""),
            "p_c": p_c,
        }
        statuses = store.statuses()
        status = {s: statuses.count(s) for s in sorted(set(statuses))}
        out["status_counts"] = status
        params, param_units = {}, {}
        for key, shape in store.schema.param_shapes.items():
            arr = store.read_array(f"params/{key}")
            unit = str(store.dataset_attrs(f"params/{key}").get("units", ""))
            finite = arr[np.all(np.isfinite(arr.reshape(arr.shape[0], -1)), axis=1)]
            if finite.shape[0] < 2 or np.all(finite == finite[0]):
                continue  # not random in this ensemble
            if shape == ():
                label, params[key] = key, summarize_samples(arr)
            elif shape == (3, 3) and key.endswith("/G"):
                label = key + " (trace)"
                params[label] = summarize_samples(np.trace(arr, axis1=1, axis2=2))
            elif shape == (3, 3):
                label = key + " (diagonal)"
                params[label] = [summarize_samples(arr[:, j, j]) for j in range(3)]
            elif shape == (3,):
                label, params[key] = key, [summarize_samples(arr[:, j]) for j in range(3)]
            else:
                continue
            param_units[label] = unit
        out["params"] = params
        out["param_units"] = param_units
        nominal = store.read_nominal()
        observers = {}
        no_records = []
        for name, info in store.schema.observer_info.items():
            try:  # streamed in time windows: memory bounded whatever the number of realizations
                mean, lo, hi, conv = observer_statistics(store, f"observers/{name}", p_c)
            except ValueError:  # no realization has finite records
                no_records.append(name)
                continue
            spread = len(conv) >= 2  # realizations with finite records
            rows = []
            for j, comp in enumerate(info["components"]):
                row = {
                    "component": comp,
                    "unit": info["unit"],
                    "mean_peak": float(np.max(np.abs(mean[:, j]))),
                    "band_max_width": float(np.max(hi[:, j] - lo[:, j])) if spread else None,
                }
                if nominal is not None and name in nominal.observers:
                    row["nominal_peak"] = float(np.max(np.abs(nominal.observers[name][:, j])))
                rows.append(row)
            tail = conv[int(0.9 * (len(conv) - 1)) :]
            change = float(np.ptp(tail) / conv[-1]) if conv[-1] else 0.0
            observers[name] = {
                "components": rows,
                "n_valid": len(conv),
                "convergence_final": float(conv[-1]),
                "convergence_change_last_10pct": change if spread else None,
            }
        out["observers"] = observers
        out["observers_without_finite_records"] = no_records
    out["sensitivity"] = sensitivity_summary(path)
    return out


def sensitivity_summary(path) -> dict:
    """The indices stored by ``workbench sensitivity`` (``/sensitivity/<output>``), JSON-ready:
    per output its method, inputs and, per index, one value per input (time-resolved outputs:
    the generalized Sobol' indices, and the number of times); empty when there are none."""
    from workbench.store.sensitivity import read_sensitivity

    out = {}
    for name, (data, attrs) in read_sensitivity(path).items():
        inputs = list(attrs.get("inputs", []))
        row: dict = {"method": attrs.get("method"), "kind": attrs.get("kind"), "inputs": inputs}
        if attrs.get("kind") == "time_resolved":
            row["n_times"] = int(len(data.get("time", ())))
            keys = ("S1_generalized", "ST_generalized")
            if "variance" in data and np.any(data["variance"] > 0):
                k = int(np.argmax(data["variance"]))
                row["peak_time"] = float(data["time"][k])
                for key in ("S1", "ST", "S1_conf", "ST_conf"):
                    row[f"{key}_at_peak"] = [
                        None if not np.isfinite(v) else float(v) for v in data[key][k]
                    ]
        elif attrs.get("method") == "morris":
            keys = ("mu_star", "mu_star_conf", "sigma")
        else:
            keys = ("S1", "S1_conf", "ST", "ST_conf")
        for key in keys:
            if key in data:
                row[key] = [None if not np.isfinite(v) else float(v) for v in data[key]]
        out[name] = row
    return out


def sensitivity_lines(path) -> list[str]:
    """``workbench stats``' table of the stored indices (one line per output and input)."""
    lines = []
    for name, row in sensitivity_summary(path).items():
        if row["kind"] == "time_resolved":
            head = ("S1_generalized", "ST_generalized")
            title = f"{name} ({row['method']}, {row['n_times']} times; variance-weighted)"
        elif row["method"] == "morris":
            head = ("mu_star", "mu_star_conf", "sigma")
            title = f"{name} (Morris screening; per unit of the design coordinate)"
        else:
            head = ("S1", "S1_conf", "ST", "ST_conf")
            title = f"{name} (Sobol'; _conf: half-width of the 95% bootstrap interval)"
        if "peak_time" in row:
            head = (*head, "S1_at_peak", "ST_at_peak")
            title += f"; at_peak: t = {row['peak_time']:.6g} s, where the variance is largest"
        width = max([len(i) for i in row["inputs"]] + [5])
        lines.append(f"sensitivity of {title}:")
        lines.append(f"  {'input':<{width}} " + " ".join(f"{h:>14}" for h in head))
        for j, inp in enumerate(row["inputs"]):
            cells = []
            for h in head:
                v = row.get(h, [None] * len(row["inputs"]))[j]
                cells.append(f"{'-':>14}" if v is None else f"{v:>14.4f}")
            lines.append(f"  {inp:<{width}} " + " ".join(cells))
    return lines


def plot_sensitivity(path, output: str, out) -> Path:
    """Bar chart of an output's indices with their intervals, or its indices against time for a
    time-resolved output (:mod:`workbench.figures.sensitivity`); returns the written path."""
    from workbench.figures.sensitivity import plot_index_bars, plot_index_curves  # matplotlib
    from workbench.store.sensitivity import read_sensitivity

    results = read_sensitivity(path)
    if output not in results:
        have = ", ".join(results) or "none (run `workbench sensitivity`)"
        raise StoreError(f"{path}: no sensitivity results for '{output}'; the file has {have}")
    data, attrs = results[output]
    inputs = list(attrs.get("inputs", []))
    if attrs.get("kind") == "time_resolved":
        return plot_index_curves(
            data, inputs, output, out, method=str(attrs.get("method")), unit=attrs.get("unit", "")
        )
    return plot_index_bars(data, inputs, output, out, method=str(attrs.get("method")))


def plot_ensemble_observer(path, name: str, out, p_c: float = 0.9) -> Path:
    """Confidence region at probability ``p_c`` of observer ``name``, with the mean and nominal
    responses (:func:`workbench.figures.trajectories.plot_band`); returns the written path."""
    from workbench.figures.trajectories import plot_band  # matplotlib: see the module docstring

    with TrajectoryStore.open(path) as store:
        Y, info = _observer(store, name)
        _finite_rows(Y, store, f"observer '{name}'")
        nominal = store.read_nominal()
        time = store.schema.time
        n_ok = int(np.sum(np.all(np.isfinite(Y.reshape(Y.shape[0], -1)), axis=1)))
    mean = mean_response(Y)
    lo, hi = confidence_band(Y, p_c)
    nom = nominal.observers.get(name) if nominal is not None else None
    if nom is not None and nom.shape[0] != len(time):
        nom = None
    body = info.get("body")
    title = f"{name}: {info.get('quantity', '')}" + (f" of {body}" if body else "")
    title += f" — {n_ok} realizations, P_c = {p_c:g}"
    return plot_band(time, nom, mean, lo, hi, info, out, p_c=p_c, title=title)


def plot_parameter(path, key: str, out) -> Path:
    """PDF of a scalar parameter (or of the trace of a 3×3 one: tr(G) for the dimensionless
    germ ``<body>/G``, tr(J) for ``<body>/inertia``), scatter for a 3-vector; the axes carry the
    dataset's ``units`` attribute (``docs/hdf5.md``; ``[?]`` where the file declares none, as for
    a scene parameter)."""
    from workbench.figures.trajectories import plot_samples, plot_scatter3  # matplotlib

    with TrajectoryStore.open(path) as store:
        shapes = store.schema.param_shapes
        if key not in shapes:
            near = did_you_mean(key, shapes)
            raise StoreError(
                f"{path}: no parameter '{key}'{near}; the file has {', '.join(shapes)}"
            )
        arr = store.read_array(f"params/{key}")
        _finite_rows(arr, store, f"parameter '{key}'")
        unit = str(store.dataset_attrs(f"params/{key}").get("units", ""))
    shape = shapes[key]
    if shape == ():
        return plot_samples(arr, key, out, unit=unit)
    if shape == (3,):
        return plot_scatter3(arr, key, out, unit=unit)
    if shape == (3, 3):  # the trace has the unit of the entries
        return plot_samples(np.trace(arr, axis1=1, axis2=2), f"tr({key})", out, unit=unit)
    raise StoreError(f"{path}: cannot plot parameter '{key}' of shape {shape}")


def plot_ensemble_convergence(path, name: str, out) -> Path:
    """Mean-square convergence of observer ``name`` against the number of realizations."""
    from workbench.figures.trajectories import plot_convergence  # matplotlib

    with TrajectoryStore.open(path) as store:
        Y, info = _observer(store, name)
        _finite_rows(Y, store, f"observer '{name}'")
        time = store.schema.time
    return plot_convergence(mean_square_convergence(Y, time), name, out, unit=info["unit"])


def _number(value: float | None, width: int) -> str:
    """``value`` right-aligned in ``width`` columns, or "-" when it does not exist."""
    return f"{value:>{width}.6g}" if value is not None else f"{'-':>{width}}"


def summary_lines(path, info: dict) -> list[str]:
    """The text ``workbench stats`` prints for :func:`ensemble_summary`'s ``info`` of the file at
    ``path`` (with its sensitivity indices, :func:`sensitivity_lines`)."""
    lines: list[str] = []
    lines.append(
        f"{info['path']}: {info['n_completed']} of {info['n_realizations']} realizations "
        f"completed; status {info['status_counts']}; seed {info['seed_entropy'] or '-'}"
    )
    if info["n_completed"] < 2:
        lines.append(
            "note: fewer than 2 completed realizations, so no spread: parameters, bands and "
            "convergence need at least 2 (run the ensemble with a larger -n)"
        )
    if info["params"]:
        lines.append(
            "sampled parameters (mean, standard deviation, coefficient of variation std/|mean|, "
            "min, max; unit):"
        )
        units = info.get("param_units", {})
        for key, val in info["params"].items():
            unit = _unit(units.get(key, ""))
            for j, st in enumerate(val if isinstance(val, list) else [val]):
                label = key if not isinstance(val, list) else f"{key}[{j}]"
                if st.get("n"):
                    lines.append(
                        f"  {label:<28} {st['mean']:>12.6g} {st['std']:>12.6g} "
                        f"{st['cv']:>8.3f} {st['min']:>12.6g} {st['max']:>12.6g} {unit}"
                    )
    for line in sensitivity_lines(path):
        lines.append(line)
    if info["observers_without_finite_records"]:
        names = ", ".join(info["observers_without_finite_records"])
        lines.append(f"observers without a finite record in any realization: {names}")
    if not info["observers"]:
        if not info["observers_without_finite_records"]:
            lines.append("observers: none (the scene declares none)")
        return lines
    lines.append(
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
            lines.append(
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
        lines.append(f"  {name}: conv(n) = {obs['convergence_final']:.6g} {conv_unit}, {trend}")
    lines.append(
        "conv(n): root mean square of the response over the n realizations and the run "
        "(Batou & Soize 2012, Sec. 3.4); an ensemble is large enough when it stops changing"
    )
    return lines


def _unit(unit: str) -> str:
    """A unit for a table column: "1" and "" (a ratio or a parameter the scene gives no unit)
    said as such."""
    return {"": "(no unit given)", "1": "(ratio)"}.get(unit, unit)
