"""Shared fixtures: seeded randomness, paths, a helper to write scenes to files, and one to run
the ``workbench`` command in a fresh process."""

from __future__ import annotations

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


def run_workbench(*args, cwd=None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``workbench ARGS`` (``python -m workbench.cli``) in a fresh process with :func:`cli_env`;
    the arguments are turned into strings, stdout and stderr captured as text."""
    return subprocess.run(
        [*WORKBENCH, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=cli_env(),
        timeout=timeout,
    )


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
