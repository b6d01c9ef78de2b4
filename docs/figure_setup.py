"""Set-up shared by the figure scripts of ``docs/``: the repository first on ``sys.path`` (the
scripts run from a checkout, installed or not) and matplotlib on its file-only Agg backend.

Usage, at the top of a script in ``docs/`` (which Python puts on ``sys.path`` when it runs one)::

    from figure_setup import REPO, plt
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

__all__ = ["REPO", "plt"]
