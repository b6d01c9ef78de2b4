"""Fixtures shared by the tests of the workbench core."""

from __future__ import annotations

import pytest


@pytest.fixture
def drawn(monkeypatch):
    """The figures saved while the test runs, in order (each is still written to its file)."""
    from workbench.figures import files, inference, inverse, trajectories, validation

    figures = []

    def capture(fig, out, **kw):
        figures.append(fig)
        return files.save_figure(fig, out, **kw)

    for module in (trajectories, inference, inverse, validation):
        monkeypatch.setattr(module, "save_figure", capture)
    return figures
