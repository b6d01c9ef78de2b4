"""Inference specs: the shipped examples load, and every bad spec or data file is one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from tests.conftest import REPO, SPECS
from workbench.analysis.inference import (
    inference_report,
    is_spec,
    load_spec,
    parse_counts,
    run_design,
    run_inference,
)
from workbench.errors import SpecError
from workbench.scene.catalog import is_scene_file

EXAMPLES = [SPECS / f"falling_object_example{k}.yaml" for k in (1, 2, 3)]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_are_specs_not_scenes(path):
    assert is_spec(path) and not is_scene_file(path)
    spec = load_spec(path)
    assert spec.description and spec.y_name == "sigma_0.3"


@pytest.mark.parametrize(
    "path, case, rows",
    [
        (EXAMPLES[0], 1, [12]),
        (EXAMPLES[1], 2, [1, 12]),
        (EXAMPLES[1], 3, [1, 7, 12, 17, 19]),
        (EXAMPLES[1], 4, list(range(20))),
        (EXAMPLES[1], 5, [13, 15]),
        (EXAMPLES[1], 6, [18, 19]),
    ],
)
def test_cases_select_the_rows_identified_from_the_document(path, case, rows):
    spec = load_spec(path, {"case": case})
    assert spec.rows.tolist() == rows
    t = np.array([1.05, 1.10, 1.15, 1.20, 1.25, 1.30, 1.35, 1.40, 1.45, 1.50, 1.60, 1.80, 2.00])
    t = np.concatenate([t, [2.20, 2.40, 2.60, 2.80, 3.00, 4.00, 5.00]])
    np.testing.assert_array_equal(spec.x, t[rows])


@pytest.mark.parametrize("column, sigma", [("sigma_0.001", 0.001), ("sigma_0.1", 0.1)])
def test_sigma_follows_the_column(column, sigma):
    spec = load_spec(EXAMPLES[1], {"column": column})
    assert spec.sigma == sigma and spec.y_name == column


def test_infer_json_document_has_the_documented_keys():
    result = run_inference(load_spec(EXAMPLES[1], {"case": 3}))
    doc = json.loads(json.dumps(inference_report(result)))
    assert set(doc["map"]) == {"c", "t0"}
    assert doc["laplace"]["names"] == ["c", "t0"]
    assert set(doc["laplace"]["std"]) == {"c", "t0"}
    assert np.shape(doc["laplace"]["corr"]) == (2, 2)
    assert doc["exact"]["method"] == "grid" and set(doc["exact"]["mean"]) == {"c", "t0"}
    assert doc["converged"] is True and doc["problems"] == []
    assert abs(doc["map"]["c"] - 0.1054) < 1e-4  # Table 2, case 3


def _spec(tmp_path, **changes):
    """A copy of example 2 in tmp_path (data copied beside it) with top-level changes."""
    data = yaml.safe_load(EXAMPLES[1].read_text())
    (tmp_path / "table.csv").write_text((REPO / "data" / "falling_object_table1.csv").read_text())
    data["data"]["file"] = "table.csv"
    for key, value in changes.items():
        node = data
        *head, last = key.split(".")
        for k in head:
            node = node[k]
        node[last] = value
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _one_line(exc: Exception) -> str:
    msg = str(exc)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize(
    "changes, overrides, words",
    [
        ({"data.y": "sigma_0.5"}, {}, "data.y: no column 'sigma_0.5'"),
        ({}, {"case": 7}, "data.rows: '7' is not one of 1, 2, 3, 4, 5, 6"),
        ({}, {"case": 1}, "1 data point for 2 parameters (c, t0)"),
        ({"error.sigma": 0}, {}, "error.sigma: expected a positive number, got 0"),
        ({"error.sigma": -0.3}, {}, "error.sigma: expected a positive number"),
        ({"infer.c.prior": {"dist": "beta"}}, {}, "infer.c.prior.dist: expected one of"),
        ({"infer.c.start": [5.0]}, {}, "outside the prior support"),
        ({"kind": "scene"}, {}, "kind: expected 'inference'"),
        ({"error.sigmaa": 1}, {}, "error.sigmaa: unknown field"),
        ({}, {"cas": 3}, "unknown parameter 'cas' (did you mean 'case'?)"),
        # a name too long for the system: was an OSError traceback (issue 39's fuzz suite)
        ({"data.file": "9" * 400}, {}, "9" * 400 + ": File name too long"),
    ],
)
def test_bad_specs_are_one_line(tmp_path, changes, overrides, words):
    path = _spec(tmp_path, **changes)
    with pytest.raises(SpecError) as info:
        load_spec(path, overrides)
    msg = _one_line(info.value)
    assert words in msg and msg.startswith(str(path)), msg


def test_nan_or_text_in_the_data_names_the_line(tmp_path):
    path = _spec(tmp_path)
    csv = tmp_path / "table.csv"
    lines = csv.read_text().splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.startswith("1.25,"))
    lines[k] = "1.25,0.303365,0.404578,nan"
    csv.write_text("\n".join(lines) + "\n")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert _one_line(info.value) == (
        f"{csv}:{k + 1}: column 'sigma_0.3': nan is not a finite number"
    )
    lines[k] = "1.25,0.303365,0.404578,abc"
    csv.write_text("\n".join(lines) + "\n")
    with pytest.raises(SpecError, match="'abc' is not a number"):
        load_spec(path)


def test_missing_data_file_and_bad_function(tmp_path):
    path = _spec(tmp_path, **{"data.file": "nope.csv"})
    with pytest.raises(SpecError, match="nope.csv: file not found"):
        load_spec(path)
    path = _spec(tmp_path, **{"model.from.analytic.function": "uncertainty.nope:f"})
    with pytest.raises(SpecError, match="cannot import uncertainty.nope"):
        run_inference(load_spec(path))


@pytest.mark.slow  # ~3 s
def test_a_python_file_function_without_derivatives(tmp_path):
    (tmp_path / "line.py").write_text("def line(x, a, b):\n    return a + b * x\n")
    (tmp_path / "d.csv").write_text("x,y\n0,1.1\n1,2.9\n2,5.2\n3,6.8\n")
    spec = {
        "kind": "inference",
        "data": {"file": "d.csv", "x": "x", "y": "y"},
        "model": {"function": "line.py:line"},
        "infer": {
            "a": {"prior": {"dist": "uniform", "low": -10, "high": 10}},
            "b": {"prior": {"dist": "normal", "mean": 0, "std": 100}},
        },
        "error": {"sigma": 0.2},
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = run_inference(load_spec(path))
    X = np.column_stack([np.ones(4), np.arange(4.0)])
    y = np.array([1.1, 2.9, 5.2, 6.8])
    # least squares, shifted by the weak normal prior on b (std 100: relative effect ~4e-6)
    beta = np.linalg.solve(X.T @ X / 0.04 + np.diag([0, 1e-4]), X.T @ y / 0.04)
    np.testing.assert_allclose(result.map.x, beta, rtol=1e-6)
    assert result.map.converged and result.laplace.available


def test_parse_counts():
    assert parse_counts("1..4") == [1, 2, 3, 4]
    assert parse_counts("2,5") == [2, 5]
    assert parse_counts("3") == [3]
    with pytest.raises(Exception, match="--n"):
        parse_counts("0..2")


def test_design_from_a_spec():
    run = run_design(load_spec(EXAMPLES[0]), counts=[1, 2], etas=[1.0])
    assert [n for _, n, _ in run.designs] == [1, 2]
    (_, _, one), (_, _, two) = run.designs
    assert one.times[0] == pytest.approx(20.0, abs=1e-6) and one.converged  # as late as possible
    assert two.times[1] == pytest.approx(20.0) and abs(two.times[0] - 11.56) < 0.01
    assert run.curve.shape == (1, run.curve_t.size)


def test_fit_curves_are_computed_by_the_driver_not_the_figure():
    """``fit_curves``: the MAP prediction on a dense grid over the data (function models), the
    arrays ``workbench infer --plot`` draws; at the data's x it is the posterior's model."""
    from workbench.analysis.inference import FIT_POINTS, fit_curves

    result = run_inference(load_spec(EXAMPLES[1], {"case": 3}))
    fit = fit_curves(result, reference={"c": 0.106, "t0": 1.0})
    assert [label for label, _ in fit.curves] == ["MAP", "reference"]
    assert fit.x.shape == (FIT_POINTS,) and fit.x[0] < result.spec.x.min()
    assert all(y.shape == fit.x.shape and np.all(np.isfinite(y)) for _, y in fit.curves)
    at_data = result.posterior.model.evaluate(result.map.x[: len(result.spec.names)])
    # linear interpolation error on the grid: h²/8 max|z''|, and |z''| <= g for a falling body
    h = fit.x[1] - fit.x[0]
    error = np.interp(result.spec.x, fit.x, fit.curves[0][1]) - at_data
    assert np.max(np.abs(error)) <= h**2 / 8 * 9.81
