"""Velocity-level contact dynamics shared by the forward and the backward step (Twigg & James
2008 [1]_ §2.1, §3): body mass matrices, contact and joint Jacobians, and the LCP of one island.

Pure numpy; no PyBullet. Positions, orientations and contacts are given; this module builds and
solves the impulse problem of one time step of one island (:func:`solve_island`);
:func:`reverse.step.batched.solve_islands` does the same for many islands without joints at once,
with identical numbers (issue 17 item 2).

Unknowns and rows
-----------------
Velocities are stacked per body as ``u = (v, ω)`` (centre-of-mass velocity and world angular
velocity, 6 per moving body); ``A = M⁻¹`` is block diagonal with ``1/m`` and ``I_w⁻¹``, the world
inertia at the start of the step, ``I_w = R I_body Rᵀ``. Over a step of length ``h`` the
*moving* velocity (the one that advances positions, §2.1 Eq. 2) is

    u_move = u⁻ + A (h F + W z)                                                  (Eq. 2)

with ``F`` the body forces (gravity, constant forces and torques), ``z ≥ 0`` the LCP variables and
``W`` their impulse directions. Per contact ``i`` (normal ``n`` pointing from body B into body A):

* ``p_n`` — normal impulse, row ``v_n = J_n u`` (Eq. 3, 4 forward; Eq. 7, 8 backward);
* ``β_j`` — friction impulses along ``k`` tangent directions ``d_j`` (a pyramid; ``k = 4``:
  ``±t1, ±t2``), with the slack ``λ`` coupling them to the normal impulse,
  ``μ p_n − Σ β_j ⟂ λ`` (Eq. 5–6 in the Stewart–Trinkle / Anitescu–Potra form the issue asks for:
  friction and normal impulses in one LCP, not ODE's two passes);
* ``γ_j`` — rolling-friction angular impulses about ``±t1, ±t2`` bounded by ``ρ p_n``, and
  ``σ_j`` — spinning-friction impulses about ``±n`` bounded by ``ς p_n`` ([1]_ §4 "Rolling":
  terms that oppose rotation about all three axes, proportional to the normal force, inside the
  LCP). PyBullet's rolling and spinning friction are torques = coefficient × normal force too.

The matrix ``J Ã W`` (``Ã``: ``A`` projected onto the joint constraints, below) is the same in both
directions; only ``q`` differs:

=============  =======================================  ===========================================
row            forward step (given ``u⁻``)              backward step (given ``u_move``)
=============  =======================================  ===========================================
normal         ``v_n⁺ + α v_n⁻`` (Eq. 4)                ``−v_n⁻ − g_n`` (Eq. 7 with ``g = v_n⁺/α``,
                                                        Eq. 8 with the goal ``g_n``; Eq. 14–15's
                                                        flipped signs)
friction       ``d_jᵀ v_t⁺ + λ`` (Eq. 6)                ``−d_jᵀ (v_t⁻ − g_t) + λ`` (Eq. 9–10)
rolling        ``e_jᵀ ω_rel⁺ + λ_r``                    ``−e_jᵀ (ω_rel⁻ − g_r) + λ_r``
=============  =======================================  ===========================================

In the backward step a contact whose tangential (or rolling, spinning) velocity at ``t`` exceeds
the cut-off δ was sliding, so the forward friction was maximal and opposite to it: it is folded
into the normal impulse's column (``W_n = J_nᵀ − μ J_sᵀ``, the ``±∞`` goal of §3.2 "fold friction
into the system matrix similar to how Baraff handled dynamic friction").

Joints (equalities ``G u = c``) are eliminated exactly: with ``S = G A Gᵀ`` and
``P = I − A Gᵀ S⁺ G``, ``Ã = P A`` and the free velocity is projected as well, so the LCP only
holds the unilateral rows. Baumgarte stabilization ``c = −β C / h`` drives the position error
``C`` down in the direction of the step; the backward step uses ``c = +β C / h`` at the later
configuration ([1]_ §4 "Joints": the sign is reversed so the error decreases backward).

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25, 2008.
.. [2] Anitescu & Potra, Formulating dynamic multi-rigid-body contact problems with friction as
   solvable linear complementarity problems, Nonlinear Dynamics 14, 1997.
.. [3] Stewart & Trinkle, An implicit time-stepping scheme for rigid body dynamics with inelastic
   collisions and Coulomb friction, IJNME 39, 1996.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from reverse.lcp.solve import LCPResult, solve_lcp

__all__ = [
    "RigidBodies",
    "ContactSet",
    "JointRows",
    "Goals",
    "IslandSolution",
    "world_inertia",
    "quat_rotate",
    "quat_multiply",
    "quat_exp",
    "tangent_basis",
    "perpendicular_pair",
    "solve_island",
]


# ----------------------------------------------------------------------------- rotations
def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a ⊗ b`` of (x, y, z, w) quaternions, shape (..., 4).

    The components are written into one array (no ``np.stack``: the reverse step calls this
    and :func:`rotation_matrix` about ten times per step on every body; the arithmetic, and so
    every bit of the result, is the stacked form's)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.ndim == 2 and a.shape == b.shape and a.shape[1] == 4 and (kern := assembly_kernels()):
        return kern.quat_multiply_rows(a, b)  # these expressions compiled: the same bits
    ax, ay, az, aw = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bx, by, bz, bw = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = aw * bx + ax * bw + ay * bz - az * by
    out[..., 1] = aw * by - ax * bz + ay * bw + az * bx
    out[..., 2] = aw * bz + ax * by - ay * bx + az * bw
    out[..., 3] = aw * bw - ax * bx - ay * by - az * bz
    return out


def quat_exp(rotvec: np.ndarray) -> np.ndarray:
    """Unit quaternion (x, y, z, w) of the rotation vector ``rotvec``, shape (..., 3)."""
    rotvec = np.asarray(rotvec, dtype=float)
    angle = np.linalg.norm(rotvec, axis=-1, keepdims=True)
    half = 0.5 * angle
    # sin(θ/2)/θ, with its Taylor series near 0 (relative error < 1e-16 below 1e-4 rad)
    small = angle < 1e-4
    safe = np.where(small, 1.0, angle)
    k = np.where(small, 0.5 - angle**2 / 48.0, np.sin(half) / safe)
    return np.concatenate([k * rotvec, np.cos(half)], axis=-1)


def quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v`` (..., 3) by unit quaternions ``q`` (..., 4)."""
    xyz, w = q[..., :3], q[..., 3:4]
    t = 2.0 * np.cross(xyz, v)
    return v + w * t + np.cross(xyz, t)


def rotation_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of unit quaternions (..., 4) (entries written in place, as
    in :func:`quat_multiply`)."""
    q = np.asarray(q, dtype=float)
    if q.ndim == 2 and q.shape[1] == 4 and (kern := assembly_kernels()):
        return kern.rotation_matrix_rows(q)  # these expressions compiled: the same bits
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    R = np.empty((*q.shape[:-1], 3, 3))
    R[..., 0, 0] = 1 - 2 * (y * y + z * z)
    R[..., 0, 1] = 2 * (x * y - z * w)
    R[..., 0, 2] = 2 * (x * z + y * w)
    R[..., 1, 0] = 2 * (x * y + z * w)
    R[..., 1, 1] = 1 - 2 * (x * x + z * z)
    R[..., 1, 2] = 2 * (y * z - x * w)
    R[..., 2, 0] = 2 * (x * z - y * w)
    R[..., 2, 1] = 2 * (y * z + x * w)
    R[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def world_inertia(inertia_body: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``I_w = R I_body Rᵀ`` for body-frame inertias (n, 3, 3) and orientations (n, 4)."""
    R = rotation_matrix(q)
    return R @ inertia_body @ np.swapaxes(R, -1, -2)


def tangent_basis(normal: np.ndarray, preferred: np.ndarray | None = None) -> np.ndarray:
    """Unit tangents ``t1`` (n, 3) orthogonal to ``normal``: ``preferred`` projected onto the
    tangent plane where it has a usable component, otherwise a fixed world-based choice."""
    normal = np.atleast_2d(normal)
    ref = np.where(
        (np.abs(normal[:, 0]) < 0.9)[:, None], np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
    )
    t = ref - np.sum(ref * normal, axis=1, keepdims=True) * normal
    if preferred is not None:
        pref = np.atleast_2d(preferred)
        pt = pref - np.sum(pref * normal, axis=1, keepdims=True) * normal
        ok = np.linalg.norm(pt, axis=1) > 1e-12
        t[ok] = pt[ok]
    return t / np.linalg.norm(t, axis=1, keepdims=True)


def perpendicular_pair(axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors ``u1``, ``u2`` with (``u1``, ``u2``, ``axis``) right-handed and orthonormal,
    for one unit ``axis`` (3,): ``u1`` is ``axis`` × the world x axis, or × the y axis where
    ``axis`` is within 26° of x (|x| ≥ 0.9), so that the cross product never degenerates."""
    ref = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u1 = np.cross(axis, ref)
    u1 /= np.linalg.norm(u1)
    return u1, np.cross(axis, u1)


# ----------------------------------------------------------------------------- data
@dataclass(frozen=True)
class RigidBodies:
    """Mass properties of the ``n`` bodies of a scene (static bodies have ``mass = 0``).

    Attributes
    ----------
    names : tuple of str
    mass : ndarray (n,)
        kg; 0 marks a static (fixed) body.
    inertia : ndarray (n, 3, 3)
        Inertia about the centre of mass in the body frame, kg·m².
    force, torque : ndarray (n, 3)
        Constant world-frame force (gravity included) and torque on each body, N and N·m.
    """

    names: tuple[str, ...]
    mass: np.ndarray
    inertia: np.ndarray
    force: np.ndarray
    torque: np.ndarray

    @property
    def moving(self) -> np.ndarray:
        return self.mass > 0


@dataclass(frozen=True)
class ContactSet:
    """Contact points of one configuration, normals from body B into body A.

    ``body_a``/``body_b`` are scene body indices, −1 for the world or a static body (static
    bodies never move, so they need no index). ``tangent`` is the first tangent direction ``t1``
    (``t2 = n × t1``); ``roll_axis`` the first rolling direction.
    """

    body_a: np.ndarray
    body_b: np.ndarray
    point: np.ndarray
    normal: np.ndarray
    distance: np.ndarray
    friction: np.ndarray
    rolling: np.ndarray
    spinning: np.ndarray
    restitution: np.ndarray
    tangent: np.ndarray
    roll_axis: np.ndarray

    def __len__(self) -> int:
        return int(self.body_a.shape[0])

    @classmethod
    def empty(cls) -> ContactSet:
        z1, z3 = np.zeros(0), np.zeros((0, 3))
        zi = np.zeros(0, dtype=int)
        return cls(zi, zi, z3, z3, z1, z1, z1, z1, z1, z3, z3)

    def subset(self, index) -> ContactSet:
        return ContactSet(**{k: v[index] for k, v in self.__dict__.items()})

    def with_tangents(self, tangent: np.ndarray, roll_axis: np.ndarray) -> ContactSet:
        return replace(self, tangent=tangent, roll_axis=roll_axis)


@dataclass(frozen=True)
class JointRows:
    """Bilateral velocity constraints of one configuration: ``G u = c`` (rows over all bodies'
    6-vectors, scene order) and the position errors ``C`` they stabilize."""

    G: np.ndarray  # (m, 6n)
    error: np.ndarray  # (m,)
    bodies: list[tuple[int, int]] = field(default_factory=list)  # body pair of each joint


@dataclass
class Goals:
    """Per-contact goal velocities of a backward step ([1]_ §3.1–3.2).

    ``normal`` — the goal ``g_n`` of Eq. 8 (≥ 0: the contact approached at least this fast) for
    contacts in the resting branch; ``tangential`` — the goal pre-step tangential velocity
    ``g_t`` (3-vector) of Eq. 9–10 for sticking contacts; ``rolling`` — the goal pre-step
    relative angular velocity (3-vector) for rolling rows. All default to zero (stay at rest).
    """

    normal: np.ndarray
    tangential: np.ndarray
    rolling: np.ndarray
    #: Contacts whose goals the user asked for (a hint): the free-to-bounce test does not drop
    #: them (§4 "Stacking": the user overrides the heuristic). ``None``: none are.
    explicit: np.ndarray | None = None

    @classmethod
    def zeros(cls, n: int) -> Goals:
        return cls(np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3)))

    def any(self) -> bool:
        return bool(
            np.any(self.normal != 0) or np.any(self.tangential != 0) or np.any(self.rolling != 0)
        )

    def per_contact(self) -> np.ndarray:
        """Per contact, whether it has a goal (a normal, tangential or rolling one)."""
        return (
            (self.normal != 0)
            | np.any(self.tangential != 0, axis=1)
            | np.any(self.rolling != 0, axis=1)
        )


@dataclass
class IslandSolution:
    """Result of one island's step: the new velocities of its bodies and the LCP's report."""

    bodies: np.ndarray  # scene indices
    velocity: np.ndarray  # (nb, 6): u⁻ (backward) or u_move (forward)
    impulse_normal: np.ndarray  # (nc,) normal impulses p_n, N·s
    lcp: LCPResult | None
    n_rows: int
    branch: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype="U16"))
    lcp_seconds: float = 0.0


# ----------------------------------------------------------------------------- assembly
def assembly_kernels():
    """:mod:`reverse.step.assembly_kernel` (the products of the assembly as sums in index order, the
    same on every CPU), imported on first use; None without numba: the products are then
    numpy's (OpenBLAS), as before it. Tests set :data:`USE_ASSEMBLY_KERNELS` False to compare."""
    if not _KERNELS:
        try:
            from reverse.step import assembly_kernel
        except ImportError:
            assembly_kernel = None
        _KERNELS.append(assembly_kernel)
    return _KERNELS[0] if USE_ASSEMBLY_KERNELS else None


#: Whether the compiled products are used when numba is there (tests compare both paths).
USE_ASSEMBLY_KERNELS = True
_KERNELS: list = []


def _cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product of two 3-vectors (``np.cross`` costs ~60 µs of axis handling per call, the
    largest single item of the assembly in a profile of a 264-row island)."""
    return np.array(
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    )


def _dot3(a: np.ndarray, b: np.ndarray) -> float:
    """``a · b`` of two 3-vectors as ``((0 + a₀b₀) + a₁b₁) + a₂b₂``, separate multiplies and adds
    (no fused multiply-add), the same on every CPU (:func:`reverse.step.batched._dot3` does it
    row-wise:
    the two paths agree to the bit)."""
    return ((0.0 + a[0] * b[0]) + a[1] * b[1]) + a[2] * b[2]


class _Island:
    """Jacobian bookkeeping for the moving bodies of one island."""

    def __init__(self, bodies: np.ndarray, position: np.ndarray):
        self.bodies = bodies
        self.local = {int(b): k for k, b in enumerate(bodies)}
        self.position = position  # COM positions of all scene bodies (n, 3)
        self.ndof = 6 * len(bodies)

    def linear_row(self, a: int, b: int, point: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Row of the relative velocity of A with respect to B at ``point`` along ``d``."""
        row = np.zeros(self.ndof)
        for body, sign in ((a, 1.0), (b, -1.0)):
            k = self.local.get(int(body))
            if k is not None:
                r = point - self.position[body]
                row[6 * k : 6 * k + 3] = sign * d
                row[6 * k + 3 : 6 * k + 6] = sign * _cross3(r, d)
        return row

    def angular_row(self, a: int, b: int, e: np.ndarray) -> np.ndarray:
        row = np.zeros(self.ndof)
        for body, sign in ((a, 1.0), (b, -1.0)):
            k = self.local.get(int(body))
            if k is not None:
                row[6 * k + 3 : 6 * k + 6] = sign * e
        return row


def solve_island(
    *,
    direction: str,
    bodies: np.ndarray,
    rigid: RigidBodies,
    position: np.ndarray,
    inertia_world: np.ndarray,
    velocity: np.ndarray,
    contacts: ContactSet,
    dt: float,
    joints: JointRows | None = None,
    joint_rhs: np.ndarray | None = None,
    goals: Goals | None = None,
    epsilon: float = 0.2,
    delta: float = 1e-4,
    delta_angular: float = 1e-4,
    warm_start: np.ndarray | None = None,
    attract: np.ndarray | None = None,
) -> IslandSolution:
    """Solve one step of one island.

    Parameters
    ----------
    direction : {"forward", "backward"}
    bodies : ndarray of int
        Scene indices of the island's moving bodies.
    rigid : RigidBodies
    position : ndarray (n, 3)
        Centre-of-mass positions of all scene bodies at the *start-of-step* configuration
        (``t`` forward, ``t − h`` backward: in both the configuration the step moves away from in
        forward time).
    inertia_world : ndarray (n, 3, 3)
        World inertias at that configuration.
    velocity : ndarray (n, 6)
        Forward: ``u⁻``. Backward: ``u_move`` (the velocity at ``t`` that moved the bodies).
    contacts : ContactSet
        The island's contacts at that configuration.
    dt : float
    joints, joint_rhs : JointRows, ndarray, optional
        The island's joint rows ``G`` and the right-hand side ``c`` of ``G u = c``.
    goals : Goals, optional
        Backward only.
    epsilon : float
        Restitution cut-off ε (m/s): forward, a contact approaching slower than ε is inelastic
        (§2.1); backward, an outgoing normal velocity ``v⁺`` is explained by an elastic
        collision only if ``v⁺/α ≥ ε`` (otherwise the forward step could not have produced it).
    delta, delta_angular : float
        The cut-off δ ≪ ε between resting and separating normal velocities, and between
        sticking and sliding (rolling, spinning) contacts, m/s and rad/s (Handle-Contact).
    warm_start : ndarray, optional
        A previous basis for the LCP solver.
    attract : ndarray of bool, shape (nc,), optional
        Backward only: contacts (in the resting branch) whose normal impulse may be negative —
        the non-physical "attraction" of [1]_ §4 "Stacking" that keeps constrained bodies of a
        stack from flying apart. Such a contact gets a second, pulling normal variable
        ``p_n⁻ ≥ 0`` with row and column ``−J_n`` (``v_n + g_n ≥ 0 ⟂ p_n⁻``), so with the pushing
        one it holds ``v_n = −g_n`` exactly with a free ``p_n = p_n⁺ − p_n⁻``. Its friction
        (rolling, spinning) directions get no cone row: each pair ``±d`` then holds the
        tangential velocity at its goal with a free impulse — glue, as the stack needs. (A cone
        ``μ (p_n⁺ + p_n⁻)`` would admit sticking too, but also slipping at the cone's edge, and
        Lemke returns either.) Sliding contacts (friction folded into the normal column) never
        attract: their friction would be unbounded.
    """
    if direction not in ("forward", "backward"):
        raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")
    backward = direction == "backward"
    nb = len(bodies)
    isl = _Island(bodies, position)
    nc = len(contacts)
    if goals is None:
        goals = Goals.zeros(nc)

    # A = M⁻¹ (block diagonal), F: body forces
    A = np.zeros((6 * nb, 6 * nb))
    F = np.zeros(6 * nb)
    u = np.zeros(6 * nb)
    for k, b in enumerate(bodies):
        A[6 * k : 6 * k + 3, 6 * k : 6 * k + 3] = np.eye(3) / rigid.mass[b]
        A[6 * k + 3 : 6 * k + 6, 6 * k + 3 : 6 * k + 6] = np.linalg.inv(inertia_world[b])
        F[6 * k : 6 * k + 3] = rigid.force[b]
        F[6 * k + 3 : 6 * k + 6] = rigid.torque[b]
        u[6 * k : 6 * k + 6] = velocity[b]

    # The free velocity: forward u⁻ + A h F, backward u_move − A h F (Eq. 2, 13). Without
    # joints the products are the compiled sums of reverse.step.assembly_kernel (the batched path's
    # numbers), with joints (and without numba) numpy's.
    kern = assembly_kernels() if joints is None or not joints.G.shape[0] else None
    dot = (lambda a, b: a @ b) if kern is None else kern.dense_dot
    sign = -1.0 if backward else 1.0
    ufree = u + sign * dt * (A @ F if kern is None else kern.dense_matvec(A, F))
    At = A
    if joints is not None and joints.G.shape[0]:
        cols = np.concatenate([np.arange(6 * b, 6 * b + 6) for b in bodies])
        G = joints.G[:, cols]
        S = G @ A @ G.T
        Sp = np.linalg.pinv(S, rcond=1e-12)
        AGt = A @ G.T
        P = np.eye(6 * nb) - AGt @ Sp @ G
        At = P @ A
        At = 0.5 * (At + At.T)  # symmetric in exact arithmetic
        c = np.zeros(G.shape[0]) if joint_rhs is None else joint_rhs
        ufree = P @ ufree + AGt @ (Sp @ c)

    # ---- variables and rows
    rows: list[np.ndarray] = []  # velocity-measuring rows (6nb,)
    wcols: list[np.ndarray] = []  # impulse columns (6nb,), zero for slack variables
    qvel: list[float] = []  # constant part of each row
    couple: list[tuple[int, int, float]] = []  # extra (row, col, value) entries
    branch = np.empty(nc, dtype="U16")
    normal_var = np.zeros(nc, dtype=int)
    pull_var = np.full(nc, -1, dtype=int)  # the pulling variable of an attracting contact
    # moving-velocity quantities at contacts, for the backward classification
    for i in range(nc):
        a, b = int(contacts.body_a[i]), int(contacts.body_b[i])
        p, n = contacts.point[i], contacts.normal[i]
        t1 = contacts.tangent[i]
        t2 = _cross3(n, t1)
        Jn = isl.linear_row(a, b, p, n)
        mu, rho, sig, alpha = (
            contacts.friction[i],
            contacts.rolling[i],
            contacts.spinning[i],
            contacts.restitution[i],
        )
        r1 = contacts.roll_axis[i]
        r2 = _cross3(n, r1)
        col_n = Jn.copy()
        fric, roll, spin = mu > 0, rho > 0, sig > 0
        if backward:
            vn = dot(Jn, u)
            if vn > delta:
                # Separating at t: an elastic collision (Eq. 7) if the forward step could have
                # produced it, otherwise the contact carried no impulse.
                if alpha > 0 and vn / alpha >= epsilon:
                    gn, br = vn / alpha, "elastic"
                else:
                    branch[i] = "free"
                    normal_var[i] = -1
                    continue
            else:
                gn, br = float(goals.normal[i]), "resting"  # Eq. 8
            Jt1, Jt2 = isl.linear_row(a, b, p, t1), isl.linear_row(a, b, p, t2)
            vt = np.array([dot(Jt1, u), dot(Jt2, u)])
            # Handle-Contact's sticking/sliding cut-off δ (§3.2): sliding at t, maximal friction
            if fric and np.hypot(*vt) > delta:
                s = (vt[0] * t1 + vt[1] * t2) / np.hypot(*vt)
                col_n = col_n - mu * isl.linear_row(a, b, p, s)
                fric = False
                br += "+slide"
            if roll:
                Jr = (isl.angular_row(a, b, r1), isl.angular_row(a, b, r2))
                wr = np.array([dot(Jr[0], u), dot(Jr[1], u)])
                if np.hypot(*wr) > delta_angular:
                    e = (wr[0] * r1 + wr[1] * r2) / np.hypot(*wr)
                    col_n = col_n - rho * isl.angular_row(a, b, e)
                    roll = False
            if spin:
                ws = dot(isl.angular_row(a, b, n), u)
                if abs(ws) > delta_angular:
                    col_n = col_n - sig * np.sign(ws) * isl.angular_row(a, b, n)
                    spin = False
            branch[i] = br
            qn = -dot(Jn, ufree) - gn
        else:
            vn_pre = dot(Jn, u)
            eff = alpha if vn_pre < -epsilon else 0.0  # restitution cut-off (§2.1)
            qn = dot(Jn, ufree) + eff * vn_pre
            branch[i] = "elastic" if eff > 0 else "contact"
        jn = len(rows)
        normal_var[i] = jn
        rows.append(Jn)
        wcols.append(col_n)
        qvel.append(qn)
        pull = -1
        if backward and attract is not None and attract[i] and branch[i] == "resting":
            pull = len(rows)  # p_n⁻: the same contact pulling (§4 "Stacking")
            pull_var[i] = pull
            rows.append(-Jn)
            # pulling reverses the normal impulse, not the folded sliding friction: μ|p_n|
            wcols.append(col_n - 2.0 * Jn)
            qvel.append(-qn)

        def pyramid(dirs_rows, goal_vec, coef, dir_vectors, jn=jn, pull=pull):
            """β_j along the given rows, their slack λ, and the cone row coef·p_n − Σβ; for an
            attracting contact the β_j alone (glue: no cone, the velocity equals its goal)."""
            start = len(rows)
            for Jd, dvec in zip(dirs_rows, dir_vectors, strict=True):
                rows.append(Jd)
                wcols.append(Jd)
                if backward:
                    # d · goal in explicit arithmetic, not BLAS: ``dvec @ goal_vec`` is
                    # OpenBLAS's ddot, whose kernel (FMA or not) depends on the CPU, and
                    # reverse.step.batched computes the same term over all rows at once
                    qvel.append(-dot(Jd, ufree) + float(_dot3(dvec, goal_vec)))
                else:
                    qvel.append(dot(Jd, ufree))
            if pull >= 0:
                # Attraction (§4 "Stacking"): the rows of d and −d are negatives of each other,
                # so without λ both w ≥ 0 make each w zero — the tangential (rolling, spinning)
                # velocity equals its goal, with a free impulse. A cone μ(p_n⁺ + p_n⁻) would
                # also admit it, but then slipping at the cone's edge solves the LCP as well,
                # and Lemke may return that: the slip, above δ, makes the contact "sliding"
                # at the next step, which never attracts, and the stack comes apart.
                return
            lam = len(rows)
            rows.append(np.zeros(isl.ndof))
            wcols.append(np.zeros(isl.ndof))
            qvel.append(0.0)
            for j in range(start, lam):
                couple.append((j, lam, 1.0))  # + λ in each direction row
                couple.append((lam, j, -1.0))  # − Σ β in the cone row
            couple.append((lam, jn, coef))  # + coef · p_n

        if fric:
            Jt1 = isl.linear_row(a, b, p, t1)
            Jt2 = isl.linear_row(a, b, p, t2)
            pyramid((Jt1, -Jt1, Jt2, -Jt2), goals.tangential[i], mu, (t1, -t1, t2, -t2))
        if roll:
            R1, R2 = isl.angular_row(a, b, r1), isl.angular_row(a, b, r2)
            pyramid((R1, -R1, R2, -R2), goals.rolling[i], rho, (r1, -r1, r2, -r2))
        if spin:
            Sn = isl.angular_row(a, b, n)
            pyramid((Sn, -Sn), goals.rolling[i], sig, (n, -n))

    m = len(rows)
    if m == 0:
        vel = ufree
        return IslandSolution(bodies, vel.reshape(nb, 6), np.zeros(nc), None, 0, branch)
    Jm = np.array(rows)
    Wm = np.array(wcols)
    M = Jm @ At @ Wm.T if kern is None else kern.dense_jaw(Jm, At, Wm)
    for r, cidx, v in couple:
        M[r, cidx] += v
    q = np.array(qvel)
    if warm_start is not None and warm_start.size and int(np.max(warm_start)) >= m:
        warm_start = None  # from a differently structured problem; the solver verifies the rest
    t0 = time.perf_counter()
    res = solve_lcp(M, q, warm_start=warm_start)
    lcp_seconds = time.perf_counter() - t0
    z = res.z if np.all(np.isfinite(res.z)) else np.zeros(m)
    du = At @ (Wm.T @ z) if kern is None else kern.dense_matvec(At, kern.dense_matvec(Wm.T, z))
    vel = ufree - du if backward else ufree + du
    pn = np.array([z[j] if j >= 0 else 0.0 for j in normal_var])
    pulling = pull_var >= 0
    pn[pulling] -= z[pull_var[pulling]]
    return IslandSolution(bodies, vel.reshape(nb, 6), pn, res, m, branch, lcp_seconds)
