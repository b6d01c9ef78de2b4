"""The particle filter's scheme ``lift`` (``reverse/energy_law.py`` :func:`fit_lift_law`,
:func:`log_upper_tail`; ``reverse/smc.py``; ``reverse/markov_training.py``
:func:`table_lift_law`): the forward law of energy and spin against the time before the final
rest began, its upper-tail score (0 for what is no more energetic than the forward median, an
atom included; falling beyond the range), the law rebuilt from a table's own throws (refused
when they do not give the table's counts), and the filter with it: the same bits for any number
of workers, and each particle's liftoff the first record of its run in another contact state."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from reverse.energy_law import fit_lift_law, log_central, log_upper_tail
from reverse.markov import load_model

REPO = Path(__file__).resolve().parents[1]
ENERGY = REPO / "data" / "markov_block_energy.json"
DT = 0.05  # s: one record per bin of the law (BIN_WIDTH), so σ = k dt is bin k


def _kin(energy):
    """Kinematics rows (speed, spin, kinetic energy, height) of a 1 kg body at height 0 whose
    kinetic energy is ``energy`` (J) and spin 2·energy (rad/s)."""
    e = np.asarray(energy, dtype=float)
    return np.column_stack([np.sqrt(2 * e), 2 * e, e, np.zeros_like(e)])


def test_the_lift_law_is_indexed_by_time_before_the_final_rest():
    # run A leaves its rest (state 3) at record 2; run B at record 0; run C never moves
    states = [np.array([0, 0, 2, 3, 3, 3]), np.array([1, 3, 3, 3, 3, 3]), np.full(6, 3)]
    kin = [_kin([9.0, 4.0, 1.0, 0, 0, 0]), _kin([5.0, 0, 0, 0, 0, 0]), _kin(np.zeros(6))]
    law = fit_lift_law(kin, states, mass=1.0, gravity=9.81, dt=DT)
    # σ = 0: A's record 2 (1 J/kg) and B's record 0 (5 J/kg); σ = dt: A's 4; σ = 2 dt: A's 9,
    # which joins the last bin (as the records at the runs' duration in fit_energy_law)
    assert len(law.energy.quantiles) == 2
    np.testing.assert_allclose(np.expm1(law.energy.row(0.0))[[0, -1]], [1.0, 5.0])
    np.testing.assert_allclose(np.expm1(law.energy.row(DT))[[0, -1]], [4.0, 9.0])
    np.testing.assert_allclose(np.expm1(law.spin.row(2 * DT))[[0, -1]], [8.0, 18.0])
    assert law.runs == 3 and law.throw_speed == pytest.approx(math.sqrt(18.0))
    # contact shares at σ = 0: an edge (A) and a vertex (B), each with half a record added
    np.testing.assert_allclose(law.states[0], np.array([0.5, 1.5, 1.5, 0.5]) / 4.0)


def test_the_upper_tail_score_is_neutral_below_the_median_and_falls_beyond_the_range():
    law = load_model(ENERGY).energy_law.energy  # any forward law will do: τ = 1 s is spread
    q = law.row(1.0)
    assert log_upper_tail(law, 1.0, q[0]) == 0.0
    assert log_upper_tail(law, 1.0, q[10]) == 0.0  # the median: S = 0.5, the neutral level
    mid = log_upper_tail(law, 1.0, q[15])  # the 75% quantile: log(0.25 / 0.5)
    assert mid == pytest.approx(math.log(0.5), abs=1e-9)
    far = [log_upper_tail(law, 1.0, q[-2] + d) for d in (0.0, 0.5, 1.0, 2.0)]
    assert far[0] == pytest.approx(math.log(0.1), abs=1e-9)  # the 95% quantile
    assert all(b < a for a, b in zip(far, far[1:], strict=False))
    # an atom: in the last 0.05 s most forward runs rest (energy 0 to 1e-9 J/kg, the rounding
    # of the stored quantiles), which is not pushed down
    q0 = law.row(0.0)
    assert q0[10] == q0[0] == 0.0
    assert log_upper_tail(law, 0.0, 0.0) == 0.0
    assert log_upper_tail(law, 0.0, q0[-2] + 1.0) < -5.0


def test_the_central_score_pushes_down_both_tails_only():
    law = load_model(ENERGY).energy_law.spin  # τ = 1 s: 5% to 95% of the spin ≈ 2–20 rad/s
    q = law.row(1.0)
    assert q[1] > 0.5  # log1p of the 5% spin: the block spins before rest
    for k in (5, 10, 15):  # the quartiles and the median: neutral
        assert log_central(law, 1.0, q[k]) == pytest.approx(0.0, abs=1e-12)
    assert log_central(law, 1.0, q[1]) == pytest.approx(math.log(0.2), abs=1e-9)
    assert log_central(law, 1.0, q[-2]) == pytest.approx(math.log(0.2), abs=1e-9)
    assert log_central(law, 1.0, 0.0) < log_central(law, 1.0, q[1]) - 1.0  # no spin at all
    assert log_upper_tail(law, 1.0, 0.0) == 0.0  # which the upper tail alone lets through


def test_a_resting_particle_has_potential_zero():
    from reverse.smc import _lift_potential

    law = load_model(ENERGY).energy_law
    assert _lift_potential(law, 0.5, None, 1e3, 1e3) == 0.0
    assert _lift_potential(law, 0.5, 0.45, 1e3, 1e3) < -50.0
    assert _lift_potential(law, 0.5, 0.45, 0.0, 0.0) == 0.0


def test_the_law_of_a_tables_throws_is_rebuilt_and_checked_by_their_counts():
    from reverse.markov_training import table_lift_law, train

    scene = REPO / "scenes" / "markov_block.yaml"
    model, runs = train(scene, 6, 3, dt=1 / 240, duration=0.5, kind="energy")
    law = table_lift_law(scene, model)
    kin = [r.kinematics for r in runs]
    mass = 1.0
    ref = fit_lift_law(kin, [r.states for r in runs], mass, 9.81, 1 / 240)
    # the same runs: the same quantiles (energies per unit mass do not depend on the mass when
    # the table's own mass and gravity are used; compare the spins, which use neither)
    np.testing.assert_array_equal(law.spin.quantiles, ref.spin.quantiles)
    other = dataclasses.replace(model, meta={**model.meta, "seed": 4})
    with pytest.raises(ValueError, match="counts"):
        table_lift_law(scene, other)


@pytest.mark.slow  # a process pool and 24 particle-generations: 20–80 s on a shared machine
def test_lift_filter_is_the_same_for_any_number_of_workers_and_tracks_the_liftoff():
    from reverse.markov import classify, count_distinct
    from reverse.sampling import RunVariation
    from reverse.smc import smc_reverse_runs
    from workbench.ensemble.run import SceneRef

    ref = SceneRef(str(REPO / "scenes" / "markov_block.yaml"), ())
    model = load_model(ENERGY)
    options = {"duration": 0.15, "dt": model.dt, "markov": model, "hints": []}
    variation = RunVariation(heading=True)
    a, b = (
        smc_reverse_runs(
            ref,
            4,
            11,
            options=options,
            variation=variation,
            workers=w,
            scheme="lift",
            beta=1.0,
            lift_law=model.energy_law,
        )
        for w in (1, 2)
    )
    assert [x.root for x in a.runs] == [y.root for y in b.runs]
    for x, y in zip(a.runs, b.runs, strict=True):
        np.testing.assert_array_equal(x.states, y.states)
        assert x.lift == y.lift
    assert a.ess == b.ess
    # the tracked liftoff is the first record (reverse time) whose contact state differs from
    # the final one, recounted here from the stored states with the training's rule
    from reverse.contacts import ContactDetector

    scene = ref.load()
    det = ContactDetector(scene)
    try:
        for run in a.runs:
            counts = []
            for rec in run.states[::-1]:  # reverse time order
                c = det.fresh(rec[:, :3], rec[:, 3:7])
                counts.append(int(classify(count_distinct(c.point))) if len(c) else 0)
            changed = [k for k, s in enumerate(counts) if s != counts[0]]
            want = changed[0] * model.dt if changed else None
            if want is None:
                assert run.lift is None
            else:
                assert run.lift == pytest.approx(want, abs=1e-12), (run.lift, want, counts)
    finally:
        det.close()


def test_per_contact_goals_tilt_a_drop_and_leave_the_default_draws_alone():
    """``MarkovPolicy(per_contact_goals=True)``: a face lifted to free gets one goal per corner,
    each in the restitution band ``[α ε, ε)``, not all equal; the first is the default's draw.
    Without it the four goals are one draw, as before."""
    from reverse.markov_policy import MarkovPolicy
    from tests.unit.reverse.test_markov import DT, box_contacts, no_hints, simple_model

    to_free = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0.0]])
    spread = 0
    for seed in range(5):
        one = MarkovPolicy(simple_model(P=to_free), no_hints, np.random.default_rng(seed), DT, 0.2)
        own = MarkovPolicy(
            simple_model(P=to_free),
            no_hints,
            np.random.default_rng(seed),
            DT,
            0.2,
            per_contact_goals=True,
        )
        a = one(box_contacts(), None, None)[0].normal
        b = own(box_contacts(), None, None)[0].normal
        assert np.all(a == a[0]) and 0.1 <= a[0] < 0.2
        assert np.all((b >= 0.1) & (b < 0.2))
        assert a[0] in b  # the drop's own draw is kept (the first separating corner)
        spread += int(np.ptp(b) > 0)
    assert spread >= 4  # the landing speeds span 0.1–0.3 m/s: equal draws are rare
