"""One step of rigid bodies with known contacts, forward or backward in time (Twigg & James 2008
§2–3): :class:`~reverse.step.stepper.Stepper` takes a :class:`~workbench.sim.state.State`, the
contacts and the goals of the step and returns the next state with a
:class:`~reverse.step.types.StepReport`.

Contract: pure numerics over :mod:`reverse.lcp` — no engine, no store, no scene files. With no goals
and no plausibility controls a backward step is the exact mirror of a forward one.
"""

__all__: list[str] = []
