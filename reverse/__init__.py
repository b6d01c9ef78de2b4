"""Backward (reverse-time) rigid-body simulation after Twigg & James, Backward Steps in Rigid Body
Simulation, SIGGRAPH 2008. Importing the package loads nothing.

Five wings, each importing only the ones above it (``tests/test_architecture.py`` keeps the order):

1. :mod:`reverse.lcp` — the linear complementarity solver: Lemke's pivoting (pure and compiled),
   the fallback ladder, :func:`reverse.lcp.solve.solve_lcp` with its verification.
2. :mod:`reverse.step` — one forward or backward step of known contacts: bodies, contact sets,
   goals, island LCPs (one by one and batched), joints, the configuration update, islands and
   sleeping, rolling, the stepper. Pure numerics: no engine, no store.
3. :mod:`reverse.goals` — what a backward step aims at: hints, the contact-transition tables
   (plain and semi-Markov) and the policy that draws a step's goals from them.
4. :mod:`reverse.runs` — whole runs of a scene through the engine: contact detection,
   :func:`reverse.runs.run.run_reverse`, many seeded runs (:mod:`reverse.runs.sampling`) and the
   forward verification of an earliest state (:mod:`reverse.runs.verify`).
5. :mod:`reverse.pasts` — samplers of pasts under one contract (:mod:`reverse.pasts.sampler`),
   the throw law they share (:mod:`reverse.pasts.training`), conditioned forward pasts
   (:mod:`reverse.pasts.conditioned`) and the plausibility measure that compares samples
   (:mod:`reverse.pasts.measure`).

Its public use is through the tasks ``workbench.reverse`` and ``workbench.pasts``
(:mod:`workbench.tasks`): ``__all__`` is empty, and every module here is internal to the project
(``docs/architecture.md``, "The public API"), documented for those who extend it.
"""

__all__: list[str] = []
