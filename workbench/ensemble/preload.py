"""What a worker process needs to run realizations, imported before its first task.

Imported by the forkserver of a process pool (``executor_for``) and by Dask workers started
with ``--preload workbench.ensemble.preload`` (``local_dask_cluster``, ``docs/ensembles.md``), so
the imports (scipy.optimize by the random-body models, PyBullet, h5py, pydantic: ≈ 1.2 s of
CPU) happen once per pool or before a cluster takes work, not in the first task of every worker.
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
