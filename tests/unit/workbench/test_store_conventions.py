"""Self-describing, byte-reproducible store files (issue 19): the attributes on every dataset of a
forward run, an ensemble and reverse runs; UTF-8 text; identical inputs give identical bytes;
format-1 files still read; the xarray view equals ``read_trajectory``."""

from __future__ import annotations

import hashlib
import re
import sys

import h5py
import numpy as np
import pytest

from tests.conftest import REPO, run_workbench
from tests.unit.workbench.test_store import BODIES, assert_same, make_trajectory
from workbench.cli.main import main
from workbench.ensemble.run import SceneRef, run_ensemble
from workbench.errors import StoreError
from workbench.sim.state import Trajectory
from workbench.store import (
    FORMAT_VERSION,
    BatchWriter,
    MemoryStore,
    StoreSchema,
    TrajectoryStore,
    open_dataset,
    read_trajectory,
    store_to_dataset,
    write_trajectory,
)
from workbench.store.conventions import CONVENTIONS, REQUIRED_ATTRS

xr = pytest.importorskip("xarray")

#: Datasets that hold a vector, tensor or orientation, and so must name their frame.
GEOMETRIC = re.compile(r"(.*/)?(states/.*|params/[^/]+/(com|inertia|G))$")
#: Units of the datasets of the layout, by path without the group (/nominal) prefix.
UNITS = {
    "time": "s",
    "states/position": "m",
    "states/orientation": "1",
    "states/linear_velocity": "m/s",
    "states/angular_velocity": "rad/s",
    "completed": "",
    "recorded": "1",
    "status": "",
    "message": "",
    "body_names": "",
    "diagnostics/kinetic_energy": "J",
}


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A forward run (CLI), a 3-realization ensemble (workers=1, seed), a reverse run and a
    sampled reverse run, each written twice where bytes are compared."""
    d = tmp_path_factory.mktemp("conventions")
    out = {}
    for k in (1, 2):
        out[f"run{k}"] = d / f"run{k}.h5"
        assert main(["run", "box_stack", "--duration", "0.2", "-q", "-o", str(out[f"run{k}"])]) == 0
        out[f"ensemble{k}"] = d / f"ensemble{k}.h5"
        ref = SceneRef(str(REPO / "scenes" / "random_box.yaml"), duration=0.3)
        run_ensemble(ref, 3, out[f"ensemble{k}"], entropy=5, workers=1)
    out["reverse"] = d / "reverse.h5"
    rc = main(["reverse", "reverse_landing", "--duration", "0.05", "-q", "-o", str(out["reverse"])])
    assert rc == 0
    out["samples"] = d / "samples.h5"
    table = str(REPO / "data" / "markov_block.json")
    rc = main(["reverse", "markov_block", "--markov", table, "--duration", "0.3", "--seed", "7",
               "--samples", "3", "--keep", "2", "-q", "-o", str(out["samples"])])  # fmt: skip
    assert rc == 0
    return out


def _objects(f: h5py.File) -> dict[str, h5py.HLObject]:
    """Every group and dataset below the root, by path."""
    found = {}
    f.visititems(found.__setitem__)
    return found


def _datasets(f: h5py.File) -> dict[str, h5py.Dataset]:
    return {k: v for k, v in _objects(f).items() if isinstance(v, h5py.Dataset)}


@pytest.mark.parametrize("which", ["run1", "ensemble1", "reverse", "samples"])
def test_every_dataset_describes_itself(files, which):
    with h5py.File(files[which], "r") as f:
        assert f.attrs["format_version"] == FORMAT_VERSION == 2
        assert f.attrs["conventions"] == CONVENTIONS
        assert "created" not in f.attrs  # only with timestamp=True
        datasets = _datasets(f)
        assert len(datasets) >= 12
        for path, ds in datasets.items():
            attrs = ds.attrs
            for key in REQUIRED_ATTRS:
                assert key in attrs, (path, key)
            assert isinstance(attrs["units"], str), path
            assert attrs["description"] and "not registered" not in attrs["description"], path
            dims = [str(d) for d in attrs["dims"]]
            assert len(dims) == ds.ndim, (path, dims)
            bare = path.removeprefix("nominal/")
            if bare in UNITS:
                assert attrs["units"] == UNITS[bare], path
            if GEOMETRIC.match(path):
                assert attrs["frame"], path
            if bare.startswith(("states/", "diagnostics/", "observers/")):
                assert dims[:2] == ["realization", "time"], path
            if bare.startswith("observers/"):
                assert attrs["units"] == attrs["unit"] and attrs["units"], path  # format 1 kept
            if bare.startswith("params/parameters/"):
                assert attrs["units"] == "" and "scene parameter" in attrs["description"]
            elif bare.startswith("params/"):
                assert attrs["units"] in ("kg", "m", "kg m^2", "1"), path
            if ds.dtype.names:  # a table: one unit and description per field
                assert (
                    len(attrs["field_units"])
                    == len(attrs["field_descriptions"])
                    == len(ds.dtype.names)
                )
                for k, name in enumerate(ds.dtype.names):
                    member = ds.id.get_type().get_member_type(k)
                    if isinstance(member, h5py.h5t.TypeStringID):
                        assert member.get_cset() == h5py.h5t.CSET_UTF8, (path, name)
            elif ds.dtype.kind in "OS":
                assert h5py.check_string_dtype(ds.dtype).encoding == "utf-8", path
        assert datasets["states/orientation"].attrs["quaternion_order"] == "x, y, z, w"
        assert list(datasets["states/orientation"].attrs["components"]) == ["x", "y", "z", "w"]
        if which == "ensemble1":
            assert "nominal/states/position" in datasets
            assert {"params/box/mass", "params/box/com", "params/box/inertia"} <= set(datasets)
            assert any(p.startswith("params/parameters/") for p in datasets)
        if which == "reverse":
            assert "reverse/islands" in datasets and "diagnostics/lcp_pivots" in datasets
        if which == "samples":
            assert {"sampling/outcomes", "reverse/islands_0", "reverse/islands_1"} <= set(datasets)


def test_no_object_header_times(files):
    """HDF5 stamps object headers with their modification time unless told not to; every
    dataset and group must have none (mtime 0), else two writes a second apart differ."""
    for which in ("run1", "ensemble1", "reverse"):
        with h5py.File(files[which], "r") as f:
            objects = {"/": f, **_objects(f)}
            for name, obj in objects.items():
                assert h5py.h5o.get_info(obj.id).mtime == 0, (which, name)


def test_same_inputs_give_the_same_bytes(files, tmp_path):
    assert _sha(files["run1"]) == _sha(files["run2"])
    assert _sha(files["ensemble1"]) == _sha(files["ensemble2"])
    # the library: a single run and a 3-realization ensemble with its nominal run
    trajs = [make_trajectory(i) for i in range(3)]
    paths = []
    for k in range(2):
        write_trajectory(tmp_path / f"r{k}.h5", trajs[0], scene_text="é", seed_entropy=3)
        path = tmp_path / f"e{k}.h5"
        with TrajectoryStore.create(
            path, StoreSchema.from_trajectory(trajs[0]), 3, nominal=trajs[0], seed_entropy=9
        ) as store:
            # the batches (and the order inside one) do not change the bytes
            store.write_many([(1, trajs[1]), (0, trajs[0])] if k else [(0, trajs[0])])
            store.write_many([(2, trajs[2])] if k else [(1, trajs[1]), (2, trajs[2])])
        paths.append(path)
    assert (tmp_path / "r0.h5").read_bytes() == (tmp_path / "r1.h5").read_bytes()
    assert paths[0].read_bytes() == paths[1].read_bytes()
    write_trajectory(tmp_path / "t.h5", trajs[0], timestamp=True)
    with TrajectoryStore.open(tmp_path / "t.h5") as store:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", store.attrs["created"])


def test_ensemble_bytes_do_not_depend_on_the_number_of_workers(files, tmp_path):
    """Two worker processes finish realizations in any order; run_ensemble writes them in index
    order, so the file is the serial one, byte for byte."""
    ref = SceneRef(str(REPO / "scenes" / "random_box.yaml"), duration=0.3)
    run_ensemble(ref, 3, tmp_path / "two.h5", entropy=5, workers=2)
    assert _sha(tmp_path / "two.h5") == _sha(files["ensemble1"])


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "falling_object", "--duration", "0.2"],
        ["ensemble", "random_box", "-n", "2", "--duration", "0.2", "--seed", "1"],
        ["reverse", "reverse_landing", "--duration", "0.02"],
    ],
    ids=lambda argv: argv[0],
)
def test_cli_timestamp_flag_records_the_creation_time(tmp_path, argv):
    for name, flag in (("plain.h5", []), ("stamped.h5", ["--timestamp"])):
        assert main([*argv, "-q", "-o", str(tmp_path / name), *flag]) == 0
    with TrajectoryStore.open(tmp_path / "plain.h5") as store:
        assert "created" not in store.attrs
    with TrajectoryStore.open(tmp_path / "stamped.h5") as store:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", store.attrs["created"])


def test_cli_run_twice_gives_the_same_bytes(tmp_path):
    """Two processes (hash seeds, temp names and pids differ) write the same bytes."""
    for name in ("a.h5", "b.h5"):
        r = run_workbench("run", "falling_object", "--duration", "0.5", "-q", "-o", tmp_path / name)
        assert r.returncode == 0, r.stderr
    assert _sha(tmp_path / "a.h5") == _sha(tmp_path / "b.h5")


def test_batch_writer_order_makes_bytes_independent_of_arrival(tmp_path):
    trajs = [make_trajectory(80 + i) for i in range(6)]
    schema = StoreSchema.from_trajectory(trajs[0])
    hashes = []
    for arrival in ([0, 1, 2, 3, 4, 5], [3, 1, 0, 5, 2, 4], [5, 4, 3, 2, 1, 0]):
        path = tmp_path / f"{arrival[0]}.h5"
        written = []
        with TrajectoryStore.create(path, schema, 6) as store:
            with BatchWriter(store, batch_size=2, seconds=1e9, on_write=written.append,
                             order=range(6)) as writer:  # fmt: skip
                for i in arrival:
                    writer.add(i, trajs[i])
            assert store.completed.all() and sum(written) == 6
        hashes.append(_sha(path))
    assert len(set(hashes)) == 1
    # without an order, arrival order shows in the bytes (which is what `order` is for)
    path = tmp_path / "unordered.h5"
    with TrajectoryStore.create(path, schema, 6) as store:
        with BatchWriter(store, batch_size=1, seconds=1e9) as writer:
            for i in [5, 4, 3, 2, 1, 0]:
                writer.add(i, trajs[i])
    assert _sha(path) != hashes[0]


def test_non_ascii_text_round_trips(tmp_path):
    base = make_trajectory(3, status="nonfinite", message="Kugel ü: NaN bei t = 0,1 s — 球")
    names = ("Kugel ü", "球")
    traj = Trajectory(
        **{**{k: getattr(base, k) for k in base.__dataclass_fields__}, "body_names": names},
    )
    traj = Trajectory(
        **{
            **{k: getattr(traj, k) for k in traj.__dataclass_fields__},
            "params": {f"{names[0]}/mass": np.float64(1.5), "parameters/µ": np.float64(0.3)},
            "observers": {"höhe": traj.observers["height"]},
            "observer_info": {
                "höhe": {"quantity": "com_position", "unit": "m", "components": ["ζ"], "body": "球"}
            },
        }
    )
    path = tmp_path / "ü.h5"
    log = np.array([(b"gel\xc3\xb6st",)], dtype=[("status", "S10")])
    write_trajectory(path, traj, scene_text="# Szene ü\n", extra_datasets={"reverse/islands": log})
    assert_same(read_trajectory(path), traj)
    with TrajectoryStore.open(path) as store:
        assert store.attrs["scene"] == "# Szene ü\n"
        assert store.read_dataset("reverse/islands")["status"][0].decode() == "gelöst"
    with h5py.File(path, "r") as f:
        for name in ("body_names", "status", "message"):
            assert h5py.check_string_dtype(f[name].dtype).encoding == "utf-8", name
        assert f["body_names"].asstr()[()].tolist() == list(names)
        assert f["message"].asstr()[0] == traj.message
    ds = open_dataset(path)
    assert list(ds.body.values) == list(names) and ds.message.values[0] == traj.message


def _downgrade_to_format_1(path) -> None:
    """Make ``path`` look like a file of format 1 written by another tool: no conventions, no
    units/description/dims, a created stamp, and text stored as bytes."""
    with h5py.File(path, "r+") as f:
        f.attrs["format_version"] = 1
        del f.attrs["conventions"]
        f.attrs["created"] = "2024-01-01T00:00:00+00:00"
        for ds in _datasets(f).values():
            for key in ("units", "description", "dims", "frame", "components", "quaternion_order"):
                if key in ds.attrs and not (key == "components" and "observers" in ds.name):
                    del ds.attrs[key]
            if "observers" in ds.name:
                for key in ("quantity", "unit", "body"):
                    ds.attrs[key] = np.bytes_(ds.attrs[key].encode())
                ds.attrs["components"] = np.array([c.encode() for c in ds.attrs["components"]])
        names = [n.encode() for n in f["body_names"].asstr()[()]]
        del f["body_names"]
        f["body_names"] = np.array(names)  # fixed-length bytes
        for name in ("status", "message"):
            values = [v.encode() for v in f[name].asstr()[()]]
            del f[name]
            f.create_dataset(name, data=values, dtype=h5py.string_dtype("ascii"), chunks=(1,))


def test_format_1_files_with_bytes_still_read(tmp_path):
    trajs = [make_trajectory(30), make_trajectory(31, status="nonfinite", message="box: NaN")]
    path = tmp_path / "old.h5"
    with TrajectoryStore.create(path, StoreSchema.from_trajectory(trajs[0]), 2) as store:
        store.write_many(enumerate(trajs))
    _downgrade_to_format_1(path)
    with TrajectoryStore.open(path) as store:
        assert store.attrs["format_version"] == 1
        for i, traj in enumerate(trajs):
            assert_same(store.read(i), traj)
        assert store.statuses() == ["ok", "nonfinite"]
        # the conventions fill in what a format-1 file lacks
        assert store.dataset_attrs("states/position")["units"] == "m"
    ds = open_dataset(path)
    assert ds.position.attrs["units"] == "m" and list(ds.body.values) == list(BODIES)
    assert ds.status.values.tolist() == ["ok", "nonfinite"]


def _check_view(ds, store_path) -> None:
    """The view of ``store_path`` holds exactly what ``read_trajectory`` reads."""
    n = ds.sizes["realization"]
    for i in range(n):
        if not ds.completed.values[i]:
            assert np.all(np.isnan(ds.position.values[i])) and ds.status.values[i] == ""
            continue
        traj = read_trajectory(store_path, int(ds.realization.values[i]))
        k = traj.n_times
        assert int(ds.recorded.values[i]) == k
        assert np.array_equal(ds.time.values[:k], traj.time)
        assert list(ds.body.values) == list(traj.body_names)
        for name in ("position", "orientation", "linear_velocity", "angular_velocity"):
            got = ds[name].isel(realization=i).values
            assert np.array_equal(got[:k], getattr(traj, name)), name
            assert np.all(np.isnan(got[k:]))
        for name, values in traj.observers.items():
            assert np.array_equal(ds[f"observer_{name}"].values[i, :k], values), name
        for name, values in traj.diagnostics.items():
            assert np.array_equal(ds[f"diagnostic_{name}"].values[i, :k], values), name
        for key, value in traj.params.items():
            assert np.array_equal(ds[f"param_{key.replace('/', '_')}"].values[i], value), key
        assert ds.status.values[i] == traj.status and ds.message.values[i] == traj.message


def test_xarray_view_round_trips_the_store(tmp_path, files):
    trajs = [make_trajectory(90 + i) for i in range(3)]
    stopped = make_trajectory(93, status="nonfinite", message="box: NaN").truncated(7)
    schema = StoreSchema.from_trajectory(trajs[0])
    path = tmp_path / "ens.h5"
    with TrajectoryStore.create(path, schema, 5, nominal=trajs[2], seed_entropy=4) as store:
        store.write_many([(0, trajs[0]), (1, stopped), (3, trajs[1])])  # 2 and 4 missing
    ds = open_dataset(path)
    sizes = {"realization": 5, "time": 25, "body": 2, "component": 3, "quaternion": 4}
    assert dict(ds.sizes) == {**sizes, "height_component": 1, "row": 3, "column": 3}
    assert ds.position.dims == ("realization", "time", "body", "component")
    assert ds.orientation.dims[-1] == "quaternion" and list(ds.quaternion.values) == list("xyzw")
    assert ds.observer_tip.dims[-1] == "component"
    assert ds.param_box_inertia.dims[1:] == ("row", "column")
    assert ds.position.attrs["units"] == "m" and ds.position.attrs["frame"] == "world"
    assert ds.time.attrs["units"] == "s" and ds.attrs["format_version"] == 2
    assert ds.attrs["seed_entropy"] == "4" and ds.position.attrs["hdf5_path"] == "/states/position"
    z = ds.position.sel(body="box", component="z").isel(realization=0)
    assert np.array_equal(z.values, trajs[0].position[:, 1, 2])
    _check_view(ds, path)
    nominal = open_dataset(path, "/nominal")
    assert nominal.sizes["realization"] == 1 and nominal.attrs["group"] == "/nominal"
    assert np.array_equal(nominal.position.values[0], trajs[2].position)
    part = open_dataset(path, realizations=[1, 3])
    assert part.realization.values.tolist() == [1, 3]
    xr.testing.assert_identical(part, ds.sel(realization=[1, 3]))
    # the in-memory reference gives the same values
    memory = MemoryStore(schema, 5, nominal=trajs[2])
    memory.write_many([(0, trajs[0]), (1, stopped), (3, trajs[1])])
    xr.testing.assert_equal(store_to_dataset(memory), ds)
    with pytest.raises(StoreError, match="strictly increasing"):
        open_dataset(path, realizations=[3, 1])
    with pytest.raises(StoreError, match="group"):
        open_dataset(path, "/states")
    with pytest.raises(StoreError, match="no /nominal"):
        open_dataset(files["run1"], "/nominal")
    # the view of real runs: a forward run, an ensemble and a reverse run
    for which in ("run1", "ensemble1", "reverse"):
        _check_view(open_dataset(files[which]), files[which])


def test_xarray_missing_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    path = tmp_path / "r.h5"
    write_trajectory(path, make_trajectory(1))
    monkeypatch.setitem(sys.modules, "xarray", None)  # import xarray now raises ImportError
    with pytest.raises(StoreError, match=re.escape("pip install 'rigid-workbench[xarray]'")) as err:
        open_dataset(path)
    assert "\n" not in str(err.value)


def test_extra_datasets_must_describe_themselves(tmp_path):
    traj = make_trajectory(1)
    with pytest.raises(StoreError, match="'fit/residuals'.*units and description"):
        write_trajectory(tmp_path / "x.h5", traj, extra_datasets={"fit/residuals": np.zeros(4)})
    assert not (tmp_path / "x.h5").exists()
    with pytest.raises(StoreError, match="names no extra dataset: nope"):
        write_trajectory(tmp_path / "x.h5", traj, extra_dataset_attrs={"nope": {}})
    write_trajectory(
        tmp_path / "x.h5",
        traj,
        extra_datasets={"fit/residuals": np.zeros(4), "fit/labels": np.array(["a", "é"])},
        extra_dataset_attrs={
            "fit/residuals": {"units": "m", "description": "residuals", "dims": ["sample"]},
            "fit/labels": {"units": "", "description": "labels"},
        },
    )
    with TrajectoryStore.open(tmp_path / "x.h5") as store:
        assert store.dataset_attrs("fit/residuals") == {
            "units": "m",
            "description": "residuals",
            "dims": ["sample"],
        }
        assert store.dataset_attrs("fit/labels")["dims"] == ["fit_labels_axis0"]
        assert [s.decode() for s in store.read_dataset("fit/labels")] == ["a", "é"]


def test_docs_hdf5_snippets_run(tmp_path, monkeypatch):
    """docs/hdf5.md: its shell command and Python snippets run as written."""
    doc = (REPO / "docs" / "hdf5.md").read_text(encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    (command,) = re.findall(r"```bash\n(.*?)```", doc, flags=re.S)
    argv = command.split()
    assert argv[0] == "workbench"
    assert main(argv[1:]) == 0
    blocks = re.findall(r"```python\n(.*?)```", doc, flags=re.S)
    assert len(blocks) >= 2
    for k, code in enumerate(blocks):
        exec(compile(code, f"docs/hdf5.md, block {k}", "exec"), {})
