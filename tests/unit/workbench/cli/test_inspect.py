"""``workbench inspect`` (``workbench/cli/inspect.py``): what a file is, in a screen."""

from __future__ import annotations

import contextlib
import io

import pytest

from tests.conftest import run_main
from tests.unit.workbench.test_store import make_trajectory
from workbench.cli.inspect import LIST_MOST, _format_description
from workbench.cli.main import main
from workbench.store import write_trajectory


def test_a_large_file_lists_a_few_bodies_and_groups_their_parameters(tmp_path):
    out = tmp_path / "i.h5"
    args = ["--set", "text=I", "--set", "per_side=3", "--duration", "0.01"]
    assert run_main("run", "spelling_balls", *args, "-o", out, "-q").returncode == 0
    r = run_main("inspect", out)
    assert r.returncode == 0, r.stderr
    assert "  status: ok" in r.stdout
    bodies = next(line for line in r.stdout.splitlines() if line.startswith("  bodies ("))
    assert bodies.count(",") == LIST_MOST and "more (-v lists all)" in bodies
    assert "    */mass: bodies=99, shape=[]" in r.stdout
    full = run_main("inspect", out, "-v").stdout
    assert "ball98/mass" in full and "more (-v lists all)" not in full


def test_the_status_of_a_run_that_is_not_ok_is_shown_with_its_reason():
    info = {
        "path": "x.h5",
        "n_realizations": 1,
        "n_completed": 1,
        "failed": [{"index": 0, "status": "implausible", "message": "bodies pass through"}],
        "bodies": ["a"],
    }
    text = _format_description(info)
    assert "  status: implausible (bodies pass through)" in text
    info.update(n_realizations=3, n_completed=3)
    assert "  status: 2 ok, 1 implausible" in _format_description(info)


# a damaged audit (found by the fuzz suite, issue 39: a flipped byte in a key made inspect die
# with KeyError: 'peak_spin_rad_s')
@pytest.mark.parametrize("audit", ['{"verdict": "ok"}', "{not json", "[1, 2]"])
def test_a_damaged_audit_is_one_line(tmp_path, audit):
    path = tmp_path / "r.h5"
    write_trajectory(path, make_trajectory(1), extra_attrs={"audit": audit, "time_reversed": 1})
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main(["inspect", str(path)])
    assert rc == 2, err.getvalue()
    assert err.getvalue() == (
        f"workbench inspect: {path}: attribute audit is not a reverse run's audit; the file is "
        "damaged\n"
    )
