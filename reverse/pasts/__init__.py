"""Samplers of pasts and the measure that compares them.

Contract (:mod:`reverse.pasts.sampler`): a sampler takes the scene whose state is the final one,
a count, seed entropy, workers and a progress callback, and returns
:class:`~reverse.pasts.sampler.Pasts`
— one :class:`~reverse.pasts.sampler.Past` per run, in run order, and a summary of what the
sample took — the same bits for any number of workers. :data:`~reverse.pasts.sampler.SAMPLERS`
names them: forward throws of the training's law, backward runs, conditioned forward pasts.
:mod:`reverse.pasts.measure` compares any named samples against the throws and their noise floor.
"""

__all__: list[str] = []
