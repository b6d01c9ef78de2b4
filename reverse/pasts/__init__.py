"""Samplers of pasts and the measure that compares them.

Contract (:class:`reverse.runs.sampler.PastSampler`): a sampler takes the scene whose state is
the final one, a count, seed entropy, workers and a progress callback, and returns
:class:`~reverse.runs.sampler.Pasts` — one :class:`~reverse.runs.sampler.RunRecord` per run, in
run order, and a summary of what the sample took — the same bits for any number of workers.
:data:`reverse.pasts.samplers.SAMPLERS` names them: backward runs, conditioned forward pasts.
:mod:`reverse.pasts.measure` compares any named samples against the throws and their noise floor.
:mod:`reverse.pasts.files` owns what reverse and pasts files hold beside the trajectories; this
wing writes files only there, through the store.
"""

__all__: list[str] = []
