"""Units in inference and inverse specs (``unit:``): the shipped specs declare the papers' units,
the figures drawn by ``workbench infer --plot`` and ``workbench inverse --plot`` carry them, a spec
without units still loads (its axes say ``[?]``), and a bad or misspelt ``unit`` is one line.

Figures are captured as they are saved (each figure module's ``save_figure`` is wrapped), so the
labels are read from the drawn matplotlib objects.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from tests.conftest import REPO, SCENES, SPECS
from workbench.analysis.inference import load_spec
from workbench.analysis.inverse import load_inverse_spec
from workbench.cli.main import main
from workbench.errors import SpecError

EXAMPLES = {k: SPECS / f"falling_object_example{k}.yaml" for k in (1, 2, 3)}
DU = {name: SPECS / f"du_impact_{name}.yaml" for name in ("analytic", "pybullet")}

#: The falling-object document's units: t0 "= 1 sec", g = 9.81 (m/s²), z the distance fallen in
#: m (Eq. 4), c in 1/m (drag m c v², Eq. 1-2); σ, when inferred, in the data's unit.
FALLING = {"t": "s", "sigma_0.3": "m", "c": "1/m", "t0": "s", "g": "m/s^2"}

#: Du (2013) Sec. 4 and Tables 1-3: velocities in m/s, masses in kg, h, d_A, d_B in m, θ = 20°
#: (written in rad in the spec), e and μ dimensionless.
DU_UNITS = {
    "vA0": "m/s", "vB0": "m/s", "mA": "kg", "mB": "kg", "h": "m", "theta": "rad",
    "e": "1", "mu": "1", "dA": "m", "dB": "m",
}  # fmt: skip


def _axis_labels(fig) -> list[tuple[str, str]]:
    return [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes if ax.axison]


def _strip_units(node):
    """A copy of a parsed spec without any ``unit`` key, ``{value: x}`` entries back to ``x``."""
    if isinstance(node, dict):
        out = {k: _strip_units(v) for k, v in node.items() if k != "unit"}
        return out["value"] if set(out) == {"value"} else out
    if isinstance(node, list):
        return [_strip_units(v) for v in node]
    return node


def _copy(tmp_path, path, edit=None, *, units=True):
    """The spec at ``path`` copied to tmp_path with its relative files made absolute, without
    units unless ``units``, and ``edit(data)`` applied."""
    data = yaml.safe_load(path.read_text())
    if "data" in data:
        data["data"]["file"] = str(REPO / "data" / "falling_object_table1.csv")
    if not units:
        data = _strip_units(data)
    if edit is not None:
        edit(data)
    out = tmp_path / path.name
    out.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return out


# --- the shipped specs ----------------------------------------------------------------------


def test_shipped_inference_specs_declare_the_documents_units():
    for k, names in ((1, ["c"]), (2, ["c", "t0"]), (3, ["g", "c", "t0", "sigma"])):
        spec = load_spec(EXAMPLES[k])
        expected = {n: FALLING.get(n, FALLING["sigma_0.3"]) for n in ["t", "sigma_0.3", *names]}
        assert spec.units == expected, k


@pytest.mark.parametrize("name", DU)
def test_shipped_inverse_specs_declare_the_papers_units(name):
    spec = load_inverse_spec(DU[name])
    assert spec.units == DU_UNITS
    assert spec.known == {"mA": 2.0, "mB": 6.0, "h": 2.0, "theta": np.deg2rad(20.0)}
    assert spec.measured == {"dA": 0.582, "dB": 0.708}


# --- the figures of the command line --------------------------------------------------------


@pytest.mark.slow  # ~2 s
def test_infer_plot_labels_carry_the_spec_units(drawn, tmp_path, capsys):
    assert (
        main(["infer", "falling_object_example1", "--set", "case=3", "--plot", str(tmp_path)]) == 0
    )
    fit, posterior = drawn
    assert _axis_labels(fit) == [("t [s]", "distance fallen z (sigma_0.3) [m]")]
    assert _axis_labels(posterior) == [("c [1/m]", "posterior density [m]")]
    # four parameters: pair panels, σ in the data's unit, g in m/s^2
    assert (
        main(["infer", "falling_object_example3", "--exact", "none", "--plot", str(tmp_path)]) == 0
    )
    pairs = _axis_labels(drawn[-1])
    assert ("g [m/s^2]", "sigma [m]") in pairs and ("c [1/m]", "t0 [s]") in pairs
    assert not [lab for f in drawn for pair in _axis_labels(f) for lab in pair if "[?]" in lab]


def test_inverse_plot_labels_carry_the_spec_units(drawn, tmp_path):
    out = tmp_path / "cdf.png"
    assert main(["inverse", "du_impact_analytic", "-q", "--plot", str(out)]) == 0
    assert out.is_file()
    assert [x for x, _ in _axis_labels(drawn[-1])] == ["vA0 [m/s]", "vB0 [m/s]"]


# --- specs without units ----------------------------------------------------------------------


def test_an_inference_spec_without_units_loads_and_its_axes_say_unknown(drawn, tmp_path):
    path = _copy(tmp_path, EXAMPLES[2], units=False)
    assert "unit" not in path.read_text()
    spec = load_spec(path, {"case": 3})
    assert spec.units == {"t": "s"}  # x is time in s by the spec's contract
    np.testing.assert_array_equal(spec.y, load_spec(EXAMPLES[2], {"case": 3}).y)
    assert main(["infer", str(path), "--set", "case=3", "--plot", str(tmp_path)]) == 0
    fit, posterior = drawn
    assert _axis_labels(fit) == [("t [s]", "distance fallen z (sigma_0.3) [?]")]
    assert _axis_labels(posterior)[0] == ("c [?]", "t0 [?]")


def test_an_inverse_spec_without_units_loads_with_the_same_values(drawn, tmp_path):
    path = _copy(tmp_path, DU["analytic"], units=False)
    assert "unit" not in path.read_text()
    bare, full = load_inverse_spec(path), load_inverse_spec(DU["analytic"])
    assert bare.units == {}
    assert (bare.known, bare.measured, bare.measured_std) == (
        full.known,
        full.measured,
        full.measured_std,
    )
    assert [m.mean() for m in bare.marginals] == [m.mean() for m in full.marginals]
    assert main(["inverse", str(path), "-q", "--plot", str(tmp_path / "cdf.png")]) == 0
    assert [x for x, _ in _axis_labels(drawn[-1])] == ["vA0 [?]", "vB0 [?]"]


# --- bad units ------------------------------------------------------------------------------


def _set(*keys, value):
    def edit(data):
        node = data
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value

    return edit


NOT_TEXT = "expected a unit as text such as 'm/s', or '1' (quoted) for a dimensionless quantity"
EMPTY = "expected a non-empty unit of printable characters"
HINT = "unknown field (did you mean 'unit'?)"


@pytest.mark.parametrize(
    "spec, keys, value, words",
    [
        ("ex1", ("data", "unit"), 1, f"data.unit: {NOT_TEXT}, got 1"),
        ("ex1", ("data", "unit"), "  ", f"data.unit: {EMPTY}, got '  '"),
        ("ex1", ("data", "unit"), "m\nm", f"data.unit: {EMPTY}, got 'm\\nm'"),
        ("ex1", ("infer", "c", "unit"), ["1/m"], f"infer.c.unit: {NOT_TEXT}, got ['1/m']"),
        ("du", ("unknown", "vA0", "unit"), "", f"unknown.vA0.unit: {EMPTY}, got ''"),
        ("du", ("known", "mA", "unit"), 2, f"known.mA.unit: {NOT_TEXT}, got 2"),
        ("du", ("uncertain", "e", "unit"), 1, f"uncertain.e.unit: {NOT_TEXT}, got 1"),
        ("du", ("measured", "dA", "unit"), "\t", f"measured.dA.unit: {EMPTY}, got '\\t'"),
        ("ex1", ("data", "units"), "m", f"data.units: {HINT}"),
        (
            "ex2",
            ("infer", "t0", "unti"),
            "s",
            f"infer.t0.unti: {HINT}",
        ),
        ("du", ("unknown", "vB0", "units"), "m/s", f"unknown.vB0.units: {HINT}"),
        ("du", ("known", "h", "unti"), "m", f"known.h.unti: {HINT}"),
        ("du", ("uncertain", "mu", "units"), "1", f"uncertain.mu.units: {HINT}"),
        (
            "du",
            ("measured", "dB", "sd"),
            0.1,
            "measured.dB.sd: unknown field (did you mean 'std'?)",
        ),
    ],
)
def test_a_bad_unit_is_one_line(tmp_path, spec, keys, value, words):
    source = {"ex1": EXAMPLES[1], "ex2": EXAMPLES[2], "du": DU["analytic"]}[spec]
    path = _copy(tmp_path, source, _set(*keys, value=value))
    load = load_inverse_spec if spec == "du" else load_spec
    with pytest.raises(SpecError) as info:
        load(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{path}:"), msg
    assert words in msg, msg


def test_a_bad_unit_exits_2_with_one_line(tmp_path, capsys):
    path = _copy(tmp_path, DU["analytic"], _set("unknown", "vA0", "unit", value=""))
    assert main(["inverse", str(path), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "unknown.vA0.unit: expected a non-empty unit" in err, err


# --- ensemble figures: units from the store (workbench/ensemble/report.py) --------------------


@pytest.fixture(scope="module")
def box_ensemble(tmp_path_factory):
    """Three realizations of random_box (random mass, centre of mass, inertia via the germ G,
    and the friction parameter mu, which declares no unit): 0.1 s."""
    from workbench.ensemble.run import SceneRef, run_ensemble

    out = tmp_path_factory.mktemp("box") / "box.h5"
    run_ensemble(SceneRef(str(SCENES / "random_box.yaml")), 3, out, entropy=5)
    return out


@pytest.mark.parametrize(
    "key, labels",
    [
        ("box/mass", [("box/mass [kg]", "probability density [1/kg]")]),
        ("box/G", [("tr(box/G) [1]", "probability density [1]")]),
        ("box/inertia", [("tr(box/inertia) [kg m^2]", "probability density [1/(kg m^2)]")]),
        ("box/com", [("x [m]", "y [m]"), ("x [m]", "z [m]"), ("y [m]", "z [m]")]),
        ("parameters/mu", [("parameters/mu [?]", "probability density [1/?]")]),
    ],
)
def test_parameter_figures_take_the_stored_units(box_ensemble, drawn, tmp_path, key, labels):
    from workbench.ensemble import report

    report.plot_parameter(box_ensemble, key, tmp_path / "p.png")
    assert _axis_labels(drawn[0]) == labels
    report.plot_ensemble_convergence(box_ensemble, "corner_acc", tmp_path / "c.png")
    assert _axis_labels(drawn[1]) == [("number of realizations n [count]", "conv(n) [(m/s^2) s^½]")]


def test_data_label_names_what_the_column_measures(tmp_path):
    """``data.label`` says what y is ("distance fallen z"); without it the column's name is used,
    and an empty label is one line naming the field."""
    spec = load_spec(EXAMPLES[1], {"case": 3})
    assert spec.y_label == "distance fallen z" and spec.y_name == "sigma_0.3"
    for folder in ("plain", "empty"):
        (tmp_path / folder).mkdir()
    plain = _copy(tmp_path / "plain", EXAMPLES[1], lambda d: d["data"].pop("label"))
    assert load_spec(plain, {"case": 3}).y_label == "sigma_0.3"
    empty = _copy(tmp_path / "empty", EXAMPLES[1], lambda d: d["data"].update(label=""))
    with pytest.raises(SpecError, match=r"data\.label"):
        load_spec(empty, {"case": 3})
