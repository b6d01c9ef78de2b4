"""`workbench markov train` and `workbench reverse --markov` (issue 5, Twigg & James 2008 §4):
the same seed writes the same bytes whatever the worker count, the shipped table is what the
command writes, reverse runs with the model are reproducible and leave the ground, bad input is
one line with exit status 2."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from reverse.markov import TransitionModel, load_model
from reverse.run import run_reverse
from tests.conftest import REPO, WORKBENCH, cli_env
from workbench.cli.main import main
from workbench.scene.loader import load_scene

SCENE = REPO / "scenes" / "markov_block.yaml"
TABLE = REPO / "data" / "markov_block.json"


def train(out, *extra):
    return main(
        ["markov", "train", "markov_block", "-n", "20", "--seed", "5", "-o", str(out), "-q"]
        + list(extra)
    )


def test_same_seed_same_bytes_whatever_the_workers(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert train(a) == 0
    assert train(b, "--workers", "2") == 0
    assert a.read_bytes() == b.read_bytes()
    model = load_model(a)
    assert model.meta["n"] == 20 and model.meta["seed"] == 5
    assert model.counts.sum() == 20 * 360  # 20 runs of 360 steps (1.5 s at 1/240 s)
    assert model.meta["command"].startswith("workbench markov train markov_block -n 20 --seed 5")


def test_shipped_table_is_what_the_command_wrote():
    model = load_model(TABLE)
    assert model.meta["n"] >= 1000
    assert model.meta["command"].startswith("workbench markov train markov_block -n 1000")
    import hashlib

    assert model.meta["scene_sha256"] == hashlib.sha256(SCENE.read_bytes()).hexdigest()
    P = model.probabilities
    assert np.all(P[1:, :].sum(axis=1) > 0) and 0 < P[3, 3] < 1


def test_reverse_with_markov_is_reproducible_and_lifts_the_block():
    scene = load_scene(SCENE)
    # a table that drops from a face to an edge every step: the block must tip backward
    counts = np.diag([1, 1, 1, 0]).astype(np.int64)
    counts[3, 2] = 1
    model = TransitionModel(counts, scene.settings.dt)
    runs = [run_reverse(scene, duration=0.1, hints=[], seed=3, markov=model) for _ in range(2)]
    t0, t1 = (r.trajectory for r in runs)
    np.testing.assert_array_equal(t0.position, t1.position)
    np.testing.assert_array_equal(t0.angular_velocity, t1.angular_velocity)
    assert runs[0].markov_transitions >= 1
    assert np.linalg.norm(t0.angular_velocity[0, 1]) > 0.1  # it was tipping about an edge
    still = run_reverse(scene, duration=0.1, hints=[], seed=3).trajectory  # no model: at rest
    assert np.all(still.position[:, 1] == still.position[-1, 1])


def test_cli_reverse_markov_stores_table_and_seed(tmp_path):
    from workbench.store import TrajectoryStore

    out = tmp_path / "r.h5"
    argv = ["reverse", "markov_block", "--markov", str(TABLE), "--seed", "1", "--duration", "0.05"]
    assert main([*argv, "-o", str(out), "-q"]) == 0
    with TrajectoryStore.open(out) as store:
        assert store.attrs["markov_seed"] == "1"
        assert load_model(TABLE).to_json() == store.attrs["markov_table"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["markov", "train", "markov_block", "-n", "0"], "-n"),
        (["markov", "train", "markov_block", "--workers", "0"], "--workers"),
        (["markov", "train", "markov_block", "--dt", "-1"], "--dt"),
        (["markov", "train", "markov_block", "--seed", "-1"], "--seed"),
        (["markov", "train", "no_such_scene"], "not found"),
        (["markov", "train", "reverse_landing", "-n", "2"], "exactly one moving body"),
        (["reverse", "markov_block", "--duration", "0.1", "--markov", "BAD"], "not valid JSON"),
        (["reverse", "markov_block", "--duration", "0.1", "--markov", "none.json"], "cannot read"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, words, tmp_path, capsys):
    (tmp_path / "BAD").write_text("{")
    argv = [str(tmp_path / a) if a in ("BAD", "none.json") else a for a in args]
    rc = main([*argv, "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and words in err[0], err


def test_markov_subcommand_in_a_subprocess(tmp_path):
    r = subprocess.run(
        [*WORKBENCH, "markov", "train", "--help"],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
    )
    assert r.returncode == 0 and "SeedSequence" in r.stdout
    out = tmp_path / "t.json"
    r = subprocess.run(
        [*WORKBENCH, "markov", "train", "markov_block", "-n", "3", "--seed", "1", "-o", str(out)],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout and load_model(out).meta["n"] == 3
    r = subprocess.run([*WORKBENCH, "markov"], capture_output=True, text=True, env=cli_env())
    assert r.returncode == 2 and "train" in r.stderr
