"""Analyses that drive the pure numerics of :mod:`uncertainty` with scenes, specs and stored
trajectories: Bayesian inference and design (:mod:`.inference`), inverse simulation
(:mod:`.inverse`), validation metrics (:mod:`.validation`), scalar outputs of runs
(:mod:`.outputs`) and scenes as models (:mod:`.scene_model`).

See ``docs/architecture.md``.
"""
