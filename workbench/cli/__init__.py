"""The ``workbench`` command line: :mod:`.main` holds the parser and the table of subcommands,
:mod:`.common` the shared arguments, scene loading and progress bar, and each command has its own
module (``workbench X`` is :mod:`workbench.cli.X`; ``design`` shares :mod:`.infer`) that parses,
calls the library and prints. Nothing outside this package imports it.

See ``docs/architecture.md``.
"""

__all__: list[str] = []
