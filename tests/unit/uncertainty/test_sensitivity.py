"""Sobol' and Morris designs and indices (uncertainty/sensitivity.py): the Ishigami function's
closed-form indices, the inverse CDFs that drive body inputs from design coordinates, and the
seeded mapping of laws without one."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from uncertainty import random_body as rb
from uncertainty import sensitivity as gsa
from uncertainty.errors import UncertaintyError

ISHIGAMI = gsa.SensitivityProblem(("x1", "x2", "x3"), ("x1", "x2", "x3"))


def test_ishigami_closed_form_matches_the_primer():
    # Saltelli et al. (2008) §1.2.3 / issue 20: S1 = 0.314, 0.442, 0; ST = 0.558, 0.442, 0.244
    ref = gsa.ishigami_indices(7.0, 0.1)
    assert ref["S1"] == pytest.approx([0.3139, 0.4424, 0.0], abs=5e-5)
    assert ref["ST"] == pytest.approx([0.5576, 0.4424, 0.2437], abs=5e-5)


def test_ishigami_indices_within_their_intervals_at_4096():
    x = gsa.sobol_design(ISHIGAMI, 4096, seed=20)
    y = gsa.ishigami(-np.pi + 2 * np.pi * x)
    res = gsa.sobol_indices(ISHIGAMI, y, seed=21)
    ref = gsa.ishigami_indices()
    for key in ("S1", "ST"):
        err = np.abs(res[key] - ref[key])
        assert np.all(err <= res[f"{key}_conf"]), (key, res[key], res[f"{key}_conf"])
        assert np.all(res[f"{key}_conf"] < 0.05)  # informative intervals at N = 4096


def test_designs_are_seeded_and_sized():
    a = gsa.sobol_design(ISHIGAMI, 64, seed=5)
    assert a.shape == (64 * 5, 3) and np.all((a >= 0) & (a < 1))
    assert np.array_equal(a, gsa.sobol_design(ISHIGAMI, 64, seed=5))
    assert not np.array_equal(a, gsa.sobol_design(ISHIGAMI, 64, seed=6))
    assert gsa.sobol_design(ISHIGAMI, 8, 1, second_order=True).shape == (8 * 8, 3)
    m = gsa.morris_design(ISHIGAMI, 10, seed=5)
    assert m.shape == (40, 3)
    assert set(np.unique(m)) <= {0.125, 0.375, 0.625, 0.875}  # stratum midpoints of p = 4
    with pytest.raises(UncertaintyError, match="power of 2"):
        gsa.sobol_design(ISHIGAMI, 100, seed=1)


def test_groups_report_one_index_per_group():
    p = gsa.SensitivityProblem(("a", "b", "c"), ("g", "g", "c"))
    assert p.group_names == ("g", "c") and p.salib()["groups"] == ["g", "g", "c"]
    x = gsa.sobol_design(p, 1024, seed=3)
    y = x[:, 0] + x[:, 1]  # c has no effect; g explains everything
    res = gsa.sobol_indices(p, y, seed=4)
    assert res["S1"].shape == (2,)
    assert res["S1"][0] == pytest.approx(1.0, abs=res["S1_conf"][0] + 1e-9)
    assert abs(res["ST"][1]) <= res["ST_conf"][1] + 1e-12


def test_morris_effects_of_a_linear_model_are_exact():
    # y = 3 u1 - 2 u2: every elementary effect per unit of the design coordinate is the slope
    x = gsa.morris_design(ISHIGAMI, 12, seed=8)
    res = gsa.morris_indices(ISHIGAMI, x, 3 * x[:, 0] - 2 * x[:, 1], seed=9)
    assert res["mu_star"] == pytest.approx([3.0, 2.0, 0.0], abs=1e-12)
    assert res["mu"] == pytest.approx([3.0, -2.0, 0.0], abs=1e-12)
    assert res["sigma"] == pytest.approx([0.0, 0.0, 0.0], abs=1e-12)


def test_refuses_non_finite_outputs_and_counts():
    x = gsa.sobol_design(ISHIGAMI, 8, seed=1)
    y = gsa.ishigami(x)
    y[3] = np.nan
    with pytest.raises(UncertaintyError, match="1 of 40 outputs are not finite"):
        gsa.sobol_indices(ISHIGAMI, y)


def test_gamma_quantile_is_the_mass_law():
    # Batou & Soize Eq. (17): the same law as the sampler (KS test of 4000 quantile draws
    # against 4000 sampler draws; p > 0.01 for a fixed seed)
    u = (np.arange(4000) + 0.5) / 4000
    q = gsa.gamma_quantile(u, 3000.0, 0.5)
    draws = rb.sample_mass(np.random.default_rng(1), 3000.0, 0.5, size=4000)
    assert stats.ks_2samp(q, draws).pvalue > 0.01
    assert np.mean(q) == pytest.approx(3000.0, rel=2e-3)  # midpoint rule on the quantiles


def test_box_com_quantile_is_the_exact_sampler_law():
    domain = rb.BoxDomain([0.55, 0.0, 0.5], [0.5, 0.2, 0.02])
    r0 = np.array([0.6, 0.0, 0.5])
    lam, _ = rb.com_multipliers(domain, r0)
    u = np.random.default_rng(2).random((4000, 3))
    q = np.array([gsa.box_com_quantile(row, domain.center, domain.size, lam) for row in u])
    exact = rb.sample_com(np.random.default_rng(3), domain, r0, size=4000, method="exact")
    for j in range(3):
        assert stats.ks_2samp(q[:, j], exact[:, j]).pvalue > 0.01
    assert np.all(domain.contains(q))
    # the mean of the law is r0 (Eq. 22): within 4 standard errors
    se = q.std(axis=0) / np.sqrt(len(q))
    assert np.all(np.abs(q.mean(axis=0) - r0) <= 4 * se + 1e-12)


def test_seeded_generator_is_a_function_of_the_coordinate_with_the_right_law():
    a = gsa.seeded_generator(0.25, 7, 1).random(3)
    assert np.array_equal(a, gsa.seeded_generator(0.25, 7, 1).random(3))
    assert not np.array_equal(a, gsa.seeded_generator(0.25 + 2**-30, 7, 1).random(3))
    assert not np.array_equal(a, gsa.seeded_generator(0.25, 7, 2).random(3))
    # distinct design coordinates give independent draws of the law: SG0+ traces driven by
    # the 1024 first coordinates of a Sobol' column against direct draws
    u = gsa.sobol_design(gsa.SensitivityProblem(("g",), ("g",)), 1024, seed=4)[:1024, 0]
    seeded = [np.trace(rb.sample_sg0(gsa.seeded_generator(c, 9, 0), 0.4)) for c in u]
    direct = np.trace(rb.sample_sg0(np.random.default_rng(5), 0.4, size=1024), axis1=1, axis2=2)
    assert stats.ks_2samp(seeded, direct).pvalue > 0.01


def test_aggregate_weights_by_variance():
    s = np.array([[1.0, 0.0], [0.0, 1.0], [np.nan, np.nan]])
    assert gsa.aggregate_indices(s, np.array([3.0, 1.0, 0.0])) == pytest.approx([0.75, 0.25])
