"""PyBullet's confirmation of a reverse run (``reverse/runs/confirm.py``)."""

from __future__ import annotations

import numpy as np

from reverse.runs.confirm import CONFIRM_DTYPE, Confirmation, confirm_run, refine_confirmation
from reverse.runs.run import run_reverse
from workbench.scene.model import scene_from_dict


def _falling_balls():
    # two balls in free flight, falling at 1 m/s and 2 m/s: no contact over the run
    return scene_from_dict(
        {
            "settings": {"dt": 1 / 240, "duration": 0.2},
            "bodies": [
                {
                    "name": name,
                    "shape": {"type": "sphere", "radius": 0.05},
                    "mass": 1.0,
                    "position": [x, 0.0, 2.0],
                    "linear_velocity": [0.0, 0.0, -v],
                }
                for name, x, v in (("a", 0.0, 1.0), ("b", 1.0, 2.0))
            ],
        },
        source="<falling>",
    )


def test_a_free_flight_past_is_confirmed_by_pybullet():
    scene = _falling_balls()
    traj = run_reverse(scene, duration=0.2).trajectory
    c = confirm_run(scene, traj.state(0), traj.state(len(traj.time) - 1), float(traj.time[-1]))
    assert c.body_names == ["a", "b"]
    # both semi-implicit Euler: the same free flight to round-off
    assert np.all(c.position_error < 1e-9) and np.all(c.angle_error < 1e-6)
    assert c.confirmed == 2 and c.share == 1.0
    assert "2 of 2 moving bodies within 10 mm" in c.line()


def test_a_past_that_misses_names_its_farthest_body():
    scene = _falling_balls()
    traj = run_reverse(scene, duration=0.2).trajectory
    earliest = traj.state(0)
    earliest.linear_velocity[1, 0] += 0.5  # b thrown sideways: 0.1 m off after 0.2 s
    c = confirm_run(scene, earliest, traj.state(len(traj.time) - 1), float(traj.time[-1]))
    assert c.confirmed == 1 and c.share == 0.5
    assert c.position_error[1] > 0.09
    assert "1 of 2" in c.line() and "farthest: b" in c.line()


def test_the_table_holds_one_row_per_moving_body():
    c = Confirmation(["a", "b"], np.array([0.001, np.inf]), np.array([0.5, np.inf]))
    rows = c.table()
    assert rows.dtype == CONFIRM_DTYPE and rows["body"].tolist() == [b"a", b"b"]
    assert c.confirmed == 1  # a non-finite run confirms nothing


def test_refinement_shifts_a_missing_body_home_and_keeps_the_others():
    scene = _falling_balls()
    traj = run_reverse(scene, duration=0.2).trajectory
    earliest, final = traj.state(0), traj.state(len(traj.time) - 1)
    earliest.position[1, 0] += 0.03  # b starts 3 cm off: free flight carries the shift to the end
    c = refine_confirmation(scene, earliest, final, float(traj.time[-1]), budget=4)
    assert c.confirmed == 2 and c.refined and c.refine_runs == 1  # one full shift sends b home
    np.testing.assert_allclose(c.earliest.position[1, 0], earliest.position[1, 0] - 0.03)
    np.testing.assert_array_equal(c.earliest.position[0], earliest.position[0])  # a confirmed
    assert "refined in 1 PyBullet runs" in c.line()


def test_refinement_without_budget_or_need_is_the_plain_confirmation():
    scene = _falling_balls()
    traj = run_reverse(scene, duration=0.2).trajectory
    earliest, final = traj.state(0), traj.state(len(traj.time) - 1)
    plain = refine_confirmation(scene, earliest, final, 0.2, budget=8)  # nothing misses
    assert plain.refine_runs == 0 and not plain.refined and plain.confirmed == 2
    earliest.position[1, 0] += 0.03
    none = refine_confirmation(scene, earliest, final, 0.2, budget=0)
    assert none.confirmed == 1 and not none.refined and none.earliest is earliest


def test_a_refinement_that_finds_nothing_better_keeps_the_runs_own_state():
    scene = _falling_balls()
    traj = run_reverse(scene, duration=0.2).trajectory
    earliest, final = traj.state(0), traj.state(len(traj.time) - 1)
    earliest.linear_velocity[:, 2] = np.nan  # the run goes non-finite: no shift brings it home
    c = refine_confirmation(scene, earliest, final, 0.2, budget=3)
    assert c.confirmed == 0 and not c.refined and c.refine_runs == 3
    assert c.earliest is earliest and "found no better start" in c.line()
