"""Bayesian parameter estimation with a Gaussian prediction error: MAP, Laplace, exact, MCMC.

For data ŷ, shape (N,), and a model z(θ) with prediction error e = ŷ − z(θ) ~ N(0, Σ), Σ = σ² Σ̃
(Eq. 5 of [1]_; Σ̃ = I for independent errors, or Eq. 18-21 with correlated model error), this
module implements

* the negative log posterior L(θ, σ) = J̃/(2σ²) + N ln σ + ½ ln det Σ̃ + (N/2) ln 2π − ln p(θ)
  with the weighted misfit J̃ = rᵀ Σ̃⁻¹ r, r = ŷ − z(θ) (Eq. 7-10 of [1], and Appendix 1.2's
  L(θ, σ) = J/(2σ²) + N ln σ when σ is a parameter), its gradient and its full Hessian from the
  model's first and second derivatives (Appendix 1.2), analytic where the model provides them;
* the most probable value (MAP) by multi-start bounded quasi-Newton minimization polished by
  Newton steps on the full Hessian (:func:`find_map`);
* the Laplace (asymptotic) posterior N(θ̂, H⁻¹), Eq. (11)-(15) of [1], with standard deviations,
  correlations and the eigen-directions of H (:func:`laplace`); a singular or indefinite Hessian is
  reported, never inverted;
* the exact posterior of Eq. (8) on a grid for one or two parameters, with marginals by
  integration and posterior moments (:func:`grid_posterior`);
* affine-invariant ensemble MCMC (emcee) for more parameters, seeded, with integrated
  autocorrelation times as the convergence diagnostic (:func:`sample_posterior`);
* priors: uniform with bounds (the document's default, Eq. 6), normal and lognormal
  (:class:`Prior`);
* the prediction-error covariance Σ = Σ_meas + Σ_model of Eq. (18)-(21)
  (:func:`prediction_error_covariance`).

The pieces: priors in :mod:`uncertainty.prior`; L, its derivatives and Σ in
:mod:`uncertainty.posterior`; MAP and Laplace in :mod:`uncertainty.laplace_approximation`; the
grid and MCMC in :mod:`uncertainty.exact_posterior`, each module with the references it uses
(emcee, Goodman & Weare, Nocedal & Wright). All public names are importable from here.

Symbols follow [1]: θ model parameters, σ prediction-error standard deviation, J misfit, L minus
the log posterior, H its Hessian.

References
----------
.. [1] Bayesian Inference for the Mechanical Model of a Falling Object (course project document,
       ../shared/papers/falling-object-bayesian-inference-and-design.md).
"""

from __future__ import annotations

from uncertainty import exact_posterior, laplace_approximation, posterior, prior
from uncertainty.exact_posterior import *  # noqa: F403 (re-exported, see __all__)
from uncertainty.laplace_approximation import *  # noqa: F403
from uncertainty.posterior import *  # noqa: F403
from uncertainty.prior import *  # noqa: F403

__all__ = [
    *prior.__all__,
    *posterior.__all__,
    *laplace_approximation.__all__,
    *exact_posterior.__all__,
]
