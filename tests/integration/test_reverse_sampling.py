"""`workbench reverse` beyond one run (issue 5): many seeded runs ranked by energy, the energy
guard, stitching a PyBullet forward run, hints from a scene script, bad options."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from tests.conftest import REPO
from workbench.cli.main import main
from workbench.store import TrajectoryStore

TABLE = str(REPO / "data" / "markov_block.json")
SAMPLING = ["reverse", "markov_block", "--markov", TABLE, "--duration", "0.6", "--seed", "7"]


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    d = tmp_path_factory.mktemp("samples")
    files = {}
    for workers in (1, 2):
        out = d / f"w{workers}.h5"
        code = main([*SAMPLING, "--samples", "8", "--keep", "3", "--energy-limit", "8",
                     "--workers", str(workers), "-q", "-o", str(out)])  # fmt: skip
        assert code == 0
        files[workers] = out
    return files


@pytest.mark.slow  # ~5 s: the module's `sampled` runs
def test_samples_are_bit_identical_whatever_the_worker_count(sampled):
    with h5py.File(sampled[1], "r") as a, h5py.File(sampled[2], "r") as b:
        for name in ("states/position", "states/orientation", "states/linear_velocity"):
            np.testing.assert_array_equal(a[name][:], b[name][:])
        np.testing.assert_array_equal(
            a["sampling/outcomes"]["peak_energy"], b["sampling/outcomes"]["peak_energy"]
        )


@pytest.mark.slow  # ~6 s
def test_samples_on_a_dask_cluster_are_bit_identical(sampled, tmp_path):
    pytest.importorskip("distributed")
    from tests.conftest import cli_env
    from workbench.ensemble.cluster import local_dask_cluster

    out = tmp_path / "dask.h5"
    with local_dask_cluster(2, env=cli_env()) as address:
        code = main([*SAMPLING, "--samples", "8", "--keep", "3", "--energy-limit", "8",
                     "--scheduler", address, "-q", "-o", str(out)])  # fmt: skip
    assert code == 0
    with h5py.File(sampled[1], "r") as a, h5py.File(out, "r") as b:
        np.testing.assert_array_equal(a["states/position"][:], b["states/position"][:])
        np.testing.assert_array_equal(
            a["sampling/outcomes"]["peak_energy"], b["sampling/outcomes"]["peak_energy"]
        )


@pytest.mark.slow  # the last user of `sampled` (~5 s)
def test_kept_runs_are_the_lowest_energy_accepted_ones_under_the_limit(sampled):
    with TrajectoryStore.open(sampled[1]) as store:
        assert store.n_realizations == 3 and store.completed.all()
        assert store.attrs["time_reversed"] == 1
        table = store.read_dataset("sampling/outcomes")
        peaks = [float(np.max(store.read(r).diagnostics["kinetic_energy"])) for r in range(3)]
    assert len(table) == 8 and sorted(table["index"]) == list(range(8))
    kept = np.sort(table[table["kept"]], order="rank")
    assert list(kept["rank"]) == [0, 1, 2]
    np.testing.assert_allclose(peaks, kept["peak_energy"])  # stored in rank order
    assert np.all(kept["peak_energy"] <= 8.0)
    accepted = table[table["reason"] == b""]
    assert len(accepted) == 3
    others = table[~table["kept"]]
    assert all(r for r in others["reason"])  # every run not kept says why
    not_kept_ok = others[others["status"] == b"ok"]
    if len(not_kept_ok):
        assert kept["peak_energy"].max() <= not_kept_ok["peak_energy"].min()
    stopped = table[table["status"] == b"energy"]
    assert all(b"exceeded the limit" in r for r in stopped["reason"])


def test_energy_guard_stops_a_run_and_keeps_its_states(tmp_path, capsys):
    out = tmp_path / "e.h5"
    code = main([*SAMPLING, "--duration", "1.0", "--energy-limit", "0.5", "-o", str(out), "-q"])
    assert code == 1
    assert "exceeded the limit 0.5 J" in capsys.readouterr().err
    with TrajectoryStore.open(out) as store:
        traj = store.read(0)
    assert traj.status == "energy" and traj.n_times >= 2
    assert traj.diagnostics["kinetic_energy"].max() <= 0.5


def test_then_forward_stitches_a_pybullet_run_at_the_scene_state(tmp_path):
    out = tmp_path / "s.h5"
    hints = str(REPO / "scenes" / "reverse_landing.hints.yaml")
    code = main(["reverse", "reverse_landing", "--hints", hints, "--duration", "0.2",
                 "--then-forward", "0.1", "-o", str(out), "-q"])  # fmt: skip
    assert code == 0
    with TrajectoryStore.open(out) as store:
        traj = store.read(0)
        t_join = float(store.attrs["forward_from"])
    assert t_join == pytest.approx(0.2)
    k = int(np.argmin(np.abs(traj.time - t_join)))
    dt = np.diff(traj.time)
    np.testing.assert_allclose(dt, 1e-3, rtol=1e-9)  # one clock through the junction
    # at the junction: the scene's final state (bodies at rest where the scene puts them)
    assert np.abs(traj.linear_velocity[k]).max() <= 1e-12
    np.testing.assert_allclose(traj.position[k, 1:, 2], [0.05, 0.1, 0.1], atol=1e-9)
    # after it, PyBullet keeps the bodies at rest (to its contact drift)
    assert np.abs(traj.position[-1] - traj.position[k]).max() <= 1e-3


def test_hints_from_a_scene_script(tmp_path):
    import runpy

    script = REPO / "scenes" / "spelling_balls.py"
    out = tmp_path / "hi.h5"
    args = ["--set", "text=I", "--set", "per_side=2", "--hints", "script", "--duration", "0.3"]
    code = main(["reverse", str(script), *args, "--restitution-blend", "0.2", "-o", str(out), "-q"])
    # without the scene's plausibility settings balls end up inside walls: the run is written,
    # marked by its audit, and exits 1
    with TrajectoryStore.open(out) as store:
        traj = store.read(0)
        assert "ball0" in store.attrs["hints"]
    assert (code, traj.status) in ((0, "ok"), (1, "implausible")), traj.message
    balls = [k for k, n in enumerate(traj.body_names) if n.startswith("ball")]
    assert len(balls) == 11 * 4
    # the balls whose hint time falls inside the 0.3 s have left (others may be knocked along)
    hints = runpy.run_path(str(script))["hints"](text="I", per_side=2)["hints"]
    fired = {h["body"] for h in hints if "bounce" in h and h["at"] < 0.3 - 1 / 240}
    moving = {
        traj.body_names[k] for k in balls if np.linalg.norm(traj.linear_velocity[0, k]) > 1e-3
    }
    assert fired and fired <= moving


@pytest.mark.parametrize(
    ("extra", "text"),
    [
        (["--samples", "3", "--keep", "4"], "--keep"),
        (["--samples", "0"], "--samples"),
        (["--energy-limit", "-1"], "--energy-limit"),
        (["--angular-damping", "nan"], "--angular-damping"),
        (["--samples", "2", "--then-forward", "1"], "--then-forward"),
    ],
)
def test_bad_options_are_one_line_errors(capsys, extra, text):
    assert main([*SAMPLING, *extra, "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and text in err, err


def test_bad_free_hint_is_a_one_line_error(tmp_path, capsys):
    hints = tmp_path / "h.yaml"
    hints.write_text("hints:\n  - {body: block, free: maybe}\n")
    assert main([*SAMPLING, "--hints", str(hints), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "hints[0].free" in err and "true or false" in err


# ----------------------------------------------------------------------------- per-run pasts
def _distribution(tmp_path):
    f = tmp_path / "slides.hints.yaml"
    f.write_text(
        "hints:\n  - body: block\n    slide: {direction: random, speed: {uniform: [0.2, 1.5]}}\n",
        encoding="utf-8",
    )
    return f


@pytest.mark.slow  # ~3 s
def test_samples_draw_their_heading_and_hints_bit_identically_for_any_workers(tmp_path):
    hints = _distribution(tmp_path)
    files = {}
    for workers in (1, 2):
        out = tmp_path / f"v{workers}.h5"
        code = main(["reverse", "markov_block", "--duration", "0.2", "--seed", "4", "--samples",
                     "4", "--keep", "4", "--heading", "random", "--hints", str(hints),
                     "--workers", str(workers), "-q", "-o", str(out)])  # fmt: skip
        assert code == 0
        files[workers] = out
    with h5py.File(files[1], "r") as a, h5py.File(files[2], "r") as b:
        for name in ("states/orientation", "states/linear_velocity"):
            np.testing.assert_array_equal(a[name][:], b[name][:])
        q_final = a["states/orientation"][:, -1, 1]  # each run's final heading (forward order)
        v_first = a["states/linear_velocity"][:, 0, 1]
        assert a.attrs["sample_heading"] == "random"
    # four different headings and four different slides
    assert len({tuple(np.round(q, 9)) for q in q_final}) == 4
    assert len({tuple(np.round(v, 9)) for v in v_first}) == 4


def test_drawn_hints_need_samples_and_a_random_heading_too(tmp_path, capsys):
    hints = _distribution(tmp_path)
    base = ["reverse", "markov_block", "--duration", "0.1", "-q", "-o", str(tmp_path / "x.h5")]
    assert main([*base, "--hints", str(hints)]) == 2
    assert "needs --samples" in capsys.readouterr().err
    assert main([*base, "--heading", "random"]) == 2
    assert "needs --samples" in capsys.readouterr().err


def test_script_hints_with_a_seed_differ_per_run(tmp_path):
    script = tmp_path / "seeded.py"
    script.write_text(
        "import numpy as np\n\n"
        "def build():\n"
        "    return {'settings': {'dt': 1 / 240, 'duration': 0.5}, 'bodies': [\n"
        "        {'name': 'ground', 'shape': {'type': 'plane'}, 'fixed': True,\n"
        "         'material': {'friction': 1.0, 'restitution': 1.0}},\n"
        "        {'name': 'block', 'shape': {'type': 'box', 'half_extents': [0.1, 0.075, 0.05]},\n"
        "         'mass': 1.0, 'position': [0, 0, 0.05],\n"
        "         'material': {'friction': 0.5, 'restitution': 0.5}}]}\n\n"
        "def hints(seed):\n"
        "    phi = np.random.default_rng(seed).uniform(0, 2 * np.pi)\n"
        "    return {'hints': [{'body': 'block', 'slide': {\n"
        "        'direction': [float(np.cos(phi)), float(np.sin(phi)), 0.0], 'speed': 1.0}}]}\n",
        encoding="utf-8",
    )
    out = tmp_path / "s.h5"
    code = main(["reverse", str(script), "--duration", "0.1", "--seed", "2", "--samples", "3",
                 "--keep", "3", "--hints", "script", "-q", "-o", str(out)])  # fmt: skip
    assert code == 0
    with h5py.File(out, "r") as f:
        vx = f["states/linear_velocity"][:, 0, 1, 0]
    assert len(set(np.round(vx, 9))) == 3


def test_duration_defaults_to_the_scene_setting(tmp_path):
    out = tmp_path / "d.h5"
    assert main(["reverse", "markov_block", "-q", "-o", str(out)]) == 0
    with TrajectoryStore.open(out) as store:
        assert store.attrs["reverse_duration"] == pytest.approx(1.5)


def test_a_final_rest_hint_is_drawn_from_the_semi_markov_table_given(tmp_path, capsys):
    """``at: rest`` in a hints file: ``--hints`` is resolved by one library function
    (reverse.goals.hints.resolve_hints) for every command, so ``reverse --samples`` draws the
    rest from the ``--markov`` semi-Markov table as ``markov compare`` does, and refuses it
    (one line) without one."""
    hints = tmp_path / "rest.hints.yaml"
    hints.write_text(
        "hints:\n  - body: block\n    slide: {direction: random, speed: {uniform: [0.0, 1.5]}}\n"
        "    at: rest\n",
        encoding="utf-8",
    )
    out = tmp_path / "rest.h5"
    base = ["reverse", "markov_block", "--duration", "0.2", "--seed", "4", "--samples", "3",
            "--keep", "3", "--hints", str(hints), "-q", "-o", str(out)]  # fmt: skip
    assert main([*base, "--markov", str(REPO / "data" / "markov_block_semi.json")]) == 0
    with h5py.File(out, "r") as f:
        assert f["sampling/outcomes"].shape == (3,)
    assert main(base) == 2
    assert "at: rest needs a semi-Markov table" in capsys.readouterr().err
    assert main([*base, "--markov", TABLE]) == 2  # a plain table has no final rest
    assert "at: rest needs a semi-Markov table" in capsys.readouterr().err
