"""Pieces the benchmark scripts share: a wall-clock timer and the head of a printed table."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["print_head", "timed"]


def timed(fn: Callable[[], object]) -> float:
    """Wall time of one call ``fn()``, s (``time.perf_counter``)."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def print_head(title: str, head: str) -> None:
    """Print a table's title, its column heads and a rule as wide as the heads."""
    print(title)
    print(head)
    print("-" * len(head))
