"""Many island LCPs of a step assembled together (issue 17 item 2): the batched form of
:func:`reverse.step.dynamics.solve_island` for islands without joints.

A step of a scene like the spelling balls has hundreds of small islands (a ball and the ground,
two balls touching); :func:`~reverse.step.dynamics.solve_island` builds each with one Python call
per
Jacobian row. :func:`solve_islands` builds all of them with numpy operations over every contact
of the step (rows, branch classification of Twigg & James 2008 §3, Eq. 7–10, 13–15, columns with
folded sliding friction, pyramid couplings) and over the islands of equal size (mass matrices,
``J A Wᵀ``, ``q``, the new velocities), then solves every island's LCP in one compiled call
(:func:`reverse.lcp.solve.solve_lcp_arrays`; :func:`_solve_lcps`).

Bit for bit the same as :func:`~reverse.step.dynamics.solve_island`: every floating-point operation
is the same operation on the same operands. Element-wise arithmetic is, vectorized. The products
(``Jn @ u``, ``J A Wᵀ``, ``A F``, ``A (Wᵀ z)``) are, with numba, the compiled sums of
:mod:`reverse.step.assembly_kernel` over all islands at once (sums in index order, the block form of
the dense sums ``solve_island`` then makes; issue 17's fourth round: they replaced ~30 numpy
calls per group of equal islands); without numba they go through numpy's stacked ``matmul``,
which calls the same BLAS kernel once per island slice as ``solve_island``'s products (measured
on this build: identical for every size tried, 6 to 1200; ``np.einsum`` is not, and is not
used). ``tests/unit/reverse/test_batched.py`` checks it on random islands of 1 to 8 bodies,
both directions, every branch.

The LCP answers are those of ``reverse.step.dynamics.solve_lcp`` (looked up at each call: the
binding :func:`~reverse.step.dynamics.solve_island` uses, which tests replace to inject failures),
island by island, bit for bit. When that binding is :func:`reverse.lcp.solve.solve_lcp` the islands
below :data:`reverse.lcp.solve.ADVANCED_START_MIN_ROWS` rows are solved by the same compiled kernel
call in one batch over flat arrays (the group matrices as stacked, ``q``, offsets, warm bases),
with no per-island Python but the :class:`~reverse.lcp.solve.LCPResult` of each answer; an island
without a verified answer there goes through ``solve_lcp`` and its logged fallback ladder as
before. Measured on the "LO" spelling scene's islands (0.25 s back, 840 LCPs, in one process,
A/B interleaved, loaded 2-core machine): 16.8 → 14.1 µs of CPU per LCP — the wrapper's ≈ 3 µs
removed; the rest is the compiled solve itself (at 24 rows: Ruiz equilibration ≈ 5 µs, the
principal re-solve's two LU solves ≈ 5 µs, verification ≈ 2 µs, a cold Lemke path ≈ 12 µs).
(The list entry :func:`reverse.lcp.solve.solve_lcp_batch` pays a Python conversion per problem, so
it
was no faster than ``solve_lcp`` here.)

:func:`solve_islands` returns one :class:`~reverse.step.dynamics.IslandSolution` per island;
:func:`solve_island_arrays` returns the same numbers as arrays over all the islands' bodies and
contacts (:class:`IslandBatch`), which the stepper writes into its state at once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from reverse.lcp import solve as _lcp
from reverse.step import dynamics as _dynamics
from reverse.step.batch_views import FlatViews as _FlatViews
from reverse.step.batch_views import GroupViews as _GroupViews
from reverse.step.batch_views import Results as _Results
from reverse.step.dynamics import ContactSet, Goals, IslandSolution, RigidBodies

__all__ = ["IslandBatch", "solve_island_arrays", "solve_islands"]

#: Row kinds of a contact, in the order ``solve_island`` appends them: normal, pulling
#: normal (attraction), friction ±t1, ±t2 and slack, rolling ±r1, ±r2 and slack, spinning ±n
#: and slack.
_KINDS = 15
_FRIC, _ROLL, _SPIN = (2, 3, 4, 5), (7, 8, 9, 10), (12, 13)
_FRIC_LAM, _ROLL_LAM, _SPIN_LAM = 6, 11, 14


def _seq_dot(rows: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """Row-wise dot products ``rows[i] · vec[i]`` computed as ``a @ b`` of 1-D arrays is: one
    BLAS ``ddot`` per pair, through numpy's stacked ``matmul`` of ``(1, L) @ (L, 1)`` slices, so
    every product is bit-identical to ``solve_island``'s ``Jn @ u`` (measured: equal for
    ``L`` = 6 … 18 on 20 000 random pairs)."""
    if not len(rows):
        return np.zeros(0)
    return np.matmul(rows[:, None, :], vec[:, :, None])[:, 0, 0]


def _dot3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a[i] · b[i]`` of 3-vectors as ``((0 + a₀b₀) + a₁b₁) + a₂b₂``, separate multiplies and
    adds: :func:`reverse.step.dynamics._dot3`'s arithmetic, row-wise. (Not BLAS's ``ddot``: whether
    its
    kernel fuses multiply-adds depends on the CPU — on an AVX-512 Xeon a third of the products
    differ in the last bit from this formula.)"""
    return ((0.0 + a[:, 0] * b[:, 0]) + a[:, 1] * b[:, 1]) + a[:, 2] * b[:, 2]


class IslandBatch(NamedTuple):
    """The islands of :func:`solve_island_arrays`, as arrays.

    Attributes
    ----------
    bodies : ndarray of int
        The islands' bodies, island after island (each island's as given).
    velocity : ndarray, shape (len(bodies), 6)
        Their new velocities (``IslandSolution.velocity`` rows).
    contacts : ndarray of int
        The islands' contacts (indices into the step's contacts), island after island.
    branch : ndarray of str
        Branch of each of those contacts (``IslandSolution.branch``).
    body_start, contact_start : ndarray of int, shape (K + 1,)
        Where island ``k``'s bodies and contacts start in ``bodies`` and ``contacts``.
    n_rows : ndarray of int, shape (K,)
        LCP rows of each island.
    results : sequence of LCPResult or None
        Each island's LCP answer (None: no rows); those of the compiled batch are made when
        looked up (:class:`_Results`).
    lcp_seconds : float
        Wall time of the LCP solves, s.
    batched : ndarray of bool, shape (K,)
        Islands answered (and verified, status ``"solved"``, no fallback) by the compiled batch
        call; their answers' fields are the arrays below, so that the stepper reads them
        without an :class:`~reverse.lcp.solve.LCPResult` per island.
    pivots, residual : ndarray, shape (K,)
        Pivots and residual of each batched answer (0 elsewhere).
    basis, basis_start : ndarray of int
        The batched answers' bases (island-local indices, sorted), island after island: island
        ``k``'s is ``basis[basis_start[k]:basis_start[k + 1]]`` (empty when not batched).
    """

    bodies: np.ndarray
    velocity: np.ndarray
    contacts: np.ndarray
    branch: np.ndarray
    body_start: np.ndarray
    contact_start: np.ndarray
    n_rows: np.ndarray
    results: Sequence
    lcp_seconds: float
    batched: np.ndarray
    pivots: np.ndarray
    residual: np.ndarray
    basis: np.ndarray
    basis_start: np.ndarray


def _check_direction(direction) -> None:
    if direction not in ("forward", "backward"):
        raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")


def solve_islands(
    *, islands: list[np.ndarray], contact_sets: list[np.ndarray], **shared
) -> list[IslandSolution]:
    """:func:`~reverse.step.dynamics.solve_island` for many islands without joints at once, bit
    for bit (module docstring). ``impulse_normal`` is not computed (zeros): the stepper does
    not use it.

    Parameters
    ----------
    islands : list of ndarray of int
        Scene indices of each island's moving bodies (sorted).
    contact_sets : list of ndarray of int
        Indices into ``contacts`` of each island's contacts (sorted).
    in_island_a, in_island_b : ndarray of bool, shape (len(contacts),)
        Whether the contact's body A (B) is a body of the island the contact belongs to; a
        body that is not (sleeping, static, held) acts as the world.
    warm_starts : list, optional
        A previous basis (or None) per island.

    The other keyword arguments (``shared``: ``direction``, then ``contacts`` to ``attract``) are
    :func:`solve_island_arrays`' and :func:`~reverse.step.dynamics.solve_island`'s, over the
    whole scene (``goals`` and ``attract`` indexed like ``contacts``).
    """
    K = len(islands)
    _check_direction(shared.get("direction"))
    if K == 0:
        return []
    nb = np.array([len(b) for b in islands], dtype=int)
    ncs = np.array([len(c) for c in contact_sets], dtype=int)
    bodies_all = np.concatenate(islands).astype(int)
    ci = np.concatenate(contact_sets).astype(int) if ncs.sum() else np.zeros(0, dtype=int)
    batch = solve_island_arrays(
        n_bodies=nb, bodies=bodies_all, n_contacts=ncs, contact_index=ci, **shared
    )
    share = batch.lcp_seconds / K
    bs, cs = batch.body_start, batch.contact_start
    return [
        IslandSolution(
            islands[k],
            batch.velocity[bs[k] : bs[k + 1]],
            np.zeros(int(ncs[k])),
            batch.results[k],
            int(batch.n_rows[k]) if batch.results[k] is not None else 0,
            batch.branch[cs[k] : cs[k + 1]],
            share,
        )
        for k in range(K)
    ]


def solve_island_arrays(
    *,
    direction: str,
    n_bodies: np.ndarray,
    bodies: np.ndarray,
    n_contacts: np.ndarray,
    contact_index: np.ndarray,
    contacts: ContactSet,
    in_island_a: np.ndarray,
    in_island_b: np.ndarray,
    rigid: RigidBodies,
    position: np.ndarray,
    inertia_world: np.ndarray,
    velocity: np.ndarray,
    dt: float,
    goals: Goals,
    epsilon: float = 0.2,
    delta: float = 1e-4,
    delta_angular: float = 1e-4,
    warm_starts: list | None = None,
    attract: np.ndarray | None = None,
) -> IslandBatch:
    """:func:`solve_islands` with the islands given as arrays and the answer as arrays
    (:class:`IslandBatch`): island ``k`` has ``n_bodies[k]`` bodies, the next ones of
    ``bodies``, and ``n_contacts[k]`` contacts, the next ones of ``contact_index``."""
    _check_direction(direction)
    backward = direction == "backward"
    nb = np.asarray(n_bodies, dtype=int)
    ncs = np.asarray(n_contacts, dtype=int)
    K = len(nb)
    if warm_starts is None:
        warm_starts = [None] * K
    ci = np.asarray(contact_index, dtype=int)
    isl = np.repeat(np.arange(K), ncs)  # island of each contact
    C = len(ci)
    bodies_all = np.asarray(bodies, dtype=int)
    b_start = np.concatenate([[0], np.cumsum(nb)])
    local = np.full(len(rigid.mass), -1, dtype=int)
    local[bodies_all] = np.arange(len(bodies_all)) - np.repeat(b_start[:-1], nb)

    # per body: A = M⁻¹ blocks (6 × 6: 1/m on the linear diagonal, I_w⁻¹), forces, velocities
    # (solve_island's loop over bodies)
    nbt = len(bodies_all)
    inv_I = np.linalg.inv(inertia_world[bodies_all]) if nbt else np.zeros((0, 3, 3))
    inv_m = 1.0 / rigid.mass[bodies_all]
    block = np.zeros((nbt, 6, 6))
    block[:, (0, 1, 2), (0, 1, 2)] = inv_m[:, None]
    block[:, 3:, 3:] = inv_I
    force = np.concatenate([rigid.force[bodies_all], rigid.torque[bodies_all]], axis=1)
    vel_b = velocity[bodies_all]
    sign_t = -1.0 if backward else 1.0
    kern = _dynamics.assembly_kernels()  # compiled products; None without numba
    if kern is not None:
        uf_b = vel_b + sign_t * dt * kern.apply_blocks(inv_m, inv_I, force)

    # per island of each size L = 6 nb: A (L, L), F, u, ufree (the same products as solve_island)
    A_of: dict[int, np.ndarray] = {}
    u_of: dict[int, np.ndarray] = {}
    uf_of: dict[int, np.ndarray] = {}
    idx_of: dict[int, np.ndarray] = {}
    slot = np.zeros(K, dtype=int)  # position of each island in its size group
    for size in np.unique(nb).tolist() if kern is None else []:
        ks = np.flatnonzero(nb == size)
        G = len(ks)
        slot[ks] = np.arange(G)
        L = 6 * size
        idx = (b_start[ks][:, None] + np.arange(size)[None, :]).ravel()  # bodies, island-major
        A = np.zeros((G, size, 6, size, 6))
        on = np.arange(size)
        A[:, on, :, on, :] = block[idx].reshape(G, size, 6, 6).transpose(1, 0, 2, 3)
        A = A.reshape(G, L, L)
        F = force[idx].reshape(G, L)
        u = vel_b[idx].reshape(G, L)
        A_of[size], u_of[size], idx_of[size] = A, u, idx
        uf_of[size] = u + sign_t * dt * (A @ F[:, :, None])[:, :, 0]

    # per contact: bodies (−1 outside the island), lever arms, directions
    a = np.where(in_island_a[ci], contacts.body_a[ci], -1)
    b = np.where(in_island_b[ci], contacts.body_b[ci], -1)
    p = contacts.point[ci]
    n = contacts.normal[ci]
    t1 = contacts.tangent[ci]
    r1 = contacts.roll_axis[ci]
    t2 = _cross_rows(n, t1)
    r2 = _cross_rows(n, r1)
    mu, rho = contacts.friction[ci], contacts.rolling[ci]
    sig, alpha = contacts.spinning[ci], contacts.restitution[ci]
    has_a, has_b = a >= 0, b >= 0
    ra = np.where(has_a[:, None], p - position[np.maximum(a, 0)], 0.0)
    rb = np.where(has_b[:, None], p - position[np.maximum(b, 0)], 0.0)
    loc_a = np.where(has_a, local[np.maximum(a, 0)], -1)
    loc_b = np.where(has_b, local[np.maximum(b, 0)], -1)
    c_size = nb[isl]  # bodies in each contact's island
    # each contact side's body in the batch (−1: none), for the compiled products
    gbc = np.stack([np.where(lo >= 0, b_start[isl] + lo, -1) for lo in (loc_a, loc_b)], axis=1)
    c_sizes = np.unique(c_size).tolist() if C else []

    def lin(d: np.ndarray) -> np.ndarray:
        """Body blocks (C, 2, 6) of ``_Island.linear_row``: A's ``(d, r_a × d)``, B's negated."""
        out = np.zeros((C, 2, 6))
        out[:, 0, :3] = 1.0 * d
        out[:, 0, 3:] = 1.0 * _cross_rows(ra, d)
        out[:, 1, :3] = -1.0 * d
        out[:, 1, 3:] = -1.0 * _cross_rows(rb, d)
        return out

    def ang(e: np.ndarray) -> np.ndarray:
        out = np.zeros((C, 2, 6))
        out[:, 0, 3:] = 1.0 * e
        out[:, 1, 3:] = -1.0 * e
        return out

    def dots(with_u: list[np.ndarray], with_uf: list[np.ndarray]) -> np.ndarray:
        """``row · u`` of each contact's rows ``with_u``, then ``row · ufree`` of ``with_uf``
        (each (C, 2, 6) body blocks), as ``Jn @ u`` computes them: (C, len(with_u) +
        len(with_uf)). One pass over the island sizes for all of them: each row is laid out
        dense (6 · size) and multiplied by ``_seq_dot``'s ``(1, L) @ (L, 1)`` slices."""
        nu, nd = len(with_u), len(with_u) + len(with_uf)
        if kern is not None:  # each row's sum in column order (reverse.step.assembly_kernel)
            cols = [kern.block_dots(x, gbc, vel_b) for x in with_u]
            cols += [kern.block_dots(x, gbc, uf_b) for x in with_uf]
            return np.stack(cols, axis=1)
        blocks = np.stack(with_u + with_uf, axis=1)  # (C, nd, 2, 6)
        out = np.zeros((C, nd))
        kinds = np.arange(nd)[None, :, None]
        for size in c_sizes:
            s = np.flatnonzero(c_size == size)
            L = 6 * size
            rows = np.zeros((len(s), nd, L))
            for side, loc in ((0, loc_a[s]), (1, loc_b[s])):
                ok = np.flatnonzero(loc >= 0)
                cols = 6 * loc[ok][:, None, None] + np.arange(6)[None, None, :]
                rows[ok[:, None, None], kinds, cols] = blocks[s[ok], :, side]
            vec = np.empty((len(s), nd, L))
            at = slot[isl[s]]
            vec[:, :nu] = u_of[size][at][:, None, :]
            vec[:, nu:] = uf_of[size][at][:, None, :]
            out[s] = np.matmul(rows.reshape(-1, 1, L), vec.reshape(-1, L, 1)).reshape(len(s), nd)
        return out

    Jn = lin(n)
    goal_n = goals.normal[ci]
    fric, roll, spin = mu > 0, rho > 0, sig > 0
    col_n = Jn.copy()
    free = np.zeros(C, dtype=bool)
    slide = np.zeros(C, dtype=bool)
    pull = np.zeros(C, dtype=bool)
    branch = np.empty(C, dtype="U16")
    Jt1 = Jt2 = R1 = R2 = Sn = None
    if backward:
        Jt1, Jt2 = lin(t1), lin(t2)
        with_u = [Jn, Jt1, Jt2]
        if roll.any():
            R1, R2 = ang(r1), ang(r2)
            with_u += [R1, R2]
        if spin.any():
            Sn = ang(n)
            with_u.append(Sn)
        d = dots(with_u, [Jn])
        vn, vt0, vt1, jn_uf = d[:, 0], d[:, 1], d[:, 2], d[:, -1]
        sep = vn > delta
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(alpha > 0, vn / np.where(alpha > 0, alpha, 1.0), -np.inf)
        elastic = sep & (alpha > 0) & (ratio >= epsilon)
        free = sep & ~elastic
        gn = np.where(elastic, ratio, goal_n)
        ht = np.hypot(vt0, vt1)
        slide = fric & (ht > delta) & ~free  # solve_island's sticking/sliding cut-off (§3.2)
        if slide.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                s_dir = (vt0[:, None] * t1 + vt1[:, None] * t2) / ht[:, None]
            col_n = np.where(slide[:, None, None], col_n - mu[:, None, None] * lin(s_dir), col_n)
        fric = fric & ~slide
        if R1 is not None:
            wr0, wr1 = d[:, 3], d[:, 4]
            hr = np.hypot(wr0, wr1)
            rslide = roll & (hr > delta_angular) & ~free
            if rslide.any():
                with np.errstate(divide="ignore", invalid="ignore"):
                    e_dir = (wr0[:, None] * r1 + wr1[:, None] * r2) / hr[:, None]
                col_n = np.where(
                    rslide[:, None, None], col_n - rho[:, None, None] * ang(e_dir), col_n
                )
            roll = roll & ~rslide
        if Sn is not None:
            ws = d[:, len(with_u) - 1]
            sslide = spin & (np.abs(ws) > delta_angular) & ~free
            coef = (sig * np.sign(ws))[:, None, None]
            col_n = np.where(sslide[:, None, None], col_n - coef * Sn, col_n)
            spin = spin & ~sslide
        branch[:] = np.where(elastic, "elastic", "resting")
        branch[slide] = np.char.add(branch[slide], "+slide")
        branch[free] = "free"
        qn = -jn_uf - gn
        if attract is not None:
            pull = attract[ci] & (branch == "resting")
    else:
        d = dots([Jn], [Jn])
        vn_pre = d[:, 0]
        eff = np.where(vn_pre < -epsilon, alpha, 0.0)
        qn = d[:, 1] + eff * vn_pre
        branch[:] = np.where(eff > 0, "elastic", "contact")

    # which rows each contact has, in solve_island's order
    has = np.zeros((C, _KINDS), dtype=bool)
    live = ~free
    has[:, 0] = live
    has[:, 1] = live & pull
    for kinds, lam, flag in ((_FRIC, _FRIC_LAM, fric), (_ROLL, _ROLL_LAM, roll),
                             (_SPIN, _SPIN_LAM, spin)):  # fmt: skip
        has[:, list(kinds)] = (live & flag)[:, None]
        has[:, lam] = live & flag & ~pull
    rc, rk = np.nonzero(has)  # row → contact, kind (contact-major: the order of the rows)
    R = len(rc)
    # row blocks J and W, (R, 2, 6), and the velocity-independent part of q
    J = np.zeros((R, 2, 6))
    W = np.zeros((R, 2, 6))
    dvec = np.zeros((R, 3))
    goal = np.zeros((R, 3))

    def put(kind, blocks, wblocks=None, d=None, g=None):
        rows = np.flatnonzero(rk == kind)
        if not len(rows):
            return
        c = rc[rows]
        J[rows] = blocks[c]
        W[rows] = blocks[c] if wblocks is None else wblocks[c]
        if d is not None:
            dvec[rows] = d[c]
            goal[rows] = g[c]

    put(0, Jn, col_n)
    if pull.any():
        put(1, -Jn, col_n - 2.0 * Jn)
    gt, gr = goals.tangential[ci], goals.rolling[ci]
    if np.any(has[:, list(_FRIC)]):
        if Jt1 is None:
            Jt1, Jt2 = lin(t1), lin(t2)
        for kind, blocks, d in zip(_FRIC, (Jt1, -Jt1, Jt2, -Jt2), (t1, -t1, t2, -t2),
                                   strict=True):  # fmt: skip
            put(kind, blocks, d=d, g=gt)
    if np.any(has[:, list(_ROLL)]):
        if R1 is None:
            R1, R2 = ang(r1), ang(r2)
        for kind, blocks, d in zip(_ROLL, (R1, -R1, R2, -R2), (r1, -r1, r2, -r2), strict=True):
            put(kind, blocks, d=d, g=gr)
    if np.any(has[:, list(_SPIN)]):
        if Sn is None:
            Sn = ang(n)
        for kind, blocks, d in zip(_SPIN, (Sn, -Sn), (n, -n), strict=True):
            put(kind, blocks, d=d, g=gr)

    # row → island, and the rows of each island (contiguous: contacts are island-major)
    r_isl = isl[rc]
    m_k = np.bincount(r_isl, minlength=K)
    r_start = np.concatenate([[0], np.cumsum(m_k)])
    # q: the rows' ufree products (as J @ ufree) and their constant parts
    qrow = np.zeros(R)
    Ldense: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    r_size = nb[r_isl]
    gbr = gbc[rc]  # each row's bodies in the batch
    if kern is not None:
        qrow = kern.block_dots(J, gbr, uf_b)
    for size in np.unique(r_size).tolist() if R and kern is None else []:
        rows = np.flatnonzero(r_size == size)
        Ld = 6 * size
        Jd = np.zeros((len(rows), Ld))
        Wd = np.zeros((len(rows), Ld))
        for side, loc_all in ((0, loc_a), (1, loc_b)):
            loc = loc_all[rc[rows]]
            ok = np.flatnonzero(loc >= 0)
            cols = 6 * loc[ok][:, None] + np.arange(6)[None, :]
            Jd[ok[:, None], cols] = J[rows[ok], side]
            Wd[ok[:, None], cols] = W[rows[ok], side]
        Ldense[size] = (rows, Jd, Wd)
        qrow[rows] = _seq_dot(Jd, uf_of[size][slot[r_isl[rows]]])
    kinds_dir = np.isin(rk, _FRIC + _ROLL + _SPIN)
    if backward:
        q = np.where(kinds_dir, -qrow + _dot3(dvec, goal), 0.0)
    else:
        q = np.where(kinds_dir, qrow, 0.0)
    q[rk == 0] = qn[rc[rk == 0]]
    q[rk == 1] = -qn[rc[rk == 1]]
    # couplings of the pyramids: (row, col, value) within each island's LCP
    jn_of = np.full(C, -1, dtype=int)
    jn_of[rc[rk == 0]] = np.flatnonzero(rk == 0)
    cr, cc, cv = [], [], []
    for kinds, lam_kind, coef in ((_FRIC, _FRIC_LAM, mu), (_ROLL, _ROLL_LAM, rho),
                                  (_SPIN, _SPIN_LAM, sig)):  # fmt: skip
        lam_rows = np.flatnonzero(rk == lam_kind)
        if not len(lam_rows):
            continue
        c = rc[lam_rows]
        for off in range(len(kinds), 0, -1):  # the direction rows just before the slack
            cr += [lam_rows - off, lam_rows]
            cc += [lam_rows, lam_rows - off]
            cv += [np.ones(len(c)), -np.ones(len(c))]
        cr.append(lam_rows)
        cc.append(jn_of[c])
        cv.append(coef[c])
    cr = np.concatenate(cr) if cr else np.zeros(0, dtype=int)
    cc = np.concatenate(cc) if cc else np.zeros(0, dtype=int)
    cv = np.concatenate(cv) if cv else np.zeros(0)
    c_isl = r_isl[cr] if len(cr) else cr

    if kern is not None:
        return _compiled_tail(
            kern, J, W, gbr, q, m_k, r_start, r_isl, (cr, cc, cv, c_isl), inv_m, inv_I, uf_b,
            backward, warm_starts, (bodies_all, ci, branch, b_start, ncs),
        )  # fmt: skip
    # M = J A Wᵀ per island, stacked over islands of equal (size, rows)
    groups = list(_equal_islands(Ldense, r_isl, m_k, r_start))
    G = len(groups)
    gid = np.full(K, -1, dtype=int)  # each island's group, and its place there
    gpos = np.zeros(K, dtype=int)
    for g, (_size, _m, km, _at) in enumerate(groups):
        gid[km] = g
        gpos[km] = np.arange(len(km))
    # the pyramids' couplings sorted by group (stable: each group's in their order), as
    # (place in the group, row, column) within their island's matrix
    if len(cr):
        c_grp = gid[c_isl]
        c_ord = np.argsort(c_grp, kind="stable")
        c_cut = np.searchsorted(c_grp[c_ord], np.arange(G + 1)).tolist()
        c_at, c_r0 = gpos[c_isl][c_ord], r_start[c_isl][c_ord]
        c_row, c_col, c_val = cr[c_ord] - c_r0, cc[c_ord] - c_r0, cv[c_ord]
    stacked: list[np.ndarray] = []  # each group's (len(km), m, m) matrices, as solved
    factors = []  # each group's A and Wᵀ, for the velocities
    for g, (size, m, km, at) in enumerate(groups):
        _rows, Jd, Wd = Ldense[size]
        Jg = Jd[at].reshape(len(km), m, 6 * size)
        WgT = np.swapaxes(Wd[at].reshape(len(km), m, 6 * size), 1, 2)
        Ag = A_of[size][slot[km]]
        Mg = Jg @ Ag @ WgT
        # the pyramids' couplings: distinct entries, each on an exact 0 of J A Wᵀ (a slack
        # row or column), so adding them in any order gives solve_island's numbers
        if len(cr) and c_cut[g + 1] > c_cut[g]:
            e = slice(c_cut[g], c_cut[g + 1])
            Mg[c_at[e], c_row[e], c_col[e]] += c_val[e]
        stacked.append(Mg)
        factors.append((Ag, WgT))
    Ms = _GroupViews(stacked, gid, gpos)

    # the LCPs (reverse.lcp.solve.solve_lcp's answers), then the velocities
    t0 = time.perf_counter()
    results, z_all = _solve_lcps(Ms, stacked, q, m_k, r_start, r_isl, groups, warm_starts)
    lcp_seconds = time.perf_counter() - t0
    if R:
        # an island whose z is not finite (an unsolved LCP's iterate) moves by ufree alone
        # here, as before; the stepper retries it without friction
        bad = ~np.isfinite(z_all)
        if bad.any():
            z_all[np.isin(r_isl, np.unique(r_isl[bad]))] = 0.0
    vel_of: dict[int, np.ndarray] = {size: uf.copy() for size, uf in uf_of.items()}
    for (size, m, km, _at), (Ag, WgT) in zip(groups, factors, strict=True):
        zg = z_all[r_start[km][:, None] + np.arange(m)[None, :]].reshape(len(km), m, 1)
        du = (Ag @ (WgT @ zg))[:, :, 0]
        sk = slot[km]
        base = uf_of[size][sk]
        vel_of[size][sk] = base - du if backward else base + du
    vel_all = np.empty((nbt, 6))
    for size, v in vel_of.items():
        vel_all[idx_of[size]] = v.reshape(-1, 6)
    return IslandBatch(
        bodies=bodies_all,
        velocity=vel_all,
        contacts=ci,
        branch=branch,
        body_start=b_start,
        contact_start=np.concatenate([[0], np.cumsum(ncs)]),
        n_rows=m_k,
        results=results,
        lcp_seconds=lcp_seconds,
        batched=results.batched,
        pivots=results.pivots,
        residual=results.residual,
        basis=results.basis,
        basis_start=results.basis_start,
    )


def _compiled_tail(kern, J, W, gb, q, m_k, r_start, r_isl, couple, inv_m, inv_I, uf_b,
                   backward, warm_starts, layout) -> IslandBatch:  # fmt: skip
    """:func:`solve_island_arrays` from ``q`` on with the compiled products: every island's
    ``J A Wᵀ`` into one flat array (:func:`reverse.step.assembly_kernel.island_matrices`), the
    pyramids' couplings, the LCPs, and ``ufree ∓ A Wᵀ z``."""
    bodies_all, ci, branch, b_start, ncs = layout
    cr, cc, cv, c_isl = couple
    m_off = np.concatenate([[0], np.cumsum(m_k * m_k)]).astype(np.int64)
    M_flat = np.zeros(int(m_off[-1]))
    kern.island_matrices(J, W, gb, r_start, inv_m, inv_I, M_flat, m_off[:-1])
    if len(cr):  # distinct entries, each on an exact 0 (a slack row or column)
        r0 = r_start[c_isl]
        M_flat[m_off[c_isl] + (cr - r0) * m_k[c_isl] + (cc - r0)] += cv
    t0 = time.perf_counter()
    Ms = _FlatViews(M_flat, m_off, m_k)
    results, z_all = _solve_lcps(Ms, None, q, m_k, r_start, r_isl, None, warm_starts,
                                 flat=(M_flat, m_off[:-1]))  # fmt: skip
    lcp_seconds = time.perf_counter() - t0
    bad = ~np.isfinite(z_all)  # an unsolved LCP's iterate: the island moves by ufree (above)
    if bad.any():
        z_all[np.isin(r_isl, np.unique(r_isl[bad]))] = 0.0
    du = kern.impulse_velocity(W, gb, z_all, inv_m, inv_I, len(bodies_all))
    return IslandBatch(
        bodies=bodies_all, velocity=uf_b - du if backward else uf_b + du, contacts=ci,
        branch=branch, body_start=b_start, contact_start=np.concatenate([[0], np.cumsum(ncs)]),
        n_rows=m_k, results=results, lcp_seconds=lcp_seconds, batched=results.batched,
        pivots=results.pivots, residual=results.residual, basis=results.basis,
        basis_start=results.basis_start,
    )  # fmt: skip


def _solve_lcps(Ms, stacked, q, m_k, r_start, r_isl, groups, warm_starts, flat=None):
    """Each island's LCP ``Ms[k] z + q[r_start[k]:r_start[k+1]]``, as
    ``reverse.step.dynamics.solve_lcp(Ms[k], q_k, warm_start=warm_k)`` answers it: ``(results, z)``,
    ``results[k]`` the :class:`~reverse.lcp.solve.LCPResult` (None for an island without rows) and
    ``z`` their ``z`` laid out like ``q``. ``stacked[g]``: the matrices of ``groups[g]``'s
    islands, ``(len(km), m, m)`` (``Ms[k]`` are views of them).

    When that binding is :func:`reverse.lcp.solve.solve_lcp` (it is, unless a test replaced it), the
    islands below :data:`~reverse.lcp.solve.ADVANCED_START_MIN_ROWS` rows whose warm start is a
    sorted
    index array (or None) go to :func:`reverse.lcp.solve.solve_lcp_arrays` all at once: one compiled
    call, the same kernel solve ``solve_lcp`` makes, so the same answers to the bit (tested in
    ``tests/unit/reverse/test_lcp_batch_entry.py``), without ``solve_lcp``'s per-call Python
    (measured ≈ 10 µs a problem around a ≈ 5 µs solve on the "LO" spelling scene). The others —
    and every island without a verified answer there, whose fallback ladder (logged in its
    ``fallback``) must run — call the binding one by one, exactly as before.
    """
    K = len(Ms)
    solve = _dynamics.solve_lcp
    if isinstance(Ms, _GroupViews | _FlatViews):
        posed = Ms.posed
    else:
        posed = np.array([M is not None for M in Ms], dtype=bool)
    warm = list(warm_starts)
    # the warm starts as the solver sees them: one from a differently structured problem (an
    # index past this island's rows) is dropped; the solver verifies the rest. Integer arrays
    # are checked at once (their maxima over the concatenation), anything else one by one.
    has = np.array([w is not None for w in warm], dtype=bool)
    n_warm = np.array([0 if w is None else w.size for w in warm], dtype=np.int64)
    ints = np.array([w is None or w.dtype.kind in "iu" for w in warm], dtype=bool)
    for k in np.flatnonzero(~ints).tolist():
        w = warm[k]
        if w.size and int(w.max()) >= m_k[k]:
            warm[k] = None
        n_warm[k] = 0  # not batched (below)
    flat_of = n_warm > 0
    parts = [warm[k].reshape(-1) for k in np.flatnonzero(flat_of).tolist()]
    warm_flat = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)
    if warm_flat.size:
        lo = np.concatenate([[0], np.cumsum(n_warm)])[:-1][flat_of]
        drop = np.flatnonzero(flat_of)[np.maximum.reduceat(warm_flat, lo) >= m_k[flat_of]]
        for k in drop.tolist():
            warm[k] = None
        if len(drop):  # rebuild without them
            has[drop] = False
            keep = np.repeat(~np.isin(np.arange(K), drop), n_warm)
            warm_flat = warm_flat[keep]
            n_warm[drop] = 0
    select = posed & ints & (m_k < _lcp.ADVANCED_START_MIN_ROWS)
    if warm_flat.size:  # the kernel takes sorted, unique, non-negative indices as they are
        seg = np.repeat(np.arange(K), n_warm)
        good = warm_flat >= 0
        good[1:] &= (seg[1:] != seg[:-1]) | (warm_flat[1:] > warm_flat[:-1])
        select[seg[~good]] = False
    arrays = None
    if solve is _lcp.solve_lcp and select.any() and flat is not None:
        warm_off = np.concatenate([[0], np.cumsum(n_warm)])
        arrays = _lcp.solve_lcp_arrays(
            flat[0], flat[1], q, r_start, select, warm_flat, warm_off, has & select
        )
    elif solve is _lcp.solve_lcp and select.any():
        m_off = np.zeros(K, dtype=np.int64)
        at, flats = 0, []
        for (_size, m, km, _pos), Mg in zip(groups, stacked, strict=True):
            if m >= _lcp.ADVANCED_START_MIN_ROWS:
                continue  # solved one by one (not selected): not copied
            m_off[km] = at + np.arange(len(km), dtype=np.int64) * (m * m)
            at += len(km) * m * m
            flats.append(Mg.reshape(-1))
        M_flat = np.concatenate(flats) if flats else np.zeros(0)
        warm_off = np.concatenate([[0], np.cumsum(n_warm)])
        arrays = _lcp.solve_lcp_arrays(
            M_flat, m_off, q, r_start, select, warm_flat, warm_off, has & select
        )
    z_all = np.zeros(len(q))
    out = _Results(K)
    if arrays is not None:
        z_all[:] = arrays.z
        rows = np.flatnonzero(arrays.basis)
        out.basis = rows - r_start[r_isl[rows]]  # each island's basis, island after island
        out.basis_start = np.searchsorted(rows, r_start)
        out.batched = arrays.route >= 0
        out.pivots = np.where(out.batched, arrays.pivots, 0)
        out.residual = np.where(out.batched, arrays.residual, 0.0)
        out.arrays, out.r_start = arrays, r_start
    for k in np.flatnonzero(posed & ~out.batched).tolist():
        # not batched, or no verified answer there: the ladder
        o0, o1 = r_start[k], r_start[k + 1]
        out.explicit[k] = solve(Ms[k], q[o0:o1], warm_start=warm[k])
        z_all[o0:o1] = out.explicit[k].z
    return out, z_all


def _equal_islands(ldense: dict, r_isl: np.ndarray, m_k: np.ndarray, r_start: np.ndarray):
    """Islands whose products can be stacked: per body count ``size`` and row count ``m``,
    yield ``(size, m, km, at)`` — the islands ``km`` and, for their rows in island order
    (``r_start[km] + 0..m-1``), the positions ``at`` in ``ldense[size]``'s dense rows."""
    pos = np.empty(len(r_isl), dtype=int)
    for size, (rows, _jd, _wd) in ldense.items():
        ks = np.unique(r_isl[rows])
        pos[rows] = np.arange(len(rows))
        for m in np.unique(m_k[ks]):
            km = ks[m_k[ks] == m]
            idx = (r_start[km][:, None] + np.arange(m)[None, :]).ravel()
            yield size, int(m), km, pos[idx]


def _cross_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross products with the arithmetic of ``solve_island``'s ``_cross3``
    (``np.cross`` may differ in the last bit)."""
    return np.stack(
        [
            a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1],
            a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
            a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0],
        ],
        axis=1,
    )
