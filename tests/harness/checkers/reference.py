"""Pure reference models of the policies, deciding requests at exact instants, for property
tests: a history they produce is valid by construction."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass


@dataclass
class Decided:
    instant: float
    allowed: bool
    headroom: float  # budget left right after this decision (tokens, or free places)


def fixed_window(instants: list[float], limit: int, window: float) -> list[Decided]:
    counts: dict[int, int] = {}
    out = []
    for t in instants:
        k = math.floor(t / window)
        allowed = counts.get(k, 0) < limit
        counts[k] = counts.get(k, 0) + allowed
        out.append(Decided(t, allowed, limit - counts[k]))
    return out


def sliding_window(instants: list[float], limit: int, window: float) -> list[Decided]:
    log: deque[float] = deque()
    out = []
    for t in instants:
        while log and log[0] <= t - window:
            log.popleft()
        allowed = len(log) < limit
        if allowed:
            log.append(t)
        out.append(Decided(t, allowed, limit - len(log)))
    return out


def token_bucket(instants: list[float], capacity: int, rate: float) -> list[Decided]:
    tokens, last = float(capacity), -math.inf
    out = []
    for t in instants:
        tokens = min(capacity, tokens + (t - last) * rate) if last > -math.inf else tokens
        last = t
        allowed = tokens >= 1
        tokens -= allowed
        out.append(Decided(t, allowed, tokens))
    return out
