"""The one contract of a task's result: the numbers as attributes, :meth:`TaskResult.to_xarray`
and :meth:`TaskResult.save`, which writes the file the command writes, byte for byte.

A result whose file is a store (HDF5) gets ``to_xarray`` for free: the file is read by
:func:`workbench.store.open_dataset` (named dimensions and units). A result that is a report
(JSON) gives its own ``to_xarray``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

__all__ = ["TaskResult", "StoreResult", "FileResult"]


class TaskResult(ABC):
    """What every task returns: arrays as attributes, an xarray view and the command's file.

    Subclasses implement :meth:`save`; :meth:`to_xarray` defaults to the view of the saved file.
    """

    @abstractmethod
    def save(self, path: str | os.PathLike) -> Path:
        """Write the file the command writes to ``path`` (the same bytes for the same inputs);
        returns the path."""

    def to_xarray(self) -> Any:
        """The result as an :class:`xarray.Dataset` with named dimensions and units (xarray is
        imported by :mod:`workbench.store.xarray_view`, its one owner)."""
        from workbench.store import open_dataset

        with tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
            path = self.save(Path(tmp) / "result.h5")
            return open_dataset(path)


class StoreResult(TaskResult):
    """A result computed into a file as it ran (an ensemble, a sensitivity run): ``path`` holds
    it, :meth:`save` copies it, :meth:`to_xarray` reads it.

    Attributes
    ----------
    path : Path
        The file the task wrote (a temporary one when no ``output`` was given).
    """

    path: Path

    def save(self, path: str | os.PathLike) -> Path:
        path = Path(path)
        if path.exists() and path.resolve() == Path(self.path).resolve():
            return path
        tmp = path.parent / f".{path.name}.part-{os.getpid()}"
        shutil.copyfile(self.path, tmp)
        tmp.replace(path)
        return path

    def to_xarray(self, realizations=None) -> Any:
        """The file as an :class:`xarray.Dataset` (:func:`workbench.store.open_dataset`;
        ``realizations``: the indices to read, all by default)."""
        from workbench.store import open_dataset

        return open_dataset(self.path, realizations=realizations)


class FileResult(TaskResult):
    """A result whose file is a text report (JSON): :meth:`save` writes :attr:`text`."""

    @property
    @abstractmethod
    def text(self) -> str:
        """The file's text."""

    def save(self, path: str | os.PathLike) -> Path:
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.text, encoding="utf-8")
        tmp.replace(path)
        return path


def temporary_output(stem: str) -> Path:
    """A fresh path in a new temporary directory, for a task that writes as it runs and was
    given no ``output``."""
    return Path(tempfile.mkdtemp(prefix="workbench-")) / f"{stem}.h5"
