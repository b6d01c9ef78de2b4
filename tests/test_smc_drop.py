"""The particle filter's generation per drop (``reverse/smc.py``, ``generation="drop"``): each
particle is stepped to the end of its next step in which the contact model drew a drop (a
contact-separation event), at most one bin of the energy law; particles at different reverse
times are weighted each at its own; every run reaches the duration; the same bits for any number
of workers; refused for the schemes that compare the population at one reverse time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reverse.markov import load_model

REPO = Path(__file__).resolve().parents[1]
ENERGY = REPO / "data" / "markov_block_energy.json"
SCENE = REPO / "scenes" / "markov_block.yaml"
DURATION = 0.6  # s: the block's final rest lasts ~0.5 s backward, so drops happen


def _run(n, entropy, workers, monkeypatch=None, seen=None, duration=DURATION, **kw):
    import reverse.smc as smc
    from reverse.sampling import RunVariation
    from workbench.ensemble.run import SceneRef

    if monkeypatch is not None:  # record each generation of each particle (in-process only)
        advance = smc._advance

        def spy(ref, options, entropy, variation, jobs):
            out = advance(ref, options, entropy, variation, jobs)
            for job, item in zip(jobs, out, strict=True):
                seen.append((job[6], job[7], job[8], item[4], item[15], item[6]))
            return out

        monkeypatch.setattr(smc, "_advance", spy)
    model = load_model(ENERGY)
    options = {"duration": duration, "dt": model.dt, "markov": model, "hints": []}
    return smc.smc_reverse_runs(
        SceneRef(str(SCENE), ()),
        n,
        entropy,
        options=options,
        variation=RunVariation(heading=True),
        workers=workers,
        lift_law=model.energy_law,
        **kw,
    )


def test_a_drop_generation_ends_with_the_step_of_a_drop_or_after_one_bin(monkeypatch):
    seen = []
    res = _run(3, 5, 1, monkeypatch, seen, scheme="lift", beta=1.0, generation="drop")
    model = load_model(ENERGY)
    n_steps = round(DURATION / model.dt)
    per = round(model.energy_law.energy.bin_width / model.dt)
    drops = 0
    for before, k0, k1, after, end, status in seen:
        assert status == "ok"
        assert k0 < end <= k1 == min(k0 + per, n_steps)
        if after > before:  # a drop was drawn: the generation ended with that step
            assert after == before + 1
            drops += 1
        else:  # no drop: the whole bin
            assert end == k1
    assert drops >= 1  # the test means something: some generation ended at a drop
    assert any(end < k1 for _, _, k1, _, end, _ in seen)
    # more generations than bins, and every kept run covers the whole duration
    assert len(res.ess) > -(-n_steps // per)
    for run in res.runs:
        assert run.status == "ok" and run.states.shape[0] == n_steps + 1


def test_drop_generations_are_refused_for_schemes_of_one_reverse_time():
    for scheme in ("ratio", "match"):
        with pytest.raises(ValueError, match="generation drop"):
            _run(2, 1, 1, scheme=scheme, generation="drop")
    with pytest.raises(ValueError, match="generation"):
        _run(2, 1, 1, generation="event")


@pytest.mark.slow  # a process pool and ~40 particle-generations: 10–60 s on a shared machine
def test_drop_generations_are_the_same_for_any_number_of_workers():
    a, b = (_run(4, 11, w, scheme="lift", beta=1.0, generation="drop") for w in (1, 2))
    assert [x.root for x in a.runs] == [y.root for y in b.runs]
    for x, y in zip(a.runs, b.runs, strict=True):
        np.testing.assert_array_equal(x.states, y.states)
        assert x.lift == y.lift and x.transitions == y.transitions
    assert a.ess == b.ess and a.resamplings == b.resamplings
