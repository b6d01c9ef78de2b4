"""The in-memory store: the reference the HDF5 store is tested against.

:class:`MemoryStore` keeps the datasets of the layout (``docs/architecture.md``, "HDF5 layout")
as numpy arrays, with the file's fill values (NaN rows, ``completed`` false, ``recorded`` 0,
``status`` and ``message`` ``""``), and meets the same :class:`~workbench.store.backend.Store`
contract as :class:`~workbench.store.hdf5.TrajectoryStore`: a sequence of writes, then any read,
gives the same result in both (``tests/unit/workbench/test_store.py``). Nothing is flushed and
nothing survives the process.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import StoreError
from workbench.sim.state import Trajectory
from workbench.store.backend import Store
from workbench.store.bulk import Block
from workbench.store.schema import StoreSchema

__all__ = ["MemoryStore"]


class MemoryStore(Store):
    """A store held in memory.

    Parameters
    ----------
    schema : StoreSchema
    n_realizations : int
        Number of realizations (>= 1).
    nominal : Trajectory, optional
        The nominal run of an ensemble, kept as a store of one realization.
    attrs : mapping, optional
        Root attributes (plain Python values), returned by :attr:`attrs`.
    """

    def __init__(
        self,
        schema: StoreSchema,
        n_realizations: int,
        *,
        nominal: Trajectory | None = None,
        attrs: Mapping[str, Any] | None = None,
    ):
        if int(n_realizations) < 1:
            raise StoreError(f"n_realizations must be >= 1, got {n_realizations}")
        self._schema = schema
        self._n_real = n = int(n_realizations)
        self._path = Path("<memory>")
        self._attrs = dict(attrs or {})
        self._data: dict[str, np.ndarray] = {
            name: np.full((n, *shape), np.nan) for name, shape in schema.row_shapes().items()
        }
        self._data["completed"] = np.zeros(n, dtype=bool)
        self._data["recorded"] = np.zeros(n, dtype=np.int64)
        self._data["status"] = np.full(n, "", dtype=object)
        self._data["message"] = np.full(n, "", dtype=object)
        self._nominal_store = None
        if nominal is not None:
            self._nominal_store = MemoryStore(schema, 1)
            self._nominal_store.write(0, nominal)
        self._open = True

    def _dataset(self, name: str) -> np.ndarray:
        return self._data[name]

    def _string(self, name: str, i: int) -> str:
        return str(self._data[name][i])

    def _check_writable(self) -> None:
        if not self._open:
            raise StoreError(f"{self._path}: closed")

    def _write_rows(self, batch: list[tuple[int, int, dict[str, np.ndarray], str, str]]) -> None:
        for i, n, rows, status, message in batch:
            self._data["completed"][i] = False
            for name, arr in rows.items():
                self._data[name][i] = arr
            self._data["recorded"][i] = n
            self._data["status"][i] = status
            self._data["message"][i] = message
        for i, *_ in batch:
            self._data["completed"][i] = True

    def _write_block(self, block: Block) -> None:
        rows = slice(block.start, block.stop)
        for name, arr in block.arrays.items():
            self._data[name][rows] = arr
        self._data["recorded"][rows] = block.recorded
        self._data["status"][rows] = block.status
        self._data["message"][rows] = block.message
        self._data["completed"][rows] = True

    def _nominal(self) -> MemoryStore | None:
        return self._nominal_store

    @property
    def attrs(self) -> dict[str, Any]:
        return dict(self._attrs)

    @property
    def is_open(self) -> bool:
        return self._open

    def close(self) -> None:
        self._open = False

    def __repr__(self) -> str:
        return f"<MemoryStore n_realizations={self._n_real}>"
