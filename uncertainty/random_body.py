"""Random rigid body of Batou & Soize: random mass, initial centre of mass and inertia tensor.

Implements the maximum-entropy model of an uncertain rigid body of [1]_, §3.1:

* mass M: Gamma law with mean m̲ and coefficient of variation δ_M, Eq. (15)-(17);
* initial centre of mass R0: density 1_D(a) C0 exp(-<λ_r, a>) on a bounded domain D with mean r̲0,
  Eq. (18)-(23); exact inverse-CDF sampling on a box (the density factorizes into truncated
  exponentials), Metropolis-Hastings (Appendix D) on a ball or a convex polytope;
* inertia tensor J = M (tr(Z) I - Z), Z = L̲ᵀ G L̲ with L̲ᵀ L̲ = Z̲ = (tr(J̲)/2 I - J̲)/m̲,
  Eq. (32), (34), (36), (37), with the normalized matrix G drawn from Soize's ensemble SG0+
  (Appendix B) or from the bounded ensemble of Eq. (41), calibrated so that E[G] = I
  (Eq. 42-43) and sampled by Metropolis-Hastings.

Every realization is physically admissible by construction: Z > 0 makes J positive definite
(Eq. 28) with principal moments J_i + J_j - J_k = 2 M z_k > 0 (the triangle inequalities;
Appendix A). M, R0 and G are drawn independently, so E[J] = m̲ (tr(Z̲) I - Z̲) = J̲ (Eq. 44-c).

The pieces: the mass here; the domains D in :mod:`uncertainty.com_domains`; R0 in
:mod:`uncertainty.centre_of_mass`; Z̲, G and J in :mod:`uncertainty.random_inertia`; the input
checks in :mod:`uncertainty.body_checks` and the maximum-entropy Newton solver in
:mod:`uncertainty.max_entropy`, each module with the references it uses (Soize's SG0+, the
Metropolis-Hastings scaling and convergence results). All public names are importable from here.

Reproducibility: every sampler takes ``rng`` (a ``numpy.random.Generator``) and ``size``.
``size=None`` returns one draw (a float, shape (3,) or shape (3, 3)); the Metropolis-Hastings
samplers then run one fresh chain with its full burn-in, so one call is one valid draw. The same
generator state gives bit-identical output. ``size=n`` runs n independent chains; its draws are not
the numbers that n calls with ``size=None`` would give.

Variables follow the symbols of [1]: m̲ ``mean``/``mean_mass``, δ ``dispersion``, λ_r ``lambda_r``,
C0 ``c0``, J̲ ``mean_inertia``, Z̲ ``z_bar``, L̲ ``l_z``, G_max ``g_max``, μ ``mu``, λ_l ``lambda_l``,
λ_u ``lambda_u``. Lengths are in metres, masses in kg, inertia in kg·m².

References
----------
.. [1] A. Batou, C. Soize, Rigid multibody system dynamics with uncertain rigid bodies,
       Multibody System Dynamics 27 (2012) 285-319, doi:10.1007/s11044-011-9279-2.
"""

from __future__ import annotations

import numpy as np

from uncertainty import centre_of_mass, com_domains, random_inertia
from uncertainty.body_checks import (
    MAX_DISPERSION,
    SYMMETRY_RTOL,
    checked_dispersion,
    checked_real,
    draw_count,
)
from uncertainty.centre_of_mass import *  # noqa: F403 (re-exported, see __all__)
from uncertainty.com_domains import *  # noqa: F403
from uncertainty.errors import UncertaintyError
from uncertainty.max_entropy import NEWTON_MAX_ITER, NEWTON_TOL
from uncertainty.random_inertia import *  # noqa: F403

__all__ = [
    "UncertaintyError",
    "MAX_DISPERSION",
    "SYMMETRY_RTOL",
    "NEWTON_TOL",
    "NEWTON_MAX_ITER",
    "sample_mass",
    *com_domains.__all__,
    *centre_of_mass.__all__,
    *random_inertia.__all__,
]


def sample_mass(rng: np.random.Generator, mean: float, dispersion: float, size: int | None = None):
    """Draw the random mass M of Eq. (17) of [1]_: Gamma, mean m̲, coefficient of variation δ_M.

    Parameters
    ----------
    rng : numpy.random.Generator
    mean : float
        Nominal mass m̲ > 0 (kg), the mean of M (Eq. 15-b).
    dispersion : float
        Coefficient of variation δ_M = σ_M / m̲, 0 < δ_M < 1/√2 (Eq. 17).
    size : int, optional
        Number of draws; ``None`` for one.

    Returns
    -------
    float or ndarray, shape (size,)
        Masses (kg), all positive.

    Raises
    ------
    UncertaintyError
        ``mass.dispersion`` out of range or ``mass.mean`` not positive.
    """
    m = checked_real(mean, "mass.mean")
    if m <= 0.0:
        raise UncertaintyError(
            f"mass.mean: the nominal mass must be positive, got {m:g}", "mass.mean"
        )
    d = checked_dispersion(dispersion, "mass.dispersion", "delta_M", "Eq. (17): E[M^-2] < inf")
    # Eq. (17) in [1]: p(μ) ∝ μ^(δ⁻² - 1) exp(-μ / (δ² m̲)), a Gamma law of shape δ⁻², scale δ² m̲
    out = rng.gamma(1.0 / d**2, d**2 * m, size=None if size is None else draw_count(size))
    return float(out) if size is None else out
