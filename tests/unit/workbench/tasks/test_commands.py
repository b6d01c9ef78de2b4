"""Every command's file is the file its task function writes: the same inputs through
``workbench.<task>(...).save(path)`` and through ``workbench <command> ... -o path`` give the same
bytes (issue 37). The command runs in-process (:func:`workbench.cli.main.main`)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

import workbench
from workbench.cli.main import main


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def validation_inputs(tmp_path_factory) -> tuple[Path, Path]:
    """A small model ensemble and one experiment, for ``validate``."""
    folder = tmp_path_factory.mktemp("validation")
    model, experiment = folder / "model.h5", folder / "experiment.h5"
    workbench.ensemble("random_box", 3, seed=1, duration=0.1, output=model)
    workbench.run("random_box", duration=0.1).save(experiment)
    return model, experiment


#: (case, the command's arguments before its output option, the function call, the output
#: option)
CASES = [
    (
        "run",
        ["run", "falling_object", "--set", "c=0.2", "--duration", "0.2"],
        lambda: workbench.run("falling_object", set={"c": 0.2}, duration=0.2),
        "-o",
    ),
    (
        "ensemble",
        ["ensemble", "random_box", "-n", "3", "--seed", "1", "--duration", "0.1"],
        lambda: workbench.ensemble("random_box", 3, seed=1, duration=0.1),
        "-o",
    ),
    (
        "ensemble-workers",  # the same file whatever the executor: the command's 2 processes
        ["ensemble", "random_box", "-n", "3", "--seed", "1", "--duration", "0.1", "--workers", "2"],
        lambda: workbench.ensemble("random_box", 3, seed=1, duration=0.1),
        "-o",
    ),  # fmt: skip
    (
        "reverse",
        ["reverse", "reverse_landing", "--duration", "0.05", "--seed", "3"],
        lambda: workbench.reverse("reverse_landing", duration=0.05, seed=3),
        "-o",
    ),
    (
        "reverse-samples",
        [
            "reverse",
            "markov_block",
            "--markov",
            "markov_block",
            "--duration",
            "0.05",
            "--samples",
            "3",
            "--keep",
            "2",
            "--seed",
            "1",
        ],
        lambda: workbench.reverse(
            "markov_block", markov="markov_block", duration=0.05, samples=3, keep=2, seed=1
        ),
        "-o",
    ),  # fmt: skip
    (
        "pasts",
        ["pasts", "markov_block", "-n", "1", "--seed", "1"],
        lambda: workbench.pasts("markov_block", 1, seed=1),
        "-o",
    ),
    (
        "sensitivity",
        ["sensitivity", "sliding_block_random", "--output", "stop", "-n", "4", "--seed", "1"],
        lambda: workbench.sensitivity("sliding_block_random", 4, output=["stop"], seed=1),
        "-o",
    ),
    (
        "infer",
        ["infer", "falling_object_example1", "--set", "case=3"],
        lambda: workbench.infer("falling_object_example1", set={"case": 3}),
        "-o",
    ),
    (
        "design",
        ["design", "falling_object_example1", "--n", "2", "--eta", "1"],
        lambda: workbench.design("falling_object_example1", n="2", eta=[1.0]),
        "-o",
    ),
    (
        "markov-train",
        ["markov", "train", "markov_block", "-n", "4", "--seed", "1", "--duration", "0.5"],
        lambda: workbench.markov_train("markov_block", 4, seed=1, duration=0.5),
        "-o",
    ),
    (
        "inverse",
        ["inverse", "du_impact_analytic"],
        lambda: workbench.inverse("du_impact_analytic"),
        "-o",
    ),
]


@pytest.mark.parametrize(("argv", "call", "option"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_the_command_writes_the_bytes_its_function_saves(tmp_path, capsys, argv, call, option):
    by_command, by_function = tmp_path / "command.out", tmp_path / "function.out"
    assert main([*argv, option, str(by_command), *_quiet(argv)]) == 0
    result = call()
    result.save(by_function)
    assert by_command.stat().st_size > 0
    if argv[0] == "inverse":
        # the report's "seconds" is the FORM solve's wall time, the one entry that differs
        # between two runs of the same inputs: the bytes are compared with it set equal
        a, b = (json.loads(p.read_text()) for p in (by_command, by_function))
        assert isinstance(a["seconds"], float) and isinstance(b["seconds"], float)
        a_text, b_text = (_seconds.sub('"seconds": 0', p.read_text()) for p in
                          (by_command, by_function))  # fmt: skip
        assert a_text == b_text and a_text != by_command.read_text()
    else:
        assert _sha(by_command) == _sha(by_function)
    ds = result.to_xarray()  # the same numbers with named dimensions and units
    assert ds.data_vars and any("units" in v.attrs for v in ds.data_vars.values())


#: The wall time in an inverse report.
_seconds = re.compile(r'"seconds": [0-9.e+-]+')


def _quiet(argv) -> list[str]:
    """The commands that take ``-q`` (no progress bar or summary in the test's output)."""
    quiet = ("run", "ensemble", "reverse", "pasts", "sensitivity", "markov")
    return ["-q"] if argv[0] in quiet else []


def test_validate_writes_the_bytes_its_function_saves(tmp_path, capsys, validation_inputs):
    model, experiment = validation_inputs
    by_command, by_function = tmp_path / "command.json", tmp_path / "function.json"
    argv = ["validate", "--model", str(model), "--experiments", str(experiment), "--observer",
            "com", "--component", "z", "--epsilon", "0.05", "-o", str(by_command)]  # fmt: skip
    assert main(argv) == 0
    workbench.validate(model, [experiment], "com", component="z", epsilon=0.05).save(by_function)
    assert _sha(by_command) == _sha(by_function)


def test_replay_writes_the_page_its_function_saves(tmp_path, capsys):
    run = tmp_path / "fall.h5"
    workbench.run("falling_object", duration=0.2).save(run)
    by_command, by_function = tmp_path / "command.html", tmp_path / "function.html"
    assert main(["replay", str(run), "--html", str(by_command)]) == 0
    workbench.replay(run).save(by_function)
    assert _sha(by_command) == _sha(by_function)


def test_markov_compare_writes_the_folder_its_function_saves(tmp_path, capsys):
    by_command, by_function = tmp_path / "command", tmp_path / "function"
    argv = ["markov", "compare", "markov_block", "--table", "markov_block", "-n", "2", "--seed",
            "1", "--duration", "0.2", "-q", "-o", str(by_command)]  # fmt: skip
    assert main(argv) == 0
    workbench.markov_compare("markov_block", "markov_block", 2, seed=1, duration=0.2).save(
        by_function
    )
    names = sorted(p.name for p in by_command.iterdir())
    assert names == sorted(p.name for p in by_function.iterdir())
    assert "plausibility.json" in names
    for name in names:
        assert _sha(by_command / name) == _sha(by_function / name), name


def test_a_changed_input_changes_the_bytes(tmp_path, capsys):
    """The comparison can fail: another seed gives another ensemble file."""
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    main(["ensemble", "random_box", "-n", "2", "--seed", "1", "--duration", "0.1", "-o", str(a),
          "-q"])  # fmt: skip
    workbench.ensemble("random_box", 2, seed=2, duration=0.1).save(b)
    assert _sha(a) != _sha(b)


def test_a_remark_is_a_warning_from_python_and_one_line_from_the_command(tmp_path, capsys):
    from workbench.errors import WorkbenchWarning

    with pytest.warns(WorkbenchWarning, match="declares nothing random") as caught:
        result = workbench.ensemble("falling_object", 2, seed=1, duration=0.05)
    assert result.notes == [str(caught[0].message)]
    argv = ["ensemble", "falling_object", "-n", "2", "--seed", "1", "--duration", "0.05", "-q"]
    assert main([*argv, "-o", str(tmp_path / "f.h5")]) == 0
    assert capsys.readouterr().err.splitlines() == [f"workbench ensemble: {result.notes[0]}"]
