"""Tests of :meth:`Store.write_block`, the bulk write of realizations from arrays: values read back
(the HDF5 store against the in-memory reference), datasets not given stay fill values, inputs
refused with one line naming the field, only the block's realizations marked, and a writer killed
with SIGKILL in the middle of a bulk write leaves the earlier blocks readable and none of the
killed block completed."""

from __future__ import annotations

import hashlib
import inspect
import os
import signal
import subprocess
import sys
import textwrap
import time

import h5py
import numpy as np
import pytest

from tests.conftest import REPO
from tests.unit.workbench.test_store import NT, _same_store, assert_same, make_trajectory
from workbench.errors import StoreError
from workbench.store import MemoryStore, StoreSchema, TrajectoryStore, describe

SCHEMA = StoreSchema.from_trajectory(make_trajectory(0))


def _stores(tmp_path, n: int = 8):
    """The file and the in-memory reference, both of ``n`` realizations of :data:`SCHEMA`."""
    return TrajectoryStore.create(tmp_path / "bulk.h5", SCHEMA, n), MemoryStore(SCHEMA, n)


def _rows(trajs) -> tuple[dict[str, np.ndarray], list[int]]:
    """Every dataset of ``trajs`` stacked as one block, and their record counts."""
    per = [SCHEMA.rows(t, "test") for t in trajs]
    names = SCHEMA.row_shapes()
    return {name: np.stack([rows[name] for _, rows in per]) for name in names}, [n for n, _ in per]


def test_a_block_of_every_dataset_reads_back_as_write_many_does(tmp_path):
    trajs = [make_trajectory(100 + i) for i in range(4)]
    trajs[2] = make_trajectory(102, status="nonfinite", message="box: NaN at 9").truncated(9)
    arrays, recorded = _rows(trajs)
    reference = MemoryStore(SCHEMA, 8)
    reference.write_many([(3 + j, t) for j, t in enumerate(trajs)])
    disk, memory = _stores(tmp_path)
    with disk:
        for store in (disk, memory):
            store.write_block(
                3,
                arrays,
                recorded=recorded,
                status=[t.status for t in trajs],
                message=[t.message for t in trajs],
            )
            for j, traj in enumerate(trajs):
                assert_same(store.read(3 + j), traj)
        _same_store(disk, reference)
        _same_store(memory, reference)
    with TrajectoryStore.open(tmp_path / "bulk.h5") as reopened:
        _same_store(reopened, reference)
        assert reopened.messages() == ["", "", "box: NaN at 9", ""]


def test_datasets_not_given_stay_fill_values(tmp_path):
    rng = np.random.default_rng(7)
    tip = rng.normal(size=(5, NT, 3))
    mass = rng.uniform(1.0, 2.0, size=5)
    disk, memory = _stores(tmp_path)
    with disk:
        for store in (disk, memory):
            store.write_block(2, {"observers/tip": tip, "params/box/mass": mass})
            assert np.flatnonzero(store.completed).tolist() == [2, 3, 4, 5, 6]
            assert store.recorded[2:7].tolist() == [NT] * 5
            assert store.statuses() == ["ok"] * 5 and store.messages() == [""] * 5
            assert np.array_equal(store.read_array("observers/tip")[2:7], tip)
            assert np.array_equal(store.read_array("params/box/mass")[2:7], mass)
            for name in SCHEMA.row_shapes():
                if name not in ("observers/tip", "params/box/mass"):
                    assert np.isnan(store.read_array(name)).all(), name
            streamed = np.concatenate(list(store.iter_rows("observers/tip", 3)))
            assert np.array_equal(streamed, tip)
            with pytest.raises(StoreError, match="states/position: realization 2, record 0 is not"):
                store.read(2)  # NaN states: a read of the whole realization refuses them
    with h5py.File(tmp_path / "bulk.h5", "r") as f:  # not given: not a chunk allocated
        assert f["observers/tip"].id.get_num_chunks() == 5
        for name in ("states/position", "observers/height", "diagnostics/kinetic_energy"):
            assert f[name].id.get_num_chunks() == 0, name


def test_a_block_marks_only_its_realizations_and_refuses_completed_ones(tmp_path):
    def block(first: int, m: int) -> dict[str, np.ndarray]:
        values = np.arange(first, first + m, dtype=float)[:, None, None] + np.zeros((m, NT, 1))
        return {"observers/height": values}

    disk, memory = _stores(tmp_path, n=10)
    with disk:
        for store in (disk, memory):
            store.write_block(3, block(3, 2), status="nonfinite", message=["a", "b"])
            assert np.flatnonzero(store.completed).tolist() == [3, 4]
            assert store.statuses() == ["nonfinite"] * 2 and store.messages() == ["a", "b"]
            with pytest.raises(StoreError, match=r"realizations 4 of 4\.\.5 are already completed"):
                store.write_block(4, block(4, 2))
            assert np.flatnonzero(store.completed).tolist() == [3, 4]  # nothing of 5 written
            store.write_block(0, block(0, 3), recorded=NT)
            store.write_block(5, block(5, 5), recorded=np.full(5, NT))  # the last, a short one
            assert store.completed.all()
            height = store.read_array("observers/height")[:, :, 0]
            assert np.array_equal(height, np.repeat(np.arange(10.0)[:, None], NT, axis=1))
            assert store.statuses() == ["ok"] * 3 + ["nonfinite"] * 2 + ["ok"] * 5


def test_statuses_are_read_by_slabs_and_a_damaged_one_is_named(tmp_path):
    """``statuses()`` reads runs of completed elements at once; text that is not UTF-8 is still
    one line naming the element."""
    path = tmp_path / "bulk.h5"
    with TrajectoryStore.create(path, SCHEMA, 6) as store:
        store.write_block(0, {"observers/height": np.zeros((2, NT, 1))}, status=["ok", "stop"])
        store.write_block(3, {"observers/height": np.zeros((3, NT, 1))}, status="late")
        assert store.statuses() == ["ok", "stop", "late", "late", "late"]
    with h5py.File(path, "r+") as f:  # damage: bytes that are not UTF-8
        f["status"][4] = b"\xff\xfe"
    with TrajectoryStore.open(path) as store:
        with pytest.raises(StoreError, match=r"dataset /status\[4\] is not UTF-8 text"):
            store.statuses()


def test_the_same_calls_give_the_same_bytes(tmp_path):
    rng = np.random.default_rng(3)
    tip = rng.normal(size=(6, NT, 3))
    digests = []
    for k in range(2):
        path = tmp_path / f"b{k}.h5"
        with TrajectoryStore.create(path, SCHEMA, 6) as store:
            store.write_block(0, {"observers/tip": tip[:4]})
            store.write_block(4, {"observers/tip": tip[4:]}, status="nonfinite", message="x")
        digests.append(hashlib.sha256(path.read_bytes()).hexdigest())
    assert digests[0] == digests[1]


def _unit_q(m: int) -> np.ndarray:
    q = np.zeros((m, NT, 2, 4))
    q[..., 3] = 1.0
    return q


def _tail(m: int) -> np.ndarray:
    """Observer rows with a value after 4 recorded records of the second realization."""
    values = np.full((m, NT, 1), np.nan)
    values[:, :4] = 1.0
    values[1, 10] = 2.0
    return values


BAD_BLOCKS = [
    # (start, arrays, keywords, what the one line must say)
    (0, {}, {}, r"arrays must map dataset paths to arrays"),
    (0, {"observers/nope": np.zeros((2, NT, 1))}, {},
     r"no per-realization dataset 'observers/nope' in the store; expected one of states/posi"),
    (0, {"completed": np.zeros(2)}, {}, r"no per-realization dataset 'completed'"),
    (0, {"observers/tip": np.zeros((2, NT, 1))}, {},
     rf"observers/tip has shape \(2, {NT}, 1\), expected \(m, {NT}, 3\) with m >= 1 realizations"),
    (0, {"observers/tip": np.zeros((NT, 3))}, {}, rf"observers/tip has shape \({NT}, 3\)"),
    (0, {"observers/tip": np.zeros((0, NT, 3))}, {}, r"with m >= 1 realizations"),
    (0, {"diagnostics/kinetic_energy": np.zeros((2, NT + 1))}, {},
     rf"diagnostics/kinetic_energy has shape \(2, {NT + 1}\), expected \(m, {NT},\)"),
    (0, {"params/box/inertia": np.zeros((2, 3))}, {},
     r"params/box/inertia has shape \(2, 3\), expected \(m, 3, 3\)"),
    (0, {"observers/height": np.zeros((2, NT, 1)), "observers/tip": np.zeros((3, NT, 3))}, {},
     r"observers/tip has 3 realizations, observers/height 2; expected the same block"),
    (0, {"observers/height": np.zeros((2, NT, 1), dtype=complex)}, {},
     r"observers/height holds complex128, expected real numbers \(float or int\)"),
    (0, {"observers/height": np.full((2, NT, 1), "1.0")}, {},
     r"observers/height holds <U3, expected real numbers"),
    (0, {"observers/height": np.zeros((2, NT, 1), dtype=bool)}, {},
     r"observers/height holds bool, expected real numbers"),
    (0, {"observers/height": [[[1.0]] * NT, [[1.0]]]}, {}, r"observers/height is not an array"),
    (7, {"observers/height": np.zeros((2, NT, 1))}, {},
     r"realizations 7\.\.8 out of range, expected within 0\.\.7 \(the store holds 8\)"),
    (-1, {"observers/height": np.zeros((2, NT, 1))}, {}, r"realizations -1\.\.0 out of range"),
    (1.0, {"observers/height": np.zeros((2, NT, 1))}, {}, r"start must be an integer, got 1\.0"),
    (0, {"observers/height": np.zeros((2, NT, 1))}, {"recorded": [3, NT + 1]},
     rf"recorded\[1\] = {NT + 1} \(realization 1\), expected 0\.\.{NT} \(the records of /time\)"),
    (0, {"observers/height": np.zeros((2, NT, 1))}, {"recorded": -1}, r"recorded\[0\] = -1"),
    (0, {"observers/height": np.zeros((2, NT, 1))}, {"recorded": 3.0},
     rf"recorded holds float64, expected integers 0\.\.{NT}"),
    (0, {"observers/height": np.zeros((2, NT, 1))}, {"recorded": [1, 2, 3]},
     r"recorded has shape \(3,\), expected \(\) or \(2,\)"),
    (0, {"observers/height": np.zeros((2, NT, 1))}, {"status": ""},
     r"status must be a non-empty str \('ok' or why the run stopped\), got ''"),
    (0, {"observers/height": np.zeros((2, NT, 1))}, {"status": ["ok"]},
     r"status has 1 entries, expected 1 or 2"),
    (0, {"observers/height": np.zeros((2, NT, 1))}, {"message": ["", 3]},
     r"message must be a str, got 3"),
    (0, {"observers/height": _tail(2)}, {"recorded": 4},
     r"observers/height: realization 1, record 10 holds a value after its 4 recorded records; "
     r"expected NaN there \(the fill value\)"),
    (2, {"states/position": np.full((2, NT, 2, 3), np.inf)}, {},
     r"states/position: realization 2, record 0 is not finite; expected finite states"),
    (0, {"states/orientation": _unit_q(2) * 2}, {},
     r"states/orientation: realization 0, record 0, body 'ball' has norm 2; expected a unit "
     r"quaternion \(within 0\.001\)"),
]  # fmt: skip


@pytest.mark.parametrize("start, arrays, keywords, match", BAD_BLOCKS)
def test_bad_blocks_are_refused_with_one_line_and_nothing_written(
    tmp_path, start, arrays, keywords, match
):
    disk, memory = _stores(tmp_path)
    with disk:
        for store in (disk, memory):
            with pytest.raises(StoreError, match=match) as info:
                store.write_block(start, arrays, **keywords)
            assert "\n" not in str(info.value)
            assert not store.completed.any()
            assert store.is_open
    with h5py.File(tmp_path / "bulk.h5", "r") as f:
        assert all(
            f[name].id.get_num_chunks() == 0 for name in ("observers/height", "states/position")
        )


def test_a_state_block_within_its_records_is_accepted(tmp_path):
    """Non-finite states and bad quaternions after ``recorded`` are the NaN fill, not refused."""
    q = _unit_q(2)
    q[:, 5:] = np.nan
    with TrajectoryStore.create(tmp_path / "s.h5", SCHEMA, 2) as store:
        store.write_block(0, {"states/orientation": q}, recorded=5)
        assert np.array_equal(store.read_array("states/orientation")[:, :5], q[:, :5])


def test_a_read_only_store_refuses_a_block(tmp_path):
    TrajectoryStore.create(tmp_path / "s.h5", SCHEMA, 2).close()
    with TrajectoryStore.open(tmp_path / "s.h5") as store:
        with pytest.raises(StoreError, match="opened read-only"):
            store.write_block(0, {"observers/height": np.zeros((2, NT, 1))})


def test_a_block_the_disk_cannot_hold_is_refused_and_the_blocks_before_kept(tmp_path, monkeypatch):
    from workbench.store import StoreWriteError
    from workbench.store import hdf5 as hdf5_module

    height = np.arange(8.0)[:, None, None] + np.zeros((8, NT, 1))
    with TrajectoryStore.create(tmp_path / "bulk.h5", SCHEMA, 8) as store:
        store.write_block(0, {"observers/height": height[:4]})
        # the filesystem lacks the block's bytes plus WRITE_HEADROOM: refused before HDF5 runs
        monkeypatch.setattr(hdf5_module, "free_bytes", lambda directory: 1024)
        with pytest.raises(StoreWriteError, match="disk full .* 4 of 8 realizations kept"):
            store.write_block(4, {"observers/height": height[4:]})
        assert not store.is_open
    with TrajectoryStore.open(tmp_path / "bulk.h5") as store:
        assert np.flatnonzero(store.completed).tolist() == [0, 1, 2, 3]
        assert np.array_equal(store.read_array("observers/height")[:4], height[:4])


# ----------------------------------------------------------------- SIGKILL during a bulk write
N_REAL, BLOCK, N_TIMES = 4_000, 400, 50


def kill_schema() -> StoreSchema:
    return StoreSchema(
        time=np.arange(N_TIMES) * 0.01,
        body_names=("b",),
        observer_info={"y": {"quantity": "position", "unit": "m", "components": ["z"]}},
        param_shapes={"b/mass": ()},
    )


def block_arrays(start: int, stop: int) -> dict[str, np.ndarray]:
    """Realization i, record t: i + t / 1000 (observer "y"); the parameter "b/mass": i."""
    i = np.arange(start, stop, dtype=float)
    y = i[:, None] + np.arange(N_TIMES)[None, :] / 1000.0
    return {"observers/y": y[:, :, None], "params/b/mass": i}


#: The writer: creates the store, then writes it block by block, "done <start>" after each.
WRITER = (
    "import sys\nimport numpy as np\nfrom workbench.store import StoreSchema, TrajectoryStore\n"
    f"N_TIMES = {N_TIMES}\n"
    + inspect.getsource(kill_schema)
    + inspect.getsource(block_arrays)
    + textwrap.dedent(
        f"""
        print("ready", flush=True)
        sys.stdin.readline()  # "go": imports are done
        with TrajectoryStore.create(sys.argv[1], kill_schema(), {N_REAL}) as store:
            for start in range(0, {N_REAL}, {BLOCK}):
                store.write_block(start, block_arrays(start, start + {BLOCK}))
                print("done", start, flush=True)
        """
    )
)


def _writer(path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        pytest.fail(f"writer did not start: {line!r} {proc.communicate()[1]}")
    return proc


def _check(path) -> int:
    """The file opens; its completed realizations are a prefix of whole blocks, each exactly
    what was written; return how many."""
    with TrajectoryStore.open(path) as store:
        done = store.completed
        k = int(done.sum())
        assert done[:k].all() and not done[k:].any(), np.flatnonzero(done)
        assert k % BLOCK == 0, k  # never part of a block
        want = block_arrays(0, k) if k else None
        if k:
            got_y = store.read_array("observers/y", range(k))
            assert np.array_equal(got_y, want["observers/y"])
            assert np.array_equal(store.read_array("params/b/mass")[:k], want["params/b/mass"])
            assert store.recorded[:k].tolist() == [N_TIMES] * k
            assert store.statuses() == ["ok"] * k
        assert np.isnan(store.read_array("observers/y")[k:]).all()
    assert describe(path)["n_completed"] == k
    return k


@pytest.mark.slow  # ~3 s
def test_sigkill_during_a_bulk_write_keeps_the_blocks_before(tmp_path):
    # kill j comes delays[j] s after block j returned: inside the writing of the next blocks
    delays = (0.0, 0.02, 0.05)
    outcomes = []
    procs = [_writer(tmp_path / f"kill{j}.h5") for j in range(len(delays))]  # import together
    try:
        for j, (proc, delay) in enumerate(zip(procs, delays, strict=True)):
            path = tmp_path / f"kill{j}.h5"
            proc.stdin.write("go\n")
            proc.stdin.flush()
            for b in range(j + 1):
                assert proc.stdout.readline().split() == ["done", str(b * BLOCK)]
            time.sleep(delay)
            os.kill(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate(timeout=30)
            reported = j + 1 + out.count("\n")  # "done" lines: blocks the writer returned
            k = _check(path)
            # every block it reported is completed; at most the one being marked beyond those
            assert reported * BLOCK <= k <= (reported + 1) * BLOCK, (reported, k)
            outcomes.append(k)
            if k < N_REAL:  # resume from the first block not completed: the killed one again
                with TrajectoryStore.open(path, "r+") as store:
                    for start in range(k, N_REAL, BLOCK):
                        store.write_block(start, block_arrays(start, start + BLOCK))
                assert _check(path) == N_REAL
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    print("completed realizations at each kill:", outcomes)
    assert any(k < N_REAL for k in outcomes), outcomes  # the kills landed inside the writing


def test_a_blocks_chunks_are_the_store_deflated_bytes_that_write_many_stores(tmp_path):
    """Per-record chunks of a block are the store's own deflate (ChunkFilters.encode, what
    workers ship and write_many stores), not HDF5's zlib: the same rows give the same chunk bytes
    however they are written, and plain h5py reads them."""
    trajs = [make_trajectory(140 + i) for i in range(3)]
    arrays, recorded = _rows(trajs)
    with TrajectoryStore.create(tmp_path / "block.h5", SCHEMA, 3) as store:
        filters = store.chunk_filters()
        store.write_block(0, arrays, recorded=recorded)
    with TrajectoryStore.create(tmp_path / "many.h5", SCHEMA, 3) as store:
        store.write_many(list(enumerate(trajs)))
    assert filters is not None and filters.level is not None
    with h5py.File(tmp_path / "block.h5") as a, h5py.File(tmp_path / "many.h5") as b:
        for name, shape in SCHEMA.row_shapes().items():
            if name.startswith("params/"):
                continue
            tail = (0,) * len(shape)
            for i in range(3):
                _, chunk = a[name].id.read_direct_chunk((i, *tail))
                assert chunk == b[name].id.read_direct_chunk((i, *tail))[1], (name, i)
                assert chunk == filters.encode(arrays[name][i]), (name, i)
            # HDF5's own filter decodes the store's deflate
            np.testing.assert_array_equal(a[name][()], arrays[name])
