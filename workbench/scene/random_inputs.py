"""What is random in a scene's ensembles: scene parameters that follow a distribution, and the
mass, centre of mass and inertia of uncertain bodies, the random rigid body of A. Batou and
C. Soize (Rigid multibody system dynamics with uncertain rigid bodies, Multibody System Dynamics
27 (2012) 285-319), cited below as "Batou & Soize 2012" with its equation numbers.

These types only declare and check the laws; sampling is ``uncertainty/random_body.py`` and
``workbench/ensemble/realization.py``. See ``docs/architecture.md`` (randomness).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import (
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from uncertainty.random_body import MAX_DISPERSION  # δ < 1/√2, Batou & Soize 2012 Eq. 17
from workbench.scene.fields import PosFloat, StrictModel, Vec3, did_you_mean

__all__ = [
    "DISTRIBUTIONS",
    "MAX_DISPERSION",
    "ParameterDistribution",
    "MassUncertainty",
    "ComUncertainty",
    "InertiaUncertainty",
    "LinkUncertainty",
    "BodyUncertainty",
    "ALL_LINKS",
]

#: Frozen scipy.stats laws by their parameters. Freezing one costs ≈ 1.2 ms (scipy builds its
#: docstring and checks its arguments), ≈ 7% of a random_box realization, which drew its
#: friction from a law frozen anew each time (2026-11-27, cProfile of 300 realizations).
_FROZEN: dict[tuple, Any] = {}
#: Laws kept at most (a sensitivity study moves one parameter at a time: a few per parameter).
_FROZEN_MAX = 256

#: ``uncertainty.links: all``: every link with mass of a URDF body takes the body's laws.
ALL_LINKS = "all"

#: Names of the scalar distributions a parameter may follow.
DISTRIBUTIONS = ("normal", "lognormal", "uniform", "gamma", "truncnormal")

#: The fields each distribution needs (and the only ones it takes).
_NEEDS = {
    "normal": ("mean", "std"),
    "lognormal": ("mean", "std"),
    "gamma": ("mean", "std"),
    "uniform": ("low", "high"),
    "truncnormal": ("mean", "std", "low", "high"),
}


def _check_dispersion(value: float, what: str) -> float:
    if not 0.0 < value < MAX_DISPERSION:
        raise ValueError(
            f"{what} must lie in (0, 1/sqrt(2)) = (0, {MAX_DISPERSION:.4f}), got {value}"
        )
    return value


class ParameterDistribution(StrictModel):
    """A scene parameter that is random in ensembles (its mean is used for single runs).

    ``normal {mean, std}``, ``lognormal {mean, std}`` (of the variable itself), ``uniform {low,
    high}``, ``gamma {mean, std}``, ``truncnormal {mean, std, low, high}`` (``mean``/``std`` of the
    parent normal).
    """

    dist: str
    mean: float | None = None
    std: PosFloat | None = None
    low: float | None = None
    high: float | None = None

    @model_validator(mode="after")
    def _check(self) -> ParameterDistribution:
        if self.dist not in DISTRIBUTIONS:
            hint = did_you_mean(self.dist, DISTRIBUTIONS)
            known = ", ".join(DISTRIBUTIONS)
            raise ValueError(f"unknown distribution '{self.dist}'{hint}; expected one of {known}")
        need = _NEEDS[self.dist]
        missing = [f for f in need if getattr(self, f) is None]
        if missing:
            raise ValueError(f"a {self.dist} distribution needs {', '.join(missing)}")
        extra = [
            f
            for f in ("mean", "std", "low", "high")
            if f not in need and getattr(self, f) is not None
        ]
        if extra:
            raise ValueError(f"a {self.dist} distribution takes no {', '.join(extra)}")
        if self.dist in ("lognormal", "gamma") and not self.mean > 0:
            raise ValueError(f"a {self.dist} distribution needs mean > 0")
        if self.low is not None and not self.low < self.high:
            raise ValueError("'low' must be below 'high'")
        return self

    def frozen(self):
        """The scipy.stats frozen distribution (one object per law and process: shared, never
        modified; draw with an explicit ``random_state``)."""
        spec = self.model_dump(exclude_none=True)
        key = tuple(sorted(spec.items()))  # every field: a field added later keys it too
        law = _FROZEN.get(key)
        if law is None:
            # Imported here: uncertainty.distributions loads scipy.stats (~0.3 s), which a scene
            # without random parameters never needs.
            from uncertainty.distributions import make_distribution

            law = make_distribution(spec)
            if len(_FROZEN) >= _FROZEN_MAX:
                _FROZEN.clear()
            _FROZEN[key] = law
        return law

    def nominal(self) -> float:
        """The value used for single (deterministic) runs: the distribution's mean."""
        return float(self.frozen().mean())


class MassUncertainty(StrictModel):
    """Random mass: Gamma with the nominal mass as mean and coefficient of variation
    ``dispersion`` ∈ (0, 1/√2) (Batou & Soize 2012, Eq. 15-17)."""

    dispersion: float

    @field_validator("dispersion")
    @classmethod
    def _range(cls, v: float) -> float:
        return _check_dispersion(v, "the mass dispersion delta_M")


class ComUncertainty(StrictModel):
    """Random initial centre of mass: maximum-entropy law on a bounded domain (body frame) with
    the nominal centre of mass as its mean (Batou & Soize 2012, Eq. 18-23).

    ``box``: ``center`` and ``size``; ``ball``: ``center`` and ``radius``; ``hull``: the convex hull
    of ``vertices`` (default: the body's own shape). ``center`` defaults to the nominal centre of
    mass.
    """

    domain: Literal["box", "ball", "hull"]
    center: Vec3 | None = None
    size: tuple[PosFloat, PosFloat, PosFloat] | None = None
    radius: PosFloat | None = None
    vertices: list[Vec3] | None = None

    @model_validator(mode="after")
    def _check(self) -> ComUncertainty:
        if self.domain == "box" and self.size is None:
            raise ValueError("a box domain needs 'size' [sx, sy, sz] (m)")
        if self.domain == "ball" and self.radius is None:
            raise ValueError("a ball domain needs 'radius' (m)")
        if self.domain == "hull" and self.vertices is not None and len(self.vertices) < 4:
            raise ValueError("a hull domain needs at least 4 'vertices'")
        return self

    def contains(self, r0: np.ndarray, nominal_com) -> bool:
        """Whether ``r0`` (body frame, m) lies strictly inside the domain; a missing ``center``
        is ``nominal_com``, missing hull ``vertices`` are not checked here."""
        c = np.asarray(self.center if self.center is not None else nominal_com)
        if self.domain == "box":
            return bool(np.all(np.abs(r0 - c) < 0.5 * np.asarray(self.size)))
        if self.domain == "ball":
            return bool(np.linalg.norm(r0 - c) < self.radius)
        if self.vertices is not None:
            # Imported here: scipy.spatial's qhull is needed only by hull domains.
            from scipy.spatial import Delaunay

            return bool(Delaunay(np.asarray(self.vertices)).find_simplex(r0) >= 0)
        return True


class InertiaUncertainty(StrictModel):
    """Random inertia J = M (tr(Z) I − Z), Z = L̲ᵀ G L̲ (Batou & Soize 2012, Eq. 32-37), with G
    from Soize's ensemble SG0+ (J. Acoust. Soc. Am. 109, 2001; ``model: sg0``, ``dispersion`` <
    1/√2) or the bounded ensemble of Eq. 41 (``model: bounded``, ``lambda_l``, ``lambda_u`` and
    the upper bound ``z_max`` of Z). Sampled by ``uncertainty/random_inertia.py``.
    """

    model: Literal["sg0", "bounded"]
    dispersion: float | None = None
    lambda_l: float | None = None
    lambda_u: float | None = None
    z_max: tuple[Vec3, Vec3, Vec3] | None = None

    @model_validator(mode="after")
    def _check(self) -> InertiaUncertainty:
        if self.model == "sg0":
            if self.dispersion is None:
                raise ValueError("model sg0 needs 'dispersion' (delta_G)")
            _check_dispersion(self.dispersion, "the inertia dispersion delta_G")
            if self.lambda_l is not None or self.lambda_u is not None or self.z_max is not None:
                raise ValueError("model sg0 takes only 'dispersion'")
        else:
            if self.lambda_l is None or self.lambda_u is None:
                raise ValueError("model bounded needs 'lambda_l' and 'lambda_u'")
            if self.dispersion is not None:
                raise ValueError(
                    "model bounded takes no 'dispersion' (it follows from lambda_l, lambda_u)"
                )
        return self


class LinkUncertainty(StrictModel):
    """What is random about one rigid part (a body, or one link of a URDF body) in ensembles;
    M, R0 and G are independent (Batou & Soize 2012, §3.1)."""

    mass: MassUncertainty | None = None
    com: ComUncertainty | None = None
    inertia: InertiaUncertainty | None = None

    @property
    def is_empty(self) -> bool:
        return self.mass is None and self.com is None and self.inertia is None

    def check_nominal(
        self, mass: float, com, inertia: np.ndarray, where: str = "uncertainty"
    ) -> None:
        """Admissibility against the part's nominal mass properties.

        Parameters
        ----------
        mass : float
            Nominal mass, kg.
        com : array_like, shape (3,)
            Nominal centre of mass, body frame, m.
        inertia : ndarray, shape (3, 3)
            Nominal inertia about the centre of mass, body frame, kg·m².
        where : str
            The field path the messages start with (``uncertainty``,
            ``uncertainty.links.<name>``).

        Raises
        ------
        pydantic_core.PydanticCustomError
            Of type ``uncertainty``, when the nominal centre of mass is outside the domain or
            ``z_max`` is not above the nominal Z.
        """
        r0 = np.asarray(com)
        if self.com is not None and not self.com.contains(r0, com):
            raise PydanticCustomError(
                "uncertainty",
                "{where}.com: the nominal centre of mass {r0} must lie strictly inside the "
                "{domain} domain (Batou & Soize Eq. 18: its mean is the nominal value)",
                {"where": where, "r0": np.round(r0, 9).tolist(), "domain": self.com.domain},
            )
        if self.inertia is not None and self.inertia.z_max is not None:
            J = inertia
            z_bar = (np.trace(J) / 2.0 * np.eye(3) - J) / mass  # Batou & Soize 2012 Eq. (34)
            gap = np.linalg.eigvalsh(np.asarray(self.inertia.z_max) - z_bar)
            if gap[0] <= 0.0:
                raise PydanticCustomError(
                    "uncertainty",
                    "{where}.inertia.z_max: expected Z_max - Z_bar positive definite (Z_max "
                    "above the nominal Z_bar = (tr(J)/2 I - J)/m = {z}), got eigenvalues {gap}",
                    {
                        "where": where,
                        "z": np.round(z_bar, 6).tolist(),
                        "gap": np.round(gap, 6).tolist(),
                    },
                )


class BodyUncertainty(LinkUncertainty):
    """What is random about a body in ensembles; M, R0 and G are independent.

    On a URDF body, ``mass``, ``com`` and ``inertia`` are those of its base link, and ``links``
    adds other links: a mapping of link name to :class:`LinkUncertainty`, or ``all`` for every
    link with mass taking the body's own blocks (each link's URDF inertial as its nominal
    value). Resolved against the URDF by :class:`~workbench.scene.bodies.Body`.
    """

    links: dict[str, LinkUncertainty] | Literal["all"] | None = None

    @field_validator("links", mode="before")
    @classmethod
    def _all_or_mapping(cls, v: Any) -> Any:
        if v is None or v == ALL_LINKS or isinstance(v, dict):
            return v  # a mapping's errors then name the link and its field
        raise ValueError(
            f"expected '{ALL_LINKS}' or a mapping of link name to its blocks (mass, com, "
            f"inertia), got {v!r}"
        )

    @model_serializer(mode="wrap")
    def _without_unset_links(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        # no "links": null in dumps: a scene without URDF links stores the same scene_json (and
        # so the same file bytes) as before bodies had links
        data = handler(self)
        if data.get("links") is None:
            data.pop("links", None)
        return data
