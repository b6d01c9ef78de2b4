"""Every link of a URDF body is tracked (issue 22): rows ``"<body>/<link>"`` after the scene's
bodies in ``/states``, the ``/links`` group saying which is which, the moving joints in
``/joints``; observers with ``link:``; the viewer's frames and the web page draw every link.

The reference is ``tests/data/double_pendulum_tracking.urdf``: two uniform rods (1.0 m, 1.0 kg
and 0.8 m, 0.5 kg) hanging from a fixed pivot on revolute joints about y, free (the engine
replaces PyBullet's default joint motors by friction-0 ones), no damping. Checked against

- a bare PyBullet script making the same calls (the same steps give the same bits),
- the pendulum's forward kinematics from the recorded joint angles and rates (analytic),
- conservation of energy (PyBullet's semi-implicit Euler: an error of first order in dt).
"""

from __future__ import annotations

import h5py
import numpy as np
import pybullet as pb
import pytest
from scipy.spatial.transform import Rotation

from tests.conftest import REPO
from workbench.scene.model import scene_from_dict
from workbench.sim.forward import run_scene
from workbench.store import describe, read_trajectory, write_trajectory

DATA = REPO / "tests" / "data"
URDF = DATA / "double_pendulum_tracking.urdf"

#: Rod lengths (m), masses (kg) and the pivot's height (m) of the URDF and the scene.
L1, L2, M1, M2, PIVOT_Z = 1.0, 0.8, 1.0, 0.5, 2.0
Q0 = (1.0, -0.5)  # initial joint angles, rad
G = 9.81

#: Forward kinematics from the recorded angles: sums and products of sines and cosines of
#: numbers below 10 rad, against PyBullet's own (Featherstone) link transforms: round-off.
FK_TOL = 1e-12


def pendulum(dt: float = 1e-3, duration: float = 2.0, record_every: int = 10, observers=()):
    return scene_from_dict(
        {
            "settings": {"dt": dt, "duration": duration, "record_every": record_every},
            "gravity": [0.0, 0.0, -G],
            "bodies": [
                {
                    "name": "pendulum",
                    "shape": {
                        "type": "urdf",
                        "file": URDF.name,
                        "inertia": "file",
                        "joints": {
                            "shoulder": {"initial_position": Q0[0]},
                            "elbow": {"initial_position": Q0[1]},
                        },
                    },
                    "position": [0.0, 0.0, PIVOT_Z],
                    "fixed": True,
                }
            ],
            "observers": list(observers),
        },
        base_dir=str(DATA),
    )


@pytest.fixture(scope="module")
def run():
    observers = [
        {
            "name": "tip",
            "quantity": "point_position",
            "body": "pendulum",
            "link": "lower",
            "point": [0.0, 0.0, -L2],
        },
        {"name": "upper_com", "quantity": "com_position", "body": "pendulum", "link": "upper"},
        {"name": "pivot", "quantity": "com_position", "body": "pendulum", "link": "pivot"},
        {"name": "lower_w", "quantity": "angular_velocity", "body": "pendulum", "link": "lower"},
        {"name": "lower_acc", "quantity": "com_acceleration", "body": "pendulum", "link": "lower"},
        {"name": "lower_ke", "quantity": "kinetic_energy", "body": "pendulum", "link": "lower"},
    ]
    scene = pendulum(observers=observers)
    return scene, run_scene(scene)


def test_rows_names_and_joints(run):
    scene, traj = run
    assert traj.body_names == ("pendulum", "pendulum/upper", "pendulum/lower")
    assert traj.link_info["pendulum/lower"] == {
        "body": "pendulum",
        "link": "lower",
        "index": 1,
        "parent": "pendulum/upper",
        "joint": "elbow",
        "joint_type": "continuous",
    }
    assert traj.link_info["pendulum/upper"]["parent"] == "pendulum"
    assert list(traj.joint_info) == ["pendulum/shoulder", "pendulum/elbow"]
    assert traj.joint_position.shape == traj.joint_velocity.shape == (traj.n_times, 2)
    np.testing.assert_array_equal(traj.joint_position[0], Q0)
    assert np.ptp(traj.joint_position[:, 0]) > 1.0  # it swings


def test_link_rows_equal_a_bare_pybullet_run(run):
    """The same calls as the engine's in a bare script: PyBullet's getLinkState of the same steps,
    bit for bit (COM position, link frame orientation, COM velocity, angular velocity). The
    rods' inertial frames are not turned in their link frames, so the link frame orientation is
    ``linkWorldOrientation`` (double precision); PyBullet's ``worldLinkFrameOrientation`` is the
    same rounded to single precision (2.2e-7 measured; 2^-23 relative is float32's epsilon)."""
    _, traj = run
    c = pb.connect(pb.DIRECT)
    try:
        pb.setTimeStep(1e-3, physicsClientId=c)
        pb.setGravity(0, 0, -G, physicsClientId=c)
        pb.setPhysicsEngineParameter(
            numSolverIterations=50, deterministicOverlappingPairs=1, physicsClientId=c
        )
        u = pb.loadURDF(
            str(URDF),
            [0, 0, PIVOT_Z],
            useFixedBase=True,
            flags=pb.URDF_USE_INERTIA_FROM_FILE,
            physicsClientId=c,
        )
        for link in (-1, 0, 1):  # PyBullet's default damping of 0.04 is off in the workbench
            pb.changeDynamics(u, link, linearDamping=0, angularDamping=0, physicsClientId=c)
        for j, q in enumerate(Q0):
            pb.resetJointState(u, j, q, 0.0, physicsClientId=c)
        pb.setJointMotorControlArray(
            u, [0, 1], pb.VELOCITY_CONTROL, forces=[0, 0], physicsClientId=c
        )
        rows, joints = [], []
        for step in range(2001):
            if step % 10 == 0:
                states = pb.getLinkStates(
                    u, [0, 1], computeLinkVelocity=1, computeForwardKinematics=1, physicsClientId=c
                )
                rows.append([[*s[0], *s[1], *s[6], *s[7], *s[5]] for s in states])
                joints.append([s[:2] for s in pb.getJointStates(u, [0, 1], physicsClientId=c)])
            if step < 2000:
                pb.stepSimulation(physicsClientId=c)
    finally:
        pb.disconnect(c)
    rows, joints = np.array(rows), np.array(joints)
    np.testing.assert_array_equal(traj.position[:, 1:], rows[..., 0:3])
    np.testing.assert_array_equal(traj.orientation[:, 1:], rows[..., 3:7])
    np.testing.assert_allclose(traj.orientation[:, 1:], rows[..., 13:17], rtol=0, atol=2.4e-7)
    np.testing.assert_array_equal(traj.linear_velocity[:, 1:], rows[..., 7:10])
    np.testing.assert_array_equal(traj.angular_velocity[:, 1:], rows[..., 10:13])
    np.testing.assert_array_equal(traj.joint_position, joints[..., 0])
    np.testing.assert_array_equal(traj.joint_velocity, joints[..., 1])


def _kinematics(q: np.ndarray, qd: np.ndarray):
    """Analytic link COM positions and velocities, link orientations and angular velocities of
    the pendulum at joint angles ``q`` and rates ``qd``, shape (nt, 2) each. A turn by a about y
    takes the rod direction (0, 0, -1) to (-sin a, 0, -cos a)."""
    a1, a2 = q[:, 0], q[:, 0] + q[:, 1]
    w1, w2 = qd[:, 0], qd[:, 0] + qd[:, 1]

    def rod(a, length):
        return np.stack([-length * np.sin(a), 0 * a, -length * np.cos(a)], axis=1)

    def rate(a, w, length):
        return np.stack([-length * np.cos(a) * w, 0 * a, length * np.sin(a) * w], axis=1)

    pivot = np.array([0.0, 0.0, PIVOT_Z])
    x1 = pivot + rod(a1, L1 / 2)
    x2 = pivot + rod(a1, L1) + rod(a2, L2 / 2)
    v1 = rate(a1, w1, L1 / 2)
    v2 = rate(a1, w1, L1) + rate(a2, w2, L2 / 2)
    quat = [Rotation.from_rotvec(np.outer(a, [0.0, 1.0, 0.0])).as_quat() for a in (a1, a2)]
    omega = [np.outer(w, [0.0, 1.0, 0.0]) for w in (w1, w2)]
    return np.stack([x1, x2], 1), np.stack([v1, v2], 1), np.stack(quat, 1), np.stack(omega, 1)


def test_link_rows_follow_the_recorded_joints(run):
    _, traj = run
    x, v, quat, omega = _kinematics(traj.joint_position, traj.joint_velocity)
    np.testing.assert_allclose(traj.position[:, 1:], x, rtol=0, atol=FK_TOL)
    np.testing.assert_allclose(traj.linear_velocity[:, 1:], v, rtol=0, atol=FK_TOL * 10)
    same = np.sign(np.sum(traj.orientation[:, 1:] * quat, axis=-1, keepdims=True))  # q ~ -q
    np.testing.assert_allclose(traj.orientation[:, 1:], same * quat, rtol=0, atol=FK_TOL)
    np.testing.assert_allclose(traj.angular_velocity[:, 1:], omega, rtol=0, atol=FK_TOL)
    # the base (fixed) stays at the pivot, its link frame unturned
    np.testing.assert_allclose(traj.position[:, 0], [[0, 0, PIVOT_Z]] * traj.n_times, atol=0)


def _energy(traj) -> np.ndarray:
    """Kinetic (the run's diagnostic) plus potential energy of the two rods, J, shape (nt,)."""
    z = traj.position[:, 1:, 2]
    return traj.diagnostics["kinetic_energy"] + G * (z @ np.array([M1, M2]))


def test_kinetic_energy_counts_the_links(run):
    """The diagnostic sums the links' ½ m v² + ½ ωᵀ R J Rᵀ ω with the URDF's inertias."""
    _, traj = run
    ke = np.zeros(traj.n_times)
    for k, (m, length) in enumerate(((M1, L1), (M2, L2))):
        J = np.diag([m * length**2 / 12, m * length**2 / 12, 1e-4])
        R = Rotation.from_quat(traj.orientation[:, 1 + k]).as_matrix()
        w = traj.angular_velocity[:, 1 + k]
        v = traj.linear_velocity[:, 1 + k]
        ke += 0.5 * m * np.sum(v * v, 1) + 0.5 * np.einsum("ti,tij,jk,tlk,tl->t", w, R, J, R, w)
    # sums of a few products of numbers below 10: round-off
    np.testing.assert_allclose(traj.diagnostics["kinetic_energy"], ke, rtol=1e-12, atol=1e-12)


def test_energy_is_conserved_to_first_order_in_dt():
    """No damping, no friction: the energy error of PyBullet's semi-implicit Euler is of first
    order in dt. Measured max |E - E0| over 2 s: 0.0486, 0.0243, 0.0121, 0.0061 J at dt = 2e-3,
    1e-3, 5e-4, 2.5e-4 s (E0 = 22.4 J): halving dt halves it (ratio within 10% of 2), and it
    stays within 25 J/s × dt (the dt = 1e-3 measurement, 3% margin)."""
    errors = []
    for dt in (1e-3, 5e-4):
        traj = run_scene(pendulum(dt=dt, record_every=round(0.01 / dt)))
        energy = _energy(traj)
        errors.append(np.max(np.abs(energy - energy[0])))
        assert errors[-1] <= 25.0 * dt, (dt, errors[-1])
    assert 1.8 <= errors[0] / errors[1] <= 2.2, errors


def test_observers_with_a_link(run):
    _, traj = run
    x, _, _, omega = _kinematics(traj.joint_position, traj.joint_velocity)
    a1, a2 = traj.joint_position[:, 0], traj.joint_position.sum(1)
    tip = np.stack(
        [-L1 * np.sin(a1) - L2 * np.sin(a2), 0 * a1, PIVOT_Z - L1 * np.cos(a1) - L2 * np.cos(a2)], 1
    )
    np.testing.assert_allclose(traj.observers["tip"], tip, rtol=0, atol=FK_TOL)
    np.testing.assert_array_equal(traj.observers["upper_com"], traj.position[:, 1])
    np.testing.assert_array_equal(traj.observers["pivot"], traj.position[:, 0])  # the base link
    np.testing.assert_array_equal(traj.observers["lower_w"], traj.angular_velocity[:, 2])
    dv = (traj.linear_velocity[1:, 2] - traj.linear_velocity[:-1, 2]) / 1e-3
    assert traj.observers["lower_acc"].shape == (traj.n_times, 3)
    assert np.all(np.isfinite(traj.observers["lower_acc"]))
    # the acceleration of the last step of a record is the velocity change over 10 steps / 10
    # to first order: the mean rate over the record's 10 steps, within their change
    mean_rate = dv / 10
    assert np.median(np.abs(traj.observers["lower_acc"][1:] - mean_rate)) < np.median(
        np.abs(mean_rate)
    )
    assert traj.observer_info["tip"]["body"] == "pendulum/lower"
    assert traj.observer_info["pivot"]["body"] == "pendulum"
    ke = traj.observers["lower_ke"][:, 0]
    assert np.all(ke <= traj.diagnostics["kinetic_energy"] + 1e-12) and ke.max() > 0


def test_observer_link_is_checked():
    from workbench.errors import SceneError

    with pytest.raises(
        SceneError,
        match=r"observers\[0\]\.link: body 'pendulum' has no link "
        r"'lowr'; expected one of its links: pivot, upper, lower \(did you mean "
        r"'lower'\?\)",
    ):
        pendulum(
            observers=[
                {"name": "o", "quantity": "com_position", "body": "pendulum", "link": "lowr"}
            ]
        )
    with pytest.raises(SceneError, match="'link' needs the 'body'"):
        pendulum(observers=[{"name": "o", "quantity": "kinetic_energy", "link": "lower"}])
    with pytest.raises(SceneError, match="contact_count.*no 'link'"):
        pendulum(
            observers=[
                {"name": "o", "quantity": "contact_count", "body": "pendulum", "link": "lower"}
            ]
        )


def test_store_round_trip_and_layout(run, tmp_path):
    _, traj = run
    path = tmp_path / "p.h5"
    write_trajectory(path, traj)
    back = read_trajectory(path)
    assert back.body_names == traj.body_names and back.link_info == traj.link_info
    assert back.joint_info == traj.joint_info
    for name in ("position", "orientation", "linear_velocity", "angular_velocity"):
        np.testing.assert_array_equal(getattr(back, name), getattr(traj, name))
    np.testing.assert_array_equal(back.joint_position, traj.joint_position)
    np.testing.assert_array_equal(back.joint_velocity, traj.joint_velocity)
    with h5py.File(path) as f:
        assert [s.decode() for s in f["links/name"][()]] == ["pendulum/upper", "pendulum/lower"]
        assert [s.decode() for s in f["links/parent"][()]] == ["pendulum", "pendulum/upper"]
        assert list(f["links/index"][()]) == [0, 1]
        pos = f["joints/position"]
        assert pos.shape == (1, traj.n_times, 2) and pos.attrs["units"] == "rad"
        assert list(pos.attrs["dims"]) == ["realization", "time", "joint"]
        assert f["joints/velocity"].attrs["units"] == "rad/s"
        assert [s.decode() for s in f["joint_names"][()]] == list(traj.joint_info)
        for name in ("links/name", "links/body", "links/index", "joint_names"):
            assert {"units", "description", "dims"} <= set(f[name].attrs)
    info = describe(path)
    assert list(info["links"]) == ["pendulum/upper", "pendulum/lower"]
    assert info["joints"]["pendulum/elbow"]["link"] == "pendulum/lower"


def test_r2d2_runs_with_every_link_in_the_file(tmp_path):
    """PyBullet's r2d2: 15 links besides the base, 8 moving joints (wheels, gripper, head)."""
    scene = scene_from_dict(
        {
            "settings": {"dt": 1 / 240, "duration": 0.25, "record_every": 6},
            "bodies": [
                {"name": "ground", "shape": {"type": "plane"}, "fixed": True},
                {
                    "name": "robot",
                    "shape": {"type": "urdf", "file": "r2d2.urdf"},
                    "position": [0.0, 0.0, 0.6],
                },
            ],
        }
    )
    traj = run_scene(scene)
    assert traj.status == "ok"
    links = [name for name in traj.body_names if name.startswith("robot/")]
    assert len(links) == 15 and "robot/left_gripper" in links and "robot/head" in links
    assert len(traj.joint_info) == 8
    assert traj.joint_info["robot/gripper_extension"] == {
        "link": "robot/gripper_pole",
        "type": "prismatic",
        "unit": "m",
    }
    assert np.all(np.isfinite(traj.position)) and np.all(np.isfinite(traj.joint_position))
    # links move with the falling robot
    head = traj.body_index("robot/head")
    assert traj.position[-1, head, 2] < traj.position[0, head, 2] - 0.01
    path = tmp_path / "r2d2.h5"
    write_trajectory(path, traj)
    with h5py.File(path) as f:
        assert f["states/position"].shape == (1, traj.n_times, 17, 3)
        assert len(f["links/name"]) == 15 and f["joints/position"].attrs["units"] == ""
        assert list(f["joints/position"].attrs["joint_units"]).count("m") == 1


def test_scenes_without_links_write_no_link_datasets(tmp_path):
    scene = scene_from_dict(
        {
            "settings": {"duration": 0.05},
            "bodies": [
                {
                    "name": "ball",
                    "shape": {"type": "sphere", "radius": 0.1},
                    "mass": 1.0,
                    "position": [0, 0, 1],
                }
            ],
            "observers": [{"name": "z", "quantity": "com_position", "body": "ball"}],
        }
    )
    assert scene.links == () and scene.tracked_names == ("ball",)
    traj = run_scene(scene)
    assert traj.link_info == {} and traj.joint_position is None
    path = tmp_path / "b.h5"
    from workbench.scene.loader import scene_to_json

    text = scene_to_json(scene)
    assert '"link"' not in text  # the scene stored is the one stored before links were tracked
    write_trajectory(path, traj, scene_json=text)
    with h5py.File(path) as f:
        assert "links" not in f and "joints" not in f and "joint_names" not in f


def test_frames_show_the_links_where_they_are(run, tmp_path):
    """Headless frames place the links by the recorded joint positions: the red (upper) and blue
    (lower) rods' pixels centre where the camera projects their recorded centres of mass."""
    from workbench.replay.viewer import frame_camera, render_frames

    scene, traj = run
    width, height = 320, 240
    camera = frame_camera(scene, [traj], width / height)
    paths = render_frames(scene, traj, tmp_path / "f", width=width, height=height, fps=2.0)
    assert len(paths) == 5  # 0, 0.5, ..., 2 s
    from PIL import Image

    for k, path in enumerate(paths):
        image = np.asarray(Image.open(path).convert("RGB")).astype(float)
        i = int(np.argmin(np.abs(traj.time - 0.5 * k)))
        for row, colour in ((1, (0.9, 0.1, 0.1)), (2, (0.1, 0.3, 0.9))):
            ref = np.array(colour) * 255
            # shaded faces: same hue; pixels whose colour is within 0.35 of the rod's direction
            rgb = image / np.maximum(np.linalg.norm(image, axis=-1, keepdims=True), 1)
            near = np.linalg.norm(rgb - ref / np.linalg.norm(ref), axis=-1) < 0.15
            ys, xs = np.nonzero(near)
            assert len(xs) > 20, (k, row)
            xy = camera.project(traj.position[i, row][None], width / height)[0, :2]
            pixel = np.array([(xy[0] + 1) / 2 * width, (1 - xy[1]) / 2 * height])
            # a rod is a thin line of pixels: its centroid is its middle, the projected centre
            # of mass up to perspective (a few pixels at this size)
            assert np.linalg.norm([xs.mean(), ys.mean()] - pixel) < 0.03 * width, (k, row)


@pytest.mark.slow  # starts Chromium: about 15 s
def test_web_page_draws_every_link_where_pybullet_does(run, tmp_path):
    """The replay page draws both rods (each link at its recorded pose) where PyBullet's frame,
    placed by the recorded joints, draws them: the centroids of the red and the blue pixels."""
    from tests.integration import test_web_replay as web

    if not web.Path(web.CHROMIUM).exists():
        pytest.skip(f"no Chromium at {web.CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    from workbench.replay.camera import Camera
    from workbench.replay.web import write_replay_page
    from workbench.replay.web.page import page_data
    from workbench.sim.engine import Engine
    from workbench.sim.state import State

    scene, traj = run
    camera = Camera(target=(0.5, 0.0, 1.2), distance=3.5, yaw=0.0, pitch=-10.0)
    data = page_data(scene, {"run": traj}, camera=camera)
    assert len(data["worlds"][0]["bodies"]) == 3  # the pivot and both rods
    path = write_replay_page(tmp_path / "p.html", scene, {"run": traj}, camera=camera)
    i = int(np.argmin(np.abs(traj.time - 0.75)))
    engine = Engine(scene, visual=True)
    try:
        zeros = np.zeros_like(traj.position[i])
        state = State(traj.position[i], traj.orientation[i], zeros, zeros)
        engine.set_state(state, traj.joint_position[i])
        view = engine.camera(
            camera.target,
            camera.distance,
            camera.yaw,
            camera.pitch,
            camera.fov,
            web.WIDTH / web.HEIGHT,
        )
        frame = engine.render(view, web.WIDTH, web.HEIGHT)
    finally:
        engine.close()
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=web.CHROMIUM, args=web.CHROMIUM_ARGS)
        try:
            page = web.Page(browser, path, "paused&ui=0")
            shot = page.shot(float(traj.time[i]))
            web.check_clean(page)
            page.close()
        finally:
            browser.close()
    for colour in ((0.9, 0.1, 0.1), (0.1, 0.3, 0.9)):
        drawn, ref = web.centroid(shot, colour), web.centroid(frame, colour)
        assert np.linalg.norm(drawn - ref) <= web.PLACEMENT_TOL * web.WIDTH, (colour, drawn, ref)


@pytest.mark.slow  # ~1.4 s: here to keep the fast tier short
def test_command_line_inspect_plot_and_stats_of_links(tmp_path, capsys):
    """``inspect`` lists the links and joints; ``plot --body``/``--joint`` draw a link's state
    and a joint, of a run and, as a band, of an ensemble; ``stats`` summarises link observers."""
    from workbench.cli.main import main

    scene_file = tmp_path / "p.yaml"
    scene_file.write_text(
        "settings: {dt: 0.001, duration: 0.5, record_every: 10}\n"
        "bodies:\n"
        "  - name: pendulum\n"
        f"    shape: {{type: urdf, file: {URDF}, inertia: file,\n"
        "            joints: {shoulder: {initial_position: 1.0}}}\n"
        "    position: [0, 0, 2]\n"
        "    fixed: true\n"
        "observers:\n"
        "  - {name: elbow, quantity: com_position, body: pendulum, link: lower}\n"
    )
    run_file, ens = tmp_path / "p.h5", tmp_path / "e.h5"
    assert main(["run", str(scene_file), "-o", str(run_file), "-q"]) == 0
    assert main(["inspect", str(run_file)]) == 0
    out = capsys.readouterr().out
    assert "links (2, rows after the bodies" in out
    assert "pendulum/lower: pendulum/upper, elbow, continuous" in out
    assert "pendulum/elbow: moves pendulum/lower, continuous, rad" in out
    png = tmp_path / "lower.png"
    assert main(["plot", str(run_file), "--body", "pendulum/lower", "-o", str(png)]) == 0
    assert png.stat().st_size > 0
    png = tmp_path / "elbow.png"
    args = ["plot", str(run_file), "--joint", "pendulum/elbow", "--field", "velocity"]
    assert main([*args, "-o", str(png)]) == 0 and png.stat().st_size > 0
    capsys.readouterr()
    assert main(["plot", str(run_file), "--body", "pendulum/lowr"]) == 2
    assert "no body 'pendulum/lowr'" in capsys.readouterr().err
    assert main(["ensemble", str(scene_file), "-n", "3", "--seed", "5", "-o", str(ens), "-q"]) == 0
    png = tmp_path / "band.png"
    assert main(["plot", str(ens), "--body", "pendulum/lower", "-o", str(png)]) == 0
    assert png.stat().st_size > 0
    capsys.readouterr()
    assert main(["stats", str(ens)]) == 0
    assert "elbow.x" in capsys.readouterr().out
