"""Phase 1 of a write to the HDF5 store: a realization's data, chunk by chunk, in the order that
keeps the file's bytes independent of batching and of who compressed the chunks.

:class:`~workbench.store.hdf5.TrajectoryStore` calls :func:`write_data` for each pack of a batch
between its two flushes (its module docstring: "Crash safety"). Chunks that a worker already
filtered (:class:`~workbench.store.schema.ChunkFilters`) are written as they are with HDF5's
direct chunk write; rows shipped as arrays go through HDF5's own filters. The two give the same
bytes (``tests/unit/workbench/test_store.py``, ``test_packed_writes_give_the_bytes_of_row_writes``).
"""

from __future__ import annotations

from collections.abc import Callable

import h5py
import numpy as np

from workbench.store.schema import ChunkFilters, PackedRows, StoreSchema

__all__ = ["INIT_SLAB", "find_filters", "reset_strings", "runs", "write_data"]

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


def write_data(f: h5py.Group, p: PackedRows, chunked: list[str], check: Callable[[], None]) -> None:
    """Write every dataset of the realizations of ``p`` except ``completed``.

    Realization by realization (its strings reset, its chunks, its status and message), as HDF5
    allocates a chunk and a heap object where they are first written: so the bytes do not depend
    on how realizations are grouped into packs and batches. Then the contiguous datasets
    (parameters, ``recorded``), in place, as slabs of consecutive realizations.

    Parameters
    ----------
    chunked : list of str
        Paths of the per-record (chunked) datasets.
    check : callable
        Called after each realization: raises when HDF5 failed where h5py could not raise
        (:func:`~workbench.store.failures.catching_io_errors`), so that nothing more is written
        into a file whose state HDF5 lost.
    """
    # each dataset looked up once per pack (≈ 100 µs a lookup: per realization, they cost more
    # than the writes)
    status, message = f["status"], f["message"]
    strings = _string_ids(f, (status, message))
    datasets = {name: f[name] for name in chunked}
    targets = {name: (ds.id, (0,) * (ds.ndim - 1)) for name, ds in datasets.items()}
    text = (_ElementWriter(status), _ElementWriter(message))
    try:
        for j, i in enumerate(p.indices.tolist()):
            _reset(strings, i)
            for name in chunked:
                if name in p.chunks:  # filtered by the worker: stored as they are
                    dsid, tail = targets[name]
                    dsid.write_direct_chunk((i, *tail), p.chunks[name][j])
                else:
                    datasets[name][i] = p.arrays[name][j]
            text[0].write(i, p.status[j])
            text[1].write(i, p.message[j])
            check()
        for start, stop in runs(p.indices):
            a, b = int(p.indices[start]), int(p.indices[stop - 1]) + 1
            for name, arr in p.arrays.items():
                if name not in targets:
                    f[name][a:b] = arr[start:stop]
            f["recorded"][a:b] = p.recorded[start:stop]
    finally:
        # no dataset identifier may outlive a failed write in this frame (which an exception's
        # traceback keeps): HDF5 closes it at exit on a file that failed, and crashes (SIGSEGV)
        for writer in text:  # a traceback may keep write's frame, hence the writer
            writer.close()
        del status, message, strings, datasets, targets, text, writer
        dsid = None


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

    def close(self) -> None:
        """Drop the HDF5 identifiers held."""
        self.dsid = self.mspace = self.fspace = None
