"""The exception of the ``uncertainty`` package: a probabilistic model that cannot be built.

Raised for inadmissible model parameters (a dispersion out of range, a mean centre of mass outside
its domain, an inertia bound below the nominal value, an unknown distribution) and for numerical
identifications that did not converge. Messages name the offending field and what is admissible.
"""

from __future__ import annotations

__all__ = ["UncertaintyError"]


class UncertaintyError(ValueError):
    """An uncertainty specification is inadmissible, or its identification failed.

    Parameters
    ----------
    message : str
        One line a user can act on; it starts with the field name.
    field : str, optional
        Dotted name of the offending field as a scene would spell it, e.g. ``mass.dispersion``,
        ``com.r0``, ``inertia.z_max`` or ``dist``; ``None`` when no single field is at fault.
    """

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field
