"""Tests of :mod:`workbench.store`: round trips against the in-memory Trajectory (the reference),
and the HDF5 store against the in-memory store (the same sequence of writes, the same reads)."""

from __future__ import annotations

import json
import os

import h5py
import numpy as np
import pytest

from tests.conftest import SCENES
from workbench.ensemble import run as run_module
from workbench.ensemble.run import SceneRef
from workbench.errors import StoreError
from workbench.sim.state import STATE_FIELDS, Trajectory
from workbench.store import (
    FORMAT_VERSION,
    BatchWriter,
    MemoryStore,
    StoreSchema,
    TrajectoryStore,
    describe,
    read_trajectory,
    write_trajectory,
)
from workbench.store import hdf5 as hdf5_module
from workbench.store import reading as reading_module
from workbench.store.failures import StoreWriteError
from workbench.store.schema import ChunkFilters, pack

NT = 25
BODIES = ("ball", "box")


def make_trajectory(seed: int, nt: int = NT, status: str = "ok", message: str = "") -> Trajectory:
    """A synthetic trajectory: 2 bodies, 2 observers, 1 diagnostic, scalar and (3, 3) params."""
    rng = np.random.default_rng(seed)
    nb = len(BODIES)
    q = rng.normal(size=(nt, nb, 4))
    return Trajectory(
        time=np.arange(nt) * 0.01,
        body_names=BODIES,
        position=rng.normal(size=(nt, nb, 3)),
        orientation=q / np.linalg.norm(q, axis=-1, keepdims=True),
        linear_velocity=rng.normal(size=(nt, nb, 3)),
        angular_velocity=rng.normal(size=(nt, nb, 3)),
        observers={
            "tip": rng.normal(size=(nt, 3)),
            "height": rng.normal(size=(nt, 1)),
        },
        observer_info={
            "tip": {
                "quantity": "position",
                "unit": "m",
                "components": ["x", "y", "z"],
                "body": "box",
            },
            "height": {"quantity": "position", "unit": "m", "components": ["z"], "body": ""},
        },
        diagnostics={"kinetic_energy": rng.uniform(size=nt)},
        params={
            "ball/mass": np.float64(rng.uniform(0.5, 2.0)),
            "box/mass": np.float64(rng.uniform(0.5, 2.0)),
            "box/inertia": rng.normal(size=(3, 3)),
            "box/com": rng.normal(size=3),
        },
        status=status,
        message=message,
    )


def assert_same(got: Trajectory, want: Trajectory) -> None:
    assert np.array_equal(got.time, want.time)
    assert got.body_names == want.body_names
    for name in STATE_FIELDS:
        assert getattr(got, name).dtype == np.float64
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert list(got.observers) == list(want.observers)
    for name in want.observers:
        assert np.array_equal(got.observers[name], want.observers[name]), name
    assert got.observer_info == want.observer_info
    assert list(got.diagnostics) == list(want.diagnostics)
    for name in want.diagnostics:
        assert np.array_equal(got.diagnostics[name], want.diagnostics[name]), name
    assert set(got.params) == set(want.params)
    for key in want.params:
        assert np.shape(got.params[key]) == np.shape(want.params[key]), key
        assert np.array_equal(got.params[key], want.params[key]), key
    assert got.status == want.status
    assert got.message == want.message


def test_round_trip_single_run(tmp_path):
    traj = make_trajectory(1)
    path = tmp_path / "run.h5"
    write_trajectory(path, traj, scene_text="# a scene\nbodies: []\n", seed_entropy=12345)
    assert_same(read_trajectory(path), traj)

    with TrajectoryStore.open(path) as store:
        attrs = store.attrs
        assert attrs["format_version"] == FORMAT_VERSION
        assert attrs["kind"] == "run"
        assert attrs["n_realizations"] == 1
        assert attrs["seed_entropy"] == "12345"
        assert attrs["scene"] == "# a scene\nbodies: []\n"
        assert attrs["scene_json"] == "{}"
        assert isinstance(attrs["workbench_version"], str) and attrs["workbench_version"]
        assert store.schema == StoreSchema.from_trajectory(traj)
        assert store.completed.tolist() == [True]
        assert store.missing().size == 0
    with h5py.File(path, "r") as f:  # the layout on disk
        ds = f["states/position"]
        assert ds.chunks == (1, NT, 2, 3)
        assert ds.compression == "gzip" and ds.shuffle
        assert np.isnan(ds.fillvalue)
        assert f["observers/tip"].attrs["unit"] == "m"
        assert list(f["observers/tip"].attrs["components"]) == ["x", "y", "z"]
        assert f["params/box/inertia"].shape == (1, 3, 3)
        assert f["params/ball/mass"].shape == (1,)


def test_seed_entropy_none_is_empty_string(tmp_path):
    path = tmp_path / "run.h5"
    write_trajectory(path, make_trajectory(2))
    with TrajectoryStore.open(path) as store:
        assert store.attrs["seed_entropy"] == ""


def test_ensemble_partial_completion(tmp_path):
    trajs = [make_trajectory(10 + i) for i in range(4)]
    path = tmp_path / "ens.h5"
    schema = StoreSchema.from_trajectory(trajs[0])
    with TrajectoryStore.create(path, schema, 4, seed_entropy=7) as store:
        assert store.completed.tolist() == [False] * 4
        store.write(0, trajs[0])
        store.write(2, trajs[2])
    with TrajectoryStore.open(path) as store:
        assert store.n_realizations == 4
        assert store.attrs["kind"] == "ensemble"
        assert store.completed.tolist() == [True, False, True, False]
        assert store.missing().tolist() == [1, 3]
        assert_same(store.read(0), trajs[0])
        assert_same(store.read(2), trajs[2])
        with pytest.raises(StoreError, match="realization 1 is not completed"):
            store.read(1)
        with pytest.raises(StoreError, match="out of range"):
            store.read(4)
        with pytest.raises(StoreError, match="read-only"):
            store.write(1, trajs[1])
    # resume: fill the missing ones
    with TrajectoryStore.open(path, "r+") as store:
        for i in store.missing():
            store.write(i, trajs[i])
        assert store.completed.all()
        for i in range(4):
            assert_same(store.read(i), trajs[i])


def test_early_stop_is_truncated(tmp_path):
    full = make_trajectory(3)
    stopped = make_trajectory(4, status="nonfinite", message="box: NaN at t=0.1 s").truncated(11)
    path = tmp_path / "ens.h5"
    with TrajectoryStore.create(path, StoreSchema.from_trajectory(full), 2) as store:
        store.write(0, full)
        store.write(1, stopped)
        got = store.read(1)
        assert got.n_times == 11
        assert_same(got, stopped)
        assert got.status == "nonfinite"
        assert got.message == "box: NaN at t=0.1 s"
        assert store.recorded.tolist() == [NT, 11]
        assert np.all(np.isnan(store.read_array("states/position")[1, 11:]))
        assert np.all(np.isnan(store.read_array("observers/tip")[1, 11:]))
        assert np.all(np.isnan(store.read_array("diagnostics/kinetic_energy")[1, 11:]))
        # rewriting a longer realization with a shorter one leaves no stale records behind
        store.write(0, stopped)
        assert np.all(np.isnan(store.read_array("states/orientation")[0, 11:]))
        assert_same(store.read(0), stopped)
    info = describe(path)
    assert info["failed"] == [
        {"index": 0, "status": "nonfinite", "message": "box: NaN at t=0.1 s"},
        {"index": 1, "status": "nonfinite", "message": "box: NaN at t=0.1 s"},
    ]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda t: _with(t, body_names=("ball",), **_first_body(t)), "1 bodies"),
        (lambda t: _with(t, observers={"tip": t.observers["tip"]}), "missing: height"),
        (lambda t: _with(t, observers={**t.observers, "tip": t.observers["tip"][:, :2]}), "tip"),
        (lambda t: _with(t, diagnostics={}), "diagnostics"),
        (lambda t: _with(t, params={**t.params, "box/inertia": np.eye(2)}), "box/inertia"),
        (lambda t: _with(t, time=t.time * 2.0), "record times"),
    ],
)
def test_schema_mismatch_is_store_error(tmp_path, change, match):
    traj = make_trajectory(5)
    with TrajectoryStore.create(tmp_path / "s.h5", StoreSchema.from_trajectory(traj), 1) as store:
        with pytest.raises(StoreError, match=match):
            store.write(0, change(traj))
        assert not store.completed[0]


def test_longer_than_store_is_store_error(tmp_path):
    short = make_trajectory(6, nt=5)
    with TrajectoryStore.create(tmp_path / "s.h5", StoreSchema.from_trajectory(short), 1) as store:
        with pytest.raises(StoreError, match="at most"):
            store.write(0, make_trajectory(6))


def _with(traj: Trajectory, **changes) -> Trajectory:
    fields = {name: getattr(traj, name) for name in traj.__dataclass_fields__}
    fields.update(changes)
    return Trajectory(**fields)


def _first_body(traj: Trajectory) -> dict:
    return {name: getattr(traj, name)[:, :1] for name in STATE_FIELDS}


def test_open_missing_file(tmp_path):
    path = tmp_path / "nope.h5"
    with pytest.raises(StoreError, match="nope.h5") as err:
        TrajectoryStore.open(path)
    assert str(path) in str(err.value)
    assert "\n" not in str(err.value)


def test_open_not_hdf5(tmp_path):
    path = tmp_path / "text.h5"
    path.write_text("not an hdf5 file\n")
    with pytest.raises(StoreError, match="not an HDF5 file") as err:
        TrajectoryStore.open(path)
    assert str(path) in str(err.value)


def test_open_wrong_version_and_foreign_file(tmp_path):
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = np.zeros(3)
    with pytest.raises(StoreError, match="not a rigid-workbench store"):
        TrajectoryStore.open(foreign)

    path = tmp_path / "run.h5"
    write_trajectory(path, make_trajectory(7))
    with h5py.File(path, "r+") as f:
        f.attrs["format_version"] = FORMAT_VERSION + 1
    with pytest.raises(StoreError, match=f"format version {FORMAT_VERSION + 1}"):
        TrajectoryStore.open(path)

    write_trajectory(path, make_trajectory(7))
    with h5py.File(path, "r+") as f:
        del f["recorded"]
    with pytest.raises(StoreError, match="missing recorded"):
        TrajectoryStore.open(path)


def test_create_leaves_no_temp_file_and_replaces_existing(tmp_path):
    path = tmp_path / "out.h5"
    path.write_bytes(b"old contents")
    traj = make_trajectory(8)
    write_trajectory(path, traj)
    assert sorted(os.listdir(tmp_path)) == ["out.h5"]
    assert_same(read_trajectory(path), traj)
    # a second create onto a valid store replaces it: fresh, nothing completed
    with TrajectoryStore.create(path, StoreSchema.from_trajectory(traj), 3) as store:
        assert store.n_realizations == 3
        assert not store.completed.any()
    assert sorted(os.listdir(tmp_path)) == ["out.h5"]


def test_failed_create_keeps_old_file_and_removes_temp(tmp_path, monkeypatch):
    path = tmp_path / "out.h5"
    path.write_bytes(b"old contents")

    def broken(f, *args, **kwargs):
        f.create_dataset("time", data=np.zeros(3))
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(hdf5_module, "_init_file", broken)
    # h5py raises RuntimeError for many HDF5 failures: one line naming the file
    with pytest.raises(StoreError, match="out.h5: cannot create store .disk on fire"):
        TrajectoryStore.create(path, StoreSchema.from_trajectory(make_trajectory(9)), 2)
    assert path.read_bytes() == b"old contents"
    assert sorted(os.listdir(tmp_path)) == ["out.h5"]


def test_create_into_missing_directory(tmp_path):
    path = tmp_path / "no" / "such" / "dir.h5"
    with pytest.raises(StoreError, match="does not exist"):
        TrajectoryStore.create(path, StoreSchema.from_trajectory(make_trajectory(1)), 1)


def test_schema_rejects_bad_names():
    traj = make_trajectory(1)
    with pytest.raises(StoreError, match="without '/'"):
        StoreSchema(time=traj.time, body_names=("a/b",))
    with pytest.raises(StoreError, match="clashes"):
        StoreSchema(time=traj.time, body_names=("a",), param_shapes={"a/m": (), "a/m/x": ()})
    with pytest.raises(StoreError, match="component"):
        StoreSchema(time=traj.time, body_names=("a",), observer_info={"o": {"components": []}})


def test_describe_is_json_and_complete(tmp_path):
    path = tmp_path / "ens.h5"
    trajs = [make_trajectory(20), make_trajectory(21, status="nonfinite", message="boom")]
    with TrajectoryStore.create(
        path,
        StoreSchema.from_trajectory(trajs[0]),
        3,
        scene_text="first line\nsecond line\n",
        scene_json='{"bodies": []}',
        seed_entropy=99,
    ) as store:
        store.write(0, trajs[0])
        store.write(1, trajs[1])
    info = json.loads(json.dumps(describe(path)))
    assert "scene" not in info["attrs"]
    assert info["attrs"]["scene_first_line"] == "first line"
    assert info["attrs"]["seed_entropy"] == "99"
    assert info["n_realizations"] == 3
    assert info["n_completed"] == 2
    assert info["n_missing"] == 1
    assert info["failed"] == [{"index": 1, "status": "nonfinite", "message": "boom"}]
    assert info["time"] == {"nt": NT, "start": 0.0, "stop": (NT - 1) * 0.01}
    assert info["bodies"] == list(BODIES)
    assert info["observers"]["tip"]["shape"] == [3, NT, 3]
    assert info["observers"]["tip"]["unit"] == "m"
    assert info["diagnostics"] == ["kinetic_energy"]
    assert info["params"]["box/inertia"] == {"shape": [3, 3]}
    assert info["params"]["ball/mass"] == {"shape": []}
    pos = info["datasets"]["/states/position"]
    assert pos == {
        "shape": [3, NT, 2, 3],
        "dtype": "float64",
        "compression": "gzip",
        "shuffle": True,
        "chunks": [1, NT, 2, 3],
        "units": "m",
    }
    assert info["datasets"]["/status"]["dtype"] == "str (utf-8)"
    assert info["file_size"] == os.path.getsize(path)


def test_write_many_equals_single_writes(tmp_path):
    trajs = [make_trajectory(20 + i) for i in range(5)]
    schema = StoreSchema.from_trajectory(trajs[0])
    with TrajectoryStore.create(tmp_path / "a.h5", schema, 5) as store:
        store.write_many([(3, trajs[3]), (0, trajs[0]), (4, trajs[4])])
        assert store.completed.tolist() == [True, False, False, True, True]
        store.write_many([(3, trajs[1])])  # rewriting a completed realization
    with TrajectoryStore.open(tmp_path / "a.h5") as store:
        assert_same(store.read(0), trajs[0])
        assert_same(store.read(3), trajs[1])
        assert_same(store.read(4), trajs[4])


def test_describe_lists_an_unreadable_object_and_goes_on(tmp_path):
    """A writer killed while HDF5 extended an object header can leave one object unreadable
    (seen once in CI); the summary marks it and lists the rest instead of failing."""
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=np.arange(3))
        f.create_dataset("g/b", data=np.zeros((2, 2)))

    class Broken:
        def __init__(self, group):
            self.group = group

        def keys(self):
            return ["a", "bad", "g"]

        def __getitem__(self, name):
            if name == "bad":
                raise RuntimeError("Object visitation failed (addr overflow)")
            return self.group[name]

    with h5py.File(path, "r") as f:
        out = reading_module.dataset_summaries(Broken(f))
    assert out["/a"]["shape"] == [3] and out["/g/b"]["shape"] == [2, 2]
    assert "addr overflow" in out["/bad"]["unreadable"]


# ------------------------------------------------------------- the file against the reference
def _same_store(got, want) -> None:
    """Every public read of ``got`` equals that of ``want``."""
    assert got.schema == want.schema and got.n_realizations == want.n_realizations
    done = want.completed
    assert np.array_equal(got.completed, done)
    assert np.array_equal(got.missing(), want.missing())
    assert np.array_equal(got.recorded[done], want.recorded[done])
    assert got.statuses() == want.statuses()
    for i in np.flatnonzero(done):
        assert_same(got.read(i), want.read(i))
    for name in want.schema.row_shapes():
        a, b = got.read_array(name), want.read_array(name)
        assert a.tobytes() == b.tobytes(), name
    rows = np.arange(want.n_realizations) % 3 != 1
    for chunk in (1, 2, 5, 100):
        for kw in ({}, {"rows": rows}, {"component": 2}, {"rows": rows, "component": 0}):
            a = list(got.iter_rows("observers/tip", chunk, **kw))
            b = list(want.iter_rows("observers/tip", chunk, **kw))
            assert [x.tobytes() for x in a] == [y.tobytes() for y in b], (chunk, kw)
            assert all(1 <= x.shape[0] <= chunk for x in a)
    nominal, reference = got.read_nominal(), want.read_nominal()
    assert (nominal is None) == (reference is None)
    if reference is not None:
        assert_same(nominal, reference)


def test_hdf5_store_equals_memory_store(tmp_path):
    trajs = [make_trajectory(40 + i) for i in range(7)]
    stopped = make_trajectory(50, status="nonfinite", message="box: NaN").truncated(9)
    schema = StoreSchema.from_trajectory(trajs[0])
    path = tmp_path / "s.h5"
    memory = MemoryStore(schema, 7, nominal=trajs[6])
    with TrajectoryStore.create(path, schema, 7, nominal=trajs[6]) as disk:
        for store in (disk, memory):
            store.write(2, trajs[2])
            store.write_many([(5, trajs[5]), (0, stopped), (3, trajs[3])])
            store.write(2, stopped)  # a rewrite
            with pytest.raises(StoreError, match="record times"):  # nothing of the batch lands
                store.write_many([(1, trajs[1]), (4, _with(trajs[4], time=trajs[4].time * 2))])
            with pytest.raises(StoreError, match="not completed"):
                store.read(1)
            with pytest.raises(StoreError, match="out of range"):
                store.write(7, trajs[0])
            with pytest.raises(StoreError, match="no dataset 'observers/nope'"):
                store.read_array("observers/nope")
        _same_store(disk, memory)
    with TrajectoryStore.open(path) as disk:
        _same_store(disk, memory)


def test_iter_rows_streams_the_completed_rows(tmp_path):
    trajs = [make_trajectory(60 + i) for i in range(5)]
    with TrajectoryStore.create(tmp_path / "s.h5", StoreSchema.from_trajectory(trajs[0]), 5) as st:
        st.write_many([(i, trajs[i]) for i in (0, 1, 3, 4)])
        rows = np.array([True, False, True, True, True])  # 2 is not completed, never yielded
        blocks = list(st.iter_rows("observers/tip", 2, rows=rows, component=1))
        assert [b.shape for b in blocks] == [(1, NT)] * 3  # windows [0, 1], [2, 3], [4]
        whole = np.concatenate(blocks)
        assert np.array_equal(whole, st.read_array("observers/tip")[[0, 3, 4], :, 1])
        assert [b.shape[0] for b in st.iter_rows("params/box/mass", 3)] == [2, 2]


def test_batch_writer_batches_and_keeps_what_finished():
    trajs = [make_trajectory(70 + i) for i in range(5)]
    store = MemoryStore(StoreSchema.from_trajectory(trajs[0]), 5)
    written = []
    with BatchWriter(store, batch_size=2, seconds=1e9, on_write=written.append) as writer:
        for i in range(3):
            writer.add(i, trajs[i])
        assert written == [2] and store.completed.tolist() == [True, True, False, False, False]
    assert written == [2, 1] and store.completed.sum() == 3
    # interrupted: what was pending is written (without on_write) while the store is open
    with pytest.raises(KeyboardInterrupt):
        with BatchWriter(store, batch_size=10, seconds=1e9, on_write=written.append) as writer:
            writer.add(3, trajs[3])
            raise KeyboardInterrupt
    assert written == [2, 1] and store.completed.tolist() == [True, True, True, True, False]
    with pytest.raises(KeyboardInterrupt):
        with BatchWriter(store, batch_size=10, seconds=1e9) as writer:
            writer.add(4, trajs[4])
            store.close()
            raise KeyboardInterrupt
    assert not store.completed[4]
    # a stale batch is written at the next realization whatever its size
    store = MemoryStore(StoreSchema.from_trajectory(trajs[0]), 5)
    with BatchWriter(store, batch_size=10, seconds=0.0) as writer:
        writer.add(0, trajs[0])
        assert store.completed[0]


def test_extra_datasets_and_attrs_read_back(tmp_path):
    path = tmp_path / "r.h5"
    log = np.arange(6, dtype=np.int64).reshape(3, 2)
    write_trajectory(
        path,
        make_trajectory(80),
        extra_attrs={"time_reversed": True},
        extra_datasets={"reverse/islands": log},
    )
    with TrajectoryStore.open(path) as store:
        assert store.attrs["time_reversed"] is True
        assert "reverse/islands" in store and "states/position" in store
        assert "reverse" not in store and "nope" not in store  # a group is not a dataset
        got = store.read_dataset("reverse/islands")
        assert got.dtype == log.dtype and np.array_equal(got, log)
        with pytest.raises(StoreError, match="no dataset 'reverse/nope'"):
            store.read_dataset("reverse/nope")


def _damage_chunk(path, name: str, chunk: int = 0) -> None:
    """Overwrite the middle of one stored chunk of dataset ``name`` with garbage bytes."""
    with h5py.File(path, "r") as f:
        info = f[name].id.get_chunk_info(chunk)
    with open(path, "r+b") as fh:
        fh.seek(info.byte_offset + info.size // 4)
        fh.write(bytes(range(256))[: max(8, info.size // 2)])


def test_a_damaged_chunk_is_one_line_naming_the_dataset(tmp_path):
    """A chunk the filter cannot decompress raises OSError deep in h5py; readers get a
    StoreError naming the file and the dataset instead."""
    path = tmp_path / "run.h5"
    write_trajectory(path, make_trajectory(3, nt=400))
    with h5py.File(path, "r") as f:
        assert f["states/position"].compression is not None  # a filter to fail
    _damage_chunk(path, "states/position")
    with pytest.raises(StoreError, match=r"run\.h5: dataset /states/position cannot be read"):
        read_trajectory(path)
    with TrajectoryStore.open(path) as store, pytest.raises(StoreError, match="damaged"):
        store.read_array("states/position")


# ------------------------------------------------------------- packed realizations (issue 16)
def _sha(path) -> str:
    import hashlib
    from pathlib import Path

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.mark.parametrize("compression", ["gzip", None])
def test_packed_writes_give_the_bytes_of_row_writes(tmp_path, compression):
    """Chunks filtered by the worker (libdeflate) and written as they are give the file that
    rows written by the store give, whatever the packing and batching; they read back
    unchanged."""
    trajs = [make_trajectory(90 + i) for i in range(7)]
    trajs[4] = make_trajectory(94, status="nonfinite", message="NaN at 9").truncated(9)
    schema = StoreSchema.from_trajectory(trajs[0])
    rows = tmp_path / "rows.h5"
    with TrajectoryStore.create(rows, schema, 7, compression=compression) as store:
        store.write_many([(i, trajs[i]) for i in range(7)])
    for split in ([7], [3, 4], [1, 1, 5]):
        path = tmp_path / f"packed{len(split)}.h5"
        with TrajectoryStore.create(path, schema, 7, compression=compression) as store:
            filters = store.chunk_filters()
            assert filters == ChunkFilters(shuffle=True, level=1 if compression else None)
            start = 0
            for k in split:
                items = [(i, trajs[i]) for i in range(start, start + k)]
                store.write_packed([pack(schema, items, "test", filters)])
                start += k
        assert _sha(path) == _sha(rows), split
    with TrajectoryStore.open(path) as store:
        for i in range(7):
            assert_same(store.read(i), trajs[i])


def test_chunk_filters_round_trip_and_foreign_filters_are_decoded(tmp_path):
    traj = make_trajectory(3)
    row = traj.position
    for filters in (ChunkFilters(True, 4), ChunkFilters(False, 1), ChunkFilters(True, None)):
        assert filters.decode(filters.encode(row), row.shape).tobytes() == row.tobytes()
    schema = StoreSchema.from_trajectory(traj)
    trajs = [make_trajectory(30 + i) for i in range(4)]
    memory = MemoryStore(schema, 4)
    with TrajectoryStore.create(tmp_path / "a.h5", schema, 4) as disk:
        for store in (disk, memory):
            # level 4 chunks into a level-1 file: decoded and written with the file's filters
            level4 = pack(schema, [(1, trajs[1]), (2, trajs[2])], "t", ChunkFilters(True, 4))
            store.write_packed([level4])
            store.write_packed([pack(schema, [(0, trajs[0]), (3, trajs[3])], "t")])
        _same_store(disk, memory)


def test_pack_checks_the_schema_and_the_order():
    trajs = [make_trajectory(10 + i) for i in range(3)]
    schema = StoreSchema.from_trajectory(trajs[0])
    with pytest.raises(StoreError, match="record times"):
        pack(schema, [(0, _with(trajs[0], time=trajs[0].time * 2))], "here")
    with pytest.raises(StoreError, match="increasing"):
        pack(schema, [(2, trajs[2]), (1, trajs[1])], "here")


def test_batch_writer_orders_packs_and_holds_only_the_early_ones():
    trajs = [make_trajectory(110 + i) for i in range(9)]
    schema = StoreSchema.from_trajectory(trajs[0])
    store = MemoryStore(schema, 9)
    packs = [pack(schema, [(i, trajs[i]) for i in range(a, a + 3)], "t") for a in (0, 3, 6)]
    written = []
    with BatchWriter(store, batch_size=100, seconds=1e9, on_write=written.append,
                     order=range(9)) as writer:  # fmt: skip
        writer.add_packed(packs[2])
        writer.add_packed(packs[1])
        assert writer.waiting == 6 and not store.completed.any()
        writer.add_packed(packs[0])
        assert writer.waiting == 0
    assert written == [9] and store.completed.all()
    for i in range(9):
        assert_same(store.read(i), trajs[i])


def test_iter_time_windows_streams_every_completed_realization(tmp_path, monkeypatch):
    from workbench.store import backend

    monkeypatch.setattr(backend, "READ_BLOCK", 2)  # several blocks of realizations
    trajs = [make_trajectory(120 + i) for i in range(6)]
    schema = StoreSchema.from_trajectory(trajs[0])
    with TrajectoryStore.create(tmp_path / "w.h5", schema, 6) as store:
        store.write_many([(i, trajs[i]) for i in (0, 2, 3, 5)])
        whole = store.read_array("observers/tip")[[0, 2, 3, 5]]
        row_bytes = 4 * whole.shape[2] * 8  # one record of the 4 completed realizations
        windows = list(store.iter_time_windows("observers/tip", max_bytes=7 * row_bytes))
        assert [w.stop - w.start for w, _ in windows] == [7, 7, 7, 4]
        assert np.concatenate([d for _, d in windows], axis=1).tobytes() == whole.tobytes()
        (w, d), *_ = store.iter_time_windows("states/position", max_bytes=1)
        assert w == slice(0, 1) and d.shape == (4, 1, 2, 3)


# ----------------------------------------------------------------------------- handles
def _store_and_packs(tmp_path, name: str, n: int):
    ref = SceneRef(str(SCENES / "random_box.yaml"), duration=0.3)
    _, nominal, _ = run_module.run_realization(ref, 3, run_module.NOMINAL_INDEX)
    trajs = [run_module.run_realization(ref, 3, i)[1] for i in range(n)]
    store = TrajectoryStore.create(tmp_path / name, StoreSchema.from_trajectory(nominal), n)
    return store, trajs


def test_store_keeps_its_handles_until_close_and_drops_them_on_failure(tmp_path):
    n = 6
    store, trajs = _store_and_packs(tmp_path, "a.h5", n)
    assert store._handles is None
    store.write(0, trajs[0])
    handles = store._handles
    assert handles is not None
    store.write(1, trajs[1])
    assert store._handles is handles  # looked up once
    store.write_many([(i, trajs[i]) for i in range(2, n)])
    store.write(2, trajs[2])  # a realization written again: unmarked, rewritten, marked
    store.close()
    assert store._handles is None and handles.slabs == {} and handles.file is None
    # the same bytes as writes one realization at a time through h5py's own calls: values
    with h5py.File(tmp_path / "a.h5") as f:
        assert f["completed"][()].all()
        assert f["recorded"][()].tolist() == [len(t.time) for t in trajs]
        assert [s.decode() for s in f["status"][()]] == ["ok"] * n
        pos = f["states/position"][()]
        for i, t in enumerate(trajs):
            assert np.array_equal(pos[i, : len(t.time)], t.position)
    # a refused write (no room on the disk) drops them before the file closes
    store, trajs = _store_and_packs(tmp_path, "b.h5", 2)
    store.write(0, trajs[0])
    assert store._handles is not None
    with pytest.raises(StoreWriteError):
        store._fail(1, disk_full=True, reason="", broken=False)
    assert store._handles is None and not store.is_open
    with pytest.raises(StoreWriteError):  # nothing touches the file after a failure
        store.write(1, trajs[1])
