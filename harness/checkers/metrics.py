"""Numbers that describe a history without judging it: outcomes and latency percentiles."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from harness.history import Operation

PERCENTILES = (50, 90, 99, 99.9)


def describe(history: Sequence[Operation]) -> dict[str, Any]:
    outcomes = Counter(op.outcome for op in history)
    latencies = sorted([op.complete - op.invoke for op in history if op.complete is not None])
    return {
        "outcomes": {str(outcome): count for outcome, count in sorted(outcomes.items())},
        "keys": len({op.key for op in history}),
        "processes": len({op.process for op in history}),
        "latency_ms": {f"p{p:g}": _percentile(latencies, p) * 1000 for p in PERCENTILES}
        | {"max": latencies[-1] * 1000 if latencies else 0.0},
    }


def _percentile(ordered: list[float], percent: float) -> float:
    """Nearest-rank percentile; 0 for no data."""
    if not ordered:
        return 0.0
    rank = max(1, math.ceil(percent / 100 * len(ordered)))
    return ordered[rank - 1]
