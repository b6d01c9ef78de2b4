"""Every matplotlib figure of the workbench: arrays and results in, image files out. Nothing is
simulated or read from a store here; :mod:`.files` saves and closes every figure.

See ``docs/architecture.md``.
"""

__all__: list[str] = []
