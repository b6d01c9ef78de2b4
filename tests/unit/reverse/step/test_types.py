"""The step's settings and reports (:mod:`reverse.step.types`): the documented defaults (every
non-physical heuristic off, PyBullet's restitution threshold), settings frozen, and a report's
counts of failed, fallback and unverified islands.
"""

from __future__ import annotations

import dataclasses

import pytest

from reverse.step.types import IslandReport, StepReport, StepSettings


def test_defaults_are_the_documented_ones():
    s = StepSettings(1e-3)
    assert (s.epsilon, s.delta, s.delta_angular, s.baumgarte) == (0.2, 1e-4, 1e-4, 0.1)
    assert s.sleep and s.free_to_bounce and s.orientation_strict and s.max_fixed_point == 50
    # the heuristics of §4 that break Newton's law or the round trips are off unless asked for
    assert not s.attract and not s.joint_unit_restitution
    assert (s.restitution_blend, s.angular_damping, s.linear_damping, s.slip_damping) == (0,) * 4


def test_settings_are_frozen_and_replaced_whole():
    s = StepSettings(1e-3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.dt = 2e-3
    t = dataclasses.replace(s, attract=True)
    assert t.attract and not s.attract and t.dt == s.dt


def _island(status, fallback="", verified=True):
    return IslandReport(2, 4, 12, status, 3, fallback, 0.0, verified)


def test_report_counts_failed_fallback_and_unverified_islands():
    rep = StepReport(islands=[
        _island("solved"),
        _island("none"),  # no rows: not a failure
        _island("solved", "regularized(alpha=1e-10)"),
        _island("ray", "tried regularized(alpha=1e-10), enumeration; frictionless retry solved"),
        _island("max_pivots", "tried enumeration", verified=False),
    ])  # fmt: skip
    assert (rep.failed, rep.fallbacks, rep.unsolved) == (2, 3, 1)
    assert (StepReport().failed, StepReport().fallbacks, StepReport().unsolved) == (0, 0, 0)


def test_each_report_has_its_own_timing_and_islands():
    a, b = StepReport(), StepReport()
    assert set(a.timing) == {"contacts", "assembly", "lcp", "integration"}
    a.timing["lcp"] += 1.0
    a.islands.append(_island("solved"))
    assert b.timing["lcp"] == 0.0 and b.islands == []
