"""Rigid Workbench: scenes, PyBullet forward runs, HDF5 trajectories, ensembles and replay.

Typical use::

    import workbench
    scene = workbench.load_scene("scenes/falling_object.yaml", {"c": 0.1})
    traj = workbench.run_scene(scene)
    workbench.write_trajectory("falling.h5", traj, scene=scene)
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from workbench.errors import SceneError, SimulationError, StoreError, WorkbenchError
from workbench.forward import run_scene
from workbench.loader import load_scene
from workbench.scene import Scene, scene_from_dict
from workbench.state import State, Trajectory

try:
    __version__ = version("rigid-workbench")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0+unknown"

__all__ = [
    "Scene",
    "State",
    "Trajectory",
    "load_scene",
    "scene_from_dict",
    "run_scene",
    "WorkbenchError",
    "SceneError",
    "StoreError",
    "SimulationError",
    "__version__",
]
