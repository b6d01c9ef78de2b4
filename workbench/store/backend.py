"""The contract every store meets, written once on top of a few storage primitives.

:class:`Store` implements the public reading and writing API (``write_many``, ``read``,
``read_array``, ``iter_rows``, ...) in terms of the datasets of the layout
(``docs/architecture.md``, "HDF5 layout"); a backend supplies the primitives: a dataset by path
(anything indexable like a numpy array: an ``h5py.Dataset`` or an ``ndarray``), the string
elements ``status``/``message``, and how a batch of rows reaches storage. Two backends exist:
:class:`~workbench.store.hdf5.TrajectoryStore` (the file, crash-safe) and
:class:`~workbench.store.memory.MemoryStore` (the in-memory reference its tests compare against,
as emcee's ``Backend`` and ``HDFBackend``).

:class:`BatchWriter` writes finished realizations of an ensemble in batches, each with one
two-phase flush.
"""

from __future__ import annotations

import operator
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import StoreError
from workbench.sim.state import STATE_FIELDS, Trajectory
from workbench.store.conventions import layout_attrs
from workbench.store.schema import StoreSchema

__all__ = ["Store", "BatchWriter", "QUATERNION_NORM_TOL"]

#: Largest deviation from 1 of a stored quaternion's norm that :meth:`Store.read` accepts: the
#: simulator's own bound (``workbench.sim.forward.QUATERNION_NORM_TOL``, 1e-3; PyBullet keeps
#: norms within 1e-15 of 1 and a run is stopped as "nonfinite" beyond it), so every quaternion a
#: run stores passes, and a zero or damaged one (a norm of 0, or off by a flipped high bit) does
#: not reach a viewer or a figure.
QUATERNION_NORM_TOL = 1e-3


class Store(ABC):
    """A set of ``n_realizations`` realizations sharing one :class:`StoreSchema`.

    Realization ``i`` is missing until written; once written it is *completed* and reads back as
    exactly the trajectory written. Use as a context manager or call :meth:`close`.

    Subclasses set ``_schema``, ``_n_real`` and ``_path`` and implement the abstract primitives
    below; everything else is written here once.
    """

    _schema: StoreSchema
    _n_real: int
    _path: Path

    # -- primitives -------------------------------------------------------------------------

    @abstractmethod
    def _dataset(self, name: str) -> Any:
        """The dataset at ``name`` (indexable like an ndarray); ``KeyError`` when there is none."""

    @abstractmethod
    def _string(self, name: str, i: int) -> str:
        """Element ``i`` of the string dataset ``status`` or ``message``."""

    @abstractmethod
    def _check_writable(self) -> None:
        """Raise :class:`StoreError` when the store is read-only."""

    @abstractmethod
    def _write_rows(self, batch: list[tuple[int, int, dict[str, np.ndarray], str, str]]) -> None:
        """Store ``(i, recorded, rows, status, message)`` for each realization of ``batch`` (rows
        as :meth:`StoreSchema.rows`) and mark them completed, the marks last."""

    @abstractmethod
    def _nominal(self) -> Store | None:
        """The nominal run of an ensemble as a store of one realization, or ``None``."""

    @property
    @abstractmethod
    def attrs(self) -> dict[str, Any]:
        """Root attributes as plain Python values."""

    @property
    @abstractmethod
    def is_open(self) -> bool:
        """Whether the store can still be read and written."""

    @abstractmethod
    def close(self) -> None:
        """Release the storage (idempotent)."""

    # -- properties -------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    @property
    def schema(self) -> StoreSchema:
        return self._schema

    @property
    def n_realizations(self) -> int:
        return self._n_real

    @property
    def completed(self) -> np.ndarray:
        """Boolean mask, shape (n_realizations,), of realizations entirely written (a copy)."""
        return np.asarray(self._dataset("completed")[()], dtype=bool)

    @property
    def recorded(self) -> np.ndarray:
        """Valid records of each realization, shape (n_realizations,) int64 (a copy); the
        records after them are NaN. Meaningful for completed realizations only."""
        return np.asarray(self._dataset("recorded")[()], dtype=np.int64)

    def missing(self) -> np.ndarray:
        """Indices, shape (n_missing,), of realizations not yet completed."""
        return np.flatnonzero(~self.completed)

    # -- writing ----------------------------------------------------------------------------

    def _index(self, i: int) -> int:
        try:
            i = operator.index(i)
        except TypeError:
            raise StoreError(f"realization index must be an integer, got {i!r}") from None
        if not 0 <= i < self._n_real:
            raise StoreError(
                f"{self._path}: realization {i} out of range (store holds {self._n_real})"
            )
        return i

    def write(self, i: int, traj: Trajectory) -> None:
        """Write realization ``i`` and mark it completed (two-phase, crash-safe).

        Every dataset of the realization is written and flushed before ``completed[i]`` is set
        and flushed. A trajectory shorter than the store's ``nt`` (a run stopped early) fills
        the first ``traj.n_times`` records; the rest is NaN. Rewriting a completed realization
        first clears its ``completed`` flag.

        Parameters
        ----------
        i : int
            Realization index, ``0 <= i < n_realizations``.
        traj : Trajectory
            Must match the schema: same bodies, observers, diagnostics, parameter keys and
            shapes, times equal to the first records of ``/time``.

        Raises
        ------
        StoreError
            The store is read-only, ``i`` is out of range, or ``traj`` does not match the schema
            (the message names the mismatch).
        """
        self.write_many([(i, traj)])

    def write_many(self, items: Iterable[tuple[int, Trajectory]]) -> None:
        """Write several realizations with one two-phase flush for the batch.

        Every dataset of every ``(i, traj)`` in ``items`` is written and flushed; only then are
        their ``completed`` flags set and flushed. Crash safety is that of :meth:`write` (a
        killed writer leaves none of the batch marked completed, or all of it), at a fraction of
        the flush cost for short realizations. Nothing is written unless every item matches the
        schema.
        """
        items = [(self._index(i), traj) for i, traj in items]
        if not items:
            return
        self._check_writable()
        batch = []
        for i, traj in items:
            n, rows = self._schema.rows(traj, f"{self._path}: realization {i}")
            batch.append((i, n, rows, traj.status, traj.message))
        self._write_rows(batch)

    # -- reading ----------------------------------------------------------------------------

    def read(self, i: int = 0) -> Trajectory:
        """Realization ``i`` as a :class:`~workbench.sim.state.Trajectory` of its recorded steps.

        Returns
        -------
        Trajectory
            ``time`` shape (recorded[i],), states (recorded[i], n_bodies, k), observers,
            diagnostics, params (arrays of their declared shapes), observer_info, status, message.

        Raises
        ------
        StoreError
            ``i`` is out of range or realization ``i`` is not completed.
        """
        i = self._index(i)
        if not self._dataset("completed")[i]:
            raise StoreError(f"{self._path}: realization {i} is not completed")

        def row(name: str, n: int) -> np.ndarray:
            ds = self._dataset(name)
            return np.asarray(ds[i]) if name.startswith("params/") else ds[i, :n]

        n = int(self._dataset("recorded")[i])
        if not 0 <= n <= self._schema.n_times:
            raise StoreError(
                f"{self._path}: dataset /recorded[{i}] = {n}, expected 0..{self._schema.n_times} "
                "(the records of /time); the file is damaged"
            )
        traj = self._schema.trajectory(
            n, row, self._string("status", i), self._string("message", i)
        )
        self._check_states(i, traj)
        return traj

    def _check_states(self, i: int, traj: Trajectory) -> None:
        """Refuse recorded states that no run stores: non-finite values (a run stops before
        them, status "nonfinite") or quaternions off unit norm by more than
        :data:`QUATERNION_NORM_TOL`. The message names the dataset, realization and record."""
        for name in STATE_FIELDS:
            values = getattr(traj, name)
            bad = ~np.isfinite(values).all(axis=tuple(range(1, values.ndim)))
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise StoreError(
                    f"{self._path}: dataset /states/{name}: realization {i}, record {k} is not "
                    "finite; the file is damaged"
                )
        with np.errstate(over="ignore", invalid="ignore"):  # a damaged 1e308 has norm inf
            norm = np.linalg.norm(traj.orientation, axis=-1)
        off = np.abs(norm - 1.0) > QUATERNION_NORM_TOL
        if off.any():
            k, b = (int(x) for x in np.argwhere(off)[0])
            raise StoreError(
                f"{self._path}: dataset /states/orientation: realization {i}, record {k}, body "
                f"{traj.body_names[b]!r} has a quaternion of norm {norm[k, b]:.6g}; expected a "
                f"unit quaternion (within {QUATERNION_NORM_TOL:g}), the file is damaged"
            )

    def _existing(self, name: str) -> Any:
        try:
            return self._dataset(name)
        except KeyError:
            raise StoreError(f"{self._path}: no dataset '{name}'") from None

    def __contains__(self, name: str) -> bool:
        """Whether the store holds a dataset at ``name`` (e.g. one of ``extra_datasets``)."""
        try:
            self._dataset(name)
        except KeyError:
            return False
        return True

    def read_dataset(self, name: str) -> np.ndarray:
        """The dataset at ``name`` exactly as stored, e.g. one of the ``extra_datasets`` of
        :meth:`~workbench.store.hdf5.TrajectoryStore.create` (``reverse/islands``)."""
        return np.asarray(self._existing(name)[()])

    def read_array(self, name: str, realizations: Iterable[int] | None = None) -> np.ndarray:
        """A dataset across realizations, e.g. ``observers/height`` (n_real, nt, k) or
        ``params/ball/mass`` (n_real,); rows of realizations not completed are NaN.

        Parameters
        ----------
        name : str
        realizations : iterable of int, optional
            Only these rows (strictly increasing indices) of a per-realization dataset, read
            without the others; all by default.
        """
        ds = self._existing(name)
        if realizations is None:
            data = np.asarray(ds[()], dtype=float)
            if data.shape[:1] == (self._n_real,):
                data[~self.completed] = np.nan
            return data
        rows = self._rows(realizations)
        if rows.size == 0:
            return np.empty((0, *ds.shape[1:]))
        data = np.asarray(ds[rows], dtype=float)
        data[~self.completed[rows]] = np.nan
        return data

    def _rows(self, realizations: Iterable[int]) -> np.ndarray:
        """``realizations`` as strictly increasing valid indices, shape (m,)."""
        rows = np.array([self._index(i) for i in realizations], dtype=np.int64)
        if rows.size and not np.all(np.diff(rows) > 0):
            raise StoreError(f"realizations must be strictly increasing, got {rows.tolist()}")
        return rows

    def dataset_attrs(self, name: str) -> dict[str, Any]:
        """The attributes of the dataset at ``name`` (``units``, ``description``, ``dims``,
        ``frame``, ...; ``docs/hdf5.md``) as plain Python values, text as ``str``."""
        described = layout_attrs(self._schema)
        if name not in described:
            self._existing(name)  # an extra dataset, or a StoreError naming the missing one
        return dict(described.get(name, {}))

    def iter_rows(
        self,
        name: str,
        chunk_size: int,
        *,
        rows: np.ndarray | None = None,
        component: int | None = None,
    ) -> Iterator[np.ndarray]:
        """Stream a per-realization dataset, ``chunk_size`` realizations read at a time.

        Parameters
        ----------
        name : str
            Dataset path, e.g. ``observers/height`` (one chunk per realization on disk).
        chunk_size : int
            Realizations read at once: memory is bounded by ``chunk_size`` rows.
        rows : ndarray of bool, shape (n_realizations,), optional
            Realizations to yield (those not completed never are); all completed by default.
        component : int, optional
            Index on the last axis to keep (e.g. one observer component).

        Yields
        ------
        ndarray, float64
            The selected realizations among ``chunk_size`` consecutive ones, in index order,
            shape (m, ...) with ``1 <= m <= chunk_size``; windows holding none are skipped.
        """
        ds = self._existing(name)
        keep_all = self.completed if rows is None else self.completed & np.asarray(rows, bool)
        tail = () if component is None else (Ellipsis, component)
        for start in range(0, self._n_real, chunk_size):
            stop = min(start + chunk_size, self._n_real)
            keep = keep_all[start:stop]
            if keep.any():
                yield np.asarray(ds[(slice(start, stop), *tail)], dtype=np.float64)[keep]

    def statuses(self) -> list[str]:
        """Status of every completed realization ("ok", "nonfinite", "error", ...)."""
        return [self._string("status", i) for i in np.flatnonzero(self.completed)]

    def messages(self) -> list[str]:
        """Message of every completed realization (``""`` for most that ended "ok")."""
        return [self._string("message", i) for i in np.flatnonzero(self.completed)]

    def read_nominal(self) -> Trajectory | None:
        """The nominal run stored with an ensemble (``/nominal``), or ``None``."""
        nominal = self._nominal()
        return None if nominal is None else nominal.read(0)

    # -- lifetime ---------------------------------------------------------------------------

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BatchWriter:
    """Writes finished realizations into a store in batches, one two-phase flush per batch.

    Two flushes cost about 5 ms, more than a cheap realization, so an ensemble collects
    realizations and writes a batch once it holds ``batch_size`` of them or ``seconds`` have
    passed since the last write: a killed run loses at most that much work. Leaving the ``with``
    block writes what is pending; after an exception, it does so only while the store is open
    (keeping what finished) and without calling ``on_write``.

    Parameters
    ----------
    store : Store
    batch_size : int
    seconds : float
    on_write : callable, optional
        ``on_write(k)`` after each batch of ``k`` realizations is on disk.
    order : iterable of int, optional
        Write the realizations in this order, whatever the order they arrive in: one that
        arrives early waits (in memory) for those before it. HDF5 places data where it is first
        written, so this makes the file's bytes independent of the completion order of parallel
        workers (``docs/hdf5.md``, "Identical bytes"); a killed run may then lose the waiting
        ones too. Realizations not in ``order`` are written as they arrive.
    """

    def __init__(
        self,
        store: Store,
        *,
        batch_size: int,
        seconds: float,
        on_write: Callable[[int], None] | None = None,
        order: Iterable[int] | None = None,
    ):
        self.store = store
        self.batch_size = batch_size
        self.seconds = seconds
        self._on_write = on_write
        self._pending: list[tuple[int, Trajectory]] = []
        self._last_write = time.perf_counter()
        self._order = [] if order is None else [int(i) for i in order]
        self._ordered = set(self._order)
        self._next = 0  # position in _order of the next realization to write
        self._waiting: dict[int, Trajectory] = {}

    def add(self, i: int, traj: Trajectory) -> None:
        """Queue realization ``i``; write the batch when it is full or old enough."""
        if i in self._ordered:
            self._waiting[i] = traj
            while self._next < len(self._order) and self._order[self._next] in self._waiting:
                j = self._order[self._next]
                self._pending.append((j, self._waiting.pop(j)))
                self._next += 1
        else:
            self._pending.append((i, traj))
        stale = time.perf_counter() - self._last_write > self.seconds
        if len(self._pending) >= self.batch_size or (stale and self._pending):
            self.flush()

    def flush(self) -> None:
        """Write the pending realizations (if any) with one two-phase flush; realizations that
        wait for an earlier one in ``order`` stay queued."""
        if not self._pending:
            return
        self.store.write_many(self._pending)
        k = len(self._pending)
        self._pending.clear()
        self._last_write = time.perf_counter()
        if self._on_write is not None:
            self._on_write(k)

    def _drain_waiting(self) -> None:
        """Queue the waiting realizations, in ``order``, after the pending ones."""
        for j in self._order[self._next :]:
            if j in self._waiting:
                self._pending.append((j, self._waiting.pop(j)))
        self._next = len(self._order)

    def __enter__(self) -> BatchWriter:
        return self

    def __exit__(self, exc_type: type | None, *exc: object) -> None:
        self._drain_waiting()
        if exc_type is None:
            self.flush()
        elif self._pending and self.store.is_open:  # interrupted: keep what finished
            self.store.write_many(self._pending)
