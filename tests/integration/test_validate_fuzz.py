"""Hostile inputs to ``workbench validate``: fuzzed CSV experiment files and damaged stores, as
the model and as the experiments. Every read ends with exit 0, or exit 2 and one line naming the
file — never a traceback, never a report built on numbers that are not finite.

The CSV fuzz draws files from a grammar of cells (numbers, ``nan``/``inf``, empty cells, junk,
quotes, NUL, non-ASCII, comments, ragged rows) and from raw bytes; the store fuzz reuses the
damages of ``test_damaged_files`` (flipped bytes, truncation, attributes and datasets replaced).
Both are derandomised so every run reads the same files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.test_damaged_files import _apply, _ensemble, _run, damage
from workbench.cli.main import main

FUZZ = settings(
    max_examples=60,
    derandomize=True,  # the same files every run
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
NT = 30  # the synthetic stores' length (test_damaged_files.NT), time 0, 0.01, …


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    d = tmp_path_factory.mktemp("validate_fuzz")
    return {"run": _run(d / "run.h5"), "ensemble": _ensemble(d / "ensemble.h5")}


def _validate(capsys, model: Path, experiments: Path, out: Path) -> tuple[int, str]:
    """``workbench validate`` in-process; exit 0, or exit 2 with one line naming a given file."""
    rc = main(
        [
            "validate",
            "--model",
            str(model),
            "--experiments",
            str(experiments),
            "--observer",
            "tip",
            "--component",
            "x",
            "--epsilon",
            "0.5",
            "-o",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert rc in (0, 2), err
    if rc == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert str(model) in lines[0] or str(experiments) in lines[0], err
    else:
        # a report was written: every number in it is finite (no NaN survives into a metric)
        report = json.loads(out.read_text())
        _assert_finite(report)
    return rc, err


def _assert_finite(obj) -> None:
    if isinstance(obj, dict):
        for v in obj.values():
            _assert_finite(v)
    elif isinstance(obj, list):
        for v in obj:
            _assert_finite(v)
    elif isinstance(obj, float):
        assert np.isfinite(obj), obj


# -- CSV experiments ---------------------------------------------------------------------------

CELLS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**30), 10**30).map(str),
    st.sampled_from(["", " ", "nan", "-inf", "1e999", "0x10", "1,5", '"3"', "\x00", "é", "#c"]),
    st.text(max_size=6),
)


@st.composite
def csv_text(draw) -> str:
    """A CSV file: the model's time grid with at most one damaged cell, or rows drawn at random."""
    width = draw(st.integers(1, 4))
    lines = []
    if draw(st.booleans()):
        lines.append(",".join(["time"] + [f"e{i}" for i in range(1, width)]))
    mode = draw(st.sampled_from(["clean", "one bad cell", "random"]))
    if mode == "random":
        for _ in range(draw(st.integers(0, NT + 3))):
            lines.append(",".join(draw(CELLS) for _ in range(draw(st.integers(0, width + 1)))))
    else:
        rows = [
            [repr(i * 0.01)] + [repr(draw(st.floats(-1, 1))) for _ in range(width - 1)]
            for i in range(NT)
        ]
        if mode == "one bad cell":
            r, c = draw(st.integers(0, NT - 1)), draw(st.integers(0, width - 1))
            rows[r][c] = draw(CELLS)
        lines.extend(",".join(row) for row in rows)
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), "# a comment")
    return draw(st.sampled_from(["\n", "\r\n", "\r"])).join(lines)


@pytest.mark.slow  # ~2 s
@FUZZ
@given(text=csv_text())
def test_fuzzed_csv_experiments(stores, tmp_path, capsys, text):
    exp = tmp_path / "experiments.csv"
    exp.write_text(text, encoding="utf-8", errors="surrogatepass")
    _validate(capsys, stores["ensemble"], exp, tmp_path / "report.json")


@FUZZ
@given(data=st.binary(max_size=400))
def test_raw_bytes_as_csv(stores, tmp_path, capsys, data):
    exp = tmp_path / "bytes.csv"
    exp.write_bytes(data)
    _validate(capsys, stores["ensemble"], exp, tmp_path / "report.json")


def test_a_clean_csv_on_the_grid_validates(stores, tmp_path, capsys):
    """The fuzz's grammar can produce accepted files: a clean one does (so exit 0 is reachable)."""
    exp = tmp_path / "clean.csv"
    t = np.arange(NT) * 0.01
    exp.write_text("time,a\n" + "\n".join(f"{float(x)!r},{0.1 * float(x)!r}" for x in t) + "\n")
    rc, err = _validate(capsys, stores["ensemble"], exp, tmp_path / "report.json")
    assert rc == 0, err


# -- damaged stores as model and as experiments ------------------------------------------------


@pytest.mark.slow  # ~2 s
@FUZZ
@given(case=damage(), role=st.sampled_from(["model", "experiments"]))
def test_damaged_store_as_model_or_experiments(stores, tmp_path, capsys, case, role):
    kind, how, detail = case
    damaged = tmp_path / f"damaged_{kind}.h5"
    shutil.copyfile(stores[kind], damaged)
    _apply(damaged, how, detail)
    if role == "model":
        _validate(capsys, damaged, stores["run"], tmp_path / "report.json")
    else:
        _validate(capsys, stores["ensemble"], damaged, tmp_path / "report.json")
