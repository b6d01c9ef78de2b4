"""Figures of the plausibility measure (workbench/figures/plausibility.py): Fig. 9-style rows
sorted in reverse time, shorter runs padded, histograms with units, log axes for runaway runs."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.figures import plausibility


@pytest.fixture
def saved(monkeypatch):
    figures = []
    real = plausibility.save_figure

    def capture(fig, out, **kw):
        figures.append(fig)
        return real(fig, out, **kw)

    monkeypatch.setattr(plausibility, "save_figure", capture)
    return figures


def test_rows_are_sorted_in_reverse_time():
    rows = np.array([[0, 3, 3], [1, 2, 3], [0, 2, 3]])
    # reverse time: (3,3,0), (3,2,1), (3,2,0) → (3,2,0) < (3,2,1) < (3,3,0)
    np.testing.assert_array_equal(plausibility.sort_rows(rows), rows[[2, 1, 0]])


def test_sequences_pad_short_runs_and_label_the_states(tmp_path, saved):
    out = plausibility.plot_sequences(
        [np.array([0, 0, 3, 3]), np.array([1, 3])], [np.array([0, 2, 3, 3])], 0.25,
        tmp_path / "s.png",
    )  # fmt: skip
    assert out.stat().st_size > 0
    (fig,) = saved
    top = fig.axes[0].images[0].get_array()
    # reverse time from the left, colour index state + 1; the short run is padded with "no
    # record" (0) and sorts first: (3, 1, -1, -1) < (3, 3, 0, 0)
    np.testing.assert_array_equal(np.asarray(top), [[4, 2, 0, 0], [4, 4, 1, 1]])
    labels = [t.get_text() for t in fig.axes[-1].get_yticklabels()]
    assert labels == ["0 free", "1 vertex", "2 edge", "3 face"]


def test_statistics_have_units_and_log_axes_for_runaway_runs(tmp_path, saved):
    rng = np.random.default_rng(0)
    values = {
        "speed": ("speed", "m/s", rng.uniform(0, 4, 50), rng.uniform(0, 4, 50),
                  np.concatenate([rng.uniform(5, 9, 45), np.full(5, 1e60)])),
        "share": ("share of steps, free", "1", rng.random(50), rng.random(50), rng.random(50)),
    }  # fmt: skip
    plausibility.plot_statistics(values, tmp_path / "h.png")
    (fig,) = saved
    a, b = fig.axes[:2]
    assert a.get_xscale() == "log" and a.get_xlabel() == "speed [m/s]"
    assert a.get_ylabel() == "share of runs per bin [1]"
    assert b.get_xscale() == "linear" and b.get_ylabel() == "probability density [1]"
