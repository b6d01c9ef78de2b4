"""Batou & Soize (2012) §4.1: five rigid bodies driven by imposed displacements through stiff 6-DOF
spring-dampers; Rb5 (3000 kg) uncertain as in the four cases of §4.3.

Run a case: ``workbench ensemble scenes/batou_soize_5body.py --set case=4 -n 500``
(case 0: nominal, nothing random; 1: random mass; 2: random inertia; 3: random centre of mass;
4: all three). The paper gives the imposed displacements u1(t), u2(t) only as plots (Figs. 2-3,
not in the text); here they are smooth pulses of centimetre amplitude on [0, 0.03] s,
u(t) = A sin⁴(πt/T) (``u1_amplitude``, ``u2_amplitude``, ``pulse``), whose displacement, velocity
and acceleration all start and end at zero (a raised cosine would jump in acceleration at t = 0
and put a step input into every response).

Modelling (docs/batou_soize.md gives the reasoning and the measurements):

- Rb1 and Rb2 move along x3 with the imposed displacements (prismatic ground joints).
- The paper connects Rb1-Rb3 and Rb2-Rb4 by 6-DOF spring-dampers (1e9 N/m, 1.6e8 N m/rad,
  2.4e6 N s/m, 1.3e6 N m s/rad, prestress (0, 0, -14715) N) and Rb3, Rb4 to Rb5 by revolute
  joints about x2. Built literally, the 1.26 kg cylinders Rb3, Rb4 carry 1e9-stiff loads
  through PyBullet's iterative constraint solver to a 3000 kg body and the run diverges within
  2 ms even at dt = 1e-6 (and explicit damping of a 1.26 kg body at 2.4e6 N s/m needs
  dt < 1e-6). So the light links are eliminated quasi-statically, exact in the limit of their
  mass going to zero: Rb3 is held parallel to Rb1 by the spring's rotational stiffness about
  x2 while Rb5 pivots on it, so the spring acts between Rb1 and Rb5 at the pin, with no
  stiffness about x2 (the revolute axis); Rb2 is free along x1 (the paper), so the Rb2 spring
  transmits no x1 force. Rb3 and Rb4 stay in the model welded to Rb5 at the pins (their 1.26 kg
  each joins Rb5's assembly; they are drawn by the viewer).
- Rb5 is an abstract body (no contact): a thin plate for the viewer, centre of mass
  (0.6, 0, 0.5), J = diag(1200, 5000, 6000) kg m² (Eq. 52).
- The random centre of mass lives in a box of size (0.5, 0.2, 0.02). The text says it is
  centred at (0, 0, 0.55), but then the mean (0.6, 0, 0.5) lies outside it; the published
  lambda_r = (-2.13, 0.77, -7.7) fits a box centred near (0.55, 0, 0.5), which is used here
  (``com_center``).
"""

import numpy as np

#: Rb5 nominal values (§4.1, Eq. 52)
M5 = 3000.0
J5 = [[1200.0, 0.0, 0.0], [0.0, 5000.0, 0.0], [0.0, 0.0, 6000.0]]
#: Upper bound of Z5 for the bounded inertia ensemble (§4.3 Case 2). The paper prints
#: [[9.61, 0, 0], [0, 1.0, 0.0625], [0, 0, 4.98]], which is not symmetric; Eq. (33) for Rb5's
#: extent (x in [-2.5, 2.5], y in [-1, 1], z in [0.25, 0.75]) about its centre of mass gives
#: diag(9.61, 1, 0.0625), which reproduces the paper's identified C_G = 0.67, mu and delta_G.
Z5_MAX = [[9.61, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0625]]


def _pulse(amplitude, duration, n=121):
    """u(t) = A sin⁴(πt/T) tabulated at n points (cubic interpolation in the scene)."""
    t = np.linspace(0.0, duration, n)
    u = amplitude * np.sin(np.pi * t / duration) ** 4
    return t.tolist(), u.tolist()


def _cylinder(name, position):
    return {
        "name": name,
        "shape": {"type": "cylinder", "radius": 0.02, "length": 0.2},
        "density": 5013.0,
        "position": list(position),
        "collision": False,
    }


def _joint(name, kind, parent, child, anchor, axis=None):
    joint = {"name": name, "type": kind, "parent": parent, "child": child, "anchor": anchor}
    if axis is not None:
        joint["axis"] = axis
    return joint


def build(
    case=0,
    u1_amplitude=0.01,
    u2_amplitude=-0.005,
    pulse=0.03,
    duration=0.03,
    dt=1.0e-5,
    record_every=10,
    com_center=(0.55, 0.0, 0.5),
):
    """Batou & Soize (2012) 5-body system; ``case`` 0-4 selects what is random in Rb5."""
    if case not in (0, 1, 2, 3, 4):
        raise ValueError(f"case must be 0 (nominal) or 1-4 (§4.3), got {case!r}")
    t1, u1 = _pulse(u1_amplitude, pulse)
    t2, u2 = _pulse(u2_amplitude, pulse)
    # Rb5's body frame: origin at (0, 0, 0.5), axes of the world; its centre of mass at
    # (0.6, 0, 0.5) is the offset (0.6, 0, 0).
    origin5 = np.array([0.0, 0.0, 0.5])
    uncertainty = {}
    if case in (1, 4):
        uncertainty["mass"] = {"dispersion": 0.5}
    if case in (2, 4):
        uncertainty["inertia"] = {
            "model": "bounded",
            "lambda_l": -5.0,
            "lambda_u": -5.0,
            "z_max": Z5_MAX,
        }
    if case in (3, 4):
        uncertainty["com"] = {
            "domain": "box",
            "center": (np.asarray(com_center) - origin5).tolist(),
            "size": [0.5, 0.2, 0.02],
        }
    rb5 = {
        "name": "rb5",
        "shape": {"type": "box", "half_extents": [2.7, 1.1, 0.02]},
        "mass": M5,
        "com": [0.6, 0.0, 0.0],
        "inertia": J5,
        "position": origin5.tolist(),
        "collision": False,
        "uncertainty": uncertainty or None,
    }
    spring = {
        "stiffness": [1.0e9, 1.0e9, 1.0e9],
        "damping": [2.4e6, 2.4e6, 2.4e6],
        # no stiffness about x2: Rb5 pivots freely on the revolute joint there
        "rotational_stiffness": [1.6e8, 0.0, 1.6e8],
        "rotational_damping": [1.3e6, 0.0, 1.3e6],
        "preload": [0.0, 0.0, -14715.0],  # on the lower cylinder; Rb5 is pushed up
    }
    # Rb2 slides freely along x1: its spring carries no x1 force
    left = {**spring, "stiffness": [0.0, 1.0e9, 1.0e9], "damping": [0.0, 2.4e6, 2.4e6]}
    return {
        "description": f"Batou & Soize 2012 five-body system, case {case}",
        "settings": {
            "dt": dt,
            "duration": duration,
            "record_every": record_every,
            "solver_iterations": 100,
        },
        "gravity": [0.0, 0.0, -9.81],
        "bodies": [
            _cylinder("rb1", (2.5, 0, 0)),
            _cylinder("rb2", (-2.5, 0, 0)),
            _cylinder("rb3", (2.5, 0, 0.3)),
            _cylinder("rb4", (-2.5, 0, 0.3)),
            rb5,
        ],
        "joints": [
            _joint("ground_rb1", "prismatic", "world", "rb1", [2.5, 0, 0], axis=[0, 0, 1]),
            _joint("ground_rb2", "prismatic", "world", "rb2", [-2.5, 0, 0], axis=[0, 0, 1]),
            _joint("rb5_rb3", "fixed", "rb5", "rb3", [2.5, 0, 0.5]),
            _joint("rb5_rb4", "fixed", "rb5", "rb4", [-2.5, 0, 0.5]),
        ],
        "springs": [
            {
                "name": "rb1_rb3",
                "body_a": "rb5",
                "body_b": "rb1",
                "anchor": [2.5, 0, 0.5],
                **spring,
            },
            {"name": "rb2_rb4", "body_a": "rb5", "body_b": "rb2", "anchor": [-2.5, 0, 0.5], **left},
        ],
        "prescribed": [
            {"joint": "ground_rb1", "time": t1, "values": u1, "interpolation": "cubic"},
            {"joint": "ground_rb2", "time": t2, "values": u2, "interpolation": "cubic"},
        ],
        "observers": [
            {
                "name": "p_obs_acc",
                "quantity": "point_acceleration",
                "body": "rb5",
                "point": [-2.0, -1.0, 0.0],
            },
            {"name": "rb5_angular_acc", "quantity": "angular_acceleration", "body": "rb5"},
            {
                "name": "p_obs",
                "quantity": "point_position",
                "body": "rb5",
                "point": [-2.0, -1.0, 0.0],
            },
            {"name": "rb5_angles", "quantity": "euler_angles", "body": "rb5"},
        ],
        # scalar reductions for `workbench sensitivity` (docs/sensitivity.md): the largest
        # heave of Rb5's centre of mass during the pulse
        "outputs": [
            {"name": "heave", "reduce": "max_displacement", "body": "rb5", "direction": [0, 0, 1]},
        ],
    }
