"""Two-sample measures (uncertainty/two_sample.py) against hand-computed cases: total variation
of identical and disjoint samples, of a hand-binned pair, the noise floor's bins, and the
classifier two-sample test at chance and on separated samples (Lopez-Paz & Oquab 2017)."""

from __future__ import annotations

import numpy as np
import pytest

from uncertainty.two_sample import (
    classifier_accuracy,
    distance_with_floor,
    fit_logistic,
    reference_bins,
    total_variation,
)


def test_identical_samples_are_at_distance_zero_and_disjoint_ones_at_one():
    rng = np.random.default_rng(0)
    a = rng.normal(size=300)
    assert total_variation(a, a.copy()) == 0.0
    cuts = reference_bins(a, bins=10)
    assert total_variation(a, rng.permutation(a), cuts) == 0.0
    assert total_variation(a, a + 100.0, cuts) == 1.0  # beyond the reference: a bin of its own
    assert total_variation(a, a - 100.0, cuts) == 1.0
    assert total_variation([0, 0, 1], [2, 3]) == 1.0  # discrete: disjoint values


def test_hand_computed_distances():
    # discrete: p_a = (1/2, 1/2, 0), p_b = (1/4, 1/4, 1/2): ½ (1/4 + 1/4 + 1/2) = 1/2
    assert total_variation([1, 2], [1, 2, 3, 3]) == pytest.approx(0.5, abs=0)
    # bins cut at 1 and 2: a = 0.5, 1.5, 2.5, 2.7 → (1/4, 1/4, 1/2); b = 0.1, 0.2 → (1, 0, 0)
    # ½ (3/4 + 1/4 + 1/2) = 3/4
    assert total_variation([0.5, 1.5, 2.5, 2.7], [0.1, 0.2], [1.0, 2.0]) == 0.75
    # NaNs are dropped, values beyond the cuts go to the open end bins
    assert total_variation([np.nan, 5.0], [1e300], [1.0, 2.0]) == 0.0


def test_reference_bins_are_quantiles_of_the_references_only():
    ref = np.arange(100.0)
    cuts = reference_bins(ref, bins=4)
    np.testing.assert_array_equal(cuts, [0.0, 24.0, 49.0, 74.0, np.nextafter(99.0, 100.0)])
    # a discrete statistic merges tied cut points: 1 | 2 split, plus the two outer cuts
    np.testing.assert_array_equal(
        reference_bins(np.repeat([1.0, 2.0], 50), bins=10), [1.0, 2.0, np.nextafter(2.0, 3.0)]
    )
    d = distance_with_floor(ref, ref + 0.5, ref + 1e9, bins=4)
    assert d.distance == 1.0 and d.bins == 6  # the sample lies above both references
    # the second reference: 0.5..99.5 vs 0..99 in the bins [0,24), [24,49), [49,74), [74,99],
    # above: 24/100, 25, 25, 25, 1 against 24, 25, 25, 26, 0 → ½ (1 + 1)/100
    assert d.floor == pytest.approx(0.01, abs=1e-15)
    assert d.ratio == pytest.approx(100.0)


def test_floor_of_two_samples_of_one_law_is_about_sqrt_bins_over_pi_n():
    rng = np.random.default_rng(1)
    floors = [
        distance_with_floor(rng.normal(size=200), rng.normal(size=200), rng.normal(size=200)).floor
        for _ in range(200)
    ]
    # E[TV] ≈ sqrt(B / (π n)) = sqrt(10 / (200 π)) = 0.126 for 10 equally filled bins
    assert np.mean(floors) == pytest.approx(np.sqrt(10 / (200 * np.pi)), rel=0.15)


def test_logistic_fit_recovers_a_known_model():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(20000, 2))
    beta = np.array([0.5, 2.0, -1.0])
    y = rng.random(len(X)) < 1 / (1 + np.exp(-(beta[0] + X @ beta[1:])))
    fit = fit_logistic(X, y, ridge=1e-8)
    np.testing.assert_allclose(fit, beta, atol=0.1)  # standard errors ≈ 0.02–0.03 at n = 20 000


def test_classifier_is_at_chance_on_one_law_and_perfect_on_separated_samples():
    rng = np.random.default_rng(3)
    accs = [
        classifier_accuracy(rng.normal(size=(200, 5)), rng.normal(size=(200, 5)), rng).accuracy
        for _ in range(20)
    ]
    # each accuracy has sd ≈ 0.5/sqrt(400) = 0.025 at chance; the mean of 20 within 0.03
    assert abs(np.mean(accs) - 0.5) < 0.03
    far = classifier_accuracy(rng.normal(size=(200, 5)), 6.0 + rng.normal(size=(200, 5)), rng)
    assert far.accuracy == 1.0 and far.p_value < 1e-100
    # a difference in spread only (same mean): the squared features see it
    wide = classifier_accuracy(rng.normal(size=(200, 3)), 4.0 * rng.normal(size=(200, 3)), rng)
    assert wide.accuracy > 0.85


def test_classifier_is_seeded():
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(50, 3)), 0.3 + rng.normal(size=(50, 3))
    a = classifier_accuracy(X, Y, np.random.default_rng(7))
    b = classifier_accuracy(X, Y, np.random.default_rng(7))
    assert a == b


def test_classifier_refuses_non_finite_features():
    with pytest.raises(ValueError, match="finite"):
        classifier_accuracy(np.full((5, 1), np.inf), np.zeros((5, 1)), np.random.default_rng(0))
