"""The catalog of shipped scenes and data (``workbench/scene/catalog.py``)."""

from __future__ import annotations

from tests.conftest import REPO
from workbench.scene.catalog import table_summary


def test_a_table_summary_says_its_kind():
    plain = table_summary(REPO / "data" / "markov_block.json")
    semi = table_summary(REPO / "data" / "markov_block_semi.json")
    assert plain.startswith("Markov table (memoryless transitions), trained on markov_block")
    assert semi.startswith("semi-Markov table (transitions + dwell times), trained on")
    assert plain.split(", trained")[1] == semi.split(", trained")[1]  # same throws, other kind


def test_an_unreadable_table_is_said_to_be_so(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text("{")
    assert table_summary(bad) == "(unreadable table)"
