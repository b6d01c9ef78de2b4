"""Contact-transition tables of shapes other than the block (issue 15, acceptance: "the same on at
least two more shapes with tables trained by the same command and shipped in data/"): a thin
plate (``scenes/markov_plate.yaml``) and a square rod (``scenes/markov_rod.yaml``), each with a
plain, a semi-Markov and an energy table. The shipped tables are what their stored command
writes (byte for byte: slow; a 20-run prefix of the same command: fast), the catalog finds them
by name, and `workbench reverse --markov` and `workbench markov compare` run on the shapes."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from reverse.goals.markov import load_model
from tests.conftest import REPO
from workbench.cli.main import main
from workbench.scene.catalog import find_data, find_scene, shipped_tables
from workbench.scene.loader import load_scene

SHAPES = ("markov_plate", "markov_rod")
#: The block's training command with the scene's name in place of ``markov_block``
#: (data/markov_block.json ``command``): the same n, seed, dt and duration for every shape.
COMMAND = "workbench markov train {} -n 1000 --seed 2008 --dt 0.004166666666666667 --duration 1.5"
SEMI = " --kind semi-markov"
#: Suffixes of a shape's shipped tables: plain and semi-Markov.
KINDS = ("", "_semi")
#: Longest ÷ shortest half extent of the block (0.1 / 0.05); the new shapes must differ from it.
BLOCK_ASPECT = 2.0


def tables(shape: str) -> tuple:
    return tuple(REPO / "data" / f"{shape}{k}.json" for k in KINDS)


def aspect(scene) -> float:
    (body,) = (b for b in scene.bodies if not b.fixed)
    h = np.asarray(body.shape.half_extents, dtype=float)
    return float(h.max() / h.min())


@pytest.mark.parametrize("shape", SHAPES)
def test_shipped_shape_tables_are_what_the_block_command_wrote(shape):
    scene_path = REPO / "scenes" / f"{shape}.yaml"
    assert find_scene(shape) == scene_path
    scene = load_scene(scene_path)
    # unlike the block in aspect ratio: plate 10 (0.1 / 0.01), rod 7.5 (0.15 / 0.02)
    assert aspect(scene) >= 3 * BLOCK_ASPECT
    assert aspect(load_scene(REPO / "scenes" / "markov_block.yaml")) == BLOCK_ASPECT
    plain, semi = (load_model(p) for p in tables(shape))
    assert (plain.kind, semi.kind) == ("plain", "semi-markov")
    assert plain.meta["command"] == COMMAND.format(shape)
    assert semi.meta["command"] == COMMAND.format(shape) + SEMI
    block = load_model(REPO / "data" / "markov_block.json")
    assert block.meta["command"] == COMMAND.format("markov_block")  # the same command, indeed
    sha = hashlib.sha256(scene_path.read_bytes()).hexdigest()
    for model in (plain, semi):
        assert model.meta["scene"] == scene_path.name and model.meta["scene_sha256"] == sha
    # one set of runs, two models
    np.testing.assert_array_equal(semi.counts, plain.counts)
    assert plain.counts.sum() == 1000 * 360  # 1000 runs of 360 steps (1.5 s at 1/240 s)
    assert not np.array_equal(plain.counts, block.counts)  # trained on its own shape
    P = plain.probabilities
    assert np.all(P[1:, :].sum(axis=1) > 0) and 0 < P[3, 3] < 1
    # the semi-Markov final rest outlasts the plain table's memoryless face holding time
    # dt / (1 − P[face, face]): measured 1.9× (rod), 2.2× (plate), 2.4× (block); the plain table
    # mixing rests with flat landings is what the semi-Markov table is for (issue 15 item 2)
    holding = plain.dt / (1.0 - P[3, 3])
    assert semi.hazards.mean_dwell("rest", 3) > 1.5 * holding


@pytest.mark.parametrize("shape", SHAPES)
def test_catalog_finds_the_shape_tables_by_name(shape, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # names, not paths relative to the checkout
    for kind, path in zip(KINDS, tables(shape), strict=True):
        assert find_data(f"{shape}{kind}", what="contact-transition table") == path
        assert find_data(f"data/{shape}{kind}") == path
        assert path in shipped_tables()


@pytest.mark.parametrize("shape", SHAPES)
def test_first_runs_of_the_shipped_command_are_a_prefix_of_the_table(shape, tmp_path):
    """Run i of a training draws from SeedSequence(seed, spawn_key=(i,)) alone, so the command
    with -n 20 counts a subset of the shipped 1000 runs' steps: its counts and its landings are
    at most the shipped ones, whatever the workers (same bytes for 1 and 2)."""
    plain_path = tables(shape)[0]
    args = load_model(plain_path).meta["command"].split()[1:]  # after "workbench"
    args[args.index("-n") + 1] = "20"
    outs = []
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}.json"
        assert main([*args, "--workers", workers, "-q", "-o", str(out)]) == 0
        outs.append(out)
    assert outs[0].read_bytes() == outs[1].read_bytes()
    small, shipped = load_model(outs[0]), load_model(plain_path)
    assert small.counts.sum() == 20 * 360
    assert np.all(small.counts <= shipped.counts)
    assert small.meta["landings"] <= shipped.meta["landings"]
    assert {k: v for k, v in small.meta.items() if k not in ("n", "command", "landings")} == {
        k: v for k, v in shipped.meta.items() if k not in ("n", "command", "landings")
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", [f"{s}{k}" for s in SHAPES for k in KINDS])
def test_shipped_shape_tables_are_reproducible_byte_for_byte(name, tmp_path, shared_throws):
    """Each shipped table rewritten by the command it stores (1000 throws: 50-80 s per table on
    2 loaded cores, measured; about 11 s idle, as markov_block's; a shape's plain and
    semi-Markov commands' identical throws run once, ``shared_throws``)."""
    shipped = REPO / "data" / f"{name}.json"
    args = load_model(shipped).meta["command"].split()[1:]  # after "workbench"
    out = tmp_path / shipped.name
    assert main([*args, "--workers", "2", "-q", "-o", str(out)]) == 0
    assert out.read_bytes() == shipped.read_bytes(), shipped.name


@pytest.mark.parametrize("name", [f"{s}{k}" for s in SHAPES for k in KINDS])
def test_reverse_with_a_shape_table(name, tmp_path):
    from workbench.store import TrajectoryStore

    shape = name.removesuffix("_semi")
    out = tmp_path / "r.h5"
    argv = ["reverse", shape, "--markov", name, "--seed", "1", "--duration", "0.05"]
    assert main([*argv, "-o", str(out), "-q"]) == 0
    with TrajectoryStore.open(out) as store:
        assert store.attrs["markov_seed"] == "1"
        assert store.attrs["markov_table"] == load_model(find_data(name)).to_json()


@pytest.mark.slow  # ~4 s
def test_compare_runs_on_the_rod(tmp_path):
    out = tmp_path / "rod"
    argv = ["markov", "compare", "markov_rod", "--table", "markov_rod_semi", "-n", "3",
            "--duration", "0.5", "--seed", "3", "--workers", "1", "-q", "-o", str(out)]  # fmt: skip
    assert main(argv) == 0
    for name in ("plausibility.json", "sequences.png", "statistics.png"):
        assert (out / name).is_file(), name
    doc = json.loads((out / "plausibility.json").read_text())
    assert doc["meta"]["scene"] == "markov_rod.yaml" and doc["meta"]["body"] == "rod"
    assert doc["meta"]["table_kind"] == "semi-markov"
    assert doc["meta"]["table"] == COMMAND.format("markov_rod") + SEMI
    assert doc["counts"]["forward"] == doc["counts"]["backward"] == 3
    keys = [r["key"] for r in doc["statistics"]]
    assert keys[:2] == ["liftoff", "transitions"] and "earliest_speed" in keys
    assert 0 <= doc["classifier"]["accuracy"] <= 1
    # the forward throws are the training's (markov_training.THROW): at most sqrt(2² + 2² + 3²)
    assert doc["earliest_state_range"]["forward_max_speed"] <= np.sqrt(17) + 1e-12
