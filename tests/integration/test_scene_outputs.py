"""Reductions of scene runs (workbench/analysis/outputs.py, declared in output_spec.py, numerics in
interpolation.py) against closed forms, and the du_impact scene (scenes/du_impact.py) against the
Appendix model of Du (2013).

Two kinds of reference: the continuous answer (free fall, Coulomb sliding, the Appendix), which
PyBullet's semi-implicit Euler step misses by O(dt), and the exact answer of the *discrete*
motion, which the records follow to roundoff: x_n = x0 + v0 t_n − a t_n²/2 − a dt t_n/2 under a
constant acceleration −a (the step updates the velocity, then moves with it). Interpolated
events must hit the discrete answer to roundoff — that is what makes them smooth in the inputs.
"""

from __future__ import annotations

import math
import re
import runpy

import numpy as np
import pytest

from tests.conftest import SCENES
from uncertainty.model import CachedModel, Model, estimate_noise
from workbench.analysis.interpolation import max_displacement
from workbench.analysis.output_spec import parse_outputs
from workbench.analysis.outputs import EVENT_NOISE, SceneOutputModel
from workbench.errors import EventNotFoundError, SceneError
from workbench.scene.model import scene_from_dict

G = 9.81
THETA = math.radians(20.0)
DT = 1e-3
#: Interpolated event times and positions of a free flight against the discrete motion: the
#: cubic through parabolic records is exact, so only roundoff remains (measured 5e-16 s).
ROUNDOFF = 1e-12

DU = SCENES / "du_impact.py"
DU_OUTPUTS = runpy.run_path(str(DU))["OUTPUTS"]
DU_INPUTS = ("vA0", "vB0", "e", "mu")
NOMINAL = np.array([10.0, 1.0, 0.6, 0.4])
#: PyBullet vs the Appendix model at dt = 1e-3. Both errors are the integrator's, first order in
#: dt (they halve with dt, tested below): |Δd_A| ≤ 1.1 mm and |Δd_B| ≤ 1.7 mm measured over
#: vA0 in [7.5, 16.5], vB0 in [0.09, 3.4], e in [0.42, 0.78], mu in [0.28, 0.52] (the ranges of
#: the paper's tables and 3 standard deviations of e, mu). 2.5 mm bounds them with a margin.
DU_TOL = 2.5e-3


def drop_scene(dt=DT):
    """A ball (r = 0.05 m) with its centre at ``height``, thrown horizontally at ``vx``."""
    return scene_from_dict(
        {
            "parameters": {"height": 1.0, "vx": 0.5},
            "settings": {
                "dt": dt,
                "duration": 0.8,
                "contact_erp": 0.0,
                "contact_processing_threshold": 0.0,
            },
            "bodies": [
                {"name": "ground", "shape": {"type": "plane"}, "fixed": True},
                {
                    "name": "ball",
                    "shape": {"type": "sphere", "radius": 0.05},
                    "mass": 1.0,
                    "position": [0, 0, "${height}"],
                    "linear_velocity": ["${vx}", 0, 0],
                },
            ],
        }
    )


def slide_scene():
    """A 1 kg box launched at ``v0`` on flat ground, friction ``mu`` (as scenes/sliding_block)."""
    return scene_from_dict(
        {
            "parameters": {"mu": 0.4, "v0": 2.0},
            "settings": {"dt": DT, "duration": 1.0},
            "bodies": [
                {
                    "name": "ground",
                    "shape": {"type": "box", "half_extents": [5, 5, 0.5]},
                    "position": [0, 0, -0.5],
                    "fixed": True,
                },
                {
                    "name": "block",
                    "shape": {"type": "box", "half_extents": [0.1, 0.1, 0.05]},
                    "mass": 1.0,
                    "position": [0, 0, 0.05],
                    "linear_velocity": ["${v0}", 0, 0],
                    "material": {"friction": "${mu}"},
                },
            ],
        }
    )


def appendix(vA0, vB0, e, mu, mA=2.0, mB=6.0, h=2.0, theta=THETA, g=G):
    """(d_A, d_B) by Eqs. (36)-(43) of Du (2013) with g = 9.81 and the flight angle
    α = arctan(v_Ay/|v_Ax|) + θ (the printed arctan(v_Ay/v_Ax) + θ is the wrong branch for the
    rebounding ball). Written out here as an independent reference."""
    c, s = math.cos(theta), math.sin(theta)
    vax = ((mA - e * mB) * vA0 * c - mB * (1 + e) * vB0) / (mA + mB)  # Eq. (36)
    vay = vA0 * s  # Eq. (37)
    va = math.hypot(vax, vay)  # Eq. (38)
    vb = vax + e * (vA0 * c + vB0)  # Eq. (39)
    d_b = vb**2 / (2 * g * (s + mu * c))  # Eq. (40)
    alpha = math.atan(vay / abs(vax)) + theta  # Eq. (42), |v_Ax|
    q = va * math.sin(alpha)
    t = (-q + math.sqrt(q * q + 2 * g * h)) / g  # Eq. (43)
    return np.array([va * math.cos(alpha) * t, d_b])  # Eq. (41)


# --------------------------------------------------------------------------------------------
# Simple scenes with known answers


def test_falling_ball_contact_time_and_landing_point():
    outputs = [
        {
            "name": "t_contact",
            "reduce": "event_time",
            "event": {"first_contact": ["ball", "ground"]},
        },
        {
            "name": "t_cross",
            "reduce": "event_time",
            "event": {"crossing": {"body": "ball", "component": "z", "level": 0.05}},
        },
        {
            "name": "x_land",
            "reduce": "position_at_event",
            "body": "ball",
            "component": "x",
            "event": {"first_contact": ["ball", "ground"]},
        },
        {"name": "z_03", "reduce": "value_at_time", "body": "ball", "component": "z", "time": 0.3},
    ]
    with SceneOutputModel(drop_scene(), ["height", "vx"], outputs) as m:
        assert isinstance(m, Model) and m.output_names == ("t_contact", "t_cross", "x_land", "z_03")
        for height in (1.0, 1.3, 0.7):
            t_c, t_x, x_land, z_03 = m.evaluate(np.array([height, 0.5]))
            fall = height - 0.05  # the centre is at the radius when the ball touches
            t_exact = math.sqrt(2 * fall / G)
            t_discrete = -DT / 2 + math.sqrt(DT**2 / 4 + 2 * fall / G)
            print(f"h = {height}: t* = {t_c:.12f} s, sqrt(2h/g) = {t_exact:.12f} s")
            # the integrator lands dt/2 early; the event between records adds no error
            assert abs(t_c - t_exact) < DT
            assert t_c == pytest.approx(t_discrete, abs=ROUNDOFF)
            assert t_x == pytest.approx(t_c, abs=ROUNDOFF)  # sphere-plane gap is z - r
            assert x_land == pytest.approx(0.5 * t_c, abs=ROUNDOFF)
            z_discrete = height - G * 0.3**2 / 2 - G * DT * 0.3 / 2
            assert z_03 == pytest.approx(z_discrete, abs=ROUNDOFF)


def test_event_time_is_smooth_in_the_drop_height():
    """Snapping to a record would make t* a staircase (steps of dt); interpolated, it is smooth
    to roundoff: the measured noise is far below the declared EVENT_NOISE."""
    out = [{"name": "t", "reduce": "event_time", "event": {"first_contact": ["ball", "ground"]}}]
    with SceneOutputModel(drop_scene(), ["height"], out) as m:
        noise = estimate_noise(m.evaluate, np.array([1.0]), np.array([1.0]), h=1e-4)
        assert noise[0] < EVENT_NOISE * 1e-2, noise


def test_sliding_block_max_displacement():
    out = [{"name": "d", "reduce": "max_displacement", "body": "block", "component": "x"}]
    with SceneOutputModel(slide_scene(), ["mu", "v0"], out) as m:
        for mu, v0 in ((0.4, 2.0), (0.3, 1.5), (0.6, 3.0)):
            (d,) = m.evaluate(np.array([mu, v0]))
            a = mu * G
            exact = v0**2 / (2 * a)
            discrete = (v0 - a * DT / 2) ** 2 / (2 * a)
            print(f"mu = {mu}, v0 = {v0}: d = {d:.6f} m, v0^2/(2 mu g) = {exact:.6f} m")
            # semi-implicit Euler slides short by a dt / v0 (0.2%): allow 1.5 times that
            assert abs(d / exact - 1) < 1.5 * a * DT / v0
            # PyBullet's friction at the first and last steps of the slide: measured 3-6e-6 m
            assert d == pytest.approx(discrete, abs=2e-5)
        # smooth in v0 although the stop moves from record to record
        noise = estimate_noise(m.evaluate, np.array([0.4, 2.0]), np.array([0.0, 1.0]), h=1e-4)
        assert noise[0] < EVENT_NOISE, noise


def test_max_displacement_ignores_creep_and_is_smooth():
    """Constant deceleration from v0, a stop, then creep (as PyBullet's resting contacts); the
    result is the discrete parabola's vertex for every v0, however the stop falls on records."""
    t = np.arange(0, 1.0 + DT / 2, DT)
    a = 4.0

    def history(v0):
        v = np.maximum(v0 - a * DT * np.arange(1, t.size), 0.0) + 4e-6  # creep after the stop
        return np.concatenate([[0.0], np.cumsum(v * DT)])

    vs = np.linspace(1.5, 1.5 + 20 * a * DT, 101)  # the stop crosses 20 records
    d = np.array([max_displacement(t, history(v)) for v in vs])
    # the sliding records (all but the creep) lie on the parabola of slope v0 - a dt/2
    vertex = np.array([(v + 4e-6 - a * DT / 2) ** 2 / (2 * a) for v in vs])
    np.testing.assert_allclose(d, vertex, rtol=0, atol=1e-9)  # the creep's share: 4e-6 × dt
    assert np.max(np.abs(np.diff(d, 3))) < 1e-12  # no steps as the stop crosses records
    with pytest.raises(ValueError, match="still increasing"):
        max_displacement(t, t)


# --------------------------------------------------------------------------------------------
# Du's impact scene


@pytest.fixture(scope="module")
def du_model():
    m = SceneOutputModel(DU, DU_INPUTS, DU_OUTPUTS)
    yield m
    m.close()


@pytest.mark.parametrize(
    "x",
    [
        (10.0, 1.0, 0.6, 0.4),  # nominal: the paper's measured (0.582, 0.708) m
        (12.0, 0.5, 0.7, 0.35),
        (8.0, 1.5, 0.5, 0.45),
        (16.5, 3.4, 0.6, 0.4),
        (10.0, 1.0, 0.42, 0.52),
    ],
)
def test_du_impact_matches_appendix(du_model, x):
    y = du_model.evaluate(np.array(x))
    ref = appendix(*x)
    print(f"{x}: PyBullet {y}, Appendix {ref}, diff {1e3 * (y - ref)} mm")
    assert du_model.output_names == ("dA", "dB")
    np.testing.assert_allclose(y, ref, rtol=0, atol=DU_TOL)


def test_du_impact_difference_is_first_order_in_dt(du_model):
    """Halving dt halves the difference from the Appendix model (ratio 0.50 measured for both
    outputs): it is the integrator's O(dt) error, not a modelling mismatch."""
    ref = appendix(*NOMINAL)
    coarse = du_model.evaluate(NOMINAL) - ref
    with SceneOutputModel(DU, DU_INPUTS, DU_OUTPUTS, dt=DT / 2) as fine_model:
        fine = fine_model.evaluate(NOMINAL) - ref
    ratio = fine / coarse
    print(f"dt = 1e-3: {1e3 * coarse} mm; dt = 5e-4: {1e3 * fine} mm")
    np.testing.assert_allclose(ratio, 0.5, atol=0.05)


@pytest.mark.slow  # ~2 s
def test_du_impact_noise_and_gradients(du_model):
    # measured noise (Moré-Wild) along each input stays below the declared level
    for d in np.eye(4):
        noise = estimate_noise(du_model.evaluate, NOMINAL, d, h=1e-6)
        assert np.all(noise < EVENT_NOISE), (d, noise)
    # finite-difference gradients with the declared noise match the Appendix model's to the
    # integrator's first-order error (measured ≤ 0.3% on the slopes; 1% allowed) ...
    J = CachedModel(du_model, typical=[1.0, 1.0, 0.1, 0.1]).jacobian(NOMINAL)
    h = 1e-6
    J_ref = np.column_stack(
        [(appendix(*(NOMINAL + h * e)) - appendix(*(NOMINAL - h * e))) / (2 * h) for e in np.eye(4)]
    )
    print("PyBullet Jacobian\n", J, "\nAppendix Jacobian\n", J_ref)
    coupled = np.zeros_like(J, dtype=bool)
    coupled[0, 3] = True
    np.testing.assert_allclose(J[~coupled], J_ref[~coupled], rtol=0.01)
    # ... except d(dA)/d(mu), 0 in the Appendix: PyBullet solves the impact together with one
    # step of B's friction on the incline (impulse mu g cos(theta) dt per unit mass), which
    # changes B's velocity during the impact by O(dt) and A's rebound with it. Measured 2.0e-3 m
    # per unit mu (8e-5 m over one standard deviation of mu); bounded by 5e-3.
    assert abs(J[0, 3]) < 5e-3


def test_du_impact_event_that_does_not_happen_names_output_and_event():
    with SceneOutputModel(DU, DU_INPUTS, DU_OUTPUTS[:1], duration=0.2) as m:
        with pytest.raises(EventNotFoundError, match=r"'dA'.*first_contact \[A, floor\]") as exc:
            m.evaluate(NOMINAL)
        assert exc.value.output == "dA"
    with SceneOutputModel(DU, DU_INPUTS, DU_OUTPUTS[1:], duration=0.2) as m:
        with pytest.raises(EventNotFoundError, match="'dB'.*still increasing"):
            m.evaluate(NOMINAL)


def test_output_specs_are_checked():
    bodies = ("floor", "A", "B")
    cases = [
        ({"name": "x", "reduce": "max_displacement", "body": "C", "component": "x"}, "no body 'C'"),
        ({"name": "x", "reduce": "event_tim"}, "expected one of"),
        (
            {"name": "x", "reduce": "event_time", "event": {"first_contact": ["A", "flor"]}},
            "x.event.first_contact[1]: no body 'flor'",
        ),
        (
            {"name": "x", "reduce": "max_displacement", "body": "B", "directon": [1, 0, 0]},
            "did you mean 'direction'",
        ),
        (
            {"name": "x", "reduce": "value_at_time", "body": "B", "component": "w", "time": 1},
            "x, y, z",
        ),
    ]
    for spec, message in cases:
        with pytest.raises(SceneError, match=re.escape(message)):
            parse_outputs([spec], bodies)
    with pytest.raises(SceneError, match="not a declared scene parameter"):
        SceneOutputModel(DU, ("vA0", "v_B0"), DU_OUTPUTS)
