"""Bayesian estimation: the document's published numbers, closed-form posteriors, MCMC vs grid."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tests.conftest import REPO
from uncertainty.bayes import (
    NEWTON_TOL,
    Posterior,
    Prior,
    find_map,
    grid_posterior,
    grid_ranges,
    laplace,
    prediction_error_covariance,
    prior_from_spec,
    sample_posterior,
)
from uncertainty.errors import UncertaintyError
from uncertainty.examples.falling_object import FALLING_OBJECT
from uncertainty.model import FunctionModel, ResponseFunction

# Zero-based rows of Table 1 per case (identified by matching the published numbers).
CASES = {1: [12], 2: [1, 12], 3: [1, 7, 12, 17, 19], 4: list(range(20)), 5: [13, 15], 6: [18, 19]}
SIGMA = 0.3  # the document's σ = 0.3 column, "throughout"

#: Table 2 of the document: case -> (c_opt, t0_opt, |ρ_ct0|). The table prints |ρ|: the c-t0
#: correlation of the inverse Hessian is negative in every case.
TABLE2 = {
    2: (-0.0471, 1.1000, 0.9961),
    3: (0.1054, 1.0004, 0.7673),
    4: (0.1065, 0.9936, 0.6886),
    5: (0.2393, 0.7699, 0.9742),
    6: (0.1087, 0.9559, 0.9763),
}
#: "within 1e-4 absolute" (the issue's acceptance): the table prints 4 decimals, so a correct
#: value is within 5e-5 of the print; 1e-4 also absorbs the document's fminunc stopping error.
TABLE_TOL = 1e-4


def table1(column: str = "sigma_0.3"):
    lines = [
        ln
        for ln in (REPO / "data" / "falling_object_table1.csv").read_text().splitlines()
        if ln and not ln.startswith("#")
    ]
    head = lines[0].split(",")
    data = np.array([ln.split(",") for ln in lines[1:]], dtype=float)
    return data[:, 0], data[:, head.index(column)]


def example2(case: int) -> Posterior:
    t, z = table1()
    idx = CASES[case]
    model = FunctionModel(FALLING_OBJECT, t[idx], ("c", "t0"), {"g": 9.81})
    return Posterior(
        model, z[idx], [Prior.uniform(-0.3, 1.0), Prior.uniform(0.0, 2.0)], sigma=SIGMA
    )


def example3(case: int = 3) -> Posterior:
    t, z = table1()
    idx = CASES[case]
    model = FunctionModel(FALLING_OBJECT, t[idx], ("g", "c", "t0"))
    priors = [Prior.uniform(1.0, 20.0), Prior.uniform(-0.3, 1.0), Prior.uniform(0.0, 2.0)]
    return Posterior(model, z[idx], priors, sigma=None, sigma_prior=Prior.uniform(1e-3, 5.0))


# --------------------------------------------------------------------------- the document


@pytest.mark.parametrize("case", sorted(TABLE2))
def test_table2_all_15_numbers(case):
    post = example2(case)
    mp = find_map(post, [[0.106, 1.0], [0.3, 1.0]])
    assert mp.converged and mp.newton_decrement < NEWTON_TOL
    lap = laplace(post, mp.x)
    c, t0, rho = TABLE2[case]
    assert abs(mp.x[0] - c) < TABLE_TOL
    assert abs(mp.x[1] - t0) < TABLE_TOL
    assert lap.corr[0, 1] < 0  # the document prints |ρ|
    assert abs(abs(lap.corr[0, 1]) - rho) < TABLE_TOL


def test_example1_one_parameter_c_for_n5_reads_0_1055():
    """Table 6 prints IF1 = 0.1054 for N = 5; the one-parameter optimum is 0.10548 (0.1055)."""
    t, z = table1()
    idx = CASES[3]
    model = FunctionModel(FALLING_OBJECT, t[idx], ("c",), {"g": 9.81, "t0": 1.0})
    post = Posterior(model, z[idx], [Prior.uniform(-0.3, 1.0)], sigma=SIGMA)
    mp = find_map(post, [[0.106]])
    assert mp.converged
    assert round(mp.x[0], 4) == 0.1055


def test_case4_exact_grid_posterior_moments():
    post = example2(4)
    mp = find_map(post, [[0.106, 1.0]])
    lap = laplace(post, mp.x)
    grid = grid_posterior(post, grid_ranges(post, mp.x, lap), n_points=401)
    # the reference values (the document's exact posterior), within 1e-4 absolute
    np.testing.assert_allclose(grid.mean, [0.106648, 0.993425], atol=1e-4)
    np.testing.assert_allclose(grid.std, [0.00277, 0.01488], atol=1e-4)
    assert grid.edge_density < 1e-12
    # the grid is converged: 201 points give the same moments to 1e-8 (the trapezoidal rule on
    # a density that vanishes at the edges converges faster than any power of the spacing)
    coarse = grid_posterior(post, [(a[0], a[-1]) for a in grid.axes], n_points=201)
    np.testing.assert_allclose(coarse.mean, grid.mean, rtol=1e-8)
    np.testing.assert_allclose(coarse.std, grid.std, rtol=1e-6)


def test_example3_reaches_the_true_optimum_not_table3():
    post = example3()
    mp = find_map(post, [[9.81, 0.106, 1.0, 0.3]])
    assert mp.converged and mp.gradient_norm < 1e-6, mp.gradient_norm
    # the true optimum, to its printed digits (half a unit of the last one)
    err = np.abs(mp.x - [8.7363, 0.09151, 0.94657, 0.09459])
    assert np.all(err <= [5e-5, 5e-6, 5e-6, 5e-6]), mp.x
    lap = laplace(post, mp.x)
    corr = lap.corr
    # Table 5: ρ(g, c) 0.9876, ρ(g, t0) 0.9497, ρ(c, t0) 0.9004 (4 decimals printed)
    assert abs(corr[0, 1] - 0.9876) < 5e-5
    assert abs(corr[0, 2] - 0.9497) < 5e-5
    assert abs(corr[1, 2] - 0.9004) < 5e-5
    # at the optimum ∂²L/∂θ∂σ = −(2/σ³) Σ (z − ŷ) ∂z/∂θ = −(2/σ) ∂L/∂θ = 0: the σ-correlations
    # are exactly 0; the document's 0.0206, 0.0203, 0.0197 come from its early-stopped point
    assert np.max(np.abs(corr[:3, 3])) < 1e-8
    # Table 3's point (8.7529, 0.0917, 0.9475, 0.0946) is not stationary: early stopping
    table3 = np.array([8.7529, 0.0917, 0.9475, 0.0946])
    assert post.neg_log_posterior(table3) > mp.value + 1e-3
    assert np.linalg.norm(post.gradient(table3)) > 1.0


# --------------------------------------------------------------------------- closed forms


def _linear_posterior(sigma=0.5, prior=None, correlation=None, n=12, seed=0):
    """y = a + b x + noise: the posterior with flat priors is Gaussian around least squares."""
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 3, n)

    def line(x, a, b):
        return a + b * x

    def derivs(x, a, b):
        x = np.asarray(x, float)
        J = np.column_stack([np.ones_like(x), x])
        return a + b * x, J, np.zeros((x.size, 2, 2))

    resp = ResponseFunction(line, ("a", "b"), derivs, vectorized=True)
    y = 1.0 + 2.0 * x + 0.5 * rng.standard_normal(n)
    priors = prior or [Prior.uniform(-50, 50), Prior.uniform(-50, 50)]
    post = Posterior(
        FunctionModel(resp, x, ("a", "b")), y, priors, sigma=sigma, correlation=correlation
    )
    return post, x, y


def test_linear_gaussian_map_laplace_and_grid_are_exact():
    sigma = 0.5
    post, x, y = _linear_posterior(sigma)
    X = np.column_stack([np.ones_like(x), x])
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    cov = sigma**2 * np.linalg.inv(X.T @ X)
    mp = find_map(post, [[0.0, 0.0]])
    np.testing.assert_allclose(mp.x, beta, rtol=1e-10)
    lap = laplace(post, mp.x)
    np.testing.assert_allclose(lap.covariance, cov, rtol=1e-10)
    grid = grid_posterior(post, grid_ranges(post, mp.x, lap), n_points=201)
    # the exact posterior is this Gaussian: the grid's moments match to its quadrature error
    np.testing.assert_allclose(grid.mean, beta, rtol=1e-9)
    np.testing.assert_allclose(grid.covariance, cov, rtol=1e-7)


def test_normal_prior_gives_the_conjugate_posterior():
    sigma, m0, s0 = 0.5, np.array([0.0, 1.0]), np.array([0.3, 0.2])
    prior = [Prior.normal(m0[0], s0[0]), Prior.normal(m0[1], s0[1])]
    post, x, y = _linear_posterior(sigma, prior=prior)
    X = np.column_stack([np.ones_like(x), x])
    P = X.T @ X / sigma**2 + np.diag(1 / s0**2)
    mean = np.linalg.solve(P, X.T @ y / sigma**2 + m0 / s0**2)
    mp = find_map(post, [[0.0, 0.0]])
    np.testing.assert_allclose(mp.x, mean, rtol=1e-10)
    np.testing.assert_allclose(laplace(post, mp.x).covariance, np.linalg.inv(P), rtol=1e-10)


def test_correlated_errors_give_generalized_least_squares():
    """Σ = σ² Σ̃ with Σ̃ from Eq. (21): MAP = GLS estimate, covariance σ² (Xᵀ Σ̃⁻¹ X)⁻¹."""
    n = 12
    x = np.linspace(0, 3, n)
    C = prediction_error_covariance(x, 1.0 + x, 1.0, eta=0.8, correlation_length=1.0)
    post, _, y = _linear_posterior(0.5, correlation=C, n=n)
    X = np.column_stack([np.ones_like(x), x])
    Ci = np.linalg.inv(C)
    beta = np.linalg.solve(X.T @ Ci @ X, X.T @ Ci @ y)
    mp = find_map(post, [[0.0, 0.0]])
    np.testing.assert_allclose(mp.x, beta, rtol=1e-10)
    np.testing.assert_allclose(
        laplace(post, mp.x).covariance, 0.25 * np.linalg.inv(X.T @ Ci @ X), rtol=1e-10
    )


def test_inferred_sigma_is_the_root_mean_square_residual():
    post, x, y = _linear_posterior()
    model, data = post.model, post.data
    p2 = Posterior(model, data, list(post.priors), sigma=None, sigma_prior=Prior.uniform(1e-3, 10))
    mp = find_map(p2, [[0.0, 0.0, 1.0]])
    X = np.column_stack([np.ones_like(x), x])
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    # ∂L/∂σ = −J/σ³ + N/σ = 0 (Appendix 1.2): σ̂² = J/N
    rms = math.sqrt(np.mean((y - X @ beta) ** 2))
    np.testing.assert_allclose(mp.x, [*beta, rms], rtol=1e-10)


def test_prediction_error_covariance_is_eq21():
    t = np.array([1.0, 2.0, 4.0])
    z = np.array([0.5, 4.0, 20.0])
    S = prediction_error_covariance(t, z, sigma1=0.3, eta=2.0, correlation_length=2.0)
    for i in range(3):
        for j in range(3):
            ref = 0.09 * ((i == j) + 4.0 * z[i] * z[j] * math.exp(-abs(t[i] - t[j]) / 2.0))
            assert S[i, j] == pytest.approx(ref, rel=1e-15)
    indep = prediction_error_covariance(t, z, 0.3, 2.0, correlation_length=0.0)
    np.testing.assert_allclose(indep, np.diag(0.09 * (1 + 4 * z**2)), rtol=1e-15)
    full = prediction_error_covariance(t, z, 0.3, 2.0, correlation_length=math.inf)
    np.testing.assert_allclose(full, 0.09 * (np.eye(3) + 4 * np.outer(z, z)), rtol=1e-15)


@pytest.mark.parametrize(
    "spec, law",
    [
        ({"dist": "uniform", "low": -1.0, "high": 3.0}, stats.uniform(-1, 4)),
        ({"dist": "normal", "mean": 0.4, "std": 0.1}, stats.norm(0.4, 0.1)),
        (
            {"dist": "lognormal", "mean": 0.4, "std": 0.1},
            stats.lognorm(s=math.sqrt(math.log1p(0.0625)), scale=0.4 / math.sqrt(1.0625)),
        ),
    ],
)
def test_priors_match_scipy_and_their_derivatives(spec, law):
    pr = prior_from_spec(spec)
    x = np.array([0.2, 0.35, 0.5, 0.8])
    np.testing.assert_allclose(pr.neg_log_pdf(x), -law.logpdf(x), rtol=1e-12)
    assert pr.mean == pytest.approx(law.mean(), rel=1e-12)
    assert pr.std == pytest.approx(law.std(), rel=1e-12)
    for v in x:
        d1, d2 = pr.derivatives(float(v))
        h = 1e-5
        fd1 = (pr.neg_log_pdf(v + h) - pr.neg_log_pdf(v - h)) / (2 * h)
        fd2 = (pr.neg_log_pdf(v + h) - 2 * pr.neg_log_pdf(v) + pr.neg_log_pdf(v - h)) / h**2
        # central differences with h = 1e-5: truncation ~(h/x)² ≤ 2.5e-9 relative (the lognormal
        # varies on the scale x ≥ 0.2), roundoff ~ε/h ≈ 1e-11 and ε/h² ≈ 1e-6 absolute
        assert d1 == pytest.approx(fd1, rel=1e-7, abs=1e-8)
        assert d2 == pytest.approx(fd2, rel=1e-4, abs=1e-4)


@pytest.mark.parametrize(
    "spec, words",
    [
        ({"dist": "cauchy"}, "expected one of uniform, normal, lognormal"),
        ({"dist": "uniform", "low": 1, "high": 0}, "finite low < high"),
        ({"dist": "normal", "mean": 0}, "missing std"),
        ({"dist": "lognormal", "mean": -1, "std": 1}, "mean > 0"),
        ({"dist": "normal", "mean": 0, "std": 1, "sd": 2}, "unknown sd"),
    ],
)
def test_bad_prior_specs(spec, words):
    with pytest.raises(UncertaintyError, match=words):
        prior_from_spec(spec, "infer.c.prior")


# --------------------------------------------------------------------------- failures reported


def test_singular_hessian_is_reported_not_inverted():
    """y = a b x determines only the product a b: the Hessian at any optimum is singular."""

    def product(x, a, b):
        return a * b * x

    x = np.linspace(1, 2, 6)
    y = 3.0 * x + np.array([0.01, -0.02, 0.0, 0.02, -0.01, 0.005])
    post = Posterior(
        FunctionModel(product, x, ("a", "b")),
        y,
        [Prior.uniform(0.1, 10), Prior.uniform(0.1, 10)],
        sigma=0.02,
    )
    mp = find_map(post, [[1.0, 1.0]])
    assert not mp.converged  # the optimum is a curve: no positive definite Hessian there
    lap = laplace(post, mp.x)
    assert lap.singular and not lap.available
    assert lap.covariance is None and lap.std is None and lap.corr is None
    assert "singular Hessian" in lap.message and "not inverted" in lap.message
    # the undetermined direction is along the curve a b = const: (a, −b) normalized
    v = lap.eigenvectors[:, 0]
    d = np.array([mp.x[0], -mp.x[1]]) / np.hypot(*mp.x)
    assert abs(abs(v @ d) - 1) < 1e-3


def test_bad_inputs_raise_one_line_errors():
    t, z = table1()
    m = FunctionModel(FALLING_OBJECT, t[:1], ("c", "t0"), {"g": 9.81})
    pri = [Prior.uniform(-0.3, 1.0), Prior.uniform(0.0, 2.0)]
    with pytest.raises(UncertaintyError, match="1 points for 2 parameters"):
        Posterior(m, z[:1], pri, sigma=0.3)
    m2 = FunctionModel(FALLING_OBJECT, t[:3], ("c", "t0"), {"g": 9.81})
    for bad_sigma in (0.0, -0.3, math.nan):
        with pytest.raises(UncertaintyError, match="sigma: expected a positive number"):
            Posterior(m2, z[:3], pri, sigma=bad_sigma)
    with pytest.raises(UncertaintyError, match="not finite"):
        Posterior(m2, np.array([1.0, np.nan, 2.0]), pri, sigma=0.3)


# --------------------------------------------------------------------------- MCMC


@pytest.mark.slow  # ~18 s
def test_emcee_agrees_with_the_exact_grid_within_3_standard_errors():
    post = example2(4)
    mp = find_map(post, [[0.106, 1.0]])
    lap = laplace(post, mp.x)
    grid = grid_posterior(post, grid_ranges(post, mp.x, lap))
    mc = sample_posterior(post, mp.x, np.random.default_rng(2024), covariance=lap.covariance)
    assert mc.converged, mc.message
    assert mc.chain.shape[0] > 50 * np.max(mc.tau)
    # |MC estimate − exact| within 3 Monte Carlo standard errors (fails with probability ~0.3%
    # per moment for a correct sampler; the seed is fixed, so this is deterministic)
    assert np.all(np.abs(mc.mean - grid.mean) < 3 * mc.se_mean), (mc.mean, grid.mean, mc.se_mean)
    assert np.all(np.abs(mc.std - grid.std) < 3 * mc.se_std), (mc.std, grid.std, mc.se_std)
    assert 0.2 < mc.acceptance < 0.9  # the stretch move on a 2-D Gaussian-like target


@pytest.mark.slow  # ~1.5 s: here to keep the fast tier short
def test_emcee_runs_are_reproducible_bit_for_bit():
    post = example2(3)
    mp = find_map(post, [[0.106, 1.0]])
    cov = laplace(post, mp.x).covariance
    runs = [
        sample_posterior(
            post, mp.x, np.random.default_rng(7), covariance=cov, max_steps=300, check_every=300
        )
        for _ in range(2)
    ]
    assert runs[0].chain.tobytes() == runs[1].chain.tobytes()
    assert runs[0].seed == runs[1].seed
    other = sample_posterior(
        post, mp.x, np.random.default_rng(8), covariance=cov, max_steps=300, check_every=300
    )
    assert other.chain.tobytes() != runs[0].chain.tobytes()
    assert not runs[0].converged  # 300 steps < 50 τ: said so, not a silent number


def test_emcee_progress_reports_the_steps_after_each_check():
    post = example2(3)
    mp = find_map(post, [[0.106, 1.0]])
    seen = []
    sample_posterior(
        post, mp.x, np.random.default_rng(7), max_steps=200, check_every=100,
        progress=lambda done, total: seen.append((done, total)),
    )  # fmt: skip
    assert seen == [(100, 200), (200, 200)]
