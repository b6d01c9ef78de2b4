"""The fallback ladder of :func:`reverse.lcp.solve.solve_lcp` (rungs 1–3 of its docstring): Lemke
retried on regularized problems, then brute-force enumeration of complementary bases.

Both rungs work on the equilibrated problem object of :mod:`reverse.lcp.solve` (``prob``: the scaled
``Mh``, ``qh``, ``A = |Mh|`` and scaling ``d``; ``lemke(cap, alpha)``, ``principal(J)``,
``residual(z)`` and ``result(z, status, pivots, basis, fallback)``), and every answer they return
as ``"solved"`` has been verified on the caller's problem.

References
----------
.. [1] Cottle, Pang & Stone, The Linear Complementarity Problem, Academic Press 1992.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["ENUMERATION_MAX_N", "run_ladder", "enumerate_bases"]

#: Largest n of the brute-force rung: 2¹² = 4096 principal systems of size ≤ 12, batched (≈ 0.1 s).
ENUMERATION_MAX_N = 12

#: Regularization steps ``ρ`` of ladder rung 1 (``α = ρ·max|M̂|``, equilibrated units). The basis
#: found on ``M̂ + αI`` is re-solved on the original problem, so ``α`` only has to make Lemke's path
#: well-posed; the steps go from "perturbs nothing measurable" to "clearly regularizes a singular
#: PSD matrix".
_REG_STEPS = (1e-10, 1e-8, 1e-6)

_TINY = np.finfo(float).tiny


def run_ladder(prob, status, z_last, basis_last, pivots, cap, rtol):
    """Rungs 1–3 of :mod:`reverse.lcp.solve`'s docstring, run when plain Lemke gave no verified
    solution.

    Parameters
    ----------
    prob
        The equilibrated problem (module docstring).
    status, z_last, basis_last, pivots
        Plain Lemke's outcome: its status, last iterate, basis and pivot count.
    cap : int
        Pivot cap of each regularized Lemke run.
    rtol : float
        Verification tolerance.

    Returns
    -------
    LCPResult
        The first verified answer of a rung (``fallback`` names it), else Lemke's outcome with
        ``fallback = "tried …"``.
    """
    n = prob.q.size
    tried = []
    for rho in _REG_STEPS:
        alpha = rho * (float(np.max(prob.A)) or 1.0)
        tried.append(f"regularized(alpha={alpha:.3g})")
        reg_status, z_reg, J, piv = prob.lemke(cap, alpha)
        pivots += piv
        if reg_status != "solved":
            continue
        # the regularized path's basis re-solved on the original problem, else its raw answer
        for z in (prob.principal(J), z_reg):
            if z is not None and prob.residual(z) <= rtol:
                return prob.result(z, "solved", pivots, J, tried[-1])
    if n <= ENUMERATION_MAX_N:
        tried.append("enumeration")
        res = enumerate_bases(prob, rtol)
        pivots += res.pivots
        if res.solved:
            return prob.result(res.z, "solved", pivots, res.basis, "enumeration")
    return prob.result(z_last, status, pivots, basis_last, "tried " + ", ".join(tried))


def enumerate_bases(prob, rtol: float):
    """Rung 2: the complementary bases ``J`` ([1]_), by increasing size; the first ``z`` (with
    ``M[J, J] z_J = −q_J``, 0 off ``J``) that verifies.

    Exponential: callers keep ``n ≤ ENUMERATION_MAX_N``. Returns an ``LCPResult`` with status
    ``"solved"``, or ``"failed"`` with the candidate of smallest residual; ``pivots`` counts the
    principal systems solved.
    """
    n = prob.q.size
    tried = 0
    best = (np.inf, np.zeros(n), np.zeros(0, dtype=int))
    for Zh, Js, count in _enumerate_candidates(prob.Mh, prob.qh):
        tried += count
        for zh, J in zip(Zh, Js, strict=True):
            z = prob.d * zh
            r = prob.residual(z)
            if r <= rtol:
                return prob.result(z, "solved", tried, J, "")
            if r < best[0]:
                best = (r, z, J)
    return prob.result(best[1], "failed", tried, best[2], "")


def _enumerate_candidates(M: np.ndarray, q: np.ndarray):
    """Yield, per subset size k, the candidate ``z`` of every nonsingular principal block."""
    n = q.size
    eps = np.finfo(float).eps
    yield np.zeros((1, n)), [np.zeros(0, dtype=int)], 1
    for k in range(1, n + 1):
        subsets = np.array(list(itertools.combinations(range(n), k)), dtype=int)
        A = M[subsets[:, :, None], subsets[:, None, :]]  # (m, k, k)
        b = -q[subsets]  # (m, k)
        # a block with condition number above 1/(100·k·eps) (≈ 5e12 at k = 10) is singular here:
        # its solution would be rounding noise (and could not verify anyway)
        sv = np.linalg.svd(A, compute_uv=False)
        ok = sv[:, -1] > 100 * k * eps * np.maximum(sv[:, 0], _TINY)
        if not np.any(ok):
            continue
        zJ = np.linalg.solve(A[ok], b[ok][:, :, None])[:, :, 0]
        Z = np.zeros((int(ok.sum()), n))
        rows = np.arange(Z.shape[0])[:, None]
        Z[rows, subsets[ok]] = zJ
        # only an ordering (sign-feasible candidates first, to 1e-6); the verification decides
        w = Z @ M.T + q
        scale = np.maximum(np.max(np.abs(Z), axis=1, keepdims=True), 1.0)
        good = np.all(Z >= -1e-6 * scale, axis=1) & np.all(w >= -1e-6 * scale, axis=1)
        order = np.argsort(~good, kind="stable")
        yield Z[order], [subsets[ok][i] for i in order], int(ok.sum())
