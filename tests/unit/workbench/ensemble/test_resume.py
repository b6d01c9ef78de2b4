"""A refused ``--resume`` names the first difference (:mod:`workbench.ensemble.resume`), and shows
the two values where they differ (issue 39, item 9: both were cut at 57 characters, before the
point where they differ, so the message showed two equal texts)."""

from __future__ import annotations

import json

import pytest

from workbench.ensemble import resume as resume


def _difference(then, now) -> str:
    return resume._scene_difference(
        json.dumps({"scene": {"description": then}}), json.dumps({"scene": {"description": now}})
    )


@pytest.mark.parametrize("at", [0, 30, 100, 500])
def test_long_values_are_shown_where_they_differ(at):
    base = "a box sliding on a plane with friction " * 20
    then, now = base[:at] + "X" + base[at:], base[:at] + "Y" + base[at:]
    shown_then, shown_now = _difference(then, now).removeprefix("description = ").split(", now ")
    assert shown_then != shown_now
    assert shown_then.replace("X", "Y") == shown_now  # cut at the same place
    assert len(shown_then) <= resume.SHOWN_CHARS
    assert "X" in shown_then and "Y" in shown_now


def test_values_of_different_length_are_cut_alike():
    text = _difference("a" * 100, "a" * 100 + "b")
    shown_then, shown_now = text.removeprefix("description = ").split(", now ")
    assert shown_now.endswith("b") and shown_then.endswith("a") and shown_then != shown_now


def test_short_values_are_shown_whole():
    assert _difference("sliding", "rolling") == "description = sliding, now rolling"
