"""URDF files are checked input (issue 39, case 1 and item 9): every structural or numeric fault
of a URDF body's file is one line naming the file, the element and what was expected, exit 2,
in ``check`` as in ``run`` and ``ensemble``; a ``file:`` that is a FIFO or a directory says so
instead of "not found".

Fails on the code before issue 39: the faults escaped ``main`` as ``UrdfError`` tracebacks
(raised from ``Scene.links`` while the run size was estimated), and ``nan`` or negative masses
passed ``check`` (``run`` then ended ``ok`` or with a scipy traceback).
"""

from __future__ import annotations

import contextlib
import io
import os

import pytest

from workbench.cli.main import main

GOOD = """<robot name="r">
 <link name="base"><inertial><origin xyz="0 0 0"/><mass value="{mass}"/>
  <inertia ixx="{ixx}" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
  <collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision></link>
 <link name="arm"><inertial><mass value="1"/>
  <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
 <joint name="j" type="continuous"><parent link="base"/><child link="arm"/>
  <axis xyz="0 0 1"/></joint>
</robot>
"""

#: case -> (URDF text, words the one line must hold besides the file's name)
FAULTS = {
    "truncated": (GOOD.format(mass=1, ixx=0.1)[:200], ["not XML"]),
    "no_link": ("<robot name='r'></robot>", ["no <link>"]),
    "two_roots": ("<robot name='r'><link name='a'/><link name='b'/></robot>", ["one root link"]),
    "link_without_name": ("<robot name='r'><link/></robot>", ["<link> without a name"]),
    "undeclared_link": (
        "<robot name='r'><link name='a'/><joint name='j' type='fixed'><parent link='a'/>"
        "<child link='zz'/></joint></robot>",
        ["joint 'j'", "'zz'", "not declared"],
    ),
    "mass_abc": (GOOD.format(mass="abc", ixx=0.1), ["link 'base'", "<mass value='abc'>"]),
    "mass_nan": (GOOD.format(mass="nan", ixx=0.1), ["link 'base'", "finite mass"]),
    "mass_negative": (GOOD.format(mass="-1", ixx=0.1), ["link 'base'", "finite mass"]),
    "inertia_not_positive_definite": (
        GOOD.format(mass=1, ixx=-0.1),
        ["link 'base'", "<inertia>", "positive definite"],
    ),
    "inertia_nan": (GOOD.format(mass=1, ixx="nan"), ["link 'base'", "ixx", "finite"]),
}


def workbench(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, out.getvalue(), err.getvalue()


def scene_with_urdf(folder, urdf_name: str) -> str:
    path = folder / "scene.yaml"
    path.write_text(
        "settings: {dt: 0.01, duration: 0.05}\n"
        "bodies:\n"
        "  - name: robot\n"
        f"    shape: {{type: urdf, file: {urdf_name}, inertia: file}}\n"
        "    position: [0, 0, 1]\n"
    )
    return str(path)


@pytest.mark.parametrize("command", ["check", "run", "ensemble"])
@pytest.mark.parametrize("case", sorted(FAULTS))
def test_a_faulty_urdf_file_is_one_line_naming_file_and_element(tmp_path, case, command):
    text, words = FAULTS[case]
    (tmp_path / f"{case}.urdf").write_text(text)
    scene = scene_with_urdf(tmp_path, f"{case}.urdf")
    extra = {"check": [], "run": ["-o", tmp_path / "o.h5", "-q"]}.get(
        command, ["-n", "2", "-o", tmp_path / "o.h5", "-q"]
    )
    rc, out, err = workbench(command, scene, *extra)
    assert rc == 2, (rc, out, err)
    assert len(err.strip().splitlines()) == 1, err
    for word in [f"{case}.urdf", *words]:
        assert word in err, (word, err)
    assert not (tmp_path / "o.h5").exists()


def test_the_good_urdf_of_these_cases_runs(tmp_path):
    (tmp_path / "good.urdf").write_text(GOOD.format(mass=1, ixx=0.1))
    rc, out, err = workbench("run", scene_with_urdf(tmp_path, "good.urdf"), "-o", tmp_path / "o.h5")
    assert rc == 0, err


def test_a_zero_mass_link_stays_pybullets_static_link(tmp_path):
    """Mass 0 is how URDF files (pybullet_data's plane.urdf among 17 links) say "static": kept."""
    (tmp_path / "z.urdf").write_text(GOOD.format(mass=0, ixx=0.0))
    rc, out, err = workbench("check", scene_with_urdf(tmp_path, "z.urdf"))
    assert rc == 0, err


@pytest.mark.parametrize("kind", ["fifo", "directory"])
@pytest.mark.parametrize("shape", ["urdf", "mesh"])
def test_a_file_that_is_no_regular_file_is_named_for_what_it_is(tmp_path, kind, shape):
    name = "thing.urdf" if shape == "urdf" else "thing.obj"
    if kind == "fifo":
        os.mkfifo(tmp_path / name)
    else:
        (tmp_path / name).mkdir()
    mass = "" if shape == "urdf" else "\n    mass: 1"
    (tmp_path / "s.yaml").write_text(
        f"bodies:\n  - name: b\n    shape: {{type: {shape}, file: {name}}}{mass}\n"
    )
    rc, out, err = workbench("check", tmp_path / "s.yaml")
    assert rc == 2, err
    what = "a FIFO" if kind == "fifo" else "a directory"
    assert f"'{name}' is {what}, expected a regular file" in err, err
