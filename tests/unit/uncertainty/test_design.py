"""Optimal experimental design: Eq. (16)-(21), invariance to σ1, the document's design cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from uncertainty.bayes import prediction_error_covariance
from uncertainty.design import (
    Sensitivity,
    _sorted_times,
    design_entropy,
    entropy_of_batch,
    fisher_information,
    information_entropy,
    optimal_times,
)
from uncertainty.errors import UncertaintyError
from uncertainty.examples.falling_object import FALLING_OBJECT, position, position_derivatives
from uncertainty.model import ResponseFunction

NOMINAL = {"g": 9.81, "c": 0.106, "t0": 1.0}  # θ0 of the document's design example
LAMBDA = 2.0  # s, the document's correlation length


def sens(*params):
    return Sensitivity(FALLING_OBJECT, NOMINAL, params)


def test_entropy_of_one_measurement_is_closed_form():
    """N = 1: Q = (∂z/∂θ)² / (σ1² (1 + η² z²)), Ĩ = ½ ln 2π − ½ ln Q (Eq. 16, 17, 21)."""
    t, s1, eta = 3.0, 0.2, 1.5
    z, dz, _ = position_derivatives(np.array([t]), **NOMINAL)
    Q = dz[0, 1] ** 2 / (s1**2 * (1 + eta**2 * z[0] ** 2))
    expect = 0.5 * math.log(2 * math.pi) - 0.5 * math.log(Q)
    assert design_entropy([t], sens("c"), s1, eta, LAMBDA) == pytest.approx(expect, rel=1e-13)


def test_fisher_matrix_and_entropy_for_several_parameters():
    t = np.array([1.5, 3.0, 7.0])
    z, dz, _ = position_derivatives(t, **NOMINAL)
    S = prediction_error_covariance(t, z, 0.3, 1.0, LAMBDA)
    Q = fisher_information(dz, S)
    np.testing.assert_allclose(Q, dz.T @ np.linalg.inv(S) @ dz, rtol=1e-10)
    np.testing.assert_allclose(Q, Q.T, rtol=1e-12)
    assert information_entropy(Q) == pytest.approx(
        1.5 * math.log(2 * math.pi) - 0.5 * math.log(np.linalg.det(Q)), rel=1e-10
    )
    assert information_entropy(np.zeros((2, 2))) == math.inf  # singular: no information


def test_batch_entropy_equals_single_designs():
    rng = np.random.default_rng(0)
    T = rng.uniform(1, 20, size=(7, 4))
    s = sens("g", "c", "t0")
    batch = entropy_of_batch(T, s, 1.0, 1.0, LAMBDA)
    single = [design_entropy(row, s, 1.0, 1.0, LAMBDA) for row in T]
    np.testing.assert_allclose(batch, single, rtol=1e-12)


def test_entropy_shifts_by_n_theta_ln_sigma1_and_the_design_does_not_move():
    """Σ = σ1²(I + η² ẑẑᵀ∘R): Q ∝ σ1⁻², so Ĩ(σ1) = Ĩ(1) + N_θ ln σ1 and the optimal times are
    independent of σ1, as the document states."""
    s = sens("c", "t0")
    t = np.array([1.3, 2.2, 6.0, 11.0])
    base = design_entropy(t, s, 1.0, 1.0, LAMBDA)
    for s1 in (1e-3, 0.3, 50.0):
        shifted = design_entropy(t, s, s1, 1.0, LAMBDA)
        assert shifted - base == pytest.approx(2 * math.log(s1), rel=1e-10, abs=1e-12)
    designs = [
        optimal_times(
            s, 3, np.random.default_rng(11), sigma1=s1, eta=1.0, correlation_length=LAMBDA
        )
        for s1 in (1.0, 0.01)
    ]
    # the optimizer sees the same objective up to a constant: the same design, to the
    # tolerance of its polish (L-BFGS-B stops when entropy changes < ~1e-10)
    np.testing.assert_allclose(designs[0].times, designs[1].times, atol=1e-4)
    assert designs[1].entropy - designs[0].entropy == pytest.approx(2 * math.log(0.01), abs=1e-8)


@pytest.mark.parametrize("param, t_best", [("g", 1.84), ("c", 20.0), ("t0", 1.44)])
def test_single_measurement_optimum_matches_a_dense_scan(param, t_best):
    """N = 1, η = 1 (Fig. 15): the global optimizer finds the minimum of Ĩ(t) on a 0.001 s scan."""
    s = sens(param)
    scan = np.linspace(1.0, 20.0, 19001)
    e = entropy_of_batch(scan[:, None], s, 1.0, 1.0, LAMBDA)
    res = optimal_times(s, 1, np.random.default_rng(1), eta=1.0, correlation_length=LAMBDA)
    assert res.converged
    assert res.entropy <= e.min() + 1e-9  # no scan point is better
    assert abs(res.times[0] - scan[np.argmin(e)]) < 2e-3
    assert abs(res.times[0] - t_best) < 0.01


def test_two_measurements_of_c_keep_about_8_4_s_apart_for_large_eta():
    """Fig. 16: "for bigger η the two times have an almost constant difference of ≈ 8.5 s"; we
    find 8.44 s (the later time at the interval's end, 20 s), and for η → 0 both times meet."""
    s = sens("c")
    rng = np.random.default_rng(5)
    gaps = []
    for eta in (1.0, 10.0, 1000.0):
        res = optimal_times(s, 2, rng, eta=eta, correlation_length=LAMBDA)
        assert res.converged and res.times[1] == pytest.approx(20.0, abs=1e-6)
        gaps.append(res.times[1] - res.times[0])
    np.testing.assert_allclose(gaps, 8.44, atol=0.01)
    small = optimal_times(s, 2, rng, eta=1e-3, correlation_length=LAMBDA)
    np.testing.assert_allclose(small.times, [20.0, 20.0], atol=1e-6)


def test_design_needs_at_least_as_many_measurements_as_parameters():
    with pytest.raises(UncertaintyError, match="cannot determine 3 parameters"):
        optimal_times(sens("g", "c", "t0"), 2, np.random.default_rng(0))
    # N = N_θ: many candidate designs are singular (equal times); they lose, without overflow
    res = optimal_times(sens("g", "c", "t0"), 3, np.random.default_rng(0), restarts=2)
    assert res.converged and np.isfinite(res.entropy) and np.all(np.diff(res.times) > 0.1)


def test_sorted_time_map_covers_the_sorted_simplex():
    U = np.random.default_rng(2).uniform(size=(1000, 5))
    T = _sorted_times(U, 1.0, 20.0)
    assert np.all(np.diff(T, axis=1) >= 0) and T.min() >= 1.0 and T.max() <= 20.0
    np.testing.assert_allclose(_sorted_times(np.zeros((1, 3)), 1.0, 20.0), [[1.0, 1.0, 1.0]])
    np.testing.assert_allclose(_sorted_times(np.ones((1, 3)), 1.0, 20.0), [[20.0, 20.0, 20.0]])


def test_sensitivity_without_analytic_derivatives_uses_finite_differences():
    plain = Sensitivity(ResponseFunction(position, ("g", "c", "t0")), NOMINAL, ("c", "t0"))
    t = np.array([1.2, 2.0, 5.0, 15.0])
    z1, J1 = plain(t)
    z2, J2 = sens("c", "t0")(t)
    np.testing.assert_array_equal(z1, z2)
    # central differences, h = ε^(1/3) max(|θ|, 1): error ~ ε^(2/3) ≈ 4e-11 of the scale
    np.testing.assert_allclose(J1, J2, rtol=1e-7)
