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
    with _writer(out, open_it=False) as pid:  # what the other writer (ensemble or run) holds
        rc, _, err = workbench(*command, "-o", out)
    assert rc == 2, err
    assert f"in use by another workbench process (pid {pid}" in err
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


# -- a reader racing a writer (issue 39, item 9) -------------------------------------------------

_HOLDER = """
import sys, h5py
from workbench.store.lock import output_lock
path, open_it = sys.argv[1], sys.argv[2] == "1"
with output_lock(path):
    f = h5py.File(path, "r+") if open_it else None  # HDF5's own lock, as a writer holds it
    print("ready", flush=True)
    sys.stdin.read()  # until the test closes our stdin
"""


@contextlib.contextmanager
def _writer(path, open_it: bool):
    """Another process holding the output lock of ``path`` (and the file open for writing, with
    HDF5's file lock, if ``open_it``), as a running ``workbench ensemble`` does."""
    import sys

    from tests.conftest import cli_env

    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path), "1" if open_it else "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=cli_env(),
        text=True,
    )
    try:
        assert proc.stdout.readline() == "ready\n"
        yield proc.pid
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()


@pytest.fixture
def ensemble_file(tmp_path):
    from tests.integration.test_damaged_files import _ensemble

    return _ensemble(tmp_path / "ens.h5")


def test_a_plain_ensemble_being_written_is_read(ensemble_file):
    """Was "cannot read the sensitivity results (unable to lock file)": the sensitivity reader
    asked for HDF5's file lock, which the writer holds."""
    with _writer(ensemble_file, open_it=True):
        rc, out, err = workbench("stats", ensemble_file)
    assert rc == 0, err
    assert "4 of 5 realizations completed" in out


def test_a_read_failing_on_a_file_being_written_names_the_writer(ensemble_file):
    """Was "dataset ... cannot be read, the file is damaged": a reader's view of a file that
    another process writes can be inconsistent (here: a chunk it cannot decode)."""
    from tests.integration.test_damaged_files import _damage_chunk

    _damage_chunk(ensemble_file, "observers/tip", 1)
    with _writer(ensemble_file, open_it=False) as pid:
        rc, _, err = workbench("stats", ensemble_file)
    assert rc == 2, err
    assert err.strip() == (
        f"workbench stats: {ensemble_file}: being written by another workbench process "
        f"(pid {pid}, lock {lock_path(ensemble_file)}); read it when that process has ended"
    )
    rc, _, err = workbench("stats", ensemble_file)  # nobody writes it: the damage is its own
    assert rc == 2 and "the file is damaged" in err


def test_a_file_still_being_made_is_not_called_missing(tmp_path):
    out = tmp_path / "new.h5"  # a writer makes it under a temporary name, then moves it here
    with _writer(out, open_it=False) as pid:
        rc, _, err = workbench("inspect", out)
    assert rc == 2 and f"being written by another workbench process (pid {pid}" in err, err


def test_a_killed_writers_lock_file_names_nobody(ensemble_file):
    from tests.integration.test_damaged_files import _damage_chunk

    _damage_chunk(ensemble_file, "observers/tip", 1)
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock_path(ensemble_file).write_text(f"{dead.pid}\n")  # as a SIGKILLed driver leaves it
    rc, _, err = workbench("stats", ensemble_file)
    assert rc == 2 and "the file is damaged" in err and "being written" not in err, err


# -- one lock for every command that writes an output file (issue 39) ---------------------------

WRITERS = {
    "reverse": ["reverse", "markov_block", "--duration", "0.1", "-q", "-o", "{out}"],
    "pasts": ["pasts", "markov_block", "-n", "1", "--duration", "0.5", "-o", "{out}"],
    "markov train": ["markov", "train", "markov_block", "-n", "1", "-o", "{out}"],
    "markov compare": ["markov", "compare", "markov_block", "--table", "markov_block"]
    + ["-n", "2", "-q", "-o", "{out}"],
    "sensitivity": ["sensitivity", "sliding_block_random", "-n", "8", "-q", "-o", "{out}"],
    "infer": ["infer", "falling_object_example1", "-o", "{out}"],
    "design": ["design", "falling_object_example1", "-o", "{out}"],
    "inverse": ["inverse", "du_impact_analytic", "-q", "-o", "{out}"],
    "replay": ["replay", "{run}", "--html", "{out}"],
    "plot": ["plot", "{run}", "--observer", "height", "-o", "{out}"],
}


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "falling.h5"
    rc, _, err = workbench("run", "falling_object", "-q", "--duration", "0.1", "-o", out)
    assert rc == 0, err
    return out


@pytest.mark.parametrize("command", WRITERS)
def test_every_writer_is_refused_while_another_process_writes_its_output(
    tmp_path, run_file, command
):
    """Was: only ``run`` and ``ensemble`` took the lock; these wrote over a file another
    command was writing."""
    out = tmp_path / "out"
    args = [a.format(out=out, run=run_file) for a in WRITERS[command]]
    with _writer(out, open_it=False) as pid:
        rc, _, err = workbench(*args)
    assert rc == 2, err
    assert f"{out}: in use by another workbench process (pid {pid}" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_a_command_and_the_library_it_calls_share_the_lock(tmp_path):
    """``sensitivity`` holds the lock of its file and calls ``run_ensemble``, which takes it
    again: within one process the lock is counted, and released by its last holder."""
    out = tmp_path / "x.h5"
    with output_lock(out), output_lock(out):
        assert lock_path(out).exists()
    assert not lock_path(out).exists()
