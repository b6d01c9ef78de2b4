"""Phase 1 of a write to the HDF5 store: a realization's data, chunk by chunk, in the order that
keeps the file's bytes independent of batching and of who compressed the chunks.

:class:`~workbench.store.hdf5.TrajectoryStore` calls :func:`write_data` for each pack of a batch
between its two flushes (its module docstring: "Crash safety"). Chunks that a worker already
filtered (:class:`~workbench.store.schema.ChunkFilters`) are written as they are with HDF5's
direct chunk write; rows shipped as arrays are filtered by the store with the same filters first
(``TrajectoryStore._write_packed``), and go through HDF5's own filters only where no worker could
reproduce them (lzf). The two give the same bytes (``tests/unit/workbench/test_store.py``,
``test_packed_writes_give_the_bytes_of_row_writes``).

:func:`write_block` is phase 1 of a bulk write (:meth:`Store.write_block
<workbench.store.backend.Store.write_block>`, a :class:`~workbench.store.bulk.Block`): the
datasets given, as slabs of consecutive realizations; the others are not touched.
"""

from __future__ import annotations

from collections.abc import Callable

import h5py
import numpy as np

from workbench.store.bulk import Block
from workbench.store.schema import ChunkFilters, PackedRows, StoreSchema

__all__ = [
    "INIT_SLAB",
    "Handles",
    "find_filters",
    "reset_strings",
    "runs",
    "write_data",
    "write_block",
]

#: Elements of ``status``/``message`` written at once when a file is created: HDF5 holds about
#: 4 kB per chunk a write touches, and keeps it (measured: 400 MB for one write of 10^5 elements);
#: 1024 bound it to ≈ 4 MB, and cost nothing measurable.
INIT_SLAB = 1024


def find_filters(f: h5py.Group, schema: StoreSchema) -> ChunkFilters | None:
    """The filters of the per-record datasets when a worker can reproduce them (shuffle and
    gzip or none, one float64 chunk per realization, the same on every such dataset), else None
    (lzf: h5py's own liblzf, see ``hdf5._compression_kwargs``)."""
    found = set()
    for name, shape in schema.row_shapes().items():
        if name.startswith("params/"):
            continue
        ds = f[name]
        if ds.chunks != (1, *shape) or ds.fletcher32 or ds.scaleoffset is not None:
            return None
        if ds.compression not in (None, "gzip") or ds.dtype != np.float64:
            return None
        level = None if ds.compression is None else int(ds.compression_opts)
        found.add(ChunkFilters(shuffle=bool(ds.shuffle), level=level))
    return found.pop() if len(found) == 1 else None


def reset_strings(f: h5py.Group, i: int) -> None:
    """Set ``status[i]`` and ``message[i]`` to the null reference without reading them.

    An on-disk variable-length element is a 4-byte length followed by a global-heap ID (file
    address + 4-byte index); all zeros is the null sequence, read as ``""``. Writing the raw chunk
    skips HDF5's lookup of the old heap object, which a killed writer may have left dangling.
    """
    _reset(_string_ids(f), i)


def _string_ids(f: h5py.Group, strings: tuple | None = None) -> tuple[bytes, list]:
    """The null element of ``f``'s file and the identifiers of ``status`` and ``message`` (or of
    the datasets ``strings``, when looked up already)."""
    sizeof_addr, _ = f.file.id.get_create_plist().get_sizes()
    strings = strings or tuple(f[name] for name in ("status", "message"))
    return bytes(4 + sizeof_addr + 4), [ds.id for ds in strings]


def _reset(strings: tuple[bytes, list], i: int) -> None:
    null, ids = strings
    for dsid in ids:
        dsid.write_direct_chunk((i,), null)


def runs(indices: np.ndarray) -> list[tuple[int, int]]:
    """``(start, stop)`` positions of the runs of consecutive values in increasing ``indices``."""
    breaks = np.flatnonzero(np.diff(indices) != 1) + 1
    edges = [0, *breaks.tolist(), int(indices.shape[0])]
    return list(zip(edges[:-1], edges[1:], strict=True))


class Handles:
    """The HDF5 objects that writes into an open store use, looked up once per store.

    Per pack, the writes looked ≈ 17 datasets up by name (h5py's ``Group.__getitem__``: 48% of
    the write's time in a profile), each ``.file`` made an h5py ``File`` object (16%), and
    ``Dataset.__setitem__`` built its selections in Python (19%). Looked up once, with the slabs
    written by ``H5Dwrite`` directly: 512 random_box realizations in packs of 16 take 16.9 k
    Python calls instead of 73.5 k, 0.11-0.17 ms of CPU per realization instead of 0.22-0.41
    (2026-11-27, interleaved, busy machine; the same file bytes). The store keeps one
    :class:`Handles` while it writes and drops it in ``close()`` and when a write fails
    (:meth:`close`): no HDF5 identifier may outlive a failed write
    (``hdf5.TrajectoryStore._fail``).

    Attributes
    ----------
    file : h5py.File
        The root file (flushed between the two phases).
    completed : h5py.Dataset
        Read once per batch (which realizations are re-written).
    """

    def __init__(self, f: h5py.Group, chunked: list[str], contiguous: list[str]):
        self.file = f.file
        self.completed = f["completed"]
        status, message = f["status"], f["message"]
        self.strings = _string_ids(f, (status, message))
        self.text = (_ElementWriter(status), _ElementWriter(message))
        self.chunked = list(chunked)
        self.datasets = {name: f[name] for name in chunked}
        self.targets = {name: (ds.id, (0,) * (ds.ndim - 1)) for name, ds in self.datasets.items()}
        # parameters, recorded and completed: contiguous, changed in place as slabs
        self.slabs = {name: _SlabWriter(f[name]) for name in (*contiguous, "recorded", "completed")}

    def mark(self, start: int, stop: int, value: bool) -> None:
        """``completed[start:stop] = value``."""
        self.slabs["completed"].write(start, np.full(stop - start, value, dtype=bool))

    def close(self) -> None:
        """Drop every HDF5 identifier held (idempotent)."""
        for writer in (*self.text, *self.slabs.values()):
            writer.close()
        self.file = self.completed = self.strings = None
        self.datasets, self.targets, self.slabs, self.text = {}, {}, {}, ()


def write_data(h: Handles, p: PackedRows, check: Callable[[], None]) -> None:
    """Write every dataset of the realizations of ``p`` except ``completed``, through the
    store's :class:`Handles`.

    Realization by realization (its strings reset, its chunks, its status and message), as HDF5
    allocates a chunk and a heap object where they are first written: so the bytes do not depend
    on how realizations are grouped into packs and batches. Then the contiguous datasets
    (parameters, ``recorded``), in place, as slabs of consecutive realizations.

    Parameters
    ----------
    check : callable
        Called after each realization: raises when HDF5 failed where h5py could not raise
        (:func:`~workbench.store.failures.catching_io_errors`), so that nothing more is written
        into a file whose state HDF5 lost.
    """
    try:
        for j, i in enumerate(p.indices.tolist()):
            _reset(h.strings, i)
            for name in h.chunked:
                if name in p.chunks:  # filtered by the worker: stored as they are
                    dsid, tail = h.targets[name]
                    dsid.write_direct_chunk((i, *tail), p.chunks[name][j])
                else:
                    h.datasets[name][i] = p.arrays[name][j]
            h.text[0].write(i, p.status[j])
            h.text[1].write(i, p.message[j])
            check()
        for start, stop in runs(p.indices):
            a = int(p.indices[start])
            for name, arr in p.arrays.items():
                if name not in h.targets:
                    h.slabs[name].write(a, arr[start:stop])
            h.slabs["recorded"].write(a, p.recorded[start:stop])
    finally:
        # no dataset identifier may outlive a failed write in this frame (which an exception's
        # traceback keeps): HDF5 closes it at exit on a file that failed, and crashes (SIGSEGV);
        # the store drops its Handles (hence the identifiers they hold) when a write fails
        dsid = None


def write_block(
    h: Handles, block: Block, check: Callable[[], None], filters: ChunkFilters | None = None
) -> None:
    """Write the datasets of ``block`` (and its ``recorded``, ``status``, ``message``), not
    ``completed``, through the store's :class:`Handles`; datasets the block does not hold are
    not touched (they keep their fill value, and no chunk of theirs is allocated).

    In slabs of :data:`INIT_SLAB` realizations, each: the ``status``/``message`` elements reset
    to the null reference (a killed earlier write of the same realizations may have left them
    pointing at a heap object that never reached the disk, see :func:`reset_strings`), the
    chunks of each given per-record dataset (filtered with ``filters``), the text, then the
    contiguous parameters and ``recorded`` in place. A slab whose messages are all ``""`` leaves
    them null, which reads as ``""`` (no heap object: 16 bytes a realization saved). One write
    touching more chunks would make HDF5 hold ≈ 4 kB for each (:data:`INIT_SLAB`). The same
    calls give the same bytes.

    Parameters
    ----------
    check : callable
        Called after each slab, as in :func:`write_data`.
    filters : ChunkFilters, optional
        The store's (:func:`find_filters`): per-record chunks are made with them and written as
        they are, the bytes :func:`write_data` stores for the same rows. None: through HDF5's
        filters.
    """
    for a in range(block.start, block.stop, INIT_SLAB):
        b = min(a + INIT_SLAB, block.stop)
        part = slice(a - block.start, b - block.start)
        for i in range(a, b):
            _reset(h.strings, i)
        for name, arr in block.arrays.items():
            if name not in h.datasets:
                continue
            if filters is None:  # per-record: one chunk per realization, filtered by HDF5
                h.datasets[name][a:b] = arr[part]
            else:  # filtered here, as write_data's chunks are
                dsid, tail = h.targets[name]
                for i, row in zip(range(a, b), arr[part], strict=True):
                    dsid.write_direct_chunk((i, *tail), filters.encode(row))
        h.text[0].write_slab(a, block.status[part])
        if any(block.message[part]):  # the null elements read as "" already: no heap objects
            h.text[1].write_slab(a, block.message[part])
        for name, arr in block.arrays.items():
            if name not in h.datasets:  # parameters: contiguous, changed in place
                h.slabs[name].write(a, arr[part])
        h.slabs["recorded"].write(a, block.recorded[part])
        check()


class _SlabWriter:
    """Writes ``dataset[a : a + len(arr)] = arr`` (along the first axis, the other axes whole)
    with the ``H5Dwrite`` that ``Dataset.__setitem__`` makes (memory type from the array, of the
    dataset's dtype), without building the selection in Python."""

    def __init__(self, ds: h5py.Dataset):
        self.dsid = ds.id
        self.dtype = ds.dtype
        self.tail = tuple(ds.shape[1:])
        self.fspace = ds.id.get_space()

    def write(self, a: int, arr: np.ndarray) -> None:
        arr = np.ascontiguousarray(arr, dtype=self.dtype)
        if arr.shape[1:] != self.tail:  # what __setitem__ would refuse (or broadcast): no guess
            raise ValueError(f"slab of shape {arr.shape} for rows of shape {self.tail}")
        count = (arr.shape[0], *self.tail)
        self.fspace.select_hyperslab((a, *(0,) * len(self.tail)), count)
        self.dsid.write(h5py.h5s.create_simple(count), self.fspace, arr)

    def close(self) -> None:
        """Drop the HDF5 identifiers held."""
        self.dsid = self.fspace = None


class _ElementWriter:
    """Writes element ``i`` of a 1-d string dataset as ``dataset[i] = value`` does, with the same
    HDF5 call (``H5Dwrite`` of a 0-d array of the dataset's dtype to a one-element hyperslab, the
    memory type taken from that array): h5py's ``__setitem__`` spends ≈ 250 µs building the
    selection, six times what the write costs (measured), and a batch of 32 realizations holds
    the GIL for all of it, stopping a serial run's realizations meanwhile."""

    def __init__(self, ds: h5py.Dataset):
        self.dsid = ds.id
        self.dtype = ds.dtype
        self.mspace = h5py.h5s.create_simple((1,))
        self.fspace = ds.id.get_space()

    def write(self, i: int, value: str) -> None:
        self.fspace.select_hyperslab((i,), (1,))
        self.dsid.write(self.mspace, self.fspace, np.asarray(value, dtype=self.dtype))

    def write_slab(self, a: int, values: list[str]) -> None:
        """``dataset[a : a + len(values)] = values``, with one ``H5Dwrite``."""
        arr = np.array(values, dtype=self.dtype)  # object array that keeps the vlen-str dtype
        self.fspace.select_hyperslab((a,), (arr.shape[0],))
        self.dsid.write(h5py.h5s.create_simple(arr.shape), self.fspace, arr)

    def close(self) -> None:
        """Drop the HDF5 identifiers held."""
        self.dsid = self.mspace = self.fspace = None
