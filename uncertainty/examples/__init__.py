"""The papers' worked examples, as models the analyses and tests use: Du (2013)'s impact
(:mod:`.du_impact`), the falling object (:mod:`.falling_object`) and Ao, Hu & Mahadevan
(2017)'s beam and chain (:mod:`.validation`)."""

__all__: list[str] = []
