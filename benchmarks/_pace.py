"""Per-step cost of a run without its start-up, measured inside the run (for the reverse ÷
forward ratios of ``benchmarks/spelling.py`` and ``benchmarks/reverse.py``).

Issue 17 measured the cost per step as the difference of two runs (0.25 s and 1.25 s of the
"LO" spelling scene through the command line) divided by the steps between them, so that
start-up (imports, scene build, PyBullet's bodies) cancels. :class:`Pace` measures the same in
one run: it is the run's ``progress(k, n)`` callback (both :func:`reverse.runs.run.run_reverse` and
:func:`workbench.sim.forward.run_scene` call it about 100 times) and keeps the wall clock at
each call; :meth:`Pace.per_step` is the wall time between the calls at 20% and 100% of the
steps (the issue's 0.25 s … 1.25 s window) divided by the steps between them.
"""

from __future__ import annotations

import time

__all__ = ["Pace", "WINDOW_START"]

#: Start of the measured window, as a fraction of the run's steps: 0.25 s of 1.25 s in issue 17.
WINDOW_START = 0.2


class Pace:
    """A ``progress(k, n)`` callback that times the steps (module docstring)."""

    def __init__(self, then=None):
        self.marks: list[tuple[int, float]] = []
        self.then = then  # another progress callback to call as well

    def __call__(self, k: int, n: int) -> None:
        self.marks.append((k, time.perf_counter()))
        self.n = n
        if self.then is not None:
            self.then(k, n)

    def per_step(self) -> float:
        """Mean wall time of one step in the window, s (NaN with fewer than two marks in it)."""
        if not self.marks:
            return float("nan")
        first = WINDOW_START * self.n
        inside = [(k, t) for k, t in self.marks if k >= first]
        if len(inside) < 2:
            return float("nan")
        (k0, t0), (k1, t1) = inside[0], inside[-1]
        return (t1 - t0) / (k1 - k0)
