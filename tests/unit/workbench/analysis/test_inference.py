"""The inference and design driver (``workbench/analysis/inference.py``)."""

from __future__ import annotations

from tests.conftest import REPO
from workbench.analysis.inference import run_design
from workbench.analysis.inference_spec import load_spec


def test_design_progress_counts_the_eta_n_designs():
    spec = load_spec(REPO / "specs" / "falling_object_example1.yaml", {})
    seen = []
    run = run_design(spec, etas=[0.0, 1.0], counts=[1, 2], progress=lambda *a: seen.append(a))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert len(run.designs) == 4
