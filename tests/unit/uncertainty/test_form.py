"""FORM and SORM: problems with exact reliability indices, curvatures, OpenTURNS peer check."""

from __future__ import annotations

import math

import numpy as np
import openturns as ot
import pytest
from scipy import integrate, stats

from uncertainty.distributions import IndependentTransform, NatafTransform, make_distribution
from uncertainty.errors import UncertaintyError
from uncertainty.form import (
    G_TOL,
    METHODS,
    breitung,
    form,
    limit_state_model,
    parabolic_pf,
    sorm,
    tvedt,
)
from uncertainty.model import CachedModel, FunctionModel

# ------------------------------------------------------------------------------- test problems
# R - S with normal R, S: β = (μR - μS) / sqrt(σR² + σS² - 2 ρ σR σS), exactly
MU_R, SD_R, MU_S, SD_S = 200.0, 20.0, 100.0, 30.0
BETA_NORMAL = (MU_R - MU_S) / math.hypot(SD_R, SD_S)
NORMAL_RS = [stats.norm(MU_R, SD_R), stats.norm(MU_S, SD_S)]

# R - S with lognormal R, S: R ≤ S ⟺ ln R - ln S ≤ 0, a linear limit state in u, so
# β = (λR - λS) / sqrt(ζR² + ζS²) with λ, ζ the mean and std of ln R, ln S, exactly
LOGN_R = make_distribution({"dist": "lognormal", "mean": MU_R, "std": SD_R})
LOGN_S = make_distribution({"dist": "lognormal", "mean": MU_S, "std": SD_S})
BETA_LOGN = (math.log(LOGN_R.kwds["scale"]) - math.log(LOGN_S.kwds["scale"])) / math.hypot(
    LOGN_R.kwds["s"], LOGN_S.kwds["s"]
)

# g = x1³ + x2³ - 18, x_i ~ N(10, 5): by symmetry u* = -t (1, 1) with 2 (10 - 5t)³ = 18, so
# β = √2 (10 - 9^(1/3)) / 5 ≈ 2.2401
CUBIC = [stats.norm(10.0, 5.0), stats.norm(10.0, 5.0)]
BETA_CUBIC = math.sqrt(2.0) * (10.0 - 9.0 ** (1.0 / 3.0)) / 5.0


def r_minus_s(x):
    return x[0] - x[1]


def cubic(x):
    return x[0] ** 3 + x[1] ** 3 - 18.0


def cubic_gradient(x):
    return np.array([3 * x[0] ** 2, 3 * x[1] ** 2])


PROBLEMS = {
    "linear": (NORMAL_RS, r_minus_s, BETA_NORMAL),
    "lognormal": ([LOGN_R, LOGN_S], r_minus_s, BETA_LOGN),
    "cubic": (CUBIC, cubic, BETA_CUBIC),
}


# ------------------------------------------------------------------------------------- FORM
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", list(PROBLEMS))
def test_form_finds_the_exact_reliability_index(name, method):
    marginals, g, beta = PROBLEMS[name]
    t = IndependentTransform(marginals)
    r = form(g, t, method=method)
    assert r.converged, r.message
    # converged means |g|/|∇g| ≤ G_TOL (standard deviations) and u* ∥ ∇g: β within ~G_TOL
    assert r.beta == pytest.approx(beta, abs=10 * G_TOL)
    assert r.pf == pytest.approx(stats.norm.sf(beta), rel=1e-7)
    np.testing.assert_allclose(r.u_star, r.beta * r.alpha, atol=1e-6)
    assert np.linalg.norm(r.alpha) == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(r.x_star, t.to_x(r.u_star), rtol=1e-15)
    assert abs(g(r.x_star)) <= 10 * G_TOL * np.linalg.norm(r.gradient)
    assert r.residual.g <= G_TOL and r.model_calls > 0 and r.iterations >= 1


def test_linear_problem_alpha_and_design_point():
    r = form(r_minus_s, IndependentTransform(NORMAL_RS))
    # ∇_u g = (σR, -σS): α = (-σR, σS)/norm, and the design point has R* = S*
    np.testing.assert_allclose(r.alpha, np.array([-SD_R, SD_S]) / math.hypot(SD_R, SD_S))
    assert r.x_star[0] == pytest.approx(r.x_star[1], rel=1e-12)
    # one HL-RF step lands on the MPP of a linear limit state; the second gradient confirms it
    assert r.iterations == 1


@pytest.mark.parametrize("rho", [0.5, -0.4])
def test_correlated_normal_r_minus_s_through_nataf(rho):
    t = NatafTransform(NORMAL_RS, [[1.0, rho], [rho, 1.0]])
    exact = (MU_R - MU_S) / math.sqrt(SD_R**2 + SD_S**2 - 2 * rho * SD_R * SD_S)
    for method in METHODS:
        r = form(r_minus_s, t, method=method)
        assert r.converged and r.beta == pytest.approx(exact, abs=10 * G_TOL)


def test_failing_origin_gives_a_negative_beta():
    t = IndependentTransform([stats.norm(MU_S, SD_S), stats.norm(MU_R, SD_R)])  # R < S on average
    r = form(r_minus_s, t)
    assert r.converged and r.beta == pytest.approx(-BETA_NORMAL, abs=10 * G_TOL)
    assert r.pf == pytest.approx(stats.norm.cdf(BETA_NORMAL), rel=1e-7) and r.pf > 0.5


def test_analytic_gradient_is_used_and_saves_calls():
    t = IndependentTransform(CUBIC)
    fd = form(cubic, t)
    an = form(cubic, t, gradient=cubic_gradient)
    assert an.converged and an.beta == pytest.approx(BETA_CUBIC, abs=10 * G_TOL)
    assert an.limit_state.analytic_jacobian and not fd.limit_state.analytic_jacobian
    # 2n = 4 points per finite-difference gradient against one analytic call
    assert an.model_calls < fd.model_calls / 2


def test_function_model_and_cached_model_limit_states_are_counted():
    model = FunctionModel(lambda pts, r, s: np.full_like(pts, r - s), [0.0], ("r", "s"))
    cached = CachedModel(model)
    r = form(cached, IndependentTransform(NORMAL_RS))
    assert r.converged and r.beta == pytest.approx(BETA_NORMAL, abs=10 * G_TOL)
    assert cached.n_evaluations == r.model_calls  # every u-space call reached the x model once
    ls = limit_state_model(cached)  # on u directly: used as is
    assert ls is cached


def test_limit_state_directly_in_u_space():
    beta = 2.5
    r = form(lambda u: beta - (u[0] + u[1] + u[2]) / math.sqrt(3.0), dim=3)
    assert r.converged and r.beta == pytest.approx(beta, abs=10 * G_TOL)
    np.testing.assert_array_equal(r.x_star, r.u_star)


def test_ihlrf_converges_where_plain_hlrf_cycles():
    def g(u):
        return 3.0 - u[1] + math.sin(3.0 * u[0])

    plain = form(g, dim=2, method="hlrf")
    improved = form(g, dim=2, method="ihlrf")
    reference = form(g, dim=2, method="slsqp")
    assert not plain.converged and "no convergence" in plain.message
    assert improved.converged and reference.converged
    assert improved.beta == pytest.approx(reference.beta, abs=10 * G_TOL)


def test_non_convergence_is_reported_or_raised():
    t = IndependentTransform(CUBIC)
    r = form(cubic, t, max_iter=2)
    assert not r.converged
    assert "no convergence in 2 iterations" in r.message and r.iterations == 2
    assert math.isfinite(r.beta) and r.residual.g > G_TOL
    with pytest.raises(UncertaintyError, match="no convergence") as err:
        form(cubic, t, max_iter=2, strict=True)
    assert err.value.field == "form" and "\n" not in str(err.value)
    with pytest.raises(UncertaintyError, match="SORM needs a converged MPP"):
        sorm(r)


def test_bad_arguments():
    with pytest.raises(UncertaintyError, match="unknown MPP search") as err:
        form(cubic, IndependentTransform(CUBIC), method="newton")
    assert err.value.field == "method"
    with pytest.raises(UncertaintyError, match="needs dim"):
        form(lambda u: u[0])
    with pytest.raises(UncertaintyError, match="transform maps 2"):
        form(
            FunctionModel(lambda p, a, b, c: p + a + b + c, [0.0], ("a", "b", "c")),
            IndependentTransform(CUBIC),
        )
    with pytest.raises(UncertaintyError, match="one output"):
        form(FunctionModel(lambda p, a, b: p + a + b, [0.0, 1.0], ("a", "b")), dim=2)


# ------------------------------------------------------------------------------------- SORM
def _paraboloid(beta, kappa):
    kappa = np.asarray(kappa, float)

    def g(u):  # failure u_n ≥ β + ½ Σ κ_i u_i²; g(0) = β > 0
        return beta - u[-1] + 0.5 * float(kappa @ u[:-1] ** 2)

    return g


@pytest.mark.parametrize("kappa", [[0.3], [0.5, 0.5], [0.4, -0.2, 0.1]])
def test_sorm_recovers_the_curvatures_and_breitung_of_a_paraboloid(kappa):
    beta = 2.0
    r = form(_paraboloid(beta, kappa), dim=len(kappa) + 1)
    assert r.converged and r.beta == pytest.approx(beta, abs=10 * G_TOL)
    s = sorm(r)
    # central second differences with h = ε^(1/4): error ~ √ε ≈ 1e-8 relative to ‖∇²g‖
    np.testing.assert_allclose(s.kappa, np.sort(kappa), atol=1e-6)
    # Breitung (1984): pf = Φ(-β) Π (1 + β κ_i)^(-1/2)
    exact = stats.norm.sf(beta) * np.prod(1.0 + beta * np.asarray(kappa)) ** -0.5
    assert s.pf_breitung == pytest.approx(exact, rel=1e-6)
    assert s.beta_breitung == pytest.approx(stats.norm.isf(exact), rel=1e-6)
    # central-difference Hessian: 2n points on the diagonal, 4 per pair off it (g(u*) cached)
    n = len(kappa) + 1
    assert s.valid and s.model_calls == 2 * n**2


def test_breitung_and_tvedt_of_given_curvatures():
    beta, kappa = 2.0, np.array([0.5, 0.5])
    assert breitung(beta, kappa) == pytest.approx(stats.norm.sf(2.0) / 2.0, rel=1e-14)
    assert breitung(beta, np.zeros(3)) == stats.norm.sf(2.0)
    assert tvedt(beta, np.zeros(3)) == pytest.approx(stats.norm.sf(2.0), rel=1e-14)
    assert math.isnan(breitung(2.0, [-0.5])) and math.isnan(tvedt(2.0, [-0.4]))


def test_parabolic_pf_equals_the_exact_paraboloid_probability():
    # two equal curvatures: ½ κ (v1² + v2²) = κ V with V ~ Exp(1), so
    # P = ∫ e^{-v} Φ(-β - κ v) dv = Φ(-β) - exp(β/κ + 1/(2κ²)) Φ(-β - 1/κ)   (κ > 0)
    for beta, k in ((2.0, 0.5), (4.0, 0.2), (0.5, 1.5)):
        exact = stats.norm.sf(beta) - math.exp(beta / k + 0.5 / k**2) * stats.norm.sf(beta + 1 / k)
        assert parabolic_pf(beta, [k, k]) == pytest.approx(exact, rel=1e-9)
    # one curvature of either sign: P = E[Φ(-β - κ v²/2)], v ~ N(0, 1), by quadrature
    for beta, k in ((3.0, 0.4), (3.0, -0.2), (1.0, -2.0), (6.0, 1.0)):
        ref = integrate.quad(
            lambda v, b=beta, k=k: stats.norm.sf(b + 0.5 * k * v * v) * stats.norm.pdf(v),
            -np.inf,
            np.inf,
            epsabs=0,
            epsrel=1e-12,
        )[0]
        assert parabolic_pf(beta, [k]) == pytest.approx(ref, rel=1e-8)


def test_sorm_flags_a_saddle_point_where_one_plus_beta_kappa_is_negative():
    # u2 = 3 - ½ u1²: on the axis the HL-RF iteration stops at the saddle (0, 3), κ = -1
    r = form(lambda u: 3.0 - u[1] - 0.5 * u[0] ** 2, dim=2)
    assert r.converged and r.beta == pytest.approx(3.0, abs=10 * G_TOL)
    s = sorm(r)
    assert not s.valid and "1 + β κ ≤ 0" in s.message
    assert math.isnan(s.pf_breitung) and math.isnan(s.pf_tvedt)
    assert s.kappa[0] == pytest.approx(-1.0, abs=1e-6)
    assert math.isfinite(s.pf_parabolic) and s.pf_parabolic > r.pf
    # started off the axis, the search finds the true MPPs (±2, 1), β = √5, where 1 + β κ > 0
    r2 = form(lambda u: 3.0 - u[1] - 0.5 * u[0] ** 2, u0=np.array([0.1, 0.0]))
    assert r2.converged and r2.beta == pytest.approx(math.sqrt(5.0), abs=10 * G_TOL)
    assert sorm(r2).valid


def test_sorm_with_a_failing_origin_uses_the_complement():
    beta, k = 2.0, 0.5
    g = _paraboloid(beta, [k])
    r = form(lambda u: -g(u), dim=2)  # failure is now the side of the paraboloid with the origin
    assert r.converged and r.beta == pytest.approx(-beta, abs=10 * G_TOL)
    s = sorm(r)
    assert s.kappa[0] == pytest.approx(k, abs=1e-6)
    assert s.pf_breitung == pytest.approx(1.0 - breitung(beta, [k]), rel=1e-9)
    assert s.pf_parabolic == pytest.approx(1.0 - parabolic_pf(beta, [k]), rel=1e-9)
    assert s.beta_breitung < 0


# ------------------------------------------------------------------------ OpenTURNS peer check
def _openturns_marginals(name):
    if name == "lognormal":
        return [ot.LogNormal(math.log(d.kwds["scale"]), d.kwds["s"]) for d in (LOGN_R, LOGN_S)]
    if name == "linear":
        return [ot.Normal(MU_R, SD_R), ot.Normal(MU_S, SD_S)]
    return [ot.Normal(10.0, 5.0), ot.Normal(10.0, 5.0)]


def _openturns_form(name, g, solver_class):
    """OpenTURNS FORM from the mean point; returns (β, number of g evaluations)."""
    calls = [0]

    def counted(x):
        calls[0] += 1
        return [g(np.asarray(x))]

    dist = ot.JointDistribution(_openturns_marginals(name))
    fun = ot.PythonFunction(2, 1, counted)  # gradients by OpenTURNS's finite differences
    event = ot.ThresholdEvent(ot.CompositeRandomVector(fun, ot.RandomVector(dist)), ot.Less(), 0.0)
    solver = solver_class()
    solver.setStartingPoint(dist.getMean())
    algo = ot.FORM(solver, event)
    algo.run()
    return algo.getResult().getHasoferReliabilityIndex(), calls[0]


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_beta_agrees_with_openturns(name):
    marginals, g, exact = PROBLEMS[name]
    t = IndependentTransform(marginals)
    ours = {m: form(g, t, method=m) for m in METHODS}
    theirs = {s.__name__: _openturns_form(name, g, s) for s in (ot.AbdoRackwitz, ot.SQP, ot.Cobyla)}
    print(f"\n{name}: exact beta = {exact:.10f}")
    for m, r in ours.items():
        print(f"  ours      {m:12s} beta = {r.beta:.10f}  model calls = {r.model_calls}")
    for s, (b, n) in theirs.items():
        print(f"  openturns {s:12s} beta = {b:.10f}  model calls = {n}")
    for r in ours.values():
        assert r.converged
        for b, _ in theirs.values():
            # 1e-5: OpenTURNS's default solver tolerances (Cobyla's are the loosest)
            assert abs(r.beta - b) < 1e-5


def test_sorm_agrees_with_openturns_on_the_cubic_problem():
    r = form(cubic, IndependentTransform(CUBIC))
    s = sorm(r)
    dist = ot.JointDistribution(_openturns_marginals("cubic"))
    fun = ot.SymbolicFunction(["x1", "x2"], ["x1^3 + x2^3 - 18"])  # analytic Hessian
    event = ot.ThresholdEvent(ot.CompositeRandomVector(fun, ot.RandomVector(dist)), ot.Less(), 0.0)
    solver = ot.AbdoRackwitz()
    solver.setStartingPoint(dist.getMean())
    algo = ot.SORM(solver, event)
    algo.run()
    ref = algo.getResult()
    print(
        f"\ncubic SORM: Breitung ours {s.pf_breitung:.8e} openturns "
        f"{ref.getEventProbabilityBreitung():.8e}; Tvedt ours {s.pf_tvedt:.8e} openturns "
        f"{ref.getEventProbabilityTvedt():.8e}; exact paraboloid {s.pf_parabolic:.8e}"
    )
    # 1e-5 relative: our Hessian is by finite differences (~1e-8), theirs analytic
    assert s.pf_breitung == pytest.approx(ref.getEventProbabilityBreitung(), rel=1e-5)
    assert s.pf_tvedt == pytest.approx(ref.getEventProbabilityTvedt(), rel=1e-5)
    assert s.kappa[-1] == pytest.approx(ref.getSortedCurvatures()[-1], rel=1e-5)


def test_sorm_uses_an_analytic_hessian_when_given():
    beta, kappa = 2.0, np.array([0.3, -0.1])
    hess = np.diag([*kappa, 0.0])
    r = form(_paraboloid(beta, kappa), dim=3, hessian=lambda u: hess)
    s = sorm(r)
    assert s.model_calls == 1  # one analytic Hessian call, counted as one evaluation
    np.testing.assert_allclose(s.kappa, np.sort(kappa), rtol=1e-14, atol=1e-15)
    with pytest.raises(UncertaintyError, match="only for a limit state on u") as err:
        form(cubic, IndependentTransform(CUBIC), hessian=lambda x: np.eye(2))
    assert err.value.field == "hessian"
