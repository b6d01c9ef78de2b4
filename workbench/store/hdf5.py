"""The HDF5 backend of the store: one file per run or ensemble, crash-safe and resumable.

A single run is stored as an ensemble of one realization (``kind = "run"``). Layout of one file,
with ``n_real`` realizations, ``nt`` records and ``n_bodies`` tracked bodies::

    /                         attrs: format_version (int), conventions (str), workbench_version
                              (str), scene (source text), scene_json (resolved scene, JSON),
                              seed_entropy (str of an int, "" when not random), n_realizations
                              (int), kind ("run" | "ensemble"), created (ISO 8601, UTC; only
                              with ``timestamp=True``)
    /time                     (nt,) float64, s
    /body_names               (n_bodies,) variable-length UTF-8 str
    /states/position          (n_real, nt, n_bodies, 3) float64, m
    /states/orientation       (n_real, nt, n_bodies, 4) float64, quaternion (x, y, z, w)
    /states/linear_velocity   (n_real, nt, n_bodies, 3) float64, m/s
    /states/angular_velocity  (n_real, nt, n_bodies, 3) float64, rad/s, world frame
    /observers/<name>         (n_real, nt, k) float64; attrs quantity, unit, components (k str),
                              body (str, may be "")
    /diagnostics/<name>       (n_real, nt) float64
    /params/<body>/<quantity> (n_real, *shape) float64, one per sampled quantity
    /links/..., /joints/...   (only with URDF links) which rows are links; joint states
    /completed                (n_real,) bool, true once realization i is entirely on disk
    /recorded                 (n_real,) int64, valid records of realization i (the rest is NaN)
    /status                   (n_real,) variable-length str, "" until written, then "ok" or the
                              reason the run stopped ("nonfinite", "error", ...)
    /message                  (n_real,) variable-length str, detail for a status other than "ok"
    /nominal/...              (optional, ensembles) the nominal run: the same layout, n_real = 1
    /reverse/islands, ...     (optional) extra datasets, e.g. the tables of reverse runs

Every dataset carries ``units``, ``description`` and ``dims`` (and ``frame``, ``components``,
``quaternion_order`` where they apply): :mod:`workbench.store.conventions` and ``docs/hdf5.md``.
Strings are UTF-8 text. Files are byte-reproducible: no object header times (``track_times``
off), no creation time unless asked, attributes in a fixed order, the default ``libver``.

State, observer and diagnostic datasets hold one chunk per realization (``(1, nt, ...)``),
shuffle + gzip (or lzf) compression and fill value NaN. Parameters, ``completed`` and ``recorded``
are contiguous and written in full when the file is created, so later writes change data in place.
``status`` and ``message`` hold one unfiltered chunk per element (see below).

Crash safety (measured with 150 SIGKILLs per layout, see docs/architecture.md, "HDF5 crash safety"):

- a new file is created and initialised under a temporary name in the same directory, closed
  and moved onto its path with :func:`os.replace`, so a file at ``path`` is never half-initialised;
- :meth:`TrajectoryStore.write` (and ``write_many``, ``write_packed``, ``write_block``) is
  two-phase: every dataset of realization ``i`` is written, the file flushed, and only then
  ``completed[i]`` is set and the file flushed again (one pair of flushes per batch or block);
- the default ``libver`` is used (``libver="latest"`` leaves killed files unopenable);
- a variable-length string element stores a reference to a global-heap object, and HDF5 frees
  the old object when the element is overwritten. A kill during phase 1 can leave the
  ``status``/``message`` element of an incomplete realization referring to a heap object that
  never reached the disk, and overwriting it then fails ("bad heap index"). So before writing
  realization ``i``, its two elements are reset to the null reference (all-zero bytes, read back
  as ``""``) with a raw chunk write, which bypasses the lookup; the old object, if any, leaks a
  few bytes. Found by ``tests/integration/test_store_crash.py`` (SIGKILL, then resume);
- the datasets writes use are looked up once and held by the store while it writes
  (:class:`~workbench.store.chunks.Handles`); they are dropped before the file closes, in
  :meth:`TrajectoryStore.close` and after a failed write, as no HDF5 identifier may outlive a
  failed write (h5py crashed at exit on one: :meth:`TrajectoryStore._fail`);
- only the driver process writes; ensemble workers return their realizations packed
  (:class:`~workbench.store.schema.PackedRows`), with the chunks already filtered, and the
  driver stores those bytes as they are (:mod:`~workbench.store.chunks`).

A killed run therefore leaves a readable file in which every realization marked completed is
exactly what was written, and a resumed run fills :meth:`TrajectoryStore.missing`.
"""

from __future__ import annotations

import contextlib
import operator
import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from workbench import __version__
from workbench.errors import StoreError
from workbench.sim.state import STATE_FIELDS, Trajectory
from workbench.store.backend import Store
from workbench.store.bulk import Block
from workbench.store.chunks import INIT_SLAB, Handles, find_filters, runs, write_block, write_data
from workbench.store.conventions import (
    CONVENTIONS,
    FORMAT_VERSION,
    READABLE_VERSIONS,
    describe_extra_dataset,
    layout_attrs,
)
from workbench.store.failures import (
    WRITE_HEADROOM,
    StoreWriteError,
    catching_io_errors,
    free_bytes,
    is_disk_full,
)
from workbench.store.links import init_links, links_from_file
from workbench.store.lock import busy_error
from workbench.store.reading import (
    CheckedDataset,
    check_layout,
    check_time,
    dataset_summaries,
    read_attrs,
    text,
    text_attr,
)
from workbench.store.schema import ChunkFilters, PackedRows, StoreSchema

__all__ = [
    "FORMAT_VERSION",
    "TrajectoryStore",
    "StoreWriteError",
    "write_trajectory",
    "read_trajectory",
]

#: Group holding an ensemble's nominal run, in the same layout with one realization.
NOMINAL = "nominal"
_NOMINAL_TEXT = (
    "the ensemble's nominal run (every random input at its mean): the layout of the root with "
    "one realization"
)

_STR = h5py.string_dtype("utf-8")
_KINDS = ("run", "ensemble")
_REQUIRED = ("time", "body_names", *(f"states/{name}" for name in STATE_FIELDS), "observers",
             "diagnostics", "params", "completed", "recorded", "status", "message")  # fmt: skip


def _compression_kwargs(compression: str | None) -> dict[str, Any]:
    if compression in (None, "none"):
        return {"shuffle": True}
    if compression == "lzf":
        # not the default: h5py's liblzf leaves its hash table uninitialised (INIT_HTAB 0), so
        # the same data can compress to other bytes, and HDF5 tools other than h5py cannot
        # read it (docs/architecture.md, "Compression")
        return {"shuffle": True, "compression": "lzf"}
    if compression == "gzip":
        # the default, standard and deterministic; level 1 of libdeflate, which makes every chunk
        # (schema.ChunkFilters): zlib-4's size at a quarter of its cost (docs/architecture.md)
        return {"shuffle": True, "compression": "gzip", "compression_opts": 1}
    raise StoreError(f"compression must be 'lzf', 'gzip' or None, got {compression!r}")


def _attr_value(value: Any) -> Any:
    """``value`` as an HDF5 attribute: a sequence of str becomes an array of UTF-8 text."""
    if isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value):
        return np.array(value, dtype=_STR) if value else np.zeros(0, dtype=_STR)
    return value


def _set_attrs(obj: h5py.HLObject, attrs: Mapping[str, Any]) -> None:
    """Write ``attrs`` on ``obj``, in the mapping's order (the order is part of the bytes)."""
    for key, value in attrs.items():
        obj.attrs[key] = _attr_value(value)


def _create(group: h5py.Group, name: str, attrs: Mapping[str, Any], **kwargs: Any) -> h5py.Dataset:
    """``group.create_dataset`` without the object header's modification times, which would
    make two writes of the same data differ, and with ``attrs``."""
    ds = group.create_dataset(name, track_times=False, **kwargs)
    _set_attrs(ds, attrs)
    return ds


def _text_dtype(dtype: np.dtype) -> np.dtype:
    """``dtype`` with its text stored as UTF-8: byte strings (``S``) become fixed-length UTF-8
    strings (read back as the same bytes), Python strings (``O``, ``U``) variable-length UTF-8;
    fields of a compound dtype alike."""
    if dtype.names:
        return np.dtype(
            [(name, _text_dtype(dtype.fields[name][0])) for name in dtype.names],
            align=dtype.isalignedstruct,
        )
    if dtype.kind == "S":
        return h5py.string_dtype("utf-8", length=max(dtype.itemsize, 1))
    if dtype.kind in "OU":
        return _STR
    return dtype


def _write_extra(f: h5py.File, name: str, data: Any, given: Mapping[str, Any] | None) -> None:
    """An extra dataset (e.g. a reverse run's ``reverse/islands``) with its attributes."""
    data = np.asarray(data)
    attrs = describe_extra_dataset(name, data, given)
    dtype = _text_dtype(data.dtype)
    if data.dtype.kind == "U":
        data = data.astype(object)
    _create(f, name, attrs, data=data.astype(dtype) if data.dtype.names else data, dtype=dtype)


def _init_file(
    f: h5py.File, schema: StoreSchema, n_real: int, attrs: dict[str, Any], compression: str | None
) -> None:
    """Write the attributes and preallocate every dataset of a new store."""
    _set_attrs(f, attrs)
    described = layout_attrs(schema)
    nt, nb = schema.n_times, schema.n_bodies
    comp = _compression_kwargs(compression)
    _create(f, "time", described["time"], data=schema.time)
    body_names = np.array(schema.body_names, dtype=object)
    _create(f, "body_names", described["body_names"], data=body_names, dtype=_STR)
    states = f.create_group("states", track_order=True)
    for name, k in STATE_FIELDS.items():
        _create(
            states,
            name,
            described[f"states/{name}"],
            shape=(n_real, nt, nb, k),
            dtype=np.float64,
            chunks=(1, nt, nb, k),
            fillvalue=np.nan,
            **comp,
        )
    observers = f.create_group("observers", track_order=True)
    for name, info in schema.observer_info.items():
        k = len(info["components"])
        # quantity, unit, components and body are what readers of format 1 use
        legacy = {key: info[key] for key in ("quantity", "unit", "components", "body")}
        _create(
            observers,
            name,
            {**legacy, **described[f"observers/{name}"]},
            shape=(n_real, nt, k),
            dtype=np.float64,
            chunks=(1, nt, k),
            fillvalue=np.nan,
            **comp,
        )
    diagnostics = f.create_group("diagnostics", track_order=True)
    for name in schema.diagnostics:
        _create(
            diagnostics,
            name,
            described[f"diagnostics/{name}"],
            shape=(n_real, nt),
            dtype=np.float64,
            chunks=(1, nt),
            fillvalue=np.nan,
            **comp,
        )
    init_links(f, schema, n_real, described, comp, _create)  # /links, /joints: URDF links only
    params = f.create_group("params", track_order=True)
    for key, shape in schema.param_shapes.items():
        # contiguous and written now: later writes of a realization change bytes in place only
        _create(params, key, described[f"params/{key}"], data=np.full((n_real, *shape), np.nan))
    _create(f, "completed", described["completed"], data=np.zeros(n_real, dtype=bool))
    _create(f, "recorded", described["recorded"], data=np.zeros(n_real, dtype=np.int64))
    for name in ("status", "message"):
        # one unfiltered chunk per element, allocated now, so reset_strings can write it raw;
        # in slabs: HDF5 keeps ≈ 4 kB for every chunk one write touches (400 MB for 10^5)
        ds = _create(f, name, described[name], shape=(n_real,), dtype=_STR, chunks=(1,))
        for start in range(0, n_real, INIT_SLAB):
            stop = min(start + INIT_SLAB, n_real)
            ds[start:stop] = np.array([""] * (stop - start), dtype=object)


def _schema_from_file(f: h5py.File, path: Path) -> StoreSchema:
    time = check_time(f["time"], path)
    observer_info = {}
    for name, ds in f["observers"].items():
        observer_info[name] = {
            key: text_attr(ds, key, path) for key in ("quantity", "unit", "body")
        }
        components = np.atleast_1d(ds.attrs.get("components", []))
        if components.ndim != 1 or not all(isinstance(c, str | bytes) for c in components):
            raise StoreError(
                f"{path}: attribute components of {ds.name} is {components.dtype} of shape "
                f"{components.shape}; expected a list of text labels, the file is damaged"
            )
        observer_info[name]["components"] = [text(c) for c in components]
    param_shapes: dict[str, tuple[int, ...]] = {}

    def visit(name: str, obj: Any) -> None:
        if isinstance(obj, h5py.Dataset):
            param_shapes[name] = tuple(obj.shape[1:])

    f["params"].visititems(visit)
    return StoreSchema(
        time=time,
        body_names=tuple(text(s) for s in f["body_names"][()]),
        observer_info=observer_info,
        diagnostics=tuple(f["diagnostics"].keys()),
        param_shapes=param_shapes,
        **links_from_file(f, path),
    )


class TrajectoryStore(Store):
    """An open store file (see the module docstring for the layout).

    Create one with :meth:`create` or open one with :meth:`open`; use as a context manager or
    call :meth:`close`. Only one process may write to a store. Reading and writing follow the
    contract of :class:`~workbench.store.backend.Store`.
    """

    def __init__(self, f: h5py.File | h5py.Group, path: Path):
        self._f = f
        self._path = path
        self._schema = _schema_from_file(f, path)
        self._n_real = int(f["completed"].shape[0])
        self._failed: StoreWriteError | None = None  # set by the first failed write
        self._filters: ChunkFilters | None | bool = False  # not looked up yet
        # what writes use, looked up at the first write (chunks.Handles); dropped by close()
        # and by a failed write (_fail)
        self._handles: Handles | None = None

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | os.PathLike,
        schema: StoreSchema,
        n_realizations: int,
        *,
        scene_text: str = "",
        scene_json: str = "{}",
        seed_entropy: int | None = None,
        kind: str = "ensemble",
        compression: str | None = "gzip",
        nominal: Trajectory | None = None,
        extra_attrs: Mapping[str, Any] | None = None,
        extra_datasets: Mapping[str, np.ndarray] | None = None,
        extra_dataset_attrs: Mapping[str, Mapping[str, Any]] | None = None,
        timestamp: bool = False,
    ) -> TrajectoryStore:
        """Create a new store at ``path`` (replacing any file there) and open it for writing.

        The file is built under a temporary name in the same directory and moved onto ``path``
        with :func:`os.replace`, so ``path`` never holds a half-initialised file.

        Parameters
        ----------
        path : path-like
            Destination file.
        schema : StoreSchema
            Times, bodies, observers, diagnostics and parameter shapes.
        n_realizations : int
            Number of realizations to preallocate (>= 1).
        scene_text : str
            Source text of the scene file or script.
        scene_json : str
            The resolved scene as JSON.
        seed_entropy : int, optional
            Entropy of the run's ``numpy.random.SeedSequence``; ``None`` when nothing is random.
        kind : {"ensemble", "run"}
        compression : {"gzip", "lzf", None}
            Filter of the state, observer and diagnostic datasets (always with shuffle).
        nominal : Trajectory, optional
            The nominal (deterministic) run of an ensemble, stored under ``/nominal`` in the same
            layout with one realization; written before the file is moved into place.
        extra_attrs : mapping, optional
            Further root attributes (e.g. ``time_reversed`` of reverse runs).
        extra_datasets : mapping of str to ndarray, optional
            Further datasets by path (e.g. the per-island LCP log of a reverse run), written
            before the file is moved into place. Text (``S``, ``U`` or ``str`` objects, also as
            fields of a structured array) is stored as UTF-8; ``S`` fields read back as bytes.
        extra_dataset_attrs : mapping of str to mapping, optional
            Attributes of the extra datasets, by path: at least ``units`` and ``description``
            for a dataset that :func:`~workbench.store.conventions.describe_extra_dataset` does
            not describe (the tables of reverse runs), which is a :class:`StoreError` otherwise.
        timestamp : bool
            Store the creation time as the root attribute ``created`` (ISO 8601, UTC). Off by
            default: without it, the same inputs give the same bytes.

        Returns
        -------
        TrajectoryStore
            Opened in mode ``"r+"``.
        """
        path = Path(path)
        try:
            n_real = operator.index(n_realizations)
        except TypeError:
            raise StoreError(f"n_realizations must be an integer, got {n_realizations!r}") from None
        if n_real < 1:
            raise StoreError(f"n_realizations must be >= 1, got {n_real}")
        if kind not in _KINDS:
            raise StoreError(f"kind must be one of {', '.join(_KINDS)}, got {kind!r}")
        _compression_kwargs(compression)
        if seed_entropy is None:
            entropy = ""
        else:
            try:
                entropy = str(operator.index(seed_entropy))
            except TypeError:
                raise StoreError(
                    f"seed_entropy must be an integer or None, got {seed_entropy!r}"
                ) from None
        attrs: dict[str, Any] = {
            "format_version": FORMAT_VERSION,
            "conventions": CONVENTIONS,
            "workbench_version": __version__,
            "scene": str(scene_text),
            "scene_json": str(scene_json),
            "seed_entropy": entropy,
            "n_realizations": n_real,
            "kind": kind,
        }
        if timestamp:
            attrs["created"] = datetime.now(UTC).isoformat(timespec="seconds")
        for key, value in (extra_attrs or {}).items():
            if key in attrs:
                raise StoreError(f"extra attribute {key!r} would replace a built-in one")
            attrs[key] = value
        directory = path.parent
        if not directory.is_dir():
            raise StoreError(f"{path}: directory {directory} does not exist")
        if path.is_dir():
            raise StoreError(f"{path}: is a directory")
        extras = dict(extra_datasets or {})
        described = dict(extra_dataset_attrs or {})
        unknown = sorted(set(described) - set(extras))
        if unknown:
            raise StoreError(f"extra_dataset_attrs names no extra dataset: {', '.join(unknown)}")
        for name, data in extras.items():  # fail before any file is made
            describe_extra_dataset(name, np.asarray(data), described.get(name))
        tmp = directory / f".{path.name}.tmp-{os.getpid()}"
        caught: list[BaseException] = []
        try:
            with catching_io_errors(caught):
                with h5py.File(tmp, "w") as f:
                    _init_file(f, schema, n_real, attrs, compression)
                    if nominal is not None:
                        group = f.create_group(NOMINAL)
                        _init_file(group, schema, 1, {"description": _NOMINAL_TEXT}, compression)
                        view = cls(group, tmp)
                        view.write(0, nominal)
                        view.close()  # its handles: the file closes next
                    for name, data in extras.items():
                        _write_extra(f, name, data, described.get(name))
                    if caught:
                        raise caught[0]
                if caught:
                    raise caught[0]
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except BaseException as exc:
            tmp.unlink(missing_ok=True)
            if isinstance(exc, StoreWriteError):
                raise StoreWriteError(
                    path, 0, n_real, exc.disk_full, exc.reason, resumable=False
                ) from None
            if isinstance(exc, OSError | RuntimeError) and is_disk_full(exc):
                raise StoreWriteError(path, 0, n_real, True, resumable=False) from None
            if isinstance(exc, OSError | RuntimeError):
                raise StoreError(f"{path}: cannot create store ({exc})") from None
            raise
        return cls.open(path, "r+")

    @classmethod
    def open(cls, path: str | os.PathLike, mode: str = "r") -> TrajectoryStore:
        """Open an existing store.

        Parameters
        ----------
        path : path-like
        mode : {"r", "r+"}
            ``"r+"`` to write (e.g. to resume an ensemble).

        Raises
        ------
        StoreError
            The file is missing, not HDF5, of another format version, or lacks a dataset; one
            that another workbench process writes (:func:`~workbench.store.lock.busy_error`)
            says so, naming the writer, rather than missing or damaged.
        """
        path = Path(path)
        if mode not in ("r", "r+"):
            raise StoreError(f"mode must be 'r' or 'r+', got {mode!r}")
        try:
            found = path.exists()
        except OSError as exc:  # a name the system cannot take (ENAMETOOLONG)
            raise StoreError(f"{path}: not a usable file name ({exc.strerror})") from None
        if not found:
            raise busy_error(path) or StoreError(f"{path}: no such file")  # or not yet moved here
        if not path.is_file():
            raise StoreError(f"{path}: not a file")
        if not h5py.is_hdf5(path):
            raise StoreError(f"{path}: not an HDF5 file")
        try:
            # Read-only opens take no lock, so `workbench inspect`/`stats` can watch an ensemble
            # while its driver writes: the two-phase flush keeps completed rows on disk.
            if mode == "r":
                f = h5py.File(path, mode, locking=False)
            else:
                # No chunk cache for a writer: each chunk reaches the file in the write call,
                # which raises when it fails. With a cache, HDF5 writes the chunk when h5py
                # releases the dataset's identifier, where a failure (ENOSPC) cannot be raised,
                # leaves the identifier half-closed, and HDF5 crashes on it at exit (SIGSEGV in
                # H5D_close from H5_term_library; issue 21). Every realization writes each chunk
                # once, so the cache saved nothing; chunks land in the same order and bytes.
                f = h5py.File(path, mode, rdcc_nbytes=0)
        except OSError as exc:
            raise busy_error(path) or StoreError(f"{path}: cannot open HDF5 file ({exc})") from None
        try:
            version = f.attrs.get("format_version")
            if version is None:
                raise StoreError(f"{path}: not a rigid-workbench store (no format_version)")
            if int(version) not in READABLE_VERSIONS:
                raise StoreError(
                    f"{path}: store format version {int(version)}, this version reads "
                    f"{', '.join(map(str, READABLE_VERSIONS))}"
                )
            missing = [name for name in _REQUIRED if name not in f]
            if missing:
                raise StoreError(f"{path}: damaged store, missing {', '.join(missing)}")
            store = cls(f, path)
            check_layout(f, store.schema, store.n_realizations, path)
        except StoreError as exc:
            f.close()
            if str(path) not in str(exc):  # the schema's own checks do not know the file
                exc = StoreError(f"{path}: damaged store, {exc}")
            raise busy_error(path) or exc from None  # a writer's file: not damaged, unfinished
        except Exception as exc:
            f.close()
            why = f"{type(exc).__name__}: {exc}"
            raise busy_error(path) or StoreError(f"{path}: damaged store ({why})") from None
        return store

    # -- primitives of Store ----------------------------------------------------------------

    def _dataset(self, name: str) -> CheckedDataset:
        obj = self._f.get(name)
        if not isinstance(obj, h5py.Dataset):
            raise KeyError(name)
        return CheckedDataset(obj, self._path)

    def _string(self, name: str, i: int) -> str:
        try:
            return text(self._dataset(name)[i])
        except UnicodeDecodeError:
            raise StoreError(
                f"{self._path}: dataset {self._f[name].name}[{i}] is not UTF-8 text, the file "
                "is damaged"
            ) from None

    def _strings(self, name: str, start: int, stop: int) -> list[str]:
        """One read of the slab: per element, h5py's read costs ≈ 0.1-0.7 ms (a minute for the
        statuses of 10^5 realizations on a busy machine)."""
        values = self._dataset(name)[start:stop]
        try:
            return [text(v) for v in values]
        except UnicodeDecodeError:
            return [self._string(name, i) for i in range(start, stop)]  # names the element

    def _check_writable(self) -> None:
        if self._failed is not None:  # closed by the failure: h5py must not touch it again
            raise self._failed
        if self._handles is None and self._f.file.mode != "r+":  # handles: it was written
            raise StoreError(f"{self._path}: opened read-only")

    def _write_rows(self, batch: list[tuple[int, int, dict[str, np.ndarray], str, str]]) -> None:
        """Two-phase (:meth:`_write_packed`), in index order whatever the batch's order: HDF5
        places a chunk where it is first written, so the order is part of the file's bytes."""
        batch = sorted(batch, key=operator.itemgetter(0))
        names = self._schema.row_shapes()
        packed = PackedRows(
            indices=np.array([i for i, *_ in batch], dtype=np.int64),
            recorded=np.array([n for _, n, *_ in batch], dtype=np.int64),
            status=[status for *_, status, _ in batch],
            message=[message for *_, message in batch],
            arrays={name: np.stack([rows[name] for _, _, rows, *_ in batch]) for name in names},
            chunks={},
        )
        self._write_packed([packed])

    def chunk_filters(self) -> ChunkFilters | None:
        """The filters of the per-record datasets when a worker can reproduce them (shuffle and
        gzip or none, one chunk per realization, on every such dataset), else None (lzf: h5py's
        own liblzf, see :func:`_compression_kwargs`)."""
        if self._filters is False:
            self._filters = find_filters(self._f, self._schema)
        return self._filters

    def _chunked(self) -> list[str]:
        """Paths of the per-record (chunked) datasets."""
        return [name for name in self._schema.row_shapes() if not name.startswith("params/")]

    def _write_packed(self, packs: list[PackedRows]) -> None:
        """Two-phase, as :meth:`_write_rows`: every realization's rows (filtered chunks written
        as they are, parameters and the per-realization scalars as slabs of consecutive
        realizations), a flush, then the marks and a flush. Packs arrive in index order."""

        filters = self.chunk_filters()  # rows shipped as arrays: deflated here, not by HDF5
        packs = [p.filtered(filters) for p in packs]

        def phase1(h: Handles, check: Callable[[], None]) -> None:
            for p in packs:
                write_data(h, p, check)
                check()

        indices = np.concatenate([p.indices for p in packs])
        self._two_phase(indices, sum(p.nbytes for p in packs), phase1)

    def _write_block(self, block: Block) -> None:
        """Two-phase, as :meth:`_write_packed`: the block's datasets (the others untouched), a
        flush, then its marks and a flush (:func:`~workbench.store.chunks.write_block`)."""
        filters = self.chunk_filters()
        self._two_phase(block.indices, block.nbytes, lambda h, c: write_block(h, block, c, filters))

    def _two_phase(self, indices: np.ndarray, nbytes: int, phase1: Callable) -> None:
        """Write realizations ``indices`` (increasing) crash-safely: clear the marks of those
        completed and flush; ``phase1(handles, check)`` writes their data; flush; set their
        ``completed`` marks; flush. A batch is refused before it starts when the filesystem lacks
        its ``nbytes`` plus :data:`WRITE_HEADROOM`; a failure closes the file (:meth:`_fail`)."""
        if self._failed is not None:
            raise self._failed
        h = self._handles
        if h is None:
            chunked = self._chunked()  # once, and a set: a list made per name (a 1000-sphere
            # run's 3000 parameters) made this loop quadratic, 7 s of the run (issue 39, case 5)
            per_record = set(chunked)
            contiguous = [name for name in self._schema.row_shapes() if name not in per_record]
            h = self._handles = Handles(self._f, chunked, contiguous)
        completed = np.asarray(h.completed[()], dtype=bool)
        kept = int(completed.sum()) - int(completed[indices].sum())
        free = free_bytes(self._path.parent)
        if free is not None and free < WRITE_HEADROOM + nbytes:  # before HDF5 meets ENOSPC
            self._fail(kept, disk_full=True, reason="", broken=False)
        caught: list[BaseException] = []

        def check() -> None:
            if caught:
                raise caught[0]

        try:
            with catching_io_errors(caught):
                if completed[indices].any():
                    for i in indices[completed[indices]].tolist():
                        h.mark(i, i + 1, False)
                    h.file.flush()
                    check()
                phase1(h, check)  # phase 1: the data
                check()
                h.file.flush()
                check()
                for start, stop in runs(indices):  # phase 2: the marks
                    h.mark(int(indices[start]), int(indices[stop - 1]) + 1, True)
                h.file.flush()
                check()
        except (OSError, RuntimeError) as exc:
            reason = " ".join(str(exc).split())[:200] or type(exc).__name__
            self._fail(kept, disk_full=is_disk_full(exc), reason=reason, broken=True)

    def _fail(self, kept: int, *, disk_full: bool, reason: str, broken: bool) -> None:
        """Close the file after a failed (or refused) write and raise :class:`StoreWriteError`.

        Nothing touches the file after the first failure except the close: HDF5 cannot be
        trusted to write consistently after a failed flush (an HDF5 2.0 file whose flush failed
        on ENOSPC then refuses to close, "Slist already enabled?", and h5py crashed with
        SIGSEGV at interpreter exit after such a failure). That is also why a batch is refused
        before it starts when the filesystem lacks :data:`WRITE_HEADROOM` plus its rows:
        with the space check, a full disk never reaches HDF5, the file closes normally and every
        completed realization stays readable. ``broken`` says HDF5 itself failed; the close's
        own errors are then ignored and ``kept`` is recounted from the file when it opens.
        """
        self._drop_handles()
        root = self._f.file
        caught: list[BaseException] = []
        with catching_io_errors(caught):
            try:
                if isinstance(self._f, h5py.File) or not broken:
                    root.close()
            except (OSError, RuntimeError):
                pass
        if broken:
            with contextlib.suppress(StoreError, OSError, RuntimeError, ValueError):
                with TrajectoryStore.open(self._path) as reread:
                    kept = int(reread.completed.sum())
        self._failed = StoreWriteError(
            self._path, kept, self._n_real, disk_full, reason, resumable=True
        )
        raise self._failed

    def _nominal(self) -> TrajectoryStore | None:
        if NOMINAL not in self._f:
            return None
        group = self._f[NOMINAL]
        try:
            missing = [name for name in _REQUIRED if name not in group]
            if missing:
                raise StoreError(
                    f"{self._path}: damaged store, /{NOMINAL} lacks {', '.join(missing)}"
                )
            nominal = TrajectoryStore(group, self._path)
            check_layout(group, nominal.schema, 1, self._path)
        except StoreError as exc:
            if str(self._path) not in str(exc):
                raise StoreError(f"{self._path}: damaged store, /{NOMINAL}: {exc}") from None
            raise
        except Exception as exc:  # what h5py raises on a damaged group varies
            raise StoreError(
                f"{self._path}: damaged store, /{NOMINAL} ({type(exc).__name__}: {exc})"
            ) from None
        return nominal

    def layout(self) -> dict[str, Any]:
        """Shape, type, filters and ``units`` of every dataset by HDF5 path
        (:func:`~workbench.store.reading.dataset_summaries`; unreadable objects are listed)."""
        return dataset_summaries(self._f)

    def nominal(self) -> TrajectoryStore | None:
        """The ``/nominal`` group of an ensemble as a store of one realization (sharing this
        file, which stays open), or ``None``."""
        return self._nominal()

    def dataset_attrs(self, name: str) -> dict[str, Any]:
        """The attributes of the dataset at ``name`` as stored (plain Python values, text as
        ``str``); a format-1 file's lack ``units``, ``description`` and ``dims``, which come
        from :func:`~workbench.store.conventions.layout_attrs`."""
        stored = read_attrs(self._existing(name), self._path)
        return {**super().dataset_attrs(name), **stored}

    @property
    def attrs(self) -> dict[str, Any]:
        return read_attrs(self._f, self._path)

    @property
    def is_open(self) -> bool:
        """Whether the file is open; false after a failed write (:class:`StoreWriteError`)."""
        return self._failed is None and bool(self._f.id.valid)

    def _drop_handles(self) -> None:
        if self._handles is not None:
            self._handles.close()
            self._handles = None

    def close(self) -> None:
        """Close the file (idempotent); a view of ``/nominal`` leaves it open."""
        self._drop_handles()
        if self._failed is None and self._f.id.valid and isinstance(self._f, h5py.File):
            self._f.close()

    def __repr__(self) -> str:
        state = "open" if self._f.id.valid else "closed"
        return f"<TrajectoryStore {str(self._path)!r} n_realizations={self._n_real} ({state})>"


def write_trajectory(
    path: str | os.PathLike,
    traj: Trajectory,
    *,
    scene_text: str = "",
    scene_json: str = "{}",
    seed_entropy: int | None = None,
    extra_attrs: Mapping[str, Any] | None = None,
    extra_datasets: Mapping[str, np.ndarray] | None = None,
    extra_dataset_attrs: Mapping[str, Mapping[str, Any]] | None = None,
    timestamp: bool = False,
) -> None:
    """Store a single run (``kind = "run"``, one realization) at ``path``.

    Parameters
    ----------
    path : path-like
    traj : Trajectory
        The run; its times define ``/time``.
    scene_text, scene_json, seed_entropy, extra_attrs, extra_datasets, extra_dataset_attrs
        As in :meth:`TrajectoryStore.create`.
    timestamp : bool
        Store the root attribute ``created``; off by default, so that the same run gives the
        same bytes.
    """
    path = Path(path)
    schema = StoreSchema.from_trajectory(traj)
    # the whole file is written under a temporary name and renamed only when complete: a full
    # disk or a killed run leaves no partial file at ``path`` (and an older file there intact)
    tmp = path.parent / f".{path.name}.part-{os.getpid()}"
    try:
        with TrajectoryStore.create(
            tmp,
            schema,
            1,
            scene_text=scene_text,
            scene_json=scene_json,
            seed_entropy=seed_entropy,
            kind="run",
            extra_attrs=extra_attrs,
            extra_datasets=extra_datasets,
            extra_dataset_attrs=extra_dataset_attrs,
            timestamp=timestamp,
        ) as store:
            store.write(0, traj)
        os.replace(tmp, path)
    except StoreWriteError as exc:
        raise StoreWriteError(path, 0, 1, exc.disk_full, exc.reason, resumable=False) from None
    except OSError as exc:
        raise StoreError(f"{path}: cannot write ({exc})") from None
    except StoreError as exc:
        raise StoreError(str(exc).replace(str(tmp), str(path))) from None
    finally:
        tmp.unlink(missing_ok=True)


def read_trajectory(path: str | os.PathLike, realization: int = 0) -> Trajectory:
    """Read one completed realization of the store at ``path``."""
    with TrajectoryStore.open(path) as store:
        return store.read(realization)
