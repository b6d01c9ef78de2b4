"""What a worker process needs to run realizations, imported before its first task.

Imported by the forkserver of a process pool (``executor_for``) and by Dask workers started
with ``--preload workbench.ensemble.preload`` (``local_dask_cluster``, ``docs/ensembles.md``), so
the imports happen once per pool or before a cluster takes work, not in the first task of every
worker: ≈ 0.7 s of CPU (measured 2026-11-27; ``python -X importtime -c "import
workbench.ensemble.preload"``), mostly scipy.special (≈ 30%, for the random-body models), numpy,
the scene model (pydantic, scipy.spatial's rotations), h5py and PyBullet; scipy.optimize is
imported only by a draw that needs it (``uncertainty.centre_of_mass``).
"""

from __future__ import annotations

import uncertainty.random_body  # noqa: F401
import workbench.ensemble.realization  # noqa: F401
import workbench.ensemble.run  # noqa: F401
import workbench.scene.model  # noqa: F401
import workbench.sim.forward  # noqa: F401
import workbench.store.schema  # noqa: F401
from workbench.sim.engine import import_pybullet

# the module only, no client (≈ 0.12 s of CPU, once per pool rather than in each worker's first
# task): a forked worker connects its own
import_pybullet()
