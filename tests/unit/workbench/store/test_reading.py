"""Reading damaged files (:mod:`workbench.store.reading`): the layout of a file whose link names
are not UTF-8 is listed, not a traceback (found by the fuzz suite, issue 39: a flipped byte in a
name made ``workbench inspect`` die with ``TypeError: can only concatenate str (not "bytes")``)."""

from __future__ import annotations

import contextlib
import io

import h5py

from tests.integration.test_damaged_files import _ensemble
from workbench.cli.main import main
from workbench.store import TrajectoryStore


def test_a_link_name_that_is_not_utf8_is_listed_escaped(tmp_path):
    path = _ensemble(tmp_path / "e.h5")
    with h5py.File(path, "r+") as f:
        f.create_group("extra").create_dataset(b"t\xffp", data=[1.0, 2.0])
    with TrajectoryStore.open(path) as store:
        assert "/extra/t\\xffp" in store.layout()
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["inspect", str(path)]) == 0
