"""Ensembles: seeded realizations of a scene's random inputs (:mod:`.realization`), run on any
executor into one store (:mod:`.run`), Dask clusters (:mod:`.cluster`), statistics and
confidence regions (:mod:`.statistics`) and summaries of stored ensembles (:mod:`.report`).

See ``docs/architecture.md``.
"""

__all__: list[str] = []
