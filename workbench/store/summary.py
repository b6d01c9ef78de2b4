"""``workbench inspect``'s view of a store: :func:`describe`."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from workbench.store.hdf5 import TrajectoryStore

__all__ = ["describe"]


def describe(path: str | os.PathLike) -> dict[str, Any]:
    """A JSON-serialisable summary of a store, for ``workbench inspect``.

    Returns
    -------
    dict
        ``path``, ``file_size`` (bytes), ``attrs`` (root attributes without the scene source,
        plus ``scene_first_line``), ``n_realizations``, ``n_completed``, ``n_missing``,
        ``failed`` (completed realizations whose status is not ``"ok"``: index, status,
        message), ``time`` (``nt``, ``start``, ``stop``), ``bodies`` (every tracked row),
        ``links`` and ``joints`` (only with links of URDF bodies: per row, its body, link,
        parent and joint; per moving joint, the link it moves, its type and unit),
        ``observers`` (shape and info), ``diagnostics``, ``params`` (per-realization shapes)
        and ``datasets`` (shape, dtype, compression, shuffle, chunks by HDF5 path).
    """
    with TrajectoryStore.open(path) as store:
        s = store.schema
        attrs = store.attrs
        scene = str(attrs.pop("scene", ""))
        attrs["scene_first_line"] = scene.splitlines()[0] if scene else ""
        completed = store.completed
        # only completed elements are read: an incomplete one may refer to a lost heap object
        failed = []
        done = np.flatnonzero(completed)
        for i, status, message in zip(done, store.statuses(), store.messages(), strict=True):
            if status != "ok":
                failed.append({"index": int(i), "status": status, "message": message})
        datasets = store.layout()
        summary = {
            "path": str(store.path),
            "file_size": os.path.getsize(store.path),
            "attrs": attrs,
            "n_realizations": store.n_realizations,
            "n_completed": int(completed.sum()),
            "n_missing": int((~completed).sum()),
            "failed": failed,
            "time": {"nt": s.n_times, "start": float(s.time[0]), "stop": float(s.time[-1])},
            "bodies": list(s.body_names),
            "observers": {
                name: {"shape": [store.n_realizations, s.n_times, len(info["components"])], **info}
                for name, info in s.observer_info.items()
            },
            **({"links": s.link_info} if s.link_info else {}),
            **({"joints": s.joint_info} if s.joint_info else {}),
            "diagnostics": list(s.diagnostics),
            "params": {key: {"shape": list(shape)} for key, shape in s.param_shapes.items()},
            "datasets": datasets,
        }
    return summary
