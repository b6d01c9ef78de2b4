"""Analyses that drive the pure numerics of :mod:`uncertainty` with scenes, specs and stored
trajectories: Bayesian inference and design (:mod:`.inference`, its spec :mod:`.inference_spec`
and reports :mod:`.inference_report`), inverse simulation (:mod:`.inverse`, its spec
:mod:`.inverse_spec`), the one ``build_model`` of every spec (:mod:`.models`), validation metrics
streamed from stores (:mod:`.validation`), scalar outputs of runs (:mod:`.outputs`, declared in
:mod:`.output_spec`, located by :mod:`.interpolation`) and scenes as models (:mod:`.scene_model`).

See ``docs/architecture.md``.
"""

__all__: list[str] = []
