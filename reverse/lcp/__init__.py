"""The LCP solver of the backward stepper: find ``z ≥ 0`` with ``w = M z + q ≥ 0`` and ``zᵀw = 0``.

Contract: :func:`reverse.lcp.solve.solve_lcp` returns an :class:`~reverse.lcp.solve.LCPResult`
verified on the unscaled problem, or raises :class:`~reverse.lcp.solve.LCPError`; what it tried
(the fallback ladder of :mod:`reverse.lcp.fallback`) is logged in the result.
:mod:`reverse.lcp.lemke`
is the pivoting method, :mod:`reverse.lcp.lemke_kernel` its compiled form (numba). Pure numerics:
numpy and numba only.
"""

__all__: list[str] = []
