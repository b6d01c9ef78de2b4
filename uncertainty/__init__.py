"""Pure numerics on numpy arrays — random rigid bodies (Batou & Soize 2012), distributions and
normal-space transforms, FORM/SORM and inverse simulation under uncertainty (Du 2013), Bayesian
estimation and experiment design, time-domain validation metrics (Ao, Hu & Mahadevan 2017), random
fields and the ``Model`` protocol. No I/O, no PyBullet, no workbench imports; randomness comes in as
``rng: numpy.random.Generator``. The papers' worked examples are in :mod:`uncertainty.examples`.

``__all__`` lists the API, loaded on first use (PEP 562: ``import uncertainty`` loads nothing);
every other name is internal to the project (``docs/architecture.md``, "The public API").
"""

import importlib

#: Public name -> the module that defines it.
_LAZY = {
    "Model": "uncertainty.model",
    "InverseProblem": "uncertainty.inverse_problem",
    "inverse_form": "uncertainty.inverse",
    "double_loop_form": "uncertainty.inverse",
    "inverse_monte_carlo": "uncertainty.inverse_mc",
    "sample_posterior": "uncertainty.exact_posterior",
    "validation_metrics": "uncertainty.validation",
    "streamed_reliability": "uncertainty.validation",
    "instantaneous_reliability": "uncertainty.validation",
    "first_passage_reliability": "uncertainty.validation",
    "accumulated_reliability": "uncertainty.validation",
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    """Import a public name's module on first access (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'uncertainty' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
