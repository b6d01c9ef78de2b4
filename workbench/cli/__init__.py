"""The ``workbench`` command line: :mod:`.main` holds the parser and the registry of
subcommands, :mod:`.common` the shared arguments and progress bar, and one module per command
group does the work. Nothing outside this package imports it.

See ``docs/architecture.md``.
"""
