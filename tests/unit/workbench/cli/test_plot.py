"""``workbench plot`` (``workbench/cli/plot.py``): a misspelt name gets the nearest one."""

from __future__ import annotations

import pytest

from tests.conftest import run_main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("plot")
    run = d / "fo.h5"
    assert run_main("run", "falling_object", "--duration", "0.2", "-o", run, "-q").returncode == 0
    ens = d / "rb.h5"
    r = run_main(
        "ensemble", "random_box", "-n", "2", "--seed", "1", "--duration", "0.1", "-o", ens, "-q"
    )
    assert r.returncode == 0, r.stderr
    return d, run, ens


@pytest.mark.parametrize(
    ("which", "option", "value", "near"),
    [
        ("run", "--observer", "heigth", "height"),
        ("run", "--body", "balll", "ball"),
        ("ensemble", "--param", "box/mas", "box/mass"),
        ("ensemble", "--observer", "omgea", "omega"),
    ],
)
def test_a_misspelt_name_is_refused_with_the_nearest_one(files, which, option, value, near):
    d, run, ens = files
    path = run if which == "run" else ens
    r = run_main("plot", path, option, value, "-o", d / "x.png")
    assert r.returncode == 2
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1 and f"did you mean '{near}'?" in line, line
