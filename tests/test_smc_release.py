"""The particle filter's terminal release (``reverse/smc.py``, ``release=True``): a backward run's
earliest state is kept only where it could be a throw's release (:data:`THROW`: height above the
ground, falling, horizontal speed, the fastest throws' speed and spin), when any particle's is;
:func:`reverse.markov_training.release_test` says which states are."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reverse.markov import load_model
from reverse.markov_training import THROW, release_test
from workbench.ensemble.run import SceneRef
from workbench.sim.state import State

REPO = Path(__file__).resolve().parents[1]
ENERGY = REPO / "data" / "markov_block_energy.json"
SCENE = REPO / "scenes" / "markov_block.yaml"


def _throw_frame() -> tuple[float, float]:
    """``(ground_top, reach)`` measured as :func:`reverse.markov_training.run_throw` measures
    them, in the training's world."""
    from reverse.markov_training import box_ground, thrown_body
    from workbench.sim.engine import Engine
    from workbench.sim.frames import box_reach

    scene = box_ground(SceneRef(str(SCENE), ()).load())
    j = thrown_body(scene)
    eng = Engine(scene, visual=False)
    try:
        lo, hi = eng.aabb(j)
        top = max(float(eng.aabb(k)[1][2]) for k in range(eng.n_bodies) if k != j)
        return top, box_reach(lo, hi, eng.state().position[j])
    finally:
        eng.close()


def _state(z: float, v, w=(0.0, 0.0, 0.0), q=(0, 0, 0, 1.0)) -> State:
    """The scene's fixed plane and the block, its centre at height ``z``."""
    return State(
        position=np.array([[0.0, 0.0, 0.0], [0.3, -0.2, z]]),
        orientation=np.array([[0, 0, 0, 1.0], q], dtype=float),
        linear_velocity=np.array([[0, 0, 0.0], v], dtype=float),
        angular_velocity=np.array([[0, 0, 0.0], w], dtype=float),
    )


def test_releases_are_the_throw_laws_support():
    from reverse.markov_training import sample_throw

    scene = SceneRef(str(SCENE), ()).load()
    assert [b.fixed for b in scene.bodies] == [True, False], "the test's states assume this order"
    top, reach = _throw_frame()
    assert reach > 0.12  # at least the block's half diagonal (0.135 m) less PyBullet's margins
    released = release_test(SceneRef(str(SCENE), ()), max_speed=3.8, max_spin=16.7)
    # every throw the trainer draws is a release (turned to any heading: components rotated)
    rng = np.random.default_rng(7)
    for _ in range(200):
        t = sample_throw(rng, (0.0, 0.0), top, reach)
        if np.linalg.norm(t.linear_velocity) > 3.8 or np.linalg.norm(t.angular_velocity) > 16.7:
            continue  # beyond the fastest throws given here
        c, s_ = np.cos(1.0), np.sin(1.0)
        v = np.array(
            [
                c * t.linear_velocity[0] - s_ * t.linear_velocity[1],
                s_ * t.linear_velocity[0] + c * t.linear_velocity[1],
                t.linear_velocity[2],
            ]
        )
        assert released(_state(t.position[2], v, t.angular_velocity, t.orientation))
    lo, hi = THROW["clearance"]
    mid = top + reach + (lo + hi) / 2
    assert released(_state(mid, [1.0, -1.0, -2.0], [5.0, 5.0, 5.0]))
    assert released(_state(mid, [0.0, 0.0, 0.0]))  # dropped from rest
    assert not released(_state(mid, [0.0, 0.0, 0.5]))  # rising: thrown downward or dropped only
    assert not released(_state(mid, [0.0, 0.0, -3.2]))  # faster down than any throw
    assert not released(_state(mid, [2.0, 2.1, 0.0]))  # horizontally > √2 · 2 m/s
    assert not released(_state(mid, [1.9, 1.9, -3.0]))  # within each bound, 4.0 > 3.8 m/s
    assert not released(_state(mid, [0.0, 0.0, -1.0], [10.0, 10.0, 10.0]))  # spin 17.3 > 16.7
    assert not released(_state(top + reach + lo - 0.001, [0.0, 0.0, -1.0]))  # too low
    assert not released(_state(top + reach + hi + 0.001, [0.0, 0.0, -1.0]))  # too high
    assert released(_state(top + reach + lo + 0.001, [0.0, 0.0, -1.0]))
    assert released(_state(top + reach + hi - 0.001, [0.0, 0.0, -1.0]))
    assert not released(_state(0.05, [0.0, 0.0, 0.0]))  # the scene's rest on the ground


@pytest.mark.slow
def test_the_kept_runs_start_at_a_release_when_a_particle_does():
    from tests.test_smc_drop import _run

    res = _run(12, 1, 2, duration=1.5, release=True)
    assert res.raw_release_share is not None and res.raw_release_share > 0  # seeded: 1 of 12
    model = load_model(ENERGY)
    released = release_test(
        SceneRef(str(SCENE), ()), model.energy_law.throw_speed, model.energy_law.throw_spin
    )
    for run in res.runs:
        s = run.states[0]  # the earliest record: (bodies, 13)
        earliest = State(s[:, 0:3], s[:, 3:7], s[:, 7:10], s[:, 10:13])
        assert run.status == "ok" and released(earliest)
    plain = _run(12, 1, 2, duration=1.5)
    assert plain.raw_release_share is None
    assert not all(
        released(State(r.states[0][:, 0:3], r.states[0][:, 3:7], r.states[0][:, 7:10],
                       r.states[0][:, 10:13]))
        for r in plain.runs
    )  # fmt: skip


def test_compare_smc_release_without_smc_is_one_line_exit_2(tmp_path, capsys):
    from workbench.cli.main import main

    argv = ["markov", "compare", "markov_block", "--table", "markov_block_energy", "-n", "4", "-q"]
    assert main([*argv, "--smc-release", "-o", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--smc-release" in err[0] and "--smc" in err[0], err
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_compare_smc_release_records_the_raw_share_and_is_the_same_for_any_workers(tmp_path):
    import json

    from workbench.cli.main import main

    docs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        argv = ["markov", "compare", "markov_block", "--table", "markov_block_energy", "-n", "6",
                "--duration", "1.5", "--seed", "1", "-q", "--smc", "--smc-release",
                "--workers", str(workers), "-o", str(out)]  # fmt: skip
        assert main(argv) == 0
        docs.append((out / "plausibility.json").read_bytes())
    assert docs[0] == docs[1]
    doc = json.loads(docs[0])
    assert 0.0 <= doc["counts"]["smc"]["raw_release_share"] <= 1.0
    assert "--smc-release" in doc["meta"]["command"]
