"""The output lock, which moved to :mod:`workbench.store.lock` in issue 39 (one lock for every
command that writes an output file, not ensembles only); these names stay importable here."""

from __future__ import annotations

from workbench.store.lock import OutputLock, lock_path

__all__ = ["OutputLock", "lock_path"]
