"""Backward (reverse-time) rigid-body simulation after Twigg & James, Backward Steps in Rigid Body
Simulation, SIGGRAPH 2008. Importing the package loads nothing; its modules, from the numerics up:

- :mod:`reverse.lemke`, :mod:`reverse.lcp_fallback`, :mod:`reverse.lcp`: the LCP solver (Lemke's
  pivoting, the fallback ladder, :func:`reverse.lcp.solve_lcp` with its verification);
- :mod:`reverse.dynamics`: bodies, contact sets, goals and one island's contact LCP;
  :mod:`reverse.joints`: joint rows; :mod:`reverse.batched`: the island LCPs of a step together
  (:mod:`reverse.assembly_kernel`: their compiled products; :mod:`reverse.batch_views`: lazy
  views of the answers);
- :mod:`reverse.integration`: the configuration update of a step; :mod:`reverse.islands`:
  islands, sleeping, the free-to-bounce test and attraction;
- :mod:`reverse.stepper`: one forward or backward step (pure numerics, no PyBullet);
- :mod:`reverse.contacts`: contact detection with the engine; :mod:`reverse.hints` and
  :mod:`reverse.markov` (:mod:`reverse.markov_training`): the goals of a backward step;
- :mod:`reverse.run`, :mod:`reverse.sampling`: whole runs of a scene, and ensembles of them.
"""

__all__: list[str] = []
