"""One realization of a random scene: sampled parameter values and body mass properties.

Draw order (fixed, so that a realization depends only on its generator): first the random scene
parameters in the order the scene declares them, then for each uncertain body in scene order its
mass M, its initial centre of mass R0 and its matrix G. M, R0 and G are independent
(Batou & Soize 2012, §3.1), and the inertia tensor follows from M and G:
J = M (tr(Z) I − Z), Z = L̲ᵀ G L̲, L̲ᵀL̲ = Z̲ = (tr(J̲)/2 I − J̲)/m̲ (Eq. 32, 34, 36, 37), so E[J] = J̲
when E[M] = m̲ and E[G] = I.

References
----------
.. [1] A. Batou, C. Soize, Rigid multibody system dynamics with uncertain rigid bodies,
       Multibody System Dynamics 27 (2012) 285-319.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from workbench.scene.bodies import shape_hull_vertices
from workbench.scene.model import PARAMETERS_GROUP, Body, Scene

__all__ = ["Realization", "sample_realization", "nominal_realization", "CALIBRATION_SEED"]

#: Seed of the bounded-G calibration (Eq. 42-43 of [1]). Calibration depends only on the model's
#: constants, so every worker computes the same μ and C_G from this fixed seed.
CALIBRATION_SEED = 20120117


@dataclass
class Realization:
    """Values of one realization.

    Attributes
    ----------
    values : dict of str to float
        Sampled scene parameters (substituted for ``${name}``).
    mass_overrides : dict of str to dict
        Per uncertain body: ``mass`` (kg), ``com`` (3,) body frame, ``inertia`` (3, 3).
    params : dict of str to ndarray
        What is stored under ``/params``: ``parameters/<name>`` for sampled parameters and
        ``<body>/G`` (3, 3) for bodies with random inertia (the bodies' realized mass, com and
        inertia are added by the forward run).
    """

    values: dict[str, float] = field(default_factory=dict)
    mass_overrides: dict[str, dict] = field(default_factory=dict)
    params: dict[str, np.ndarray] = field(default_factory=dict)


def nominal_realization(scene: Scene) -> Realization:
    """The deterministic realization: every random quantity at its mean."""
    params = {
        f"{PARAMETERS_GROUP}/{name}": np.array(float(scene.parameters[name]))
        for name in scene.parameter_distributions
    }
    for body in scene.uncertain_bodies:
        if body.uncertainty.inertia is not None:
            params[f"{body.name}/G"] = np.eye(3)  # E[G] = I
    return Realization(params=params)


def sample_realization(scene: Scene, rng: np.random.Generator) -> Realization:
    """Draw one realization of ``scene`` with ``rng`` (see the module docstring for the order)."""
    real = Realization()
    for name, dist in scene.parameter_distributions.items():
        value = float(dist.frozen().rvs(random_state=rng))
        real.values[name] = value
        real.params[f"{PARAMETERS_GROUP}/{name}"] = np.array(value)
    for body in scene.uncertain_bodies:
        drawn = sample_body(body, rng, scene.base_dir)
        if "G" in drawn:
            real.params[f"{body.name}/G"] = drawn.pop("G")
        real.mass_overrides[body.name] = drawn
    return real


def sample_body(body: Body, rng: np.random.Generator, base_dir: str | None = None) -> dict:
    """Realized ``mass``, ``com`` (3,) and ``inertia`` (3, 3) of an uncertain body."""
    # here and below, not at the top: random_body loads scipy.optimize (~1 s), which the nominal
    # run (in the driver) and scenes without uncertain bodies never need
    from uncertainty import random_body as rb

    props = body.mass_properties
    u = body.uncertainty
    m_bar = props.mass
    J_bar = props.inertia_matrix
    r0 = np.asarray(props.com, dtype=float)
    mass = m_bar if u.mass is None else float(rb.sample_mass(rng, m_bar, u.mass.dispersion))
    com = r0
    if u.com is not None:
        com = np.asarray(rb.sample_com(rng, _com_domain(body, base_dir), r0), dtype=float)
    drawn = {}
    if u.inertia is None:
        # deterministic G = I: J scales with the mass, J = M (tr(Z̲) I − Z̲) = (M / m̲) J̲ (Eq. 32)
        inertia = J_bar * (mass / m_bar)
    else:
        G = _sample_g(body, rng, base_dir)
        inertia = np.asarray(rb.inertia_from_g(G, rb.nominal_z(J_bar, m_bar), mass), dtype=float)
        drawn["G"] = G
    return {"mass": mass, "com": com, "inertia": inertia, **drawn}


def _sample_g(body: Body, rng: np.random.Generator, base_dir: str | None) -> np.ndarray:
    from uncertainty import random_body as rb

    spec = body.uncertainty.inertia
    if spec.model == "sg0":
        return np.asarray(rb.sample_sg0(rng, spec.dispersion), dtype=float)
    props = body.mass_properties
    z_bar = rb.nominal_z(props.inertia_matrix, props.mass)
    if spec.z_max is not None:
        z_max = np.asarray(spec.z_max, dtype=float)
    else:  # Eq. (33) of [1] from the body's shape
        z_max = rb.z_max_from_vertices(
            shape_hull_vertices(body.shape, base_dir), np.asarray(props.com)
        )
    ensemble = _bounded_ensemble(spec.lambda_l, spec.lambda_u, _key(z_bar), _key(z_max))
    return np.asarray(ensemble.sample(rng), dtype=float)


def _key(a: np.ndarray) -> tuple:
    return tuple(np.asarray(a, dtype=float).ravel().tolist())


@functools.lru_cache(maxsize=16)
def _bounded_ensemble(lambda_l: float, lambda_u: float, z_bar: tuple, z_max: tuple):
    """The calibrated bounded ensemble of Eq. (41) of [1] (cached: calibration is costly)."""
    from uncertainty import random_body as rb

    zb = np.array(z_bar).reshape(3, 3)
    zm = np.array(z_max).reshape(3, 3)
    ensemble = rb.BoundedGEnsemble(lambda_l, lambda_u, zb, zm)
    ensemble.calibrate(np.random.Generator(np.random.PCG64(CALIBRATION_SEED)))
    return ensemble


def _com_domain(body: Body, base_dir: str | None):
    from uncertainty import random_body as rb

    spec = body.uncertainty.com
    center = np.asarray(
        spec.center if spec.center is not None else body.mass_properties.com, dtype=float
    )
    if spec.domain == "box":
        return rb.BoxDomain(center, np.asarray(spec.size, dtype=float))
    if spec.domain == "ball":
        return rb.BallDomain(center, spec.radius)
    vertices = (
        spec.vertices if spec.vertices is not None else shape_hull_vertices(body.shape, base_dir)
    )
    return rb.ConvexDomain(np.asarray(vertices, dtype=float))
