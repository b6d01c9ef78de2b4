"""Many island LCPs of a step assembled together (issue 17 item 2): the batched form of
:func:`reverse.dynamics.solve_island` for islands without joints.

A step of a scene like the spelling balls has hundreds of small islands (a ball and the ground,
two balls touching); :func:`~reverse.dynamics.solve_island` builds each with one Python call per
Jacobian row. :func:`solve_islands` builds all of them with numpy operations over every contact
of the step (rows, branch classification of Twigg & James 2008 §3, Eq. 7–10, 13–15, columns with
folded sliding friction, pyramid couplings) and over the islands of equal size (mass matrices,
``J A Wᵀ``, ``q``, the new velocities), then calls :func:`reverse.lcp.solve_lcp` once per island.

Bit for bit the same as :func:`~reverse.dynamics.solve_island`: every floating-point operation
is the same operation on the same operands. Element-wise arithmetic is, vectorized; products
that ``solve_island`` computes with BLAS (``Jn @ u``, ``J A Wᵀ``, ``A F``, ``A (Wᵀ z)``) go
through numpy's stacked ``matmul``, which calls the same BLAS kernel once per island slice
(measured on this build: identical for every size tried, 6 to 1200; ``np.einsum`` is not, and is
not used). ``tests/unit/reverse/test_batched.py`` checks it on random islands of 1 to 8 bodies,
both directions, every branch.

The solver is looked up as ``reverse.dynamics.solve_lcp`` at each call, the binding
:func:`~reverse.dynamics.solve_island` uses, so both paths always run the same solver.
"""

from __future__ import annotations

import time

import numpy as np

from reverse import dynamics as _dynamics
from reverse.dynamics import ContactSet, Goals, IslandSolution, RigidBodies
from reverse.lcp import LCPResult

__all__ = ["solve_islands"]

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
    """``a[i] @ b[i]`` of 3-vectors, as numpy's 1-D ``@`` does it (``ddot``: 0 + a0 b0 + …)."""
    return ((0.0 + a[:, 0] * b[:, 0]) + a[:, 1] * b[:, 1]) + a[:, 2] * b[:, 2]


def solve_islands(
    *,
    direction: str,
    islands: list[np.ndarray],
    contact_sets: list[np.ndarray],
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
) -> list[IslandSolution]:
    """:func:`~reverse.dynamics.solve_island` for many islands without joints at once, bit
    for bit (module docstring); :func:`reverse.lcp.solve_lcp` runs once per island.
    ``impulse_normal`` is not computed (zeros): the stepper does not use it.

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

    The other parameters are :func:`~reverse.dynamics.solve_island`'s, over the whole scene
    (``goals`` and ``attract`` indexed like ``contacts``).
    """
    if direction not in ("forward", "backward"):
        raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")
    backward = direction == "backward"
    K = len(islands)
    if K == 0:
        return []
    if warm_starts is None:
        warm_starts = [None] * K
    nb = np.array([len(b) for b in islands])
    ncs = np.array([len(s) for s in contact_sets])
    ci = np.concatenate(contact_sets).astype(int) if ncs.sum() else np.zeros(0, dtype=int)
    isl = np.repeat(np.arange(K), ncs)  # island of each contact
    C = len(ci)
    bodies_all = np.concatenate(islands).astype(int)
    b_start = np.concatenate([[0], np.cumsum(nb)])
    local = np.full(len(rigid.mass), -1, dtype=int)
    local[bodies_all] = np.arange(len(bodies_all)) - np.repeat(b_start[:-1], nb)

    # per body: A = M⁻¹ blocks, forces, velocities (solve_island's loop over bodies)
    inv_I = np.linalg.inv(inertia_world[bodies_all]) if len(bodies_all) else np.zeros((0, 3, 3))
    inv_m = 1.0 / rigid.mass[bodies_all]

    # per island of each size L = 6 nb: A (L, L), F, u, ufree (the same products as solve_island)
    sign_t = -1.0 if backward else 1.0
    A_of: dict[int, np.ndarray] = {}
    u_of: dict[int, np.ndarray] = {}
    uf_of: dict[int, np.ndarray] = {}
    slot = np.zeros(K, dtype=int)  # position of each island in its size group
    for size in np.unique(nb):
        ks = np.flatnonzero(nb == size)
        slot[ks] = np.arange(len(ks))
        L = 6 * size
        idx = (b_start[ks][:, None] + np.arange(size)[None, :]).ravel()  # bodies, island-major
        body = bodies_all[idx]
        A = np.zeros((len(ks), L, L))
        F = np.zeros((len(ks), L))
        u = np.zeros((len(ks), L))
        kk = np.repeat(np.arange(len(ks)), size)
        loc = np.tile(np.arange(size), len(ks))
        for d in range(3):
            A[kk, 6 * loc + d, 6 * loc + d] = inv_m[idx]
        for d in range(3):
            for e in range(3):
                A[kk, 6 * loc + 3 + d, 6 * loc + 3 + e] = inv_I[idx, d, e]
        for d in range(3):
            F[kk, 6 * loc + d] = rigid.force[body, d]
            F[kk, 6 * loc + 3 + d] = rigid.torque[body, d]
        for d in range(6):
            u[kk, 6 * loc + d] = velocity[body, d]
        A_of[size], u_of[size] = A, u
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

    def dense(blocks: np.ndarray, sel: np.ndarray | None = None) -> dict[int, np.ndarray]:
        """Dense rows per island size: {size: (rows of contacts ``sel``, 6·size)}."""
        rows = {}
        sel = np.arange(C) if sel is None else sel
        for size in np.unique(nb[isl[sel]]) if len(sel) else []:
            s = sel[nb[isl[sel]] == size]
            out = np.zeros((len(s), 6 * size))
            for side, loc in ((0, loc_a[s]), (1, loc_b[s])):
                ok = loc >= 0
                cols = 6 * loc[ok][:, None] + np.arange(6)[None, :]
                out[np.flatnonzero(ok)[:, None], cols] = blocks[s[ok], side]
            rows[int(size)] = out
        return rows

    def dot_u(blocks: np.ndarray, which: dict[int, np.ndarray]) -> np.ndarray:
        """``row · u`` (or ``ufree``) of each contact's row, as ``Jn @ u`` computes it."""
        out = np.zeros(C)
        for size, rows in dense(blocks).items():
            s = np.flatnonzero(nb[isl] == size)
            out[s] = _seq_dot(rows, which[size][slot[isl[s]]])
        return out

    Jn = lin(n)
    goal_n = goals.normal[ci]
    fric, roll, spin = mu > 0, rho > 0, sig > 0
    col_n = Jn.copy()
    free = np.zeros(C, dtype=bool)
    slide = np.zeros(C, dtype=bool)
    pull = np.zeros(C, dtype=bool)
    branch = np.empty(C, dtype="U16")
    if backward:
        vn = dot_u(Jn, u_of)
        sep = vn > delta
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(alpha > 0, vn / np.where(alpha > 0, alpha, 1.0), -np.inf)
        elastic = sep & (alpha > 0) & (ratio >= epsilon)
        free = sep & ~elastic
        gn = np.where(elastic, ratio, goal_n)
        Jt1, Jt2 = lin(t1), lin(t2)
        vt0, vt1 = dot_u(Jt1, u_of), dot_u(Jt2, u_of)
        ht = np.hypot(vt0, vt1)
        slide = fric & (ht > delta) & ~free
        if slide.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                s_dir = (vt0[:, None] * t1 + vt1[:, None] * t2) / ht[:, None]
            col_n = np.where(slide[:, None, None], col_n - mu[:, None, None] * lin(s_dir), col_n)
        fric = fric & ~slide
        if roll.any():
            R1, R2 = ang(r1), ang(r2)
            wr0, wr1 = dot_u(R1, u_of), dot_u(R2, u_of)
            hr = np.hypot(wr0, wr1)
            rslide = roll & (hr > delta_angular) & ~free
            if rslide.any():
                with np.errstate(divide="ignore", invalid="ignore"):
                    e_dir = (wr0[:, None] * r1 + wr1[:, None] * r2) / hr[:, None]
                col_n = np.where(
                    rslide[:, None, None], col_n - rho[:, None, None] * ang(e_dir), col_n
                )
            roll = roll & ~rslide
        if spin.any():
            ws = dot_u(ang(n), u_of)
            sslide = spin & (np.abs(ws) > delta_angular) & ~free
            coef = (sig * np.sign(ws))[:, None, None]
            col_n = np.where(sslide[:, None, None], col_n - coef * ang(n), col_n)
            spin = spin & ~sslide
        branch[:] = np.where(elastic, "elastic", "resting")
        branch[slide] = np.char.add(branch[slide], "+slide")
        branch[free] = "free"
        qn = -dot_u(Jn, uf_of) - gn
        if attract is not None:
            pull = attract[ci] & (branch == "resting")
    else:
        vn_pre = dot_u(Jn, u_of)
        eff = np.where(vn_pre < -epsilon, alpha, 0.0)
        qn = dot_u(Jn, uf_of) + eff * vn_pre
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
        c = rc[rows]
        J[rows] = blocks[c]
        W[rows] = blocks[c] if wblocks is None else wblocks[c]
        if d is not None:
            dvec[rows] = d[c]
            goal[rows] = g[c]

    put(0, Jn, col_n)
    put(1, -Jn, col_n - 2.0 * Jn)
    gt, gr = goals.tangential[ci], goals.rolling[ci]
    if np.any(has[:, list(_FRIC)]):
        Jt1, Jt2 = lin(t1), lin(t2)
        for kind, blocks, d in zip(_FRIC, (Jt1, -Jt1, Jt2, -Jt2), (t1, -t1, t2, -t2),
                                   strict=True):  # fmt: skip
            put(kind, blocks, d=d, g=gt)
    if np.any(has[:, list(_ROLL)]):
        R1, R2 = ang(r1), ang(r2)
        for kind, blocks, d in zip(_ROLL, (R1, -R1, R2, -R2), (r1, -r1, r2, -r2), strict=True):
            put(kind, blocks, d=d, g=gr)
    if np.any(has[:, list(_SPIN)]):
        Sn = ang(n)
        for kind, blocks, d in zip(_SPIN, (Sn, -Sn), (n, -n), strict=True):
            put(kind, blocks, d=d, g=gr)

    # row → island, and the rows of each island (contiguous: contacts are island-major)
    r_isl = isl[rc]
    m_k = np.bincount(r_isl, minlength=K)
    r_start = np.concatenate([[0], np.cumsum(m_k)])
    # q: the rows' ufree products (as J @ ufree) and their constant parts
    qrow = np.zeros(R)
    Ldense: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for size in np.unique(nb[r_isl]) if R else []:
        rows = np.flatnonzero(nb[r_isl] == size)
        Ld = 6 * int(size)
        Jd = np.zeros((len(rows), Ld))
        Wd = np.zeros((len(rows), Ld))
        for side, loc_all in ((0, loc_a), (1, loc_b)):
            loc = loc_all[rc[rows]]
            ok = loc >= 0
            cols = 6 * loc[ok][:, None] + np.arange(6)[None, :]
            Jd[np.flatnonzero(ok)[:, None], cols] = J[rows[ok], side]
            Wd[np.flatnonzero(ok)[:, None], cols] = W[rows[ok], side]
        Ldense[int(size)] = (rows, Jd, Wd)
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

    # M = J A Wᵀ per island, stacked over islands of equal (size, rows)
    Ms: list[np.ndarray | None] = [None] * K
    for size, m, km, at in _equal_islands(Ldense, r_isl, m_k, r_start):
        _rows, Jd, Wd = Ldense[size]
        Jg = Jd[at].reshape(len(km), m, 6 * size)
        Wg = Wd[at].reshape(len(km), m, 6 * size)
        Ag = A_of[size][slot[km]]
        Mg = Jg @ Ag @ np.swapaxes(Wg, 1, 2)
        # the pyramids' couplings: distinct entries, each on an exact 0 of J A Wᵀ (a slack
        # row or column), so adding them in any order gives solve_island's numbers
        g = (nb[c_isl] == size) & (m_k[c_isl] == m)
        if g.any():
            jpos = np.zeros(K, dtype=int)
            jpos[km] = np.arange(len(km))
            kg = c_isl[g]
            Mg[jpos[kg], cr[g] - r_start[kg], cc[g] - r_start[kg]] += cv[g]
        for j, k in enumerate(km):
            Ms[k] = Mg[j]

    # the LCPs, one per island (reverse.lcp.solve_lcp), then the velocities
    results: list[LCPResult | None] = [None] * K
    seconds = np.zeros(K)
    z_all = np.zeros(R)
    for k in range(K):
        M = Ms[k]
        if M is None:
            continue
        m = M.shape[0]
        qk = q[r_start[k] : r_start[k + 1]]
        warm = warm_starts[k]
        if warm is not None and warm.size and int(np.max(warm)) >= m:
            warm = None  # from a differently structured problem; the solver verifies the rest
        t0 = time.perf_counter()
        res = _dynamics.solve_lcp(M, qk, warm_start=warm)
        seconds[k] = time.perf_counter() - t0
        results[k] = res
        if np.all(np.isfinite(res.z)):
            z_all[r_start[k] : r_start[k + 1]] = res.z
    out: list[IslandSolution] = []
    vel_of: dict[int, np.ndarray] = {size: uf.copy() for size, uf in uf_of.items()}
    for size, m, km, at in _equal_islands(Ldense, r_isl, m_k, r_start):
        Wg = Ldense[size][2][at].reshape(len(km), m, 6 * size)
        zg = z_all[r_start[km][:, None] + np.arange(m)[None, :]].reshape(len(km), m, 1)
        du = (A_of[size][slot[km]] @ (np.swapaxes(Wg, 1, 2) @ zg))[:, :, 0]
        base = uf_of[size][slot[km]]
        vel_of[size][slot[km]] = base - du if backward else base + du
    c_start = np.concatenate([[0], np.cumsum(ncs)])
    for k in range(K):
        size = int(nb[k])
        vel = vel_of[size][slot[k]].reshape(size, 6)
        res = results[k]
        out.append(
            IslandSolution(
                islands[k],
                vel,
                np.zeros(int(ncs[k])),
                res,
                int(m_k[k]) if res is not None else 0,
                branch[c_start[k] : c_start[k + 1]],
                float(seconds[k]),
            )
        )
    return out


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
