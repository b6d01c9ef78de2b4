"""One lock for every writer (issue 39, cases 6 and 7).

Fails on the code before issue 39: ``workbench run -o X`` took no lock, so it replaced the file
an ensemble was writing (both exited 0); on a disk without a free byte the ensemble died with an
``OSError: [Errno 28]`` traceback writing the pid and left an empty ``X.lock``.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess

import pytest

from workbench.cli.main import main
from workbench.store.lock import lock_path, output_lock


def workbench(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "command", [["run", "falling_object", "-q"], ["ensemble", "random_box", "-n", "2", "-q"]]
)
def test_a_file_being_written_refuses_a_writer_of_any_kind(tmp_path, command):
    out = tmp_path / "x.h5"
    with output_lock(out):  # what the other writer (ensemble or run) holds while it works
        rc, _, err = workbench(*command, "-o", out)
    assert rc == 2, err
    assert f"in use by another workbench process (pid {os.getpid()}" in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_the_lock_is_released_and_its_file_removed(tmp_path):
    out = tmp_path / "x.h5"
    rc, _, err = workbench("run", "falling_object", "-q", "-o", out)
    assert rc == 0, err
    assert out.exists() and not lock_path(out).exists()


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MiB tmpfs without a free byte (root and mount only)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root and mount for a small tmpfs")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs")
    try:
        # dd stops at ENOSPC: every block of the tmpfs taken
        subprocess.run(["dd", "if=/dev/zero", f"of={disk / 'fill'}", "bs=4k"], capture_output=True)
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


@pytest.mark.parametrize(
    "command", [["run", "falling_object", "-q"], ["ensemble", "random_box", "-n", "3", "-q"]]
)
def test_a_disk_without_a_free_byte_is_one_line_and_leaves_no_lock(full_disk, command):
    out = full_disk / "x.h5"
    rc, _, err = workbench(*command, "-o", out)
    assert rc == 1, err
    assert err.strip().endswith(
        f"disk full while writing {out}: nothing written; free space and run again"
    )
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in full_disk.iterdir()) == ["fill"]
