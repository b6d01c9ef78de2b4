"""What a store holds, independent of the file: its schema, and a trajectory checked against it.

A :class:`StoreSchema` fixes the shapes and names shared by all realizations of a store (record
times, bodies, observers, diagnostics, parameter shapes). :meth:`StoreSchema.rows` turns one
:class:`~workbench.sim.state.Trajectory` into the rows a store writes for it, one per dataset of
the layout (``docs/architecture.md``, "HDF5 layout"), and :meth:`StoreSchema.trajectory` turns
those rows back into a trajectory. Both backends (:mod:`workbench.store.hdf5` and the in-memory
reference, :mod:`workbench.store.memory`) go through these two methods, so they agree by
construction on what a realization is. Pure numpy: nothing here touches a file.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import deflate
import numpy as np

from workbench.errors import StoreError
from workbench.sim.state import STATE_FIELDS, RecordShape, Trajectory

__all__ = [
    "pack",
    "TIME_RTOL",
    "StoreSchema",
    "ChunkFilters",
    "PackedRows",
    "check_name",
    "normalise_observer_info",
    "normalise_link_info",
    "normalise_joint_info",
    "JOINT_FIELDS",
    "JOINT_UNITS",
    "same_times",
    "time_tolerance",
]

#: Record times written for a realization may differ from the store's ``/time`` by round-off
#: (times accumulated step by step vs. computed as ``i * dt``): about ``n_steps * eps`` relative.
#: 1e-9 of the time scale covers 10^6 steps of that round-off and still rejects any wrong dt,
#: stride or start time.
TIME_RTOL = 1e-9


def time_tolerance(time: np.ndarray) -> float:
    """Absolute tolerance, s, at which instants of the grid ``time`` (shape (nt,)) are equal:
    :data:`TIME_RTOL` of its time scale (largest instant or span, whichever is larger)."""
    scale = max(float(np.max(np.abs(time))), float(time[-1] - time[0]), 1e-300)
    return TIME_RTOL * scale


def same_times(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``b`` holds the first ``b.size`` instants of ``a`` to :func:`time_tolerance`."""
    return bool(np.allclose(b, a[: b.shape[0]], rtol=0.0, atol=time_tolerance(a)))


def check_name(what: str, name: str) -> None:
    """Reject names that cannot be one HDF5 link name."""
    if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
        raise StoreError(f"{what} name {name!r} must be a non-empty string without '/'")


def _check_names(what: str, names: Any) -> tuple[str, ...]:
    """``names`` as a tuple of distinct valid link names."""
    names = tuple(names)
    for name in names:
        check_name(what, name)
    if len(set(names)) != len(names):
        raise StoreError(f"duplicate {what} names: {', '.join(names)}")
    return names


def _check_param_key(key: str) -> None:
    if not isinstance(key, str) or not key:
        raise StoreError(f"parameter key {key!r} must be a non-empty '<body>/<quantity>' string")
    for part in key.split("/"):
        if not part or part in (".", ".."):
            raise StoreError(f"parameter key {key!r} must look like '<body>/<quantity>'")


#: The per-record joint datasets (``joints/<name>``, shape (nt, n_joints) per realization) and
#: the unit of each joint type's coordinate and rate.
JOINT_FIELDS = ("position", "velocity")
JOINT_UNITS = {"revolute": "rad", "continuous": "rad", "prismatic": "m"}

#: Keys of a tracked link's description (:attr:`StoreSchema.link_info`), with their types.
LINK_KEYS = {"body": str, "link": str, "index": int, "parent": str, "joint": str, "joint_type": str}


def normalise_link_info(name: str, info: Mapping[str, Any]) -> dict[str, Any]:
    """The description of tracked link ``name`` as stored: :data:`LINK_KEYS`, typed."""
    try:
        return {key: kind(info[key]) for key, kind in LINK_KEYS.items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"link {name!r}: link_info needs {', '.join(LINK_KEYS)} ({exc})") from None


def normalise_joint_info(name: str, info: Mapping[str, Any]) -> dict[str, Any]:
    """``link``, ``type`` and ``unit`` of moving joint ``name`` as stored."""
    kind = str(info.get("type", ""))
    if kind not in JOINT_UNITS:
        raise StoreError(f"joint {name!r}: type {kind!r} is not one of {', '.join(JOINT_UNITS)}")
    return {"link": str(info.get("link", "")), "type": kind, "unit": JOINT_UNITS[kind]}


def normalise_observer_info(name: str, info: Mapping[str, Any]) -> dict[str, Any]:
    """``quantity``, ``unit``, ``components`` (list of str) and ``body`` of observer ``name``,
    as stored; at least one component label is required."""
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
class StoreSchema(RecordShape):
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
    link_info : dict of str to dict
        The tracked links of URDF bodies, by row name ``"<body>/<link>"``: the last
        ``len(link_info)`` of ``body_names``, in that order; each with ``body``, ``link``,
        ``index``, ``parent``, ``joint``, ``joint_type``
        (:attr:`~workbench.sim.state.Trajectory.link_info`). Empty without URDF links.
    joint_info : dict of str to dict
        The moving joints, ``"<body>/<joint>"`` in column order, each with ``link``, ``type``
        and ``unit``; when not empty the store holds ``joints/position`` and
        ``joints/velocity``, shape (nt, n_joints) per realization.
    """

    time: np.ndarray
    body_names: tuple[str, ...]
    observer_info: dict[str, dict] = field(default_factory=dict)
    diagnostics: tuple[str, ...] = ()
    param_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    link_info: dict[str, dict] = field(default_factory=dict)
    joint_info: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self) -> None:
        time = np.array(self.time, dtype=np.float64)
        if time.ndim != 1 or time.size == 0:
            raise StoreError(f"schema time must have shape (nt,) with nt >= 1, got {time.shape}")
        if not np.all(np.isfinite(time)):
            raise StoreError("schema time must be finite")
        time.flags.writeable = False
        link_info = {str(k): normalise_link_info(k, v) for k, v in self.link_info.items()}
        n_links = len(link_info)
        names = tuple(self.body_names)
        if n_links and tuple(names[-n_links:]) != tuple(link_info):
            raise StoreError(
                f"schema link rows ({', '.join(link_info)}) must be the last body names"
            )
        body_names = _check_names("body", names[: len(names) - n_links]) + tuple(link_info)
        for name in link_info:
            _check_param_key(name)  # "<body>/<link>": parts that are link names
        if len(set(body_names)) != len(body_names):
            raise StoreError(f"duplicate body names: {', '.join(body_names)}")
        if not body_names:
            raise StoreError("schema needs at least one body")
        joint_info = {}
        for name, info in self.joint_info.items():
            _check_param_key(name)
            joint_info[name] = normalise_joint_info(name, info)
            if joint_info[name]["link"] not in link_info:
                raise StoreError(f"joint {name!r} moves {joint_info[name]['link']!r}, not a link")
        observer_info = {}
        for name, info in self.observer_info.items():
            check_name("observer", name)
            observer_info[name] = normalise_observer_info(name, info)
        diagnostics = _check_names("diagnostic", self.diagnostics)
        param_shapes = {}
        for key, shape in self.param_shapes.items():
            _check_param_key(key)
            shape = tuple(int(s) for s in shape)
            if any(s < 1 for s in shape):
                raise StoreError(f"parameter {key!r}: shape {shape} has an empty dimension")
            param_shapes[key] = shape
        # a key that is a folder of another ("a/b" and "a/b/c"): each key's proper prefixes
        # looked up, linear in the keys (the pairwise check took 6 s for 1000 spheres' 3000
        # parameters; issue 39, case 5)
        for other in param_shapes:
            parts = other.split("/")
            for cut in range(1, len(parts)):
                key = "/".join(parts[:cut])
                if key in param_shapes:
                    raise StoreError(f"parameter {key!r} clashes with parameter {other!r}")
        object.__setattr__(self, "time", time)
        object.__setattr__(self, "body_names", body_names)
        object.__setattr__(self, "observer_info", observer_info)
        object.__setattr__(self, "diagnostics", diagnostics)
        object.__setattr__(self, "param_shapes", param_shapes)
        object.__setattr__(self, "link_info", link_info)
        object.__setattr__(self, "joint_info", joint_info)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StoreSchema):
            return NotImplemented
        return (
            np.array_equal(self.time, other.time)
            and self.body_names == other.body_names
            and self.observer_info == other.observer_info
            and self.diagnostics == other.diagnostics
            and self.param_shapes == other.param_shapes
            and self.link_info == other.link_info
            and self.joint_info == other.joint_info
        )

    __hash__ = None  # type: ignore[assignment]  # holds arrays and dicts

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
            info = normalise_observer_info(name, info)
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
            link_info=dict(traj.link_info),
            joint_info=dict(traj.joint_info),
        )

    def row_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shape of one realization's row, by dataset path, for every per-realization float
        dataset of the layout: states, observers, diagnostics (``(nt, ...)``), parameters."""
        nt, nb = self.n_times, self.n_bodies
        shapes = {f"states/{name}": (nt, nb, k) for name, k in STATE_FIELDS.items()}
        for name, info in self.observer_info.items():
            shapes[f"observers/{name}"] = (nt, len(info["components"]))
        for name in self.diagnostics:
            shapes[f"diagnostics/{name}"] = (nt,)
        for name in JOINT_FIELDS if self.joint_info else ():
            shapes[f"joints/{name}"] = (nt, len(self.joint_info))
        for key, shape in self.param_shapes.items():
            shapes[f"params/{key}"] = shape
        return shapes

    def rows(self, traj: Trajectory, where: str) -> tuple[int, dict[str, np.ndarray]]:
        """Check ``traj`` against the schema and return what a store writes for it.

        Parameters
        ----------
        traj : Trajectory
            Must have the schema's bodies, observers, diagnostics, parameter keys and shapes,
            and times equal to the first records of :attr:`time`.
        where : str
            Prefix of error messages (file and realization).

        Returns
        -------
        n : int
            Number of records of ``traj`` (``<= nt``).
        rows : dict of str to ndarray
            By dataset path (as :meth:`row_shapes`): per-record arrays padded with NaN to ``nt``
            records, parameters at their declared shapes, all float64.

        Raises
        ------
        StoreError
            ``traj`` does not match the schema; the message names the mismatch.
        """
        if tuple(traj.body_names) != self.body_names:
            raise StoreError(
                f"{where}: trajectory has {len(traj.body_names)} bodies "
                f"({', '.join(traj.body_names)}), store expects {self.n_bodies} "
                f"({', '.join(self.body_names)})"
            )
        time = np.asarray(traj.time, dtype=np.float64)
        n = time.shape[0] if time.ndim == 1 else -1
        if not 0 <= n <= self.n_times:
            raise StoreError(
                f"{where}: time has shape {time.shape}, store expects at most ({self.n_times},)"
            )
        if not same_times(self.time, time):
            raise StoreError(f"{where}: record times differ from the store's /time")

        def padded(label: str, values: Any, tail: tuple[int, ...]) -> np.ndarray:
            arr = np.asarray(values, dtype=np.float64)
            if arr.shape != (n, *tail):
                raise StoreError(f"{where}: {label} has shape {arr.shape}, expected {(n, *tail)}")
            out = np.full((self.n_times, *tail), np.nan)
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
            data[f"states/{name}"] = padded(name, getattr(traj, name), (self.n_bodies, k))
        same_names("observers", traj.observers, self.observer_info)
        for name, info in self.observer_info.items():
            given = traj.observer_info.get(name)
            if given is not None and normalise_observer_info(name, given) != info:
                raise StoreError(f"{where}: observer_info[{name!r}] differs from the store's")
            k = len(info["components"])
            data[f"observers/{name}"] = padded(f"observer {name!r}", traj.observers[name], (k,))
        same_names("diagnostics", traj.diagnostics, self.diagnostics)
        for name in self.diagnostics:
            data[f"diagnostics/{name}"] = padded(f"diagnostic {name!r}", traj.diagnostics[name], ())
        if {k: normalise_link_info(k, v) for k, v in traj.link_info.items()} != self.link_info:
            raise StoreError(f"{where}: link_info differs from the store's")
        same_names("joints", traj.joint_info, self.joint_info)
        if list(traj.joint_info) != list(self.joint_info):
            raise StoreError(f"{where}: joints are not in the store's order")
        for name in JOINT_FIELDS if self.joint_info else ():
            values = getattr(traj, f"joint_{name}")
            if values is None:
                raise StoreError(f"{where}: joint_{name} missing (the store has joints)")
            data[f"joints/{name}"] = padded(f"joint_{name}", values, (len(self.joint_info),))
        same_names("params", traj.params, self.param_shapes)
        for key, shape in self.param_shapes.items():
            arr = np.asarray(traj.params[key], dtype=np.float64)
            if arr.shape != shape:
                raise StoreError(f"{where}: param {key!r} has shape {arr.shape}, expected {shape}")
            data[f"params/{key}"] = arr
        if not isinstance(traj.status, str) or not isinstance(traj.message, str):
            raise StoreError(f"{where}: status and message must be str")
        return n, data

    def trajectory(
        self, n: int, row: Callable[[str, int], np.ndarray], status: str, message: str
    ) -> Trajectory:
        """The trajectory of ``n`` records whose rows ``row(path, n)`` returns.

        Parameters
        ----------
        n : int
            Records of the realization.
        row : callable
            ``row(path, n)``: the first ``n`` records of the realization's row of the dataset at
            ``path`` (states, observers, diagnostics), or its whole row (``params/...``; ``n``
            is then ignored).
        status, message : str

        Returns
        -------
        Trajectory
            The inverse of :meth:`rows`.
        """
        return Trajectory(
            time=self.time[:n].copy(),
            body_names=self.body_names,
            **{name: row(f"states/{name}", n) for name in STATE_FIELDS},
            observers={name: row(f"observers/{name}", n) for name in self.observer_info},
            observer_info={
                name: {**info, "components": list(info["components"])}
                for name, info in self.observer_info.items()
            },
            diagnostics={name: row(f"diagnostics/{name}", n) for name in self.diagnostics},
            params={key: np.asarray(row(f"params/{key}", n)) for key in self.param_shapes},
            status=status,
            message=message,
            link_info={name: dict(info) for name, info in self.link_info.items()},
            joint_info={name: dict(info) for name, info in self.joint_info.items()},
            **{
                f"joint_{name}": row(f"joints/{name}", n) if self.joint_info else None
                for name in JOINT_FIELDS
            },
        )


@dataclass(frozen=True)
class ChunkFilters:
    """The filter pipeline of a store's per-record datasets, applied where a realization is run.

    HDF5 stores each chunk of a dataset with shuffle + deflate as a zlib stream (RFC 1950) of the
    shuffled bytes (the pipeline's order: shuffle first), and its deflate filter reads any such
    stream. The store makes those bytes itself for every per-record chunk it writes
    (:meth:`encode`, with libdeflate) and writes them as they are (HDF5's direct chunk write):
    ensemble workers compute them for their realizations (:meth:`StoreSchema.pack`), in
    parallel, so the one process that writes the file does not compress, and the file's bytes do
    not depend on the zlib that HDF5 was built with nor on who compressed. ``level`` None: no
    deflate.

    Why libdeflate: on the shuffled records of a random_box realization (8 datasets, 101
    records) Python's zlib at level 4 (HDF5's filter's library) took 0.83 ms for ratio 1.67,
    libdeflate at level 1 0.20 ms for 1.66; on the Batou–Soize five-body scene 5.5 ms against
    1.5 ms, both 2.25 (2026-11-27, idle, ``docs/architecture.md``, "Compression"). zlib's 0.5 ms
    was ≈ 7% of a random_box realization, the share a 2-process pool pays on each core while a
    serial run pays it on the other one (issue 16). libdeflate is deterministic (its output
    depends on its version and the level only), so the same records give the same bytes on
    every worker.

    Attributes
    ----------
    shuffle : bool
        HDF5's byte shuffle (the ``i``-th byte of every element, then the next byte...).
    level : int or None
        Deflate level (libdeflate's scale, 1-12; what the datasets' ``compression_opts`` say).
    """

    shuffle: bool = True
    level: int | None = None

    def encode(self, row: np.ndarray) -> bytes:
        """The stored bytes of one chunk holding ``row`` (float64, C order)."""
        raw = np.ascontiguousarray(row, dtype=np.float64)
        if self.shuffle:
            data = raw.view(np.uint8).reshape(-1, raw.itemsize).T.tobytes()
        else:
            data = raw.tobytes()
        return data if self.level is None else deflate.zlib_compress(data, self.level)

    def decode(self, chunk: bytes, shape: tuple[int, ...]) -> np.ndarray:
        """The row of ``shape`` stored as ``chunk`` (the inverse of :meth:`encode`)."""
        data = chunk if self.level is None else zlib.decompress(chunk)
        flat = np.frombuffer(data, dtype=np.uint8)
        if self.shuffle:
            flat = flat.reshape(8, -1).T.copy()
        return np.frombuffer(flat.tobytes(), dtype=np.float64).reshape(shape)


@dataclass
class PackedRows:
    """Realizations packed for shipping to the writer: what a worker returns for a task.

    Attributes
    ----------
    indices : ndarray, shape (k,), int64
        Realization indices, strictly increasing.
    recorded : ndarray, shape (k,), int64
        Valid records of each.
    status, message : list of str
        Per realization.
    arrays : dict of str to ndarray
        By dataset path: the ``k`` rows, shape ``(k, *row_shape)`` float64; parameters always,
        per-record datasets when ``filters`` is None.
    chunks : dict of str to list of bytes
        By dataset path: per realization, its chunk already filtered with ``filters``.
    filters : ChunkFilters or None
    seconds : float
        Time spent running the realizations, s.
    """

    indices: np.ndarray
    recorded: np.ndarray
    status: list[str]
    message: list[str]
    arrays: dict[str, np.ndarray]
    chunks: dict[str, list[bytes]]
    filters: ChunkFilters | None = None
    seconds: float = 0.0

    def __len__(self) -> int:
        return int(self.indices.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes of data held (what the write adds to the file, at most)."""
        return sum(a.nbytes for a in self.arrays.values()) + sum(
            len(c) for chunks in self.chunks.values() for c in chunks
        )

    def split(self, k: int) -> tuple[PackedRows, PackedRows]:
        """The first ``k`` realizations and the others, as two packs."""
        head, tail = slice(0, k), slice(k, None)
        return tuple(  # type: ignore[return-value]
            PackedRows(
                self.indices[part],
                self.recorded[part],
                self.status[part],
                self.message[part],
                {name: arr[part] for name, arr in self.arrays.items()},
                {name: chunks[part] for name, chunks in self.chunks.items()},
                self.filters,
                self.seconds if part is head else 0.0,
            )
            for part in (head, tail)
        )

    def filtered(self, filters: ChunkFilters | None) -> PackedRows:
        """These realizations with their per-record rows (``arrays`` other than parameters)
        turned into chunk bytes by ``filters`` (itself when there is nothing to filter)."""
        if filters is None or self.chunks:
            return self
        arrays, chunks = {}, {}
        for name, arr in self.arrays.items():
            if name.startswith("params/"):
                arrays[name] = arr
            else:
                chunks[name] = [filters.encode(row) for row in arr]
        return PackedRows(
            self.indices, self.recorded, self.status, self.message, arrays, chunks, filters,
            self.seconds,
        )  # fmt: skip

    def rows(
        self, schema: StoreSchema
    ) -> Iterable[tuple[int, int, dict[str, np.ndarray], str, str]]:
        """``(i, recorded, rows, status, message)`` per realization, rows decoded."""
        shapes = schema.row_shapes()
        for j, i in enumerate(self.indices.tolist()):
            rows = {name: arr[j] for name, arr in self.arrays.items()}
            for name, chunks in self.chunks.items():
                rows[name] = self.filters.decode(chunks[j], shapes[name])
            yield i, int(self.recorded[j]), rows, self.status[j], self.message[j]


def pack(
    schema: StoreSchema,
    items: Iterable[tuple[int, Trajectory]],
    where: str,
    filters: ChunkFilters | None = None,
) -> PackedRows:
    """Check realizations against ``schema`` (:meth:`StoreSchema.rows`) and pack them.

    Parameters
    ----------
    items : iterable of (int, Trajectory)
        Strictly increasing indices.
    where : str
        Prefix of error messages.
    filters : ChunkFilters, optional
        Filter the per-record rows into chunk bytes (else they are shipped as arrays).
    """
    indices, recorded, status, message = [], [], [], []
    columns: dict[str, list[np.ndarray]] = {}
    chunks: dict[str, list[bytes]] = {}
    for i, traj in items:
        n, rows = schema.rows(traj, f"{where}: realization {i}")
        indices.append(i)
        recorded.append(n)
        status.append(traj.status)
        message.append(traj.message)
        for name, row in rows.items():
            if filters is not None and not name.startswith("params/"):
                chunks.setdefault(name, []).append(filters.encode(row))
            else:
                columns.setdefault(name, []).append(row)
    idx = np.asarray(indices, dtype=np.int64)
    if idx.size > 1 and not np.all(np.diff(idx) > 0):
        raise StoreError(f"{where}: packed realizations must be strictly increasing")
    arrays = {}
    for name, shape in schema.row_shapes().items():
        if name in columns:
            arrays[name] = np.stack(columns[name]) if columns[name] else np.zeros((0, *shape))
        elif name not in chunks:
            if filters is not None and not name.startswith("params/"):
                chunks[name] = []
            else:
                arrays[name] = np.zeros((0, *shape))
    return PackedRows(
        indices=idx,
        recorded=np.asarray(recorded, dtype=np.int64),
        status=status,
        message=message,
        arrays=arrays,
        chunks=chunks,
        filters=filters,
    )
