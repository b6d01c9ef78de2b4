"""`workbench stats` (issue 19): a file holding one run, forward or reverse, is refused in one
line naming what it is and what to use instead (exit 2), not summarised into NaNs; an ensemble
of one realization says it has no spread instead of printing zero-width bands."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_workbench
from workbench.cli.main import main
from workbench.ensemble.report import ensemble_summary
from workbench.errors import StoreError

#: Short runs: what the files are matters here, not their physics.
SHORT = ["--duration", "0.05", "-q"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("stats")
    runs = {
        "run": ["run", "sliding_block", *SHORT],
        "reverse": ["reverse", "reverse_landing", "--hints", "reverse_landing", *SHORT],
        "one": ["ensemble", "random_box", "-n", "1", "--seed", "3", *SHORT],
        "three": ["ensemble", "random_box", "-n", "3", "--seed", "3", *SHORT],
        "samples": ["reverse", "markov_block", "--markov", "markov_block", "--samples", "2",
                    "--keep", "2", "--seed", "1", *SHORT],
    }  # fmt: skip
    for name, argv in runs.items():
        assert main([*argv, "-o", str(d / f"{name}.h5")]) == 0, name
    return {name: d / f"{name}.h5" for name in runs}


@pytest.mark.parametrize(
    "name, words",
    [
        ("run", "not an ensemble but one run (workbench run), so it has no statistics; see "
         "what it holds with `workbench inspect {path}` or `workbench plot {path} "
         "--observer NAME`"),
        ("reverse", "not an ensemble but one reverse run (workbench reverse), so it has no "
         "statistics; see what it holds with `workbench inspect {path}` or `workbench replay "
         "{path}`"),
    ],
)  # fmt: skip
def test_a_single_run_is_refused_in_one_line(files, name, words, capsys):
    path = files[name]
    assert main(["stats", str(path)]) == 2
    out = capsys.readouterr()
    err = out.err.strip().splitlines()
    assert out.out == "" and len(err) == 1, err
    assert err[0] == f"workbench stats: {path}: " + words.format(path=path)
    with pytest.raises(StoreError, match="not an ensemble"):
        ensemble_summary(path)


def test_an_ensemble_of_one_realization_says_it_has_no_spread(files, capsys):
    assert main(["stats", str(files["one"])]) == 0
    text = capsys.readouterr().out
    assert "note: fewer than 2 completed realizations, so no spread" in text
    assert "nan" not in text and "one realization, no trend" in text
    band = [line.split() for line in text.splitlines() if line.startswith("  com.")]
    assert len(band) == 3 and all(row[3] == "-" for row in band), band  # no band width
    assert main(["stats", str(files["one"]), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    com = info["observers"]["com"]
    assert com["n_valid"] == 1 and com["convergence_change_last_10pct"] is None
    assert all(row["band_max_width"] is None for row in com["components"])


def test_an_ensemble_still_gets_its_numbers(files, capsys):
    assert main(["stats", str(files["three"])]) == 0
    text = capsys.readouterr().out
    assert "note:" not in text and "nan" not in text and "box/mass" in text
    rows = [line.split() for line in text.splitlines() if line.startswith("  com.")]
    assert len(rows) == 3 and all(float(row[3]) >= 0 for row in rows)
    info = ensemble_summary(files["three"])
    com = info["observers"]["com"]
    assert com["n_valid"] == 3 and com["convergence_change_last_10pct"] is not None
    assert max(row["band_max_width"] for row in com["components"]) > 0  # random boxes differ


def test_stats_help_has_examples():
    r = run_workbench("stats", "--help")
    assert r.returncode == 0 and "examples:\n  workbench ensemble random_box" in r.stdout
    assert ".py" not in r.stdout


def test_an_ensemble_of_reverse_runs_is_summarised(files, capsys):
    """`workbench reverse --samples` writes an ensemble: it is not refused; its scene declares no
    observers, and the summary says so instead of printing an empty table."""
    assert main(["stats", str(files["samples"])]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{files['samples']}: 2 of 2 realizations completed")
    assert lines[-1] == "observers: none (the scene declares none)"
