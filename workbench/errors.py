"""Exceptions of the ``workbench`` package, each carrying a message a user can act on.

The CLI turns every :class:`WorkbenchError` into one line on stderr and exit status 2.
"""

from __future__ import annotations

__all__ = ["WorkbenchError", "SceneError", "StoreError", "SimulationError"]


class WorkbenchError(Exception):
    """Base class: an error caused by the user's input, reported as one line."""


class SceneError(WorkbenchError):
    """A scene file or script is invalid.

    Parameters
    ----------
    source : str
        File the problem is in (or ``"<scene>"`` for scenes built in Python).
    field : str
        Dotted field path, e.g. ``bodies[0].mass``; empty when the whole file is at fault.
    expected : str
        What was expected / what is wrong, phrased for the user.
    line : int, optional
        1-based line in ``source`` when known.
    """

    def __init__(self, source: str, field: str, expected: str, line: int | None = None):
        self.source = source
        self.field = field
        self.expected = expected
        self.line = line
        where = source if line is None else f"{source}:{line}"
        text = f"{where}: {field}: {expected}" if field else f"{where}: {expected}"
        super().__init__(text)


class StoreError(WorkbenchError):
    """An HDF5 file is missing, of the wrong format, or asked for something it does not hold."""


class SimulationError(WorkbenchError):
    """A run could not continue (e.g. a body's state became non-finite).

    The partial trajectory up to the failure is attached as ``trajectory`` when available.
    """

    def __init__(self, message: str, trajectory=None):
        super().__init__(message)
        self.trajectory = trajectory
