"""``workbench sensitivity``: design -> realizations -> outputs -> Sobol' indices, against closed
forms (Ishigami; the sliding block's stopping distance), bit-identical files for 1 and 2 workers,
SIGKILL + --resume, refusals, and the indices in ``stats``/``plot``."""

from __future__ import annotations

import hashlib
import math
import time

import h5py
import numpy as np
import pytest

from tests.conftest import SCENES, kill_and_resume, run_main, run_workbench
from uncertainty import sensitivity as gsa
from workbench.analysis.sensitivity import (
    DesignSampler,
    DesignSpec,
    model_sensitivity,
    sensitivity_problem,
)
from workbench.ensemble.run import SceneRef
from workbench.errors import WorkbenchError
from workbench.scene.loader import load_scene

SLIDING = SCENES / "sliding_block_random.yaml"


def wb(*args):
    """``workbench ARGS`` in this process; the command's own process is tested by
    :func:`test_dependent_inputs_are_refused` (fast) and the two slow tests, which run
    :func:`run_workbench`."""
    return run_main(*args)


def _sha(path) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _sliding_closed_form(a=1.0, b=2.0, c=0.3, d=0.6) -> dict[str, np.ndarray]:
    """Sobol' indices of d = v0² / (2 μ g), v0 ~ U(a, b), μ ~ U(c, d) independent.

    Write d = C X Y with X = v0², Y = 1/μ (independent) and C = 1/(2g). The ANOVA terms of a
    product (Sobol' 1993; Saltelli et al. 2008, §1.2.5): V_X = C² E[Y]² Var X,
    V_Y = C² E[X]² Var Y, V_XY = C² Var X Var Y, V = C² (E[X²] E[Y²] − E[X]² E[Y]²), so
    S1_v0 = E[Y]² Var X / V', S1_μ = E[X]² Var Y / V', ST = S1 + Var X Var Y / V' (C cancels).
    Moments: E[v0^k] = (b^(k+1) − a^(k+1)) / ((k + 1)(b − a)); E[1/μ] = ln(d/c)/(d − c),
    E[1/μ²] = (1/c − 1/d)/(d − c). Order: (mu, v0) as the scene declares them.
    """
    m = lambda k: (b ** (k + 1) - a ** (k + 1)) / ((k + 1) * (b - a))  # noqa: E731
    ex, ex2 = m(2), m(4)
    ey, ey2 = math.log(d / c) / (d - c), (1 / c - 1 / d) / (d - c)
    vx, vy = ex2 - ex**2, ey2 - ey**2
    v = ex2 * ey2 - ex**2 * ey**2
    s1 = np.array([ex**2 * vy, ey**2 * vx]) / v
    return {"S1": s1, "ST": s1 + vx * vy / v}


def test_sliding_closed_form_values():
    ref = _sliding_closed_form()
    assert ref["S1"] == pytest.approx([0.2198, 0.7497], abs=1e-4)
    assert ref["ST"] == pytest.approx([0.2503, 0.7802], abs=1e-4)


ISHIGAMI_SCENE = """\
description: the Ishigami function's inputs, x_i ~ U(-pi, pi) (the body is not run)
parameters:
  x1: {dist: uniform, low: -3.141592653589793, high: 3.141592653589793}
  x2: {dist: uniform, low: -3.141592653589793, high: 3.141592653589793}
  x3: {dist: uniform, low: -3.141592653589793, high: 3.141592653589793}
bodies:
  - {name: b, shape: {type: sphere, radius: 0.1}, mass: 1.0}
"""


@pytest.mark.slow  # ~7 s
def test_ishigami_through_the_scene_path_within_the_intervals(tmp_path):
    # the scene's random parameters -> design columns -> DesignSampler (the ensembles' sampler)
    # -> realization values -> output -> indices: the path of `workbench sensitivity` with the
    # Ishigami function in place of the forward run
    path = tmp_path / "ishigami.yaml"
    path.write_text(ISHIGAMI_SCENE)
    scene = load_scene(path)
    res = model_sensitivity(
        lambda v: {"f": float(gsa.ishigami([v["x1"], v["x2"], v["x3"]]))},
        scene,
        n=4096,
        entropy=20,
    )
    assert res.inputs == ("x1", "x2", "x3")
    got, ref = res.indices["f"], gsa.ishigami_indices(7.0, 0.1)
    for key in ("S1", "ST"):
        assert np.all(np.abs(got[key] - ref[key]) <= got[f"{key}_conf"]), (key, got)


@pytest.mark.slow  # 1024 PyBullet runs: ~15 s idle, 35 s on a loaded 2-core machine
def test_sliding_block_matches_the_closed_form_within_the_intervals(tmp_path):
    out = tmp_path / "sb.h5"
    t0 = time.perf_counter()
    r = run_workbench(
        "sensitivity", SLIDING, "--output", "stop", "-n", 256, "--seed", 7, "-o", out, "-q",
        timeout=600,
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr
    ref = _sliding_closed_form()
    with h5py.File(out) as f:
        g = f["sensitivity/stop"]
        assert list(g.attrs["inputs"].astype(str)) == ["mu", "v0"]
        for key in ("S1", "ST"):
            est, conf = g[key][()], g[f"{key}_conf"][()]
            assert np.all(np.abs(est - ref[key]) <= conf), (key, est, conf, ref[key])
        assert f["design/u"].shape == (256 * 4, 2)
        assert f["completed"][()].all()
        # realization i's inputs are design row i through the inverse CDFs
        u = f["design/u"][()]
        assert np.array_equal(f["params/parameters/mu"][()], 0.3 + 0.3 * u[:, 0])
        assert np.allclose(f["params/parameters/v0"][()], 1.0 + u[:, 1], rtol=0, atol=1e-15)
    print(f"sliding block, 1024 runs, 1 worker: {seconds:.1f} s")


@pytest.mark.slow  # ~4 s
def test_files_are_bit_identical_for_one_and_two_workers(tmp_path):
    common = ["sensitivity", SLIDING, "-n", 16, "--seed", 3, "-q", "--observer", "velocity.x"]
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    assert wb(*common, "-o", a).returncode == 0
    r = wb(*common, "-o", b, "--workers", 2)
    assert r.returncode == 0, r.stderr
    assert _sha(a) == _sha(b)


def _datasets(path) -> dict:
    out = {}
    with h5py.File(path) as f:
        f.visititems(
            lambda name, obj: (
                out.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None
            )
        )
    return out


@pytest.mark.slow  # kills and resumes until 4 kills landed: ~30-60 s
def test_sigkill_and_resume_lose_nothing(tmp_path):
    common = ["sensitivity", SLIDING, "-n", 64, "--seed", 11, "-q", "--duration", 0.7]
    ref = tmp_path / "ref.h5"
    r = run_workbench(*common, "-o", ref, timeout=600)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "killed.h5"

    def inspect(path) -> bool:  # whatever was killed: what is visible is whole
        with h5py.File(path) as f:
            done = f["completed"][()]
            assert np.all(f["recorded"][()][done] == f["time"].shape[0])
            if "design" in f:
                assert f["design/u"].shape == (64 * 4, 2)
            if "sensitivity" in f:  # finished: start over to keep killing
                assert set(f["sensitivity/stop"]) == {"S1", "ST", "S1_conf", "ST_conf"}
                return True
            return False

    r = kill_and_resume(
        common, out, kills=4, seconds=(0.5, 2.5), seed=2026, max_attempts=30, inspect=inspect
    )
    assert r.returncode == 0, r.stderr
    da, db = _datasets(ref), _datasets(out)
    assert da.keys() == db.keys()
    for name in da:
        assert np.array_equal(np.asarray(da[name]), np.asarray(db[name])), name


SLIDING3 = (
    SLIDING.read_text()
    .replace("    mass: 1.0\n", "    mass: ${m}\n")
    .replace(
        "  v0: {dist: uniform, low: 1.0, high: 2.0}   # initial speed, m/s\n",
        "  v0: {dist: uniform, low: 1.0, high: 2.0}   # initial speed, m/s\n"
        "  m: {dist: uniform, low: 0.5, high: 1.5}\n",
    )
)


def test_resume_refuses_another_design_with_the_same_size(tmp_path):
    scene = tmp_path / "three.yaml"
    scene.write_text(SLIDING3)
    out = tmp_path / "s.h5"
    # Sobol' N = 4 with 3 inputs and Morris with 5 trajectories both have 20 rows
    r = wb("sensitivity", scene, "-n", 4, "--seed", 5, "-o", out, "-q", "--duration", 0.7)
    assert r.returncode == 0, r.stderr
    r = wb(
        "sensitivity",
        scene,
        "--method",
        "morris",
        "-n",
        5,
        "--seed",
        5,
        "-o",
        out,
        "--resume",
        "-q",
        "--duration",
        0.7,
    )
    assert r.returncode == 2
    assert "--resume" in r.stderr and "method" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_resume_checks_the_inputs_of_an_interrupted_file(tmp_path):
    # no /design yet (the run was interrupted): the stored inputs are compared with the rows
    scene = tmp_path / "three.yaml"
    scene.write_text(SLIDING3)
    out = tmp_path / "s.h5"
    r = wb("sensitivity", scene, "-n", 4, "--seed", 5, "-o", out, "-q", "--duration", 0.7)
    assert r.returncode == 0, r.stderr
    with h5py.File(out, "r+") as f:
        del f["design"]
        del f["sensitivity"]
    r = wb(
        "sensitivity",
        scene,
        "--method",
        "morris",
        "-n",
        5,
        "--seed",
        5,
        "-o",
        out,
        "--resume",
        "-q",
        "--duration",
        0.7,
    )
    assert r.returncode == 2 and "this design gives" in r.stderr, r.stderr


@pytest.mark.slow  # ~2 s
def test_dependent_inputs_are_refused(tmp_path):
    scene = tmp_path / "dep.yaml"
    scene.write_text(
        "parameters:\n  m: {dist: uniform, low: 1.0, high: 2.0}\n"
        "settings: {dt: 0.001, duration: 0.05}\n"
        "bodies:\n"
        "  - name: b\n    shape: {type: sphere, radius: 0.1}\n    mass: ${m}\n"
        "    uncertainty: {mass: {dispersion: 0.1}}\n"
        "outputs:\n  - {name: z, reduce: value_at_time, body: b, component: z, time: 0.05}\n"
    )
    r = run_workbench("sensitivity", scene, "-n", 4, "-o", tmp_path / "x.h5")  # a process
    assert r.returncode == 2
    assert "dependent inputs" in r.stderr and "b" in r.stderr and "m" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.h5").exists()


def test_unknown_output_and_bad_n_are_one_line(tmp_path):
    r = wb("sensitivity", SLIDING, "--output", "stp", "-n", 4, "-o", tmp_path / "x.h5")
    assert r.returncode == 2 and "did you mean 'stop'" in r.stderr
    r = wb("sensitivity", SLIDING, "-n", 100, "-o", tmp_path / "x.h5")
    assert r.returncode == 2 and "power of 2" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_body_groups_map_design_rows_to_the_random_body(tmp_path):
    scene = tmp_path / "body.yaml"
    scene.write_text(
        "settings: {dt: 0.001, duration: 0.05}\n"
        "bodies:\n"
        "  - name: b\n    shape: {type: box, half_extents: [0.2, 0.1, 0.05]}\n    mass: 2.0\n"
        "    uncertainty:\n      mass: {dispersion: 0.2}\n"
        "      com: {domain: box, size: [0.1, 0.05, 0.02]}\n"
        "      inertia: {model: sg0, dispersion: 0.3}\n"
    )
    s = load_scene(scene)
    cols, groups = sensitivity_problem(s, "input")
    assert cols == ("b.mass", "b.com.x", "b.com.y", "b.com.z", "b.inertia")
    assert groups == ("b.mass", "b.com", "b.com", "b.com", "b.inertia")
    assert sensitivity_problem(s, "kind")[1] == ("mass", "com", "com", "com", "inertia")
    spec = DesignSpec("sobol", 8, 1, cols, groups)
    sampler = DesignSampler(spec)
    x = spec.matrix()
    # rows that share the inertia coordinate share G; the mass follows its own coordinate
    reals = [sampler(s, 1, i) for i in range(spec.rows)]
    g = np.array([r.params["b/G"] for r in reals])
    for i in range(spec.rows):
        for k in range(spec.rows):
            if x[i, 4] == x[k, 4]:
                assert np.array_equal(g[i], g[k])
    masses = np.array([r.mass_overrides["b"]["mass"] for r in reals])
    assert np.all(np.diff(masses[np.argsort(x[:, 0])]) >= 0)  # monotone in its coordinate


@pytest.mark.slow  # ~2 s
def test_stats_and_plot_show_the_indices(tmp_path):
    out = tmp_path / "sb.h5"
    r = wb(
        "sensitivity",
        SLIDING,
        "-n",
        8,
        "--seed",
        1,
        "-o",
        out,
        "-q",
        "--output",
        "stop",
        "--observer",
        "velocity.x",
    )
    assert r.returncode == 0, r.stderr
    r = wb("stats", out)
    assert r.returncode == 0, r.stderr
    assert "sensitivity of stop" in r.stdout and "sensitivity of velocity.x" in r.stdout
    assert "ST_conf" in r.stdout
    for name in ("stop", "velocity.x"):
        png = tmp_path / f"{name}.png"
        r = wb("plot", out, "--sensitivity", name, "-o", png)
        assert r.returncode == 0, r.stderr
        assert png.stat().st_size > 1000
    r = wb("plot", out, "--sensitivity", "nope", "-o", tmp_path / "x.png")
    assert r.returncode == 2 and "stop" in r.stderr


def test_morris_screening_writes_mu_star(tmp_path):
    out = tmp_path / "m.h5"
    r = wb("sensitivity", SLIDING, "--method", "morris", "-n", 6, "--seed", 2, "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    with h5py.File(out) as f:
        g = f["sensitivity/stop"]
        assert set(g) >= {"mu_star", "sigma", "mu_star_conf"}
        mu_star = g["mu_star"][()]
    # the stopping distance grows with v0 and falls with mu: both effects are nonzero
    assert np.all(mu_star > 0)


def test_resume_of_a_finished_file_recomputes_nothing_but_the_indices(tmp_path):
    out = tmp_path / "sb.h5"
    args = ["sensitivity", SLIDING, "-n", 4, "--seed", 9, "-o", out, "-q"]
    assert wb(*args).returncode == 0
    before = _datasets(out)
    r = wb(*args, "--resume")
    assert r.returncode == 0, r.stderr
    after = _datasets(out)
    assert before.keys() == after.keys()
    for k in before:
        assert np.array_equal(np.asarray(before[k]), np.asarray(after[k])), k


def test_no_random_input_is_refused(tmp_path):
    with pytest.raises(WorkbenchError, match="nothing is random"):
        sensitivity_problem(load_scene(SCENES / "sliding_block.yaml"))
    ref = SceneRef(str(SCENES / "sliding_block.yaml"))
    assert ref.load().outputs[0]["name"] == "stop"


@pytest.mark.slow  # ~7 s
def test_du_impact_scene_and_its_closed_form_model_give_the_same_indices(tmp_path):
    # the same design through the PyBullet scene (first_contact event: each run's world is
    # rebuilt for the closest-point queries) and through Du's Appendix model: the scene's
    # distances are within 1.2 mm of the model's (~0.6 m; scenes/du_impact.py), which moves an
    # index by far less than 0.02, while the inputs' indices differ by 0.1 to 1
    from uncertainty.examples.du_impact import impact_distances

    out = tmp_path / "du.h5"
    r = wb(
        "sensitivity",
        SCENES / "du_impact.py",
        "--set",
        "random_inputs=true",
        "-n",
        16,
        "--seed",
        2013,
        "-o",
        out,
        "-q",
    )
    assert r.returncode == 0, r.stderr
    scene = load_scene(SCENES / "du_impact.py", {"random_inputs": True})
    model = model_sensitivity(
        lambda v: dict(
            zip(
                ("dA", "dB"),
                map(float, impact_distances(v["speed_A"], 1.0, v["restitution"], v["friction"])),
                strict=True,
            )
        ),
        scene,
        n=16,
        entropy=2013,
    )
    with h5py.File(out) as f:
        for name in ("dA", "dB"):
            for key in ("S1", "ST"):
                got = f[f"sensitivity/{name}/{key}"][()]
                assert np.all(np.abs(got - model.indices[name][key]) < 0.02), (name, key, got)
