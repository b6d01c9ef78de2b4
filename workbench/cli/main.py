"""The ``workbench`` command line: the top-level parser, the table of subcommands and the exit
status. Each subcommand lives in its own module of :mod:`workbench.cli` (``COMMANDS``), which
parses, calls the library and prints; it is imported only when that command runs or its
``--help`` is asked, so ``workbench --help`` imports none of them.

Exit status: 0 success; 2 bad input (one line on stderr naming the file, field and what was
expected); 1 a run that failed part-way (the records before the failure are kept in the file
and marked); 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import sys
import warnings

from workbench import __version__
from workbench.errors import WorkbenchError, WorkbenchWarning

__all__ = ["COMMANDS", "MODULES", "main", "build_parser"]

EPILOG = """\
examples:
  workbench scenes
  workbench check my_scene.yaml --set c=0.2
  workbench run falling_object -o falling.h5 --set c=0.2
  workbench ensemble random_box -n 200 -o box.h5 --workers 2
  workbench stats box.h5
  workbench sensitivity sliding_block_random.yaml --output stop -n 1024 -o sb.h5
  workbench plot box.h5 --observer com --band 0.9
  workbench inspect falling.h5
  workbench plot falling.h5 --observer height -o height.png
  workbench replay falling.h5 --reverse --speed 0.5
  workbench replay falling.h5 --frames frames/
  workbench reverse reverse_landing --hints scenes/reverse_landing.hints.yaml \\
      --duration 0.5 -o landing.h5
  workbench pasts markov_block -n 20 --seed 1 --workers 2 -o pasts.h5
  workbench validate --model model.h5 --experiments run1.h5 run2.h5 --observer tip \\
      --component x --epsilon 0.05 --plot validation.png

exit status: 0 ok, 1 run failed part-way (partial results kept), 2 bad input
"""

#: Every subcommand, in the order ``workbench --help`` lists them, with the line it shows there.
#: Command ``X`` lives in the module ``workbench.cli.X`` (``MODULES`` names the exceptions), whose
#: ``add_X_parser(subparsers)`` builds its parser and sets ``func``, the function that runs it.
#: A module that holds one command has the command's description (``workbench X --help``) as its
#: docstring.
COMMANDS: dict[str, str] = {
    "run": "run a scene forward and store the trajectory",
    "check": "validate a scene without running it",
    "ensemble": "run a Monte Carlo ensemble of a random scene into HDF5",
    "stats": "statistics of an ensemble file",
    "inspect": "summarise an HDF5 result file",
    "plot": "plot an observer of a stored run",
    "validate": "time-domain validation metrics of a model ensemble against experiments",
    "infer": "Bayesian parameter estimation from an inference spec",
    "design": "optimal measurement times from an inference spec",
    "scenes": "list the shipped scenes",
    "replay": "replay a stored run in the PyBullet viewer",
    "reverse": "step a scene backward from its final state (reverse run)",
    "pasts": "sample pasts of a body at rest forward, confirmed by PyBullet (conditioned pasts)",
    "markov": "contact-transition Markov model for reverse runs (train; compare with forward runs)",
    "inverse": "inverse simulation under uncertainty: CDFs of unknown inputs (Du 2013 FORM)",
    "sensitivity": "global sensitivity (Sobol', Morris) of a scene's outputs to its random inputs",
}

#: Commands that share a module: design and infer read the same inference spec.
MODULES = {"design": "infer"}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``workbench`` parser with every subcommand; only ``command``'s arguments are built.

    Parameters
    ----------
    command : str, optional
        The subcommand to be parsed: its module is imported and builds its full parser. The
        others are listed by name and help line only (the line is shown only when no command is
        given, so ``command``'s own parser needs none).
    """
    ap = argparse.ArgumentParser(
        prog="workbench",
        description="Rigid Workbench: run rigid-body scenes in PyBullet, store trajectories in "
        "HDF5, inspect, plot and replay them.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action="store_true", help="print the version and exit")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_line in COMMANDS.items():
        if name == command:
            module = importlib.import_module(f"workbench.cli.{MODULES.get(name, name)}")
            getattr(module, f"add_{name}_parser")(sub)
        else:
            sub.add_parser(name, help=help_line)
    _accept_negative_numbers(ap)
    return ap


#: What argparse should take for a negative number, not an option: Python 3.14's own matcher
#: (CPython gh-124823). Python 3.11-3.13 take ``-1e-3`` for an unknown option, so ``--dt -1e-3``
#: failed with "expected one argument" before the option's own check could say "expected a
#: positive number". No option of ours looks like a negative number, so nothing is lost.
_NEGATIVE_NUMBER = re.compile(r"-\.?\d")


def _accept_negative_numbers(parser: argparse.ArgumentParser) -> None:
    """Let ``parser`` and every subcommand's parser read ``-1e-3`` (and ``-.5``) as a value.

    Sets argparse's private ``_negative_number_matcher`` (the attribute Python 3.14 changed),
    so each option's own check reports a negative value in one line.
    """
    parser._negative_number_matcher = _NEGATIVE_NUMBER
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _accept_negative_numbers(child)


def main(argv: list[str] | None = None) -> int:
    """Run ``workbench`` with ``argv`` (default: the process's arguments); returns the exit
    status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    ap = build_parser(_command(argv))
    args = ap.parse_args(argv)
    if args.version:
        print(__version__)
        return 0
    if args.command is None:
        ap.print_help()
        return 2
    try:
        # the output locks a command holds (common.hold_output_lock), released when it ends
        with contextlib.ExitStack() as args.held_locks, warnings.catch_warnings():
            # the tasks' remarks (WorkbenchWarning), one line each as they come
            warnings.simplefilter("always", WorkbenchWarning)
            warnings.showwarning = _remark(args.command)
            return int(args.func(args) or 0)
    except WorkbenchError as exc:
        print(f"workbench {args.command}: {_one_line(exc)}", file=sys.stderr)
        # 2 for bad input; an error that stops a run part-way (a full disk: StoreWriteError)
        # says 1, the status of a run that failed with its partial results kept
        return int(getattr(exc, "exit_status", 2))
    except KeyboardInterrupt:
        print(f"workbench {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `workbench stats f.h5 | head`: the reader left
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _remark(command: str):
    """``warnings.showwarning`` of a command: a task's :class:`WorkbenchWarning` as one line
    ``workbench COMMAND: ...`` on stderr; any other warning as Python shows it."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, WorkbenchWarning):
            print(f"workbench {command}: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    return show


def _command(argv: list[str]) -> str | None:
    """The subcommand in ``argv``: its first word that is not an option (``workbench`` itself
    takes no option with a value); None when ``--help`` comes first (it lists every command)."""
    for arg in argv:
        if arg == "-h" or (len(arg) > 2 and "--help".startswith(arg)):
            return None
        if not arg.startswith("-"):
            return arg
    return None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
