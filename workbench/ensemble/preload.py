"""What a worker process needs to run realizations, imported before its first task.

Imported by the forkserver of a process pool (``executor_for``) and by Dask workers started
with ``--preload workbench.ensemble.preload`` (``local_dask_cluster``, ``docs/ensembles.md``), so
the imports happen once per pool or before a cluster takes work, not in the first task of every
worker: ≈ 0.7 s of CPU (measured 2026-11-27; ``python -X importtime -c "import
workbench.ensemble.preload"``), mostly scipy.special (≈ 30%, for the random-body models), numpy,
the scene model (pydantic, scipy.spatial's rotations), h5py and PyBullet.

``uncertainty.distributions`` too (scipy.stats and scipy.optimize: 0.40-0.54 s of CPU more,
measured 2026-11-27 after the rest): the first draw of a scene with a random parameter
(``dist: ...``, e.g. random_box's friction) imports it, and without it here every worker did so
in its first task (measured on a 2-worker Dask cluster: 0.47 s for its first random_box
realization, 0.016 s for the next), idle for the run meanwhile, which weighs on short runs
(≈ 6% of a 15 s random_box run on 2 workers). Scenes of random bodies only (the five-body
scene) do not need it: for them it lengthens the pool's start (done by the fork server while
the driver runs realizations) and a Dask worker's, not the realizations.

As a Dask worker's preload it also turns that worker's statistical profiler off
(:func:`dask_setup`).
"""

from __future__ import annotations

import os

import uncertainty.distributions  # noqa: F401
import uncertainty.random_body  # noqa: F401
import workbench.ensemble.realization  # noqa: F401
import workbench.ensemble.run  # noqa: F401
import workbench.scene.model  # noqa: F401
import workbench.sim.forward  # noqa: F401
import workbench.store.schema  # noqa: F401
from workbench.ensemble.cluster import PROFILER_VARIABLE
from workbench.sim.engine import import_pybullet

# the module only, no client (≈ 0.12 s of CPU, once per pool rather than in each worker's first
# task): a forked worker connects its own
import_pybullet()


__all__ = ["dask_setup"]

#: The periodic callbacks of a Dask worker's statistical profiler (distributed's ``Worker``
#: registers them under these names when ``distributed.worker.profile.enabled``).
_PROFILER_CALLBACKS = ("profile", "profile-cycle")


def dask_setup(worker) -> None:
    """Dask's preload hook (``dask worker --preload workbench.ensemble.preload``): stop the
    worker's statistical profiler.

    It samples every thread's stack each 10 ms, holding the GIL that PyBullet's steps need:
    with it off, 2-worker random_box runs took 2-18% less time (docs/ensembles.md). A worker
    started with this preload needs no configuration for it (the local cluster also sets
    ``DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False``). A user who sets that variable
    (to ``True``, to profile the tasks) keeps the profiler."""
    if os.environ.get(PROFILER_VARIABLE) is not None:  # the user's own setting wins
        return
    callbacks = getattr(worker, "periodic_callbacks", None)
    if callbacks is None:  # a scheduler or nanny given this preload by mistake: nothing to stop
        return
    for name in _PROFILER_CALLBACKS:
        callback = callbacks.pop(name, None)
        if callback is not None:
            callback.stop()
