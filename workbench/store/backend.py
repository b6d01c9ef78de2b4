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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import StoreError
from workbench.sim.state import STATE_FIELDS, Trajectory
from workbench.store.bulk import Block, check_block
from workbench.store.conventions import layout_attrs
from workbench.store.schema import ChunkFilters, PackedRows, StoreSchema, pack

__all__ = ["Store", "BatchWriter", "QUATERNION_NORM_TOL"]

#: Largest deviation from 1 of a stored quaternion's norm that :meth:`Store.read` accepts: the
#: simulator's own bound (``workbench.sim.forward.QUATERNION_NORM_TOL``, 1e-3; PyBullet keeps
#: norms within 1e-15 of 1 and a run is stopped as "nonfinite" beyond it), so every quaternion a
#: run stores passes, and a zero or damaged one (a norm of 0, or off by a flipped high bit) does
#: not reach a viewer or a figure.
QUATERNION_NORM_TOL = 1e-3

#: Bytes of one window of :meth:`Store.iter_time_windows`: 64 MiB holds 26 records of a 3-component
#: observer of 10^5 realizations, so its 101 records are read in 4 passes over the file.
WINDOW_BYTES = 64 * 2**20

#: Realizations read at once by :meth:`Store.iter_time_windows`: HDF5 keeps ≈ 4 kB for each chunk
#: (one per realization) a read touches (measured on writes: 400 MB for 10^5 at once).
READ_BLOCK = 1024


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
    def _write_block(self, block: Block) -> None:
        """Store the datasets of ``block`` (checked, none of its realizations completed), its
        ``recorded``, ``status`` and ``message``, and mark its realizations completed, the marks
        last; datasets the block does not hold stay as they are."""

    def _write_packed(self, packs: list[PackedRows]) -> None:
        """Store the realizations of ``packs`` (checked against the schema when packed) and
        mark them completed, the marks last; by default decoded and given to
        :meth:`_write_rows`."""
        self._write_rows([row for p in packs for row in p.rows(self._schema)])

    def chunk_filters(self) -> ChunkFilters | None:
        """The filters whose output :meth:`write_packed` stores as it is, or None: then
        realizations are packed as arrays."""
        return None

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

    def write_packed(self, packs: Iterable[PackedRows]) -> None:
        """Write packed realizations (:func:`~workbench.store.schema.pack`, what ensemble
        workers return) with one two-phase flush for all of them, as :meth:`write_many`.

        Chunks filtered with other filters than :meth:`chunk_filters` are decoded first.
        """
        packs = [p for p in packs if len(p)]
        if not packs:
            return
        for p in packs:
            for i in (p.indices[0], p.indices[-1]):
                self._index(int(i))
        self._check_writable()
        own = self.chunk_filters()
        packs = [p if not p.chunks or p.filters == own else self._repacked(p) for p in packs]
        self._write_packed(packs)

    def write_block(
        self,
        start: int,
        arrays: Mapping[str, Any],
        *,
        recorded: int | Sequence[int] | np.ndarray | None = None,
        status: str | Sequence[str] = "ok",
        message: str | Sequence[str] = "",
    ) -> None:
        """Write a block of realizations from arrays and mark them completed, with one two-phase
        flush: realizations ``start .. start + m - 1``, ``m`` the arrays' first axis.

        For data that are not trajectories (synthetic realizations, outputs computed elsewhere):
        no :class:`~workbench.sim.state.Trajectory` per realization, and only the datasets given
        are written. The others keep their fill value (NaN; in the file no chunk of theirs is
        allocated), so a realization given observers only reads back through
        :meth:`read_array`, :meth:`iter_rows` and :meth:`iter_time_windows`, while :meth:`read`
        refuses it for its NaN states. Crash safety is that of :meth:`write_many`: every dataset
        of the block is written and flushed before the block's ``completed`` flags are set and
        flushed, so a writer killed during a block leaves the earlier blocks completed and none of
        this one. A block interrupted so is written again with the same datasets.

        Parameters
        ----------
        start : int
            First realization of the block.
        arrays : mapping of str to array_like
            By dataset path, as :meth:`StoreSchema.row_shapes
            <workbench.store.schema.StoreSchema.row_shapes>` names them (``states/position``,
            ``observers/<name>``, ``diagnostics/<name>``, ``joints/<field>``,
            ``params/<body>/<quantity>``): shape ``(m, *row_shape)``, the same ``m >= 1`` for
            all, real numbers (stored as float64). Per-record rows hold ``nt`` records, NaN after
            the realization's ``recorded``; states given are finite within ``recorded``, their
            quaternions of unit norm (to :data:`QUATERNION_NORM_TOL`).
        recorded : int or array_like of m ints, optional
            Valid records of each realization, ``0 .. nt``; all ``nt`` by default.
        status : str or sequence of m str
            "ok" (the default) or why the run stopped; not empty.
        message : str or sequence of m str

        Raises
        ------
        StoreError
            The store is read-only, a realization of the block is out of range or already
            completed (:meth:`write` replaces one), or an argument does not match the schema: one
            line naming the field and the expectation. Nothing is written then.
        StoreWriteError
            The file could not be written (disk full, I/O error): closed, the blocks completed
            before kept.
        """
        where = f"{self._path}: write_block"
        block = check_block(
            self._schema,
            self._n_real,
            start,
            arrays,
            recorded,
            status,
            message,
            where,
            quaternion_tol=QUATERNION_NORM_TOL,
        )
        self._check_writable()
        done = np.flatnonzero(self.completed[block.start : block.stop]) + block.start
        if done.size:
            listed = ", ".join(map(str, done[:5].tolist())) + (", ..." if done.size > 5 else "")
            raise StoreError(
                f"{where}: realizations {listed} of {block.start}..{block.stop - 1} are already "
                "completed; expected realizations not yet written (write() replaces one)"
            )
        self._write_block(block)

    def _repacked(self, p: PackedRows) -> PackedRows:
        arrays = dict(p.arrays)
        for name, shape in self._schema.row_shapes().items():
            if name in p.chunks:
                arrays[name] = np.stack([p.filters.decode(c, shape) for c in p.chunks[name]])
        return PackedRows(p.indices, p.recorded, p.status, p.message, arrays, {}, None, p.seconds)

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
        self._check_recorded(i, n)
        traj = self._schema.trajectory(
            n, row, self._string("status", i), self._string("message", i)
        )
        self._check_states(i, traj)
        return traj

    def _check_recorded(self, i: int, n: int) -> None:
        """Refuse a ``recorded`` below the records present: a run fills the records after its
        last with NaN, so a value at record ``n`` means ``recorded`` was cut (issue 39: edited to
        0 or 1, it was read as a run of one record). One record of one body read."""
        if n >= self._schema.n_times or self._schema.n_bodies == 0:
            return
        after = np.asarray(self._dataset("states/position")[i, n], dtype=np.float64)
        if not np.isnan(after).all():
            raise StoreError(
                f"{self._path}: dataset /recorded[{i}] = {n}, but record {n} of "
                f"/states/position holds values (a run stores NaN after its last record); "
                "the file is damaged"
            )

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

    def iter_time_windows(
        self, name: str, max_bytes: int | None = None, *, rows: np.ndarray | None = None
    ) -> Iterator[tuple[slice, np.ndarray]]:
        """Stream a per-record dataset by windows of records, every completed realization at once:
        what per-record statistics over realizations (means, quantiles) need, in bounded memory.

        Parameters
        ----------
        name : str
            ``states/...``, ``observers/...`` or ``diagnostics/...``.
        max_bytes : int, optional
            Bytes of one window (at least one record is read whatever the size); default
            :data:`WINDOW_BYTES`.
        rows : ndarray of bool, shape (n_realizations,), optional
            Realizations to read (those not completed never are); all completed by default.
            A reader of a file another process is writing passes the rows it read before, so
            that every window holds the same realizations.

        Yields
        ------
        records : slice
            The window, on the records axis (of ``/time``).
        data : ndarray, float64, shape (n_completed, records, ...)
            The completed realizations' values, in index order.
        """
        ds = self._existing(name)
        max_bytes = WINDOW_BYTES if max_bytes is None else max_bytes
        done = self.completed if rows is None else self.completed & np.asarray(rows, bool)
        n_done = int(done.sum())
        nt = self._schema.n_times
        per_record = max(1, n_done) * int(np.prod(ds.shape[2:], dtype=np.int64)) * 8
        width = max(1, min(nt, int(max_bytes // per_record)))
        for start in range(0, nt, width):
            records = slice(start, min(start + width, nt))
            out = np.empty((n_done, records.stop - start, *ds.shape[2:]))
            k = 0
            # realizations in blocks: HDF5 holds ≈ 4 kB for every chunk one read touches
            for first in range(0, self._n_real, READ_BLOCK):
                last = min(first + READ_BLOCK, self._n_real)
                keep = done[first:last]
                if keep.any():
                    block = np.asarray(ds[first:last, records], dtype=np.float64)[keep]
                    out[k : k + block.shape[0]] = block
                    k += block.shape[0]
            yield records, out

    def statuses(self) -> list[str]:
        """Status of every completed realization ("ok", "nonfinite", "error", ...)."""
        return self._completed_strings("status")

    def messages(self) -> list[str]:
        """Message of every completed realization (``""`` for most that ended "ok")."""
        return self._completed_strings("message")

    def _strings(self, name: str, start: int, stop: int) -> list[str]:
        """Elements ``start .. stop - 1`` of ``status`` or ``message``, all of completed
        realizations; one by one unless a backend reads them at once."""
        return [self._string(name, i) for i in range(start, stop)]

    def _completed_strings(self, name: str) -> list[str]:
        """``name``'s elements of the completed realizations, read by runs of consecutive ones
        (of at most :data:`READ_BLOCK`): never an element of a realization not completed, which
        may refer to a heap object a killed writer lost (``hdf5.py``, "Crash safety")."""
        done = np.flatnonzero(self.completed)
        edges = [0, *(np.flatnonzero(np.diff(done) != 1) + 1).tolist(), done.shape[0]]
        out: list[str] = []
        for a, b in zip(edges[:-1], edges[1:], strict=True):
            for first in range(a, b, READ_BLOCK):
                last = min(first + READ_BLOCK, b)
                out += self._strings(name, int(done[first]), int(done[last - 1]) + 1)
        return out

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

    Realizations arrive one by one (:meth:`add`) or packed (:meth:`add_packed`, the tasks of
    an ensemble).

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
        ones too. Realizations not in ``order`` are written as they arrive. A pack must hold
        consecutive entries of ``order``. What waits is bounded by what the caller has in
        flight: an ensemble keeps a few tasks per worker (``bounded_map``).
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
        self._pending: list[tuple[int, Trajectory] | PackedRows] = []
        self._n_pending = 0
        self._last_write = time.perf_counter()
        if order is not None and not isinstance(order, np.ndarray | range):
            order = list(order)
        self._order = np.asarray([] if order is None else order, dtype=np.int64).reshape(-1)
        # an increasing order (an ensemble's) is searched, 8 bytes a realization; any other is
        # mapped (≈ 100 bytes a realization)
        self._sorted = bool(np.all(np.diff(self._order) > 0))
        self._map = None if self._sorted else {int(i): k for k, i in enumerate(self._order)}
        self._next = 0  # position in _order of the next realization to write
        self._waiting: dict[int, tuple[int, Trajectory] | PackedRows] = {}

    @staticmethod
    def _size(entry) -> int:
        return len(entry) if isinstance(entry, PackedRows) else 1

    def add(self, i: int, traj: Trajectory) -> None:
        """Queue realization ``i``; write the batch when it is full or old enough."""
        self._queue(int(i), (i, traj))

    def add_packed(self, packed: PackedRows) -> None:
        """Queue packed realizations; write the batch when it is full or old enough."""
        if len(packed):
            self._queue(int(packed.indices[0]), packed)

    def _position(self, i: int) -> int | None:
        """Position of realization ``i`` in ``order``, or None."""
        if self._map is not None:
            return self._map.get(i)
        k = int(np.searchsorted(self._order, i))
        return k if k < self._order.shape[0] and self._order[k] == i else None

    def _queue(self, first: int, entry) -> None:
        position = self._position(first)
        if position is not None:
            self._waiting[position] = entry
            while self._next in self._waiting:
                ready = self._waiting.pop(self._next)
                self._append(ready)
                self._next += self._size(ready)
        else:
            self._append(entry)
        while self._n_pending >= self.batch_size:  # whole batches, cut at the same places
            self._flush_batch()
        stale = time.perf_counter() - self._last_write > self.seconds
        if stale and self._pending:
            self.flush()

    def _flush_batch(self) -> None:
        """Write exactly ``batch_size`` pending realizations (a pack may be split).

        Batches of a fixed size end at the same realizations whatever the packing, so a run
        killed or stopped by a full disk fails at the same places: with batches that end
        anywhere, an ENOSPC inside HDF5 was seen to leave a chunk index pointing past the end of
        the file (tests/integration/test_disk_full.py)."""
        batch, n = [], 0
        while n < self.batch_size:
            entry = self._pending.pop(0)
            size = self._size(entry)
            if n + size > self.batch_size:
                entry, rest = entry.split(self.batch_size - n)
                self._pending.insert(0, rest)
                size = len(entry)
            batch.append(entry)
            n += size
        self._n_pending -= n
        rest, self._pending = self._pending, batch
        k, self._n_pending = self._n_pending, n
        try:
            self._write()
        finally:
            self._pending, self._n_pending = rest, k
        self._last_write = time.perf_counter()
        if self._on_write is not None:
            self._on_write(n)

    def _append(self, entry) -> None:
        self._pending.append(entry)
        self._n_pending += self._size(entry)

    @property
    def waiting(self) -> int:
        """Realizations held in memory until those before them in ``order`` arrive."""
        return sum(self._size(e) for e in self._waiting.values())

    def _write(self) -> int:
        """Write the pending realizations, in index order, with one two-phase flush."""
        singles = [e for e in self._pending if not isinstance(e, PackedRows)]
        packs = [e for e in self._pending if isinstance(e, PackedRows)]
        if singles:
            filters = self.store.chunk_filters()
            packs.append(
                pack(
                    self.store.schema,
                    sorted(singles, key=lambda e: e[0]),
                    str(self.store.path),
                    filters,
                )  # fmt: skip
            )
        packs.sort(key=lambda p: int(p.indices[0]))
        self.store.write_packed(packs)
        k = self._n_pending
        self._pending.clear()
        self._n_pending = 0
        return k

    def flush(self) -> None:
        """Write the pending realizations (if any) with one two-phase flush; realizations that
        wait for an earlier one in ``order`` stay queued."""
        if not self._pending:
            return
        k = self._write()
        self._last_write = time.perf_counter()
        if self._on_write is not None:
            self._on_write(k)

    def _drain_waiting(self) -> None:
        """Queue the waiting realizations, in ``order``, after the pending ones."""
        for position in sorted(self._waiting):
            self._append(self._waiting.pop(position))
        self._next = len(self._order)

    def __enter__(self) -> BatchWriter:
        return self

    def __exit__(self, exc_type: type | None, *exc: object) -> None:
        self._drain_waiting()
        if exc_type is None:
            self.flush()
        elif self._pending and self.store.is_open:  # interrupted: keep what finished
            self._write()
