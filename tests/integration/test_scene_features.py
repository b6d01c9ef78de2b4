"""Joints, springs, prescribed joint motion, drag from C_d, URDF bodies and observer kinematics,
each against a closed-form or independently computed answer."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from workbench import run_scene
from workbench.scene.model import scene_from_dict

G = 9.81


def _scene(bodies, duration=1.0, dt=1e-3, every=10, gravity=(0, 0, -G), **extra):
    return scene_from_dict(
        {
            "gravity": list(gravity),
            "settings": {
                "dt": dt,
                "duration": duration,
                "record_every": every,
                "solver_iterations": 100,
            },
            "bodies": bodies,
            **extra,
        }
    )


def _ball(name="bob", pos=(0.5, 0, 1.0), mass=1.0, **kw):
    return {
        "name": name,
        "shape": {"type": "sphere", "radius": 0.02},
        "mass": mass,
        "position": list(pos),
        **kw,
    }


def _world_joint(name, kind, child, anchor=(0, 0, 1), axis=(0, 0, 1)):
    """A ``kind`` joint between the world (parent) and ``child``, at ``anchor`` along ``axis``."""
    return {
        "name": name,
        "type": kind,
        "parent": "world",
        "child": child,
        "anchor": list(anchor),
        "axis": list(axis),
    }


def test_ball_joint_pendulum_small_angle_period():
    L, theta0 = 1.0, 0.05
    pos = (L * np.sin(theta0), 0, 2.0 - L * np.cos(theta0))
    # a point mass (tiny sphere) on a massless link: period 2 pi sqrt(L/g) at small amplitude
    scene = _scene(
        [_ball(pos=pos)],
        duration=4.0,
        dt=1e-3,
        every=1,
        joints=[
            {"name": "j", "type": "ball", "parent": "world", "child": "bob", "anchor": [0, 0, 2.0]}
        ],
    )
    traj = run_scene(scene)
    x = traj.position[:, 0, 0]
    crossings = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))
    times = traj.time[crossings] + x[crossings] / (x[crossings] - x[crossings + 1]) * 1e-3
    period = np.mean(np.diff(times))
    # small-amplitude correction: T ≈ T0 (1 + θ0²/16); sphere inertia adds (2/5 r²/L²) ≈ 1.6e-4
    T0 = 2 * np.pi * np.sqrt(L / G) * (1 + theta0**2 / 16)
    assert period == pytest.approx(T0, rel=2e-3)
    r = np.linalg.norm(traj.position[:, 0] - [0, 0, 2.0], axis=1)
    assert np.max(np.abs(r - L)) < 1e-3


def test_fixed_joint_welds_two_bodies():
    a = _ball("a", pos=(0, 0, 1), angular_velocity=[0, 0, 2.0])
    b = _ball("b", pos=(0.3, 0, 1), angular_velocity=[0, 0, 2.0], linear_velocity=[0, 0.6, 0])
    scene = _scene(
        [a, b],
        gravity=(0, 0, 0),
        joints=[
            {"name": "weld", "type": "fixed", "parent": "a", "child": "b", "anchor": [0.15, 0, 1]}
        ],
    )
    traj = run_scene(scene)
    d = np.linalg.norm(traj.position[:, 1] - traj.position[:, 0], axis=1)
    assert np.max(np.abs(d - 0.3)) < 1e-3
    assert np.max(np.abs(traj.position[:, :, 2] - 1.0)) < 1e-3


def test_prismatic_joint_slides_along_its_axis_under_gravity():
    axis = np.array([1.0, 0, -1.0]) / np.sqrt(2)  # a 45° incline, frictionless
    scene = _scene(
        [_ball(pos=(0, 0, 1))],
        duration=1.0,
        joints=[_world_joint("rail", "prismatic", "bob", axis=axis.tolist())],
    )
    traj = run_scene(scene)
    s = (traj.position[:, 0] - [0, 0, 1]) @ axis
    exact = 0.5 * G * np.sin(np.pi / 4) * traj.time**2
    off_axis = traj.position[:, 0] - [0, 0, 1] - np.outer(s, axis)
    assert np.max(np.abs(s - exact)) < 0.01 * exact[-1]
    assert np.max(np.linalg.norm(off_axis, axis=1)) < 1e-3


def test_prescribed_prismatic_joint_follows_table():
    t = np.linspace(0, 0.5, 11)
    u = 0.02 * np.sin(np.pi * t / 0.5) ** 2
    scene = _scene(
        [_ball(pos=(0, 0, 1), mass=5.0)],
        duration=0.6,
        dt=1e-4,
        every=10,
        joints=[_world_joint("rail", "prismatic", "bob")],
        prescribed=[
            {"joint": "rail", "time": t.tolist(), "values": u.tolist(), "interpolation": "cubic"}
        ],
    )
    traj = run_scene(scene)
    target = np.array([float(scene.prescribed[0].at(x)) for x in traj.time])
    err = np.abs(traj.position[:, 0, 2] - 1.0 - target)
    assert np.max(err) < 0.02 * 0.02  # 2% of the 2 cm stroke, against gravity


def test_prescribed_revolute_joint_turns_body():
    scene = _scene(
        [
            {
                "name": "plate",
                "shape": {"type": "box", "half_extents": [0.2, 0.1, 0.02]},
                "mass": 1.0,
                "position": [0, 0, 1],
            }
        ],
        duration=1.0,
        gravity=(0, 0, 0),
        joints=[_world_joint("hinge", "revolute", "plate")],
        prescribed=[{"joint": "hinge", "time": [0, 1], "values": [0, 1.0]}],
    )
    traj = run_scene(scene)
    yaw = Rotation.from_quat(traj.orientation[-1, 0]).as_rotvec()
    assert yaw == pytest.approx([0, 0, 1.0], abs=5e-3)


@pytest.mark.slow  # ~10 s
def test_torsional_spring_frequency():
    kr = 2.0
    body = {
        "name": "disk",
        "shape": {"type": "cylinder", "radius": 0.1, "length": 0.02},
        "mass": 1.0,
        "angular_velocity": [0, 0, 0.1],
    }
    J = 0.5 * 1.0 * 0.1**2
    scene = _scene(
        [body],
        duration=2.0,
        dt=1e-4,
        gravity=(0, 0, 0),
        springs=[
            {
                "name": "s",
                "body_a": "world",
                "body_b": "disk",
                "anchor": [0, 0, 0],
                "stiffness": [1e4] * 3,
                "rotational_stiffness": [kr] * 3,
            }
        ],
    )
    traj = run_scene(scene)
    angle = Rotation.from_quat(traj.orientation[:, 0]).as_rotvec()[:, 2]
    w = np.sqrt(kr / J)
    exact = 0.1 / w * np.sin(w * traj.time)
    assert np.max(np.abs(angle - exact)) < 0.01 * 0.1 / w


def test_drag_from_cd_and_area_equals_c():
    area, cd, rho, m = 0.01, 0.47, 1.225, 0.5
    c = rho * cd * area / (2 * m)
    a = _scene([_ball(mass=m, drag={"cd": cd, "area": area})], duration=0.5)
    b = _scene([_ball(mass=m, drag={"c": c})], duration=0.5)
    assert a.bodies[0].drag.coefficient(m) == pytest.approx(c, rel=1e-15)
    assert np.array_equal(run_scene(a).position, run_scene(b).position)


def test_urdf_body_from_pybullet_data():
    scene = _scene(
        [
            {
                "name": "cube",
                "shape": {"type": "urdf", "file": "cube_small.urdf"},
                "position": [0, 0, 1],
            }
        ],
        duration=0.3,
    )
    traj = run_scene(scene)
    z = traj.position[:, 0, 2]
    assert z[-1] == pytest.approx(1 - 0.5 * G * 0.3**2, abs=2e-3)
    assert traj.params["cube/mass"] > 0


def test_point_observers_are_consistent_with_finite_differences():
    body = {
        "name": "b",
        "shape": {"type": "box", "half_extents": [0.2, 0.1, 0.05]},
        "mass": 2.0,
        "com": [0.02, 0.0, 0.01],
        "angular_velocity": [0.3, 2.0, 0.5],
        "linear_velocity": [0.1, 0, 1.0],
    }
    pt = [0.2, 0.1, -0.05]
    scene = _scene(
        [body],
        duration=0.5,
        dt=1e-4,
        every=1,
        gravity=(0, 0, -G),
        observers=[
            {"name": "p", "quantity": "point_position", "body": "b", "point": pt},
            {"name": "v", "quantity": "point_velocity", "body": "b", "point": pt},
            {"name": "a", "quantity": "point_acceleration", "body": "b", "point": pt},
        ],
    )
    traj = run_scene(scene)
    p, v, a = traj.observers["p"], traj.observers["v"], traj.observers["a"]
    dt = 1e-4
    # semi-implicit Euler: x_{k+1} = x_k + dt v_{k+1}, so the backward difference of position
    # equals the recorded velocity to rotation-linearization error O(dt·|ω|²·r)
    assert np.max(np.abs((p[1:] - p[:-1]) / dt - v[1:])) < 2e-3
    assert np.max(np.abs((v[2:] - v[1:-1]) / dt - a[2:])) < 2e-2
    # free flight: the COM accelerates at g, the point adds centripetal/Euler terms
    assert np.allclose(traj.linear_velocity[-1, 0], [0.1, 0, 1.0 - G * 0.5], atol=1e-9)
