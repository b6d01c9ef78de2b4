"""A block of consecutive realizations written at once, checked against the store's schema.

:meth:`Store.write_block <workbench.store.backend.Store.write_block>` writes the arrays of
realizations ``start .. start + m - 1`` (any of the per-realization datasets of the layout:
states, observers, diagnostics, joints, parameters) and marks them recorded and completed with one
two-phase flush (``docs/architecture.md``, "HDF5 crash safety"): synthetic or precomputed data,
e.g. the 10^5 realizations of ``benchmarks/validation.py``, without one trajectory object per
realization. Datasets not given are not written: they keep their fill value (NaN, and no chunk
allocated in the file).

:func:`check_block` turns the caller's arguments into a :class:`Block` or refuses them with one
line naming the field and what was expected; nothing is written unless the whole block passes.
Pure numpy: nothing here touches a file.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.errors import StoreError
from workbench.store.schema import StoreSchema

__all__ = ["Block", "check_block"]


@dataclass(frozen=True)
class Block:
    """Realizations ``start .. start + len(self) - 1``, checked, ready to be stored.

    Attributes
    ----------
    start : int
    arrays : dict of str to ndarray
        By dataset path (:meth:`StoreSchema.row_shapes`), shape ``(m, *row_shape)`` float64,
        C-contiguous; only the datasets given.
    recorded : ndarray, shape (m,), int64
        Valid records of each realization (``0 .. nt``); the records after them are NaN.
    status, message : list of str
        Per realization.
    """

    start: int
    arrays: dict[str, np.ndarray]
    recorded: np.ndarray
    status: list[str]
    message: list[str]

    def __len__(self) -> int:
        return int(self.recorded.shape[0])

    @property
    def stop(self) -> int:
        """One past the last realization."""
        return self.start + len(self)

    @property
    def indices(self) -> np.ndarray:
        """Realization indices, shape (m,) int64."""
        return np.arange(self.start, self.stop, dtype=np.int64)

    @property
    def nbytes(self) -> int:
        """Bytes of data held (what the write adds to the file, at most, before compression)."""
        text = sum(len(s.encode("utf-8")) for s in (*self.status, *self.message))
        return sum(a.nbytes for a in self.arrays.values()) + self.recorded.nbytes + text


def _real_array(where: str, name: str, values: Any) -> np.ndarray:
    """``values`` as float64, refusing what is not real numbers (complex, bool, text, objects)."""
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:  # ragged nested sequences
        raise StoreError(f"{where}: {name} is not an array of numbers ({exc})") from None
    if arr.dtype.kind not in "fiu":
        raise StoreError(f"{where}: {name} holds {arr.dtype}, expected real numbers (float or int)")
    return np.ascontiguousarray(arr, dtype=np.float64)


def _per_realization(where: str, label: str, value: Any, m: int, check) -> list:
    """A scalar for every realization, or a sequence of ``m`` (each passed to ``check``)."""
    if isinstance(value, str) or np.ndim(value) == 0:
        return [check(value)] * m
    values = list(value)
    if len(values) != m:
        raise StoreError(f"{where}: {label} has {len(values)} entries, expected 1 or {m}")
    return [check(v) for v in values]


def check_block(
    schema: StoreSchema,
    n_realizations: int,
    start: int,
    arrays: Mapping[str, Any],
    recorded: int | Sequence[int] | np.ndarray | None,
    status: str | Sequence[str],
    message: str | Sequence[str],
    where: str,
    *,
    quaternion_tol: float,
) -> Block:
    """Check a block against ``schema`` and a store of ``n_realizations``; return it.

    Parameters
    ----------
    schema : StoreSchema
    n_realizations : int
    start : int
        First realization of the block.
    arrays : mapping of str to array_like
        By dataset path (``states/position``, ``observers/<name>``, ``diagnostics/<name>``,
        ``joints/<field>``, ``params/<body>/<quantity>``): shape ``(m, *row_shape)``, the same
        ``m >= 1`` for all, real numbers. Per-record rows hold ``nt`` records, NaN after the
        realization's ``recorded``; given states are finite within ``recorded`` and orientations
        unit quaternions (to ``quaternion_tol``), as :meth:`Store.read` wants them.
    recorded : int or array_like of m ints, optional
        Valid records of each realization, ``0 .. nt``; all ``nt`` by default.
    status, message : str or sequence of m str
        ``status`` is not empty ("ok" or why the run stopped).
    where : str
        Prefix of error messages (the file).
    quaternion_tol : float
        Largest deviation from 1 of a given quaternion's norm: the bound of
        :meth:`Store.read` (``backend.QUATERNION_NORM_TOL``), so that a block never stores
        states that a read refuses as damaged.

    Raises
    ------
    StoreError
        One line naming the field and the expectation.
    """
    try:
        start = operator.index(start)
    except TypeError:
        raise StoreError(f"{where}: start must be an integer, got {start!r}") from None
    if not isinstance(arrays, Mapping) or not arrays:
        raise StoreError(f"{where}: arrays must map dataset paths to arrays, got {arrays!r}")
    shapes = schema.row_shapes()
    nt = schema.n_times
    checked: dict[str, np.ndarray] = {}
    m = None
    for name, values in arrays.items():
        if name not in shapes:
            raise StoreError(
                f"{where}: no per-realization dataset {name!r} in the store; expected one of "
                f"{', '.join(shapes)}"
            )
        arr = _real_array(where, name, values)
        row = shapes[name]
        if arr.ndim != 1 + len(row) or arr.shape[1:] != row or arr.shape[0] < 1:
            raise StoreError(
                f"{where}: {name} has shape {arr.shape}, expected (m, {', '.join(map(str, row))}"
                f"{',' if len(row) == 1 else ''}) with m >= 1 realizations"
            )
        if m is None:
            m, first = arr.shape[0], name
        elif arr.shape[0] != m:
            raise StoreError(
                f"{where}: {name} has {arr.shape[0]} realizations, {first} {m}; expected the "
                "same block for every dataset"
            )
        checked[name] = arr
    assert m is not None
    if not (0 <= start and start + m <= n_realizations):
        raise StoreError(
            f"{where}: realizations {start}..{start + m - 1} out of range, expected within "
            f"0..{n_realizations - 1} (the store holds {n_realizations})"
        )
    if recorded is None:
        counts = np.full(m, nt, dtype=np.int64)
    else:
        raw = np.asarray(recorded)
        if raw.dtype.kind not in "iu":
            raise StoreError(f"{where}: recorded holds {raw.dtype}, expected integers 0..{nt}")
        if raw.shape not in ((), (m,)):
            raise StoreError(f"{where}: recorded has shape {raw.shape}, expected () or ({m},)")
        counts = np.broadcast_to(raw, (m,)).astype(np.int64)
        bad = np.flatnonzero((counts < 0) | (counts > nt))
        if bad.size:
            j = int(bad[0])
            raise StoreError(
                f"{where}: recorded[{j}] = {counts[j]} (realization {start + j}), expected "
                f"0..{nt} (the records of /time)"
            )

    def text(label: str, allow_empty: bool):
        def check(value: Any) -> str:
            if not isinstance(value, str) or not (value or allow_empty):
                need = "str" if allow_empty else "non-empty str ('ok' or why the run stopped)"
                raise StoreError(f"{where}: {label} must be a {need}, got {value!r}")
            return value

        return check

    statuses = _per_realization(where, "status", status, m, text("status", False))
    messages = _per_realization(where, "message", message, m, text("message", True))
    block = Block(start, checked, counts, statuses, messages)
    _check_records(block, schema, where, quaternion_tol)
    return block


def _check_records(block: Block, schema: StoreSchema, where: str, quaternion_tol: float) -> None:
    """NaN after each realization's records; finite states and unit quaternions within them."""
    nt = schema.n_times
    valid = np.arange(nt)[None, :] < block.recorded[:, None]  # (m, nt)
    for name, arr in block.arrays.items():
        if name.startswith("params/"):
            continue
        per_record = arr.reshape(arr.shape[0], nt, -1)
        tail = ~valid & ~np.isnan(per_record).all(axis=2)
        if tail.any():
            j, k = (int(x) for x in np.argwhere(tail)[0])
            raise StoreError(
                f"{where}: {name}: realization {block.start + j}, record {k} holds a value after "
                f"its {block.recorded[j]} recorded records; expected NaN there (the fill value)"
            )
        if name.startswith("states/"):
            bad = valid & ~np.isfinite(per_record).all(axis=2)
            if bad.any():
                j, k = (int(x) for x in np.argwhere(bad)[0])
                raise StoreError(
                    f"{where}: {name}: realization {block.start + j}, record {k} is not finite; "
                    "expected finite states in the recorded records"
                )
    if "states/orientation" in block.arrays:
        with np.errstate(over="ignore", invalid="ignore"):
            norm = np.linalg.norm(block.arrays["states/orientation"], axis=-1)  # (m, nt, nb)
        off = valid[:, :, None] & (np.abs(norm - 1.0) > quaternion_tol)
        if off.any():
            j, k, b = (int(x) for x in np.argwhere(off)[0])
            raise StoreError(
                f"{where}: states/orientation: realization {block.start + j}, record {k}, body "
                f"{schema.body_names[b]!r} has norm {norm[j, k, b]:.6g}; expected a unit "
                f"quaternion (within {quaternion_tol:g})"
            )
