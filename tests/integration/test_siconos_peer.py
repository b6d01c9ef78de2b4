"""The optional Siconos peer of the LCP benchmarks (``benchmarks/_siconos.py``): when an
interpreter imports Siconos, its answers come back from the subprocess and are checked with our
residual; when none does, the benchmarks leave its columns out with one line, and nothing else
changes."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import _siconos, lcp
from reverse.lcp.solve import VERIFY_RTOL, lcp_residual

# a 2×2 P-matrix problem with the unique solution z = (4/3, 7/3), w = 0
M = np.array([[2.0, 1.0], [1.0, 2.0]])
q = np.array([-5.0, -6.0])


@pytest.fixture
def siconos():
    """Skips when no interpreter imports Siconos (probed here, not at collection: the probe
    starts interpreters)."""
    if not _siconos.available():
        pytest.skip("no interpreter imports siconos.numerics")


def test_siconos_lemke_answers_come_back_from_the_subprocess(siconos):
    ((z, secs, info, iters),) = _siconos.solve_all([(M, q)], "lemke", 0.0, 1, 120.0)
    assert info == 0 and iters >= 1 and secs > 0
    np.testing.assert_allclose(z, [4.0 / 3.0, 7.0 / 3.0], rtol=1e-12)
    assert lcp_residual(M, q, z) <= VERIFY_RTOL


def test_a_solve_past_its_timeout_is_reported_not_waited_for(siconos):
    # 0.01 s is less than the interpreter needs to import Siconos
    (row,) = _siconos.solve_all([(M, q)], "lemke", 0.0, 1, 0.01)
    assert row[0] is None and row[2] == "timeout"


def test_cells_mark_unverified_missing_and_timed_out_answers():
    good = np.array([4.0 / 3.0, 7.0 / 3.0])
    assert lcp.siconos_cell(M, q, (good, 1e-5, 0, 2), 8).endswith(" ")
    assert lcp.siconos_cell(M, q, (2.0 * good, 1e-5, 0, 2), 8).endswith("!")
    assert lcp.siconos_cell(M, q, (None, 1e-5, 1, 2), 8).endswith("?")
    assert lcp.siconos_cell(M, q, (None, float("nan"), "timeout", 0), 8).strip() == "t"


def test_without_siconos_the_benchmark_leaves_its_columns_out(monkeypatch, capsys):
    monkeypatch.setattr(_siconos, "available", lambda: False)
    assert lcp.siconos_columns([(M, q)], 3, 10.0) == {}
    assert "its columns are left out" in capsys.readouterr().out
