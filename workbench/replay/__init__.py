"""Replay of stored motion: the PyBullet viewer (:mod:`workbench.replay.viewer`), PNG frames and
videos rendered headless, and the self-contained web page (:mod:`workbench.replay.web`). The
camera (:mod:`workbench.replay.camera`), the framing of what moves
(:mod:`workbench.replay.framing`) and the display's resolution (:mod:`workbench.replay.display`)
are shared by all three."""

__all__: list[str] = []
