"""Pure numerics on recorded runs: where an event's gap function crosses zero between records,
the value of recorded data at a time between records, and the largest displacement of a history
located between records. Used by :mod:`workbench.analysis.outputs` to reduce runs to numbers.

Why events are interpolated, not snapped to a record
----------------------------------------------------
FORM and finite-difference gradients need outputs that are smooth in the inputs. A reduction that
picks "the first record in contact" is piecewise constant in time: as an input changes, the event
jumps from one step to the next and the output moves in steps of (speed × dt), e.g. 1.7 mm of d_A
at dt = 1e-3 — a noise level of 3e-3 relative, and finite-difference slopes that are zero or
huge. So every step is recorded, the event's *gap function* g(t) (signed distance between the two
bodies, or the coordinate minus the level) is evaluated at the records around the first record
with g ≤ 0, and the crossing time t* is the root of the cubic through the last four records
(t_(k-3) … t_k, the last being the first at or past contact). The body's position at t* comes from
the cubic through the same records. Those records are all free motion when contacts are processed
only once touching (scene setting ``contact_processing_threshold: 0``): the step that ends at the
first penetrating record detected no contact at its start. PyBullet's semi-implicit Euler step puts
the records of a free flight exactly on a parabola (x_n = x0 + (v0 − g dt/2) t_n − g t_n²/2), so the
cubic reproduces it exactly and t*, x(t*) are as smooth in the inputs as the flight itself;
when the crossing moves past a record, the stencil shifts by one record and still lies on the same
parabola — no jump.

The maximum displacement is treated the same way: the vertex of a parabola fitted to the records
of the rising phase just before the stop. Under constant deceleration (a block sliding to rest
against Coulomb friction) those records lie exactly on one parabola, whichever are used, so the
vertex is smooth in the inputs; the records after a stop are not used, because PyBullet's
resting contacts creep at a few µm/s and the plain maximum of the records would follow the creep
(measured: 2e-6 m over 0.5 s on the sliding block) instead of the stop.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

__all__ = [
    "MOTION_TOL",
    "STOP_SKIP",
    "FIT_RECORDS",
    "STENCIL",
    "stencil",
    "crossing_time",
    "value_at",
    "max_displacement",
]

#: Motion along a direction slower than this fraction of the fastest motion along it (per record)
#: counts as rest for :func:`max_displacement`. PyBullet's resting contacts creep at a few µm/s
#: (4e-6 m/s on the sliding block, tests/integration/test_physics.py), 1e-6 of a sliding speed
#: of metres per second; the slowest records just before a stop may fall below the threshold,
#: which only leaves them out of the fit (they lie on the same parabola).
MOTION_TOL = 1e-3

#: Rising records left out before a stop by :func:`max_displacement`, and records fitted. Near
#: rest PyBullet's iterative friction solver deviates: on ``du_impact`` the block's deceleration
#: is constant to 1e-6 relative while sliding but off by up to 1e-4 in the last 3 steps, so a
#: parabola through the last three records moves by ~2e-9 relative each time the stop crosses a
#: record (measured by third differences of d_B along each input). Leaving out 3 records and
#: fitting 20 (least squares, exact for constant deceleration) brings that to ~4e-11; for smooth
#: motion the fit's error over 20 records is about (10 ω dt)⁴/24 of the amplitude for an
#: oscillation of ω rad/s: 3e-8 for ω = 3 rad/s at dt = 1e-3 (estimate).
STOP_SKIP = 3
FIT_RECORDS = 20

#: Records in an interpolation stencil: a cubic through four records is exact for the parabolic
#: records of a free flight and O(dt⁴) for smooth motion.
STENCIL = 4


def stencil(k: int, first: int) -> np.ndarray:
    """Records of the interpolation stencil ending at record ``k``: the last :data:`STENCIL`
    records up to ``k``, none before ``first``."""
    return np.arange(max(first, k - STENCIL + 1), k + 1)


def _poly(t: np.ndarray, y: np.ndarray, idx: np.ndarray, t0: float, scale: float):
    """Coefficients (lowest degree first) of the polynomial through records ``idx`` in
    τ = (t − t0)/scale, which keeps the Vandermonde system well conditioned."""
    tau = (t[idx] - t0) / scale
    return np.polynomial.polynomial.polyfit(tau, y[idx], len(idx) - 1)


def crossing_time(t: np.ndarray, g: np.ndarray, k: int, first: int = 0) -> float:
    """Time where the gap function crosses zero between records k−1 and k.

    Parameters
    ----------
    t : ndarray, shape (nt,)
        Record times, s.
    g : ndarray, shape (nt,)
        Gap at the records (only the stencil k−3 … k is read): g[k−1] > 0 ≥ g[k].
    k : int
        First record at or past the crossing.
    first : int
        Records before it are not used (the search started there).

    Returns
    -------
    float
        The root in [t[k−1], t[k]] of the cubic through records max(first, k−3) … k (a lower
        degree if fewer records exist); ``t[k]`` when k == first.
    """
    if k <= first:
        return float(t[k])
    idx = stencil(k, first)
    h = float(t[k] - t[k - 1])
    c = _poly(t, np.asarray(g, float), idx, float(t[k]), h)
    lo, hi = float(g[k - 1]), float(g[k])
    if hi == 0.0:
        return float(t[k])
    if not lo > 0 >= hi:
        raise ValueError(f"crossing_time: expected g[k-1] > 0 >= g[k], got {lo}, {hi}")
    f = np.polynomial.polynomial.Polynomial(c)
    # f(-1) = g[k-1] > 0 >= f(0) = g[k] (interpolation), so a root lies in [-1, 0]
    tau = brentq(f, -1.0, 0.0, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    return float(t[k]) + tau * h


def value_at(
    t: np.ndarray, y: np.ndarray, t_star: float, k: int | None = None, first: int = 0
) -> np.ndarray:
    """Value of recorded data at ``t_star`` by the cubic through four records.

    Parameters
    ----------
    t : ndarray, shape (nt,)
    y : ndarray, shape (nt, ...)
    t_star : float
    k : int, optional
        Last record of the stencil (an event's first record at or past it: the stencil then
        holds only records before the event's consequences). Default: the four records around
        ``t_star`` (two on each side where the run allows).
    first : int
        Records before it are not used.
    """
    t = np.asarray(t, float)
    y = np.asarray(y, float)
    nt = t.size
    if k is None:
        j = int(np.searchsorted(t, t_star, side="right"))  # t[j-1] <= t_star < t[j]
        k = min(max(j + 1, first + STENCIL - 1), nt - 1)
    idx = stencil(k, first)
    if idx.size == 1:
        return y[k].copy()
    h = float(t[idx[-1]] - t[idx[-2]])
    c = _poly(t, y.reshape(nt, -1), idx, float(t[k]), h)
    out = np.polynomial.polynomial.polyval((t_star - float(t[k])) / h, c)
    return np.asarray(out).reshape(y.shape[1:])


def max_displacement(t: np.ndarray, s: np.ndarray, tol: float = MOTION_TOL) -> float:
    """Largest value of a displacement history s(t), s[0] = 0, located between records.

    A record whose increment s[i] − s[i−1] is at most ``tol`` × the largest increment is at rest
    (or moving back). Each rising run of records that ends is a turning point; its maximum is the
    vertex of the parabola fitted to the rising records just before it (:data:`STOP_SKIP`,
    :data:`FIT_RECORDS`; under constant deceleration they all lie on one parabola, so the value
    does not depend on which records are used), or the last rising record if that parabola is
    not concave (an abrupt stop). The result is the largest of
    s[0] and the turning points; creep after a stop (increments below ``tol``) is not counted.

    Raises
    ------
    ValueError
        If s is still rising at the end and above every turning point (the run is too short).
    """
    t = np.asarray(t, float)
    s = np.asarray(s, float)
    if s.size < 2:
        return float(s[0])
    ds = np.diff(s)
    peak = float(np.max(np.abs(ds)))
    if peak == 0:
        return float(s[0])
    rising = ds > tol * peak  # rising[i]: record i+1 moved forward from record i
    best = float(s[0])
    i = 0
    n = rising.size
    while i < n:
        if not rising[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and rising[j + 1]:
            j += 1
        m = j + 1  # last rising record
        if j + 1 >= n:  # still rising at the end of the run
            if s[m] >= best:
                raise ValueError(
                    f"still increasing at the end of the run (t = {t[-1]:g} s): run longer"
                )
            break
        best = max(best, _vertex(t, s, m, first=i))
        i = j + 1
    return best


def _vertex(t: np.ndarray, s: np.ndarray, m: int, first: int) -> float:
    """Maximum near the last rising record m: the vertex of the least-squares parabola through
    the :data:`FIT_RECORDS` rising records before the last :data:`STOP_SKIP` (records from
    ``first`` on); the last three records if the rising run is shorter."""
    idx = np.arange(max(first, m - STOP_SKIP - FIT_RECORDS + 1), m - STOP_SKIP + 1)
    if idx.size < 3:
        idx = np.arange(max(first, m - 2), m + 1)
    if idx.size < 3:
        return float(s[m])
    h = float(t[m] - t[m - 1])
    tau = (t[idx] - t[m]) / h
    c = np.polynomial.polynomial.polyfit(tau, s[idx], 2)
    if not c[2] < 0:  # not decelerating: an abrupt stop, the record is the answer
        return float(s[m])
    tv = -c[1] / (2 * c[2])
    if not tau[0] <= tv <= 3.0:  # the vertex belongs within a few records of the last rising one
        return float(s[m])
    return float(c[0] + c[1] * tv + c[2] * tv * tv)
