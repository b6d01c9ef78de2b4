"""Every figure function of ``workbench/figures/`` drawn from small inputs: every visible axes
has an x label and a y label that end in a unit in brackets (``[m]``, ``[1]`` for dimensionless,
``[count]``), and a title (its own or the figure's).

The figures are captured as they are saved (each module's ``save_figure`` is wrapped), so the
labels are read from the drawn matplotlib objects, not from the code that sets them.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SPECS
from workbench.figures import inference, inverse, labels, trajectories, validation

#: A label ends with its unit in brackets: "x [m]", "reliability r(t) [1]", "N [count]".
UNIT = re.compile(r"\[([^\[\]]+)\]\s*$")

#: The units given to the inference figures: the falling object's (its document, Eq. 4).
FALLING_UNITS = {"t": "s", "sigma_0.3": "m", "c": "1/m", "t0": "s", "g": "m/s^2"}


def _labels(fig) -> list[tuple[str, str, str]]:
    """(x label, y label, title) of each visible axes; a shared x axis lends its label to the
    panels above it, the figure's title stands for panels without their own."""
    suptitle = fig._suptitle.get_text() if fig._suptitle is not None else ""
    out = []
    for ax in fig.axes:
        if not ax.axison:
            continue
        xlabel = ax.get_xlabel() or next(
            (a.get_xlabel() for a in ax.get_shared_x_axes().get_siblings(ax) if a.get_xlabel()),
            "",
        )
        out.append((xlabel, ax.get_ylabel(), ax.get_title() or suptitle))
    return out


def assert_labelled(fig, *, known_units: bool = True) -> list[tuple[str, str, str]]:
    """Every axes of ``fig`` has x and y labels ending in a unit, and a title; with
    ``known_units`` no unit is the undeclared ``[?]``."""
    rows = _labels(fig)
    assert rows, "the figure has no visible axes"
    for xlabel, ylabel, title in rows:
        for label in (xlabel, ylabel):
            m = UNIT.search(label)
            assert m and label[: m.start()].strip(), f"{label!r}: no 'name [unit]'"
            if known_units:
                assert labels.UNKNOWN_UNIT not in m.group(1), f"{label!r}: unit not passed on"
        assert title.strip(), f"axes ({xlabel!r}, {ylabel!r}) has no title"
    return rows


# --- labels ---------------------------------------------------------------------------------


def test_axis_and_density_labels():
    assert labels.axis_label("x", "m") == "x [m]"
    assert labels.axis_label("n", "1") == "n [1]"
    assert labels.axis_label("mu", "") == "mu [?]"
    assert labels.axis_label("mu", None) == "mu [?]"
    assert labels.density_label("kg") == "probability density [1/kg]"
    assert labels.density_label("m/s") == "probability density [1/(m/s)]"
    assert labels.density_label("kg m^2") == "probability density [1/(kg m^2)]"
    assert labels.density_label("1") == "probability density [1]"
    assert labels.density_label("") == "probability density [1/?]"
    assert labels.unit_of("c", {"c": "1/m"}) == "1/m"
    assert labels.unit_of("c", None) == labels.UNKNOWN_UNIT


# --- trajectories ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def falling():
    """A short run of the shipped falling object: observers with units, and diagnostics."""
    from workbench.scene.catalog import find_scene
    from workbench.scene.loader import load_scene
    from workbench.sim.forward import run_scene

    scene = load_scene(find_scene("falling_object")).with_settings(duration=0.2)
    return run_scene(scene)


def test_observer_figure_has_the_observer_unit(falling, drawn, tmp_path):
    trajectories.plot_observer(falling, "height", tmp_path / "h.png")
    rows = assert_labelled(drawn[-1])
    assert [r[1] for r in rows] == ["x [m]", "y [m]", "z [m]"]
    assert rows[-1][0] == "time [s]"
    assert drawn[-1]._suptitle.get_text() == "height: com position of ball"


def test_diagnostic_figure_takes_its_unit_from_the_caller(falling, drawn, tmp_path):
    units = {"kinetic_energy": "J"}
    trajectories.plot_observer(
        falling, "kinetic_energy", tmp_path / "k.png", diagnostic_units=units
    )
    assert assert_labelled(drawn[-1])[0][1] == "kinetic_energy [J]"
    trajectories.plot_observer(falling, "kinetic_energy", tmp_path / "k2.png")
    assert assert_labelled(drawn[-1], known_units=False)[0][1] == "kinetic_energy [?]"


@pytest.mark.slow  # ~1.5 s: here to keep the fast tier short
def test_ensemble_figures(drawn, tmp_path):
    rng = np.random.default_rng(0)
    t = np.linspace(0, 1, 11)
    Y = rng.normal(size=(11, 3))
    info = {"quantity": "com_position", "unit": "m", "components": ["x", "y", "z"], "body": "b"}
    trajectories.plot_band(t, Y, Y, Y - 1, Y + 1, info, tmp_path / "b.png", p_c=0.9)
    rows = assert_labelled(drawn[-1])
    assert rows[0][1] == "x [m]" and rows[0][0] == "time [s]"  # shared x: the bottom label
    trajectories.plot_samples(rng.gamma(5, size=50), "b/mass", tmp_path / "m.png", unit="kg")
    assert assert_labelled(drawn[-1]) == [
        ("b/mass [kg]", "probability density [1/kg]", "probability density of b/mass: 50 samples")
    ]
    trajectories.plot_samples(rng.gamma(5, size=50), "tr(b/G)", tmp_path / "g.png", unit="1")
    assert assert_labelled(drawn[-1])[0][:2] == ("tr(b/G) [1]", "probability density [1]")
    trajectories.plot_scatter3(rng.normal(size=(40, 3)), "b/com", tmp_path / "c.png")
    assert [r[:2] for r in assert_labelled(drawn[-1])] == [
        ("x [m]", "y [m]"),
        ("x [m]", "z [m]"),
        ("y [m]", "z [m]"),
    ]
    conv = np.sqrt(np.cumsum(rng.uniform(size=20)) / np.arange(1, 21))
    trajectories.plot_convergence(conv, "com", tmp_path / "v.png", unit="m")
    assert assert_labelled(drawn[-1])[0][:2] == (
        "number of realizations n [count]",
        "conv(n) [m s^½]",
    )


# --- inference and design -------------------------------------------------------------------


@pytest.fixture(scope="module")
def inferred():
    """Example 1 (one parameter, grid posterior) and Example 2 (two) on case 3's five points,
    and Example 3 (four parameters with σ, no exact posterior): MAP and Laplace in < 1 s."""
    from workbench.analysis.inference import fit_curves, load_spec, run_inference

    out = {}
    for k, overrides, exact in ((1, {"case": 3}, None), (2, {"case": 3}, None), (3, {}, "none")):
        spec = load_spec(SPECS / f"falling_object_example{k}.yaml", overrides)
        result = run_inference(spec, exact=exact)
        out[k] = (result, fit_curves(result))
    return out


@pytest.mark.parametrize("example", [1, 2, 3])
def test_inference_figures_carry_the_units_they_are_given(inferred, example, drawn, tmp_path):
    result, fit = inferred[example]
    written = inference.write_inference_plots(result, tmp_path, fit=fit, units=FALLING_UNITS)
    assert [p.name for p in written] == [
        f"falling_object_example{example}_fit.png",
        f"falling_object_example{example}_posterior.png",
    ]
    fit_rows = assert_labelled(drawn[0])
    assert fit_rows == [
        (
            "t [s]",
            "distance fallen z (sigma_0.3) [m]",
            f"falling_object_example{example}: data (± σ) and MAP fit",
        )
    ]
    posterior = assert_labelled(drawn[1])
    names = list(result.map.names)
    if example == 1:
        assert posterior[0][:2] == ("c [1/m]", "posterior density [m]")
    elif example == 2:
        assert posterior[0][:2] == ("c [1/m]", "t0 [s]")
    else:  # pairs: sigma, inferred, takes the unit of the data column
        assert len(posterior) == len(names) * (len(names) - 1) // 2
        assert ("t0 [s]", "sigma [m]") in [r[:2] for r in posterior]


def test_inference_figures_without_declared_units(inferred, drawn, tmp_path):
    """The spec declares no units: x is time in s by the spec's contract, the rest is '[?]'
    (shown as unknown, never guessed)."""
    result, fit = inferred[2]
    inference.write_inference_plots(result, tmp_path, fit=fit)
    assert assert_labelled(drawn[0], known_units=False)[0][:2] == (
        "t [s]",
        "distance fallen z (sigma_0.3) [?]",
    )
    assert assert_labelled(drawn[1], known_units=False)[0][:2] == ("c [?]", "t0 [?]")


@pytest.mark.slow  # ~2 s
def test_design_figures(drawn, tmp_path):
    from workbench.analysis.inference import load_spec, run_design

    spec = load_spec(SPECS / "falling_object_example1.yaml")
    run = run_design(spec, etas=[0.5, 1.0], counts=[1, 2])
    written = inference.write_design_plots(run, tmp_path)
    assert len(written) == len(drawn) == 4  # entropy curve, a sequence per η, times against η
    curve, seq, _, vs_eta = (assert_labelled(f) for f in drawn)
    assert curve[0][:2] == ("measurement time t [s]", "information entropy (Eq. 16) [nat]")
    assert [r[:2] for r in seq] == [
        ("optimal measurement times [s]", "number of measurements N [count]"),
        ("number of measurements N [count]", "minimum information entropy [nat]"),
    ]
    assert vs_eta[0][:2] == ("η = σ2/σ1 [1]", "optimal measurement time [s]")


# --- inverse --------------------------------------------------------------------------------


def test_inverse_cdfs(drawn, tmp_path):
    from workbench.analysis.inverse import load_inverse_spec, report, run_spec

    spec = load_inverse_spec(SPECS / "du_impact_analytic.yaml")
    result, mc, seconds = run_spec(spec, mcs=200, seed=1)
    rep = report(result, mc, seconds)
    rep["variables"]["vB0"]["converged"][0] = False  # the "not converged" markers drawn too
    units = {"vA0": "m/s", "vB0": "m/s"}
    out = inverse.plot_cdfs(rep, tmp_path / "cdf.png", spec.description, units=units)
    assert Path(out).is_file()
    rows = assert_labelled(drawn[-1])
    assert rows == [
        ("vA0 [m/s]", "CDF F(vA0) = P(vA0 ≤ x) [1]", "CDF of the unknown vA0"),
        ("vB0 [m/s]", "CDF F(vB0) = P(vB0 ≤ x) [1]", "CDF of the unknown vB0"),
    ]
    assert drawn[-1]._suptitle.get_text() == spec.description


# --- validation -----------------------------------------------------------------------------


@pytest.mark.parametrize("with_sample", [True, False])
def test_validation_figure(with_sample, drawn, tmp_path):
    t = np.linspace(0, 2, 21)
    metrics = {"instantaneous": np.linspace(1, 0.5, 21), "accumulated": np.linspace(1, 0.8, 21)}
    sample = {"model_sample": np.sin(t)[None, :] * [[1.0], [1.1]], "experiments": np.sin(t)[None]}
    validation.plot_validation(
        t,
        metrics,
        tmp_path / "v.png",
        quantity="tip.x",
        unit="m",
        **(sample if with_sample else {}),
    )
    rows = assert_labelled(drawn[-1])
    assert rows[-1][:2] == ("time [s]", "reliability r(t) [1]")
    if with_sample:
        assert rows[0][:2] == ("time [s]", "tip.x [m]")
