"""`workbench markov train` and `workbench reverse --markov` (issue 5, Twigg & James 2008 §4):
the same seed writes the same bytes whatever the worker count, the shipped table is what the
command writes, reverse runs with the model are reproducible and leave the ground, bad input is
one line with exit status 2."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from reverse.goals.markov import TransitionModel, load_model
from reverse.runs.run import run_reverse
from tests.conftest import REPO, WORKBENCH, cli_env
from workbench.cli.main import main
from workbench.scene.loader import load_scene

SCENE = REPO / "scenes" / "markov_block.yaml"
TABLE = REPO / "data" / "markov_block.json"
SEMI = REPO / "data" / "markov_block_semi.json"


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


@pytest.mark.slow  # ~2 s
def test_semi_markov_same_bytes_whatever_the_workers_and_same_runs_as_plain(tmp_path):
    a, b, plain = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "p.json"
    assert train(a, "--kind", "semi-markov") == 0
    assert train(b, "--kind", "semi-markov", "--workers", "2") == 0
    assert train(plain) == 0
    assert a.read_bytes() == b.read_bytes()
    semi, flat = load_model(a), load_model(plain)
    assert semi.kind == "semi-markov" and flat.kind == "plain"
    assert semi.meta["command"].endswith("--kind semi-markov")
    np.testing.assert_array_equal(semi.counts, flat.counts)  # one set of runs, two models
    assert semi.speeds == flat.speeds
    # every backward step of the runs from a contact state is at risk once
    at_risk = sum(int(t[0].sum()) for t in semi.hazards.tables.values())
    assert at_risk == int(semi.counts[1:].sum())


def test_shipped_semi_markov_table_is_what_the_command_wrote():
    import hashlib

    semi, plain = load_model(SEMI), load_model(TABLE)
    assert semi.kind == "semi-markov" and plain.kind == "plain"
    assert semi.meta["command"] == plain.meta["command"] + " --kind semi-markov"
    assert semi.meta["scene_sha256"] == hashlib.sha256(SCENE.read_bytes()).hexdigest()
    np.testing.assert_array_equal(semi.counts, plain.counts)
    # the final rest lasts longer than the memoryless table's face holding time (issue 15)
    assert semi.hazards.mean_dwell("rest", 3) > 5 * semi.hazards.mean_dwell("tumble", 3)


@pytest.mark.slow
def test_shipped_tables_are_reproducible_byte_for_byte(tmp_path, shared_throws):
    """The shipped tables, rewritten by the commands they store (1000 throws each: ~40 s in
    all on 2 idle cores, measured 11 s per table; the plain and semi-Markov commands' identical
    throws run once, ``shared_throws``)."""
    for shipped in (TABLE, SEMI):
        args = load_model(shipped).meta["command"].split()[1:]  # after "workbench"
        out = tmp_path / shipped.name
        assert main([*args, "--workers", "2", "-q", "-o", str(out)]) == 0
        assert out.read_bytes() == shipped.read_bytes(), shipped.name


def test_reverse_with_semi_markov_rests_as_long_as_its_hazard_says():
    """The policy counts a body's steps in its state itself: a rest whose hazard is 0 for 12
    steps and 1 at the 13th tips the block at exactly that step, whatever the Markov row."""
    from reverse.goals.semi_markov import DwellHazards

    scene = load_scene(SCENE)
    m = 12
    at_risk = np.array([1] * (m + 1) + [0])
    to_edge = np.zeros((3, m + 2), dtype=np.int64)
    to_edge[2, m] = 1
    hz = DwellHazards(scene.settings.dt, {("rest", 3): (at_risk, to_edge)})
    counts = np.diag([1, 1, 1, 0]).astype(np.int64)
    counts[3, 2] = 1  # the Markov row alone would tip the block at the first step
    model = TransitionModel(counts, scene.settings.dt, hazards=hz)
    runs = [run_reverse(scene, duration=0.1, hints=[], seed=3, markov=model) for _ in range(2)]
    t0, t1 = (r.trajectory for r in runs)
    np.testing.assert_array_equal(t0.position, t1.position)
    assert runs[0].markov_transitions >= 1
    w = np.linalg.norm(t0.angular_velocity[:, 1], axis=1)[::-1]  # reverse time order
    assert np.all(w[: m + 1] == 0)  # at rest for the scene's state and the m + 1 steps after
    assert w[m + 1] > 0.1  # the drop drawn at age m (step m + 1): tipping in that step


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
    out = tmp_path / "s.h5"
    argv[3] = str(SEMI)
    assert main([*argv, "-o", str(out), "-q"]) == 0
    with TrajectoryStore.open(out) as store:
        assert load_model(SEMI).to_json() == store.attrs["markov_table"]
        assert "semi-Markov" in store.attrs["markov_table"]


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


@pytest.mark.slow  # ~7 s
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


# ----------------------------------------------------------------------------- plane ground
def test_trainer_collides_a_plane_as_the_box_it_is_documented_to_be(tmp_path):
    """Issue 15: a `plane` ground collided as a compound (box with an offset collision frame)
    counted 33.7 transitions per throw against 30.3 on the 1 m box; now the same states."""
    from reverse.pasts.training import run_throws

    text = SCENE.read_text(encoding="utf-8").replace(
        "shape: {type: plane}", "shape: {type: box, half_extents: [50, 50, 0.5]}\n"
        "    position: [0, 0, -0.5]"
    )  # fmt: skip
    boxed = tmp_path / "boxed.yaml"
    boxed.write_text(text, encoding="utf-8")
    kw = {"dt": 1 / 240, "duration": 1.0}
    plane = run_throws(SCENE, 4, 11, **kw)
    box = run_throws(boxed, 4, 11, **kw)
    for a, b in zip(plane, box, strict=True):
        np.testing.assert_array_equal(a.states, b.states)
        np.testing.assert_array_equal(a.landings, b.landings)


# ----------------------------------------------------------------------------- compare
COMPARE = ["markov", "compare", "markov_block", "--table", "markov_block", "-n", "4",
           "--duration", "0.5", "--seed", "3", "-q"]  # fmt: skip


@pytest.mark.slow  # ~10 s
def test_compare_runs_and_is_identical_whatever_the_workers(tmp_path):
    import json

    outs = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        assert main([*COMPARE, "--workers", str(workers), "-o", str(out)]) == 0
        outs[workers] = out
    for name in ("plausibility.json", "sequences.png", "statistics.png"):
        assert (outs[1] / name).read_bytes() == (outs[2] / name).read_bytes(), name
    doc = json.loads((outs[1] / "plausibility.json").read_text())
    assert doc["counts"]["forward"] == doc["counts"]["backward"] == 4
    assert doc["meta"]["seed"] == 3 and doc["meta"]["duration"] == 0.5
    keys = [r["key"] for r in doc["statistics"]]
    assert keys[:2] == ["liftoff", "transitions"] and "earliest_speed" in keys
    for r in doc["statistics"]:
        assert r["floor"] is None or 0 <= r["floor"] <= 1
    assert 0 <= doc["classifier"]["accuracy"] <= 1
    # the forward throws are those of the training's distribution: they start at most at
    # sqrt(2² + 2² + 3²) m/s (markov_training.THROW) and the backward runs start from rest
    assert doc["earliest_state_range"]["forward_max_speed"] <= np.sqrt(17) + 1e-12


@pytest.mark.slow  # ~4 s
def test_compare_takes_a_semi_markov_table(tmp_path):
    import json

    argv = [*COMPARE, "--table", "markov_block_semi", "-n", "3", "-o", str(tmp_path / "s")]
    assert main(argv) == 0
    doc = json.loads((tmp_path / "s" / "plausibility.json").read_text())
    assert doc["meta"]["table_kind"] == "semi-markov"
    assert doc["meta"]["table"].endswith("--kind semi-markov")
    assert doc["counts"]["backward"] == 3


@pytest.mark.slow  # ~3 s
def test_compare_prints_the_table(tmp_path, capsys):
    argv = [a for a in COMPARE if a != "-q"]
    assert main([*argv, "-n", "3", "-o", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    for words in ("time to first liftoff", "TV f-b", "floor", "classifier two-sample test",
                  "share of all steps", "earliest state"):  # fmt: skip
        assert words in out, words


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["-n", "1"], "-n"),
        (["--table", "nothing.json"], "not found"),
        (["--bins", "1"], "--bins"),
        (["--hints", "script"], "hints"),
        (["--backward", "angular-damping=-1"], "--backward angular-damping"),
        (["--verify-budget", "5"], "--verify-budget"),  # without --conditioned
    ],
)
def test_compare_bad_input_is_one_line_exit_2(extra, words, tmp_path, capsys):
    assert main([*COMPARE, *extra, "-o", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_compare_refuses_a_scene_with_two_moving_bodies(tmp_path, capsys):
    argv = ["markov", "compare", "reverse_landing", "--table", "markov_block", "-q"]
    assert main([*argv, "-o", str(tmp_path / "r")]) == 2
    assert "exactly one moving body" in capsys.readouterr().err
