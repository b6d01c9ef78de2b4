"""The particle filter's ``ratio`` weights (``reverse/energy_law.py``,
:meth:`EnergyLaw.ratio_log_weights`; ``reverse/smc.py`` scheme ``ratio``): the importance ratio
of the forward runs' law to the weighted backward population's own, per coarse bin — a
population distributed as the forward runs gets weight ratios near 1, an over-represented bin is
weighted down and an under-represented one up; the filter with it (and with contact persistence)
is the same bits for any number of workers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reverse.markov import load_model

REPO = Path(__file__).resolve().parents[1]
ENERGY = REPO / "data" / "markov_block_energy.json"
TAU = 1.0  # s before rest: the block's law there is spread (0–7.7 J/kg, 0–25 rad/s)


def _forward_like(law, n):
    """``n`` members at the forward quantiles of energy and spin at TAU (independent orders),
    contact states in the forward shares."""
    levels = (np.arange(n) + 0.5) / n
    grid = np.linspace(0.0, 1.0, len(law.energy.row(TAU)))
    energy = np.expm1(np.interp(levels, grid, law.energy.row(TAU)))
    spin = np.expm1(np.interp(levels[::-1], grid, law.spin.row(TAU)))
    k = int(TAU / law.energy.bin_width)
    state = np.searchsorted(np.cumsum(law.states[k]), levels, side="right").clip(0, 3)
    return energy, spin, state


def test_a_forward_like_population_is_not_reweighted():
    law = load_model(ENERGY).energy_law
    e, w, c = _forward_like(law, 400)
    r = law.ratio_log_weights(TAU, e, w, c, np.full(e.size, 1.0 / e.size))
    # three features, each bin's share known to ~1/sqrt(80) at 400 members and 5 bins: the
    # ratio of each feature within ±35% (log 0.3), the three together within log 2
    assert np.all(np.abs(r) < np.log(2.0)), (r.min(), r.max())


def test_an_over_represented_bin_is_weighted_down_and_its_complement_up():
    law = load_model(ENERGY).energy_law
    e, w, c = _forward_like(law, 400)
    uniform = np.full(e.size, 1.0 / e.size)
    low = e < np.expm1(law.energy.row(TAU))[4]  # the lowest fifth of the forward energies
    heavy = np.where(low, 4.0, 1.0)
    heavy /= heavy.sum()
    base = law.ratio_log_weights(TAU, e, w, c, uniform)
    r = law.ratio_log_weights(TAU, e, w, c, heavy)
    assert np.all(r[low] < base[low] - 0.5)  # a share of ~1/2 instead of 1/5: ratio ~0.4
    assert np.all(r[~low] > base[~low] + 0.2)  # the rest, 1/2 instead of 4/5: ratio ~1.6


def test_members_beyond_the_forward_range_fall_off():
    law = load_model(ENERGY).energy_law
    e, w, c = _forward_like(law, 200)
    e = e.copy()
    e[0] = 1e3  # J/kg: a past 100 times as energetic as any throw at TAU
    r = law.ratio_log_weights(TAU, e, w, c, np.full(e.size, 1.0 / e.size))
    assert r[0] < np.min(r[1:]) - 10.0


@pytest.mark.slow  # a process pool and 24 particle-generations: 20–80 s on a shared machine
def test_ratio_filter_with_persistence_is_the_same_for_any_number_of_workers():
    from reverse.sampling import RunVariation
    from reverse.smc import smc_reverse_runs
    from workbench.ensemble.run import SceneRef

    ref = SceneRef(str(REPO / "scenes" / "markov_block.yaml"), ())
    model = load_model(ENERGY)
    options = {
        "duration": 0.15,  # three generations
        "dt": model.dt,
        "markov": model,
        "hints": [],
        "persist_contacts": True,
    }
    variation = RunVariation(heading=True)
    a, b = (
        smc_reverse_runs(
            ref, 4, 11, options=options, variation=variation, workers=w, scheme="ratio", beta=1.0
        )
        for w in (1, 2)
    )
    assert [x.root for x in a.runs] == [y.root for y in b.runs]
    for x, y in zip(a.runs, b.runs, strict=True):
        np.testing.assert_array_equal(x.states, y.states)
    assert a.ess == b.ess


def test_final_rest_draws_have_the_tables_mean_dwell():
    """``at: rest`` (reverse/hints.py): dwells drawn from the semi-Markov final rest
    (DwellHazards.sample_dwell) have the table's mean dwell (0.51 s for the block's face): 4000
    draws, standard error ≈ 0.5 s / sqrt(4000) = 0.008 s; and the draw reaches the hints."""
    from reverse.hints import parse_hint_distribution
    from reverse.semi_markov import FinalRest

    model = load_model(REPO / "data" / "markov_block_semi.json")
    rest = FinalRest(model.hazards, state=3)
    rng = np.random.default_rng(5)
    draws = np.array([rest(rng) for _ in range(4000)])
    mean = model.hazards.mean_dwell("rest", 3)
    assert abs(draws.mean() - mean) < 4 * draws.std() / np.sqrt(draws.size), (draws.mean(), mean)
    dist = parse_hint_distribution(
        {
            "hints": [
                {"body": "block", "slide": {"direction": [1, 0, 0], "speed": 1.0}, "at": "rest"}
            ]
        },
        ("ground", "block"),
    )
    assert dist.is_random and dist.needs_rest
    a = dist.draw(np.random.default_rng(7), rest=rest)[0].at
    assert a == rest(np.random.default_rng(7))
