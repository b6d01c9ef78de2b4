"""The compiled products of :mod:`reverse.step.assembly_kernel`, which are *not* the bits of
OpenBLAS's: their block form over each row's bodies is their dense form to the bit (so the
batched and one-by-one paths agree to the bit), both agree with the numpy (BLAS) products within
1e-12 of the island's largest velocity, and the compiled quaternion rows are numpy's to the bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.step.islands import find_islands


def _dense(blocks, gb, n_bodies):
    """Rows given as body blocks (N, 2, 6) on bodies ``gb`` laid out densely (N, 6 n_bodies)."""
    out = np.zeros((len(blocks), 6 * n_bodies))
    for i in range(len(blocks)):
        for s in range(2):
            if gb[i, s] >= 0:
                out[i, 6 * gb[i, s] : 6 * gb[i, s] + 6] = blocks[i, s]
    return out


@pytest.mark.parametrize("seed", range(4))
def test_block_products_are_the_dense_sums_to_the_bit(seed):
    kern = pytest.importorskip("reverse.step.assembly_kernel")
    rng = np.random.default_rng(300 + seed)
    nb = 5  # one island of 5 bodies, rows on one or two of them (either order)
    R = 17
    gb = np.stack([rng.integers(0, nb, R), rng.integers(-1, nb, R)], axis=1)
    gb[gb[:, 0] == gb[:, 1], 1] = -1
    J, W = rng.normal(size=(R, 2, 6)), rng.normal(size=(R, 2, 6))
    W[rng.random(R) < 0.3] = 0.0  # slack rows
    inv_m = rng.uniform(0.5, 3.0, nb)
    inv_I = np.linalg.inv(np.stack([np.diag(rng.uniform(0.01, 0.2, 3)) for _ in range(nb)]))
    A = np.zeros((6 * nb, 6 * nb))
    for b in range(nb):
        A[6 * b : 6 * b + 3, 6 * b : 6 * b + 3] = np.eye(3) * inv_m[b]
        A[6 * b + 3 : 6 * b + 6, 6 * b + 3 : 6 * b + 6] = inv_I[b]
    Jd, Wd = _dense(J, gb, nb), _dense(W, gb, nb)
    M = np.zeros(R * R)
    kern.island_matrices(J, W, gb, np.array([0, R]), inv_m, inv_I, M, np.array([0]))
    assert M.reshape(R, R).tobytes() == kern.dense_jaw(Jd, A, Wd).tobytes()
    V = rng.normal(size=(nb, 6))
    dots = kern.block_dots(J, gb, V)
    assert dots.tobytes() == np.array([kern.dense_dot(r, V.ravel()) for r in Jd]).tobytes()
    z = np.abs(rng.normal(size=R))
    du = kern.impulse_velocity(W, gb, z, inv_m, inv_I, nb)
    ref = kern.dense_matvec(A, kern.dense_matvec(Wd.T, z))
    assert du.ravel().tobytes() == ref.tobytes()
    # and within round-off of numpy's (OpenBLAS) products: a few ulps of the largest term
    big = np.abs(Jd) @ np.abs(A) @ np.abs(Wd).T
    assert np.all(np.abs(M.reshape(R, R) - Jd @ A @ Wd.T) <= 1e-14 * big)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("direction", ["backward", "forward"])
def test_compiled_products_agree_with_blas_within_1e_12(seed, direction, monkeypatch):
    """The islands of test_batched's random problems solved with the compiled products and with
    numpy's: the same branches and LCP statuses, and velocities within 1e-12 of the island's
    largest in all but a few islands (the products differ in rounding order only, a few ulps,
    which the LCP's re-solve scales by its principal block's condition). Measured over the 12
    cases, 258 islands: 252 within 1e-12, 3 within 1e-9 (ill-conditioned blocks), and 3 of the
    forward ones O(1) apart — random friction LCPs with more than one answer, where the last
    bits of M pick which one Lemke ends on; both answers are verified ("solved"). The scenes'
    steps agree within 1e-12 (docs/reverse.md "Cost", fourth round)."""
    pytest.importorskip("numba")
    import reverse.step.dynamics as dynamics
    from reverse.step.batched import solve_islands
    from reverse.step.dynamics import Goals, world_inertia
    from tests.unit.reverse.step.test_batched import contact_islands, random_problem

    rigid, x, q, vel, contacts, goals, attract, rng = random_problem(seed)
    n = len(rigid.mass)
    awake = rigid.moving & (rng.random(n) < 0.85)
    islands = find_islands(n, awake, np.column_stack([contacts.body_a, contacts.body_b]))
    la, lb, c_island = contact_islands(n, islands, contacts)
    keep = [k for k in range(len(islands)) if np.any(c_island == k)]
    backward = direction == "backward"
    kw = dict(
        direction=direction, islands=[islands[k] for k in keep],
        contact_sets=[np.flatnonzero(c_island == k) for k in keep], contacts=contacts,
        in_island_a=la == c_island, in_island_b=lb == c_island, rigid=rigid, position=x,
        inertia_world=world_inertia(rigid.inertia, q), velocity=vel, dt=1e-3,
        goals=goals if backward else Goals.zeros(len(contacts)),
        attract=attract if backward else None,
    )  # fmt: skip
    runs = []
    for compiled in (True, False):
        monkeypatch.setattr(dynamics, "USE_ASSEMBLY_KERNELS", compiled)
        runs.append(solve_islands(**kw))
    solved, close = 0, 0
    for new, old in zip(*runs, strict=True):
        assert new.branch.tolist() == old.branch.tolist()
        assert new.n_rows == old.n_rows
        assert (new.lcp is None) == (old.lcp is None)
        if new.lcp is None:
            continue
        assert new.lcp.status == old.lcp.status  # ("ray": unsolvable either way)
        if new.lcp.status != "solved":
            continue
        scale = max(float(np.max(np.abs(old.velocity))), 1e-300)
        solved += 1
        close += bool(np.max(np.abs(new.velocity - old.velocity)) <= 1e-12 * scale)
    assert solved > 5
    assert close >= solved - 2  # at most two islands per case apart (measured: 0–1 per case)


@pytest.mark.parametrize("n", [1, 5, 300])
def test_compiled_rotations_are_numpys_to_the_bit(n, monkeypatch):
    """quat_multiply and rotation_matrix on rows go through the compiled copies of their
    expressions (reverse.step.assembly_kernel): the numpy path's bits, signed zeros included."""
    pytest.importorskip("numba")
    import reverse.step.dynamics as dynamics

    rng = np.random.default_rng(n)
    a, b = rng.normal(size=(2, n, 4))
    a[rng.random((n, 4)) < 0.2] = 0.0
    a[rng.random((n, 4)) < 0.1] = -0.0
    got = dynamics.quat_multiply(a, b), dynamics.rotation_matrix(a)
    monkeypatch.setattr(dynamics, "USE_ASSEMBLY_KERNELS", False)
    ref = dynamics.quat_multiply(a, b), dynamics.rotation_matrix(a)
    for x, y in zip(got, ref, strict=True):
        assert x.tobytes() == y.tobytes()
