"""Shared fixtures: seeded randomness, paths, a helper to write scenes to files, and one to run
the ``workbench`` command in a fresh process."""

from __future__ import annotations

import contextlib
import io
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
SCENES = REPO / "scenes"
SPECS = REPO / "specs"


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same global numpy seed (tests should pass their own rng)."""
    np.random.seed(12345)  # noqa: NPY002 - legacy global state, for any code that still uses it
    yield


@pytest.fixture
def write_scene(tmp_path):
    """Write a scene mapping (or YAML text) to a file and return its path."""

    def write(data, name="scene.yaml") -> Path:
        path = tmp_path / name
        text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
        path.write_text(text, encoding="utf-8")
        return path

    return write


def cli_env() -> dict:
    """Environment for subprocess CLI tests: the repository importable, no user scene dir."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("WORKBENCH_SCENES", None)
    return env


WORKBENCH = [sys.executable, "-m", "workbench.cli"]


def run_workbench(
    *args, cwd=None, timeout: float = 300, env: dict | None = None
) -> subprocess.CompletedProcess:
    """``workbench ARGS`` (``python -m workbench.cli``) in a fresh process with ``env``
    (default :func:`cli_env`); the arguments are turned into strings, stdout and stderr captured
    as text."""
    return subprocess.run(
        [*WORKBENCH, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=cli_env() if env is None else env,
        timeout=timeout,
    )


def run_main(*args, cwd=None) -> subprocess.CompletedProcess:
    """``workbench ARGS`` in this process (:func:`workbench.cli.main.main`), as
    :func:`run_workbench` returns it: the exit status (argparse's ``SystemExit`` included) and
    what was printed, without starting an interpreter and importing the workbench again
    (seconds per call on a loaded machine). Anything but a ``WorkbenchError`` escapes ``main``
    and fails the test. Keep at least one :func:`run_workbench` test per command: that one
    checks the installed entry point, the exit status of a process and its streams."""
    from workbench.cli.main import main

    argv = list(map(str, args))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse: --help, bad arguments
            status = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())


def kill_and_resume(
    args, out, *, kills: int, seconds: tuple[float, float], seed: int, max_attempts: int, inspect
) -> subprocess.CompletedProcess:
    """SIGKILL ``workbench ARGS -o OUT`` (with ``--resume`` once OUT exists) at random moments
    until ``kills`` kills landed, then let one resume finish; returns that last run.

    Each attempt starts a fresh process and kills it after a wait drawn uniformly from
    ``seconds`` (``random.Random(seed)``) if it is still running. After every attempt
    ``inspect(out)`` checks what is visible in OUT (when it exists) and returns True when the
    run had finished; OUT is then removed, so that the next attempt has something to kill.
    """
    rng = random.Random(seed)
    landed = attempts = 0
    while landed < kills:
        attempts += 1
        assert attempts < max_attempts, "the runs finish before they can be killed"
        cmd = [*args, "-o", out, *(["--resume"] if out.exists() else [])]
        proc = subprocess.Popen(
            [*WORKBENCH, *map(str, cmd)],
            env=cli_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(*seconds))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            landed += 1
        proc.wait()
        if out.exists() and inspect(out):
            out.unlink()
    return run_workbench(*args, "-o", out, *(["--resume"] if out.exists() else []))


@pytest.fixture(scope="module")
def _throw_cache():
    cache: dict = {}
    yield cache
    cache.clear()  # 1000 throws of 360 steps per entry: freed with the module


@pytest.fixture
def shared_throws(monkeypatch, _throw_cache):
    """``markov train`` commands of one test module that ask for the same throws get them once.

    :func:`reverse.pasts.training.train` makes every kind of table from one call of
    ``run_throws``; a plain and a semi-Markov table of the same command differ only after it
    (the same arguments, ``kinematics=False``), so their second call returns the first's runs.
    The key is every argument but ``progress``: an energy table (``kinematics=True``) still runs
    its own throws, and the tables are still written by the whole command (``main``)."""
    import reverse.pasts.training as training

    real = training.run_throws

    def run_throws(scene_path, n, entropy, *, progress=None, **kwargs):
        key = (str(scene_path), n, entropy, repr(sorted(kwargs.items())))
        if key not in _throw_cache:
            _throw_cache[key] = real(scene_path, n, entropy, progress=progress, **kwargs)
        return _throw_cache[key]

    monkeypatch.setattr(training, "run_throws", run_throws)
