"""``workbench inspect`` of a reverse run whose stored audit is damaged: one line naming the
file and the attribute, exit 2 (found by the fuzz suite, issue 39: a flipped byte in a key of
the audit made inspect die with ``KeyError: 'peak_spin_rad_s'``)."""

from __future__ import annotations

import contextlib
import io

import pytest

from tests.unit.workbench.test_store import make_trajectory
from workbench.cli.main import main
from workbench.store import write_trajectory


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
