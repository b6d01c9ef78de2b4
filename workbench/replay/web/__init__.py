"""Replay without a window: a self-contained HTML page that plays stored runs in a browser
(``workbench replay --html out.html``). See :mod:`workbench.replay.web.page` for the page and
:mod:`workbench.replay.web.visuals` for what it draws of each body.
"""

from __future__ import annotations

from workbench.replay.web.page import write_replay_page

__all__ = ["write_replay_page"]
