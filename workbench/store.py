"""HDF5 storage of trajectories: one file per run or ensemble, crash-safe and resumable.

A single run is stored as an ensemble of one realization (``kind = "run"``). Layout of one file,
with ``n_real`` realizations, ``nt`` records and ``n_bodies`` tracked bodies::

    /                         attrs: format_version (int), workbench_version (str), scene (source
                              text), scene_json (resolved scene, JSON), seed_entropy (str of an
                              int, "" when not random), created (ISO 8601, UTC),
                              n_realizations (int), kind ("run" | "ensemble")
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
    /completed                (n_real,) bool, true once realization i is entirely on disk
    /recorded                 (n_real,) int64, valid records of realization i (the rest is NaN)
    /status                   (n_real,) variable-length str, "" until written, then "ok" or the
                              reason the run stopped ("nonfinite", "error", ...)
    /message                  (n_real,) variable-length str, detail for a status other than "ok"
    /nominal/...              (optional, ensembles) the nominal run: the same layout, n_real = 1

State, observer and diagnostic datasets hold one chunk per realization (``(1, nt, ...)``),
shuffle + lzf (or gzip) compression and fill value NaN. Parameters, ``completed`` and ``recorded``
are contiguous and written in full when the file is created, so later writes change data in place.
``status`` and ``message`` hold one unfiltered chunk per element (see below).

Crash safety (measured with 150 SIGKILLs per layout, see DESIGN.md "HDF5 crash safety"):

- a new file is created and initialised under a temporary name in the same directory, closed
  and moved onto its path with :func:`os.replace`, so a file at ``path`` is never half-initialised;
- :meth:`TrajectoryStore.write` is two-phase: every dataset of realization ``i`` is written, the
  file flushed, and only then ``completed[i]`` is set and the file flushed again;
- the default ``libver`` is used (``libver="latest"`` leaves killed files unopenable);
- a variable-length string element stores a reference to a global-heap object, and HDF5 frees
  the old object when the element is overwritten. A kill during phase 1 can leave the
  ``status``/``message`` element of an incomplete realization referring to a heap object that
  never reached the disk, and overwriting it then fails ("bad heap index"). So before writing
  realization ``i``, its two elements are reset to the null reference (all-zero bytes, read back
  as ``""``) with a raw chunk write, which bypasses the lookup; the old object, if any, leaks a
  few bytes. Found by ``tests/integration/test_store_crash.py`` (SIGKILL, then resume);
- only the driver process writes; workers return :class:`~workbench.sim.state.Trajectory` objects.

A killed run therefore leaves a readable file in which every realization marked completed is
exactly what was written, and a resumed run fills :meth:`TrajectoryStore.missing`.
"""

from __future__ import annotations

import importlib.metadata
import operator
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from workbench.errors import StoreError
from workbench.sim.state import STATE_FIELDS, Trajectory

__all__ = [
    "FORMAT_VERSION",
    "StoreSchema",
    "TrajectoryStore",
    "write_trajectory",
    "read_trajectory",
    "describe",
]

#: Version of the file layout described in the module docstring; bumped on incompatible change.
FORMAT_VERSION = 1

#: Group holding an ensemble's nominal run, in the same layout with one realization.
NOMINAL = "nominal"

#: Record times written for a realization may differ from the store's ``/time`` by round-off
#: (times accumulated step by step vs. computed as ``i * dt``): about ``n_steps * eps`` relative.
#: 1e-9 of the time scale covers 10^6 steps of that round-off and still rejects any wrong dt,
#: stride or start time.
_TIME_RTOL = 1e-9

_STR = h5py.string_dtype("utf-8")
_KINDS = ("run", "ensemble")
_OBSERVER_KEYS = ("quantity", "unit", "components", "body")
_REQUIRED = (
    "time",
    "body_names",
    *(f"states/{name}" for name in STATE_FIELDS),
    "observers",
    "diagnostics",
    "params",
    "completed",
    "recorded",
    "status",
    "message",
)


def _package_version() -> str:
    try:
        return importlib.metadata.version("rigid-workbench")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def _check_name(what: str, name: str) -> None:
    """Reject names that cannot be one HDF5 link name."""
    if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
        raise StoreError(f"{what} name {name!r} must be a non-empty string without '/'")


def _check_param_key(key: str) -> None:
    if not isinstance(key, str) or not key:
        raise StoreError(f"parameter key {key!r} must be a non-empty '<body>/<quantity>' string")
    for part in key.split("/"):
        if not part or part in (".", ".."):
            raise StoreError(f"parameter key {key!r} must look like '<body>/<quantity>'")


def _normalise_observer_info(name: str, info: Mapping[str, Any]) -> dict[str, Any]:
    components = info.get("components", ())
    if isinstance(components, str):
        components = [components]
    out = {
        "quantity": str(info.get("quantity", "")),
        "unit": str(info.get("unit", "")),
        "components": [str(c) for c in components],
        "body": str(info.get("body", "") or ""),
    }
    if not out["components"]:
        raise StoreError(f"observer {name!r}: observer_info needs at least one component label")
    return out


@dataclass(frozen=True)
class StoreSchema:
    """Everything needed to preallocate a store: the shapes and names shared by all realizations.

    Attributes
    ----------
    time : ndarray, shape (nt,)
        Planned recording times, s.
    body_names : tuple of str
        Names of the ``n_bodies`` tracked bodies, in state order.
    observer_info : dict of str to dict
        Per observer: ``quantity``, ``unit``, ``components`` (list of ``k`` column labels; ``k``
        fixes the observer's width), ``body`` (``""`` when not attached to a body).
    diagnostics : tuple of str
        Names of the per-record diagnostics.
    param_shapes : dict of str to tuple of int
        Per-realization shape of each parameter, keyed ``"<body>/<quantity>"``; ``()`` for scalars.
    """

    time: np.ndarray
    body_names: tuple[str, ...]
    observer_info: dict[str, dict] = field(default_factory=dict)
    diagnostics: tuple[str, ...] = ()
    param_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        time = np.array(self.time, dtype=np.float64)
        if time.ndim != 1 or time.size == 0:
            raise StoreError(f"schema time must have shape (nt,) with nt >= 1, got {time.shape}")
        if not np.all(np.isfinite(time)):
            raise StoreError("schema time must be finite")
        time.flags.writeable = False
        body_names = tuple(self.body_names)
        if not body_names:
            raise StoreError("schema needs at least one body")
        for name in body_names:
            _check_name("body", name)
        if len(set(body_names)) != len(body_names):
            raise StoreError(f"duplicate body names: {', '.join(body_names)}")
        observer_info = {}
        for name, info in self.observer_info.items():
            _check_name("observer", name)
            observer_info[name] = _normalise_observer_info(name, info)
        diagnostics = tuple(self.diagnostics)
        for name in diagnostics:
            _check_name("diagnostic", name)
        if len(set(diagnostics)) != len(diagnostics):
            raise StoreError(f"duplicate diagnostic names: {', '.join(diagnostics)}")
        param_shapes = {}
        for key, shape in self.param_shapes.items():
            _check_param_key(key)
            shape = tuple(int(s) for s in shape)
            if any(s < 1 for s in shape):
                raise StoreError(f"parameter {key!r}: shape {shape} has an empty dimension")
            param_shapes[key] = shape
        for key in param_shapes:
            for other in param_shapes:
                if other.startswith(key + "/"):
                    raise StoreError(f"parameter {key!r} clashes with parameter {other!r}")
        object.__setattr__(self, "time", time)
        object.__setattr__(self, "body_names", body_names)
        object.__setattr__(self, "observer_info", observer_info)
        object.__setattr__(self, "diagnostics", diagnostics)
        object.__setattr__(self, "param_shapes", param_shapes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StoreSchema):
            return NotImplemented
        return (
            np.array_equal(self.time, other.time)
            and self.body_names == other.body_names
            and self.observer_info == other.observer_info
            and self.diagnostics == other.diagnostics
            and self.param_shapes == other.param_shapes
        )

    __hash__ = None  # type: ignore[assignment]  # holds arrays and dicts

    @property
    def n_times(self) -> int:
        return int(self.time.shape[0])

    @property
    def n_bodies(self) -> int:
        return len(self.body_names)

    @classmethod
    def from_trajectory(cls, traj: Trajectory) -> StoreSchema:
        """The schema of a store holding trajectories shaped like ``traj``.

        Parameters
        ----------
        traj : Trajectory
            Template: its times, bodies, observers (width from ``observers[name].shape[1]``;
            missing ``observer_info`` entries get component labels ``"0", "1", ...``),
            diagnostics and parameter shapes are used.

        Returns
        -------
        StoreSchema
        """
        observer_info = {}
        for name, values in traj.observers.items():
            values = np.asarray(values)
            if values.ndim != 2:
                raise StoreError(f"observer {name!r} must have shape (nt, k), got {values.shape}")
            k = values.shape[1]
            info = dict(traj.observer_info.get(name, {}))
            info.setdefault("components", [str(j) for j in range(k)])
            info = _normalise_observer_info(name, info)
            if len(info["components"]) != k:
                raise StoreError(
                    f"observer {name!r} has {k} columns but {len(info['components'])} "
                    "component labels in observer_info"
                )
            observer_info[name] = info
        return cls(
            time=np.asarray(traj.time, dtype=np.float64),
            body_names=tuple(traj.body_names),
            observer_info=observer_info,
            diagnostics=tuple(traj.diagnostics),
            param_shapes={k: tuple(np.shape(v)) for k, v in traj.params.items()},
        )


def _compression_kwargs(compression: str | None) -> dict[str, Any]:
    if compression in (None, "none"):
        return {"shuffle": True}
    if compression == "lzf":
        return {"shuffle": True, "compression": "lzf"}
    if compression == "gzip":
        # level 4: ~50 MB/s write, ratio 1.6 on PyBullet trajectories (DESIGN.md "Compression")
        return {"shuffle": True, "compression": "gzip", "compression_opts": 4}
    raise StoreError(f"compression must be 'lzf', 'gzip' or None, got {compression!r}")


def _init_file(
    f: h5py.File, schema: StoreSchema, n_real: int, attrs: dict[str, Any], compression: str | None
) -> None:
    """Write the attributes and preallocate every dataset of a new store."""
    for key, value in attrs.items():
        f.attrs[key] = value
    nt, nb = schema.n_times, schema.n_bodies
    comp = _compression_kwargs(compression)
    f.create_dataset("time", data=schema.time)
    f.create_dataset("body_names", data=np.array(schema.body_names, dtype=object), dtype=_STR)
    states = f.create_group("states", track_order=True)
    for name, k in STATE_FIELDS.items():
        states.create_dataset(
            name,
            shape=(n_real, nt, nb, k),
            dtype=np.float64,
            chunks=(1, nt, nb, k),
            fillvalue=np.nan,
            **comp,
        )
    observers = f.create_group("observers", track_order=True)
    for name, info in schema.observer_info.items():
        k = len(info["components"])
        ds = observers.create_dataset(
            name,
            shape=(n_real, nt, k),
            dtype=np.float64,
            chunks=(1, nt, k),
            fillvalue=np.nan,
            **comp,
        )
        ds.attrs["quantity"] = info["quantity"]
        ds.attrs["unit"] = info["unit"]
        ds.attrs["components"] = np.array(info["components"], dtype=_STR)
        ds.attrs["body"] = info["body"]
    diagnostics = f.create_group("diagnostics", track_order=True)
    for name in schema.diagnostics:
        diagnostics.create_dataset(
            name, shape=(n_real, nt), dtype=np.float64, chunks=(1, nt), fillvalue=np.nan, **comp
        )
    params = f.create_group("params", track_order=True)
    for key, shape in schema.param_shapes.items():
        # contiguous and written now: later writes of a realization change bytes in place only
        params.create_dataset(key, data=np.full((n_real, *shape), np.nan))
    f.create_dataset("completed", data=np.zeros(n_real, dtype=bool))
    f.create_dataset("recorded", data=np.zeros(n_real, dtype=np.int64))
    for name in ("status", "message"):
        # one unfiltered chunk per element, allocated now, so _reset_strings can overwrite it raw
        f.create_dataset(name, data=np.array([""] * n_real, dtype=object), dtype=_STR, chunks=(1,))


def _reset_strings(f: h5py.File, i: int) -> None:
    """Set ``status[i]`` and ``message[i]`` to the null reference without reading them.

    An on-disk variable-length element is a 4-byte length followed by a global-heap ID (file
    address + 4-byte index); all zeros is the null sequence, read as ``""``. Writing the raw chunk
    skips HDF5's lookup of the old heap object, which a killed writer may have left dangling.
    """
    sizeof_addr, _ = f.file.id.get_create_plist().get_sizes()
    null = bytes(4 + sizeof_addr + 4)
    for name in ("status", "message"):
        f[name].id.write_direct_chunk((i,), null)


def _schema_from_file(f: h5py.File) -> StoreSchema:
    observer_info = {}
    for name, ds in f["observers"].items():
        observer_info[name] = {
            "quantity": str(ds.attrs.get("quantity", "")),
            "unit": str(ds.attrs.get("unit", "")),
            "components": [str(c) for c in ds.attrs.get("components", [])],
            "body": str(ds.attrs.get("body", "")),
        }
    param_shapes: dict[str, tuple[int, ...]] = {}

    def visit(name: str, obj: Any) -> None:
        if isinstance(obj, h5py.Dataset):
            param_shapes[name] = tuple(obj.shape[1:])

    f["params"].visititems(visit)
    return StoreSchema(
        time=f["time"][()],
        body_names=tuple(str(s) for s in f["body_names"].asstr()[()]),
        observer_info=observer_info,
        diagnostics=tuple(f["diagnostics"].keys()),
        param_shapes=param_shapes,
    )


def _plain(value: Any) -> Any:
    """An HDF5 attribute value as a JSON-serialisable Python value."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    return value


class TrajectoryStore:
    """An open store file (see the module docstring for the layout).

    Create one with :meth:`create` or open one with :meth:`open`; use as a context manager or
    call :meth:`close`. Only one process may write to a store.
    """

    def __init__(self, f: h5py.File, path: Path):
        self._f = f
        self._path = path
        self._schema = _schema_from_file(f)
        self._n_real = int(f["completed"].shape[0])

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
        compression: str | None = "lzf",
        nominal: Trajectory | None = None,
        extra_attrs: Mapping[str, Any] | None = None,
        extra_datasets: Mapping[str, np.ndarray] | None = None,
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
        compression : {"lzf", "gzip", None}
            Filter of the state, observer and diagnostic datasets (always with shuffle).
        nominal : Trajectory, optional
            The nominal (deterministic) run of an ensemble, stored under ``/nominal`` in the same
            layout with one realization; written before the file is moved into place.
        extra_attrs : mapping, optional
            Further root attributes (e.g. ``time_reversed`` of reverse runs).
        extra_datasets : mapping of str to ndarray, optional
            Further datasets by path (e.g. the per-island LCP log of a reverse run), written
            before the file is moved into place.

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
        attrs = {
            "format_version": FORMAT_VERSION,
            "workbench_version": _package_version(),
            "scene": str(scene_text),
            "scene_json": str(scene_json),
            "seed_entropy": entropy,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "n_realizations": n_real,
            "kind": kind,
        }
        for key, value in (extra_attrs or {}).items():
            if key in attrs:
                raise StoreError(f"extra attribute {key!r} would replace a built-in one")
            attrs[key] = value
        directory = path.parent
        if not directory.is_dir():
            raise StoreError(f"{path}: directory {directory} does not exist")
        if path.is_dir():
            raise StoreError(f"{path}: is a directory")
        tmp = directory / f".{path.name}.tmp-{os.getpid()}"
        try:
            with h5py.File(tmp, "w") as f:
                _init_file(f, schema, n_real, attrs, compression)
                if nominal is not None:
                    _init_file(f.create_group(NOMINAL), schema, 1, {}, compression)
                    cls(f[NOMINAL], tmp).write(0, nominal)
                for name, data in (extra_datasets or {}).items():
                    f.create_dataset(name, data=data)
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except BaseException as exc:
            tmp.unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise StoreError(f"{path}: cannot create store ({exc})") from exc
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
            The file is missing, not HDF5, of another format version, or lacks a dataset.
        """
        path = Path(path)
        if mode not in ("r", "r+"):
            raise StoreError(f"mode must be 'r' or 'r+', got {mode!r}")
        if not path.exists():
            raise StoreError(f"{path}: no such file")
        if not path.is_file():
            raise StoreError(f"{path}: not a file")
        if not h5py.is_hdf5(path):
            raise StoreError(f"{path}: not an HDF5 file")
        try:
            # Read-only opens take no lock, so `workbench inspect`/`stats` can watch an ensemble
            # while its driver writes: the two-phase flush keeps completed rows on disk.
            f = h5py.File(path, mode, locking=False if mode == "r" else None)
        except OSError as exc:
            raise StoreError(f"{path}: cannot open HDF5 file ({exc})") from None
        try:
            version = f.attrs.get("format_version")
            if version is None:
                raise StoreError(f"{path}: not a rigid-workbench store (no format_version)")
            if int(version) != FORMAT_VERSION:
                raise StoreError(
                    f"{path}: store format version {int(version)}, this version reads "
                    f"{FORMAT_VERSION}"
                )
            missing = [name for name in _REQUIRED if name not in f]
            if missing:
                raise StoreError(f"{path}: damaged store, missing {', '.join(missing)}")
            store = cls(f, path)
            store._check_shapes()
        except StoreError:
            f.close()
            raise
        except Exception as exc:
            f.close()
            raise StoreError(f"{path}: damaged store ({type(exc).__name__}: {exc})") from None
        return store

    def _check_shapes(self) -> None:
        s, n = self._schema, self._n_real
        expected = {"recorded": (n,), "status": (n,), "message": (n,)}
        for name, k in STATE_FIELDS.items():
            expected[f"states/{name}"] = (n, s.n_times, s.n_bodies, k)
        for name, info in s.observer_info.items():
            expected[f"observers/{name}"] = (n, s.n_times, len(info["components"]))
        for name in s.diagnostics:
            expected[f"diagnostics/{name}"] = (n, s.n_times)
        for name, shape in expected.items():
            if self._f[name].shape != shape:
                raise StoreError(
                    f"{self._path}: damaged store, {name} has shape {self._f[name].shape}, "
                    f"expected {shape}"
                )
        for key in s.param_shapes:
            if self._f["params"][key].shape[0] != n:
                raise StoreError(f"{self._path}: damaged store, params/{key} has wrong length")

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
    def attrs(self) -> dict[str, Any]:
        """Root attributes as plain Python values."""
        return {k: _plain(v) for k, v in self._f.attrs.items()}

    @property
    def completed(self) -> np.ndarray:
        """Boolean mask, shape (n_realizations,), of realizations entirely on disk (a copy)."""
        return np.asarray(self._f["completed"][()], dtype=bool)

    def missing(self) -> np.ndarray:
        """Indices, shape (n_missing,), of realizations not yet completed."""
        return np.flatnonzero(~self.completed)

    # -- data -------------------------------------------------------------------------------

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

    def _validated(self, i: int, traj: Trajectory) -> tuple[int, dict[str, np.ndarray]]:
        """Check ``traj`` against the schema.

        Returns its number of records and, by dataset path, the row ``i`` to write: per-record
        arrays padded with NaN to ``nt`` records, parameters at their declared shapes.
        """
        s = self._schema
        where = f"{self._path}: realization {i}"
        if tuple(traj.body_names) != s.body_names:
            raise StoreError(
                f"{where}: trajectory has {len(traj.body_names)} bodies "
                f"({', '.join(traj.body_names)}), store expects {s.n_bodies} "
                f"({', '.join(s.body_names)})"
            )
        time = np.asarray(traj.time, dtype=np.float64)
        n = time.shape[0] if time.ndim == 1 else -1
        if not 0 <= n <= s.n_times:
            raise StoreError(
                f"{where}: time has shape {time.shape}, store expects at most ({s.n_times},)"
            )
        scale = max(float(np.max(np.abs(s.time))), float(s.time[-1] - s.time[0]), 1e-300)
        if not np.allclose(time, s.time[:n], rtol=0.0, atol=_TIME_RTOL * scale):
            raise StoreError(f"{where}: record times differ from the store's /time")

        def padded(label: str, values: Any, tail: tuple[int, ...]) -> np.ndarray:
            arr = np.asarray(values, dtype=np.float64)
            if arr.shape != (n, *tail):
                raise StoreError(f"{where}: {label} has shape {arr.shape}, expected {(n, *tail)}")
            out = np.full((s.n_times, *tail), np.nan)
            out[:n] = arr
            return out

        def same_names(label: str, got: Any, expected: Any) -> None:
            if set(got) != set(expected):
                extra = sorted(set(got) - set(expected))
                lacking = sorted(set(expected) - set(got))
                raise StoreError(
                    f"{where}: {label} do not match the store"
                    + (f"; not in store: {', '.join(extra)}" if extra else "")
                    + (f"; missing: {', '.join(lacking)}" if lacking else "")
                )

        data: dict[str, np.ndarray] = {}
        for name, k in STATE_FIELDS.items():
            data[f"states/{name}"] = padded(name, getattr(traj, name), (s.n_bodies, k))
        same_names("observers", traj.observers, s.observer_info)
        for name, info in s.observer_info.items():
            given = traj.observer_info.get(name)
            if given is not None and _normalise_observer_info(name, given) != info:
                raise StoreError(f"{where}: observer_info[{name!r}] differs from the store's")
            k = len(info["components"])
            data[f"observers/{name}"] = padded(f"observer {name!r}", traj.observers[name], (k,))
        same_names("diagnostics", traj.diagnostics, s.diagnostics)
        for name in s.diagnostics:
            data[f"diagnostics/{name}"] = padded(f"diagnostic {name!r}", traj.diagnostics[name], ())
        same_names("params", traj.params, s.param_shapes)
        for key, shape in s.param_shapes.items():
            arr = np.asarray(traj.params[key], dtype=np.float64)
            if arr.shape != shape:
                raise StoreError(f"{where}: param {key!r} has shape {arr.shape}, expected {shape}")
            data[f"params/{key}"] = arr
        if not isinstance(traj.status, str) or not isinstance(traj.message, str):
            raise StoreError(f"{where}: status and message must be str")
        return n, data

    def write(self, i: int, traj: Trajectory) -> None:
        """Write realization ``i`` and mark it completed (two-phase, crash-safe).

        Every dataset of the realization is written and the file flushed before
        ``completed[i]`` is set and the file flushed again. A trajectory shorter than the
        store's ``nt`` (a run stopped early) fills the first ``traj.n_times`` records; the rest
        is NaN. Rewriting a completed realization first clears its ``completed`` flag.

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
        i = self._index(i)
        if self._f.file.mode != "r+":
            raise StoreError(f"{self._path}: opened read-only")
        n, data = self._validated(i, traj)
        f = self._f
        if f["completed"][i]:
            f["completed"][i] = False
            f.file.flush()
        # phase 1: the data, one whole chunk per dataset
        _reset_strings(f, i)
        for name, arr in data.items():
            f[name][i] = arr
        f["recorded"][i] = n
        f["status"][i] = traj.status
        f["message"][i] = traj.message
        f.file.flush()
        # phase 2: the mark
        f["completed"][i] = True
        f.file.flush()

    def write_many(self, items) -> None:
        """Write several realizations with one two-phase flush for the batch.

        Every dataset of every ``(i, traj)`` in ``items`` is written and the file flushed; only
        then are their ``completed`` flags set and the file flushed again. Crash safety is that of
        :meth:`write` (a killed writer leaves none of the batch marked completed, or all of it),
        at a fraction of the flush cost for short realizations.
        """
        items = [(self._index(i), traj) for i, traj in items]
        if not items:
            return
        if self._f.file.mode != "r+":
            raise StoreError(f"{self._path}: opened read-only")
        f = self._f
        validated = [(i, traj, *self._validated(i, traj)) for i, traj in items]
        if any(f["completed"][i] for i, *_ in validated):
            for i, *_ in validated:
                f["completed"][i] = False
            f.file.flush()
        for i, traj, n, data in validated:  # phase 1: the data
            _reset_strings(f, i)
            for name, arr in data.items():
                f[name][i] = arr
            f["recorded"][i] = n
            f["status"][i] = traj.status
            f["message"][i] = traj.message
        f.file.flush()
        for i, *_ in validated:  # phase 2: the marks
            f["completed"][i] = True
        f.file.flush()

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
        f, s = self._f, self._schema
        if not f["completed"][i]:
            raise StoreError(f"{self._path}: realization {i} is not completed")
        n = int(f["recorded"][i])
        states = {name: f[f"states/{name}"][i, :n] for name in STATE_FIELDS}
        return Trajectory(
            time=s.time[:n].copy(),
            body_names=s.body_names,
            **states,
            observers={name: f[f"observers/{name}"][i, :n] for name in s.observer_info},
            observer_info={
                name: {**info, "components": list(info["components"])}
                for name, info in s.observer_info.items()
            },
            diagnostics={name: f[f"diagnostics/{name}"][i, :n] for name in s.diagnostics},
            params={key: np.asarray(f[f"params/{key}"][i]) for key in s.param_shapes},
            status=str(f["status"].asstr()[i]),
            message=str(f["message"].asstr()[i]),
        )

    # -- lifetime ---------------------------------------------------------------------------

    def read_array(self, name: str) -> np.ndarray:
        """A dataset across realizations, e.g. ``observers/height`` (n_real, nt, k) or
        ``params/ball/mass`` (n_real,); rows of realizations not completed are NaN."""
        if name not in self._f or not isinstance(self._f[name], h5py.Dataset):
            raise StoreError(f"{self._path}: no dataset '{name}'")
        data = np.asarray(self._f[name][()], dtype=float)
        if data.shape[:1] == (self._n_real,):
            data[~self.completed] = np.nan
        return data

    def statuses(self) -> list[str]:
        """Status of every completed realization ("ok", "nonfinite", "error", ...)."""
        return [str(self._f["status"].asstr()[i]) for i in np.flatnonzero(self.completed)]

    def read_nominal(self) -> Trajectory | None:
        """The nominal run stored with an ensemble (``/nominal``), or ``None``."""
        if NOMINAL not in self._f:
            return None
        return TrajectoryStore(self._f[NOMINAL], self._path).read(0)

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._f.id.valid and isinstance(self._f, h5py.File):
            self._f.close()

    def __enter__(self) -> TrajectoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
) -> None:
    """Store a single run (``kind = "run"``, one realization) at ``path``.

    Parameters
    ----------
    path : path-like
    traj : Trajectory
        The run; its times define ``/time``.
    scene_text, scene_json, seed_entropy, extra_attrs, extra_datasets
        As in :meth:`TrajectoryStore.create`.
    """
    schema = StoreSchema.from_trajectory(traj)
    with TrajectoryStore.create(
        path,
        schema,
        1,
        scene_text=scene_text,
        scene_json=scene_json,
        seed_entropy=seed_entropy,
        kind="run",
        extra_attrs=extra_attrs,
        extra_datasets=extra_datasets,
    ) as store:
        store.write(0, traj)


def read_trajectory(path: str | os.PathLike, realization: int = 0) -> Trajectory:
    """Read one completed realization of the store at ``path``."""
    with TrajectoryStore.open(path) as store:
        return store.read(realization)


def _dataset_summary(ds: h5py.Dataset) -> dict[str, Any]:
    string = h5py.check_string_dtype(ds.dtype)
    return {
        "shape": list(ds.shape),
        "dtype": f"str ({string.encoding})" if string is not None else str(ds.dtype),
        "compression": ds.compression,
        "shuffle": bool(ds.shuffle),
        "chunks": list(ds.chunks) if ds.chunks is not None else None,
    }


def _dataset_summaries(group: h5py.Group, prefix: str = "/") -> dict[str, Any]:
    """Shapes, types and filters of every dataset under ``group``, walked link by link.

    ``Group.visititems`` stops at the first object header it cannot read, which a writer killed
    while HDF5 extended a header can leave behind (seen once in CI: "Object visitation failed
    (addr overflow)"), although the completed realizations read back exactly. Here an object
    that cannot be read is listed as ``{"unreadable": reason}`` and the walk goes on.
    """
    out: dict[str, Any] = {}
    try:
        names = list(group.keys())
    except (RuntimeError, OSError, KeyError) as exc:
        return {prefix: {"unreadable": str(exc)}}
    for name in names:
        path = prefix + name
        try:
            obj = group[name]
        except (RuntimeError, OSError, KeyError) as exc:
            out[path] = {"unreadable": str(exc)}
            continue
        if isinstance(obj, h5py.Group):
            out.update(_dataset_summaries(obj, path + "/"))
        elif isinstance(obj, h5py.Dataset):
            try:
                out[path] = _dataset_summary(obj)
            except (RuntimeError, OSError) as exc:
                out[path] = {"unreadable": str(exc)}
    return dict(sorted(out.items()))


def describe(path: str | os.PathLike) -> dict[str, Any]:
    """A JSON-serialisable summary of a store, for ``workbench inspect``.

    Returns
    -------
    dict
        ``path``, ``file_size`` (bytes), ``attrs`` (root attributes without the scene source,
        plus ``scene_first_line``), ``n_realizations``, ``n_completed``, ``n_missing``,
        ``failed`` (completed realizations whose status is not ``"ok"``: index, status,
        message), ``time`` (``nt``, ``start``, ``stop``), ``bodies``, ``observers`` (shape and
        info), ``diagnostics``, ``params`` (per-realization shapes) and ``datasets`` (shape,
        dtype, compression, shuffle, chunks by HDF5 path).
    """
    with TrajectoryStore.open(path) as store:
        f, s = store._f, store.schema
        attrs = store.attrs
        scene = str(attrs.pop("scene", ""))
        attrs["scene_first_line"] = scene.splitlines()[0] if scene else ""
        completed = store.completed
        # only completed elements are read: an incomplete one may refer to a lost heap object
        status, message = f["status"].asstr(), f["message"].asstr()
        failed = []
        for i in np.flatnonzero(completed):
            if status[i] != "ok":
                failed.append({"index": int(i), "status": status[i], "message": message[i]})
        datasets = _dataset_summaries(f)
        summary = {
            "path": str(store.path),
            "file_size": os.path.getsize(store.path),
            "attrs": attrs,
            "n_realizations": store.n_realizations,
            "n_completed": int(completed.sum()),
            "n_missing": int((~completed).sum()),
            "failed": failed,
            "time": {"nt": s.n_times, "start": float(s.time[0]), "stop": float(s.time[-1])},
            "bodies": list(s.body_names),
            "observers": {
                name: {"shape": list(f[f"observers/{name}"].shape), **info}
                for name, info in s.observer_info.items()
            },
            "diagnostics": list(s.diagnostics),
            "params": {key: {"shape": list(shape)} for key, shape in s.param_shapes.items()},
            "datasets": datasets,
        }
    return summary
