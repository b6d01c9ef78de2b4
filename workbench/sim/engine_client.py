"""The PyBullet client the parts of the :class:`~workbench.sim.engine.Engine` share.

PyBullet is imported here (:func:`import_pybullet`, without its banner) and reached only by the
engine's modules (``workbench/sim/engine*.py``, ``tests/test_architecture.py``). The
:class:`~workbench.sim.engine.Engine` is one object made of mixins, one module per concern, all
over :class:`EngineBase`: they share the one client through the private attributes it names
(``self._p``, ``self._client``, ``self._uids``) and nobody else holds them.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from typing import Any

import numpy as np

from workbench.scene.model import Scene
from workbench.sim.frames import BodyFrame

__all__ = ["EngineBase", "captured_output", "import_pybullet"]


def import_pybullet():
    """Import pybullet without its banner ("pybullet build time ...", written to stderr)."""
    if "pybullet" in sys.modules:
        return sys.modules["pybullet"]
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            os.dup2(devnull.fileno(), 2)
            import pybullet

            _flush_c_stdout()  # the banner sits in C's stdio buffer until flushed
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
    return pybullet


@contextlib.contextmanager
def captured_output(out: list[str]):
    """Send what C code writes to stdout and stderr into ``out`` (one string) instead: PyBullet
    reports a failed URDF load as ``b3Error[...]`` lines there and raises only "Cannot load URDF
    file."."""
    import tempfile

    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with tempfile.TemporaryFile(mode="w+", errors="replace") as tmp:
            try:
                os.dup2(tmp.fileno(), 1)
                os.dup2(tmp.fileno(), 2)
                yield
            finally:
                _flush_c_stdout()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                tmp.seek(0)
                out.append(tmp.read(100_000))
    finally:
        for fd in saved:
            os.close(fd)


def _flush_c_stdout() -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)


class EngineBase:
    """What every part of the :class:`~workbench.sim.engine.Engine` holds: set by its
    ``__init__`` (the client) and its ``_build`` (the bodies, their frames and the per-step
    actions); the annotations only name them, so reading one costs what it cost in one class."""

    #: The ``pybullet`` module and the client id (None once closed).
    _p: Any
    _client: int | None
    scene: Scene
    gui: bool
    visual: bool
    plane_as_box: bool
    _mass_overrides: dict
    #: PyBullet body ids in scene order, and their inverse maps (dict, array; -1: no body).
    _uids: list[int]
    _index: dict[str, int]
    _uid_index: dict[int, int]
    _uid_lookup: np.ndarray
    _uid_array_cache: tuple[list, np.ndarray] | None
    #: Each body's inertial frame in its body frame, with its mass properties.
    frames: list[BodyFrame]
    #: What runs before every step (forces, springs, prescribed motions) and the constraint ids.
    _actions: list
    _constraints: dict[str, list[int]]
