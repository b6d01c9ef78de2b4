"""Rigid Workbench: scenes, PyBullet forward runs, HDF5 trajectories, ensembles and replay.

Typical use: one function per task, named as its command, each returning a result with its
numbers as arrays, ``.to_xarray()`` and ``.save(path)`` (the command's file, byte for byte)::

    import workbench
    run = workbench.run("falling_object", set={"c": 0.1}, duration=1.0)
    run.save("falling.h5")
    box = workbench.ensemble("random_box", 200, seed=1, workers=2)
    band = box.statistics("com", p_c=0.9)          # mean, lower, upper over time
    past = workbench.reverse("reverse_landing", duration=0.5)
    sobol = workbench.sensitivity("sliding_block_random", 64, output=["stop"], seed=1)

The tasks: :func:`run`, :func:`ensemble`, :func:`reverse`, :func:`pasts`, :func:`sensitivity`,
:func:`infer`, :func:`design`, :func:`inverse`, :func:`validate`, :func:`markov_train`,
:func:`markov_compare`, :func:`replay` (:mod:`workbench.tasks`). The
building blocks: :class:`Scene`, :func:`load_scene`, :func:`run_scene`, :class:`State`,
:class:`Trajectory`, :func:`write_trajectory`, :func:`read_trajectory`, :func:`open_dataset`.
``__all__`` lists the API; every other module is internal (``docs/architecture.md``).

The package is organised in wings (``scene``, ``sim``, ``ensemble``, ``analysis``, ``figures``,
``cli``) around the store; ``docs/architecture.md`` is the map. ``import workbench`` is light:
the names below are loaded on first use (PEP 562), so importing the package does not pull in
PyBullet, h5py, pydantic or YAML.
"""

from __future__ import annotations

import importlib
import sys
import types
from importlib.metadata import PackageNotFoundError, version

from workbench.errors import SceneError, SimulationError, StoreError, WorkbenchError

try:
    __version__ = version("rigid-workbench")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0+unknown"

#: Public name -> the module that defines it, imported on first access.
_LAZY = {
    "Scene": "workbench.scene.model",
    "scene_from_dict": "workbench.scene.model",
    "load_scene": "workbench.scene.loader",
    "run_scene": "workbench.sim.forward",
    "State": "workbench.sim.state",
    "Trajectory": "workbench.sim.state",
    "write_trajectory": "workbench.store",
    "read_trajectory": "workbench.store",
    "open_dataset": "workbench.store.xarray_view",
}

#: The tasks, one function per command (:mod:`workbench.tasks`).
_TASKS = {
    "run": "workbench.tasks.run",
    "ensemble": "workbench.tasks.ensemble",
    "reverse": "workbench.tasks.reverse",
    "pasts": "workbench.tasks.pasts",
    "sensitivity": "workbench.tasks.sensitivity",
    "infer": "workbench.tasks.inference",
    "design": "workbench.tasks.inference",
    "inverse": "workbench.tasks.inverse",
    "validate": "workbench.tasks.validate",
    "markov_train": "workbench.tasks.markov",
    "markov_compare": "workbench.tasks.markov",
    "replay": "workbench.tasks.replay",
}
_LAZY.update(_TASKS)

__all__ = [
    *_LAZY,
    "WorkbenchError",
    "SceneError",
    "StoreError",
    "SimulationError",
    "__version__",
]


def __getattr__(name: str):
    """Import a public name's module on first access (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Package(types.ModuleType):
    """``workbench`` itself, keeping its task names for the tasks.

    Importing a subpackage binds it as an attribute of its parent: ``import
    workbench.ensemble.run`` would make ``workbench.ensemble`` the package ``workbench/ensemble/``
    instead of the task function. The binding is skipped for task names; the package stays
    importable by name (``from workbench.ensemble import run``, ``sys.modules``).
    """

    def __setattr__(self, name: str, value) -> None:
        if name in _TASKS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
