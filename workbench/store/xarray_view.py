"""A store as an :class:`xarray.Dataset`: named axes, coordinates, units (``docs/hdf5.md``).

xarray is an optional dependency (``pip install 'rigid-workbench[xarray]'``); this module is
the only one that imports it, and only when a view is asked for. The view is *eager*: the
selected realizations are read into memory when it is made, and the file is closed again (pass
``realizations`` to bound the memory of a large ensemble).

Variables, by HDF5 path:

==============================  ==================================  =========================
HDF5 dataset                    variable                            dims
==============================  ==================================  =========================
``/states/<field>``             ``position``, ``orientation``,      realization, time, body,
                                ``linear_velocity``,                component (quaternion for
                                ``angular_velocity``                the orientation)
``/observers/<name>``           ``observer_<name>``                 realization, time,
                                                                    component or
                                                                    ``<name>_component``
``/diagnostics/<name>``         ``diagnostic_<name>``               realization, time
``/joints/<field>``             ``joint_position``,                 realization, time, joint
                                ``joint_velocity`` (URDF bodies)
``/params/<body>/<quantity>``   ``param_<body>_<quantity>``         realization (+ component,
                                                                    or row, column)
``/completed``, ``/recorded``,  ``completed``, ``recorded``,        realization
``/status``, ``/message``       ``status``, ``message``
==============================  ==================================  =========================

Coordinates: ``realization`` (the store's indices), ``time`` (s), ``body`` (names: the bodies,
then the links of URDF bodies, ``"<body>/<link>"``), ``joint`` (``"<body>/<joint>"``),
``component`` (x, y, z), ``quaternion`` (x, y, z, w), ``row`` and ``column`` (x, y, z), and the
labels of each ``<name>_component``. Each variable keeps the dataset's attributes (``units``,
``description``, ``frame``, ...; ``dims`` becomes the variable's dims) plus ``hdf5_path``; the
dataset's attributes are the file's root attributes. Rows of realizations not completed, and
records past ``recorded``, are NaN; ``status`` and ``message`` of those rows are ``""``. Extra
datasets (the tables of reverse runs) are not in the view: read them with
:meth:`~workbench.store.backend.Store.read_dataset`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.errors import StoreError
from workbench.sim.state import STATE_FIELDS
from workbench.store.backend import Store
from workbench.store.conventions import QUATERNION, XYZ, observer_dim
from workbench.store.hdf5 import TrajectoryStore
from workbench.store.schema import JOINT_FIELDS

if TYPE_CHECKING:
    import xarray

__all__ = ["open_dataset", "store_to_dataset", "make_dataset"]

_INSTALL = (
    "the xarray view needs the optional dependency xarray: pip install "
    "'rigid-workbench[xarray]' (in a checkout: pip install '.[xarray]')"
)


def _xarray():
    """The xarray module, or a one-line :class:`StoreError` naming the extra to install."""
    try:
        import xarray
    except ImportError:
        raise StoreError(_INSTALL) from None
    return xarray


def open_dataset(
    path: str | os.PathLike, group: str = "/", *, realizations: Iterable[int] | None = None
) -> xarray.Dataset:
    """The store at ``path`` as an :class:`xarray.Dataset` (eager; see the module docstring).

    Parameters
    ----------
    path : path-like
        A store file (format 1 or 2).
    group : {"/", "/nominal"}
        The store's realizations, or the nominal run of an ensemble (one realization).
    realizations : iterable of int, optional
        Strictly increasing realization indices to read; all by default.

    Returns
    -------
    xarray.Dataset
        Dims ``realization``, ``time``, ``body``, ``component``, ...; e.g.
        ``ds.position.sel(body="ball", component="z")`` has dims (realization, time), m.

    Raises
    ------
    StoreError
        xarray is not installed, the file is not a store, or ``group`` is not in it.

    Examples
    --------
    >>> ds = open_dataset("falling.h5")                                   # doctest: +SKIP
    >>> ds.position.sel(body="ball", component="z").isel(realization=0)   # doctest: +SKIP
    """
    xr = _xarray()
    name = group.strip("/")
    if name not in ("", "nominal"):
        raise StoreError(f"{path}: group must be '/' or '/nominal', got {group!r}")
    with TrajectoryStore.open(path) as store:
        target = store if not name else store.nominal()
        if target is None:
            raise StoreError(f"{path}: no /nominal group (only ensembles store a nominal run)")
        ds = _dataset(xr, target, realizations)
        ds.attrs["group"] = "/" + name
        return ds


def make_dataset(
    variables: dict[str, tuple], coords: dict | None = None, attrs: dict | None = None
) -> xarray.Dataset:
    """An :class:`xarray.Dataset` from plain arrays, for results that are not stores (the
    reports of inference, design, inverse simulation and validation).

    Parameters
    ----------
    variables : dict
        Name -> ``(dims, values)`` or ``(dims, values, attrs)`` (``attrs`` with ``units``).
    coords : dict, optional
        Dimension name -> values.
    attrs : dict, optional
        The dataset's attributes.

    Examples
    --------
    >>> ds = make_dataset({"h": (("time",), [1.0, 0.5], {"units": "m"})}, {"time": [0.0, 0.1]})
    >>> ds.h.attrs["units"], ds.h.dims
    ('m', ('time',))
    """
    xr = _xarray()
    return xr.Dataset(
        {name: xr.Variable(*spec) for name, spec in variables.items()},
        coords=coords or {},
        attrs=attrs or {},
    )


def store_to_dataset(store: Store, realizations: Iterable[int] | None = None) -> xarray.Dataset:
    """An open store (a :class:`~workbench.store.hdf5.TrajectoryStore` or the in-memory
    :class:`~workbench.store.memory.MemoryStore`) as an :class:`xarray.Dataset`, as
    :func:`open_dataset`."""
    return _dataset(_xarray(), store, realizations)


def _dataset(xr: Any, store: Store, realizations: Iterable[int] | None) -> xarray.Dataset:
    schema = store.schema
    if realizations is None:
        rows = np.arange(store.n_realizations)
    else:
        rows = np.array(list(realizations), dtype=np.int64)
        store.read_array("completed", rows)  # checks range and order
    completed = store.completed[rows]

    def attrs_of(path: str) -> tuple[tuple[str, ...], dict[str, Any]]:
        attrs = store.dataset_attrs(path)
        dims = tuple(attrs.pop("dims"))
        return dims, {**attrs, "hdf5_path": "/" + path}

    data_vars: dict[str, Any] = {}

    def add(var: str, path: str, values: np.ndarray) -> None:
        if var in data_vars:
            raise StoreError(f"{store.path}: two datasets map to the xarray variable {var!r}")
        dims, attrs = attrs_of(path)
        data_vars[var] = xr.Variable(dims, values, attrs)

    for name in STATE_FIELDS:
        add(name, f"states/{name}", store.read_array(f"states/{name}", rows))
    coords: dict[str, Any] = {
        "realization": ("realization", rows, {"description": "realization index in the store"}),
        "time": (attrs_of("time")[0], schema.time.copy(), attrs_of("time")[1]),
        "body": (("body",), list(schema.body_names), attrs_of("body_names")[1]),
        "component": ("component", list(XYZ), {"description": "x, y, z axes of the frame"}),
        "quaternion": ("quaternion", list(QUATERNION), {"description": "scalar last"}),
    }
    for name, info in schema.observer_info.items():
        dim = observer_dim(name, info["components"])
        if dim != "component":
            coords[dim] = (dim, list(info["components"]), {"description": f"observer {name}"})
        add(f"observer_{name}", f"observers/{name}", store.read_array(f"observers/{name}", rows))
    for name in schema.diagnostics:
        path = f"diagnostics/{name}"
        add(f"diagnostic_{name}", path, store.read_array(path, rows))
    if schema.joint_info:  # URDF bodies' moving joints: joint_position, joint_velocity
        text = "moving joints of URDF bodies, '<body>/<joint>'"
        coords["joint"] = ("joint", list(schema.joint_info), {"description": text})
        for name in JOINT_FIELDS:
            add(f"joint_{name}", f"joints/{name}", store.read_array(f"joints/{name}", rows))
    for key in schema.param_shapes:
        path = f"params/{key}"
        add(f"param_{key.replace('/', '_')}", path, store.read_array(path, rows))
        if {"row", "column"} <= set(data_vars[f"param_{key.replace('/', '_')}"].dims):
            coords["row"] = ("row", list(XYZ), {"description": "tensor rows, x, y, z axes"})
            coords["column"] = ("column", list(XYZ), {"description": "tensor columns"})
    add("completed", "completed", completed)
    recorded = np.where(completed, store.recorded[rows], 0)
    add("recorded", "recorded", recorded)
    # only completed elements are read: an incomplete one may refer to a lost heap object
    done = np.flatnonzero(store.completed).tolist()
    for name, texts in (("status", store.statuses()), ("message", store.messages())):
        by_index = dict(zip(done, texts, strict=True))
        add(name, name, np.array([by_index.get(i, "") for i in rows.tolist()], dtype=object))
    return xr.Dataset(data_vars, coords=coords, attrs=dict(store.attrs))
