"""The batch's lazily made answers and matrices (:class:`reverse.step.batch_views.Results`,
:class:`~reverse.step.batch_views.GroupViews`, :class:`~reverse.step.batch_views.FlatViews`) read
like the lists they replaced (issue 17): views into the stacked arrays, ``None`` where an island
has no matrix.
"""

from __future__ import annotations

import numpy as np
import pytest


def test_lazy_batch_sequences_read_like_lists():
    from reverse.step.batched import _GroupViews, _Results

    stacked = [np.arange(2 * 3 * 3, dtype=float).reshape(2, 3, 3), np.ones((1, 2, 2))]
    gid = np.array([0, -1, 1, 0])
    gpos = np.array([1, 0, 0, 0])
    views = _GroupViews(stacked, gid, gpos)
    assert len(views) == 4
    assert views[1] is None
    assert np.array_equal(views[0], stacked[0][1]) and np.shares_memory(views[0], stacked[0])
    assert np.array_equal(views[-1], stacked[0][0])
    assert [v is None for v in views] == [False, True, False, False]
    assert np.array_equal(views.posed, [True, False, True, True])
    empty = _Results(3)
    assert list(empty) == [None, None, None]
    with pytest.raises(IndexError):
        empty[3]


def test_flat_views_read_like_matrices():
    from reverse.step.batch_views import FlatViews

    m_k = np.array([2, 0, 3])
    m_off = np.array([0, 4, 4, 13])
    flat = np.arange(13, dtype=float)
    views = FlatViews(flat, m_off, m_k)
    assert len(views) == 3 and views[1] is None
    assert np.array_equal(views[0], [[0, 1], [2, 3]]) and np.shares_memory(views[0], flat)
    assert np.array_equal(views[-1], np.arange(4, 13).reshape(3, 3))
    assert np.array_equal(views.posed, [True, False, True])
