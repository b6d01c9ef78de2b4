"""``workbench stats`` (``workbench/cli/stats.py``): every table says its units and columns."""

from __future__ import annotations

from tests.conftest import run_main


def test_every_table_row_has_a_unit_and_conv_is_explained(tmp_path):
    out = tmp_path / "rb.h5"
    r = run_main(
        "ensemble", "random_box", "-n", "3", "--seed", "2", "--duration", "0.1", "-o", out, "-q"
    )
    assert r.returncode == 0, r.stderr
    r = run_main("stats", out)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    rows = {line.split()[0]: line for line in lines if line.startswith("  ") and ":" not in line}
    assert rows["box/mass"].endswith(" kg")
    assert rows["box/com[0]"].endswith(" m")
    assert rows["parameters/mu"].endswith("(no unit given)")  # the scene file gives none
    assert rows["omega.x"].endswith(" rad/s")
    assert any("conv(n) =" in line and "m s^0.5" in line for line in lines)
    assert lines[-1].startswith("conv(n): root mean square")
    assert "coefficient of variation" in r.stdout and "confidence band" in r.stdout
