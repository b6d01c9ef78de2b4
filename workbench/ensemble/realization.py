"""One realization of a random scene: sampled parameter values and body mass properties.

Draw order (fixed, so that a realization depends only on its generator): first the random scene
parameters in the order the scene declares them, then for each uncertain body in scene order its
mass M, its initial centre of mass R0 and its matrix G. A URDF body is a chain of such parts: its
uncertain links in PyBullet's link order (the base, index -1, first when it is random; then
links 0, 1, ..., depth first in file order, :mod:`workbench.scene.urdf`), each drawing M, R0, G
in turn with the link's URDF ``<inertial>`` as its nominal values and its link frame as the
body frame. M, R0 and G are independent
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

from workbench.scene.bodies import MassProperties, shape_hull_vertices, urdf_link_hull_vertices
from workbench.scene.model import PARAMETERS_GROUP, Body, Scene
from workbench.scene.random_inputs import LinkUncertainty
from workbench.scene.urdf_body import LinkInertial, RandomLink

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
        Per uncertain body: ``mass`` (kg), ``com`` (3,) body frame, ``inertia`` (3, 3); for a
        URDF body these are its base link's (when random), and ``links`` maps the name of each
        other random link to its ``mass``, ``com`` (3,) and ``inertia`` (3, 3) in the link frame
        (:class:`~workbench.sim.engine.Engine`).
    params : dict of str to ndarray
        What is stored under ``/params``: ``parameters/<name>`` for sampled parameters,
        ``<body>/G`` (3, 3) for bodies with random inertia (the bodies' realized mass, com and
        inertia are added by the forward run), and for each random link of a URDF body other
        than its base ``<body>/<link>/mass``, ``com``, ``inertia`` and (random inertia) ``G``.
    """

    values: dict[str, float] = field(default_factory=dict)
    mass_overrides: dict[str, dict] = field(default_factory=dict)
    params: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class _Part:
    """One random rigid part: a body, or one uncertain link of a URDF body (``link``)."""

    body: Body
    link: RandomLink | None = None

    @property
    def key(self) -> str:
        """``<body>`` for a body or a URDF base, ``<body>/<link>`` for another link: the prefix
        of its ``/params`` keys and the owner of its design columns."""
        if self.link is None or self.link.is_base:
            return self.body.name
        return f"{self.body.name}/{self.link.name}"

    @property
    def props(self) -> MassProperties | LinkInertial:
        return self.body.mass_properties if self.link is None else self.link.props

    @property
    def law(self) -> LinkUncertainty:
        return self.body.uncertainty if self.link is None else self.link.uncertainty

    def hull(self, base_dir: str | None) -> np.ndarray:
        """Vertices (k, 3) of the default centre-of-mass domain and Z bound (Eq. 33 of [1]):
        the body's shape, or a URDF link's collision geometries in its link frame."""
        if self.link is None:
            return shape_hull_vertices(self.body.shape, base_dir)
        return _link_hull(self.link.collisions)


@functools.lru_cache(maxsize=64)
def _link_hull(collisions: tuple) -> np.ndarray:
    """A link's hull vertices (cached: its meshes are read once per process)."""
    return urdf_link_hull_vertices(collisions)


def _parts(scene: Scene) -> list[_Part]:
    """The random parts of ``scene`` in draw order (module docstring)."""
    out: list[_Part] = []
    for body in scene.uncertain_bodies:
        if body.shape.type == "urdf":
            out += [_Part(body, link) for link in body.random_links]
        else:
            out.append(_Part(body))
    return out


def _record(real: Realization, part: _Part, drawn: dict) -> None:
    """Put a part's realized values where the engine and the store find them (``Realization``)."""
    G = drawn.pop("G", None)
    over = real.mass_overrides.setdefault(part.body.name, {})
    if part.key == part.body.name:  # the forward run records mass, com and inertia
        over.update(drawn)
    else:
        over.setdefault("links", {})[part.link.name] = drawn
        real.params[f"{part.key}/mass"] = np.array(float(drawn["mass"]))
        real.params[f"{part.key}/com"] = np.asarray(drawn["com"], dtype=float).copy()
        real.params[f"{part.key}/inertia"] = np.asarray(drawn["inertia"], dtype=float).copy()
    if G is not None:
        real.params[f"{part.key}/G"] = G


def nominal_realization(scene: Scene) -> Realization:
    """The deterministic realization: every random quantity at its mean (its ``params`` have
    the keys of every sampled realization: the store's schema comes from the nominal run)."""
    params = {
        f"{PARAMETERS_GROUP}/{name}": np.array(float(scene.parameters[name]))
        for name in scene.parameter_distributions
    }
    real = Realization(params=params)
    for part in _parts(scene):
        if part.key == part.body.name:  # a body or a URDF base: the forward run records it
            if part.law.inertia is not None:
                params[f"{part.key}/G"] = np.eye(3)  # E[G] = I
            continue
        props = part.props
        nominal = {
            "mass": props.mass,
            "com": np.asarray(props.com, dtype=float),
            "inertia": props.inertia_matrix,
        }
        if part.law.inertia is not None:
            nominal["G"] = np.eye(3)
        _record(real, part, nominal)
    return real


def sample_realization(scene: Scene, rng: np.random.Generator) -> Realization:
    """Draw one realization of ``scene`` with ``rng`` (see the module docstring for the order)."""
    real = Realization()
    for name, dist in scene.parameter_distributions.items():
        value = float(dist.frozen().rvs(random_state=rng))
        real.values[name] = value
        real.params[f"{PARAMETERS_GROUP}/{name}"] = np.array(value)
    for part in _parts(scene):
        _record(real, part, _sample_part(part, rng, scene.base_dir))
    return real


@dataclass(frozen=True)
class DesignColumn:
    """One column of a design on the unit hypercube.

    Attributes
    ----------
    name : str
        ``<parameter>``, ``<part>.mass``, ``<part>.com.x|y|z`` (box), ``<part>.com`` (ball,
        hull: one seeding coordinate), ``<part>.inertia`` (one seeding coordinate); a part is a
        body (or a URDF body's base) by its name, or a URDF link as ``<body>/<link>``.
    kind : str
        ``parameter``, ``mass``, ``com`` or ``inertia``.
    owner : str
        The parameter's or the part's name (links are their own groups).
    """

    name: str
    kind: str
    owner: str

    @property
    def part(self) -> str:
        """The input this column belongs to: ``mu``, ``Rb5.mass``, ``Rb5.com``, ``Rb5.inertia``,
        ``arm/link_3.mass``."""
        return self.owner if self.kind == "parameter" else f"{self.owner}.{self.kind}"


def design_columns(scene: Scene) -> list[DesignColumn]:
    """The design columns of ``scene``, in the draw order of the module docstring."""
    cols = [DesignColumn(name, "parameter", name) for name in scene.parameter_distributions]
    for part in _parts(scene):
        u, key = part.law, part.key
        if u.mass is not None:
            cols.append(DesignColumn(f"{key}.mass", "mass", key))
        if u.com is not None:
            if u.com.domain == "box":
                cols += [DesignColumn(f"{key}.com.{a}", "com", key) for a in "xyz"]
            else:
                cols.append(DesignColumn(f"{key}.com", "com", key))
        if u.inertia is not None:
            cols.append(DesignColumn(f"{key}.inertia", "inertia", key))
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
    for part in _parts(scene):
        _record(real, part, _part_from_row(part, at, entropy, scene.base_dir))
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


def _part_from_row(part: _Part, at: dict, entropy: int, base_dir: str | None) -> dict:
    from uncertainty import random_body as rb
    from uncertainty import sensitivity as gsa

    props, u, key = part.props, part.law, part.key
    m_bar = props.mass
    J_bar = props.inertia_matrix
    com = np.asarray(props.com, dtype=float)
    mass = m_bar
    if u.mass is not None:  # Eq. (17): Gamma inverse CDF
        mass = float(gsa.gamma_quantile(at[f"{key}.mass"][1], m_bar, u.mass.dispersion))
    if u.com is not None:
        domain = _com_domain(part, base_dir)
        if u.com.domain == "box":  # Eq. (20) on a box: one inverse CDF per axis
            lam = _com_lambda(_key(domain.center), _key(domain.size), _key(com))
            coords = [at[f"{key}.com.{a}"][1] for a in "xyz"]
            com = gsa.box_com_quantile(coords, domain.center, domain.size, lam)
        else:
            k, coord = at[f"{key}.com"]
            com = np.asarray(
                rb.sample_com(gsa.seeded_generator(coord, entropy, k), domain, com), dtype=float
            )
    drawn = {}
    if u.inertia is None:
        inertia = J_bar * (mass / m_bar)  # G = I (Eq. 32), as in _sample_part
    else:
        k, coord = at[f"{key}.inertia"]
        G = _sample_g(part, gsa.seeded_generator(coord, entropy, k), base_dir)
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
    """Realized ``mass``, ``com`` (3,) and ``inertia`` (3, 3) (and ``G`` for a random inertia)
    of an uncertain body that is one rigid part (not a URDF body)."""
    return _sample_part(_Part(body), rng, base_dir)


def _sample_part(part: _Part, rng: np.random.Generator, base_dir: str | None) -> dict:
    """Realized ``mass``, ``com`` (3,) and ``inertia`` (3, 3), and ``G`` (3, 3) for a random
    inertia, of one random part: M (Eq. 17 of [1]), then R0 (Eq. 20), then G (Eq. 36-41)."""
    # here and below, not at the top: random_body loads scipy.optimize (~1 s), which the nominal
    # run (in the driver) and scenes without uncertain bodies never need
    from uncertainty import random_body as rb

    props, u = part.props, part.law
    m_bar = props.mass
    J_bar = props.inertia_matrix
    r0 = np.asarray(props.com, dtype=float)
    mass = m_bar if u.mass is None else float(rb.sample_mass(rng, m_bar, u.mass.dispersion))
    com = r0
    if u.com is not None:
        com = np.asarray(rb.sample_com(rng, _com_domain(part, base_dir), r0), dtype=float)
    drawn = {}
    if u.inertia is None:
        # deterministic G = I: J scales with the mass, J = M (tr(Z̲) I − Z̲) = (M / m̲) J̲ (Eq. 32)
        inertia = J_bar * (mass / m_bar)
    else:
        G = _sample_g(part, rng, base_dir)
        inertia = np.asarray(rb.inertia_from_g(G, rb.nominal_z(J_bar, m_bar), mass), dtype=float)
        drawn["G"] = G
    return {"mass": mass, "com": com, "inertia": inertia, **drawn}


def _sample_g(part: _Part, rng: np.random.Generator, base_dir: str | None) -> np.ndarray:
    from uncertainty import random_body as rb

    spec = part.law.inertia
    if spec.model == "sg0":
        return np.asarray(rb.sample_sg0(rng, spec.dispersion), dtype=float)
    props = part.props
    z_bar = rb.nominal_z(props.inertia_matrix, props.mass)
    if spec.z_max is not None:
        z_max = np.asarray(spec.z_max, dtype=float)
    else:  # Eq. (33) of [1] from the body's shape
        z_max = rb.z_max_from_vertices(part.hull(base_dir), np.asarray(props.com))
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


def _com_domain(part: _Part, base_dir: str | None):
    from uncertainty import random_body as rb

    spec = part.law.com
    center = np.asarray(spec.center if spec.center is not None else part.props.com, dtype=float)
    if spec.domain == "box":
        return rb.BoxDomain(center, np.asarray(spec.size, dtype=float))
    if spec.domain == "ball":
        return rb.BallDomain(center, spec.radius)
    vertices = spec.vertices if spec.vertices is not None else part.hull(base_dir)
    return rb.ConvexDomain(np.asarray(vertices, dtype=float))
