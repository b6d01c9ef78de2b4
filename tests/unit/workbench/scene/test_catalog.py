"""The catalog of shipped scenes and data (``workbench/scene/catalog.py``)."""

from __future__ import annotations

import contextlib
import io

import pytest

from tests.conftest import REPO
from workbench.cli.main import main
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


# a name too long for the system is one line naming it, exit 2 (found by the fuzz suite, issue
# 39: an OSError [Errno 36] traceback from check, reverse --hints/--markov, infer, inspect, run -o)
LONG = "9" * 400


@pytest.mark.parametrize(
    "args",
    [
        ["check", LONG],
        ["reverse", "markov_block", "--hints", LONG, "--duration", "0.05", "-q"],
        ["reverse", "markov_block", "--markov", LONG, "--duration", "0.05", "-q"],
        ["infer", LONG],
        ["inspect", LONG],
        ["run", "markov_block", "-q", "-o", LONG + ".h5"],
    ],
    ids=["check", "hints", "markov", "infer", "inspect", "run-output"],
)
def test_a_name_too_long_for_the_system_is_one_line(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main(args)
    assert rc == 2, err.getvalue()
    assert err.getvalue().count("\n") == 1
    assert err.getvalue().rstrip().endswith(": not a usable file name (File name too long)")
