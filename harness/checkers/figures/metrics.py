"""Numbers that describe a history without judging it: outcomes and latency percentiles."""

from __future__ import annotations

import math
from collections.abc import Sequence
from operator import itemgetter
from typing import Any, Protocol

import numpy as np

from ratelimit_harness.harness.checkers.view.columns import OUTCOMES, Columns, Floats

PERCENTILES = (50, 90, 99, 99.9)


class Sorted(Protocol):
    """Latencies in order, as a percentile's search reads them."""

    def __len__(self) -> int: ...

    def at(self, index: int) -> float:
        """The ``index``-th, from 0."""
        ...

    def at_most(self, value: float) -> int:
        """How many are at most ``value``."""
        ...


class InMemory:
    """``Sorted`` latencies held in an array."""

    def __init__(self, ordered: Floats) -> None:
        self.ordered = ordered

    def __len__(self) -> int:
        return len(self.ordered)

    def at(self, index: int) -> float:
        return float(self.ordered[index])

    def at_most(self, value: float) -> int:
        return int(np.searchsorted(self.ordered, value, "right"))


def describe(columns: Columns) -> dict[str, Any]:
    counts = np.bincount(columns.outcome, minlength=len(OUTCOMES)).tolist()
    outcomes = {str(outcome): count for outcome, count in zip(OUTCOMES, counts, strict=True)}
    ordered = latencies(columns)
    return {
        "outcomes": {outcome: count for outcome, count in sorted(outcomes.items()) if count},
        "keys": len(columns.key_names),
        "processes": len(set(map(itemgetter(0), columns.operations))),
        "latency_ms": {
            f"p{p:g}": nearest_rank([InMemory(ordered)], len(ordered), p) * 1000
            for p in PERCENTILES
        }
        | {"max": float(ordered[-1]) * 1000 if len(ordered) else 0.0},
    }


def latencies(columns: Columns) -> Floats:
    """The latency of each operation that completed, in seconds, sorted."""
    completed = ~np.isnan(columns.complete)
    return np.sort(columns.complete[completed] - columns.invoke[completed])


def nearest_rank(runs: Sequence[Sorted], total: int, percent: float) -> float:
    """The nearest-rank percentile of the latencies in ``runs`` (each sorted; ``total`` of them
    in all), 0 for none. Across several runs the value is found by a binary search of its bits
    (a latency is never negative, and non-negative floats order as their bits do), each run
    asked how many it holds at most each value tried."""
    if not total:
        return 0.0
    rank = max(1, math.ceil(percent / 100 * total))
    if len(runs) == 1:
        return runs[0].at(rank - 1)
    held = [run for run in runs if len(run)]
    low = min(_bits(run.at(0)) for run in held)
    high = max(_bits(run.at(len(run) - 1)) for run in held)
    while low < high:  # the least value with ``rank`` latencies at or below it
        middle = (low + high) // 2
        if sum(run.at_most(_value(middle)) for run in held) >= rank:
            high = middle
        else:
            low = middle + 1
    return _value(low)


def _bits(value: float) -> int:
    return int(np.float64(value).view(np.int64))


def _value(bits: int) -> float:
    return float(np.int64(bits).view(np.float64))
