"""Compiled products of the island assembly (issue 17, fourth round): ``J A Wᵀ``, ``J u``,
``A F`` and ``A (Wᵀ z)`` of the contact LCPs of Twigg & James 2008 (§2.1 Eq. 2–6, §3.3
Eq. 13–15), as plain loops.

Every product is a **sequential sum in index order**, ``((0 + x₀y₀) + x₁y₁) + …``, separate
multiplies and adds (numba without ``fastmath``: no fused multiply-add), over the dense row
(``6 · bodies`` columns) of the island. Terms that are exact zeros (a body the row does not
touch, an off-diagonal zero of ``A = M⁻¹``) are skipped: adding ``±0`` to a sum that started at
``+0`` changes no bit, so the block form over each row's (at most two) bodies, in ascending body
order, gives the dense form's numbers to the bit. :func:`reverse.step.batched.solve_island_arrays`
uses the block form over all islands of a step at once (no per-group numpy calls);
:func:`reverse.step.dynamics.solve_island` (islands without joints) the dense one — so the batched
and
one-by-one paths still agree to the bit (``tests/unit/reverse/test_batched.py``).

These are not OpenBLAS's ``ddot``/``dgemv``/``dgemm``, whose kernels (and so the last bits of a
product) depend on the CPU; the sums here are the same on every machine. Without numba the two
callers keep their numpy (BLAS) products.

Two element-wise kernels ride along: :func:`quat_multiply_rows` and :func:`rotation_matrix_rows`
are :func:`reverse.step.dynamics.quat_multiply` and :func:`~reverse.step.dynamics.rotation_matrix`
compiled expression for expression — the same bits (no FMA contraction, same order), one call
instead of ~30 numpy calls, for the orientation fixed point's iterations over few bodies.

numba is loaded through :mod:`reverse.lcp.lemke_kernel` (the one module importing it,
``docs/architecture.md``); :func:`kernels` returns None when that import fails.
"""

from __future__ import annotations

import numpy as np

from reverse.lcp.lemke_kernel import njit

__all__ = [
    "block_dots",
    "island_matrices",
    "impulse_velocity",
    "apply_blocks",
    "dense_dot",
    "dense_matvec",
    "dense_jaw",
    "quat_multiply_rows",
    "rotation_matrix_rows",
]


@njit(cache=True)
def _first_side(g0: int, g1: int) -> int:
    """The side whose body comes first in the island's column order (ascending body)."""
    if g0 < 0 or (g1 >= 0 and g1 < g0):
        return 1
    return 0


@njit(cache=True)
def block_dots(B, gb, V):
    """``out[i] = row_i · v`` for rows given as body blocks ``B`` (N, 2, 6) on the bodies ``gb``
    (N, 2; −1 none) of a stacked velocity ``V`` (bodies, 6): the dense ``Jrow @ u``, summed in
    column order."""
    N = B.shape[0]
    out = np.empty(N)
    for i in range(N):
        acc = 0.0
        s0 = _first_side(gb[i, 0], gb[i, 1])
        for t in range(2):
            s = s0 if t == 0 else 1 - s0
            g = gb[i, s]
            if g >= 0:
                for c in range(6):
                    acc += B[i, s, c] * V[g, c]
        out[i] = acc
    return out


@njit(cache=True)
def apply_blocks(inv_m, inv_I, X):
    """``A x`` per body for ``A = diag(1/m, 1/m, 1/m, I_w⁻¹)`` (``inv_m`` (n,), ``inv_I``
    (n, 3, 3), ``X`` (n, 6)): the dense ``A @ x`` summed in column order."""
    n = X.shape[0]
    out = np.empty((n, 6))
    for b in range(n):
        for r in range(3):
            out[b, r] = 0.0 + inv_m[b] * X[b, r]
        for r in range(3):
            acc = 0.0
            for c in range(3):
                acc += inv_I[b, r, c] * X[b, 3 + c]
            out[b, 3 + r] = acc
    return out


@njit(cache=True)
def island_matrices(J, W, gb, r_start, inv_m, inv_I, M_flat, m_off):
    """``M_k = J A Wᵀ`` of every island ``k`` (rows ``r_start[k]:r_start[k+1]``), written
    row-major into ``M_flat`` at ``m_off[k]``: ``(J A)[i, c]`` summed over the row's columns in
    order, then ``M[i, j] = Σ_c (J A)[i, c] W[j, c]`` in column order (the dense
    ``J @ A @ W.T``)."""
    R = J.shape[0]
    JA = np.zeros((R, 2, 6))
    for i in range(R):
        for s in range(2):
            g = gb[i, s]
            if g < 0:
                continue
            for c in range(3):
                JA[i, s, c] = 0.0 + J[i, s, c] * inv_m[g]
            for c in range(3):
                acc = 0.0
                for k in range(3):
                    acc += J[i, s, 3 + k] * inv_I[g, k, c]
                JA[i, s, 3 + c] = acc
    for k in range(len(r_start) - 1):
        r0, r1 = r_start[k], r_start[k + 1]
        m = r1 - r0
        base = m_off[k]
        for i in range(r0, r1):
            s0 = _first_side(gb[i, 0], gb[i, 1])
            for j in range(r0, r1):
                acc = 0.0
                for t in range(2):
                    s = s0 if t == 0 else 1 - s0
                    g = gb[i, s]
                    if g < 0:
                        continue
                    for sj in range(2):
                        if gb[j, sj] == g:
                            for c in range(6):
                                acc += JA[i, s, c] * W[j, sj, c]
                M_flat[base + (i - r0) * m + (j - r0)] = acc


@njit(cache=True)
def impulse_velocity(W, gb, z, inv_m, inv_I, n_bodies):
    """``A (Wᵀ z)`` per body (n_bodies, 6): ``(Wᵀ z)[c]`` summed over the rows in order, then
    ``A`` applied as :func:`apply_blocks` (the dense ``A @ (W.T @ z)``)."""
    Y = np.zeros((n_bodies, 6))
    for j in range(W.shape[0]):
        for s in range(2):
            g = gb[j, s]
            if g >= 0:
                for c in range(6):
                    Y[g, c] += W[j, s, c] * z[j]
    return apply_blocks(inv_m, inv_I, Y)


@njit(cache=True)
def dense_dot(a, b):
    """``a · b`` summed in index order, exact zeros of ``a`` skipped (no bit changes)."""
    acc = 0.0
    for k in range(a.shape[0]):
        if a[k] != 0.0:
            acc += a[k] * b[k]
    return acc


@njit(cache=True)
def dense_matvec(A, x):
    """``A @ x`` with each entry summed in column order (zeros of ``A`` skipped)."""
    out = np.empty(A.shape[0])
    for r in range(A.shape[0]):
        acc = 0.0
        for c in range(A.shape[1]):
            if A[r, c] != 0.0:
                acc += A[r, c] * x[c]
        out[r] = acc
    return out


@njit(cache=True)
def dense_jaw(J, A, W):
    """``J @ A @ W.T`` for a block-diagonal ``A`` (6 × 6 blocks, an island without joints),
    every entry summed in order, exact zeros skipped (the dense form of
    :func:`island_matrices`)."""
    m, L = J.shape
    JA = np.zeros((m, L))
    for i in range(m):
        for k in range(L):
            if J[i, k] != 0.0:
                for c in range(6 * (k // 6), 6 * (k // 6) + 6):  # A is 6 × 6 block diagonal
                    if A[k, c] != 0.0:
                        JA[i, c] += J[i, k] * A[k, c]
    M = np.empty((m, W.shape[0]))
    cols = np.empty(L, dtype=np.int64)
    for i in range(m):
        nz = 0  # the row's nonzero columns, ascending (≤ 12 of a contact row)
        for c in range(L):
            if JA[i, c] != 0.0:
                cols[nz] = c
                nz += 1
        for j in range(W.shape[0]):
            acc = 0.0
            for t in range(nz):
                acc += JA[i, cols[t]] * W[j, cols[t]]
            M[i, j] = acc
    return M


@njit(cache=True)
def quat_multiply_rows(a, b):
    """Row-wise Hamilton products ``a ⊗ b`` (n, 4): :func:`reverse.step.dynamics.quat_multiply`'s
    expressions, term for term (element-wise products and sums in the same order: the same
    bits; it saves that function's ~30 numpy calls on the few-body arrays of the orientation
    fixed point's later iterations)."""
    out = np.empty((a.shape[0], 4))
    for i in range(a.shape[0]):
        ax, ay, az, aw = a[i, 0], a[i, 1], a[i, 2], a[i, 3]
        bx, by, bz, bw = b[i, 0], b[i, 1], b[i, 2], b[i, 3]
        out[i, 0] = aw * bx + ax * bw + ay * bz - az * by
        out[i, 1] = aw * by - ax * bz + ay * bw + az * bx
        out[i, 2] = aw * bz + ax * by - ay * bx + az * bw
        out[i, 3] = aw * bw - ax * bx - ay * by - az * bz
    return out


@njit(cache=True)
def rotation_matrix_rows(q):
    """Rotation matrices (n, 3, 3) of unit quaternions (n, 4): the expressions of
    :func:`reverse.step.dynamics.rotation_matrix`, term for term (the same bits)."""
    R = np.empty((q.shape[0], 3, 3))
    for i in range(q.shape[0]):
        x, y, z, w = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
        R[i, 0, 0] = 1 - 2 * (y * y + z * z)
        R[i, 0, 1] = 2 * (x * y - z * w)
        R[i, 0, 2] = 2 * (x * z + y * w)
        R[i, 1, 0] = 2 * (x * y + z * w)
        R[i, 1, 1] = 1 - 2 * (x * x + z * z)
        R[i, 1, 2] = 2 * (y * z - x * w)
        R[i, 2, 0] = 2 * (x * z - y * w)
        R[i, 2, 1] = 2 * (y * z + x * w)
        R[i, 2, 2] = 1 - 2 * (x * x + y * y)
    return R
