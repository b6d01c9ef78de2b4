"""A full disk (issue 21, item 2): writes stop cleanly, with one line and exit status 1, and keep
every completed realization readable; ``--resume`` finishes the ensemble once there is space.

Each test mounts a 2 MiB tmpfs, so they run only as root with ``mount`` (CI runs as root) and are
skipped elsewhere. Before the fix, the ensemble died by SIGSEGV (exit 139) after thousands of
lines of h5py tracebacks, and ``workbench run`` left a partial file at its path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO, cli_env, run_workbench
from workbench.store import TrajectoryStore

#: 2 MiB holds the initialised random_box ensemble file of 200 realizations (~0.5 MiB) and
#: about 64 to 96 realizations more: the disk fills in the middle of the ensemble.
SMALL = "2m"
#: Enough for the whole ensemble (about 3.7 MiB uncompressed, 1.4 MiB with gzip).
LARGE = "16m"
N = 200
LINE = re.compile(
    r"^workbench (\w+): disk full while writing (\S+): (\d+) of (\d+) realizations kept; "
    r"free space and run with --resume$"
)


def _mount(directory: Path, size: str, remount: bool = False) -> subprocess.CompletedProcess:
    options = f"remount,size={size}" if remount else f"size={size}"
    return subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)],
        capture_output=True,
        text=True,
    )


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs at ``tmp_path/disk``, unmounted at the end."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root and mount for a small tmpfs")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = _mount(disk, SMALL)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


#: A redraw of tqdm's progress bar ("32%|███▎      | 65/200 [...]"); text mode turns its carriage
#: returns into line ends.
PROGRESS = re.compile(r"^\d+%\|")


def _message_lines(stderr: str) -> list[str]:
    """The lines of ``stderr`` without tqdm's progress bar."""
    lines = [line.strip() for line in stderr.splitlines()]
    return [line for line in lines if line and not PROGRESS.match(line)]


def _check_kept(path: Path, kept: int) -> None:
    """``stats`` reads the file and counts ``kept`` completed realizations, each readable."""
    stats = run_workbench("stats", path, "--json")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["n_completed"] == kept
    with TrajectoryStore.open(path) as store:
        done = np.flatnonzero(store.completed)
        assert done.size == kept
        for i in done:
            traj = store.read(i)
            assert traj.status == "ok" and np.isfinite(traj.position).all()


def _assert_clean_failure(proc: subprocess.CompletedProcess, command: str) -> re.Match:
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])  # no signal death
    for noise in ("Traceback", "Exception ignored", "HDF5-DIAG", "RuntimeError"):
        assert noise not in proc.stderr
    lines = _message_lines(proc.stderr)
    assert len(lines) == 1, lines
    match = LINE.match(lines[0])
    assert match is not None, lines[0]
    assert match.group(1) == command
    return match


@pytest.mark.slow  # ~18 s
def test_ensemble_on_a_full_disk_keeps_what_finished_and_resumes(small_disk):
    out = small_disk / "x.h5"
    args = ("ensemble", "random_box", "-n", N, "--seed", 21, "-o", out, "--workers", 2)
    proc = run_workbench(*args)
    match = _assert_clean_failure(proc, "ensemble")
    kept = int(match.group(3))
    assert match.group(2) == str(out) and int(match.group(4)) == N
    assert 0 < kept < N
    _check_kept(out, kept)
    assert sorted(os.listdir(small_disk)) == ["x.h5"]  # no temporary file left
    # free space, then resume
    assert _mount(small_disk, LARGE, remount=True).returncode == 0
    resumed = run_workbench(*args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    _check_kept(out, N)


#: A child that turns the space check off, so that HDF5 itself meets ENOSPC: the store must then
#: catch the failed writes (raised in the call, or swallowed by h5py in a destructor), close,
#: and exit like the checked path, never by a signal.
UNCHECKED = textwrap.dedent(
    """
    import sys
    import workbench.store.hdf5 as hdf5
    hdf5.free_bytes = lambda directory: None
    from workbench.cli.main import main
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.mark.slow  # ~6 s
def test_ensemble_survives_enospc_inside_hdf5(small_disk):
    out = small_disk / "x.h5"
    proc = subprocess.run(
        [sys.executable, "-c", UNCHECKED, "ensemble", "random_box", "-n", str(N)]
        + ["--seed", "21", "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=cli_env(),
        timeout=300,
    )
    match = _assert_clean_failure(proc, "ensemble")
    kept = int(match.group(3))
    assert 0 < kept < N
    _check_kept(out, kept)


@pytest.mark.parametrize("checked", [True, False], ids=["space-check", "enospc-in-hdf5"])
def test_run_on_a_full_disk_leaves_no_file(small_disk, checked):
    (small_disk / "old.h5").write_bytes(b"")
    free = shutil.disk_usage(small_disk).free
    (small_disk / "fill").write_bytes(bytes(free - 16 * 1024))  # 16 KiB left: too little
    out = small_disk / "r.h5"
    command = [sys.executable, "-c", UNCHECKED] if not checked else [sys.executable, "-m"]
    command += [] if not checked else ["workbench.cli"]
    proc = subprocess.run(
        [*command, "run", "box_stack", "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=cli_env(),
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert _message_lines(proc.stderr) == [
        f"workbench run: disk full while writing {out}: nothing written; free space and run again"
    ]
    assert sorted(os.listdir(small_disk)) == ["fill", "old.h5"]  # no partial or temporary file
