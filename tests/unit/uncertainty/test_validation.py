"""Time-domain validation metrics (Ao, Hu & Mahadevan 2017): exact equality with plain-loop
references, the metrics' properties, streaming, input errors, random inputs and the beam case.

The references below are written straight from the paper's sums, one indicator at a time, in
exact rational arithmetic (:class:`fractions.Fraction`). The implementation forms every value as
one correctly rounded division of exact integers, and ``float(Fraction)`` is correctly rounded
too, so the two must agree bit for bit: the comparisons use ``==``, no tolerance.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from uncertainty import reliability_counts
from uncertainty import validation as V
from uncertainty.errors import UncertaintyError
from uncertainty.examples.validation import (
    BEAM_BIAS_START,
    BeamProblem,
    ChainProblem,
    _chain_response,
    _system_matrices,
    beam_experiments,
    beam_model_chunks,
    chain_bias,
)
from uncertainty.random_fields import (
    gaussian_process,
    lognormal_parameters,
    sample_lognormal,
    squared_exponential_correlation,
)


def rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


# ------------------------------------------------------------------------- plain-loop references
def _eps(yd, epsilon, lam, j, q):
    """ε of experiment j at instant q: λ |Y_D| (Eq. 33) or the absolute value (scalar/array)."""
    if lam is not None:
        return lam * abs(float(yd[j][q]))
    e = np.asarray(epsilon, dtype=float)
    return float(e) if e.ndim == 0 else float(e[q])


def _inside(ym, yd, epsilon, lam, i_k, j, q) -> int:
    """Eq. (4): I = 1 if |Y_M - Y_D| < ε."""
    d = abs(float(ym[i_k][q]) - float(yd[j][q]))
    return 1 if d < _eps(yd, epsilon, lam, j, q) else 0


def _passed(ym, yd, epsilon, lam, k, j, q) -> int:
    """Eq. (13): I = 1 if |d(τ)| < ε(τ) for every τ <= t_q."""
    return 1 if all(_inside(ym, yd, epsilon, lam, k, j, tau) for tau in range(q + 1)) else 0


def ref_single(ym, yd, *, epsilon=None, lam=None):
    """Eq. (6), (19), (26): one site, averaged over experiments and realizations."""
    M, n_t = len(ym), len(ym[0])
    n = len(yd)
    inst, fp, acc = [], [], []
    for q in range(n_t):
        s = sum(_inside(ym, yd, epsilon, lam, k, j, q) for j in range(n) for k in range(M))
        inst.append(Fraction(s, n * M))
        s = sum(_passed(ym, yd, epsilon, lam, k, j, q) for j in range(n) for k in range(M))
        fp.append(Fraction(s, n * M))
        s = sum(
            _inside(ym, yd, epsilon, lam, k, j, qq)
            for j in range(n)
            for qq in range(q + 1)
            for k in range(M)
        )
        acc.append(Fraction(s, n * (q + 1) * M))
    return inst, fp, acc


def _sites_setup(models, exps, epsilon):
    """Threshold per site, empty curves and every combination (j_1..j_N) of experiments."""
    eps = epsilon if isinstance(epsilon, list) else [epsilon] * len(models)
    out = {"instantaneous": [], "first_passage": [], "accumulated": []}
    return eps, out, list(itertools.product(*[range(len(e)) for e in exps]))


def ref_sites_independent(models, exps, *, epsilon=None, lam=None):
    """Eq. (9), (21), (28): sum over (j_1..j_N) of products of per-site probabilities."""
    N, n_t = len(models), len(models[0][0])
    eps, out, combos = _sites_setup(models, exps, epsilon)
    for q in range(n_t):
        tot = dict.fromkeys(out, Fraction(0))
        for js in combos:
            p_inst = p_fp = p_acc = Fraction(1)
            for i in range(N):
                ym, yd, j, M = models[i], exps[i], js[i], len(models[i])
                p_inst *= Fraction(sum(_inside(ym, yd, eps[i], lam, k, j, q) for k in range(M)), M)
                p_fp *= Fraction(sum(_passed(ym, yd, eps[i], lam, k, j, q) for k in range(M)), M)
                p_acc *= Fraction(
                    sum(
                        _inside(ym, yd, eps[i], lam, k, j, qq)
                        for qq in range(q + 1)
                        for k in range(M)
                    ),
                    (q + 1) * M,
                )
            tot["instantaneous"] += p_inst
            tot["first_passage"] += p_fp
            tot["accumulated"] += p_acc
        for name in out:
            out[name].append(tot[name] / len(combos))
    return out


def ref_sites_correlated(models, exps, *, epsilon=None, lam=None):
    """Eq. (8), (20), (27) by joint Monte Carlo over paired rows k: for each experiment combo,
    the fraction of realizations for which every site is inside (instantaneous, first passage);
    for the accumulated metric each site's instant is drawn independently given k."""
    N, M, n_t = len(models), len(models[0]), len(models[0][0])
    eps, out, combos = _sites_setup(models, exps, epsilon)
    for q in range(n_t):
        tot = dict.fromkeys(out, Fraction(0))
        for js in combos:
            n_inst = n_fp = 0
            p_acc = Fraction(0)
            for k in range(M):
                n_inst += all(
                    _inside(models[i], exps[i], eps[i], lam, k, js[i], q) for i in range(N)
                )
                n_fp += all(_passed(models[i], exps[i], eps[i], lam, k, js[i], q) for i in range(N))
                prod = Fraction(1)
                for i in range(N):
                    hits = sum(
                        _inside(models[i], exps[i], eps[i], lam, k, js[i], qq)
                        for qq in range(q + 1)
                    )
                    prod *= Fraction(hits, q + 1)
                p_acc += prod
            tot["instantaneous"] += Fraction(n_inst, M)
            tot["first_passage"] += Fraction(n_fp, M)
            tot["accumulated"] += p_acc / M
        for name in out:
            out[name].append(tot[name] / len(combos))
    return out


def as_float(values) -> np.ndarray:
    return np.array([float(v) for v in values])


def random_case(seed, M, n_t, n_exp, spread=1.0):
    """Model rows and experiments with a good share of near-threshold differences."""
    g = rng(seed)
    ym = g.normal(0.0, spread, (M, n_t)) + 1.0
    yd = g.normal(0.0, spread, (n_exp, n_t)) + 1.0
    return ym, yd


# ----------------------------------------------------------------- equality with the references
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("threshold", [{"lam": 0.6}, {"epsilon": 0.8}, {"epsilon": "array"}])
def test_single_site_equals_plain_loop_reference(seed, threshold):
    ym, yd = random_case(seed, M=9, n_t=7, n_exp=3)
    if threshold.get("epsilon") == "array":
        threshold = {"epsilon": rng(seed + 100).uniform(0.2, 1.5, 7)}
    res = V.validation_metrics(ym, yd, **threshold)
    inst, fp, acc = ref_single(ym, yd, **threshold)
    assert np.array_equal(res.instantaneous, as_float(inst))
    assert np.array_equal(res.first_passage, as_float(fp))
    assert np.array_equal(res.accumulated, as_float(acc))
    # the single-metric functions give the same bits
    assert np.array_equal(V.instantaneous_reliability(ym, yd, **threshold), res.instantaneous)
    assert np.array_equal(V.first_passage_reliability(ym, yd, **threshold), res.first_passage)
    assert np.array_equal(V.accumulated_reliability(ym, yd, **threshold), res.accumulated)


@pytest.mark.parametrize("seed", [3, 4])
def test_several_sites_independent_equal_reference(seed):
    g = rng(seed)
    # unequal realization and experiment counts per site are allowed without correlation
    models = [g.normal(1.0, 1.0, (7, 5)), g.normal(1.0, 0.7, (5, 5)), g.normal(1.0, 1.2, (6, 5))]
    exps = [g.normal(1.0, 1.0, (2, 5)), g.normal(1.0, 1.0, (3, 5)), g.normal(1.0, 1.0, (1, 5))]
    res = V.validation_metrics(models, exps, lam=0.7, correlated=False)
    ref = ref_sites_independent(models, exps, lam=0.7)
    for name in V.METRICS:
        assert np.array_equal(res.metric(name), as_float(ref[name])), name
    assert res.n_model == (7, 5, 6) and res.n_experiments == (2, 3, 1) and not res.correlated


@pytest.mark.parametrize("seed", [5, 6])
def test_several_sites_correlated_equal_reference(seed):
    g = rng(seed)
    shared = g.normal(0.0, 1.0, (8, 1))  # a shared input makes the sites really correlated
    models = [1.0 + shared + g.normal(0.0, s, (8, 5)) for s in (0.5, 0.8)]
    exps = [g.normal(1.0, 1.0, (3, 5)), g.normal(1.0, 1.0, (2, 5))]
    eps = [0.9, np.linspace(0.5, 1.5, 5)]  # per-site absolute thresholds
    res = V.validation_metrics(models, exps, epsilon=eps, correlated=True)
    ref = ref_sites_correlated(models, exps, epsilon=eps)
    for name in V.METRICS:
        assert np.array_equal(res.metric(name), as_float(ref[name])), name
    assert res.correlated


def test_per_experiment_values_are_eq_3_12_24():
    ym, yd = random_case(7, M=6, n_t=5, n_exp=2)
    res = V.validation_metrics(ym, yd, lam=0.5)
    for j in range(2):
        inst, fp, acc = ref_single(ym, yd[j : j + 1], lam=0.5)
        per = res.per_experiment[0]
        assert np.array_equal(per["instantaneous"][j], as_float(inst))
        assert np.array_equal(per["first_passage"][j], as_float(fp))
        assert np.array_equal(per["accumulated"][j], as_float(acc))


def test_one_site_in_a_list_is_the_single_site_result():
    ym, yd = random_case(8, M=40, n_t=12, n_exp=3)
    single = V.validation_metrics(ym, yd, lam=0.4)
    for correlated in (True, False):
        listed = V.validation_metrics([ym], [yd], lam=0.4, correlated=correlated)
        for name in V.METRICS:
            assert np.array_equal(listed.metric(name), single.metric(name))


def test_two_identical_sites_with_one_experiment():
    """Paired identical sites: the instantaneous and first-passage events coincide (correlated =
    single site) and the independence product squares them (Eq. 9, 21). The accumulated metric
    draws each site's instant on its own, so Eq. (27) becomes E_k[f_k²] with f_k the fraction of
    instants realization k spends inside the threshold."""
    M, n_t = 50, 10
    ym, yd = random_case(9, M=M, n_t=n_t, n_exp=1)
    single = V.validation_metrics(ym, yd, epsilon=1.0)
    joint = V.validation_metrics([ym, ym], [yd, yd], epsilon=1.0, correlated=True)
    indep = V.validation_metrics([ym, ym], [yd, yd], epsilon=1.0, correlated=False)
    for name in ("instantaneous", "first_passage"):
        assert np.array_equal(joint.metric(name), single.metric(name))
        # both sides are exact rationals c²/M² rounded once
        counts = np.rint(single.metric(name) * M).astype(int)
        assert np.array_equal(indep.metric(name), np.array([c * c / M**2 for c in counts]))
    hits = np.cumsum(np.abs(ym - yd) < 1.0, axis=1)  # (M, n_t) instants inside so far
    expected = [int(np.sum(hits[:, q] ** 2)) / (M * (q + 1) ** 2) for q in range(n_t)]
    assert np.array_equal(joint.accumulated, np.array(expected))


# ------------------------------------------------------------------------------------ properties
@pytest.mark.parametrize("correlated", [True, False])
def test_values_in_unit_interval_and_first_passage_non_increasing(correlated):
    g = rng(10)
    models = [g.normal(0.0, 1.0, (300, 60)) for _ in range(2)]
    exps = [g.normal(0.0, 1.0, (3, 60)) for _ in range(2)]
    for model, exp in ((models[0], exps[0]), (models, exps)):
        res = V.validation_metrics(model, exp, epsilon=1.5, correlated=correlated)
        for name in V.METRICS:
            r = res.metric(name)
            assert np.all((r >= 0.0) & (r <= 1.0)), name
        assert np.all(np.diff(res.first_passage) <= 0.0)
        assert np.all(res.first_passage <= res.instantaneous)  # "for all τ <= t" implies t


def test_instantaneous_equals_accumulated_for_one_instant():
    ym, yd = random_case(11, M=200, n_t=1, n_exp=3)
    res = V.validation_metrics(ym, yd, lam=0.8)
    assert np.array_equal(res.instantaneous, res.accumulated)
    assert np.array_equal(res.instantaneous, res.first_passage)
    g = rng(12)
    models = [g.normal(1.0, 1.0, (200, 1)) for _ in range(3)]
    exps = [g.normal(1.0, 1.0, (2, 1)) for _ in range(3)]
    for correlated in (True, False):
        res = V.validation_metrics(models, exps, lam=0.8, correlated=correlated)
        assert np.array_equal(res.instantaneous, res.accumulated)


def test_single_site_accumulated_is_running_mean_of_instantaneous():
    ym, yd = random_case(13, M=100, n_t=30, n_exp=2)
    res = V.validation_metrics(ym, yd, epsilon=1.0)
    running = np.cumsum(res.instantaneous) / np.arange(1, 31)
    # two roundings of the same rational (cumsum of floats vs one exact division): 30 additions
    # of values <= 1 lose at most ~30 ulp of 1
    assert np.allclose(res.accumulated, running, rtol=0.0, atol=30 * np.finfo(float).eps)


def test_accumulated_converges_for_stationary_differences():
    """iid N(0, 1) model rows against zero experiments with ε = 1: every instant has the same
    probability p = P(|Z| < 1); the accumulated reliability settles at p."""
    g = rng(14)
    M, n_t = 2000, 400
    ym = g.standard_normal((M, n_t))
    yd = np.zeros((2, n_t))
    res = V.validation_metrics(ym, yd, epsilon=1.0)
    p = math.erf(1.0 / math.sqrt(2.0))
    # each realization contributes n_t independent Bernoulli(p) draws (the two experiments are
    # identical): standard error of the final value sqrt(p (1 - p) / (M n_t)); 5 SE bound
    se = math.sqrt(p * (1.0 - p) / (M * n_t))
    assert abs(res.accumulated[-1] - p) < 5.0 * se
    # deterministic: a running mean moves by at most 1/(q+1) per instant
    steps = np.abs(np.diff(res.accumulated))
    assert np.all(steps <= 1.0 / np.arange(2, n_t + 1) + 1e-15)
    # and its spread over the last half is far below the instantaneous scatter
    half = res.accumulated[n_t // 2 :]
    assert np.ptp(half) < 0.2 * np.ptp(res.instantaneous)


def test_first_passage_is_cumulative_and_of_instantaneous_indicator():
    """A model row that leaves the band at instant 3 fails for every later t even if it comes
    back: hand-built case."""
    yd = np.zeros((1, 6))
    ym = np.array(
        [
            [0.0, 0.1, 0.2, 2.0, 0.0, 0.0],  # leaves at instant 3, returns
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],  # always inside
            [5.0, 0.0, 0.0, 0.0, 0.0, 0.0],  # fails at once
            [0.0, 0.0, 0.0, 0.0, 0.0, 1.0],  # |d| = ε at the end: not strictly inside (Eq. 4)
        ]
    )
    res = V.validation_metrics(ym, yd, epsilon=1.0)
    assert res.first_passage.tolist() == [0.75, 0.75, 0.75, 0.5, 0.5, 0.25]
    assert res.instantaneous.tolist() == [0.75, 1.0, 1.0, 0.75, 1.0, 0.75]
    assert res.accumulated.tolist() == [0.75, 0.875, 2.75 / 3, 3.5 / 4, 4.5 / 5, 5.25 / 6]


def test_relative_threshold_is_lambda_times_abs_experiment():
    yd = np.array([[1.0, -2.0, 0.0]])
    assert np.array_equal(V.relative_threshold(yd, 0.1), np.array([[0.1, 0.2, 0.0]]))
    # ε = 0 where Y_D = 0: no realization is strictly inside
    ym = np.zeros((5, 3))
    assert V.instantaneous_reliability(ym, yd, lam=0.1)[2] == 0.0


# ------------------------------------------------------------------------------------- streaming
@pytest.mark.parametrize("chunk_size", [1, 7, 64, 10_000])
def test_streaming_is_bit_identical_for_any_chunking(chunk_size):
    g = rng(15)
    ym = g.normal(1.0, 1.0, (301, 40))
    yd = g.normal(1.0, 1.0, (3, 40))
    whole = V.validation_metrics(ym, yd, lam=0.5, chunk_size=10**6)
    pieces = [ym[:100], ym[100:101], ym[101:]]
    streamed = V.streamed_reliability(iter(pieces), yd, lam=0.5, chunk_size=chunk_size)
    for name in V.METRICS:
        assert np.array_equal(streamed.metric(name), whole.metric(name))
    assert streamed.n_model == (301,)


@pytest.mark.parametrize("correlated", [True, False])
def test_streaming_several_sites(correlated):
    g = rng(16)
    models = [g.normal(1.0, 1.0, (120, 20)) for _ in range(3)]
    exps = [g.normal(1.0, 1.0, (2, 20)) for _ in range(3)]
    whole = V.validation_metrics(models, exps, lam=0.6, correlated=correlated)
    chunks = ([m[a : a + 25] for m in models] for a in range(0, 120, 25))
    streamed = V.streamed_reliability(chunks, exps, lam=0.6, correlated=correlated, chunk_size=9)
    for name in V.METRICS:
        assert np.array_equal(streamed.metric(name), whole.metric(name))


def test_big_integer_fallback_equals_int64_path(monkeypatch):
    """When products of counts could overflow int64 the sums switch to Python integers; forcing
    that path must not change a bit."""
    g = rng(17)
    models = [g.normal(1.0, 1.0, (50, 15)) for _ in range(3)]
    exps = [g.normal(1.0, 1.0, (3, 15)) for _ in range(3)]
    fast = V.validation_metrics(models, exps, lam=0.7)
    monkeypatch.setattr(reliability_counts, "_INT64_LIMIT", 1)
    slow = V.validation_metrics(models, exps, lam=0.7)
    for name in V.METRICS:
        assert np.array_equal(fast.metric(name), slow.metric(name))


def test_only_requested_metrics_are_computed():
    ym, yd = random_case(18, M=30, n_t=8, n_exp=2)
    res = V.validation_metrics(ym, yd, lam=0.5, metrics=("accumulated",))
    assert res.instantaneous is None and res.first_passage is None
    with pytest.raises(UncertaintyError, match="not computed"):
        res.metric("first_passage")
    full = V.validation_metrics(ym, yd, lam=0.5)
    assert np.array_equal(res.accumulated, full.accumulated)


# ---------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"lam": 0.0}, "λ must be a finite number > 0"),
        ({"lam": -0.1}, "λ must be a finite number > 0"),
        ({"lam": float("nan")}, "λ must be a finite number > 0"),
        ({}, "exactly one of epsilon"),
        ({"lam": 0.1, "epsilon": 1.0}, "exactly one of epsilon"),
        ({"epsilon": -1.0}, "finite and >= 0"),
        ({"epsilon": np.ones(3)}, "shape (4,)"),
        ({"lam": 0.1, "metrics": "peak"}, "unknown metric"),
        ({"lam": 0.1, "chunk_size": 0}, "chunk_size"),
    ],
)
def test_bad_thresholds_and_options(kwargs, words):
    ym, yd = random_case(19, M=5, n_t=4, n_exp=2)
    with pytest.raises(UncertaintyError) as err:
        V.validation_metrics(ym, yd, **kwargs)
    assert words in str(err.value)


def test_bad_arrays():
    ym, yd = random_case(20, M=5, n_t=4, n_exp=2)
    with pytest.raises(UncertaintyError, match="instants per realization"):
        V.validation_metrics(ym[:, :3], yd, lam=0.1)
    bad = yd.copy()
    bad[1, 2] = np.nan
    with pytest.raises(
        UncertaintyError, match=r"experiments: 1 non-finite values \(first at row 1"
    ):
        V.validation_metrics(ym, bad, lam=0.1)
    bad = ym.copy()
    bad[0, 0] = np.inf
    with pytest.raises(UncertaintyError, match="model: 1 non-finite"):
        V.validation_metrics(bad, yd, lam=0.1)
    with pytest.raises(UncertaintyError, match="2-D array"):
        V.validation_metrics(ym[0], yd, lam=0.1)
    with pytest.raises(UncertaintyError, match="lists of equal length"):
        V.validation_metrics([ym], yd, lam=0.1)
    with pytest.raises(UncertaintyError, match="same number of realizations"):
        V.validation_metrics([ym, ym[:3]], [yd, yd], lam=0.1, correlated=True)
    with pytest.raises(UncertaintyError, match="no model realizations"):
        V.streamed_reliability(iter([]), yd, lam=0.1)
    with pytest.raises(UncertaintyError, match="same time grid"):
        V.validation_metrics([ym, ym[:, :3]], [yd, yd[:, :3]], lam=0.1)


# --------------------------------------------------------------------------------- random inputs
def test_kl_and_cholesky_reproduce_the_covariance_within_their_stated_error():
    t = np.linspace(0.0, 2.0, 201)
    sigma = 100.0
    for method in ("kl", "cholesky"):
        gp = gaussian_process(t, 0.0, sigma, 1.0 / 8.0, method=method, tol=1e-4)
        cov = gp.basis.T @ gp.basis
        target = squared_exponential_correlation(t, 1.0 / 8.0) * sigma**2
        rel_var = np.max(np.abs(np.diag(cov) - sigma**2)) / sigma**2
        assert rel_var == pytest.approx(gp.truncation_error, rel=1e-9, abs=1e-15)
        assert gp.truncation_error <= 1e-4
        # off-diagonal entries of the discarded part are bounded by its diagonal (Cauchy-Schwarz);
        # on top, forming basis.T @ basis rounds each entry by at most gamma_(n+1) (|L||L^T|)_ij
        # <= (n + 1) eps sigma^2 (Higham, Accuracy and Stability of Numerical Algorithms,
        # Thm 10.3, and Cauchy-Schwarz on the rows of L): 4.5e-10 here, a few % of the jitter.
        rounding = (len(t) + 1) * np.finfo(float).eps * sigma**2
        assert np.max(np.abs(cov - target)) <= gp.truncation_error * sigma**2 + rounding
    assert gaussian_process(t, 0.0, sigma, 1.0 / 8.0).n_terms < 60  # the SE kernel decays fast


def test_gaussian_process_sample_statistics():
    t = np.linspace(0.0, 1.0, 11)
    gp = gaussian_process(t, 1000.0 * (1.0 + np.sin(2.0 + t)), 100.0, 1.0 / 8.0)
    x = gp.sample(rng(21), 100_000)
    n = x.shape[0]
    # mean within 4 standard errors (σ/√n) at every instant
    assert np.all(np.abs(x.mean(0) - gp.mean) < 4.0 * 100.0 / math.sqrt(n))
    # sample std: standard error ≈ σ/√(2n) = 0.22; 4 SE
    assert np.all(np.abs(x.std(0) - 100.0) < 4.0 * 100.0 / math.sqrt(2 * n))
    # lag-one correlation exp(-(0.1·8)²) = 0.527; SE of a correlation ≈ (1-ρ²)/√n
    rho = np.corrcoef(x[:, 0], x[:, 1])[0, 1]
    assert abs(rho - math.exp(-0.64)) < 4.0 * (1 - math.exp(-1.28)) / math.sqrt(n)


def test_lognormal_moments():
    m, s = lognormal_parameters(0.04, 0.0008)
    assert math.exp(m + s * s / 2) == pytest.approx(0.04, rel=1e-14)
    x = sample_lognormal(rng(22), 0.04, 0.0008, 200_000)
    assert abs(x.mean() - 0.04) < 4 * 0.0008 / math.sqrt(x.size)
    assert abs(x.std() - 0.0008) < 4 * 0.0008 / math.sqrt(2 * x.size) * 1.1  # +10%: kurtosis
    with pytest.raises(UncertaintyError, match="mean"):
        lognormal_parameters(0.0, 1.0)


# ---------------------------------------------------------------------------------- the examples
def test_chain_closed_form_matches_matrix_exponential_steps():
    from scipy.linalg import expm

    t = np.arange(401) * 5e-5
    problem = ChainProblem(t)
    k, z = problem.sample_inputs(rng(23), 3)
    fast = _chain_response(t, k, z)
    A = _system_matrices(k, z)
    Phi = expm(A * 5e-5)
    state = np.zeros((3, 10))
    state[:, 1] = 1.0
    slow = np.empty_like(fast)
    for n in range(t.size):
        slow[:, n] = np.einsum("mj,mj->m", A[:, 9, :], state)
        state = np.einsum("mij,mj->mi", Phi, state)
    # both are exact up to round-off; 1e-10 of the peak leaves room for ~1e3 ulp of growth
    assert np.max(np.abs(fast - slow)) < 1e-10 * np.max(np.abs(slow))
    assert np.all(slow[:, 0] == 0.0)  # from rest: a3(0) = 0, up to the same round-off below
    assert np.max(np.abs(fast[:, 0])) < 1e-10 * np.max(np.abs(slow))
    assert chain_bias(t)[9] == 0.0 and chain_bias(t)[10] == 500.0 * math.sin(100.0 * t[10])


@pytest.mark.slow  # ~4 s
def test_beam_good_model_accepted_bad_rejected_at_16_percent():
    """The issue's acceptance on a smaller ensemble (2e4 realizations, seed 2017 for the
    experiments as in the docs, which use 1e5): with the same experiments, the bad model's
    first-passage reliability equals the good model's before 1 s, at least halves at 1 s and is
    below 0.01 by 2 s; at λ = 16 % the good model keeps r(5 s) >= 0.5 (first passage) and
    >= 0.9 (accumulated), the acceptance levels of docs/validation.md, while the bad model ends
    below 0.01 and 0.8. (Measured at 2e4: good 0.60 / 0.94, bad 0 / 0.62.)"""
    t = np.linspace(0.0, 5.0, 501)
    problem = BeamProblem.build(t)
    good, bad = beam_experiments(problem, rng(2017), 3, noise_std=0.001)
    r_good = V.streamed_reliability(beam_model_chunks(problem, 20_000, seed=1), good, lam=0.16)
    r_bad = V.streamed_reliability(beam_model_chunks(problem, 20_000, seed=1), bad, lam=0.16)
    before, at_1s, at_2s = t < BEAM_BIAS_START, 100, 200
    assert np.array_equal(r_good.first_passage[before], r_bad.first_passage[before])
    assert r_bad.first_passage[at_1s] < 0.5 * r_good.first_passage[at_1s]
    assert r_bad.first_passage[at_2s] < 0.01
    assert r_good.first_passage[-1] >= 0.5 and r_good.accumulated[-1] >= 0.9
    assert r_bad.first_passage[-1] < 0.01 and r_bad.accumulated[-1] < 0.8
