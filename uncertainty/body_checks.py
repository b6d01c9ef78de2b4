"""Checks of the inputs of the random rigid body of [1]_: numbers, 3-vectors, 3×3 matrices.

Each check returns the value as a float or a float array and raises
:class:`~uncertainty.errors.UncertaintyError` naming the field (``mass.mean``, ``com.r0``, ...)
otherwise.

References
----------
.. [1] A. Batou, C. Soize, Rigid multibody system dynamics with uncertain rigid bodies,
       Multibody System Dynamics 27 (2012) 285-319, doi:10.1007/s11044-011-9279-2.
"""

from __future__ import annotations

import math

import numpy as np

from uncertainty.errors import UncertaintyError

__all__ = [
    "MAX_DISPERSION",
    "SYMMETRY_RTOL",
    "checked_real",
    "checked_vec3",
    "checked_sym3",
    "checked_dispersion",
    "draw_count",
]

#: Exclusive upper bound of the dispersions δ_M and δ_G (dimensionless): Eq. (17) of [1] for the
#: mass (E[M⁻²] < ∞) and Appendix B, Eq. (56), for SG0+ (E[‖G⁻¹‖²] < ∞).
MAX_DISPERSION = 1.0 / math.sqrt(2.0)

#: Symmetry tolerance of given matrices (J̲, Z̲, Z_max), relative to their largest entry.
SYMMETRY_RTOL = 1e-9


def checked_real(x, field: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise UncertaintyError(f"{field}: expected a real number, got {x!r}", field) from None
    if not math.isfinite(v):
        raise UncertaintyError(f"{field}: expected a finite number, got {v}", field)
    return v


def _finite_array(x, field: str, shape: tuple[int, ...], real: str, finite: str) -> np.ndarray:
    """``x`` as a float array of ``shape`` with finite entries; the messages name what was
    expected (``real``: any numbers of that shape, ``finite``: finite ones)."""
    try:
        a = np.array(x, dtype=float)
    except (TypeError, ValueError):
        raise UncertaintyError(f"{field}: expected {real}, got {x!r}", field) from None
    if a.shape != shape or not np.all(np.isfinite(a)):
        raise UncertaintyError(f"{field}: expected {finite}, got {x!r}", field)
    return a


def checked_vec3(x, field: str) -> np.ndarray:
    return _finite_array(x, field, (3,), "3 real numbers", "3 finite numbers")


def checked_sym3(x, field: str) -> np.ndarray:
    a = _finite_array(x, field, (3, 3), "a 3x3 real matrix", "a finite 3x3 matrix")
    scale = max(float(np.max(np.abs(a))), np.finfo(float).tiny)
    if np.max(np.abs(a - a.T)) > SYMMETRY_RTOL * scale:
        raise UncertaintyError(f"{field}: expected a symmetric matrix, got {a.tolist()}", field)
    return 0.5 * (a + a.T)


def checked_dispersion(dispersion, field: str, symbol: str, reason: str) -> float:
    d = checked_real(dispersion, field)
    if not 0.0 < d < MAX_DISPERSION:
        raise UncertaintyError(
            f"{field}: {symbol} = {d:g} is outside the admissible range "
            f"0 < {symbol} < 1/sqrt(2) = {MAX_DISPERSION:.5f} ({reason})",
            field,
        )
    return d


def draw_count(size) -> int:
    if size is None:
        return 1
    n = int(size)
    if n < 0 or n != size:
        raise UncertaintyError(f"size: expected None or a non-negative integer, got {size!r}")
    return n
