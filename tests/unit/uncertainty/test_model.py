"""The Model protocol: function adapter, counting and caching, noise-aware finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from uncertainty.errors import UncertaintyError
from uncertainty.examples.falling_object import FALLING_OBJECT, position
from uncertainty.model import (
    MACHINE_NOISE,
    CachedModel,
    FunctionModel,
    Model,
    ResponseFunction,
    estimate_noise,
)

T = np.array([1.1, 1.4, 2.0, 3.0, 5.0])
X = np.array([0.106, 1.0])  # (c, t0)


def test_function_model_is_a_model_and_names_inputs_and_outputs():
    m = FunctionModel(FALLING_OBJECT, T, ("c", "t0"), {"g": 9.81})
    assert isinstance(m, Model)
    cm = CachedModel(m)
    out = cm({"c": 0.106, "t0": 1.0})
    assert list(out) == [f"y[{k}]" for k in range(5)]
    np.testing.assert_array_equal(list(out.values()), position(T, 9.81, 0.106, 1.0))
    with pytest.raises(UncertaintyError, match="expected exactly c, t0"):
        cm({"c": 0.1})


def test_function_model_rejects_unknown_or_missing_parameters():
    with pytest.raises(UncertaintyError, match="not a parameter"):
        FunctionModel(FALLING_OBJECT, T, ("c", "mass"), {"g": 9.81, "t0": 1.0})
    with pytest.raises(UncertaintyError, match="no value for g"):
        FunctionModel(FALLING_OBJECT, T, ("c", "t0"))


def test_cache_counts_each_point_once():
    cm = CachedModel(FunctionModel(FALLING_OBJECT, T, ("c", "t0"), {"g": 9.81}))
    a = cm.evaluate(X)
    b = cm.evaluate(X.copy())
    assert a is b and cm.n_evaluations == 1 and cm.n_requests == 2
    with pytest.raises(ValueError):
        a[0] = 1.0  # cached results are read-only
    cm.evaluate(X + [1e-3, 0])
    assert cm.n_evaluations == 2


def test_batch_evaluation_equals_single_evaluations():
    cm = CachedModel(FunctionModel(FALLING_OBJECT, T, ("c", "t0"), {"g": 9.81}))
    P = np.array([[0.1, 1.0], [0.2, 0.9], [-0.01, 1.1]])
    Y = cm.evaluate_many(P)
    for p, y in zip(P, Y, strict=True):
        np.testing.assert_allclose(y, position(T, 9.81, *p), rtol=1e-15)
    assert cm.n_evaluations == 3


def test_finite_differences_match_analytic_derivatives():
    analytic = CachedModel(FunctionModel(FALLING_OBJECT, T, ("c", "t0"), {"g": 9.81}))
    plain = CachedModel(FunctionModel(position, T, ("c", "t0"), {"g": 9.81}))
    assert analytic.analytic_jacobian and analytic.analytic_hessian
    assert not plain.analytic_jacobian and not plain.analytic_hessian
    J, Jfd = analytic.jacobian(X), plain.jacobian(X)
    H, Hfd = analytic.hessian(X), plain.hessian(X)
    # central differences with h = ε^(1/3) s (ε = MACHINE_NOISE): error ~ ε^(2/3) ≈ 6e-11 of the
    # scale; second differences with h = ε^(1/4) s: error ~ ε^(1/2) ≈ 2e-8. A factor 100 margin
    # covers the derivatives' magnitudes (z''' ~ 10 z').
    assert np.max(np.abs(Jfd - J)) < 100 * MACHINE_NOISE ** (2 / 3) * np.max(np.abs(J))
    assert np.max(np.abs(Hfd - H)) < 100 * MACHINE_NOISE**0.5 * np.max(np.abs(H))
    # cost: 2 n points for the Jacobian, 1 + 2n + 4 n(n−1)/2 for the Hessian
    assert plain.n_evaluations == 2 * 2 + (1 + 4 + 4)


def test_steps_follow_the_declared_noise():
    cm = CachedModel(FunctionModel(position, T, ("c", "t0"), {"g": 9.81}, noise=1e-12))
    np.testing.assert_allclose(cm.steps(X, 1), 1e-4 * np.array([1.0, 1.0]), rtol=1e-6)
    cm = CachedModel(
        FunctionModel(position, T, ("c", "t0"), {"g": 9.81}, noise=1e-12), typical=[0.01, 1.0]
    )
    np.testing.assert_allclose(cm.steps(X, 2), 1e-3 * np.array([0.106, 1.0]), rtol=1e-6)


def test_estimate_noise_recovers_a_known_noise_level():
    rng = np.random.default_rng(3)
    level = 1e-9

    def noisy(x):
        smooth = np.array([np.sin(x[0]) + 2.0, np.exp(x[0])])
        return smooth * (1 + level * rng.standard_normal(2))

    est = estimate_noise(noisy, np.array([0.3]), np.array([1.0]), h=1e-4, m=8)
    # Moré & Wild report their estimator within a factor ~2 of the truth for m = 8 (9 values)
    assert np.all((est > level / 3) & (est < 3 * level)), est
    smooth = estimate_noise(np.sin, np.array([0.3]), np.array([1.0]), h=1e-3)
    assert np.all(smooth < 1e-14), smooth  # a closed form: noise at the roundoff level


def test_response_from_a_plain_callable_takes_parameters_after_x():
    def f(x, a, b=2.0):
        return a * x + b

    r = ResponseFunction.from_callable(f)
    assert r.parameters == ("a", "b") and r.derivatives is None
    with pytest.raises(UncertaintyError, match="points x first"):
        ResponseFunction.from_callable(lambda: 0)
