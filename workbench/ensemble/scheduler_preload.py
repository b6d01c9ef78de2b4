"""What a Dask scheduler imports to read an ensemble's tasks, before the first one arrives.

A Dask scheduler unpickles the tasks it is sent (distributed ≥ 2023.4 ships the graph pickled
to the scheduler), so the first task of a run, whose :class:`~workbench.ensemble.run.Recipe`
holds the resolved scene and the store's schema, made the scheduler import the scene model
(pydantic, scipy's rotations) and numpy: measured 2026-11-27 on a local 2-worker cluster, the
first task with a recipe took 0.65-0.9 s to come back, its realizations none, the next one
0.05 s. ``local_dask_cluster`` starts its scheduler with ``--preload
workbench.ensemble.scheduler_preload``; a scheduler started by hand can take the same option
(``docs/ensembles.md``). Not PyBullet nor h5py: the scheduler runs no realization.
"""

from __future__ import annotations

import workbench.ensemble.run  # noqa: F401
import workbench.scene.model  # noqa: F401
import workbench.store.schema  # noqa: F401
