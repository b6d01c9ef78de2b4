"""Whole runs of a scene: contacts from the engine (:mod:`reverse.runs.contacts`), a backward
run from the scene's state (:func:`reverse.runs.run.run_reverse`: a
:class:`~workbench.sim.state.Trajectory` in forward time order with per-step diagnostics), many
seeded runs ranked by energy (:mod:`reverse.runs.sampling`) and the forward verification of an
earliest state (:mod:`reverse.runs.verify`).

Contract: the first wing of ``reverse/`` that reaches PyBullet, and only through
:class:`workbench.sim.engine.Engine`; it writes no files.
"""

__all__: list[str] = []
