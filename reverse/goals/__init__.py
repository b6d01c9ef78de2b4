"""What a backward step aims at: the goals of its contacts (Twigg & James 2008 §3–4).

Contract: a goal policy is a callable ``policy(contacts, position, velocity) -> (goals, preferred,
preferred_rolling)`` that the stepper calls once per backward step. :mod:`reverse.goals.hints`
gives the user's hints; :mod:`reverse.goals.markov` and :mod:`reverse.goals.semi_markov` the
contact-transition tables; :mod:`reverse.goals.policy` the policy that draws drops from a table
after the hints. Pure numerics and files: no engine.
"""

__all__: list[str] = []
