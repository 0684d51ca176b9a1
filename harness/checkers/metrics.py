"""Numbers that describe a history without judging it: outcomes and latency percentiles."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

import numpy as np

from ratelimit_harness.harness.checkers.columns import OUTCOMES, Columns, Floats

PERCENTILES = (50, 90, 99, 99.9)


def _itself(array: Floats) -> Floats:
    return array


def describe(columns: Columns) -> dict[str, Any]:
    counts = np.bincount(columns.outcome, minlength=len(OUTCOMES)).tolist()
    outcomes = {str(outcome): count for outcome, count in zip(OUTCOMES, counts, strict=True)}
    ordered = latencies(columns)
    return {
        "outcomes": {outcome: count for outcome, count in sorted(outcomes.items()) if count},
        "keys": len(columns.key_names),
        "processes": len(set(map(itemgetter(0), columns.operations))),
        "latency_ms": {
            f"p{p:g}": nearest_rank([ordered], len(ordered), p) * 1000 for p in PERCENTILES
        }
        | {"max": float(ordered[-1]) * 1000 if len(ordered) else 0.0},
    }


def latencies(columns: Columns) -> Floats:
    """The latency of each operation that completed, in seconds, sorted."""
    completed = ~np.isnan(columns.complete)
    return np.sort(columns.complete[completed] - columns.invoke[completed])


def nearest_rank(
    parts: Sequence[Any], total: int, percent: float, *, array: Callable[[Any], Floats] = _itself
) -> float:
    """The nearest-rank percentile of the latencies in ``parts`` (``array(part)`` gives each
    part's, sorted; ``total`` of them in all), 0 for none. Across several parts the value is
    found by a binary search of its bits (a latency is never negative, and non-negative floats
    order as their bits do), each part's array asked for once: one mapped from a file is read
    a few pages a step, never whole."""
    if not total:
        return 0.0
    rank = max(1, math.ceil(percent / 100 * total))
    if len(parts) == 1:
        return float(array(parts[0])[rank - 1])
    every = [bits for bits in (array(part).view(np.int64) for part in parts) if len(bits)]
    low, high = min(int(bits[0]) for bits in every), max(int(bits[-1]) for bits in every)
    while low < high:  # the least value with ``rank`` latencies at or below it
        middle = (low + high) // 2
        if sum(int(np.searchsorted(bits, middle, "right")) for bits in every) >= rank:
            high = middle
        else:
            low = middle + 1
    return float(np.int64(low).view(np.float64))
