"""Mass properties of primitives against independent integrals, admissibility, principal frames."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from scipy.spatial.transform import Rotation

from workbench.scene import inertia as I


def _mesh_inertia(mesh, mass):
    mesh.density = mass / mesh.volume
    return mesh.moment_inertia


def test_box_matches_mesh_integral():
    he = (0.3, 0.2, 0.1)
    mesh = trimesh.creation.box(extents=[2 * x for x in he])
    assert np.allclose(I.box_inertia(2.0, he), _mesh_inertia(mesh, 2.0), rtol=1e-12)
    assert I.box_volume(he) == pytest.approx(mesh.volume, rel=1e-12)


def test_capsule_matches_fine_mesh_integral():
    r, length, m = 0.1, 0.4, 3.0
    mesh = trimesh.creation.capsule(height=length, radius=r, count=[128, 128])
    # the tessellated capsule is slightly smaller than the true one: compare at 1e-3
    assert np.allclose(I.capsule_inertia(m, r, length), _mesh_inertia(mesh, m), rtol=1e-3)
    assert I.capsule_volume(r, length) == pytest.approx(mesh.volume, rel=1e-3)


def test_cylinder_and_sphere_closed_forms():
    assert np.allclose(
        I.cylinder_inertia(2.0, 0.5, 2.0),
        np.diag([2.0 * (3 * 0.25 + 4) / 12, 2.0 * (3 * 0.25 + 4) / 12, 0.25]),
    )
    assert np.allclose(I.sphere_inertia(5.0, 2.0), np.eye(3) * 8.0)


@pytest.mark.parametrize(
    "J, problem",
    [
        (np.eye(3), None),
        (np.diag([1.0, 1.0, 2.0]), None),  # thin plate: triangle inequality with equality
        (np.diag([1.0, 1.0, 2.0 + 1e-6]), "triangle"),
        (np.diag([1.0, -1.0, 1.0]), "positive definite"),
        (np.array([[1, 0.1, 0], [0, 1, 0], [0, 0, 1.0]]), "symmetric"),
        (np.zeros((3, 3)), "positive definite"),
        (np.full((3, 3), np.nan), "finite"),
        (np.eye(2), "3x3"),
    ],
)
def test_inertia_problem(J, problem):
    got = I.inertia_problem(J)
    if problem is None:
        assert got is None
    else:
        assert problem in got


def test_principal_frame_reconstructs_tensor():
    rng = np.random.default_rng(3)
    R = Rotation.random(random_state=rng).as_matrix()
    J = R @ np.diag([1.0, 2.0, 2.5]) @ R.T
    moments, q = I.principal_frame(J)
    Rp = Rotation.from_quat(q).as_matrix()
    assert np.linalg.det(Rp) == pytest.approx(1.0)
    assert np.allclose(Rp @ np.diag(moments) @ Rp.T, J, atol=1e-14)


def test_principal_frame_keeps_diagonal_axes():
    moments, q = I.principal_frame(np.diag([3.0, 1.0, 2.0]))
    assert np.array_equal(moments, [3.0, 1.0, 2.0])
    assert np.array_equal(q, [0, 0, 0, 1.0])
