"""``/design`` and ``/sensitivity/<output>`` in an ensemble file (workbench/store/sensitivity.py):
round trip, replacement, and a writer killed between staging and linking leaves the previous
results visible and nothing half-written."""

from __future__ import annotations

import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest

from tests.conftest import SCENES, cli_env
from workbench.ensemble.run import SceneRef
from workbench.errors import StoreError
from workbench.store.sensitivity import read_design, read_sensitivity, write_sensitivity


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    from workbench.analysis.sensitivity import run_sensitivity

    out = tmp_path_factory.mktemp("gsa") / "sb.h5"
    ref = SceneRef(str(SCENES / "sliding_block_random.yaml"), duration=0.7)
    run_sensitivity(ref, out, n=2, entropy=4)
    return out


def test_round_trip_and_replacement(finished, tmp_path):
    path = tmp_path / "f.h5"
    shutil.copy(finished, path)
    x, attrs = read_design(path)
    assert x.shape == (8, 2) and attrs["method"] == "sobol" and attrs["inputs"] == ["mu", "v0"]
    ((data, a),) = read_sensitivity(path).values()
    assert set(data) == {"S1", "ST", "S1_conf", "ST_conf"} and a["inputs"] == ["mu", "v0"]
    new = {"S1": np.array([0.5, 0.25]), "ST": np.array([0.75, 0.5])}
    write_sensitivity(path, None, None, {"stop": new}, {"stop": {"inputs": ["mu", "v0"]}})
    ((data, _),) = read_sensitivity(path).values()
    assert set(data) == {"S1", "ST"} and np.array_equal(data["S1"], new["S1"])
    with h5py.File(path) as f:
        assert not [k for k in f if k.startswith(".tmp_")]
        assert f["sensitivity/stop/S1"].attrs["dims"].tolist() == ["input"]


_KILL_AT_MOVE = """
import os, signal, sys
import h5py, numpy as np
h5py.Group.move = lambda self, a, b: os.kill(os.getpid(), signal.SIGKILL)
from workbench.store.sensitivity import write_sensitivity
write_sensitivity(sys.argv[1], np.zeros((8, 2)), {"method": "morris"},
                  {"stop": {"S1": np.zeros(2)}}, {"stop": {}})
"""


def test_a_writer_killed_before_linking_leaves_the_old_results(finished, tmp_path):
    path = tmp_path / "f.h5"
    shutil.copy(finished, path)
    before = read_sensitivity(path)
    r = subprocess.run([sys.executable, "-c", _KILL_AT_MOVE, str(path)], env=cli_env())
    assert r.returncode == -9  # killed between staging and linking
    after = read_sensitivity(path)
    assert after.keys() == before.keys()
    for name in before:
        for key in before[name][0]:
            assert np.array_equal(before[name][0][key], after[name][0][key])
    assert read_design(path)[1]["method"] == "sobol"
    with h5py.File(path) as f:
        assert [k for k in f if k.startswith(".tmp_")]  # the staged groups, hidden
    write_sensitivity(path, None, None, {}, {})  # the next writer clears them
    with h5py.File(path) as f:
        assert not [k for k in f if k.startswith(".tmp_")]


def test_refuses_a_file_that_is_not_an_ensemble(tmp_path):
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        f["a"] = 1
    with pytest.raises(StoreError, match="not a workbench ensemble"):
        write_sensitivity(path, None, None, {}, {})
    assert read_sensitivity(path) == {} and read_design(path) is None
