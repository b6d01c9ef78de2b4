"""Names the command line resolves (:mod:`workbench.scene.catalog`), the output paths it checks
(:func:`workbench.cli.common.check_output`) and the files the store opens: a name too long for
the system is one line naming it, exit 2 (found by the fuzz suite, issue 39: an ``OSError: [Errno
36] File name too long`` traceback from ``check``, ``reverse --hints/--markov``, ``infer``,
``inspect`` and ``run -o``)."""

from __future__ import annotations

import contextlib
import io

import pytest

from workbench.cli.main import main

LONG = "9" * 400


@pytest.mark.parametrize(
    "args",
    [
        ["check", LONG],
        ["reverse", "markov_block", "--hints", LONG, "--duration", "0.05", "-q"],
        ["reverse", "markov_block", "--markov", LONG, "--duration", "0.05", "-q"],
        ["infer", LONG],
        ["inspect", LONG],
        ["run", "markov_block", "-q", "-o", LONG + ".h5"],
    ],
    ids=["check", "hints", "markov", "infer", "inspect", "run-output"],
)
def test_a_name_too_long_for_the_system_is_one_line(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main(args)
    assert rc == 2, err.getvalue()
    assert err.getvalue().count("\n") == 1
    assert err.getvalue().rstrip().endswith(": not a usable file name (File name too long)")
