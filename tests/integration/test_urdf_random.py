"""Random URDF links in PyBullet (issue 22): the sampled mass, centre of mass and principal
moments of every random link are exactly what PyBullet holds; realizations at the nominal
values are the nominal run, bit for bit; ensemble files are bit-identical for any number of
workers; joint damping, friction, limits, motors, initial positions and per-link materials
reach PyBullet; the KUKA example scene runs.

The PyBullet values are read from the engine's own client (its private ``_p``, ``_client``,
``_uids``): what the engine built is the thing under test."""

from __future__ import annotations

import hashlib

import h5py
import numpy as np
import pytest
import yaml
from scipy.spatial.transform import Rotation

from tests.conftest import REPO, SCENES, run_workbench
from tests.integration.test_ensemble import assert_same_file
from workbench.ensemble.realization import nominal_realization, sample_realization
from workbench.ensemble.run import SceneRef, run_ensemble
from workbench.errors import SimulationError
from workbench.scene.inertia import principal_frame
from workbench.scene.loader import load_scene
from workbench.scene.model import scene_from_dict
from workbench.sim.engine import Engine
from workbench.sim.forward import run_scene
from workbench.store import TrajectoryStore
from workbench.store.sensitivity import read_design

URDF = REPO / "tests" / "data" / "double_pendulum_random.urdf"

LAWS = {
    "links": "all",
    "mass": {"dispersion": 0.3},
    "com": {"domain": "box", "size": [0.02, 0.03, 0.04]},
    "inertia": {"model": "sg0", "dispersion": 0.3},
}


def pendulum_data(uncertainty=LAWS, duration=0.5, **shape) -> dict:
    """The random double pendulum released 1 rad from the vertical (fixed pivot)."""
    joints = {"shoulder": {"initial_position": 1.0}}
    for name, settings in shape.pop("joints", {}).items():
        joints[name] = {**joints.get(name, {}), **settings}
    body = {
        "name": "arm",
        "fixed": True,
        "shape": {"type": "urdf", "file": str(URDF), "inertia": "file", "joints": joints, **shape},
    }
    if uncertainty is not None:
        body["uncertainty"] = uncertainty
    return {"settings": {"dt": 1e-3, "duration": duration, "record_every": 10}, "bodies": [body]}


def pendulum(uncertainty=LAWS, duration=0.5, **shape):
    return scene_from_dict(pendulum_data(uncertainty, duration, **shape), base_dir=str(REPO))


def link_info(engine: Engine, link: int) -> tuple:
    return engine._p.getDynamicsInfo(engine._uids[0], link, physicsClientId=engine._client)


def joint_info(engine: Engine, joint: int) -> tuple:
    return engine._p.getJointInfo(engine._uids[0], joint, physicsClientId=engine._client)


def joint_state(engine: Engine, joint: int) -> tuple:
    return engine._p.getJointState(engine._uids[0], joint, physicsClientId=engine._client)


def same_trajectory(a, b) -> bool:
    return all(
        np.asarray(getattr(a, f)).tobytes() == np.asarray(getattr(b, f)).tobytes()
        for f in ("time", "position", "orientation", "linear_velocity", "angular_velocity")
    )


# ------------------------------------------------------------------------------ inertials


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sampled_link_values_are_exactly_what_pybullet_holds(seed):
    scene = pendulum()
    real = sample_realization(scene, np.random.default_rng(seed))
    with Engine(scene, mass_overrides=real.mass_overrides) as engine:
        for link in scene.bodies[0].random_links:
            drawn = real.mass_overrides["arm"]["links"][link.name]
            mass, _, moments, com, q = link_info(engine, link.index)[:5]
            assert mass == drawn["mass"]
            assert np.array_equal(com, drawn["com"])
            expected, _ = principal_frame(drawn["inertia"])
            assert np.array_equal(moments, expected)
            R = Rotation.from_quat(q).as_matrix()  # the inertial frame PyBullet made of our rpy
            J = R @ np.diag(moments) @ R.T
            # rpy -> quaternion -> matrix in PyBullet and scipy: a few ulp of the largest entry
            tol = 8 * np.finfo(float).eps * np.abs(drawn["inertia"]).max()
            assert np.allclose(J, drawn["inertia"], rtol=0, atol=tol)


def test_a_link_pybullet_does_not_hold_as_sampled_is_refused(monkeypatch):
    """The engine checks getDynamicsInfo against the sampled values after every load (PyBullet
    keeps files by name across resetSimulation, so a copy under a name it has read would load
    stale masses: the engine loads its copies under fresh names with the file cache off). A
    copy that says otherwise than the sample is refused, naming the link."""
    import workbench.sim.engine as engine_module

    scene = pendulum()
    real = sample_realization(scene, np.random.default_rng(1))
    write = engine_module.urdf_with_inertials

    def heavier(path, inertials, scaling):
        m, com, J = inertials["upper"]
        return write(path, {**inertials, "upper": (m * 1.5, com, J)}, scaling)

    monkeypatch.setattr(engine_module, "urdf_with_inertials", heavier)
    with pytest.raises(SimulationError, match="arm: link 'upper': PyBullet holds"):
        Engine(scene, mass_overrides=real.mass_overrides)


# ------------------------------------------------------------------------------ collapse


def nominal_sampler(scene, entropy: int, i: int):
    """Every realization at the nominal values: the zero-dispersion limit (module level, so
    worker processes can unpickle it)."""
    return nominal_realization(scene)


def test_zero_dispersion_collapses_every_realization_to_the_nominal_run(tmp_path):
    out = tmp_path / "zero.h5"
    path = tmp_path / "pendulum.yaml"
    path.write_text(yaml.safe_dump(pendulum_data()))
    run_ensemble(SceneRef(str(path)), 3, out, entropy=5, sampler=nominal_sampler)
    alone = run_scene(pendulum())  # `workbench run`: no overrides at all
    with TrajectoryStore.open(out) as store:
        nominal = store.nominal().read(0)
        assert same_trajectory(nominal, alone)
        for i in range(3):
            assert same_trajectory(store.read(i), nominal)
        for link in ("upper", "lower"):
            assert (
                store.read_array(f"params/arm/{link}/mass").tolist()
                == [pendulum().body("arm").random_links[0 if link == "upper" else 1].props.mass] * 3
            )


def test_the_random_scene_at_nominal_values_is_the_deterministic_scene():
    """With only the upper link random (its file inertia diagonal, inertial origin unrotated),
    the rewritten file holds the file's own numbers: the run equals the scene without
    uncertainty bit for bit. The lower link's rotated tensor is diagonalised by PyBullet in the
    deterministic scene and by us in the random one: equal to rounding, which the 0.5 s double
    pendulum run amplifies to far less than a micrometre."""
    plain = run_scene(pendulum(None))
    upper = run_scene(pendulum({"links": {"upper": {"mass": {"dispersion": 0.2}}}}))
    assert same_trajectory(upper, plain)
    both = run_scene(pendulum(LAWS))
    assert np.abs(both.position - plain.position).max() < 1e-9  # m; rounding, amplified


# ------------------------------------------------------------------------------ ensembles


@pytest.mark.slow
def test_ensemble_files_are_bit_identical_for_one_and_two_workers(tmp_path):
    data = pendulum_data(duration=0.2)
    data["parameters"] = {"d": {"dist": "lognormal", "mean": 0.05, "std": 0.01}}
    data["bodies"][0]["shape"]["joints"]["elbow"] = {"damping": "${d}"}
    path = tmp_path / "pendulum.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    digests = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}.h5"
        r = run_workbench(
            "ensemble", path, "-n", 6, "--seed", 9, "-o", out, "-q", "--workers", workers
        )
        assert r.returncode == 0, r.stderr
        digests.append(hashlib.sha256(out.read_bytes()).hexdigest())
    assert digests[0] == digests[1]
    # resumable: realizations 3.. marked not done (as after a kill) are run again, the same
    partial = tmp_path / "partial.h5"
    partial.write_bytes((tmp_path / "w1.h5").read_bytes())
    with h5py.File(partial, "r+") as f:
        f["completed"][3:] = False
        f["params/arm/lower/mass"][3:] = np.nan  # so an equal file shows they ran again
    r = run_workbench("ensemble", path, "-n", 6, "--seed", 9, "-o", partial, "-q", "--resume")
    assert r.returncode == 0, r.stderr
    assert_same_file(partial, tmp_path / "w1.h5")
    with TrajectoryStore.open(tmp_path / "w1.h5") as store:
        masses = store.read_array("params/arm/lower/mass")
        assert len(set(masses.tolist())) == 6  # sampled, one per realization
        assert store.schema.param_shapes["arm/lower/inertia"] == (3, 3)
        assert store.schema.param_shapes["arm/lower/G"] == (3, 3)
    r = run_workbench("stats", tmp_path / "w1.h5")
    assert r.returncode == 0 and "arm/lower/mass" in r.stdout, r.stderr
    png = tmp_path / "m.png"
    r = run_workbench("plot", tmp_path / "w1.h5", "--param", "arm/upper/mass", "-o", png)
    assert r.returncode == 0 and png.stat().st_size > 0, r.stderr


def test_a_bad_link_name_is_one_line_and_exit_2(tmp_path):
    data = pendulum_data({"links": {"lowe": {"mass": {"dispersion": 0.1}}}})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    r = run_workbench("check", path)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert "uncertainty.links.lowe: unknown link 'lowe' (did you mean 'lower'?)" in r.stderr


@pytest.mark.slow  # ~5 s
def test_sensitivity_makes_links_groups_and_resume_checks_their_masses(tmp_path):
    data = pendulum_data(duration=0.05)
    data["observers"] = [{"name": "energy", "quantity": "kinetic_energy"}]
    path = tmp_path / "pendulum.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "s.h5"
    common = ["sensitivity", path, "--method", "morris", "--observer", "energy", "-o", out, "-q"]
    r = run_workbench(*common, "-n", 2, "--seed", 4, "--group-by", "body")
    assert r.returncode == 0, r.stderr
    x, attrs = read_design(out)
    assert list(attrs["inputs"]) == ["arm/upper", "arm/lower"]
    with TrajectoryStore.open(out) as store:
        masses = store.read_array("params/arm/lower/mass")
    cols = list(attrs["columns"])
    k = cols.index("arm/lower.mass")
    assert np.all(np.diff(masses[np.argsort(x[:, k], kind="stable")]) >= 0)  # its coordinate
    # --resume of an interrupted file compares the stored link masses with the design's
    with h5py.File(out, "r+") as f:
        del f["design"]
        del f["sensitivity"]
        f["params/arm/lower/mass"][0] *= 1.5
    r = run_workbench(*common, "-n", 2, "--seed", 4, "--group-by", "body", "--resume")
    assert r.returncode == 2 and "arm/lower/mass" in r.stderr, r.stderr


# ------------------------------------------------------------------------------ joints, links


def swing(scene, steps: int = 1500) -> np.ndarray:
    """The shoulder angle (rad) after each of ``steps`` steps of 1 ms."""
    with Engine(scene) as engine:
        q = []
        for k in range(steps):
            engine.step(k * 1e-3)
            q.append(joint_state(engine, 0)[0])
    return np.array(q)


def test_joints_are_free_unless_they_have_friction_damping_or_limits():
    """PyBullet's default velocity motors would hold every joint; the engine replaces them by
    a velocity motor of target 0 whose force is the joint's friction (the URDF's tiny one on
    the elbow here): released 1 rad from the vertical, the pendulum swings through to about
    -1 rad. A friction torque above gravity's holds it; a damping slows it; limits stop it
    (getJointInfo keeps the values loaded from the file, so the physics is checked)."""
    free = swing(pendulum(None))
    assert free.min() < -0.8
    held = swing(pendulum(None, joints={"shoulder": {"friction": 100.0}}), 200)
    assert np.abs(held - 1.0).max() < 1e-3  # 100 N m > the ~13 N m gravity torque
    damped = swing(pendulum(None, joints={"shoulder": {"damping": 3.0}}))
    assert damped.min() > -0.3
    limited = swing(pendulum(None, joints={"shoulder": {"lower": -0.4, "upper": 1.5}}))
    assert -0.4 - 0.02 < limited.min() < -0.3  # PyBullet's limits are soft by about 1 cm


def test_initial_positions_motors_and_link_materials_reach_pybullet():
    scene = pendulum(
        None,
        joints={
            "shoulder": {"initial_position": 0.7},
            "elbow": {
                "initial_position": -0.3,
                "control": {
                    "mode": "position",
                    "target": 0.2,
                    "max_force": 50.0,
                    "position_gain": 0.3,
                    "velocity_gain": 1.0,
                },
            },
        },
        links={"lower": {"material": {"friction": 0.35, "restitution": 0.2}}},
    )
    with Engine(scene) as engine:
        assert joint_state(engine, 0)[0] == 0.7 and joint_state(engine, 1)[0] == -0.3
        assert link_info(engine, 1)[1] == 0.35 and link_info(engine, 1)[5] == 0.2
        assert link_info(engine, 0)[1] == 1.0  # the body's material elsewhere
        assert link_info(engine, -1)[1] == 1.0  # (PyBullet put link materials here, measured)
        for k in range(2000):
            engine.step(k * 1e-3)
        assert joint_state(engine, 1)[0] == pytest.approx(0.2, abs=1e-3)  # held at its target


# ------------------------------------------------------------------------------ example


def test_kuka_example_scene_runs_with_random_link_masses():
    scene = load_scene(SCENES / "kuka_posture.yaml").with_settings(duration=0.2)
    (body,) = scene.uncertain_bodies
    assert len(body.random_links) == 7
    real = sample_realization(scene, np.random.default_rng(0))
    traj = run_scene(scene.with_parameters(real.values), mass_overrides=real.mass_overrides)
    assert traj.status == "ok"
    nominal = run_scene(scene)
    assert nominal.status == "ok"
    assert not same_trajectory(traj, nominal)


def _failing_sampler(scene, entropy, i):
    if i == 1:
        raise RuntimeError("a realization that fails")
    return nominal_sampler(scene, entropy, i)


def test_a_failed_realization_of_a_urdf_scene_is_recorded_and_the_ensemble_goes_on(tmp_path):
    """A failed realization is stored as an empty trajectory of every row (bodies and links)
    and joint, so the store takes it and the other realizations are kept."""
    out = tmp_path / "failing.h5"
    path = tmp_path / "pendulum.yaml"
    path.write_text(yaml.safe_dump(pendulum_data(duration=0.05)))
    result = run_ensemble(SceneRef(str(path)), 3, out, entropy=5, sampler=_failing_sampler)
    assert set(result.failed) == {1}
    with TrajectoryStore.open(out) as store:
        assert store.read(1).status == "error"
        assert "a realization that fails" in store.read(1).message
        assert [store.read(i).status for i in (0, 2)] == ["ok", "ok"]
        assert store.read(2).position.shape[1] == 3  # the body and its two links
