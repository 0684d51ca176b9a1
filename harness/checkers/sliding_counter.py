"""sliding-counter: the chapter's weighted two-window estimate (Part 4).

Its own guarantee is weaker than the exact sliding window's: an aligned window never holds more
than ``limit`` (the current count never exceeds the estimate), so over-admission is the
fixed-window check. How far it strays from the exact sliding window is a metric, for the study of
the chapter's claim of near-perfect accuracy.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.checkers import fixed_window
from harness.checkers.counting import Placeable
from harness.checkers.rejections import instants, wrongful
from harness.checkers.timeline import Timeline, decided_by, window_params
from harness.checkers.verdict import Witness
from harness.history import Operation, Outcome
from limiters.policy import Policy

over_admissions = fixed_window.over_admissions


def wrongful_rejections(line: Timeline, policy: Policy) -> list[Witness]:
    """Wrongful: at every instant t the rejection may have happened at, the highest estimate
    any placement gives, current + previous * (1 - elapsed), stays below ``limit``. Operations
    that may fall in the current window are counted there (weight 1), the rest of the previous
    window's with its weight."""
    limit, window = window_params(policy)
    placeable = Placeable(line.maybe)

    def most_used(op: Operation) -> float:
        last = decided_by(op)
        instants = [op.invoke, *placeable.invoked_between(op.invoke, last)]
        boundaries = range(math.floor(op.invoke / window) + 1, math.floor(last / window) + 1)
        highest = 0.0
        for t in [*instants, *(k * window for k in boundaries)]:
            start = math.floor(t / window) * window
            current = placeable.within(start, t)
            # completed in [start - window, start): certainly not current, maybe previous
            previous_only = placeable.within(start - window, t) - current
            highest = max(highest, current + previous_only * (1 - (t - start) / window))
        return highest

    first, _ = instants(line)  # most_used at each rejection's invoke, for all at once
    start = np.floor(first / window) * window
    current = placeable.within_each(start, first)
    previous_only = placeable.within_each(start - window, first) - current
    at_least = current + previous_only * (1 - (first - start) / window)
    return wrongful(line, most_used, limit, "of the estimate", at_least=at_least.tolist())


def accuracy(operations: Sequence[Operation], policy: Policy) -> dict[str, Any]:
    """Replay the same requests, at the midpoints of their intervals, through an exact sliding
    window log and count the decisions that differ (the chapter cites < 0.003%)."""
    limit, window = window_params(policy)
    # a decided operation always completed (``complete or invoke`` would misread 0.0)
    decided = [op for op in operations if op.outcome in (Outcome.ALLOWED, Outcome.REJECTED)]
    instants = np.array([decided_by(op) for op in decided], dtype=np.float64)
    instants = (np.array([op.invoke for op in decided], dtype=np.float64) + instants) / 2
    order = np.argsort(instants, kind="stable").tolist()
    logs: dict[str, deque[float]] = {}
    wrongly_allowed = wrongly_rejected = 0
    for instant, op in zip(instants[order].tolist(), [decided[i] for i in order], strict=True):
        log = logs.setdefault(op.key, deque())
        while log and log[0] <= instant - window:
            log.popleft()
        exact_allows = len(log) < limit
        if exact_allows:
            log.append(instant)
        allowed = op.outcome is Outcome.ALLOWED
        wrongly_allowed += allowed and not exact_allows
        wrongly_rejected += exact_allows and not allowed
    total = len(decided)
    return {
        "decisions": total,
        "wrongly_allowed": wrongly_allowed,
        "wrongly_rejected": wrongly_rejected,
        "disagreement_rate": (wrongly_allowed + wrongly_rejected) / total if total else 0.0,
    }
