"""Hostile scene input (issue 21, items 1, 4 and 5): every bad scene gives one line and exit 2,
a run never ends ``ok`` with a state that is not a motion, oversized runs are refused before
they allocate, and a fuzz over mutated shipped scenes finds no traceback, hang or memory blow-up.

The fuzz runs ``WORKBENCH_FUZZ_EXAMPLES`` cases of ``workbench check`` (default 150, a few
seconds) and a tenth as many of ``workbench run`` with a tiny duration; set it to 1000 or more
for a long run outside CI.
"""

from __future__ import annotations

import contextlib
import copy
import io
import os
import resource
import shutil
import time

import h5py
import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import SCENES
from workbench.cli.main import main
from workbench.scene.loader import load_scene
from workbench.sim import forward
from workbench.sim.forward import run_scene

MESH = SCENES / "meshes" / "tumbler.obj"


def workbench(*args) -> tuple[int, str, str]:
    """``workbench ARGS`` in this process: (exit status, stdout, stderr). Anything but a
    :class:`~workbench.errors.WorkbenchError` escapes ``main`` and fails the test."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, out.getvalue(), err.getvalue()


def refused(*args) -> str:
    """The one line of a command that must exit 2."""
    rc, out, err = workbench(*args)
    assert rc == 2, (rc, out, err)
    assert len(err.strip().splitlines()) == 1, err
    return err.strip()


def sphere(**extra) -> dict:
    return {"name": "ball", "shape": {"type": "sphere", "radius": 0.1}, "mass": 1.0, **extra}


# --------------------------------------------------------------------------------------------
# Item 1: the YAML alias bomb and deep nesting, through the command line


def test_alias_bomb_and_deep_nesting_are_one_line_errors(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(
        "a0: &a0 [x, x]\n"
        + "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 10))
        + "bodies: []\n"
    )
    deep = tmp_path / "deep.yaml"
    deep.write_text("bodies: " + "[" * 10_000 + "]" * 10_000 + "\n")
    t0 = time.perf_counter()
    for command, *out in (("check",), ("run", "-o", tmp_path / "b.h5")):
        line = refused(command, bomb, *out)
        assert f"{bomb}:6: a5[3]: this alias expands the document" in line
        line = refused(command, deep, *out)
        assert f"{deep}:1: bodies[0][0]" in line and "nested more than 64 levels deep" in line
    assert time.perf_counter() - t0 < 5.0
    assert not (tmp_path / "b.h5").exists()


# --------------------------------------------------------------------------------------------
# Item 4: mass properties that are not physical; runs that go non-finite never end `ok`


def test_mesh_scaled_to_overflow_is_refused_naming_the_body(write_scene, tmp_path):
    shutil.copy(MESH, tmp_path / "tumbler.obj")
    path = write_scene(
        {
            "bodies": [
                {
                    "name": "m",
                    "shape": {"type": "mesh", "file": "tumbler.obj", "scale": 1.0e200},
                    "density": 1000,
                }
            ]
        }
    )
    line = refused("check", path)
    assert f"{path}:2: bodies[0]: mass: expected a finite positive mass, got nan kg" in line
    assert "mesh 'tumbler.obj' at scale 1e+200" in line
    assert refused("run", path, "-o", tmp_path / "m.h5") == line.replace("check", "run")
    assert not (tmp_path / "m.h5").exists()


@pytest.mark.parametrize(
    ("shape", "given", "expected"),
    [
        ({"type": "sphere", "radius": 1e200}, {"mass": 1}, "inertia: expected finite entries"),
        (
            {"type": "box", "size": [1e200, 1e200, 1e200]},
            {"density": 1e300},
            "mass: expected a finite positive mass, got inf kg",
        ),
        (
            {"type": "sphere", "radius": 1e-200},
            {"mass": 1},
            "inertia: expected a positive definite matrix, got all zeros",
        ),
        (
            {"type": "cylinder", "radius": 1e-160, "length": 1e-160},
            {"density": 1},
            "mass: expected a finite positive mass, got 0 kg",
        ),
    ],
)
def test_overflowing_or_vanishing_mass_properties_are_refused(write_scene, shape, given, expected):
    path = write_scene({"bodies": [{"name": "b", "shape": shape, **given}]})
    line = refused("check", path)
    assert f"bodies[0]: {expected}" in line and f"the {shape['type']}" in line


def test_a_saturated_state_ends_nonfinite_not_ok(write_scene, tmp_path):
    """A force of 1e308 N: PyBullet does not overflow to inf but parks the body at 1e30 m, and
    the run used to end `ok` there. Now it stops at the first such record, keeps those before
    and exits 1."""
    scene = load_scene(
        write_scene(
            {
                "gravity": [0, 0, 0],
                "settings": {"duration": 0.1},
                "bodies": [sphere(name="calm", position=[1, 0, 0]), sphere(force=[1e308, 0, 0])],
            }
        )
    )
    traj = run_scene(scene)
    assert traj.status == "nonfinite"
    assert "diverged state (a coordinate beyond 1e+15 m) of body 'ball'" in traj.message
    assert 0 < traj.n_times < 25
    assert np.all(np.abs(traj.position) <= forward.MAX_COORDINATE)
    out = tmp_path / "f.h5"
    rc, _, err = workbench("run", scene.source, "-o", out, "-q")
    assert rc == 1 and len(err.strip().splitlines()) == 1 and "'ball'" in err
    with h5py.File(out) as f:
        assert f["status"][0].decode() == "nonfinite"
        assert f["recorded"][0] == traj.n_times


def test_an_initial_state_beyond_pybullets_range_is_a_scene_error(write_scene, tmp_path):
    """A centre of mass at 1e308 m puts the body at PyBullet's 1e30 from the first record: there
    is nothing to keep, so it is the scene's error (it used to run `ok` at 1e30 m)."""
    calm = sphere(name="calm", position=[1, 0, 0])
    path = write_scene({"bodies": [calm, sphere(com=[0, 0, 1e308])]})
    line = refused("run", path, "-o", tmp_path / "c.h5")
    assert line == (
        f"workbench run: {path}: bodies[1]: its initial state in PyBullet is a diverged state "
        "(a coordinate beyond 1e+15 m); expected a centre of mass within 1e+15 m and finite "
        "velocities"
    )
    assert not (tmp_path / "c.h5").exists()


# --------------------------------------------------------------------------------------------
# Item 5: step counts and record memory, gravity, URDF files


def test_a_tiny_dt_is_refused_with_the_numbers_before_allocating(write_scene, tmp_path):
    path = write_scene({"settings": {"dt": 1e-12, "duration": 5.0}, "bodies": [sphere()]})
    t0 = time.perf_counter()
    for command in ("check", "run"):
        line = refused(command, path)
        assert (
            "settings: dt 1e-12 s over 5 s is 5e+12 steps (about 579 days at the measured " in line
        )
        assert line.endswith("the limit is 1e+08 (about 16.7 minutes); pass --force to run anyway")
    assert time.perf_counter() - t0 < 5.0
    line = refused("run", path, "--dt", "1e-3", "--duration", "1e6", "-o", tmp_path / "x.h5")
    assert "is 1e+09 steps" in line
    line = refused("run", path, "--dt", "1e-4", "--duration", "1e4")  # 1e8 steps: records
    assert "1e+08 records (every 1 of 1e+08 steps) of 1 body take 9.69 GiB" in line
    assert "raise settings.record_every; pass --force" in line
    line = refused("check", path, "--set", "x=1")  # parameters are checked before the size
    assert "unknown parameter 'x'" in line


def test_force_runs_past_the_limits(write_scene, tmp_path, monkeypatch):
    monkeypatch.setattr(forward, "MAX_STEPS", 10)
    path = write_scene({"settings": {"dt": 0.01, "duration": 0.2}, "bodies": [sphere()]})
    assert "is 20 steps" in refused("run", path, "-o", tmp_path / "a.h5")
    assert workbench("check", path, "--force")[0] == 0
    rc, _, err = workbench("run", path, "--force", "-o", tmp_path / "a.h5", "-q")
    assert (rc, err) == (0, "")
    with h5py.File(tmp_path / "a.h5") as f:
        assert f["recorded"][0] == 21


def test_step_counts_beyond_2_pow_53_are_refused_even_forced(write_scene):
    path = write_scene({"settings": {"dt": 1e-300, "duration": 1e300}, "bodies": [sphere()]})
    line = refused("check", path, "--force")
    assert "settings: dt 1e-300 s over 1e+300 s is inf steps; expected at most 2^53" in line


def test_gravity_is_bounded(write_scene):
    path = write_scene({"gravity": [0, 0, 1e308], "bodies": [sphere()]})
    line = refused("check", path)
    assert f"{path}:1: gravity: a gravity of at most 10000 m/s^2" in line
    assert "got magnitude 1e+308" in line
    ok = write_scene({"gravity": [0, 6e3, -8e3], "bodies": [sphere()]}, name="ok.yaml")
    assert workbench("check", ok)[0] == 0


def test_files_that_are_not_urdf_are_refused_at_check(write_scene, tmp_path):
    (tmp_path / "text.urdf").write_text("hello\n")
    (tmp_path / "mesh.urdf").write_text("<mesh/>\n")
    for name, expected in (
        ("text.urdf", "'text.urdf' is not a URDF file: not XML (syntax error: line 1, column 0)"),
        (
            "mesh.urdf",
            "'mesh.urdf' is not a URDF file: its root element is <mesh>, expected <robot>",
        ),
        ("none.urdf", "URDF file 'none.urdf' not found"),
    ):
        path = write_scene({"bodies": [{"name": "r", "shape": {"type": "urdf", "file": name}}]})
        assert f"bodies[0]: {expected}" in refused("check", path)


def test_a_urdf_pybullet_cannot_load_is_one_line_at_run(write_scene, tmp_path, capfd):
    (tmp_path / "bad.urdf").write_text(
        '<?xml version="1.0"?>\n<robot name="x"><link name="a"><inertial><mass value="1"/>'
        "</inertial></link></robot>\n"
    )
    path = write_scene(
        {
            "settings": {"duration": 0.01},
            "bodies": [{"name": "r", "shape": {"type": "urdf", "file": "bad.urdf"}}],
        }
    )
    # its root is <robot>: only PyBullet knows more, and check asks it (for the overlap of the
    # bodies in their starting state), so check refuses what run would
    rc, _, err = workbench("check", path)
    assert rc == 2 and "PyBullet cannot load the URDF" in err and len(err.strip().splitlines()) == 1
    capfd.readouterr()
    rc, _, err = workbench("run", path, "-o", tmp_path / "r.h5")
    assert rc == 2
    assert err.strip() == (
        f"workbench run: {path}: bodies.r.shape.file: PyBullet cannot load the URDF "
        f"'{tmp_path / 'bad.urdf'}': failed to parse link"
    )
    captured = capfd.readouterr()  # PyBullet's own b3Error lines went into the message
    assert "b3Error" not in captured.out + captured.err
    assert not (tmp_path / "r.h5").exists()


# --------------------------------------------------------------------------------------------
# Fuzz: mutated shipped scenes through `workbench check` (and a few `run`s)

#: Cases of the fuzz (``workbench check``); the runs are a tenth of it.
FUZZ_EXAMPLES = int(os.environ.get("WORKBENCH_FUZZ_EXAMPLES", "150"))

#: Longest a case may take, s: the slowest legitimate check reads a mesh (~0.1 s); a hang (the
#: alias bomb ran for minutes) passes it by far, a loaded CI machine does not.
CASE_SECONDS = 10.0

#: Largest growth of this process's peak memory over the fuzz, bytes (the alias bomb took 2.2 GB
#: and rising; the fuzz's own documents are a few KB).
FUZZ_MEMORY = 500 * 2**20

SHIPPED = [
    p
    for p in sorted(SCENES.glob("*.yaml"))
    if isinstance(d := yaml.safe_load(p.read_text()), dict) and "bodies" in d
]

HOSTILE_VALUES = [
    1e308,
    -1e308,
    1e-308,
    5e-324,
    1e200,
    -1e-200,
    0,
    0.0,
    -1,
    2**64,
    10**400,
    float("inf"),
    float("-inf"),
    float("nan"),
    True,
    None,
    "",
    "ü",
    "球体",
    "\u202e",
    "\U0001f4a5",
    "\x00",
    "${g}",
    "${nope}",
    "${",
    "$",
    "a" * 500,
    [],
    {},
    [1, 2],
    [0, 0, 0, 0],
    [[1, 2, 3]] * 3,
    {"type": "sphere"},
    {"type": "mesh", "file": "../../../etc/passwd"},
    {"type": "urdf", "file": "scene.yaml"},
    {"type": "urdf", "file": "cube_small.urdf"},
    {"select": "a", "from": {"a": 1}},
    "sphere",
    "world",
    "parameters",
    1e-12,
    1e12,
    3,
]

#: Factors a number of a shipped scene is multiplied by: extreme but often valid scenes, so the
#: fuzz also reaches the physics (runs) and the mass properties.
SCALES = [1e-300, 1e-12, 1e-3, 0.5, -1, 2, 1e3, 1e12, 1e300]

TEXT_MUTATIONS = [
    lambda t, i: t[:i],  # truncated
    lambda t, i: t[:i] + "\ufffd" + t[i:],
    lambda t, i: t[:i] + ": [" + t[i:],
    lambda t, i: t[:i] + "&a " + t[i:],
    lambda t, i: t[:i] + "*a" + t[i:],
    lambda t, i: t[:i] + "!!python/object:os.system " + t[i:],
    lambda t, i: (
        "x0: &x0 [1, 1, 1, 1]\n"
        + "".join(f"x{k}: &x{k} [{', '.join([f'*x{k - 1}'] * 8)}]\n" for k in range(1, 2 + i % 8))
        + t
    ),
    lambda t, i: "deep: " + "[" * (10 + i % 200) + "]" * (10 + i % 200) + "\n" + t,
    lambda t, i: t + "\nbodies: []\n",  # duplicate key
    lambda t, i: "%YAML 1.1\n---\n" + t + "\n---\nbodies: []\n",  # two documents
    lambda t, i: t.replace(":", ": &r [*r]", 1),
    lambda t, i: t.replace("\n", "\r\n"),
    lambda t, i: t.encode("utf-16").decode("latin-1"),
]


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, path + (i,))


def _replace(node, path, value):
    if not path:
        return value
    node[path[0]] = _replace(node[path[0]], path[1:], value)
    return node


@st.composite
def hostile_scene(draw) -> tuple[str, str]:
    """(name of the shipped scene, mutated YAML text)."""
    source = draw(st.sampled_from(SHIPPED))
    data = yaml.safe_load(source.read_text())
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(data))
        path = paths[draw(st.integers(0, len(paths) - 1))]
        value = draw(
            st.one_of(
                st.sampled_from(HOSTILE_VALUES),
                st.floats(allow_nan=True, allow_infinity=True),
                st.text(max_size=20),
                st.lists(st.floats(-1e300, 1e300), max_size=5),
                st.just("delete"),
                st.just("scale"),
                st.just("scale"),
            )
        )
        if isinstance(value, str) and value == "scale":
            old = data
            for p in path:
                old = old[p]
            if isinstance(old, (int, float)) and not isinstance(old, bool):
                data = _replace(data, path, old * draw(st.sampled_from(SCALES)))
        elif isinstance(value, str) and value == "delete" and path:
            parent = data
            for p in path[:-1]:
                parent = parent[p]
            del parent[path[-1]]
        else:  # a copy: the values of HOSTILE_VALUES are shared between cases
            data = _replace(data, path, copy.deepcopy(value))
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    if draw(st.integers(0, 2)) == 0:  # a third of the cases also mutate the text
        mutate = draw(st.sampled_from(TEXT_MUTATIONS))
        text = mutate(text, draw(st.integers(0, max(0, len(text) - 1))))
    return source.name, text


#: How the fuzz cases ended: (command, exit status) -> count, printed after the fuzz (``-s``).
TALLY: dict = {}


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory):
    """A folder for the mutated scenes (with the shipped meshes), and the peak memory before."""
    folder = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(SCENES / "meshes", folder / "meshes")  # mesh_tumble.yaml's mesh
    yield folder, _peak_rss()
    print("\nfuzz cases by (command, exit status):", dict(sorted(TALLY.items())))


def _case(fuzz, name: str, text: str, *args) -> int:
    """Write ``text`` as ``name`` and run ``workbench ARGS[0] FILE ARGS[1:]`` on it: exit 0, 2
    with one line naming the file (or 1 for a run that stopped), in bounded time and memory.
    Returns the exit status."""
    folder, rss0 = fuzz
    path = folder / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    t0 = time.perf_counter()
    rc, _, err = workbench(args[0], path, *args[1:])
    assert time.perf_counter() - t0 < CASE_SECONDS, (name, text[:300])
    assert rc in ((0, 2) if args[0] == "check" else (0, 1, 2)), (rc, err)
    if rc != 0:  # a user error or a stopped run: one line naming the file
        assert len(err.strip().splitlines()) == 1 and str(path) in err, err
    grown = _peak_rss() - rss0
    assert grown < FUZZ_MEMORY, f"peak memory grew by {grown / 2**20:.0f} MiB"
    TALLY[(args[0], rc)] = TALLY.get((args[0], rc), 0) + 1
    return rc


FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    derandomize=True,  # the same cases every run
    deadline=None,  # time is bounded per case by CASE_SECONDS (hypothesis's would be flaky)
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.mark.slow  # ~5 s
@FUZZ
@given(case=hostile_scene())
def test_fuzz_check_never_raises_hangs_or_bloats(fuzz_dir, case):
    _case(fuzz_dir, *case, "check")


@settings(FUZZ, max_examples=max(5, FUZZ_EXAMPLES // 10))
@given(case=hostile_scene())
def test_fuzz_run_never_raises(fuzz_dir, case):
    out = fuzz_dir[0] / "out.h5"
    out.unlink(missing_ok=True)
    if _case(fuzz_dir, *case, "run", "--duration", "0.02", "-q", "-o", out) == 0:
        with h5py.File(out) as f:  # `ok` only with a motion: finite, within PyBullet's range
            assert f["status"][0].decode() == "ok"
            x = f["states/position"][0, : f["recorded"][0]]
            assert np.all(np.abs(x) <= forward.MAX_COORDINATE), np.abs(x).max()


def _peak_rss() -> int:
    """Peak resident memory of this process, bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_an_interpenetrating_start_is_warned_about(tmp_path, capsys):
    """A ball sunk 5 cm into the ground: check and run say so on stderr (and run goes ahead,
    recording the depth); a scene that only touches says nothing."""
    sunk = tmp_path / "sunk.yaml"
    sunk.write_text(
        "settings: {dt: 1.0e-3, duration: 0.02}\n"
        "bodies:\n"
        "  - {name: ground, shape: {type: plane}, fixed: true}\n"
        "  - {name: ball, shape: {type: sphere, radius: 0.1}, mass: 1, position: [0, 0, 0.05]}\n"
    )
    out = tmp_path / "sunk.h5"
    for argv in (["check", str(sunk)], ["run", str(sunk), "-q", "-o", str(out)]):
        capsys.readouterr()
        assert main(argv) == 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "bodies 'ball' and 'ground' overlap by 0.05 m" in err[0]
    with h5py.File(out) as f:
        assert f.attrs["start_overlap"] == pytest.approx(0.05, abs=1e-6)
    touching = tmp_path / "touching.yaml"
    touching.write_text(sunk.read_text().replace("0.05]", "0.1]"))
    assert main(["check", str(touching)]) == 0
    assert capsys.readouterr().err == ""
