"""``workbench markov compare --smc --smc-scheme lift`` (issue 15 item 3; ``reverse/smc.py``
scheme ``lift``, ``reverse/markov_training.py`` :func:`cached_lift_law`): the scheme and the
benchmark's option names in the CLI, the law fitted from the table's own throws or read from
``--lift-cache`` with the same bits, the same bytes for any number of workers, and bad input one
line with exit status 2."""

from __future__ import annotations

import json

import pytest

from workbench.cli.main import main


@pytest.fixture(scope="module")
def energy_table(tmp_path_factory):
    """A small table of kind energy (20 throws of 0.5 s: the law's throws are run again)."""
    out = tmp_path_factory.mktemp("table") / "energy.json"
    argv = ["markov", "train", "markov_block", "-n", "20", "--seed", "5", "--duration", "0.5"]
    assert main([*argv, "--kind", "energy", "-o", str(out), "-q"]) == 0
    return out


def _compare(table, out, *extra):
    argv = ["markov", "compare", "markov_block", "--table", str(table), "-n", "4",
            "--duration", "0.2", "--seed", "3", "-q", "--smc", "--smc-scheme", "lift",
            "--smc-beta", "1", "-o", str(out)]  # fmt: skip
    return main([*argv, *extra])


def test_compare_lift_reads_back_the_law_it_cached_with_the_same_bytes(energy_table, tmp_path):
    cache = tmp_path / "cache"
    docs = []
    for name in ("fills", "reads"):
        argv = ("-n", "2", "--duration", "0.1", "--lift-cache", str(cache))
        assert _compare(energy_table, tmp_path / name, *argv) == 0
        docs.append((tmp_path / name / "plausibility.json").read_text())
        assert len(list(cache.glob("lift_law_*.json"))) == 1
    assert docs[0] == docs[1]
    doc = json.loads(docs[0])
    assert "--smc-scheme lift" in doc["meta"]["command"]
    assert "--lift-cache" not in doc["meta"]["command"]  # the same bits either way
    assert doc["counts"]["smc"]["generations"] == 2  # 0.1 s in generations of 0.05 s
    assert doc["counts"]["backward"] == 2


@pytest.mark.slow  # three comparisons with process pools: 10 s idle, 40 s on a shared machine
def test_compare_lift_is_the_same_for_any_workers_and_with_a_cached_law(energy_table, tmp_path):
    cache = tmp_path / "cache"
    runs = {
        "w1": ("--workers", "1"),
        "w2_fills_cache": ("--workers", "2", "--lift-cache", str(cache)),
        "w1_reads_cache": ("--workers", "1", "--lift-cache", str(cache)),
    }
    docs = {}
    for name, extra in runs.items():
        assert _compare(energy_table, tmp_path / name, *extra) == 0
        docs[name] = (tmp_path / name / "plausibility.json").read_text()
        if name == "w2_fills_cache":
            assert len(list(cache.glob("lift_law_*.json"))) == 1
    assert docs["w1"] == docs["w2_fills_cache"] == docs["w1_reads_cache"]
    doc = json.loads(docs["w1"])
    assert "--smc-scheme lift" in doc["meta"]["command"]
    assert "--lift-cache" not in doc["meta"]["command"]  # the same bits either way
    assert doc["counts"]["smc"]["generations"] == 4  # 0.2 s in generations of 0.05 s
    assert doc["counts"]["backward"] == 4


@pytest.mark.slow  # two comparisons of 0.6 s runs: 10 s idle, 45 s on a shared machine
def test_compare_drop_generations_are_the_same_for_any_workers(energy_table, tmp_path):
    docs = []
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}"
        argv = ("--workers", workers, "--smc-generation", "drop", "--duration", "0.6")
        assert _compare(energy_table, out, *argv) == 0
        docs.append((out / "plausibility.json").read_text())
    assert docs[0] == docs[1]
    doc = json.loads(docs[0])
    assert doc["meta"]["command"].endswith("--smc-scheme lift --smc-generation drop")
    assert doc["counts"]["backward"] == 4
    assert doc["counts"]["smc"]["generations"] >= 12  # 0.6 s: 12 bins, and a drop ends one


def test_compare_lift_refuses_a_table_its_throws_do_not_reproduce(energy_table, tmp_path, capsys):
    """The law is fitted from the table's own throws: a table whose metadata names another seed
    gives other counts, and is refused in one line (the law would not be the table's)."""
    doc = json.loads(energy_table.read_text())
    doc["seed"] = 6
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    assert _compare(other, tmp_path / "r") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--table" in err[0] and "counts" in err[0], err


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--lift-cache", "somewhere"], "--lift-cache"),  # without a lift scheme
        (["--smc-scheme", "lift"], "--smc-scheme"),  # without --smc
        (["--smc-generation", "drop"], "--smc-generation"),  # without --smc
        (["--smc", "--smc-scheme", "ratio", "--smc-generation", "drop"], "--smc-generation"),
    ],
)
def test_compare_lift_bad_input_is_one_line_exit_2(extra, words, tmp_path, capsys):
    argv = ["markov", "compare", "markov_block", "--table", "markov_block_energy", "-n", "4", "-q"]
    assert main([*argv, *extra, "-o", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_compare_help_names_the_lift_scheme_and_its_cache(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["markov", "compare", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for words in ("lift-central", "--lift-cache", "--smc-scheme lift", "--smc-generation"):
        assert words in out, words
