"""Rigid Workbench: scenes, PyBullet forward runs, HDF5 trajectories, ensembles and replay.

Typical use::

    import workbench
    scene = workbench.load_scene("scenes/falling_object.yaml", {"c": 0.1})
    traj = workbench.run_scene(scene)
    workbench.write_trajectory("falling.h5", traj, scene_text=scene.source_text)

The package is organised in wings (``scene``, ``sim``, ``ensemble``, ``analysis``, ``figures``,
``cli``) around the store; ``docs/architecture.md`` is the map. ``import workbench`` is light:
the names below are loaded on first use (PEP 562), so importing the package does not pull in
PyBullet, h5py, pydantic or YAML.
"""

from __future__ import annotations

import importlib
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
}

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
