"""The links and joints of URDF bodies in a store file: the ``/links`` group and ``/joints``.

A store whose scene has URDF bodies with links (``docs/hdf5.md``, "Links and joints") holds each
link as a row of ``/states`` named ``"<body>/<link>"`` after the scene's bodies, and says which
row is which link here:

    /links/name        (n_links,) UTF-8 str   the row names, as the end of /body_names
    /links/body        (n_links,) UTF-8 str   the scene body the link belongs to
    /links/link        (n_links,) UTF-8 str   the URDF link name
    /links/index       (n_links,) int64       PyBullet's link index (the base is -1, not listed)
    /links/parent      (n_links,) UTF-8 str   the row of the parent link (the body for the base)
    /links/joint       (n_links,) UTF-8 str   the URDF joint from the parent to the link
    /links/joint_type  (n_links,) UTF-8 str   its type (revolute, prismatic, fixed, ...)
    /joint_names       (n_joints,) UTF-8 str  moving joints, "<body>/<joint>", column order
    /joints/position   (n_real, nt, n_joints) float64, rad or m (attribute joint_units)
    /joints/velocity   (n_real, nt, n_joints) float64, rad/s or m/s

A store without links has none of these: its bytes are those of a store written before links
were tracked. :mod:`workbench.store.hdf5` calls :func:`init_links` and :func:`links_from_file`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from workbench.errors import StoreError
from workbench.store.reading import text
from workbench.store.schema import JOINT_FIELDS, LINK_KEYS, StoreSchema

__all__ = ["LINKS", "JOINTS", "JOINT_NAMES", "init_links", "links_from_file"]

LINKS = "links"
JOINTS = "joints"
JOINT_NAMES = "joint_names"

_STR = h5py.string_dtype("utf-8")


def init_links(
    f: h5py.Group,
    schema: StoreSchema,
    n_real: int,
    described: Mapping[str, Mapping[str, Any]],
    compression: Mapping[str, Any],
    create: Callable[..., h5py.Dataset],
) -> None:
    """Write ``/links`` and preallocate ``/joints`` of a new store (nothing without links).

    ``described`` holds the attributes by path (:func:`~workbench.store.conventions.layout_attrs`),
    ``compression`` the filter keywords of the per-record datasets and ``create`` the store's
    dataset maker (no object header times).
    """
    if not schema.link_info:
        return
    links = f.create_group(LINKS, track_order=True)
    names = np.array(list(schema.link_info), dtype=object)
    create(links, "name", described[f"{LINKS}/name"], data=names, dtype=_STR)
    for key, kind in LINK_KEYS.items():
        column = [schema.link_info[name][key] for name in schema.link_info]
        if kind is int:
            data, dtype = np.asarray(column, dtype=np.int64), np.int64
        else:
            data, dtype = np.array(column, dtype=object), _STR
        create(links, key, described[f"{LINKS}/{key}"], data=data, dtype=dtype)
    if not schema.joint_info:
        return
    joint_names = np.array(list(schema.joint_info), dtype=object)
    create(f, JOINT_NAMES, described[JOINT_NAMES], data=joint_names, dtype=_STR)
    joints = f.create_group(JOINTS, track_order=True)
    nt, nj = schema.n_times, len(schema.joint_info)
    for name in JOINT_FIELDS:
        create(
            joints,
            name,
            described[f"{JOINTS}/{name}"],
            shape=(n_real, nt, nj),
            dtype=np.float64,
            chunks=(1, nt, nj),
            fillvalue=np.nan,
            **compression,
        )


def _texts(ds: Any, path: Path) -> list[str]:
    if not isinstance(ds, h5py.Dataset) or ds.ndim != 1:
        raise StoreError(f"{path}: {getattr(ds, 'name', ds)} is not a list; the file is damaged")
    try:
        return [text(v) for v in ds[()]]
    except (UnicodeDecodeError, TypeError, AttributeError):
        raise StoreError(f"{path}: {ds.name} is not UTF-8 text; the file is damaged") from None


def links_from_file(f: h5py.Group, path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """``link_info`` and ``joint_info`` of the store group ``f`` (empty without ``/links``), as
    :class:`~workbench.store.schema.StoreSchema` takes them; a damaged group is a
    :class:`StoreError` naming the file."""
    if LINKS not in f:
        return {"link_info": {}, "joint_info": {}}
    group = f[LINKS]
    try:
        names = _texts(group["name"], path)
        columns = {}
        for key, kind in LINK_KEYS.items():
            ds = group[key]
            if kind is int:
                columns[key] = [int(v) for v in np.asarray(ds[()], dtype=np.int64)]
            else:
                columns[key] = _texts(ds, path)
            if len(columns[key]) != len(names):
                raise StoreError(
                    f"{path}: {ds.name} has {len(columns[key])} rows, not {len(names)}"
                )
    except KeyError as exc:
        raise StoreError(f"{path}: damaged store, /{LINKS} lacks {exc}") from None
    link_info = {name: {key: columns[key][i] for key in LINK_KEYS} for i, name in enumerate(names)}
    joint_info: dict[str, dict[str, Any]] = {}
    if JOINT_NAMES in f:
        joint_names = _texts(f[JOINT_NAMES], path)
        ds = f.get(f"{JOINTS}/position")
        if ds is None:
            raise StoreError(f"{path}: damaged store, /{JOINTS}/position is missing")
        moved = [text(v) for v in np.atleast_1d(ds.attrs.get("joint_links", []))]
        kinds = [text(v) for v in np.atleast_1d(ds.attrs.get("joint_types", []))]
        if len(moved) != len(joint_names) or len(kinds) != len(joint_names):
            raise StoreError(
                f"{path}: attributes joint_links/joint_types of {ds.name} do not list "
                f"{len(joint_names)} joints; the file is damaged"
            )
        for name, link, kind in zip(joint_names, moved, kinds, strict=True):
            joint_info[name] = {"link": link, "type": kind}
    return {"link_info": link_info, "joint_info": joint_info}
