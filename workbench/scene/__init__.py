"""Scenes: the immutable description of a world (:mod:`.model`, with its parts :mod:`.bodies`,
:mod:`.connections`, :mod:`.random_inputs`, :mod:`.parameters` and :mod:`.fields`), read from
YAML files and scene scripts (:mod:`.loader`), the shipped catalogue (:mod:`.catalog`), mass
properties of shapes (:mod:`.inertia`) and the kit scene scripts build with (:mod:`.parts`,
:mod:`.font`).

See ``docs/architecture.md``.
"""

__all__: list[str] = []
