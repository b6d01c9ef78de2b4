"""The statistics of :mod:`workbench.ensemble.statistics` of a stored observer, read in bounded
memory: for ensembles whose responses do not fit in memory (10^5 realizations of ``random_box``
hold 240 MB per observer, and the quantiles copy them).

Two passes over the file: realizations in blocks (:meth:`~workbench.store.Store.iter_rows`)
give which realizations have finite records and their mean-square energies; windows of records
(:meth:`~workbench.store.Store.iter_time_windows`) give the mean and the band at each time. The
results equal those of the in-memory functions on the whole array (the same estimators over the
same realizations, each time reduced alone).
"""

from __future__ import annotations

import numpy as np

__all__ = ["observer_statistics", "BLOCK_REALIZATIONS"]

#: Realizations read at once in the first pass: 4096 rows of 101 records × 3 components are
#: 10 MB.
BLOCK_REALIZATIONS = 4096


def observer_statistics(
    store, name: str, p_c: float = 0.9
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean response, confidence band and mean-square convergence of the dataset ``name``.

    Parameters
    ----------
    store : Store
    name : str
        A per-record dataset, e.g. ``observers/com`` (n_real, nt, k).
    p_c : float
        Probability of the band, in (0, 1).

    Returns
    -------
    mean, lower, upper : ndarray, shape (nt, k)
        As :func:`~workbench.ensemble.statistics.mean_response` and
        :func:`~workbench.ensemble.statistics.confidence_band`.
    conv : ndarray, shape (m,)
        As :func:`~workbench.ensemble.statistics.mean_square_convergence`, over the ``m``
        completed realizations whose records are all finite, in index order.

    Raises
    ------
    ValueError
        ``p_c`` is outside (0, 1), or no realization has finite records.
    """
    if not 0.0 < p_c < 1.0:
        raise ValueError(f"the probability level must be in (0, 1), got {p_c}")
    time = np.asarray(store.schema.time, dtype=float)
    # the realizations completed now, once: a driver writing the file completes more meanwhile
    # (each pass over the data then read other rows: an IndexError, issue 39)
    done = store.completed
    valid, energy = [], []
    for block in store.iter_rows(name, BLOCK_REALIZATIONS, rows=done):
        V = block if block.ndim == 3 else block[..., None]
        keep = np.all(np.isfinite(V), axis=tuple(range(1, V.ndim)))
        valid.append(keep)
        energy.append(np.trapezoid(np.sum(V[keep] ** 2, axis=2), x=time, axis=1))
    keep = np.concatenate(valid) if valid else np.zeros(0, dtype=bool)
    if not keep.any():
        raise ValueError("no realization has finite records")
    energies = np.concatenate(energy)
    conv = np.sqrt(np.cumsum(energies) / np.arange(1, energies.shape[0] + 1))
    parts: dict[str, list[np.ndarray]] = {"mean": [], "lo": [], "hi": []}
    for _, data in store.iter_time_windows(name, rows=done):
        V = data if data.ndim == 3 else data[..., None]
        V = V[keep]
        parts["mean"].append(V.mean(axis=0))
        lo, hi = np.quantile(V, [(1.0 - p_c) / 2.0, (1.0 + p_c) / 2.0], axis=0)
        parts["lo"].append(lo)
        parts["hi"].append(hi)
    mean, lo, hi = (np.concatenate(parts[key], axis=0) for key in ("mean", "lo", "hi"))
    return mean, lo, hi, conv
