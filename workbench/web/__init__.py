"""Replay without a window: a self-contained HTML page that plays stored runs in a browser
(``workbench replay --html out.html``). See :mod:`workbench.web.page` for the page and
:mod:`workbench.web.visuals` for what it draws of each body.
"""

from __future__ import annotations

from workbench.web.page import write_replay_page

__all__ = ["write_replay_page"]
