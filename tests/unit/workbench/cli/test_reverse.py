"""``workbench reverse`` (``workbench/cli/reverse.py``): what the command says about its run."""

from __future__ import annotations

from tests.conftest import SCENES, run_main


def test_a_run_in_which_nothing_moves_says_so_and_what_would_move_it(tmp_path):
    r = run_main("reverse", "reverse_landing", "--duration", "0.05", "-o", tmp_path / "a.h5")
    assert r.returncode == 0, r.stderr
    warning = [line for line in r.stderr.splitlines() if "nothing moved" in line]
    assert len(warning) == 1 and "--hints" in warning[0] and "--markov" in warning[0]


def test_a_run_with_hints_does_not_warn(tmp_path):
    hints = SCENES / "reverse_landing.hints.yaml"
    out = tmp_path / "b.h5"
    r = run_main("reverse", "reverse_landing", "--hints", hints, "--duration", "0.05", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "nothing moved" not in r.stderr
