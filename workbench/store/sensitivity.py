"""Sensitivity results in an ensemble file: the design (``/design``) and the indices of each output
(``/sensitivity/<output>/``), written by ``workbench sensitivity`` beside the realizations.

Layout (``docs/sensitivity.md``, ``docs/hdf5.md``):

- ``/design``: float64 (rows, columns), the design on the unit hypercube, row i driving
  realization i; attributes ``method``, ``n`` (base size N or Morris trajectories), ``columns``,
  ``groups`` (one per column), ``inputs`` (the groups, in index order), ``second_order``,
  ``levels``, ``design_seed``, ``salib_version``.
- ``/sensitivity/<output>/``: ``S1``, ``ST``, ``S1_conf``, ``ST_conf`` (and ``S2``,
  ``S2_conf``) for Sobol', ``mu_star``, ``mu``, ``sigma``, ``mu_star_conf`` for Morris, the last
  axis ordered as the group's attribute ``inputs``; a time-resolved output adds a leading time
  axis, ``time`` and ``variance`` (of the output at each time) and the generalized indices
  ``S1_generalized``, ``ST_generalized``. Attributes: ``method``, ``inputs``, ``output``,
  ``conf_level``, ``num_resamples``, ``kind`` (``scalar`` or ``time_resolved``).

Crash safety: everything is written under a hidden temporary name (``/.tmp_…``), flushed, and
only then linked under its final name (HDF5 link moves are single metadata operations), so a
killed writer never leaves a half-written ``/design`` or ``/sensitivity/<output>`` visible; the
next writer removes the leftovers. Datasets are written without object-header times
(``track_times=False``), so the same results give the same bytes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from workbench.errors import StoreError
from workbench.store.lock import busy_error

__all__ = [
    "DESIGN_GROUP",
    "SENSITIVITY_GROUP",
    "write_sensitivity",
    "read_design",
    "read_sensitivity",
]

DESIGN_GROUP = "design"
SENSITIVITY_GROUP = "sensitivity"
_TMP = ".tmp_"

#: What each index dataset is (the ``description`` attribute).
_DESCRIPTIONS = {
    "S1": "first-order Sobol' index of each input (group)",
    "ST": "total Sobol' index of each input (group)",
    "S1_conf": "half-width of the bootstrap confidence interval of S1",
    "ST_conf": "half-width of the bootstrap confidence interval of ST",
    "S2": "second-order Sobol' index of each pair of inputs (upper triangle)",
    "S2_conf": "half-width of the bootstrap confidence interval of S2",
    "mu_star": "Morris mu*: mean absolute elementary effect per unit of the design coordinate",
    "mu": "Morris mu: mean elementary effect per unit of the design coordinate",
    "sigma": "Morris sigma: standard deviation of the elementary effects",
    "mu_star_conf": "half-width of the bootstrap confidence interval of mu*",
    "time": "recorded time of the observer",
    "variance": "variance of the output over the design's A and B rows at each time",
    "S1_generalized": "variance-weighted mean of S1 over time (Gamboa et al. 2014, Eq. 6)",
    "ST_generalized": "variance-weighted mean of ST over time (Gamboa et al. 2014, Eq. 6)",
}


def _attr(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return np.array([v.encode("utf-8") for v in value], dtype=h5py.string_dtype("utf-8"))
    return value


def _set(obj, attrs: Mapping[str, Any]) -> None:
    for key, value in attrs.items():
        obj.attrs[key] = _attr(value)


def _dataset(group, name: str, data: np.ndarray, dims: tuple[str, ...], units: str = "1") -> None:
    arr = np.asarray(data, dtype=float)
    ds = group.create_dataset(name, data=arr, track_times=False)
    _set(
        ds,
        {
            "units": units,
            "description": _DESCRIPTIONS.get(name, name),
            "dims": list(dims[-arr.ndim :]) if arr.ndim else [],
        },
    )


def _remove_leftovers(f: h5py.File) -> None:
    for name in [n for n in f if n.startswith(_TMP)]:
        del f[name]


def write_sensitivity(
    path: str | os.PathLike,
    design: np.ndarray | None,
    design_attrs: Mapping[str, Any] | None,
    results: Mapping[str, Mapping[str, np.ndarray]],
    result_attrs: Mapping[str, Mapping[str, Any]],
) -> None:
    """Write the design and the indices of ``results`` (output name -> dataset name -> array)
    into the ensemble file ``path``, replacing earlier ones of the same names (see the module
    docstring for the layout and the crash safety).

    Raises
    ------
    StoreError
        The file cannot be opened for writing or is not an ensemble file.
    """
    path = Path(path)
    try:
        f = h5py.File(path, "r+", rdcc_nbytes=0)
    except OSError as exc:
        raise StoreError(
            f"{path}: cannot open for writing the sensitivity results ({exc})"
        ) from None
    with f:
        if "time" not in f or "params" not in f:
            raise StoreError(f"{path}: not a workbench ensemble file (no /time, /params)")
        _remove_leftovers(f)
        staged: list[tuple[str, str]] = []
        if design is not None:
            tmp = f.create_group(f"{_TMP}{DESIGN_GROUP}", track_order=True)
            _set(tmp, dict(design_attrs or {}))
            ds = tmp.create_dataset("u", data=np.asarray(design, float), track_times=False)
            _set(
                ds,
                {
                    "units": "1",
                    "description": "design point of each realization on the unit hypercube",
                    "dims": ["realization", "column"],
                },
            )
            staged.append((tmp.name, f"/{DESIGN_GROUP}"))
        for k, (output, data) in enumerate(results.items()):
            tmp = f.create_group(f"{_TMP}{SENSITIVITY_GROUP}_{k}", track_order=True)
            attrs = dict(result_attrs.get(output, {}))
            _set(tmp, {"output": output, **attrs})
            time_resolved = attrs.get("kind") == "time_resolved"
            for name, arr in data.items():
                if name in ("time", "variance"):
                    dims: tuple[str, ...] = ("time",)
                    units = "s" if name == "time" else ""
                elif name.startswith("S2"):
                    dims = ("time", "input", "input2") if time_resolved else ("input", "input2")
                    units = "1"
                else:
                    dims = ("time", "input") if time_resolved else ("input",)
                    units = "1"
                _dataset(tmp, name, arr, dims, units)
            staged.append((tmp.name, f"/{SENSITIVITY_GROUP}/{output}"))
        f.flush()  # every staged group complete on disk before any is linked in
        if any(final.startswith(f"/{SENSITIVITY_GROUP}/") for _, final in staged):
            f.require_group(SENSITIVITY_GROUP)
        for tmp_name, final in staged:
            if final in f:
                del f[final]
            f.move(tmp_name, final)
        f.flush()


def read_design(path: str | os.PathLike) -> tuple[np.ndarray, dict[str, Any]] | None:
    """The stored design and its attributes, or None when the file has none (yet)."""
    path = Path(path)
    try:
        with h5py.File(path, "r", locking=False) as f:  # as TrajectoryStore.open reads
            if DESIGN_GROUP not in f:
                return None
            g = f[DESIGN_GROUP]
            return np.asarray(g["u"][()], float), {k: _read_attr(v) for k, v in g.attrs.items()}
    except (OSError, KeyError) as exc:
        raise busy_error(path) or StoreError(f"{path}: cannot read the design ({exc})") from None


def read_sensitivity(path: str | os.PathLike) -> dict[str, tuple[dict[str, np.ndarray], dict]]:
    """Output name -> (datasets, attributes) of every ``/sensitivity/<output>`` group; empty when
    the file has none."""
    path = Path(path)
    out: dict[str, tuple[dict[str, np.ndarray], dict]] = {}
    try:
        with h5py.File(path, "r", locking=False) as f:  # as TrajectoryStore.open reads
            if SENSITIVITY_GROUP not in f:
                return out
            for name, g in f[SENSITIVITY_GROUP].items():
                data = {k: np.asarray(ds[()], float) for k, ds in g.items()}
                out[name] = (data, {k: _read_attr(v) for k, v in g.attrs.items()})
    except (OSError, KeyError) as exc:
        raise busy_error(path) or StoreError(
            f"{path}: cannot read the sensitivity results ({exc})"
        ) from None
    return out


def _read_attr(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray) and value.dtype.kind in "OS":
        return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value
