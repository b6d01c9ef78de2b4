"""Pure numerics on numpy arrays — random rigid bodies (Batou & Soize 2012), distributions and
normal-space transforms, FORM/SORM and inverse simulation under uncertainty (Du 2013), Bayesian
estimation and experiment design, time-domain validation metrics (Ao, Hu & Mahadevan 2017), random
fields and the ``Model`` protocol. No I/O, no PyBullet, no workbench imports; randomness comes in as
``rng: numpy.random.Generator``. The papers' worked examples are in :mod:`uncertainty.examples`.

See ``docs/architecture.md``.
"""

__all__: list[str] = []
