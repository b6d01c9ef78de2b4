"""Exceptions of the ``workbench`` package, each carrying a message a user can act on.

The CLI turns every :class:`WorkbenchError` into one line on stderr and exit status 2.
"""

from __future__ import annotations

__all__ = [
    "WorkbenchError",
    "LocatedError",
    "SceneError",
    "SpecError",
    "UserCodeError",
    "StoreError",
    "SimulationError",
    "ValidationInputError",
    "EventNotFoundError",
    "MarkovModelError",
    "OptionError",
    "WorkbenchWarning",
]


class WorkbenchError(Exception):
    """Base class: an error caused by the user's input, reported as one line."""


class WorkbenchWarning(UserWarning):
    """A remark on a task's input that does not stop it (a scene that declares nothing random,
    bodies that overlap in the scene's state, hints after the run's end): issued by the tasks
    as soon as it is known, printed by the command line as ``workbench COMMAND: ...``."""


class LocatedError(WorkbenchError):
    """An input file is invalid at a known place: ``file[:line]: field: what was expected``.

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


class SceneError(LocatedError):
    """A scene file or script is invalid (see :class:`LocatedError` for the arguments)."""


class SpecError(LocatedError):
    """An inference/inverse spec, its data file or its model reference is invalid (see
    :class:`LocatedError` for the arguments)."""


class UserCodeError(WorkbenchError):
    """User code named by a document could not be loaded; the message says why, the caller adds
    the file and the field."""


class StoreError(WorkbenchError):
    """An HDF5 file is missing, of the wrong format, or asked for something it does not hold."""


class SimulationError(WorkbenchError):
    """A run could not continue (e.g. a body's state became non-finite).

    The partial trajectory up to the failure is attached as ``trajectory`` when available.
    """

    def __init__(self, message: str, trajectory=None):
        super().__init__(message)
        self.trajectory = trajectory


class ValidationInputError(WorkbenchError):
    """Files or options of a validation (``workbench validate``) that cannot be used as given."""


class EventNotFoundError(WorkbenchError):
    """An output's event did not happen in the run, so the output is undefined there.

    An inverse solver should treat the inputs as infeasible (no such outcome), not as an error of
    the model. Attributes ``output`` (name) and ``event`` (its description) say which.
    """

    def __init__(self, output: str, event: str, detail: str = ""):
        self.output = output
        self.event = event
        text = f"output '{output}': event {event} did not happen"
        super().__init__(f"{text} ({detail})" if detail else text)


class MarkovModelError(WorkbenchError):
    """A transition-table file is missing, not JSON, or not a table of this format."""


class OptionError(WorkbenchError):
    """A command-line option has a value the command cannot use: ``--option: expected ...``."""

    def __init__(self, option: str, expected: str):
        super().__init__(f"{option}: {expected}")
