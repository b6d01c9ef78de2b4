"""Mass properties of rigid bodies: primitive shapes, admissibility checks and principal frames.

Pure numpy. Inertia tensors are about the centre of mass, expressed in the body frame, kg·m².
Admissibility (a tensor that a real mass distribution can have) means: symmetric, positive
definite, and principal moments satisfying the triangle inequalities J_ii + J_jj ≥ J_kk
(Batou & Soize 2012, §3.4, the condition their random model preserves by construction).

References
----------
.. [1] A. Batou, C. Soize, Rigid multibody system dynamics with uncertain rigid bodies,
       Multibody System Dynamics 27 (2012) 285-319.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

__all__ = [
    "box_inertia",
    "sphere_inertia",
    "cylinder_inertia",
    "capsule_inertia",
    "box_volume",
    "sphere_volume",
    "cylinder_volume",
    "capsule_volume",
    "inertia_problem",
    "principal_frame",
    "format_vector",
]

#: Relative tolerance for symmetry and for the triangle inequalities, in units of the largest
#: principal moment (resp. of |J|). Thin plates and rods meet the triangle inequality with
#: equality, and their computed moments carry rounding errors of a few ulps of the largest one.
INERTIA_RTOL = 1e-9


def sphere_volume(radius: float) -> float:
    """Volume (m³) of a sphere of ``radius`` m."""
    return 4.0 / 3.0 * np.pi * radius**3


def box_volume(half_extents) -> float:
    """Volume (m³) of a box with ``half_extents`` (a, b, c), m."""
    a, b, c = half_extents
    return 8.0 * a * b * c


def cylinder_volume(radius: float, length: float) -> float:
    """Volume (m³) of a cylinder of ``radius`` and ``length``, m."""
    return np.pi * radius**2 * length


def capsule_volume(radius: float, length: float) -> float:
    """Volume (m³): a cylinder of ``length`` between the two hemisphere centres plus one sphere."""
    return np.pi * radius**2 * length + sphere_volume(radius)


def sphere_inertia(mass: float, radius: float) -> np.ndarray:
    """Solid sphere: 2/5 m r² about every axis. Returns shape (3, 3)."""
    return np.eye(3) * 0.4 * mass * radius**2


def box_inertia(mass: float, half_extents) -> np.ndarray:
    """Solid box with half extents (a, b, c): J_xx = m (b² + c²) / 3, etc. Returns shape (3, 3)."""
    a, b, c = half_extents
    return np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * mass / 3.0


def cylinder_inertia(mass: float, radius: float, length: float) -> np.ndarray:
    """Solid cylinder with its axis along z (PyBullet's convention). Returns shape (3, 3)."""
    ixx = mass * (3.0 * radius**2 + length**2) / 12.0
    return np.diag([ixx, ixx, 0.5 * mass * radius**2])


def capsule_inertia(mass: float, radius: float, length: float) -> np.ndarray:
    """Solid capsule along z: a cylinder of ``length`` capped by two hemispheres of ``radius``.

    Each hemisphere (mass m_h) has its own centroid 3r/8 from the flat face, so its moment about
    the capsule centre across the axis is m_h (2r²/5 + L²/4 + 3Lr/8) by the parallel-axis theorem.
    """
    vc = np.pi * radius**2 * length
    vs = sphere_volume(radius)
    rho = mass / (vc + vs)
    mc, ms = rho * vc, rho * vs  # ms: both hemispheres together
    izz = mc * radius**2 / 2.0 + ms * 0.4 * radius**2
    ixx = mc * (length**2 / 12.0 + radius**2 / 4.0) + ms * (
        0.4 * radius**2 + length**2 / 4.0 + 3.0 * length * radius / 8.0
    )
    return np.diag([ixx, ixx, izz])


def inertia_problem(J) -> str | None:
    """Why ``J`` is not an admissible inertia tensor, or ``None`` when it is.

    Parameters
    ----------
    J : array_like, shape (3, 3)
        Inertia tensor about the centre of mass, kg·m².
    """
    J = np.asarray(J, dtype=float)
    if J.shape != (3, 3):
        return f"a 3x3 matrix, got shape {J.shape}"
    if not np.all(np.isfinite(J)):
        return "finite entries"
    scale = np.max(np.abs(J))
    if scale == 0.0:
        return "a positive definite matrix, got all zeros"
    if np.max(np.abs(J - J.T)) > INERTIA_RTOL * scale:
        return "a symmetric matrix"
    with np.errstate(over="ignore"):
        lam = np.linalg.eigvalsh(0.5 * (J + J.T))
        if lam[0] <= 0.0:
            return f"a positive definite matrix, got principal moments {_fmt(lam)}"
        if not np.all(np.isfinite(lam)) or not np.isfinite(1.0 / lam[0]):
            # the dynamics use the inverse: a moment below ~1e-308 kg·m² makes it infinite
            return f"principal moments with finite inverses, got {_fmt(lam)}"
    # Triangle inequalities on principal moments (largest ≤ sum of the other two), [1] §3.4.
    if lam[2] > lam[0] + lam[1] + INERTIA_RTOL * lam[2]:
        return f"principal moments satisfying J1 + J2 >= J3 (triangle inequality), got {_fmt(lam)}"
    return None


def principal_frame(J) -> tuple[np.ndarray, np.ndarray]:
    """Principal moments and the rotation from principal axes to the body frame.

    A diagonal ``J`` keeps its own axes (identity rotation, moments in x, y, z order); otherwise
    ``eigh`` is used with the eigenvector matrix made proper (det = +1), as PyBullet's
    ``baseInertialFrameOrientation`` requires.

    Parameters
    ----------
    J : array_like, shape (3, 3)

    Returns
    -------
    moments : ndarray, shape (3,)
        Principal moments, kg·m².
    quaternion : ndarray, shape (4,)
        (x, y, z, w) of the principal frame in the body frame.
    """
    J = np.asarray(J, dtype=float)
    if np.count_nonzero(J - np.diag(np.diag(J))) == 0:
        return np.diag(J).copy(), np.array([0.0, 0.0, 0.0, 1.0])
    lam, V = np.linalg.eigh(0.5 * (J + J.T))
    if np.linalg.det(V) < 0.0:
        V[:, 0] = -V[:, 0]
    return lam, Rotation.from_matrix(V).as_quat()


def format_vector(v) -> str:
    """``[a, b, c]`` with 6 significant digits, for messages."""
    return "[" + ", ".join(f"{x:.6g}" for x in np.ravel(v)) + "]"


_fmt = format_vector
