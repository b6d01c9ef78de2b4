"""Standard normal space transforms: independent marginals and the Nataf model; the Weibull spec."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from uncertainty.distributions import (
    IndependentTransform,
    NatafTransform,
    make_distribution,
)
from uncertainty.errors import UncertaintyError

LOGN_A = make_distribution({"dist": "lognormal", "mean": 1.0, "std": 0.5})
LOGN_B = make_distribution({"dist": "lognormal", "mean": 2.0, "std": 0.4})
WEIBULL = make_distribution({"dist": "weibull", "scale": 2.0, "shape": 1.5, "loc": 0.5})
GAMMA = make_distribution({"dist": "gamma", "mean": 3.0, "std": 1.0})
UNIFORM = make_distribution({"dist": "uniform", "low": -1.0, "high": 2.0})
NORMAL = stats.norm(3.0, 2.0)
MARGINALS = [LOGN_A, WEIBULL, GAMMA, UNIFORM, NORMAL]

R5 = np.array(
    [
        [1.0, 0.4, 0.2, 0.0, -0.3],
        [0.4, 1.0, 0.3, 0.1, 0.0],
        [0.2, 0.3, 1.0, -0.2, 0.2],
        [0.0, 0.1, -0.2, 1.0, 0.1],
        [-0.3, 0.0, 0.2, 0.1, 1.0],
    ]
)


def _transforms():
    return [IndependentTransform(MARGINALS), NatafTransform(MARGINALS, R5)]


# -------------------------------------------------------------------------------------- weibull
def test_weibull_spec_matches_its_closed_form_moments():
    for spec, loc in (
        ({"dist": "weibull", "scale": 2.0, "shape": 1.5}, 0.0),
        (dict(dist="weibull", scale=2.0, shape=1.5, loc=0.5), 0.5),
    ):
        d = make_distribution(spec)
        # E[X] = loc + λ Γ(1 + 1/k), Var[X] = λ² (Γ(1 + 2/k) - Γ(1 + 1/k)²)
        g1, g2 = math.gamma(1 + 1 / 1.5), math.gamma(1 + 2 / 1.5)
        assert d.mean() == pytest.approx(loc + 2.0 * g1, rel=1e-12)
        assert d.var() == pytest.approx(4.0 * (g2 - g1**2), rel=1e-12)
        assert d.support()[0] == loc


@pytest.mark.parametrize(
    "spec, field",
    [
        ({"dist": "weibull", "scale": 2.0}, "shape"),
        ({"dist": "weibull", "scale": 0.0, "shape": 1.0}, "scale"),
        ({"dist": "weibull", "scale": 1.0, "shape": -1.0}, "shape"),
        ({"dist": "weibull", "scale": 1.0, "shape": 1.0, "mean": 1.0}, "mean"),
    ],
)
def test_weibull_bad_specs(spec, field):
    with pytest.raises(UncertaintyError) as err:
        make_distribution(spec)
    assert err.value.field == field


# ----------------------------------------------------------------------------------- transforms
@pytest.mark.parametrize("transform", _transforms(), ids=["independent", "nataf"])
def test_round_trip_including_the_tails(transform):
    rng = np.random.default_rng(7)
    U = rng.standard_normal((200, 5)) * 2.0
    # far tails: the isf branch keeps them invertible. The uniform (column 3) stops at -5: near
    # an endpoint of a bounded support x = -1 + 3 Φ(u) resolves Φ(u) only to 1e-16 absolute
    U[0] = [-8.0, 8.0, 7.5, -5.0, 8.0]
    X = transform.to_x(U)
    assert X.shape == U.shape and np.all(np.isfinite(X))
    # 1e-9: Φ^{-1}(F(F^{-1}(Φ(u)))) composes four special functions each accurate to ~1e-14
    # relative, amplified by dz/dx·dx/dp at |u| = 8 (≈ 1e4)
    np.testing.assert_allclose(transform.to_u(X), U, rtol=0, atol=1e-9)
    np.testing.assert_allclose(transform.to_x(U[3]), X[3], rtol=1e-15)


def test_upper_tail_keeps_relative_accuracy():
    t = IndependentTransform([stats.norm(0.0, 1.0), stats.expon()])
    x = t.to_x(np.array([8.5, 8.5]))
    # Φ(8.5) rounds to 1 in double precision: without the survival function x would be inf
    assert x[0] == pytest.approx(8.5, rel=1e-13)
    assert x[1] == pytest.approx(-math.log(stats.norm.sf(8.5)), rel=1e-13)


@pytest.mark.parametrize("transform", _transforms(), ids=["independent", "nataf"])
def test_jacobian_matches_central_differences(transform):
    u = np.array([0.3, -1.2, 2.0, 0.7, -0.4])
    J = transform.jacobian(u)
    h = 1e-6  # central differences: truncation ~h² x''' ≈ 1e-12, roundoff ~1e-16/h ≈ 1e-10
    fd = np.column_stack(
        [(transform.to_x(u + h * e) - transform.to_x(u - h * e)) / (2 * h) for e in np.eye(5)]
    )
    np.testing.assert_allclose(J, fd, rtol=1e-7, atol=1e-9)


def test_independent_transform_accepts_scene_specs_and_equals_identity_nataf():
    specs = [{"dist": "lognormal", "mean": 1.0, "std": 0.5}, {"dist": "gamma", "mean": 3, "std": 1}]
    a = IndependentTransform(specs)
    b = NatafTransform([LOGN_A, GAMMA], np.eye(2))
    u = np.array([[0.5, -1.0], [2.0, 3.0]])
    np.testing.assert_array_equal(a.to_x(u), b.to_x(u))
    np.testing.assert_array_equal(a.jacobian(u[0]), b.jacobian(u[0]))
    with pytest.raises(UncertaintyError, match="expected shape"):
        a.to_x(np.zeros(3))


# ---------------------------------------------------------------------------------------- Nataf
def test_nataf_normal_marginals_keep_the_correlation():
    t = NatafTransform([stats.norm(1, 2), stats.norm(-3, 0.5)], [[1, -0.6], [-0.6, 1]])
    assert t.correlation0[0, 1] == pytest.approx(-0.6, abs=1e-14)


@pytest.mark.parametrize("rho", [0.3, 0.7, -0.5])
def test_nataf_lognormal_pair_matches_the_closed_form(rho):
    t = NatafTransform([LOGN_A, LOGN_B], [[1, rho], [rho, 1]])
    d1, d2 = 0.5, 0.2  # coefficients of variation
    # Liu & Der Kiureghian (1986), lognormal pair: ρ0 = ln(1 + ρ δ1 δ2) / sqrt(ln(1+δ1²) ln(1+δ2²))
    exact = math.log1p(rho * d1 * d2) / math.sqrt(math.log1p(d1**2) * math.log1p(d2**2))
    assert t.correlation0[0, 1] == pytest.approx(exact, abs=1e-12)


def test_nataf_reproduces_the_target_correlation_by_monte_carlo():
    t = NatafTransform(MARGINALS, R5)
    rng = np.random.default_rng(20240601)
    n = 400_000
    X = t.to_x(rng.standard_normal((n, 5)))
    H = (X - X.mean(axis=0)) / X.std(axis=0)
    for i in range(5):
        for j in range(i):
            prod = H[:, i] * H[:, j]
            se = prod.std() / math.sqrt(n)  # standard error of the sample correlation
            assert abs(prod.mean() - R5[i, j]) < 5 * se, (i, j, prod.mean(), R5[i, j], se)
    np.testing.assert_allclose(X.mean(axis=0), [m.mean() for m in MARGINALS], rtol=1e-2)


@pytest.mark.parametrize(
    "n, R, text",
    [
        (2, [[1, 0.5], [0.4, 1]], "not symmetric"),
        (2, [[1, 1.0], [1.0, 1]], r"\|ρ\| < 1"),
        (2, [[2, 0.5], [0.5, 1]], "diagonal"),
        (3, [[1, 0.9, 0.9], [0.9, 1, -0.9], [0.9, -0.9, 1]], "not positive definite"),
        (2, np.eye(3), "expected a finite"),
    ],
)
def test_nataf_rejects_invalid_correlation_matrices(n, R, text):
    with pytest.raises(UncertaintyError, match=text) as err:
        NatafTransform([stats.norm()] * n, R)
    assert err.value.field == "correlation"
    assert "\n" not in str(err.value)


def test_nataf_rejects_unattainable_correlation():
    # two lognormals with δ = 1: the lowest attainable correlation is (e^{-s²} - 1)/(e^{s²} - 1)
    # with s² = ln 2, i.e. -0.5
    ln = make_distribution({"dist": "lognormal", "mean": 1.0, "std": 1.0})
    with pytest.raises(UncertaintyError, match="not attainable") as err:
        NatafTransform([ln, ln], [[1, -0.9], [-0.9, 1]])
    assert "(-0.5" in str(err.value) or "-0.49" in str(err.value)
