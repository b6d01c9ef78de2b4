"""Du's impact model (:mod:`uncertainty.examples.du_impact`) outside its range: the answer is a
non-finite distance, which the inverse simulation reports as no solution, with no RuntimeWarning
printed beside that one line (found by the fuzz suite, issue 39: a spec measuring d_B = -1e30 m
made ``workbench inverse`` print numpy's "divide by zero" warning before its refusal)."""

from __future__ import annotations

import warnings

import numpy as np

from uncertainty.examples.du_impact import impact_distances


def test_inputs_outside_the_models_range_give_non_finite_distances_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = impact_distances(-10.0, 1.0, 0.6, 0.4, h=0.0)  # no fall: Eq. (43) is 0/0
    assert not np.isfinite(d[0])
