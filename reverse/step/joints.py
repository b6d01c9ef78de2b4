"""Joint rows for the reverse stepper: bilateral velocity constraints ``G u = c`` and their
position errors ``C`` (Twigg & James 2008 §4 "Joints and constraints": extra Lagrange multipliers
in the LCP's variables; here they are eliminated exactly, see :mod:`reverse.step.dynamics`).

Pure numpy. A joint links a *child* body (A) to a *parent* (B: a body or the world). Anchors and
axes are fixed in each body's frame from the scene's configuration (which, for a reverse run, is
the final one):

=========  ====================================================================================
ball       3 rows: the two anchor points move together; ``C = p_A − p_B``
revolute   ball rows + 2 angular rows ``uₖ·(ω_A − ω_B)`` (uₖ ⟂ axis); ``Cₖ = uₖ·(a_B × a_A)``
prismatic  3 angular rows ``ω_A − ω_B`` + 2 rows ``uₖ·(velocity of p_A relative to B)``;
           ``C = (relative rotation vector, uₖ·(p_A − p_B))``
fixed      ball rows + 3 angular rows; ``C = (p_A − p_B, relative rotation vector)``
=========  ====================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reverse.step.dynamics import JointRows, perpendicular_pair, quat_multiply, quat_rotate

__all__ = ["JointModel", "JointSpec"]


def _conj(q: np.ndarray) -> np.ndarray:
    return q * np.array([-1.0, -1.0, -1.0, 1.0])


def _rotvec(q: np.ndarray) -> np.ndarray:
    """Rotation vector of a unit quaternion (shortest rotation)."""
    q = q if q[3] >= 0 else -q
    s = np.linalg.norm(q[:3])
    if s < 1e-12:
        return 2.0 * q[:3]
    return 2.0 * np.arctan2(s, q[3]) * q[:3] / s


@dataclass(frozen=True)
class JointSpec:
    """One joint: ``kind``, child body index ``a``, parent index ``b`` (−1 = world or static),
    anchors and axes in each body's frame, and the reference relative orientation."""

    kind: str
    a: int
    b: int
    anchor_a: np.ndarray  # in A's body frame, relative to A's COM
    anchor_b: np.ndarray  # in B's body frame relative to B's COM (world point if b = −1)
    axis_a: np.ndarray  # unit, A's frame
    axis_b: np.ndarray  # unit, B's frame (world if b = −1)
    q_ref: np.ndarray  # q_A⁻¹ ⊗ q_B at the reference configuration


def _linear_row(n, a, b, ra, rb, d) -> np.ndarray:
    """Row of the velocity of A's point ``x_A + ra`` relative to B's point ``x_B + rb``."""
    row = np.zeros(6 * n)
    row[6 * a : 6 * a + 3] = d
    row[6 * a + 3 : 6 * a + 6] = np.cross(ra, d)
    if b >= 0:
        row[6 * b : 6 * b + 3] = -d
        row[6 * b + 3 : 6 * b + 6] = -np.cross(rb, d)
    return row


def _angular_row(n, a, b, e) -> np.ndarray:
    row = np.zeros(6 * n)
    row[6 * a + 3 : 6 * a + 6] = e
    if b >= 0:
        row[6 * b + 3 : 6 * b + 6] = -e
    return row


class JointModel:
    """Joint rows of a scene at any configuration.

    Parameters
    ----------
    joints : list of JointSpec
    n_bodies : int
    """

    ROWS = {"ball": 3, "revolute": 5, "prismatic": 5, "fixed": 6}

    def __init__(self, joints: list[JointSpec], n_bodies: int):
        for j in joints:
            if j.kind not in self.ROWS:
                raise ValueError(f"unknown joint kind {j.kind!r}")
        self.joints = list(joints)
        self.n_bodies = n_bodies

    @classmethod
    def from_definitions(cls, definitions, position, orientation, static) -> JointModel:
        """Build from ``(kind, child, parent, anchor, axis)`` tuples in world coordinates at the
        configuration ``position`` (n, 3), ``orientation`` (n, 4); ``parent`` −1 for the world;
        ``static`` marks bodies that never move (treated like the world)."""
        specs = []
        for kind, a, b, anchor, axis in definitions:
            if b >= 0 and static[b]:
                b_eff = -1
            else:
                b_eff = b
            anchor = np.asarray(position[a] if anchor is None else anchor, dtype=float)
            ax = np.array([0.0, 0.0, 1.0]) if axis is None else np.asarray(axis, dtype=float)
            ax = ax / np.linalg.norm(ax)
            qa = orientation[a]
            anchor_a = quat_rotate(_conj(qa), anchor - position[a])
            axis_a = quat_rotate(_conj(qa), ax)
            if b_eff >= 0:
                qb = orientation[b_eff]
                anchor_b = quat_rotate(_conj(qb), anchor - position[b_eff])
                axis_b = quat_rotate(_conj(qb), ax)
            else:
                qb = orientation[b] if b >= 0 else np.array([0.0, 0.0, 0.0, 1.0])
                anchor_b, axis_b = anchor.copy(), ax.copy()
            q_ref = quat_multiply(_conj(qa), qb)
            specs.append(JointSpec(kind, a, b_eff, anchor_a, anchor_b, axis_a, axis_b, q_ref))
        return cls(specs, len(position))

    def pairs(self) -> list[tuple[int, int]]:
        return [(j.a, j.b) for j in self.joints]

    def rows(self, position: np.ndarray, orientation: np.ndarray) -> JointRows:
        """``G`` (m, 6n) and ``C`` (m,) at the configuration given."""
        n = self.n_bodies
        G_rows, C_rows = [], []
        ident = np.array([0.0, 0.0, 0.0, 1.0])
        for j in self.joints:
            qa = orientation[j.a]
            qb = orientation[j.b] if j.b >= 0 else ident
            xa = position[j.a]
            xb = position[j.b] if j.b >= 0 else np.zeros(3)
            ra = quat_rotate(qa, j.anchor_a)
            pa = xa + ra
            pb = xb + quat_rotate(qb, j.anchor_b) if j.b >= 0 else j.anchor_b
            rb = pb - xb

            def lin(d, rb_point=rb, j=j, ra=ra):
                return _linear_row(n, j.a, j.b, ra, rb_point, d)

            def ang(e, j=j):
                return _angular_row(n, j.a, j.b, e)

            # relative rotation error: q_A ⊗ q_ref ⊗ q_B⁻¹ is the identity at the reference
            rel = _rotvec(quat_multiply(quat_multiply(qa, j.q_ref), _conj(qb)))
            eye = np.eye(3)
            if j.kind in ("ball", "revolute", "fixed"):
                for k in range(3):
                    G_rows.append(lin(eye[k]))
                    C_rows.append((pa - pb)[k])
            if j.kind in ("fixed", "prismatic"):
                for k in range(3):
                    G_rows.append(ang(eye[k]))
                    C_rows.append(rel[k])
            if j.kind == "revolute":
                a_a = quat_rotate(qa, j.axis_a)
                a_b = quat_rotate(qb, j.axis_b) if j.b >= 0 else j.axis_b
                u1, u2 = perpendicular_pair(a_b)
                mis = np.cross(a_b, a_a)
                for u in (u1, u2):
                    G_rows.append(ang(u))
                    C_rows.append(u @ mis)
            if j.kind == "prismatic":
                a_b = quat_rotate(qb, j.axis_b) if j.b >= 0 else j.axis_b
                u1, u2 = perpendicular_pair(a_b)
                for u in (u1, u2):
                    # velocity of A's anchor relative to B's material point at the same place
                    G_rows.append(lin(u, rb_point=pa - xb))
                    C_rows.append(u @ (pa - pb))
        if not G_rows:
            return JointRows(np.zeros((0, 6 * n)), np.zeros(0), [])
        return JointRows(np.array(G_rows), np.array(C_rows), self.pairs())
