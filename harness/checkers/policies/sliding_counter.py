"""sliding-counter: the chapter's weighted two-window estimate (Part 4).

Its own guarantee is weaker than the exact sliding window's: an aligned window never holds more
than ``limit`` (the current count never exceeds the estimate), so over-admission is the
fixed-window check (the edge rule included). How far it strays from the exact sliding window is
a metric, for the study of the chapter's claim of near-perfect accuracy.

A rejection needs no edge rule: the estimate is continuous across a window's edge (the count
restarts there as the ended window's count takes its full weight), so a millisecond either side
moves it by a thousandth of a window's weight at most.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ratelimit_harness.harness.checkers.policies import fixed_window
from ratelimit_harness.harness.checkers.shared.counting import Placeable
from ratelimit_harness.harness.checkers.shared.rejections import instants, wrongful
from ratelimit_harness.harness.checkers.view.columns import ALLOWED, REJECTED, Columns
from ratelimit_harness.harness.checkers.view.timeline import Timeline, decided_by, window_params
from ratelimit_harness.harness.history import Operation
from ratelimit_harness.harness.history.verdict import Witness
from ratelimit_harness.limiters.policy import Policy

over_admissions = fixed_window.over_admissions


def wrongful_rejections(line: Timeline, policy: Policy) -> list[Witness]:
    """Wrongful: at every instant t the rejection may have happened at, the highest estimate
    any placement gives, current + previous * (1 - elapsed), stays below ``limit``. Operations
    that may fall in the current window are counted there (weight 1), the rest of the previous
    window's with its weight."""
    limit, window = window_params(policy)
    placeable = Placeable(line)

    def most_used(op: Operation) -> float:
        last = decided_by(op)
        instants = [op.invoke, *placeable.invoked_between(op.invoke, last)]
        boundaries = range(math.floor(op.invoke / window) + 1, math.floor(last / window) + 1)
        highest = 0.0
        for t in [*instants, *(k * window for k in boundaries)]:
            start = math.floor(t / window) * window
            current = placeable.within(start, t, before=op.invoke)
            # completed in [start - window, start): certainly not current, maybe previous
            previous_only = placeable.within(start - window, t, before=op.invoke) - current
            highest = max(highest, current + previous_only * (1 - (t - start) / window))
        return highest

    first, _ = instants(line)  # most_used at each rejection's invoke, for all at once
    start = np.floor(first / window) * window
    current = placeable.within_each(start, first, before=first)
    previous_only = placeable.within_each(start - window, first, before=first) - current
    at_least = current + previous_only * (1 - (first - start) / window)
    return wrongful(line, most_used, limit, "of the estimate", at_least=at_least)


def accuracy(columns: Columns, policy: Policy) -> dict[str, Any]:
    """Replay the same requests, at the midpoints of their intervals, through an exact sliding
    window log and count the decisions that differ (the chapter cites < 0.003%).

    Keys are independent, so each key's requests are replayed in turn, in the order of their
    instants (ties in file order). The log admits when fewer than ``limit`` of its admissions
    lie after ``instant - window``: when the ``limit``-th latest lies at or before it."""
    limit, window = window_params(policy)
    decided = np.flatnonzero((columns.outcome == ALLOWED) | (columns.outcome == REJECTED))
    # a decided operation always completed (``complete or invoke`` would misread 0.0)
    instants = (columns.invoke[decided] + columns.decided_by[decided]) / 2
    keys = columns.key[decided]
    order = np.lexsort((instants, keys))
    allowed = (columns.outcome[decided] == ALLOWED)[order].tolist()
    firsts = np.ones(len(order), dtype=bool)  # where a key's requests begin
    firsts[1:] = keys[order][1:] != keys[order][:-1]
    log = ExactLog(limit, window)
    for instant, was_allowed, first in zip(
        instants[order].tolist(), allowed, firsts.tolist(), strict=True
    ):
        if first:
            log.empty()
        log.decide(instant, was_allowed)
    return disagreement(len(decided), *log.wrongly)


def midpoint(op: Operation) -> float:
    """The instant ``accuracy`` replays a decided operation at."""
    return (op.invoke + decided_by(op)) / 2


class ExactLog:
    """An exact sliding window log of ``limit`` admissions a ``window``, an identity's
    decisions replayed through it in order (``decide``), and how many it would have made
    otherwise: ``wrongly`` allowed and rejected (of every identity since it was made)."""

    def __init__(self, limit: int, window: float) -> None:
        self.limit, self.window = limit, window
        self.wrongly = [0, 0]  # allowed, rejected
        self.empty()

    def empty(self) -> None:
        """No admission logged, for the next identity's decisions (the counts stay)."""
        self.latest = [-math.inf] * self.limit  # its last ``limit`` admissions, a ring
        self.oldest = 0

    def decide(self, instant: float, was_allowed: bool) -> None:
        """The log admits when the ``limit``-th latest admission lies at or before
        ``instant - window``."""
        if self.latest[self.oldest] <= instant - self.window:
            self.latest[self.oldest] = instant
            self.oldest = (self.oldest + 1) % len(self.latest)
            self.wrongly[1] += not was_allowed
        else:
            self.wrongly[0] += was_allowed


def disagreement(decisions: int, wrongly_allowed: int, wrongly_rejected: int) -> dict[str, Any]:
    """``accuracy``'s figures from its counts (added up across parts of a history, say)."""
    return {
        "decisions": decisions,
        "wrongly_allowed": wrongly_allowed,
        "wrongly_rejected": wrongly_rejected,
        "disagreement_rate": (wrongly_allowed + wrongly_rejected) / decisions if decisions else 0.0,
    }
