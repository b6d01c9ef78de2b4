"""Random URDF links (issue 22): the scene's ``uncertainty`` on a URDF body, per link, with the
URDF's ``<inertial>`` as nominal values; the draw order; design columns; the rewritten URDF
text; one-line errors. The engine side is in ``tests/integration/test_urdf_random.py``."""

from __future__ import annotations

import math
from pathlib import Path
from xml.etree import ElementTree as ET

import numpy as np
import pytest

from tests.conftest import REPO
from uncertainty import random_body as rb
from workbench.ensemble.realization import (
    design_columns,
    nominal_realization,
    realization_from_row,
    sample_realization,
)
from workbench.errors import SceneError
from workbench.scene.model import scene_from_dict
from workbench.scene.urdf import read_urdf, urdf_with_inertials

URDF = REPO / "tests" / "data" / "double_pendulum_random.urdf"
KUKA = "kuka_iiwa/model.urdf"

#: Draws of the statistical test: the issue's 1e4.
N = 10_000
#: Sample means within this many standard errors of the nominal values (seeded: a fixed draw).
N_SE = 4.0


def pendulum(uncertainty, **shape) -> dict:
    """A scene of the random double pendulum, fixed at its pivot."""
    return {
        "settings": {"dt": 1e-3, "duration": 0.01},
        "bodies": [
            {
                "name": "arm",
                "fixed": True,
                "shape": {"type": "urdf", "file": str(URDF), "inertia": "file", **shape},
                "uncertainty": uncertainty,
            }
        ],
    }


def load(data: dict):
    return scene_from_dict(data, base_dir=str(URDF.parent))


def error(data: dict) -> str:
    with pytest.raises(SceneError) as info:
        load(data)
    text = str(info.value)
    assert "\n" not in text
    return text


ALL_LAWS = {
    "links": "all",
    "mass": {"dispersion": 0.3},
    "com": {"domain": "box", "size": [0.02, 0.03, 0.04]},
    "inertia": {"model": "sg0", "dispersion": 0.3},
}


# ------------------------------------------------------------------------------ scene


def test_links_all_are_the_moving_links_with_mass_in_pybullet_order():
    scene = load(pendulum(ALL_LAWS))
    (body,) = scene.uncertain_bodies
    assert [(link.name, link.index) for link in body.random_links] == [("upper", 0), ("lower", 1)]
    model = read_urdf(URDF)
    for link in body.random_links:  # the nominal values are the URDF's
        inertial = model.link(link.name).inertial
        assert link.props.mass == inertial.mass
        assert np.array_equal(link.props.com, inertial.com)
        assert np.array_equal(link.props.inertia_matrix, inertial.inertia)
    # the lower rod's file tensor is rotated by its inertial rpy: not diagonal in the link frame
    J = body.random_links[1].props.inertia_matrix
    assert np.count_nonzero(J - np.diag(np.diag(J))) == 6


def test_a_moving_base_is_random_with_the_top_level_blocks():
    data = pendulum(
        {"mass": {"dispersion": 0.1}, "links": {"lower": {"mass": {"dispersion": 0.2}}}}
    )
    data["bodies"][0]["fixed"] = False
    (body,) = load(data).uncertain_bodies
    assert [(link.name, link.is_base) for link in body.random_links] == [
        ("pivot", True),
        ("lower", False),
    ]


def test_kuka_links_all_skips_the_massless_base():
    data = {
        "bodies": [
            {
                "name": "arm",
                "shape": {"type": "urdf", "file": KUKA, "inertia": "file"},
                "uncertainty": {"links": "all", "mass": {"dispersion": 0.2}},
            }
        ]
    }
    (body,) = scene_from_dict(data).uncertain_bodies
    assert [link.name for link in body.random_links] == [f"lbr_iiwa_link_{k}" for k in range(1, 8)]


@pytest.mark.parametrize(
    "change, words",
    [
        (
            {"uncertainty": {"links": {"lowr": {"mass": {"dispersion": 0.1}}}}},
            "uncertainty.links.lowr: unknown link 'lowr' (did you mean 'lower'?); the URDF has "
            "pivot, upper, lower",
        ),
        (
            {"uncertainty": {"links": {"pivot": {"mass": {"dispersion": 0.1}}}}},
            "uncertainty.links.pivot: 'pivot' is the base link",
        ),
        (
            {"uncertainty": {"links": {"upper": {}}}},
            "uncertainty.links.upper: expected at least one of mass, com, inertia",
        ),
        (
            {"uncertainty": {"mass": {"dispersion": 0.1}}},
            "uncertainty: the base of a fixed URDF body does not move",
        ),
        (
            {"uncertainty": {"links": "all"}},
            "uncertainty.links: 'all' takes the blocks mass, com and inertia given beside it",
        ),
        (
            {
                "uncertainty": {
                    "links": {
                        "upper": {"com": {"domain": "ball", "radius": 0.001, "center": [0, 0, 0]}}
                    }
                }
            },
            "uncertainty.links.upper.com: the nominal centre of mass [0.01, 0.0, -0.5] must lie "
            "strictly inside the ball domain",
        ),
        (
            {"shape_inertia": "collision", "uncertainty": ALL_LAWS},
            "uncertainty: a random URDF body needs 'shape.inertia: file'",
        ),
        (
            {"shape": {"joints": {"elbo": {"damping": 0.1}}}, "uncertainty": None},
            "shape.joints.elbo: unknown joint 'elbo' (did you mean 'elbow'?)",
        ),
        (
            {"shape": {"joints": {"shoulder": {"lower": 1.0, "upper": -1.0}}}, "uncertainty": None},
            "shape.joints.shoulder: expected lower <= upper, got 1.0 > -1.0",
        ),
        (
            {"shape": {"joints": {"elbow": {"lower": -1.0}}}, "uncertainty": None},
            "shape.joints.elbow: give both 'lower' and 'upper'",
        ),
        (
            {"shape": {"links": {"uper": {"material": {"friction": 0.5}}}}, "uncertainty": None},
            "shape.links.uper: unknown link 'uper' (did you mean 'upper'?)",
        ),
    ],
)
def test_bad_urdf_inputs_are_one_line_naming_the_field(change, words):
    data = pendulum(change.get("uncertainty"), **change.get("shape", {}))
    if "shape_inertia" in change:
        data["bodies"][0]["shape"]["inertia"] = change["shape_inertia"]
    if data["bodies"][0]["uncertainty"] is None:
        del data["bodies"][0]["uncertainty"]
    assert words in error(data)


@pytest.mark.parametrize(
    "links, words",
    [
        ("everything", "uncertainty.links: expected 'all' or a mapping of link name"),
        ({"upper": {"mas": {"dispersion": 0.1}}}, "links.upper.mas: unknown field (did you mean"),
        ({"upper": {"mass": {"dispersion": 0.9}}}, "links.upper.mass.dispersion: the mass"),
    ],
)
def test_bad_links_values_name_the_link_and_field(links, words):
    assert words in error(pendulum({"links": links, "mass": {"dispersion": 0.1}}))


def test_links_on_a_body_that_is_not_urdf_are_refused():
    data = {
        "bodies": [
            {
                "name": "b",
                "shape": {"type": "sphere", "radius": 0.1},
                "mass": 1.0,
                "uncertainty": {"links": "all", "mass": {"dispersion": 0.1}},
            }
        ]
    }
    assert "uncertainty.links: only URDF bodies have links" in error(data)


@pytest.mark.slow  # ~1.6 s: here to keep the fast tier short
def test_hull_and_bounded_defaults_of_a_link_are_its_collision_geometry():
    """As a body's shape for a body: the upper rod's collision box (0.2 x 0.2 x 1.2 m, centred
    0.5 m below its joint) is its default centre-of-mass domain and Z bound (Eq. 33)."""
    scene = load(
        pendulum(
            {
                "links": {
                    "upper": {
                        "com": {"domain": "hull"},
                        "inertia": {"model": "bounded", "lambda_l": -5, "lambda_u": -5},
                    }
                }
            }
        )
    )
    reals = [sample_realization(scene, np.random.default_rng([3, i])) for i in range(200)]
    com = np.array([r.params["arm/upper/com"] for r in reals])
    assert np.all(np.abs(com[:, :2]) < 0.1) and np.all((-1.1 < com[:, 2]) & (com[:, 2] < 0.1))
    assert np.ptp(com, axis=0).min() > 0  # spread in every direction
    J = np.array([r.params["arm/upper/inertia"] for r in reals])
    z_max = rb.z_max_from_vertices(
        np.array([[x, y, z] for x in (-0.1, 0.1) for y in (-0.1, 0.1) for z in (-1.1, 0.1)]),
        np.array(scene.bodies[0].random_links[0].props.com),
    )
    J_max = 1.0 * (np.trace(z_max) * np.eye(3) - z_max)  # Eq. (44-b), mass not random here
    assert np.all(np.linalg.eigvalsh(J_max - J)[:, 0] > 0)
    assert np.all(rb.physically_admissible(J))


def test_a_link_without_collision_geometry_needs_vertices_and_z_max(tmp_path):
    text = URDF.read_text().replace(
        """    <collision>
      <origin xyz="0 0 -0.5" rpy="0 0 0"/>
      <geometry><box size="0.2 0.2 1.2"/></geometry>
    </collision>
""",
        "",
    )
    assert text != URDF.read_text()
    (tmp_path / "p.urdf").write_text(text)
    for law, words in (
        ({"com": {"domain": "hull"}}, "uncertainty.links.upper.com: link 'upper' has no"),
        (
            {"inertia": {"model": "bounded", "lambda_l": -5, "lambda_u": -5}},
            "uncertainty.links.upper.inertia: link 'upper' has no collision geometry",
        ),
    ):
        data = pendulum({"links": {"upper": law}})
        data["bodies"][0]["shape"]["file"] = str(tmp_path / "p.urdf")
        assert words in error(data)


def test_a_link_without_inertial_cannot_be_random(tmp_path):
    text = URDF.read_text().replace(
        '<inertial>\n      <origin xyz="0.01 0 -0.5" rpy="0 0 0"/>\n      <mass value="1.0"/>\n'
        '      <inertia ixx="0.0835" ixy="0" ixz="0" iyy="0.0840" iyz="0" izz="0.0012"/>\n'
        "    </inertial>",
        "",
    )
    assert text != URDF.read_text()
    (tmp_path / "p.urdf").write_text(text)
    data = pendulum({"links": {"upper": {"mass": {"dispersion": 0.1}}}})
    data["bodies"][0]["shape"]["file"] = str(tmp_path / "p.urdf")
    assert "link 'upper' declares no <inertial> in the URDF" in error(data)


# ------------------------------------------------------------------------------ sampling


def test_draw_order_is_links_in_pybullet_order_each_mass_com_then_g():
    """Realization values are exactly the random body's draws (Batou & Soize Eq. 17, 20, 36)
    of each link in PyBullet's order, after the random parameters: M, R0, G per link."""
    data = pendulum(ALL_LAWS)
    data["parameters"] = {"d": {"dist": "uniform", "low": 0.1, "high": 0.2}}
    data["bodies"][0]["shape"]["joints"] = {"shoulder": {"damping": "${d}"}}
    scene = load(data)
    real = sample_realization(scene, np.random.default_rng(7))
    rng = np.random.default_rng(7)
    d = scene.parameter_distributions["d"].frozen().rvs(random_state=rng)  # parameters first
    assert real.values["d"] == d
    for link in scene.bodies[0].random_links:
        p = link.props
        m = rb.sample_mass(rng, p.mass, 0.3)
        r0 = rb.sample_com(
            rng, rb.BoxDomain(np.asarray(p.com), np.array([0.02, 0.03, 0.04])), p.com
        )
        G = rb.sample_sg0(rng, 0.3)
        J = rb.inertia_from_g(G, rb.nominal_z(p.inertia_matrix, p.mass), m)
        got = real.mass_overrides["arm"]["links"][link.name]
        assert got["mass"] == m
        assert np.array_equal(got["com"], r0)
        assert np.array_equal(got["inertia"], J)
        key = f"arm/{link.name}"
        assert real.params[f"{key}/mass"] == m
        assert np.array_equal(real.params[f"{key}/com"], r0)
        assert np.array_equal(real.params[f"{key}/inertia"], J)
        assert np.array_equal(real.params[f"{key}/G"], G)
    assert "mass" not in real.mass_overrides["arm"]  # the fixed base is not random


def test_nominal_realization_has_the_keys_of_every_realization():
    scene = load(pendulum(ALL_LAWS))
    nominal = nominal_realization(scene)
    sampled = sample_realization(scene, np.random.default_rng(1))
    assert list(nominal.params) == list(sampled.params)
    for link in scene.bodies[0].random_links:
        key = f"arm/{link.name}"
        assert nominal.params[f"{key}/mass"] == link.props.mass
        assert np.array_equal(nominal.params[f"{key}/G"], np.eye(3))


@pytest.mark.slow
def test_every_sampled_link_is_admissible_with_the_declared_means_and_dispersions():
    """1e4 realizations: every link inertia positive definite and triangle-valid, E[M], E[R0],
    E[J] equal to the URDF's values and δ_M, δ_G as declared, within sampling error."""
    scene = load(pendulum(ALL_LAWS))
    draws = [sample_realization(scene, np.random.default_rng([22, i])) for i in range(N)]
    for link in scene.bodies[0].random_links:
        key = f"arm/{link.name}"
        M = np.array([r.params[f"{key}/mass"] for r in draws])
        R0 = np.array([r.params[f"{key}/com"] for r in draws])
        J = np.array([r.params[f"{key}/inertia"] for r in draws])
        G = np.array([r.params[f"{key}/G"] for r in draws])
        assert np.all(rb.physically_admissible(J))  # 100 %: PD and J1 + J2 >= J3
        ev = np.linalg.eigvalsh(J)
        assert np.all(ev[:, 0] > 0) and np.all(ev[:, 0] + ev[:, 1] >= ev[:, 2])
        p = link.props
        se = M.std() / math.sqrt(N)
        assert abs(M.mean() - p.mass) < N_SE * se
        # δ_M: the sample cv's standard error is about δ sqrt((1 + 2 δ²) / (2N)) for a Gamma law
        cv_se = 0.3 * math.sqrt((1 + 2 * 0.3**2) / (2 * N))
        assert abs(M.std() / M.mean() - 0.3) < N_SE * cv_se
        com_se = R0.std(axis=0) / math.sqrt(N)
        assert np.all(np.abs(R0.mean(axis=0) - p.com) < N_SE * com_se)
        assert np.all(np.abs(R0 - p.com) < 0.5 * np.array([0.02, 0.03, 0.04]))
        J_se = J.std(axis=0) / math.sqrt(N)
        J_bar = p.inertia_matrix
        assert np.all(np.abs(J.mean(axis=0) - J_bar) <= N_SE * J_se + 1e-15 * np.abs(J_bar).max())
        d_hat = math.sqrt(np.mean(np.sum((G - np.eye(3)) ** 2, axis=(1, 2))) / 3)  # Eq. (56)
        assert abs(d_hat / 0.3 - 1) < 0.03  # about 4 standard errors of d_hat at N = 1e4


def test_design_columns_make_each_link_its_own_group():
    scene = load(pendulum(ALL_LAWS))
    cols = design_columns(scene)
    assert [c.name for c in cols] == [
        "arm/upper.mass",
        "arm/upper.com.x",
        "arm/upper.com.y",
        "arm/upper.com.z",
        "arm/upper.inertia",
        "arm/lower.mass",
        "arm/lower.com.x",
        "arm/lower.com.y",
        "arm/lower.com.z",
        "arm/lower.inertia",
    ]
    assert {c.owner for c in cols} == {"arm/upper", "arm/lower"}
    assert cols[0].part == "arm/upper.mass"
    real = realization_from_row(scene, np.full(len(cols), 0.5), entropy=3)
    from scipy import stats

    for link in scene.bodies[0].random_links:  # the median of the Gamma law of Eq. (17)
        median = stats.gamma(a=1 / 0.3**2, scale=0.3**2 * link.props.mass).median()
        assert real.mass_overrides["arm"]["links"][link.name]["mass"] == pytest.approx(
            median, rel=1e-12
        )
        assert rb.physically_admissible(real.params[f"arm/{link.name}/inertia"])


# ------------------------------------------------------------------------------ URDF text


def test_rewritten_urdf_holds_the_given_inertials_and_absolute_paths(tmp_path):
    model = read_urdf(URDF)
    rng = np.random.default_rng(5)
    J = rb.inertia_from_g(
        rb.sample_sg0(rng, 0.4), rb.nominal_z(model.link("lower").inertial.inertia, 0.5), 0.7
    )
    given = {"lower": (0.7, np.array([0.001, 0.004, -0.41]), J)}
    text = urdf_with_inertials(URDF, given)
    copy = tmp_path / "elsewhere" / "copy.urdf"
    copy.parent.mkdir()
    copy.write_text(text)
    again = read_urdf(copy)
    lower = again.link("lower").inertial
    assert lower.mass == 0.7
    assert np.array_equal(lower.com, given["lower"][1])
    # R diag Rᵀ with R from the written rpy: the tensor to rounding (a few ulp of its entries)
    assert np.allclose(lower.inertia, J, rtol=0, atol=4 * np.finfo(float).eps * np.abs(J).max())
    el = ET.fromstring(text).find("link[@name='lower']/inertial/inertia")
    assert [el.get(k) for k in ("ixy", "ixz", "iyz")] == ["0", "0", "0"]  # principal axes
    # untouched links keep their inertial; relative mesh paths become absolute
    assert np.array_equal(
        again.link("upper").inertial.inertia, model.link("upper").inertial.inertia
    )
    mesh = ET.fromstring(text).find(".//mesh").get("filename")
    assert Path(mesh).is_absolute() and Path(mesh).is_file()
    assert Path(mesh) == (REPO / "scenes" / "meshes" / "tumbler.obj").resolve()
