"""Axis labels with units: one spelling for every figure of the workbench.

Every axis says what it shows and in which unit, ``name [unit]``. A dimensionless quantity is
labelled ``[1]`` (the SI notation for "unit one"), except a number of things, which says
``[count]`` (:data:`COUNT`: realizations, measurements), so that an axis of counts is not read as
a ratio. A unit the data does not declare (a scene parameter, an inference spec's data column)
is shown as ``[?]`` rather than guessed. A product with a compound unit is bracketed:
``(rad/s) s^½``.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["DIMENSIONLESS", "COUNT", "UNKNOWN_UNIT", "axis_label", "density_label", "unit_of"]

#: The unit of a dimensionless quantity (observers' ``contact_count``, probabilities, ratios).
DIMENSIONLESS = "1"

#: The unit of a number of things (realizations, measurements, runs).
COUNT = "count"

#: What a label shows in place of a unit that no data declared.
UNKNOWN_UNIT = "?"


def unit_of(name: str, units: Mapping[str, str] | None) -> str:
    """The unit ``units`` gives ``name``, or :data:`UNKNOWN_UNIT` when it gives none."""
    return (units or {}).get(name) or UNKNOWN_UNIT


def axis_label(name: str, unit: str | None) -> str:
    """``"name [unit]"``; an empty or None ``unit`` is shown as ``[?]`` (not declared).

    Parameters
    ----------
    name : str
        What the axis shows, e.g. ``"x"``, ``"time"``, ``"vA0"``.
    unit : str or None
        Its unit as the data declares it (``"m/s"``, ``"1"`` for dimensionless), or None/empty
        when nothing declares one.
    """
    return f"{name} [{unit or UNKNOWN_UNIT}]"


def density_label(unit: str | None, what: str = "probability density") -> str:
    """Label of a probability density of a quantity in ``unit``: its unit is the inverse,
    ``[1/m]``, ``[1/(m/s)]``, ``[m]`` for a quantity in ``1/m``; ``[1]`` for a dimensionless
    quantity, ``[1/?]`` for an unknown one."""
    unit = unit or UNKNOWN_UNIT
    if unit == DIMENSIONLESS:
        return f"{what} [{DIMENSIONLESS}]"
    if unit.startswith("1/") and not any(c in unit[2:] for c in " /*·"):
        return f"{what} [{unit[2:]}]"  # the density of a quantity in 1/m is in m
    compound = any(c in unit for c in " /*·")
    return f"{what} [1/({unit})]" if compound else f"{what} [1/{unit}]"
