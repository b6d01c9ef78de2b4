"""Every matplotlib figure of the workbench: arrays and results in, image files out. Nothing is
simulated or read from a store here.

See ``docs/architecture.md``.
"""
