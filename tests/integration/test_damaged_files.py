"""Damaged and foreign files (issue 21, item 6): every reader gives one line naming the file, exit
status 2, never a traceback, and the store refuses data that cannot be right.

Targeted tests cover each damage the issue found (non-UTF-8 ``/status``, damaged chunks, an
ensemble with nothing finished, zero quaternions, ``recorded`` out of range, decreasing ``/time``);
a fuzz (hypothesis, derandomised) then damages copies of a run file and an ensemble file at random
(flipped bytes, truncation, attributes and datasets replaced by h5py with wrong types, shapes and
values) and runs the readers in-process through :func:`workbench.cli.main.main`.

``WORKBENCH_DAMAGE_EXAMPLES`` sets the number of damaged files (default 40, a few seconds); each
is read by six readers, so ``WORKBENCH_DAMAGE_EXAMPLES=100`` makes 600 damaged-file reads.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.workbench.test_store import make_trajectory
from workbench.cli.main import main
from workbench.errors import WorkbenchError
from workbench.store import StoreSchema, TrajectoryStore, read_trajectory, write_trajectory

N_REAL = 5
NT = 30


def _ensemble(path: Path) -> Path:
    """An ensemble of ``N_REAL`` realizations, all completed but the last, with a nominal run."""
    nominal = make_trajectory(100, nt=NT)
    schema = StoreSchema.from_trajectory(nominal)
    with TrajectoryStore.create(path, schema, N_REAL, nominal=nominal, seed_entropy=7) as store:
        store.write_many([(i, make_trajectory(i, nt=NT)) for i in range(N_REAL - 1)])
    return path


def _run(path: Path) -> Path:
    write_trajectory(path, make_trajectory(1, nt=NT), scene_text="bodies: []\n")
    return path


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    d = tmp_path_factory.mktemp("originals")
    return {"run": _run(d / "run.h5"), "ensemble": _ensemble(d / "ensemble.h5")}


def _one_line_error(capsys, path: Path, *args: str) -> str:
    """Run ``workbench ARGS`` in-process; it must fail with exit 2 and one line naming ``path``."""
    rc = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0], err
    return lines[0]


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)
    return dst


# -- the damages of the issue ----------------------------------------------------------------


def _set(path: Path, name: str, index, value) -> None:
    with h5py.File(path, "r+") as f:
        f[name][index] = value


@pytest.mark.parametrize("kind", ["run", "ensemble"])
def test_status_that_is_not_utf8(originals, tmp_path, capsys, kind):
    path = _copy(originals[kind], tmp_path)
    with h5py.File(path, "r+") as f:
        ds = f["status"]
        f["status"][0] = np.array([b"ok\xff\xfe"], dtype=object)[0]  # raw bytes, not UTF-8
        del ds
    line = _one_line_error(capsys, path, "inspect", path)
    assert "/status" in line and "UTF-8" in line
    with pytest.raises(WorkbenchError, match="status"):
        read_trajectory(path, 0)


def _damage_chunk(path: Path, name: str, i: int) -> None:
    """Overwrite the stored (compressed) bytes of chunk ``i`` of dataset ``name``."""
    with h5py.File(path, "r") as f:
        ds = f[name]
        _, chunk = ds.id.read_direct_chunk((i,) + (0,) * (ds.ndim - 1))
    # found by content: the byte offsets of h5py's get_chunk_info (HDF5 2.0) point elsewhere
    data = path.read_bytes()
    offset = data.index(chunk)
    assert data.count(chunk) == 1
    damaged = data[:offset] + bytes(255 - b for b in chunk) + data[offset + len(chunk) :]
    path.write_bytes(damaged)


@pytest.mark.parametrize(
    "args",
    [
        ("stats", "{p}"),
        ("plot", "{p}", "--observer", "tip", "-o", "{d}/x.png"),
        ("plot", "{p}", "--observer", "tip", "--realization", "1", "-o", "{d}/x.png"),
        ("inspect", "{p}"),
    ],
    ids=["stats", "plot-band", "plot-realization", "inspect"],
)
def test_damaged_chunks(originals, tmp_path, capsys, args):
    path = _copy(originals["ensemble"], tmp_path)
    _damage_chunk(path, "observers/tip", 1)
    _damage_chunk(path, "states/position", 1)
    args = [a.format(p=path, d=tmp_path) for a in args]
    if args[0] == "inspect":  # inspect reads no chunk of the records: it must still work
        assert main(args) == 0
        return
    line = _one_line_error(capsys, path, *args)
    assert "damaged" in line and ("/observers/tip" in line or "/states/position" in line)


def test_ensemble_with_no_finished_realization(tmp_path, capsys):
    nominal = make_trajectory(100, nt=NT)
    path = tmp_path / "empty.h5"
    TrajectoryStore.create(path, StoreSchema.from_trajectory(nominal), 3, nominal=nominal).close()
    png = tmp_path / "x.png"
    line = _one_line_error(capsys, path, "plot", path, "--observer", "tip", "-o", png)
    assert "no completed realization" in line
    assert main(["stats", str(path)]) == 0  # says 0 of 3 completed
    assert "0 of 3 realizations completed" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["run", "ensemble"])
def test_zero_quaternions_are_refused(originals, tmp_path, capsys, kind):
    path = _copy(originals[kind], tmp_path)
    i = 0 if kind == "run" else 1  # realization 0 of an ensemble plots the band
    _set(path, "states/orientation", (i, 3), np.zeros((2, 4)))
    with pytest.raises(WorkbenchError, match=rf"states/orientation.*realization {i}, record 3"):
        read_trajectory(path, i)
    line = _one_line_error(
        capsys, path, "plot", path, "--observer", "tip", "--realization", i, "-o", tmp_path / "x"
    )
    assert "quaternion" in line


@pytest.mark.parametrize("value", [10**9, -5])
def test_recorded_out_of_range(originals, tmp_path, capsys, value):
    path = _copy(originals["ensemble"], tmp_path)
    _set(path, "recorded", 1, value)
    line = _one_line_error(capsys, path, "stats", path)
    assert f"/recorded[1] = {value}" in line and f"0..{NT}" in line
    _one_line_error(capsys, path, "inspect", path)


@pytest.mark.parametrize("kind", ["run", "ensemble"])
def test_time_must_increase(originals, tmp_path, capsys, kind):
    path = _copy(originals[kind], tmp_path)
    with h5py.File(path, "r+") as f:
        t = f["time"][()]
        f["time"][5] = t[3]
    line = _one_line_error(capsys, path, "inspect", path)
    assert "/time" in line and "increasing" in line
    with pytest.raises(WorkbenchError, match="/time"):
        read_trajectory(path, 0)


def test_non_finite_time_is_refused(originals, tmp_path, capsys):
    path = _copy(originals["run"], tmp_path)
    _set(path, "time", 0, np.nan)
    assert "/time" in _one_line_error(capsys, path, "inspect", path)


def test_stats_on_wrong_attribute_types(originals, tmp_path, capsys):
    path = _copy(originals["ensemble"], tmp_path)
    with h5py.File(path, "r+") as f:
        f["observers/tip"].attrs["components"] = np.float64(3.5)
        f["observers/tip"].attrs["unit"] = np.arange(3)
    rc = main(["stats", str(path)])
    assert rc in (0, 2), capsys.readouterr().err


# -- the fuzz ---------------------------------------------------------------------------------

#: Damaged files per run; each is read by the six readers of :func:`_read_all`.
DAMAGE_EXAMPLES = int(os.environ.get("WORKBENCH_DAMAGE_EXAMPLES", "40"))

#: Damaged-file reads by outcome (reader, exit status or exception), summed over the fuzz.
TALLY: dict[tuple[str, str], int] = {}

TARGETS = [
    "time",
    "body_names",
    "completed",
    "recorded",
    "status",
    "message",
    "states/position",
    "states/orientation",
    "observers/tip",
    "diagnostics/kinetic_energy",
    "params/box/mass",
    "params/box/inertia",
    "nominal/time",
    "nominal/states/orientation",
    "nominal/completed",
    "observers",
    "params",
    "states",
    "nominal",
]
#: Attributes to overwrite: ``name`` on the root, ``path@name`` on a dataset.
ATTRS = [
    "format_version",
    "kind",
    "scene",
    "scene_json",
    "seed_entropy",
    "n_realizations",
    "time_reversed",
    "observers/tip@components",
    "observers/tip@unit",
    "observers/tip@quantity",
    "observers/tip@body",
    "params/box/mass@units",
    "time@units",
]
VALUES = [
    b"\xff\xfe\xfa",
    np.array([b"\xff\xfe", b"ok"], dtype=object),
    "text",
    np.array(["a", "b"], dtype=object),
    -5,
    10**9,
    1e308,
    np.nan,
    0,
    np.zeros(3),
    np.full((N_REAL, NT), np.nan),
    np.zeros((N_REAL, NT, 2, 4)),
    np.arange(NT, 0, -1, dtype=float),
    np.ones(N_REAL, dtype=bool),
    np.arange(N_REAL) * 10**6,
    np.zeros((2, 2, 2, 2, 2)),
]


def _put(path: Path, name: str, value, mode: str) -> None:
    with h5py.File(path, "r+") as f:
        if mode == "attr":
            owner, _, key = name.rpartition("@")
            if isinstance(value, bytes):
                value = np.void(value)
            f[owner or "/"].attrs[key] = value
        elif name not in f:
            return
        elif mode == "delete":
            del f[name]
        elif mode == "group":  # a dataset where a group belongs, or the other way round
            del f[name]
            f.create_group(name) if not isinstance(value, np.ndarray) else f.create_dataset(
                name, data=value
            )
        elif mode == "replace":
            del f[name]
            if isinstance(value, np.ndarray) and value.dtype == object:
                f.create_dataset(name, data=value, dtype=h5py.string_dtype())
            elif isinstance(value, bytes):
                f.create_dataset(name, data=np.void(value))
            else:
                f.create_dataset(name, data=value)
        elif isinstance(f[name], h5py.Dataset):  # write into it where the shapes allow
            ds = f[name]
            try:
                if ds.ndim:
                    ds[0] = value if ds.dtype.kind != "O" else str(value)
                else:
                    ds[()] = value
            except (TypeError, ValueError, OverflowError, OSError):
                pass


@st.composite
def damage(draw):
    kind = draw(st.sampled_from(["run", "ensemble"]))
    how = draw(st.sampled_from(["flip", "truncate", "attr", "replace", "delete", "write", "group"]))
    if how == "flip":
        flips = draw(
            st.lists(
                st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)),
                min_size=1,
                max_size=16,
            )
        )
        return kind, how, flips
    if how == "truncate":
        return kind, how, draw(st.floats(0.05, 0.999))
    if how == "attr":
        return kind, how, (draw(st.sampled_from(ATTRS)), draw(st.sampled_from(range(len(VALUES)))))
    return kind, how, (draw(st.sampled_from(TARGETS)), draw(st.sampled_from(range(len(VALUES)))))


def _apply(path: Path, how: str, detail) -> None:
    if how == "flip":
        data = bytearray(path.read_bytes())
        for where, xor in detail:
            data[int(where * len(data))] ^= xor
        path.write_bytes(bytes(data))
    elif how == "truncate":
        size = path.stat().st_size
        with open(path, "r+b") as fh:
            fh.truncate(int(detail * size))
    else:
        name, value = detail
        _put(path, name, VALUES[value], how)


def _read_all(path: Path, out: Path, capsys) -> None:
    """Six readers; each ends with exit 0 or 2 (one line naming the file) or a WorkbenchError."""
    for args in (
        ["inspect", path],
        ["inspect", path, "--json"],
        ["stats", path, "--json"],
        ["plot", path, "--observer", "tip", "-o", out],
    ):
        rc = main([str(a) for a in args])
        err = capsys.readouterr().err
        assert rc in (0, 2), err
        if rc == 2:
            lines = err.strip().splitlines()
            assert len(lines) == 1 and str(path) in lines[0], err
        TALLY[(args[0], str(rc))] = TALLY.get((args[0], str(rc)), 0) + 1
    for reader in ("read_trajectory", "open_dataset"):
        try:
            if reader == "read_trajectory":
                read_trajectory(path, 0)
            else:
                from workbench.store import open_dataset

                open_dataset(path).load().close()
            outcome = "ok"
        except WorkbenchError as exc:
            assert str(path) in str(exc), str(exc)
            outcome = "error"
        TALLY[(reader, outcome)] = TALLY.get((reader, outcome), 0) + 1


@pytest.mark.slow  # ~8 s
@settings(
    max_examples=DAMAGE_EXAMPLES,
    derandomize=True,  # the same damaged files every run
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=damage())
def test_fuzz_damaged_files_never_raise(originals, tmp_path, capsys, case):
    kind, how, detail = case
    path = tmp_path / f"damaged_{kind}.h5"
    shutil.copyfile(originals[kind], path)
    _apply(path, how, detail)
    _read_all(path, tmp_path / "plot.png", capsys)


def test_fuzz_tally():
    """Print what the fuzz saw (``pytest -s``): reads per reader and outcome."""
    print(f"\ndamaged-file reads: {sum(TALLY.values())}")
    for key in sorted(TALLY):
        print(f"  {key[0]:<16} {key[1]:<6} {TALLY[key]}")
