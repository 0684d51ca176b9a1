"""The edge rule of the window policies: what happens at the very instant a window or a TTL
ends is a convention, not a flaw.

A limiter may close its windows or keep them half-open, and Redis keeps a key through the
millisecond of its deadline (a key expires once the clock has passed it), so a decision within
``EDGE`` of a window's edge (or a TTL's deadline) may be counted on whichever side of it helps the
limiter: against over-admission and against wrongful rejection alike. A violation is reported
only if it stands under every such choice. A limiter keeps one convention, though: for aligned
windows' over-admission every edge moves alike (``fixed_window``), so that two admissions at
the very instant of an edge still share a window. The buckets have no edges: they are judged
exactly.
"""

from __future__ import annotations

import math

EDGE = 0.001  # seconds: Redis' resolution


def windows_touched(first: float, last: float, window: float) -> tuple[int, int]:
    """The aligned windows (numbered from the epoch) an operation in [first, last] may count in,
    the edge rule applied: the first and the last."""
    return math.floor((first - EDGE) / window), math.floor((last + EDGE) / window)


def least_apart(window: float) -> float:
    """How far apart two admissions must be for a sliding window to count them apart, and two
    starts of windows started by admissions must be at least: a window less the edge (for a
    window of under 2 ms, half of it)."""
    return max(window - EDGE, window / 2)
