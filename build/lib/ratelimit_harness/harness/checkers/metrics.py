"""Numbers that describe a history without judging it: outcomes and latency percentiles."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt

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
    order as their bits do), each part's array asked for anew at each step: an array mapped
    from a file is then read a few pages a step, never held whole."""
    if not total:
        return 0.0
    rank = max(1, math.ceil(percent / 100 * total))
    if len(parts) == 1:
        return float(array(parts[0])[rank - 1])

    def bits(part: object) -> npt.NDArray[np.int64]:
        return array(part).view(np.int64)

    ends = [(int(b[0]), int(b[-1])) for b in map(bits, parts) if len(b)]
    low, high = min(first for first, _ in ends), max(last for _, last in ends)
    while low < high:  # the least value with ``rank`` latencies at or below it
        middle = (low + high) // 2
        if sum(int(np.searchsorted(bits(part), middle, "right")) for part in parts) >= rank:
            high = middle
        else:
            low = middle + 1
    return float(np.int64(low).view(np.float64))
