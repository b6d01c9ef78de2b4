"""Inverse simulation under uncertainty (uncertainty/inverse.py): closed-form problems, Du's
example (Tables 1-2 of the paper), the double loop, SORM, measurement errors, Monte Carlo,
unphysical branches and infeasible measurements."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from uncertainty.distributions import IndependentTransform
from uncertainty.errors import UncertaintyError
from uncertainty.examples import du_impact as du
from uncertainty.inverse import (
    InverseProblem,
    double_loop_form,
    inverse_form,
    inverse_monte_carlo,
    percentiles,
    solve_inverse,
)
from uncertainty.model import NamedFunctionModel

POINTS = {"vA0": du.TABLE1["x"], "vB0": du.TABLE2["x"]}
TABLES = {"vA0": du.TABLE1, "vB0": du.TABLE2}
#: The paper prints four digits: its values are exact to 5e-5; the acceptance is 2e-4.
PRINTED = 5e-5


# ------------------------------------------------------------------- closed-form problems
def _linear_problem(b=2.0, y=3.0, sigma=(0.5, 0.2), output_std=None):
    """y = b·x + a·(v, w): x = (y − v − 2w)/b is normal with exact mean and std."""
    model = NamedFunctionModel(lambda x, v, w: {"y": b * x + v + 2.0 * w}, ["y"])
    errors = None
    if output_std is not None:
        errors = IndependentTransform([stats.norm(0.0, output_std)])
    problem = InverseProblem(
        model=model,
        outputs={"y": y},
        unknowns=("x",),
        uncertain=("v", "w"),
        transform=IndependentTransform([stats.norm(0.1, sigma[0]), stats.norm(-0.2, sigma[1])]),
        output_errors=errors,
        guess={"x": 1.0},
    )
    var = sigma[0] ** 2 + 4 * sigma[1] ** 2 + (output_std or 0.0) ** 2
    # y_meas = b x + v + 2w + ε  ->  x = (y − v − 2w − ε)/b
    mean = (y - 0.1 + 0.4) / b
    return problem, mean, math.sqrt(var) / b


@pytest.mark.parametrize("jacobian", ["broyden", "newton"])
def test_linear_model_cdf_and_moments_are_exact(jacobian):
    problem, mean, std = _linear_problem()
    xs = mean + std * np.array([-3.0, -1.0, -0.2, 0.5, 2.5])
    res = inverse_form(problem, {"x": xs}, jacobian=jacobian)
    v = res["x"]
    assert v.converged
    # FORM is exact for a linear limit state; the SQP stops at a step of 1e-5 → β to ~1e-8
    np.testing.assert_allclose(v.F, stats.norm.cdf(xs, mean, std), atol=1e-8)
    np.testing.assert_allclose([v.mean, v.std], [mean, std], rtol=1e-8)
    assert res.median["x"] == pytest.approx(mean, rel=1e-10)


def test_measurement_errors_add_their_variance():
    problem, mean, std = _linear_problem(output_std=0.3)
    res = inverse_form(problem, {"x": [mean - std, mean + 2 * std]})
    np.testing.assert_allclose(res["x"].F, stats.norm.cdf([-1.0, 2.0]), atol=1e-8)
    assert res["x"].std == pytest.approx(std, rel=1e-8)


def test_percentiles_are_the_inverse_cdf():
    problem, mean, std = _linear_problem()
    w = np.array([0.01, 0.2, 0.5, 0.9, 0.999])
    pts = percentiles(problem, "x", w)
    got = np.array([p.x for p in pts])
    np.testing.assert_allclose(got, stats.norm.ppf(w, mean, std), rtol=1e-8, atol=1e-10)


def test_nonlinear_lognormal_problem_is_exact_in_log_space():
    """x·v = y with v lognormal: x = y/v is lognormal; the limit state is linear in
    log-space, so FORM is exact there and SORM's curvature correction must vanish."""
    s = 0.25
    model = NamedFunctionModel(lambda x, v: {"y": x * v}, ["y"])
    problem = InverseProblem(
        model=model,
        outputs={"y": 2.0},
        unknowns=("x",),
        uncertain=("v",),
        transform=IndependentTransform([stats.lognorm(s, scale=1.0)]),
        guess={"x": 1.5},
    )
    xs = np.array([1.0, 1.8, 2.0, 2.5, 4.0])
    exact = stats.lognorm(s, scale=2.0).cdf(xs)
    res = inverse_form(problem, {"x": xs}, sorm=True)
    np.testing.assert_allclose(res["x"].F, exact, atol=1e-8)
    F_sorm = np.array([p.F_sorm for p in res["x"].points])
    # one uncertain variable: no curvature, SORM = FORM (undefined at the median, β = 0)
    assert math.isnan(F_sorm[2]) and xs[2] == 2.0
    np.testing.assert_allclose(np.delete(F_sorm, 2), np.delete(exact, 2), atol=1e-8)
    lognormal = stats.lognorm(s, scale=2.0)
    assert res["x"].mean == pytest.approx(lognormal.mean(), rel=1e-6)
    assert res["x"].std == pytest.approx(lognormal.std(), rel=1e-4)


def _curved_problem(a):
    """x = −v − a·w² (v, w standard normal): {x(u) = c} is a parabola in u with curvature
    −2a towards the origin in the lower tail."""
    model = NamedFunctionModel(lambda x, v, w: {"y": x + v + a * w * w}, ["y"])
    return InverseProblem(
        model=model,
        outputs={"y": 0.0},
        unknowns=("x",),
        uncertain=("v", "w"),
        transform=IndependentTransform([stats.norm(), stats.norm()]),
        guess={"x": -0.5},
    )


def test_sorm_corrects_a_curved_surface_towards_the_exact_cdf():
    """F(c) = P(v > −c − a w²) = ∫ Φ(c + a w²) φ(w) dw exactly (1-D quadrature); FORM gives Φ(c),
    Breitung Φ(c)/sqrt(1 − 2a|c|)."""
    a = 0.1
    xs = np.array([-3.0, -2.5, -2.0])
    res = inverse_form(_curved_problem(a), {"x": xs}, sorm=True, moments=False)
    w, wt = np.polynomial.hermite_e.hermegauss(80)
    exact = np.array([np.sum(wt * stats.norm.cdf(c + a * w * w)) for c in xs]) / math.sqrt(
        2 * math.pi
    )
    F = res["x"].F
    F_sorm = np.array([p.F_sorm for p in res["x"].points])
    np.testing.assert_allclose(F, stats.norm.cdf(xs), rtol=1e-7)
    kappa = np.array([p.curvatures[0] for p in res["x"].points])
    np.testing.assert_allclose(kappa, -2 * a, rtol=1e-5)
    np.testing.assert_allclose(
        F_sorm, stats.norm.cdf(xs) / np.sqrt(1 - 2 * a * np.abs(xs)), rtol=1e-5
    )
    # Breitung is asymptotic in β: closer to the exact value than FORM, within 10% here
    assert np.all(np.abs(F_sorm - exact) < np.abs(F - exact))
    assert np.all(np.abs(F_sorm - exact) <= 0.1 * exact)


def test_a_saddle_point_is_rejected_when_sorm_sees_it():
    """With a = 1/2 the point on the symmetry line w = 0 at β = 3 is a maximum of ‖u‖ along the
    surface (1 + βκ = −2): the true MPP is at w² = 4. The search, started on the symmetry line,
    stays there; SORM's curvatures expose it and the point is not reported as converged."""
    res = inverse_form(_curved_problem(0.5), {"x": [-3.0]}, sorm=True, moments=False)
    p = res["x"].points[0]
    assert not p.converged and "saddle" in p.message


# ------------------------------------------------------------------------ Du's example
@pytest.fixture(scope="module", params=[True, False], ids=["analytic-jacobian", "black-box"])
def du_result(request):
    return inverse_form(du.inverse_problem(analytic_jacobian=request.param), POINTS)


def test_du_tables_1_and_2_are_reproduced(du_result):
    for name, table in TABLES.items():
        v = du_result[name]
        assert v.converged
        assert np.max(np.abs(v.F - table["new_method"])) <= PRINTED + 1e-6, name
        assert [p.side for p in v.points].count("below") == int(
            np.sum(table["x"] < 10.2 if name == "vA0" else table["x"] < 1.0)
        )


def test_du_moments_match_the_exact_ones(du_result):
    for name in TABLES:
        v = du_result[name]
        # The exact moments come from 1-D quadrature of the closed-form inverse over (e, μ);
        # FORM's percentile curve differs from the exact one by FORM's own error (≈ 1e-3)
        assert abs(v.mean - du.EXACT_MEAN[name]) <= 3e-3, name
        assert abs(v.std - du.EXACT_STD[name]) <= 3e-3, name


def test_du_model_calls_per_point_meet_the_target(du_result):
    for name in TABLES:
        calls = du_result[name].calls
        assert calls.min() >= 1
        # Target of the issue: ≤ 15 on average (stretch ≤ 12); the paper needed 25-40
        assert calls.mean() <= 12, (name, calls)


@pytest.mark.slow  # ~2 s
def test_double_loop_agrees_with_the_single_loop():
    problem = du.inverse_problem(analytic_jacobian=True)
    single = inverse_form(problem, POINTS, moments=False)
    double = double_loop_form(du.inverse_problem(analytic_jacobian=True), POINTS)
    for name in TABLES:
        np.testing.assert_allclose(double[name].F, single[name].F, atol=1e-7)
        # the double loop pays an inner inverse simulation for every outer iterate
        assert double[name].calls.mean() > single[name].calls.mean()


def test_solve_inverse_is_the_closed_form_inverse():
    x = solve_inverse(du.inverse_problem(), u=np.array([0.5, -1.0]))
    e, mu = du.E_MEAN + 0.5 * du.E_STD, du.MU_MEAN - du.MU_STD
    vA0, vB0 = du.solve_velocities(du.D_A, du.D_B, e, mu)
    assert x["vA0"] == pytest.approx(vA0, rel=1e-9)
    assert x["vB0"] == pytest.approx(vB0, rel=1e-9)


@pytest.mark.slow  # ~3 s
def test_monte_carlo_agrees_with_form_and_is_reproducible():
    n = 100_000
    mc = inverse_monte_carlo(du.inverse_problem(), n, np.random.default_rng(1), points=POINTS)
    again = inverse_monte_carlo(du.inverse_problem(), n, np.random.default_rng(1), points=POINTS)
    assert mc.n_solved == n and not mc.failures
    for name, table in TABLES.items():
        v = mc[name]
        np.testing.assert_array_equal(v.F, again[name].F)
        se = np.maximum(v.F_se, 1.0 / n)
        # FORM's own error (≤ 8e-4 against the paper's MCS column) plus 4 standard errors
        assert np.all(np.abs(v.F - table["new_method"]) <= 1e-3 + 4 * se), name
        assert abs(v.mean - du.EXACT_MEAN[name]) <= 4 * v.mean_se, name
        assert abs(v.std - du.EXACT_STD[name]) <= 4 * v.std_se, name


def test_unphysical_samples_are_counted_not_hidden():
    """With e ~ N(0.3, 0.1), about 13% of the draws fall below the restitution 0.1875 under which
    the measured distances have no physical solution."""
    problem = replace(
        du.inverse_problem(),
        transform=IndependentTransform([stats.norm(0.3, 0.1), stats.norm(0.4, 0.04)]),
        guess={"vA0": 30.0, "vB0": 1.0},
    )
    n = 4000
    mc = inverse_monte_carlo(problem, n, np.random.default_rng(3))
    expected = stats.norm.cdf((du.min_restitution() - 0.3) / 0.1)
    bad = n - mc.n_solved
    assert sum(mc.failures.values()) == bad
    assert abs(bad / n - expected) <= 4 * math.sqrt(expected * (1 - expected) / n)


def test_infeasible_measurement_is_reported():
    """No (vA0, vB0) gives d_A = 0.582 m when e is certain to be 0.1 (< 0.1875)."""
    problem = replace(
        du.inverse_problem(),
        transform=IndependentTransform([stats.norm(0.1, 0.001), stats.norm(0.4, 0.04)]),
        guess={"vA0": 10.0, "vB0": 1.0},
    )
    with pytest.raises(UncertaintyError, match="median"):
        inverse_form(problem, {"vA0": [10.0]})


def test_unknown_names_and_bad_options_are_refused():
    problem = du.inverse_problem()
    with pytest.raises(UncertaintyError, match="vX"):
        inverse_form(problem, {"vX": [1.0]})
    with pytest.raises(UncertaintyError, match="jacobian"):
        inverse_form(problem, {"vA0": [10.0]}, jacobian="bfgs")
