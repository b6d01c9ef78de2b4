"""The command line's cosmetics (issues 19, 34): every command's ``--help`` has examples, points
to no source file, fits a screen or two and keeps its options within a bound; a bad argument
gives one line on stderr and no progress bar; progress counts are whole numbers.
"""

from __future__ import annotations

import argparse
import re
import time

import pytest

from tests.conftest import run_workbench as wb
from workbench.cli.common import ProgressBar
from workbench.cli.main import COMMANDS, build_parser, main

#: A source file of the packages (scene scripts such as scenes/spelling_balls.py are fine).
SOURCE_PATH = re.compile(r"\b(?:workbench|reverse|uncertainty)/[\w./-]*\.py\b")

#: The examples section: a heading line, then at least one indented ``workbench`` command.
EXAMPLES = re.compile(r"^examples?:\n(?:  .*\n)*?  workbench \w", re.MULTILINE)

#: tqdm's default minimum time between two redraws of a bar, s.
TQDM_MININTERVAL = 0.1

#: What tqdm draws: "  0%|          | 0/3 [00:00<?, ?realizations/s]".
BAR = re.compile(r"\d+%\||\d+/\d+ \[")


#: Every command and subcommand (``[]``: ``workbench`` itself).
HELPS = [[c] for c in COMMANDS] + [["markov", "train"], ["markov", "compare"], []]

#: Most option entries (``-x``/``--x``, not -h) a command's --help may list (issue 34).
MAX_OPTIONS = {("reverse",): 25, ("markov", "compare"): 15}

#: Most lines of a --help at 100 columns: a screen or two.
MAX_LINES = 140


def _help(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def _options(argv: list[str]) -> list[list[str]]:
    """The option entries of ``workbench ARGV``'s parser, -h left out."""
    parser = build_parser(argv[0] if argv else None)
    for word in argv:
        (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return [a.option_strings for a in parser._actions if a.option_strings and "-h" not in
            a.option_strings]  # fmt: skip


def test_every_command_has_a_help_test():
    assert ["pasts"] in HELPS and ["markov", "compare"] in HELPS and ["markov", "train"] in HELPS
    assert {"reverse", "pasts", "markov"} <= set(COMMANDS)


@pytest.mark.parametrize("argv", HELPS, ids=str)
def test_help_has_examples_and_no_source_paths(argv, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    text = _help(argv, capsys)
    assert text.startswith("usage: workbench"), text[:200]
    assert EXAMPLES.search(text), f"workbench {' '.join(argv)} --help: no examples section"
    assert not SOURCE_PATH.findall(text), SOURCE_PATH.findall(text)
    assert len(text.splitlines()) <= MAX_LINES, len(text.splitlines())


@pytest.mark.parametrize(("argv", "most"), sorted(MAX_OPTIONS.items()), ids=str)
def test_help_lists_at_most_its_bound_of_options(argv, most, capsys):
    options = _options(list(argv))
    assert len(options) <= most, options
    text = _help(list(argv), capsys)
    for names in options:  # each entry is in the help the user reads
        assert names[-1] in text, names


def test_conditioned_pasts_are_their_own_command(capsys):
    reverse = {n for names in _options(["reverse"]) for n in names}
    pasts = {n for names in _options(["pasts"]) for n in names}
    assert not {"--conditioned", "--max-throws", "--on-energy"} & reverse
    assert {"-n", "--max-throws", "--verify-budget", "--workers", "--seed"} <= pasts
    assert not {"--markov", "--hints", "--samples", "--verify"} & pasts


# --- bad arguments: one line, before any bar ------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["ensemble", "random_box", "-n", "0"], "-n: expected at least 1 realization, got 0"),
        (["ensemble", "random_box", "-n", "-3"], "-n: expected at least 1 realization, got -3"),
        (["ensemble", "random_box", "-n", "3", "--workers", "0"], "--workers: expected at least 1"),
        (["ensemble", "random_box", "-n", "3", "--seed", "-1"], "--seed: expected a non-negative"),
        (["ensemble", "random_box", "-n", "3", "-o", "{tmp}/no/e.h5"], "does not exist"),
        (["ensemble", "random_box", "-n", "3", "-o", "{tmp}"], "is a directory"),
        (["ensemble", "random_box", "-n", "3", "-o", "{tmp}/e.h5", "--resume"], "no such file"),
        (["ensemble", "no_such_scene", "-n", "3"], "no_such_scene"),
        (["run", "falling_object", "-o", "{tmp}/no/r.h5"], "does not exist"),
        (["markov", "train", "markov_block", "-n", "0"], "-n: expected at least 1 run"),
        (["markov", "train", "markov_block", "--workers", "0"], "--workers"),
        (["infer", "falling_object_example1", "--plot", "{tmp}/file"], "expected a folder"),
        (["infer", "falling_object_example3", "--exact", "mcmc", "--seed", "-1"], "--seed"),
        (["design", "falling_object_example1", "--seed", "-1"], "--seed"),
        (["inverse", "du_impact_analytic", "--mcs", "-3"], "--mcs"),
        (["inverse", "du_impact_analytic", "--seed", "-3", "--mcs", "10"], "--seed"),
        (["inverse", "du_impact_analytic", "--plot", "{tmp}/no/c.png"], "does not exist"),
    ],
)
def test_bad_argument_is_one_line_and_no_bar(argv, words, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    rc = main([a.format(tmp=tmp_path) for a in argv])
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert rc == 2 and len(err) == 1, captured.err
    assert err[0].startswith(f"workbench {argv[0]}: ") and words in err[0], err[0]
    assert not BAR.search(captured.err) and "\r" not in captured.err
    assert "Traceback" not in captured.err


def test_bad_count_in_a_subprocess_is_one_line():
    """The console script as a user runs it: ``workbench ensemble random_box -n 0``."""
    r = wb("ensemble", "random_box", "-n", "0")
    assert r.returncode == 2
    assert r.stderr == "workbench ensemble: -n: expected at least 1 realization, got 0\n"
    assert r.stdout == ""


# --- progress counts ------------------------------------------------------------------------


def test_progress_counts_are_whole_numbers(capsys):
    bar = ProgressBar(200, "realizations", delay=0.0)
    bar.advance(0, 200)
    time.sleep(2 * TQDM_MININTERVAL)  # tqdm redraws at most every mininterval
    bar.advance(32, 200)
    bar.close()
    err = capsys.readouterr().err
    assert "32/200" in err and "0/200" in err, err
    assert not re.search(r"\d\.\d+/", err) and "/200.0" not in err, err


def test_progress_bar_is_drawn_only_once_work_is_reported(capsys):
    bar = ProgressBar(5, "steps", delay=0.0)
    bar.close()
    assert capsys.readouterr().err == ""


def test_progress_rejects_fractional_counts():
    bar = ProgressBar(10, "steps", delay=0.0)
    try:
        with pytest.raises(TypeError, match="whole number"):
            bar.advance(2.5, 10)
    finally:
        bar.close()
    with pytest.raises(TypeError, match="whole number"):
        ProgressBar(3.2, "s")


@pytest.mark.slow  # ~2 s
def test_ensemble_bar_counts_realizations(tmp_path):
    """A real ensemble's bar on stderr: "k/3" with whole k, never "k.0"."""
    r = wb("ensemble", "random_box", "-n", "3", "--seed", "1", "-o", tmp_path / "e.h5")
    assert r.returncode == 0, r.stderr
    counts = re.findall(r"(\S+)/(\S+) \[", r.stderr)
    assert counts and all(d.isdigit() and t == "3" for d, t in counts), r.stderr
