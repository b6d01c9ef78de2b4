"""Ensemble statistics against exact answers (Gaussian responses with known quantiles)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from workbench.ensemble.statistics import (
    confidence_band,
    mean_response,
    mean_square_convergence,
    summarize_samples,
)


def _gaussian(n=20000, nt=5, seed=0):
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, nt)
    mu, sigma = np.sin(t), 0.1 + t
    Y = mu[None, :, None] + sigma[None, :, None] * rng.standard_normal((n, nt, 1))
    return t, mu, sigma, Y


def test_mean_and_band_match_the_exact_quantiles():
    t, mu, sigma, Y = _gaussian()
    n = Y.shape[0]
    m = mean_response(Y)[:, 0]
    # 4 standard errors of the mean: a fixed-seed statistical bound
    assert np.all(np.abs(m - mu) < 4 * sigma / np.sqrt(n))
    lo, hi = confidence_band(Y, 0.9)
    z = norm.ppf(0.95)
    # standard error of a sample quantile: sqrt(p(1-p)/n) / pdf(z) in units of sigma
    se = np.sqrt(0.05 * 0.95 / n) / norm.pdf(z) * sigma
    assert np.all(np.abs(hi[:, 0] - (mu + z * sigma)) < 4 * se)
    assert np.all(np.abs(lo[:, 0] - (mu - z * sigma)) < 4 * se)


def test_failed_realizations_are_left_out():
    t, mu, sigma, Y = _gaussian(n=100)
    Z = Y.copy()
    Z[3, 2:] = np.nan  # a run that stopped early
    assert np.array_equal(mean_response(Z), np.delete(Y, 3, axis=0).mean(axis=0))


def test_convergence_of_identical_realizations_is_flat():
    t = np.linspace(0, 2, 201)
    y = np.stack([np.cos(t)] * 10)[..., None]
    conv = mean_square_convergence(y, t)
    exact = np.sqrt(np.trapezoid(np.cos(t) ** 2, t))
    assert np.allclose(conv, exact, rtol=1e-12)


def test_bad_probability_level():
    with pytest.raises(ValueError):
        confidence_band(np.zeros((3, 2, 1)), 1.0)


def test_summarize_samples():
    s = summarize_samples(np.array([1.0, 2.0, 3.0, np.nan]))
    assert s["n"] == 3 and s["mean"] == 2.0 and s["std"] == 1.0 and s["cv"] == 0.5
