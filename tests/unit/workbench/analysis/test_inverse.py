"""The inverse-simulation driver (``workbench/analysis/inverse.py``)."""

from __future__ import annotations

from tests.conftest import REPO
from workbench.analysis.inverse import load_inverse_spec, run_spec


def test_progress_counts_every_model_evaluation_without_a_known_end():
    spec = load_inverse_spec(REPO / "specs" / "du_impact_analytic.yaml", {})
    seen = []
    result, _, _ = run_spec(spec, progress=lambda done, total: seen.append((done, total)))
    assert seen and all(total == 0 for _, total in seen)
    counts = [done for done, _ in seen]
    assert counts == sorted(counts) and counts[0] >= 1
    # the count is of evaluations the model did: at most the solver's model calls (a cache
    # answers repeated points)
    assert counts[-1] <= result.model_calls
    plain, _, _ = run_spec(spec)
    assert plain.model_calls == result.model_calls  # counting changes nothing
