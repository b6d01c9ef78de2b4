"""Run the fuzz suite (issue 39) and print its counts: ``python -m tests.fuzz.run``.

Each case (:mod:`tests.fuzz.inputs`) writes one hostile input into a scratch folder and runs
the command that reads it in this process, through :func:`workbench.cli.main.main`, under a
time limit. Outcomes:

``ok``                  exit 0, and every number it wrote finite and within bounds
``refused``             exit 2 with one line naming the input file
``failed``              exit 1: a run that did not end ``ok``, marked as such
``traceback``           an exception other than the workbench's own escaped ``main``
``hang``                the time limit passed
``ok_bad_numbers``      exit 0 but a written realization whose status is ``ok`` is non-finite,
                        beyond the coordinate bound or not a unit quaternion, or a JSON number
                        is not finite
``refusal_unlocated``   exit 2 with a message that does not name the input file

The acceptance of issue 39 is 0 ``traceback``, ``hang`` and ``ok_bad_numbers``. Usage::

    python -m tests.fuzz.run                 # 1000 inputs, seed 0 (about an hour on 2 cores)
    python -m tests.fuzz.run -n 40 --seed 3  # a sample
    python -m tests.fuzz.run --seed 0 --only 17 --keep /tmp/case17   # one case again, kept

The slow tier runs a bounded sample (``tests/fuzz/test_fuzz.py``).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import math
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.inputs import Case, make_case

__all__ = ["Outcome", "BAD", "make_originals", "run_case", "run_suite"]

#: The categories the acceptance wants at 0.
BAD = ("traceback", "hang", "ok_bad_numbers")


@dataclass
class Outcome:
    case: Case
    category: str
    rc: int | None
    line: str
    seconds: float


class _Hang(BaseException):
    """Raised by the alarm in the case's command (a BaseException: no ``except Exception``
    of the code under test takes it)."""


def _alarm(signum, frame):
    raise _Hang


def workbench(*args, timeout: float | None = None) -> tuple[int, str]:
    """``workbench ARGS`` in this process: exit status and stderr (stdout dropped)."""
    from workbench.cli.main import main

    err = io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm) if timeout else None
    try:
        if timeout:
            signal.setitimer(signal.ITIMER_REAL, timeout)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            try:
                rc = main([str(a) for a in args])
            except SystemExit as exc:  # argparse
                rc = exc.code if isinstance(exc.code, int) else 2
    finally:
        if timeout:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return rc, err.getvalue()


def make_originals(work: Path) -> dict[str, Path]:
    """The files the damaged-file cases start from: a reverse run with its forward stitch
    (``reverse --then-forward``) and an ensemble, of ``reverse_landing`` (bodies block, ball,
    roller)."""
    files = {"reverse": work / "reverse.h5", "ensemble": work / "ensemble.h5"}
    for args in (
        ["reverse", "reverse_landing", "--duration", "0.1", "--then-forward", "0.1", "-q"],
        ["ensemble", "reverse_landing", "-n", "3", "--duration", "0.1", "-q"],
    ):
        rc, err = workbench(*args, "-o", files[args[0]])
        if rc != 0:
            raise RuntimeError(f"cannot make the fuzz originals: {err}")
    return files


def _json_problem(path: Path) -> str | None:
    bad: list[str] = []

    def constant(name: str) -> float:
        bad.append(name)
        return math.nan

    try:
        json.loads(path.read_text(encoding="utf-8"), parse_constant=constant)
    except ValueError as exc:
        return f"{path.name} is not JSON ({exc})"
    return f"{path.name} holds {bad[0]}" if bad else None


def _store_problem(path: Path) -> str | None:
    from workbench.errors import WorkbenchError
    from workbench.sim.state import first_state_problem
    from workbench.store import TrajectoryStore

    try:
        with TrajectoryStore.open(path) as store:
            done = store.completed
            statuses = store.statuses()
            ok = [i for i, s in zip(done.nonzero()[0], statuses, strict=False) if s == "ok"]
            for i in ok:
                problem = first_state_problem(store.read(int(i)))
                if problem is not None:
                    return f"{path.name}: realization {i} ok with {problem[1]}"
    except WorkbenchError as exc:
        return f"{path.name} written but unreadable: {exc}"
    return None


def written_problem(path: Path) -> str | None:
    """What is wrong with the numbers of an output written with exit 0 (None: nothing)."""
    if path.is_dir():
        files = sorted(path.glob("*.json"))
        return next((p for p in map(_json_problem, files) if p), None)
    if not path.exists():
        return None
    if path.suffix == ".h5":
        return _store_problem(path)
    if path.suffix == ".json":
        return _json_problem(path)
    return None


def run_case(case: Case, work: Path, timeout: float) -> Outcome:
    """Write the case's input into ``work`` (a fresh folder), run its command, judge it."""
    import traceback

    case.write(work)
    argv = case.argv_in(work)
    t0 = time.perf_counter()
    try:
        rc, err = workbench(*argv, timeout=timeout)
    except _Hang:
        return Outcome(case, "hang", None, f"no answer in {timeout:g} s", timeout)
    except Exception as exc:  # noqa: BLE001 - what the suite counts
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return Outcome(case, "traceback", None, last, time.perf_counter() - t0)
    seconds = time.perf_counter() - t0
    lines = [s for s in err.strip().splitlines() if not s.startswith("workbench ensemble: note")]
    line = lines[-1] if lines else ""
    if rc == 0:
        problem = written_problem(work / case.output) if case.output else None
        return Outcome(case, "ok_bad_numbers" if problem else "ok", 0, problem or "", seconds)
    if rc == 2:
        located = case.input_name in line and len(lines) == 1
        return Outcome(case, "refused" if located else "refusal_unlocated", 2, line, seconds)
    if rc == 1:
        return Outcome(case, "failed", 1, line, seconds)
    return Outcome(case, "traceback", rc, f"exit status {rc}: {line}", seconds)


def run_suite(
    seed: int, indices, timeout: float, keep: Path | None = None, report=print
) -> collections.Counter:
    """Run the cases ``indices`` of the suite ``seed``; print each case that is not ``ok``,
    ``refused`` or ``failed`` and return the counts by category (and by kind)."""
    counts: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="workbench-fuzz-") as scratch:
        scratch = Path(scratch)
        originals = make_originals(scratch)
        for index in indices:
            case = make_case(seed, index, originals)
            work = scratch / f"case_{index}"
            work.mkdir()
            outcome = run_case(case, work, timeout)
            counts[outcome.category] += 1
            counts[f"{case.kind}:{outcome.category}"] += 1
            if outcome.category not in ("ok", "refused", "failed"):
                report(f"case {index} ({case.kind}) {outcome.category}: "
                       f"{' '.join(case.argv)} {case.notes} -> {outcome.line}")  # fmt: skip
                if keep is not None:
                    shutil.copytree(work, keep / f"case_{index}", dirs_exist_ok=True)
            shutil.rmtree(work, ignore_errors=True)
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tests.fuzz.run", description=__doc__.split("\n")[0]
    )
    ap.add_argument("-n", type=int, default=1000, help="cases to run (1000)")
    ap.add_argument("--seed", type=int, default=0, help="the suite's seed (0)")
    ap.add_argument("--start", type=int, default=0, help="first case index (0)")
    ap.add_argument("--only", type=int, action="append", help="run only this case (repeatable)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per case (120)")
    ap.add_argument("--keep", type=Path, help="copy the inputs of reported cases here")
    args = ap.parse_args(argv)
    indices = args.only or range(args.start, args.start + args.n)
    t0 = time.perf_counter()
    counts = run_suite(args.seed, indices, args.timeout, args.keep)
    total = sum(v for k, v in counts.items() if ":" not in k)
    print(f"{total} inputs, seed {args.seed}, {time.perf_counter() - t0:.0f} s")
    for category in ("ok", "refused", "failed", "refusal_unlocated", *BAD):
        by_kind = ", ".join(f"{k.split(':')[0]} {v}" for k, v in sorted(counts.items())
                            if k.endswith(f":{category}"))  # fmt: skip
        print(f"  {category:18} {counts[category]:5}" + (f"  ({by_kind})" if by_kind else ""))
    return 1 if any(counts[c] for c in BAD) else 0


if __name__ == "__main__":
    sys.exit(main())
