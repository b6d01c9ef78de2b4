"""The analytic falling-object model: closed forms, continuation to c <= 0, derivatives, Table 1."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.conftest import REPO
from uncertainty.examples import falling_object
from uncertainty.examples.falling_object import (
    C_NOMINAL,
    G_NOMINAL,
    T0_NOMINAL,
    position,
    position_derivatives,
    velocity,
)

T = np.array([0.2, 0.9, 1.0, 1.05, 1.1, 1.5, 2.0, 3.0, 5.0, 12.0, 20.0])
T_SHORT = T[T <= 2.0]  # negative drag blows the motion up within ~2 s for the c < 0 below

#: Relative accuracy of the closed form (1/c) ln cosh(√(gc) τ) and of ours: a few roundoffs,
#: amplified by the ln cosh cancellation (1/c ~ 10) — 1e-13 leaves a margin of ~100.
CLOSED_FORM_RTOL = 1e-13


def _table1():
    rows = [
        line.split(",")
        for line in (REPO / "data" / "falling_object_table1.csv").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    head, body = rows[0], np.array(rows[1:], dtype=float)
    return head, body


def test_position_matches_eq4_for_positive_drag():
    for g, c, t0 in [(G_NOMINAL, C_NOMINAL, T0_NOMINAL), (8.7, 0.0915, 0.95), (9.81, 0.3, 1.0)]:
        z = position(T, g, c, t0)
        ref = np.log(np.cosh(np.sqrt(g * c) * (T - t0))) / c
        np.testing.assert_allclose(z, ref, rtol=CLOSED_FORM_RTOL, atol=1e-15)


def test_position_is_even_in_t_minus_t0_as_the_document_evaluates_it():
    # The document's ln cosh has no clamp to z = 0 before release: that is what lets a negative
    # reading at 1.10 s drive its case-2 optimum to c < 0 (Table 2).
    s = np.array([0.05, 0.3, 1.7])
    np.testing.assert_array_equal(position(1.0 - s), position(1.0 + s))


def test_negative_drag_is_the_analytic_continuation_and_blows_up_at_pi_over_2():
    g, c, t0 = 9.81, -0.0471, 1.1
    z = position(T_SHORT, g, c, t0)
    ref = np.real(np.log(np.cosh(np.sqrt(complex(g * c)) * (T_SHORT - t0))) / c)
    np.testing.assert_allclose(z, ref, rtol=CLOSED_FORM_RTOL, atol=1e-15)
    blowup = t0 + (math.pi / 2) / math.sqrt(g * abs(c))  # √(g|c|) τ = π/2: z → ∞
    assert np.isfinite(position(blowup - 1e-3, g, c, t0))
    assert position(blowup + 1e-3, g, c, t0) == np.inf


def test_zero_drag_is_free_fall():
    np.testing.assert_allclose(position(T, 9.81, 0.0, 1.0), 0.5 * 9.81 * (T - 1.0) ** 2, rtol=1e-15)


@pytest.mark.parametrize("u", [0.3, 0.49, -0.3, -0.49])
def test_taylor_series_and_closed_forms_agree(monkeypatch, u):
    """The functions of u = g c τ² from the series (|u| < U_SERIES) equal the closed forms."""
    series = falling_object._functions_of_u(np.array([u]), 2)
    monkeypatch.setattr(falling_object, "U_SERIES", 0.0)  # closed forms everywhere
    closed = falling_object._functions_of_u(np.array([u]), 2)
    for key in ("F", "G", "Gp"):
        np.testing.assert_allclose(closed[key], series[key], rtol=1e-14)
    # F' = (G − F)/u and F'' = (G' − 2F')/u cancel about one digit each at |u| ~ 0.5
    np.testing.assert_allclose(closed["Fp"], series["Fp"], rtol=1e-13)
    np.testing.assert_allclose(closed["Fpp"], series["Fpp"], rtol=1e-12)


def test_velocity_is_eq3():
    g, c, t0 = G_NOMINAL, C_NOMINAL, T0_NOMINAL
    ref = np.sqrt(g / c) * np.tanh(np.sqrt(g * c) * (T - t0))
    np.testing.assert_allclose(velocity(T, g, c, t0), ref, rtol=CLOSED_FORM_RTOL, atol=1e-14)


def test_first_derivatives_are_appendix_1_2():
    g, c, t0 = 8.7, 0.0915, 0.95
    tau = T - t0
    q = math.sqrt(g * c)
    Tk = np.tanh(q * tau)
    z, dz, _ = position_derivatives(T, g, c, t0)
    np.testing.assert_allclose(dz[:, 0], tau * Tk / (2 * q), rtol=1e-13, atol=1e-15)
    # the document's form of ∂z/∂c cancels two terms ~ z/c near τ = 0: compare on the scale of
    # the largest term (our form g²τ⁴F' has no cancellation)
    doc = tau * g * Tk / (2 * c * q) - np.log(np.cosh(q * tau)) / c**2
    np.testing.assert_allclose(dz[:, 1], doc, rtol=1e-11, atol=1e-13 * np.max(np.abs(z / c)))
    np.testing.assert_allclose(dz[:, 2], -q * Tk / c, rtol=1e-13, atol=1e-15)
    # second derivatives printed without typos in Appendix 1.2
    dT_dt0 = -(1 - Tk**2) * q
    dT_dc = (1 - Tk**2) * tau * g / (2 * q)
    _, _, d2z = position_derivatives(T, g, c, t0)
    np.testing.assert_allclose(d2z[:, 2, 2], -q / c * dT_dt0, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        d2z[:, 1, 2], g / (2 * c * q) * (-Tk + tau * dT_dt0) - dz[:, 2] / c, rtol=1e-11, atol=1e-12
    )
    np.testing.assert_allclose(
        d2z[:, 0, 1], tau * (2 * q * dT_dc - Tk * g / q) / (4 * g * c), rtol=1e-11, atol=1e-13
    )


@pytest.mark.parametrize(
    "theta",
    [(9.81, 0.106, 1.0), (8.7, 0.0915, 0.95), (9.81, -0.0471, 1.1), (9.81, 1e-9, 1.0)],
    ids=["nominal", "table3", "negative-c", "c~0"],
)
def test_derivatives_match_central_differences(theta):
    p = np.array(theta, dtype=float)
    t = T_SHORT
    z, dz, d2z = position_derivatives(t, *p)
    h = 1e-6 * np.maximum(np.abs(p), 0.1)
    for i in range(3):
        e = np.zeros(3)
        e[i] = h[i]
        fd = (position(t, *(p + e)) - position(t, *(p - e))) / (2 * h[i])
        fd2 = (position_derivatives(t, *(p + e))[1] - position_derivatives(t, *(p - e))[1]) / (
            2 * h[i]
        )
        # central differences with h ~ 1e-6 relative: truncation h² z'''/6 and roundoff
        # ε z / h are both ~1e-10 relative to the derivative's scale
        scale = np.max(np.abs(dz[:, i])) + 1.0
        assert np.max(np.abs(fd - dz[:, i])) < 1e-8 * scale
        scale2 = np.max(np.abs(d2z[:, :, i])) + 1.0
        assert np.max(np.abs(fd2 - d2z[:, :, i])) < 1e-7 * scale2
    np.testing.assert_array_equal(d2z, np.swapaxes(d2z, 1, 2))


def test_table1_residuals_have_the_nominal_noise_levels():
    """The transcribed Table 1 minus z(t; g_nom, c_nom, t0_nom) has the standard deviation of each
    column's nominal σ: a check on the data, the model and the even ln cosh convention."""
    head, body = _table1()
    assert head == ["t", "sigma_0.001", "sigma_0.1", "sigma_0.3"]
    assert body.shape == (20, 4)
    z = position(body[:, 0])
    for j, sigma in ((1, 0.001), (2, 0.1), (3, 0.3)):
        r = body[:, j] - z
        s2 = float(np.sum(r**2) / r.size)
        # 20 N(0, σ²) residuals: 20 s²/σ² ~ χ²(20); the 0.05% and 99.95% quantiles are 5.9 and
        # 45.3, so s²/σ² in [0.29, 2.27] fails once in 1000 tables
        assert 0.29 < s2 / sigma**2 < 2.27, (j, s2 / sigma**2)
