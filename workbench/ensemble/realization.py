"""One realization of a random scene: sampled parameter values and body mass properties.

Draw order (fixed, so that a realization depends only on its generator): first the random scene
parameters in the order the scene declares them, then for each uncertain body in scene order its
mass M, its initial centre of mass R0 and its matrix G. M, R0 and G are independent
(Batou & Soize 2012, §3.1), and the inertia tensor follows from M and G:
J = M (tr(Z) I − Z), Z = L̲ᵀ G L̲, L̲ᵀL̲ = Z̲ = (tr(J̲)/2 I − J̲)/m̲ (Eq. 32, 34, 36, 37), so E[J] = J̲
when E[M] = m̲ and E[G] = I.

Design-driven realizations (global sensitivity, ``workbench sensitivity``): instead of a generator,
realization i takes its inputs from row i of a design on the unit hypercube
(:func:`design_columns` lists the columns, :func:`realization_from_row` maps a row). A random
parameter goes through its law's inverse CDF; a body's mass through the Gamma inverse CDF
(Eq. 17); a centre of mass on a box through the inverse CDFs of its three truncated exponentials
(Eq. 20: three columns); a centre of mass on a ball or hull and a matrix G, sampled by
Metropolis-Hastings, from a generator seeded by their one design coordinate
(``uncertainty.sensitivity.seeded_generator``, which explains why the law is unchanged).

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

__all__ = [
    "Realization",
    "sample_realization",
    "nominal_realization",
    "CALIBRATION_SEED",
    "DesignColumn",
    "design_columns",
    "realization_from_row",
    "parameters_from_row",
]

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


@dataclass(frozen=True)
class DesignColumn:
    """One column of a design on the unit hypercube.

    Attributes
    ----------
    name : str
        ``<parameter>``, ``<body>.mass``, ``<body>.com.x|y|z`` (box), ``<body>.com`` (ball,
        hull: one seeding coordinate), ``<body>.inertia`` (one seeding coordinate).
    kind : str
        ``parameter``, ``mass``, ``com`` or ``inertia``.
    owner : str
        The parameter's or the body's name.
    """

    name: str
    kind: str
    owner: str

    @property
    def part(self) -> str:
        """The input this column belongs to: ``mu``, ``Rb5.mass``, ``Rb5.com``, ``Rb5.inertia``."""
        return self.owner if self.kind == "parameter" else f"{self.owner}.{self.kind}"


def design_columns(scene: Scene) -> list[DesignColumn]:
    """The design columns of ``scene``, in the draw order of the module docstring."""
    cols = [DesignColumn(name, "parameter", name) for name in scene.parameter_distributions]
    for body in scene.uncertain_bodies:
        u = body.uncertainty
        if u.mass is not None:
            cols.append(DesignColumn(f"{body.name}.mass", "mass", body.name))
        if u.com is not None:
            if u.com.domain == "box":
                cols += [DesignColumn(f"{body.name}.com.{a}", "com", body.name) for a in "xyz"]
            else:
                cols.append(DesignColumn(f"{body.name}.com", "com", body.name))
        if u.inertia is not None:
            cols.append(DesignColumn(f"{body.name}.inertia", "inertia", body.name))
    return cols


def realization_from_row(scene: Scene, row: np.ndarray, entropy: int) -> Realization:
    """The realization whose inputs are the design ``row`` (one value in [0, 1) per column of
    :func:`design_columns`), mapped as the module docstring says; ``entropy`` seeds the
    Metropolis-Hastings laws together with their coordinate."""

    columns = design_columns(scene)
    row = np.asarray(row, dtype=float)
    if row.shape != (len(columns),):
        raise ValueError(f"expected a design row of {len(columns)} values, got shape {row.shape}")
    at = {c.name: (k, float(row[k])) for k, c in enumerate(columns)}
    real = parameters_from_row(scene, row)
    for body in scene.uncertain_bodies:
        drawn = _body_from_row(body, at, entropy, scene.base_dir)
        if "G" in drawn:
            real.params[f"{body.name}/G"] = drawn.pop("G")
        real.mass_overrides[body.name] = drawn
    return real


def parameters_from_row(scene: Scene, row: np.ndarray) -> Realization:
    """The random parameters of :func:`realization_from_row` alone (their columns come first):
    each through its law's inverse CDF."""
    from uncertainty import sensitivity as gsa

    real = Realization()
    for k, (name, dist) in enumerate(scene.parameter_distributions.items()):
        value = float(_frozen(_law_key(dist)).ppf(gsa.open_unit(row[k])))
        real.values[name] = value
        real.params[f"{PARAMETERS_GROUP}/{name}"] = np.array(value)
    return real


def _body_from_row(body: Body, at: dict, entropy: int, base_dir: str | None) -> dict:
    from uncertainty import random_body as rb
    from uncertainty import sensitivity as gsa

    props = body.mass_properties
    u = body.uncertainty
    m_bar = props.mass
    J_bar = props.inertia_matrix
    com = np.asarray(props.com, dtype=float)
    mass = m_bar
    if u.mass is not None:  # Eq. (17): Gamma inverse CDF
        mass = float(gsa.gamma_quantile(at[f"{body.name}.mass"][1], m_bar, u.mass.dispersion))
    if u.com is not None:
        domain = _com_domain(body, base_dir)
        if u.com.domain == "box":  # Eq. (20) on a box: one inverse CDF per axis
            lam = _com_lambda(_key(domain.center), _key(domain.size), _key(com))
            coords = [at[f"{body.name}.com.{a}"][1] for a in "xyz"]
            com = gsa.box_com_quantile(coords, domain.center, domain.size, lam)
        else:
            k, coord = at[f"{body.name}.com"]
            com = np.asarray(
                rb.sample_com(gsa.seeded_generator(coord, entropy, k), domain, com), dtype=float
            )
    drawn = {}
    if u.inertia is None:
        inertia = J_bar * (mass / m_bar)  # G = I (Eq. 32), as in sample_body
    else:
        k, coord = at[f"{body.name}.inertia"]
        G = _sample_g(body, gsa.seeded_generator(coord, entropy, k), base_dir)
        inertia = np.asarray(rb.inertia_from_g(G, rb.nominal_z(J_bar, m_bar), mass), dtype=float)
        drawn["G"] = G
    return {"mass": mass, "com": com, "inertia": inertia, **drawn}


def _law_key(dist) -> tuple:
    return tuple(sorted(dist.model_dump(exclude_none=True).items()))


@functools.lru_cache(maxsize=256)
def _frozen(key: tuple):
    """The scipy law of a parameter distribution (cached: freezing one costs ~1 ms, more than
    the rest of a design row's mapping)."""
    from uncertainty.distributions import make_distribution

    return make_distribution(dict(key))


@functools.lru_cache(maxsize=16)
def _com_lambda(center: tuple, size: tuple, r0: tuple) -> np.ndarray:
    """λ_r of Eq. (21)-(22) of [1] on a box (cached: a root search per axis)."""
    from uncertainty import random_body as rb

    lam, _ = rb.com_multipliers(rb.BoxDomain(np.array(center), np.array(size)), np.array(r0))
    return lam


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
