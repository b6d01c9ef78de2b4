"""Storage of trajectories: one HDF5 file per run or ensemble, crash-safe and resumable.

The only place where trajectory files are opened (``docs/architecture.md``, "HDF5 layout"):

- :mod:`~workbench.store.schema`: what a store holds (:class:`StoreSchema`) and how a
  :class:`~workbench.sim.state.Trajectory` maps onto its datasets; pure numpy;
- :mod:`~workbench.store.backend`: the contract every store meets (:class:`Store`: write, read,
  stream) and :class:`BatchWriter`, the ensembles' batched two-phase writer;
- :mod:`~workbench.store.bulk`: a block of realizations written from arrays
  (:meth:`Store.write_block`: the datasets given, one two-phase flush), checked first;
- :mod:`~workbench.store.hdf5`: the file (:class:`TrajectoryStore`, :func:`write_trajectory`,
  :func:`read_trajectory`), its layout and its crash safety;
- :mod:`~workbench.store.failures`: a write that fails (disk full, I/O error):
  :class:`StoreWriteError`, exit status 1, every completed realization kept;
- :mod:`~workbench.store.reading`: damaged or foreign files turned into one-line errors;
- :mod:`~workbench.store.summary`: :func:`describe`, for ``workbench inspect``;
- :mod:`~workbench.store.memory`: :class:`MemoryStore`, the in-memory reference the file is
  tested against;
- :mod:`~workbench.store.conventions`: the attributes that make a file self-describing (units,
  frames, axis names, descriptions; ``docs/hdf5.md``), and the layout's :data:`FORMAT_VERSION`;
- :mod:`~workbench.store.xarray_view`: :func:`open_dataset`, a store as an ``xarray.Dataset``
  (xarray is optional: ``pip install 'rigid-workbench[xarray]'``).
"""

from __future__ import annotations

from workbench.store.backend import BatchWriter, Store
from workbench.store.hdf5 import (
    FORMAT_VERSION,
    StoreWriteError,
    TrajectoryStore,
    read_trajectory,
    write_trajectory,
)
from workbench.store.memory import MemoryStore
from workbench.store.schema import StoreSchema
from workbench.store.summary import describe
from workbench.store.xarray_view import open_dataset, store_to_dataset

__all__ = [
    "FORMAT_VERSION",
    "StoreSchema",
    "Store",
    "TrajectoryStore",
    "StoreWriteError",
    "MemoryStore",
    "BatchWriter",
    "write_trajectory",
    "read_trajectory",
    "describe",
    "open_dataset",
    "store_to_dataset",
]
