"""Numbers that describe a history without judging it: outcomes and latency percentiles."""

from __future__ import annotations

import math
from operator import itemgetter
from typing import Any

import numpy as np

from ratelimit_harness.harness.checkers.columns import OUTCOMES, Columns

PERCENTILES = (50, 90, 99, 99.9)


def describe(columns: Columns) -> dict[str, Any]:
    counts = np.bincount(columns.outcome, minlength=len(OUTCOMES)).tolist()
    outcomes = {str(outcome): count for outcome, count in zip(OUTCOMES, counts, strict=True)}
    completed = ~np.isnan(columns.complete)
    latencies = np.sort(columns.complete[completed] - columns.invoke[completed]).tolist()
    return {
        "outcomes": {outcome: count for outcome, count in sorted(outcomes.items()) if count},
        "keys": len(columns.key_names),
        "processes": len(set(map(itemgetter(0), columns.operations))),
        "latency_ms": {f"p{p:g}": _percentile(latencies, p) * 1000 for p in PERCENTILES}
        | {"max": latencies[-1] * 1000 if latencies else 0.0},
    }


def _percentile(ordered: list[float], percent: float) -> float:
    """Nearest-rank percentile; 0 for no data."""
    if not ordered:
        return 0.0
    rank = max(1, math.ceil(percent / 100 * len(ordered)))
    return ordered[rank - 1]
