"""Du (2013) §4, Fig. 5: ball A strikes block B on a 20° incline; d_A and d_B from PyBullet.

Ball A (2 kg) flying horizontally at vA0 strikes block B (6 kg), which slides down a 20° incline
at vB0; the impact point is h = 2 m above the floor. B then slides up the incline a distance d_B
(restitution e between A and B, friction mu between B and the incline) and A flies back to the
floor, landing a horizontal distance d_A from the impact point. The paper's inverse problem: given
d_A = 0.582 m and d_B = 0.708 m and e ~ N(0.6, 0.06), mu ~ N(0.4, 0.04), find the distributions
of vA0 and vB0. Outputs (``workbench.analysis.outputs``), named as those of the analytic model
``uncertainty.examples.du_impact``::

    {name: dA, reduce: position_at_event, body: A, component: x,
     event: {first_contact: [A, floor]}, relative_to: initial, scale: -1}
    {name: dB, reduce: max_displacement, body: B, direction: [cos θ, 0, sin θ]}

(``OUTPUTS`` below). At the defaults, (vA0, vB0) = (10, 1) m/s, the Appendix model gives
d_A = 0.58207 m, d_B = 0.70839 m (the paper's measured 0.582, 0.708), this scene 0.58250 m,
0.70723 m at dt = 1e-3 (+0.43 mm, −1.16 mm; both halve with dt).

Why a script and not YAML: B's velocity along the incline (−vB0 cos θ, 0, −vB0 sin θ) and the
geometry derived from h, θ and the ball radius need arithmetic, which ``${...}`` substitution in a
YAML scene does not do.

How the scene matches the Appendix model (Eqs. 36-43 of the paper):

- The run starts at the instant of impact: A touches B's lower face (the face normal to the
  incline) with velocity (vA0, 0, 0), B rests on the incline moving down it at vB0. The impact is
  resolved in the first step, so the velocities "just before impact" are the inputs exactly, and
  the contact normal is the incline direction u = (cos θ, 0, sin θ), as in Eqs. (36)-(39).
- A's centre is at the height of B's centre of mass above the incline, so the impulse passes
  through B's centre of mass and does not spin it.
- Materials (PyBullet combines restitution and friction by product, docs/scenes.md): A has
  restitution e and friction 0, B restitution 1 and friction mu, the incline restitution 0 and
  friction 1. So A-B: restitution e, friction 0 (a frictionless impact keeps A's velocity
  component across u, vA0 sin θ, Eq. 37, and gives A no spin); B-incline: friction mu and no
  bounce. Rolling/spinning friction 0.
- A's centre is h + r above the floor at impact and r above it at landing: it falls exactly h, as
  the particle of Eq. (43). d_A is measured on A's centre (``relative_to: initial``).
- The incline is a fixed box whose lower edge is at the impact point; the floor is 2 m below and
  A falls back over the edge. B's travel d_B is measured on its centre of mass along u from the
  impact instant.
- Settings for impacts (docs/scenes.md): ``contact_erp: 0`` (no penetration push-out adding speed
  to the bounce), ``contact_processing_threshold: 0`` (no speculative contacts: the bounce is
  e × approach speed wherever in a step the contact falls; the landing records before contact
  are free flight, which the event interpolation relies on),
  ``restitution_velocity_threshold: 0`` (Newton's law at every speed). A and B, and B and the
  incline, start overlapping by ``OVERLAP`` so that these contacts are processed in the first
  step (a contact at a gap of +1e-16 would wait a step while A travels 1 cm into B).

Where PyBullet cannot match the particle model, and what it costs (measured at dt = 1e-3):

- Time integration: semi-implicit Euler puts the records on parabolas with the initial velocity
  shifted by a dt/2, so B slides ≈ (v_B − a dt/2)²/(2a) (1-2 mm short) and A's flight is
  slightly off (|Δd_A| ≤ 1.1 mm over the paper's ranges). First order in dt: both halve at
  dt = 5e-4 (tests/integration/test_scene_outputs.py).
- The impact is not instantaneous: it is one step of an iterative solver in which gravity and
  B's friction on the incline also act (g dt = 0.01 m/s, mu g cos θ dt = 0.004 m/s), so d_A
  depends weakly on mu (∂d_A/∂mu = 2e-3 m, 0 in the Appendix).
- Finite sizes: the impact occurs at a contact between a sphere and a face, not at a point; it
  is made central (A's centre at B's mid-height) and frictionless, so neither body spins from it.
  A's landing is detected on the sphere (centre at r) and B's travel is that of its centre.
- B's friction acts at the four corner contacts of two boxes; the friction moment pitches B
  slightly (angular velocity ~2e-5 rad/s), and at rest PyBullet's contacts creep at µm/s (the
  d_B reduction uses the records before the stop).
- Branches: the scene runs whatever happens. A ball that does not rebound, or flies forward
  over the edge, may still reach the floor after striking the incline's end and give a d_A the
  Appendix does not describe (e.g. d_A < 0), or never reach it (EventNotFoundError); reject such
  points with the Appendix's branch checks (``uncertainty.examples.du_impact.branch_violations``).
"""

import math

#: Ball A radius, m (the Appendix has a particle; small but resolved by the contact solver).
RADIUS = 0.05
#: Block B size along the incline, across it and normal to it, m.
BLOCK = (0.3, 0.2, 0.2)
#: Incline (fixed box): length along u, width, thickness, m. Long enough for d_B anywhere a
#: solver may look (d_B = 5.8 m at vA0 = 20 m/s, vB0 = 0, e = 0.8, mu = 0.3).
INCLINE = (20.0, 1.0, 0.2)
#: Gravitational acceleration, m/s² (the scene's default gravity; 9.81 as in
#: uncertainty.examples.du_impact).
G = 9.81
#: Margins of :func:`run_length`: relative and absolute (s), beyond the model's times.
RUN_MARGIN = (0.1, 0.05)
#: Initial overlap of A with B and of B with the incline, m: processed in the first step (see
#: the module docstring), small against d_A, d_B (~0.6 m).
OVERLAP = 1e-5
#: Incline angle of [1], rad.
THETA = math.radians(20.0)
#: Coefficients of variation of the random inputs with ``random_inputs=True`` (for ``workbench
#: sensitivity``): e and mu as Du's Table 1 (e ~ N(0.6, 0.06), mu ~ N(0.4, 0.04)), and vA0, whose
#: 5% is our choice (the paper's inverse problem has vA0 unknown, not random).
RANDOM_CV = {"e": 0.1, "mu": 0.1, "vA0": 0.05}
#: Half-width, in standard deviations, of the box of inputs the run length must cover when the
#: inputs are random: a Sobol' design of 2^13 rows reaches about 3.9 sigma.
RANDOM_REACH = 5.0


def outputs(theta=THETA):
    """The d_A and d_B reductions for ``workbench.analysis.outputs`` (θ in rad), named ``dA`` and
    ``dB`` as the outputs of the analytic model ``uncertainty.examples.du_impact``."""
    return [
        {
            "name": "dA",
            "reduce": "position_at_event",
            "body": "A",
            "component": "x",
            "event": {"first_contact": ["A", "floor"]},
            "relative_to": "initial",
            "scale": -1.0,
        },
        {
            "name": "dB",
            "reduce": "max_displacement",
            "body": "B",
            "direction": [math.cos(theta), 0.0, math.sin(theta)],
        },
    ]


#: The reductions that give the paper's outputs at θ = 20°.
OUTPUTS = outputs()


def run_length(vA0, vB0, e, mu, mA, mB, h, theta):
    """Time for A to land and B to stop by the Appendix model (Eq. 36-43, g = 9.81, flight angle
    from |v_Ax|), plus :data:`RUN_MARGIN`, s. PyBullet's times differ by O(dt); the margin leaves
    50 or more steps after both events, which the reductions need (a stop is a turning point
    only if the records after it show it)."""
    c, s = math.cos(theta), math.sin(theta)
    vax = ((mA - e * mB) * vA0 * c - mB * (1 + e) * vB0) / (mA + mB)  # Eq. (36)
    vay = vA0 * s  # Eq. (37)
    vb = vax + e * (vA0 * c + vB0)  # Eq. (39)
    q = abs(vax) * s + vay * c  # A's downward speed after impact
    t_land = 2 * h / (q + math.sqrt(q * q + 2 * G * h))  # root of Eq. (43)
    t_stop = max(vb, 0.0) / (G * (s + max(mu, 0.0) * c))
    rel, extra = RUN_MARGIN
    return (1 + rel) * max(t_land, t_stop) + extra


def build(
    vA0=10.0,
    vB0=1.0,
    e=0.6,
    mu=0.4,
    mA=2.0,
    mB=6.0,
    h=2.0,
    theta=THETA,
    radius=RADIUS,
    dt=1.0e-3,
    duration=None,
    random_inputs=False,
):
    """The impact scene.

    Parameters
    ----------
    vA0, vB0 : float
        Speeds of A (horizontal, towards B) and B (down the incline) just before impact, m/s.
    e, mu : float
        Restitution between A and B; kinetic friction between B and the incline.
    mA, mB : float
        Masses, kg.
    h : float
        Fall of A's centre from the impact to the floor, m.
    theta : float
        Incline angle, rad (20°; the name and unit of ``uncertainty.examples.du_impact``'s input).
    radius : float
        Ball radius, m.
    dt : float
        Time step, s.
    duration : float, optional
        Run length, s. Default: long enough for A to land and B to stop by the Appendix model
        (:func:`run_length`; 0.54 s at the defaults), so that a run costs no more than needed.
    random_inputs : bool
        Declare e, mu and vA0 random (as the parameters ``restitution``, ``friction`` and
        ``speed_A``), normal about the given values with the coefficients of variation
        :data:`RANDOM_CV` (``workbench sensitivity du_impact --set random_inputs=true``);
        the run then lasts long enough for every input within :data:`RANDOM_REACH` standard
        deviations.
    """
    u = (math.cos(theta), 0.0, math.sin(theta))  # up the incline
    n = (-math.sin(theta), 0.0, math.cos(theta))  # normal to the incline, upward
    length, width, height = BLOCK
    a_centre = (0.0, 0.0, h + radius)
    # A's centre sits at B's mid-height above the incline, touching B's lower face (-u side)
    s = height / 2
    edge = [a_centre[i] - s * n[i] + (radius - OVERLAP) * u[i] for i in range(3)]

    def at(along, up):
        """Point ``along`` u and ``up`` n from the incline's lower edge at the impact point."""
        return [edge[i] + along * u[i] + up * n[i] for i in range(3)]

    tilt = [0.0, -math.degrees(theta), 0.0]  # body x along u, body z along n
    il, iw, it = INCLINE
    parameters = {}
    if duration is None:
        duration = run_length(vA0, vB0, e, mu, mA, mB, h, theta)
    if random_inputs:
        # named apart from build()'s own keywords, whose plain values the loader keeps
        nominal = {"restitution": ("e", e), "friction": ("mu", mu), "speed_A": ("vA0", vA0)}
        parameters = {
            name: {"dist": "normal", "mean": v, "std": RANDOM_CV[k] * v}
            for name, (k, v) in nominal.items()
        }
        k = RANDOM_REACH
        duration = max(
            duration,
            *(
                run_length(
                    vA0 * (1 + sa * k * RANDOM_CV["vA0"]),
                    vB0,
                    e * (1 + se * k * RANDOM_CV["e"]),
                    mu * (1 + sm * k * RANDOM_CV["mu"]),
                    mA,
                    mB,
                    h,
                    theta,
                )
                for sa in (-1, 1)
                for se in (-1, 1)
                for sm in (-1, 1)
            ),
        )
        e, mu, vA0 = "${restitution}", "${friction}", "${speed_A}"
    return {
        "description": "Du 2013 impact: ball A hits block B on a 20 deg incline; d_A, d_B",
        "parameters": parameters,
        "outputs": outputs(theta),
        "settings": {
            "dt": dt,
            "duration": duration,
            "contact_erp": 0.0,
            "contact_processing_threshold": 0.0,
            "restitution_velocity_threshold": 0.0,
        },
        "bodies": [
            {
                "name": "floor",
                "shape": {"type": "plane"},
                "fixed": True,
                "material": {"friction": 1.0, "restitution": 0.0},
            },
            {
                "name": "incline",
                "shape": {"type": "box", "half_extents": [il / 2, iw / 2, it / 2]},
                "fixed": True,
                "position": at(il / 2, -it / 2),
                "euler_deg": tilt,
                "material": {"friction": 1.0, "restitution": 0.0},
            },
            {
                "name": "A",
                "shape": {"type": "sphere", "radius": radius},
                "mass": mA,
                "position": list(a_centre),
                "linear_velocity": [vA0, 0.0, 0.0],
                "material": {"friction": 0.0, "restitution": e},
            },
            {
                "name": "B",
                "shape": {"type": "box", "half_extents": [length / 2, width / 2, height / 2]},
                "mass": mB,
                "position": at(length / 2, height / 2 - OVERLAP),
                "euler_deg": tilt,
                "linear_velocity": [-vB0 * u[0], 0.0, -vB0 * u[2]],
                "material": {"friction": mu, "restitution": 1.0},
            },
        ],
        "observers": [
            {"name": "A_position", "quantity": "com_position", "body": "A"},
            {"name": "B_position", "quantity": "com_position", "body": "B"},
            {"name": "B_velocity", "quantity": "com_velocity", "body": "B"},
        ],
    }
