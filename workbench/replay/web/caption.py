"""What a replay page says about the run it shows: its title (the scene and the kind of run) and
caption (the resolved parameters, the run shown, its status), from the file's attributes.

A scene's own ``description`` is not used: it is written for the scene file, so it names the
declared parameter values (``mu = 0.4`` on a ``--set mu=0.3`` run) and the final state of a
reverse run as if it were its start.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from workbench.scene.model import Scene

__all__ = ["run_kind", "page_title", "page_caption"]


def run_kind(attrs: Mapping) -> str:
    """The kind of run a result file holds, from its attributes (``docs/hdf5.md``): ``run``,
    ``ensemble``, ``reverse run``, ``pasts`` (``workbench reverse --samples``), ``verified
    pasts`` (with ``--verify``) or ``conditioned pasts`` (``workbench pasts``)."""
    if attrs.get("reverse_sampler") == "conditioned":
        return "conditioned pasts"
    if int(attrs.get("time_reversed", 0)):
        if attrs.get("kind") != "ensemble":
            return "reverse run"
        return "verified pasts" if "verified_runs" in attrs else "pasts"
    return "ensemble" if attrs.get("kind") == "ensemble" else "run"


def page_title(scene: Scene, attrs: Mapping) -> str:
    """``"<scene>: <kind>"``, e.g. ``"sliding_block: run"``, ``"spelling_balls: reverse run"``."""
    name = Path(scene.source).stem if scene.source and not scene.source.startswith("<") else ""
    return f"{name or 'scene'}: {run_kind(attrs)}"


def page_caption(scene: Scene, runs: Mapping) -> str:
    """The parameters the runs were made with (after ``--set``) and, for one run, which run it
    is and its status when not ok: ``"mu = 0.3, v0 = 2 · realization 3"``.

    Parameters
    ----------
    scene : Scene
        The file's scene, its parameters resolved.
    runs : mapping of str to Trajectory
        The page's runs by label.
    """
    parts = []
    if scene.parameters:
        parts.append(", ".join(f"{k} = {_value(v)}" for k, v in scene.parameters.items()))
    if len(runs) == 1:
        ((label, traj),) = runs.items()
        status = "" if traj.status == "ok" else f" ({traj.status})"
        parts.append(f"{label}{status}")
    else:
        parts.append(f"{len(runs)} runs")
    return " · ".join(parts)


def _value(v) -> str:
    """A parameter's value, short: numbers with up to 6 significant digits."""
    a = np.asarray(v)
    if a.dtype.kind in "fi" and a.ndim == 0:
        return f"{float(a):.6g}"
    if a.dtype.kind in "fi":
        return "[" + ", ".join(f"{float(x):.6g}" for x in a.ravel()) + "]"
    return str(v)
