"""A parameter's frozen scipy.stats law is made once per law and process
(``ParameterDistribution.frozen``): the same law for equal specs, another for any other field,
and the draws of an uncached law."""

from __future__ import annotations

import numpy as np

from uncertainty.distributions import make_distribution
from workbench.scene.random_inputs import ParameterDistribution


def test_equal_specs_share_a_law_and_other_specs_do_not():
    a = ParameterDistribution(dist="lognormal", mean=0.5, std=0.1)
    b = ParameterDistribution(dist="lognormal", mean=0.5, std=0.1)
    assert a.frozen() is b.frozen()
    others = [
        ParameterDistribution(dist="lognormal", mean=0.5, std=0.2),
        ParameterDistribution(dist="normal", mean=0.5, std=0.1),
        ParameterDistribution(dist="truncnormal", mean=0.5, std=0.1, low=0.3, high=0.7),
        ParameterDistribution(dist="truncnormal", mean=0.5, std=0.1, low=0.3, high=0.8),
    ]
    laws = [a.frozen(), *(o.frozen() for o in others)]
    assert len({id(law) for law in laws}) == len(laws)
    assert np.isclose(others[0].frozen().std(), 0.2) and np.isclose(a.frozen().std(), 0.1)


def test_a_shared_law_draws_what_a_fresh_one_draws():
    spec = ParameterDistribution(dist="gamma", mean=2.0, std=0.5)
    cached = [spec.frozen().rvs(random_state=np.random.default_rng(i)) for i in range(5)]
    fresh = [
        make_distribution(spec.model_dump(exclude_none=True)).rvs(
            random_state=np.random.default_rng(i)
        )
        for i in range(5)
    ]
    assert cached == fresh
