"""Reading damaged or foreign files: every failure of h5py, and every value no store holds, becomes
one :class:`~workbench.errors.StoreError` naming the file and the dataset (issue 21).

- :class:`CheckedDataset` wraps an h5py dataset: a chunk that cannot be read (bad checksum, a
  filter that fails, an address past the end of a truncated file) raises ``StoreError``;
- :func:`check_time` refuses a ``/time`` that is not finite and strictly increasing;
- :func:`check_layout` refuses datasets whose shapes or types are not the layout's;
- :func:`text_attr` and :func:`read_attrs` refuse attributes that are not text or cannot be read;
- :func:`dataset_summaries` walks a file link by link for ``workbench inspect``, listing what it
  cannot read instead of stopping.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np

from workbench.errors import StoreError
from workbench.store.lock import busy_error
from workbench.store.schema import StoreSchema

__all__ = [
    "H5_READ_ERRORS",
    "MAX_LABEL",
    "CheckedDataset",
    "check_time",
    "check_layout",
    "text_attr",
    "text",
    "plain",
    "read_attrs",
    "dataset_summary",
    "dataset_summaries",
]


#: Longest text attribute read as a label (a unit, quantity or body name), characters: a real
#: one is a few words; a longer one is damage, and would not fit a figure's axis label.
MAX_LABEL = 200


def text_attr(obj: Any, key: str, path: Path) -> str:
    """The text attribute ``key`` of ``obj`` ("" when absent), or a :class:`StoreError`."""
    value = obj.attrs.get(key, "")
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if not isinstance(value, str | bytes):
        raise StoreError(
            f"{path}: attribute {key} of {obj.name} is {type(value).__name__}, expected text; "
            "the file is damaged"
        )
    try:
        label = text(value)
    except UnicodeDecodeError:
        raise StoreError(
            f"{path}: attribute {key} of {obj.name} is not UTF-8 text, the file is damaged"
        ) from None
    if len(label) > MAX_LABEL:
        raise StoreError(
            f"{path}: attribute {key} of {obj.name} holds {len(label)} characters, expected a "
            f"label of at most {MAX_LABEL}; the file is damaged"
        )
    return label


def text(value: Any) -> str:
    """A string attribute or element as ``str``: version-2 files store UTF-8 text, older files
    (or other writers) may hold bytes."""
    if isinstance(value, bytes | np.bytes_):
        return bytes(value).decode("utf-8")
    return str(value)


def plain(value: Any) -> Any:
    """An HDF5 attribute value as a JSON-serialisable Python value."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    return value


#: What h5py raises on bytes it cannot decode: ``OSError`` (a chunk that fails to decompress, an
#: address past the end of a truncated file), ``RuntimeError`` (a damaged attribute or object
#: header), ``TypeError`` ("Unknown string encoding"), ``ValueError`` (a damaged datatype).
H5_READ_ERRORS = (OSError, RuntimeError, TypeError, ValueError)


def read_attrs(obj: Any, path: Path) -> dict[str, Any]:
    """The attributes of ``obj`` (a file, group or dataset) as plain values, or a
    :class:`StoreError` naming the file and the object when they cannot be read."""
    try:
        return {k: plain(v) for k, v in obj.attrs.items()}
    except H5_READ_ERRORS as exc:
        raise busy_error(path) or StoreError(
            f"{path}: attributes of {obj.name} cannot be read, the file is damaged "
            f"({' '.join(str(exc).split()) or type(exc).__name__})"
        ) from None


class CheckedDataset:
    """An h5py dataset whose reads fail with one line: a damaged chunk (a filter that cannot
    decompress it, a checksum, an address past the end of a truncated file) raises ``OSError``
    deep in h5py; here it becomes a :class:`StoreError` naming the file and the dataset. Every
    other attribute is the dataset's."""

    def __init__(self, ds: h5py.Dataset, path: Path):
        self._ds = ds
        self._path = path

    def __getitem__(self, key: Any) -> Any:
        try:
            return self._ds[key]
        except H5_READ_ERRORS as exc:
            raise busy_error(self._path) or StoreError(
                f"{self._path}: dataset {self._ds.name} cannot be read, the file is damaged "
                f"({str(exc).strip() or type(exc).__name__})"
            ) from None

    def __setitem__(self, key: Any, value: Any) -> None:
        self._ds[key] = value

    def __len__(self) -> int:
        return len(self._ds)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ds, name)


def check_time(ds: h5py.Dataset, path: Path) -> np.ndarray:
    """``/time`` as read, shape (nt,): finite and strictly increasing, or a :class:`StoreError`.

    Every writer stores times in increasing order, reverse runs included (their ``/time`` is the
    time before the final state, 0 first; root attribute ``time_reversed``), so a decrease or a
    repeat can only be damage.
    """
    where = f"{path}: dataset {ds.name}"
    if ds.ndim != 1 or ds.shape[0] == 0 or ds.dtype.kind not in "fiu":
        raise StoreError(
            f"{where} has shape {ds.shape} and type {ds.dtype}; expected (nt,) float64 seconds, "
            "the file is damaged or not a store"
        )
    time = np.asarray(CheckedDataset(ds, path)[()], dtype=np.float64)
    if not np.all(np.isfinite(time)):
        k = int(np.flatnonzero(~np.isfinite(time))[0])
        raise StoreError(f"{where}[{k}] = {time[k]}; expected finite seconds, the file is damaged")
    step = np.diff(time)
    if np.any(step <= 0):
        k = int(np.flatnonzero(step <= 0)[0])
        raise StoreError(
            f"{where} is not strictly increasing ({ds.name}[{k + 1}] = {time[k + 1]:.17g} after "
            f"{time[k]:.17g}), the file is damaged"
        )
    return time


def dataset_summary(ds: h5py.Dataset) -> dict[str, Any]:
    string = h5py.check_string_dtype(ds.dtype)
    summary = {
        "shape": list(ds.shape),
        "dtype": f"str ({string.encoding})" if string is not None else str(ds.dtype),
        "compression": ds.compression,
        "shuffle": bool(ds.shuffle),
        "chunks": list(ds.chunks) if ds.chunks is not None else None,
    }
    if "units" in ds.attrs:  # format 2
        summary["units"] = text(ds.attrs["units"])
    return summary


def dataset_summaries(group: h5py.Group, prefix: str = "/") -> dict[str, Any]:
    """Shapes, types and filters of every dataset under ``group``, walked link by link.

    ``Group.visititems`` stops at the first object header it cannot read, which a writer killed
    while HDF5 extended a header can leave behind (seen once in CI: "Object visitation failed
    (addr overflow)"), although the completed realizations read back exactly. Here an object
    that cannot be read is listed as ``{"unreadable": reason}`` and the walk goes on.
    """
    out: dict[str, Any] = {}
    try:
        names = list(group.keys())
    except (*H5_READ_ERRORS, KeyError) as exc:
        return {prefix: {"unreadable": str(exc)}}
    for name in names:
        # h5py gives a name that is not UTF-8 (a damaged link) as bytes: shown escaped
        shown = name.decode("utf-8", "backslashreplace") if isinstance(name, bytes) else name
        path = prefix + shown
        try:
            obj = group[name]
        except (*H5_READ_ERRORS, KeyError) as exc:
            out[path] = {"unreadable": str(exc)}
            continue
        if isinstance(obj, h5py.Group):
            out.update(dataset_summaries(obj, path + "/"))
        elif isinstance(obj, h5py.Dataset):
            try:
                out[path] = dataset_summary(obj)
            except H5_READ_ERRORS as exc:
                out[path] = {"unreadable": str(exc)}
    return dict(sorted(out.items()))


def check_layout(f: h5py.Group, schema: StoreSchema, n: int, path: Path) -> None:
    """Refuse a store (the root of a file, or its ``/nominal`` group) whose datasets cannot be
    what the layout of ``schema`` with ``n`` realizations says: shapes, types (numbers where
    numbers belong, text in ``status``/``message``) and ``recorded`` of every completed
    realization within 0..nt. Each failure is one line naming the file and the dataset."""
    expected = {"recorded": (n,), "status": (n,), "message": (n,)}
    rows = schema.row_shapes()
    expected.update({k: (n, *shape) for k, shape in rows.items() if k[:7] != "params/"})
    for name, shape in expected.items():
        if f[name].shape != shape:
            raise StoreError(
                f"{path}: damaged store, {name} has shape {f[name].shape}, expected {shape}"
            )
    for key in schema.param_shapes:
        if f["params"][key].shape[:1] != (n,):
            raise StoreError(f"{path}: damaged store, params/{key} has wrong length")
    for name in [*rows, "recorded"]:
        if f[name].dtype.kind not in "fiu":
            raise StoreError(
                f"{path}: dataset {f[name].name} holds {f[name].dtype}, expected numbers; the "
                "file is damaged or not a store"
            )
    if f["completed"].dtype.kind not in "biu" or f["completed"].ndim != 1:
        raise StoreError(
            f"{path}: dataset {f['completed'].name} holds {f['completed'].dtype} of shape "
            f"{f['completed'].shape}, expected ({n},) bool; the file is damaged or not a store"
        )
    for name in ("status", "message"):
        if h5py.check_string_dtype(f[name].dtype) is None:
            raise StoreError(
                f"{path}: dataset {f[name].name} holds {f[name].dtype}, expected text; the file "
                "is damaged or not a store"
            )
    completed = np.asarray(CheckedDataset(f["completed"], path)[()], dtype=bool)
    recorded = np.asarray(CheckedDataset(f["recorded"], path)[()])
    nt = schema.n_times
    bad = np.flatnonzero(completed & ((recorded < 0) | (recorded > nt)))
    if bad.size:
        i = int(bad[0])
        raise StoreError(
            f"{path}: dataset {f['recorded'].name}[{i}] = {recorded[i]}, expected 0..{nt} (the "
            "records of /time); the file is damaged"
        )
