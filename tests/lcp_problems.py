"""Random test problems for the LCP solver (:mod:`reverse.lcp.solve`): frictional contact LCPs
built the
way the reverse stepper builds them, for the tests and ``benchmarks/lcp.py``.

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, SIGGRAPH 2008 (ACM TOG 27(3) 25).
.. [4] Stewart & Trinkle, An implicit time-stepping scheme for rigid body dynamics with inelastic
   collisions and Coulomb friction, IJNME 39 (1996); Anitescu & Potra, Formulating dynamic
   multi-rigid-body contact problems with friction as solvable LCPs, Nonlinear Dynamics 14 (1997).
"""

from __future__ import annotations

import numpy as np

__all__ = ["random_contact_lcp"]


def random_contact_lcp(
    rng: np.random.Generator,
    n_contacts: int,
    *,
    n_bodies: int | None = None,
    n_directions: int = 4,
    mu_range: tuple[float, float] = (0.2, 1.0),
    speed: float = 0.5,
    dt: float = 0.01,
) -> tuple[np.ndarray, np.ndarray]:
    """A random velocity-level frictional contact LCP in the Stewart–Trinkle/Anitescu–Potra form.

    Bodies with random mass and inertia touch the ground or each other at random points; each
    contact has a normal row, ``n_directions`` pyramid friction rows ``D`` (unit tangents spread
    evenly around the normal) and a slack row with Coulomb coefficient ``μ`` ([4]_; [1]_ Eq. 3, 5–6
    in its pyramid form)::

        ⎡w_n⎤   ⎡N A Nᵀ  N A D   0⎤ ⎡f_n⎤   ⎡N u⎤
        ⎢w_t⎥ = ⎢Dᵀ A Nᵀ Dᵀ A D  E⎥ ⎢ β ⎥ + ⎢Dᵀu⎥,   A = dt·M_body⁻¹ blocks of J M⁻¹ Jᵀ,
        ⎣ λ'⎦   ⎣  U     −Eᵀ     0⎦ ⎣ λ ⎦   ⎣ 0 ⎦

    with ``U = diag(μ)``, ``E`` the contact-wise sum of the friction rows and ``u`` the free
    velocity (random body velocities plus a gravity step), so ``n = (2 + n_directions)·n_contacts``
    (rows grouped: all normals, then all friction rows, then all slack rows).

    Parameters
    ----------
    rng : numpy.random.Generator
    n_contacts : int
    n_bodies : int, optional
        Default ``max(1, n_contacts // 4)`` (about four contacts per body, so ``J M⁻¹ Jᵀ`` is rank
        deficient, as for boxes resting on their corners).
    n_directions : int
        Friction directions per contact (4: the usual pyramid).
    mu_range : (float, float)
        Friction coefficients are uniform in this range.
    speed : float
        Standard deviation of the random body velocities, m/s and rad/s (0: bodies at rest, only
        the gravity step pushes them into the contacts — the degenerate resting case).
    dt : float
        Time step, s.

    Returns
    -------
    M : ndarray, shape (n, n)
    q : ndarray, shape (n,)
    """
    nb = max(1, n_contacts // 4) if n_bodies is None else int(n_bodies)
    k = int(n_directions)
    mass = rng.uniform(0.5, 2.0, nb)  # kg
    inertia = mass[:, None] * rng.uniform(0.02, 0.1, (nb, 3))  # kg m², principal, body = world
    minv = np.zeros(6 * nb)  # diagonal of M_body⁻¹ (principal axes = world axes)
    for b in range(nb):
        minv[6 * b : 6 * b + 3] = 1.0 / mass[b]
        minv[6 * b + 3 : 6 * b + 6] = 1.0 / inertia[b]
    vel = rng.normal(0.0, speed, 6 * nb)  # body twists (v, ω), m/s and rad/s
    vel[2::6] -= 9.81 * dt  # gravity impulse on v_z
    N = np.zeros((n_contacts, 6 * nb))
    D = np.zeros((n_contacts * k, 6 * nb))
    for c in range(n_contacts):
        normal = rng.normal(size=3) * np.array([0.3, 0.3, 1.0])
        normal /= np.linalg.norm(normal)
        t1 = np.cross(normal, [1.0, 0.0, 0.0] if abs(normal[0]) < 0.9 else [0.0, 1.0, 0.0])
        t1 /= np.linalg.norm(t1)
        t2 = np.cross(normal, t1)
        angles = 2 * np.pi * np.arange(k) / k
        dirs = np.cos(angles)[:, None] * t1 + np.sin(angles)[:, None] * t2
        a = int(rng.integers(nb))
        pair = [(a, 1.0)]
        if nb > 1 and rng.random() < 0.4:  # body-body contact, else body-ground
            b = int(rng.integers(nb - 1))
            pair.append((b + (b >= a), -1.0))
        for body, sign in pair:
            r = rng.uniform(-0.2, 0.2, 3)  # contact point from the body's COM, m
            sl = slice(6 * body, 6 * body + 6)
            N[c, sl] += sign * np.concatenate([normal, np.cross(r, normal)])
            for j, d in enumerate(dirs):
                D[c * k + j, sl] += sign * np.concatenate([d, np.cross(r, d)])
    A = dt * minv
    Nn = (N * A) @ N.T
    Nd = (N * A) @ D.T
    Dd = (D * A) @ D.T
    E = np.kron(np.eye(n_contacts), np.ones((k, 1)))
    mu = rng.uniform(*mu_range, n_contacts)
    nc, nt = n_contacts, n_contacts * k
    n = nc + nt + nc
    M = np.zeros((n, n))
    M[:nc, :nc] = Nn
    M[:nc, nc : nc + nt] = Nd
    M[nc : nc + nt, :nc] = Nd.T
    M[nc : nc + nt, nc : nc + nt] = Dd
    M[nc : nc + nt, nc + nt :] = E
    M[nc + nt :, :nc] = np.diag(mu)
    M[nc + nt :, nc : nc + nt] = -E.T
    q = np.concatenate([N @ vel, D @ vel, np.zeros(nc)])
    return M, q
