"""The ``--replay`` comparison of ``benchmarks/island.py``: stepping the first backward step
again with another answer ``z`` of its largest LCP changes nothing but that answer, so the
shipped answer replays to the bit, and the post-step velocities move linearly in ``z``
(``v⁺ = u_move − A Wᵀ z``, :mod:`reverse.step.dynamics`): doubling the change of ``z`` doubles
theirs. A small bin (12 spheres, one 187-row island) keeps it fast."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pybullet")

from benchmarks import island  # noqa: E402


def test_replay_reproduces_the_step_and_is_linear_in_z(tmp_path):
    zfile = tmp_path / "z.npz"
    first = island.run_scene_steps(12, 1, 0.3, 0, None, str(zfile), (64,), ())
    # the shipped answer and the same solve again (below BLOCKED_MIN_ROWS: the same path)
    assert [r["name"] for r in first][0] == "shipped answer (replay check)"
    for r in first:
        assert (r["dz"], r["dv"], r["dw"], r["dx"], r["dq"]) == (0.0,) * 5
    z = np.load(zfile)["z"]
    assert np.max(np.abs(z)) > 0  # a pile that carries load: the replay has something to move
    names = []
    for f in (1.5, 2.0):
        names.append(str(tmp_path / f"z{f}.npz"))
        np.savez(names[-1], z=f * z)
    rows = island.run_scene_steps(12, 1, 0.3, 0, None, None, (), tuple(names))
    half, full = rows[1], rows[2]
    assert rows[0]["dv"] == 0.0 and rows[0]["dw"] == 0.0
    assert half["residual"] > 1e-3  # a scaled answer does not verify, and the replay says so
    for key in ("dv", "dw"):
        assert half[key] > 0
        # linear in z: the change of 2z is twice that of 1.5z (0.5z vs 1z), to rounding of the
        # velocities themselves (max|v| ≈ 1e-2 here; 1e-12 relative is a few hundred eps)
        assert full[key] == pytest.approx(2.0 * half[key], rel=1e-9, abs=1e-15)
