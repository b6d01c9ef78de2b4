"""Simulation: the PyBullet engine (:mod:`.engine`, the only importer of pybullet), with its pure
helpers (:mod:`.arguments`: keyword arguments of PyBullet calls, :mod:`.frames`: body and inertial
frames, :mod:`.springs`: the bushing law), forward runs (:mod:`.forward`), observers
(:mod:`.observers`) and the core state types (:mod:`.state`).

See ``docs/architecture.md``.
"""

__all__: list[str] = []
