"""Simulation: the PyBullet engine (:mod:`.engine`, the only importer of pybullet), forward runs
(:mod:`.forward`), observers (:mod:`.observers`) and the core state types (:mod:`.state`).

See ``docs/architecture.md``.
"""
