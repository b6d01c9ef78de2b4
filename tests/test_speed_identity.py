"""The shortcuts of the second speed round (issue 17) give the numbers of the plain computations
they replace, bit for bit:

* :func:`reverse.step.islands.island_arrays` (minimum-label propagation) finds the islands of a
  plain union-find, in the same order (ascending bodies, islands by their smallest body);
* :func:`reverse.step.integration.backward_configuration`, which no longer iterates static bodies
  and computes ``L`` for the moving ones only, returns what iterating every body of the scene
  until the largest change is within the tolerance returns (the loop of the first
  implementation, its documented semantics), to the bit, with static bodies among moving ones;
* the batch's lazily made answers (:class:`reverse.step.batched._Results`) and matrices
  (:class:`reverse.step.batched._GroupViews`, :class:`reverse.step.batch_views.FlatViews`) read
  like the
  lists they replaced;
* the records of :func:`reverse.runs.run.run_reverse`, preallocated (fourth round), give the
  trajectory and kinetic energy of the list of states they replaced.

And the fourth round's compiled products (:mod:`reverse.step.assembly_kernel`), which are *not* the
bits of OpenBLAS's: their block form over each row's bodies is their dense form to the bit (so
the batched and one-by-one paths agree to the bit), and both agree with the numpy (BLAS)
products within 1e-12 of the island's largest velocity.
"""

from __future__ import annotations

import numpy as np
import pytest

from reverse.step.dynamics import RigidBodies
from reverse.step.integration import backward_configuration
from reverse.step.islands import find_islands, island_arrays
from tests.unit.reverse.test_orientation import reference_backward_configuration
from workbench.sim.state import State


def _union_find_islands(n, awake, pairs):
    """The reference: a union-find over awake bodies linked by pairs of awake bodies."""
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in np.asarray(pairs, dtype=int).reshape(-1, 2).tolist():
        if a >= 0 and b >= 0 and awake[a] and awake[b]:
            ra, rb = root(a), root(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        if awake[i]:
            groups.setdefault(root(i), []).append(i)
    return [np.array(g) for _, g in sorted(groups.items(), key=lambda kv: min(kv[1]))]


@pytest.mark.parametrize("seed", range(4))
def test_island_arrays_are_the_union_find_islands(seed):
    rng = np.random.default_rng(seed)
    for _ in range(300):
        n = int(rng.integers(0, 80))
        m = int(rng.integers(0, 120))
        awake = rng.random(n) < rng.random()
        pairs = rng.integers(-1, max(n, 1), size=(m, 2)) if n else np.zeros((0, 2), dtype=int)
        want = _union_find_islands(n, awake, pairs)
        got = find_islands(n, awake, pairs)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g, w)
        members, sizes = island_arrays(n, awake, pairs)
        assert members.dtype == np.int64
        assert sizes.sum() == members.size
        flat = np.concatenate(want) if want else np.zeros(0, dtype=int)
        assert np.array_equal(members, flat)


def test_long_chain_island():
    """A chain of 500 bodies linked in a scrambled order: one island (many propagation passes
    would be needed without the pointer jumping; the answer is the same)."""
    n = 500
    rng = np.random.default_rng(3)
    perm = rng.permutation(n)
    pairs = np.column_stack([perm[:-1], perm[1:]])[rng.permutation(n - 1)]
    got = find_islands(n, np.ones(n, dtype=bool), pairs)
    assert len(got) == 1 and np.array_equal(got[0], np.arange(n))


def _random_scene(rng, n, static_share, spin):
    moving = rng.random(n) >= static_share
    mass = np.where(moving, rng.uniform(0.1, 3.0, n), 0.0)
    inertia = np.zeros((n, 3, 3))
    for j in range(n):
        if rng.random() < 0.5:  # a sphere: isotropic (the spelling balls)
            inertia[j] = np.eye(3) * rng.uniform(1e-4, 1e-2)
        else:  # a box: anisotropic, turned
            d = np.diag(rng.uniform(1e-3, 1e-1, 3))
            R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
            inertia[j] = R @ d @ R.T
    rigid = RigidBodies(
        tuple(f"b{j}" for j in range(n)),
        mass,
        inertia,
        np.zeros((n, 3)),
        np.zeros((n, 3)),
    )
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w = rng.normal(size=(n, 3)) * spin
    w[rng.random(n) < 0.3] = 0.0  # bodies at rest
    w[~moving] = rng.normal(size=(int((~moving).sum()), 3))  # ignored for static bodies
    state = State(rng.normal(size=(n, 3)), q, rng.normal(size=(n, 3)), w)
    return rigid, state


@pytest.mark.parametrize("seed", range(6))
def test_backward_configuration_is_the_plain_loop(seed):
    rng = np.random.default_rng(100 + seed)
    dt = 1.0 / 120.0
    checked = 0
    for n, static_share, spin in ((1, 0.0, 5.0), (7, 0.5, 20.0), (40, 0.2, 60.0), (90, 0.9, 5.0)):
        rigid, state = _random_scene(rng, n, static_share, spin)
        # the spheres one ulp from isotropic, so that every moving body is iterated: exactly
        # isotropic ones are solved explicitly (test_orientation's
        # test_isotropic_bodies_are_solved_explicitly), the loop's answer to round-off
        inertia = rigid.inertia.copy()
        iso = np.all(inertia == inertia[:, :1, :1] * np.eye(3), axis=(1, 2))
        inertia[iso, 0, 0] = np.nextafter(inertia[iso, 0, 0], 1.0)
        rigid = RigidBodies(rigid.names, rigid.mass, inertia, rigid.force, rigid.torque)
        got = backward_configuration(state, rigid, dt)
        x, q, w, iters, residual = reference_backward_configuration(state, rigid, dt)
        if not got.converged or got.newton_bodies:
            continue  # Newton took over: not the plain loop's answer (tested elsewhere)
        checked += 1
        assert got.position.tobytes() == x.tobytes()
        assert got.orientation.tobytes() == q.tobytes()
        assert got.angular_velocity.tobytes() == w.tobytes()
        assert got.iterations == iters
        assert got.residual == residual
    assert checked >= 2  # the scenes above converge (a test that cannot fail is no test)


def test_lazy_batch_sequences_read_like_lists():
    from reverse.step.batched import _GroupViews, _Results

    stacked = [np.arange(2 * 3 * 3, dtype=float).reshape(2, 3, 3), np.ones((1, 2, 2))]
    gid = np.array([0, -1, 1, 0])
    gpos = np.array([1, 0, 0, 0])
    views = _GroupViews(stacked, gid, gpos)
    assert len(views) == 4
    assert views[1] is None
    assert np.array_equal(views[0], stacked[0][1]) and np.shares_memory(views[0], stacked[0])
    assert np.array_equal(views[-1], stacked[0][0])
    assert [v is None for v in views] == [False, True, False, False]
    assert np.array_equal(views.posed, [True, False, True, True])
    empty = _Results(3)
    assert list(empty) == [None, None, None]
    with pytest.raises(IndexError):
        empty[3]


def test_flat_views_read_like_matrices():
    from reverse.step.batch_views import FlatViews

    m_k = np.array([2, 0, 3])
    m_off = np.array([0, 4, 4, 13])
    flat = np.arange(13, dtype=float)
    views = FlatViews(flat, m_off, m_k)
    assert len(views) == 3 and views[1] is None
    assert np.array_equal(views[0], [[0, 1], [2, 3]]) and np.shares_memory(views[0], flat)
    assert np.array_equal(views[-1], np.arange(4, 13).reshape(3, 3))
    assert np.array_equal(views.posed, [True, False, True])


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
    from tests.unit.reverse.test_batched import contact_islands, random_problem

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


def test_preallocated_records_are_the_stacked_states():
    from reverse.runs.run import _trajectory

    class _Scene:
        body_names = ("a", "b", "c")

    rng = np.random.default_rng(7)
    n, T = 3, 70  # more records than one kinetic-energy chunk
    q = rng.normal(size=(T, n, 4))
    q /= np.linalg.norm(q, axis=2, keepdims=True)
    states = [State(rng.normal(size=(n, 3)), q[t], rng.normal(size=(n, 3)),
                    rng.normal(size=(n, 3))) for t in range(T)]  # fmt: skip
    rigid = RigidBodies(("a", "b", "c"), np.array([1.0, 0.0, 2.0]),
                        np.stack([np.diag(rng.uniform(0.1, 1, 3)) for _ in range(n)]),
                        np.zeros((n, 3)), np.zeros((n, 3)))  # fmt: skip
    rows = [[0.0] * 10] * T
    fields = ("position", "orientation", "linear_velocity", "angular_velocity")
    stacked = {f: np.stack([getattr(s, f) for s in states]) for f in fields}
    from workbench.sim.observers import kinetic_energy

    orn, lin, ang = (stacked[f] for f in fields[1:])
    whole = kinetic_energy(rigid.mass, rigid.inertia, orn, lin, ang).sum(axis=1)
    a = _trajectory(_Scene, rigid, states, rows, np.arange(T), "ok", "")
    b = _trajectory(_Scene, rigid, stacked, rows, np.arange(T), "ok", "")
    for f in fields:
        assert getattr(a, f).tobytes() == getattr(b, f).tobytes()
    assert a.diagnostics["kinetic_energy"].tobytes() == whole.tobytes()
    assert b.diagnostics["kinetic_energy"].tobytes() == whole.tobytes()


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
