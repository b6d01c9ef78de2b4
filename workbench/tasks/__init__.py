"""The Python API of Rigid Workbench: one function per task, named as its command.

Each function takes a scene (a path, a shipped scene's name or a
:class:`~workbench.scene.model.Scene`) or a spec, keyword options named as the command's, runs
where ``workers`` says (``1``: this process; ``N``: N processes; ``"tcp://HOST:PORT"``: a Dask
scheduler; ``"local:N"``: N Dask workers on 127.0.0.1 for the job) and returns a
:class:`~workbench.tasks.result.TaskResult`: the numbers as arrays, ``.to_xarray()`` and
``.save(path)``, which writes the file the command writes, byte for byte. The command line
(:mod:`workbench.cli`) parses, calls these functions, saves and prints.

=================  ===============================  ==========================================
function           module                           command
=================  ===============================  ==========================================
``run``            :mod:`workbench.tasks.run`        ``workbench run``
``ensemble``       :mod:`workbench.tasks.ensemble`   ``workbench ensemble`` (+ ``stats``)
``reverse``        :mod:`workbench.tasks.reverse`    ``workbench reverse``
``pasts``          :mod:`workbench.tasks.pasts`      ``workbench pasts``
``sensitivity``    :mod:`workbench.tasks.sensitivity`  ``workbench sensitivity``
``infer``          :mod:`workbench.tasks.inference`  ``workbench infer``
``design``         :mod:`workbench.tasks.inference`  ``workbench design``
``inverse``        :mod:`workbench.tasks.inverse`    ``workbench inverse``
``validate``       :mod:`workbench.tasks.validate`   ``workbench validate``
``markov_train``   :mod:`workbench.tasks.markov`     ``workbench markov train``
``markov_compare`` :mod:`workbench.tasks.markov`     ``workbench markov compare``
``replay``         :mod:`workbench.tasks.replay`     ``workbench replay``
=================  ===============================  ==========================================

The layer sits above :mod:`reverse` and below :mod:`workbench.cli` (``docs/architecture.md``);
``import workbench`` maps the names to it lazily. Importing this package loads nothing.
"""

__all__: list[str] = []
