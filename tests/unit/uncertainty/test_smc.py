"""Sequential Monte Carlo pieces (uncertainty/smc.py): quantile laws, weights, resampling."""

import numpy as np
import pytest

from uncertainty.smc import (
    QUANTILE_LEVELS,
    TAIL_SHARE,
    QuantileLaw,
    effective_sample_size,
    normalised_weights,
    systematic_resample,
)


def test_quantile_law_of_a_uniform_sample_has_its_density():
    rng = np.random.default_rng(0)
    x = rng.uniform(2.0, 4.0, 200_000)
    law = QuantileLaw.fit(np.zeros_like(x), x, 1.0, 1)
    # density 1/2 on [2, 4]: statistical bound at 2e5 draws (quantile error ~ 1e-3 of the width
    # of a 5% interval, so the density is within 3%)
    inside = np.exp(law.log_density(0.0, np.array([2.3, 3.0, 3.7])))
    assert np.allclose(inside, 0.5, rtol=0.03)


def test_tails_decay_exponentially_beyond_the_range():
    law = QuantileLaw(1.0, np.linspace(0.0, 1.0, len(QUANTILE_LEVELS))[None])
    span = 0.95 - 0.05  # 95% - 5% quantiles
    at_edge = law.log_density(0.0, 1.0)
    one_width = law.log_density(0.0, 1.0 + TAIL_SHARE * span)
    assert one_width == pytest.approx(at_edge - 1.0, abs=1e-12)
    below = law.log_density(0.0, -2.0 * TAIL_SHARE * span)
    assert below == pytest.approx(law.log_density(0.0, 0.0) - 2.0, abs=1e-12)
    # ordered far out: what ranks particles that are all outside the forward range
    assert law.log_density(0.0, 50.0) < law.log_density(0.0, 5.0) < at_edge


def test_time_bins_and_empty_bins_use_the_nearest_earlier_one():
    t = np.array([0.0] * 50 + [2.5] * 50)
    x = np.concatenate([np.linspace(0, 1, 50), np.linspace(10, 11, 50)])
    law = QuantileLaw.fit(t, x, 1.0, 4)  # bin 1 empty; bin 2 holds t = 2.5; bin 3 empty
    assert np.isnan(law.quantiles[1, 0]) and np.isnan(law.quantiles[3, 0])
    assert np.array_equal(law.row(1.5), law.row(0.2))
    assert np.array_equal(law.row(9.0), law.row(2.5))
    back = QuantileLaw.from_doc(law.to_doc())
    assert np.array_equal(np.isnan(back.quantiles), np.isnan(law.quantiles))
    with pytest.raises(ValueError, match="non-decreasing"):
        QuantileLaw.from_doc({"bin_width": 1.0, "quantiles": [list(range(21))[::-1]]})


def test_weights_and_effective_sample_size():
    assert effective_sample_size(np.zeros(8)) == pytest.approx(8.0)
    assert effective_sample_size(np.array([0.0, -np.inf, -np.inf])) == pytest.approx(1.0)
    w = normalised_weights(np.array([np.log(3.0), 0.0, -np.inf]))
    assert np.allclose(w, [0.75, 0.25, 0.0])
    assert np.allclose(normalised_weights(np.full(4, -np.inf)), 0.25)


def test_systematic_resampling_keeps_expected_counts():
    w = np.array([0.5, 0.25, 0.125, 0.125])
    for u in (0.0, 0.3, 0.999):
        idx = systematic_resample(w, u)
        counts = np.bincount(idx, minlength=4)
        # systematic resampling: each count is floor or ceil of n w_i (Doucet & Johansen §3.4)
        assert np.all(np.abs(counts - 4 * w) < 1)
        assert np.all(np.diff(idx) >= 0)
    with pytest.raises(ValueError):
        systematic_resample(w, 1.0)
