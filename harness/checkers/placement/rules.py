"""Policies as constraints on the sorted instants of admissions, for the placement search.

A rule says, given the admissions placed so far (in time order), the earliest instant the next
one may take; how many admissions a closed span of a given length can hold at most (the bound a
Hall witness is measured against); and its horizon: a gap that long with no admission makes
everything before it irrelevant to what follows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from ratelimit_harness.harness.checkers.shared.edges import EDGE, least_apart


class Rule(Protocol):
    @property
    def horizon(self) -> float: ...

    def start(self) -> RuleState: ...

    def room(self, span: float) -> float:
        """The most admissions a closed span of this length may hold."""
        ...

    def tracker(self) -> Tracker:
        """The same rule kept in plain floats, for a scan of many admissions."""
        ...


class Tracker(Protocol):
    """A rule's state kept in place: ``earliest`` and ``place`` read and move it exactly as
    ``RuleState`` would (the same float operations), without a new state per admission;
    ``place`` returns what ``earliest`` then would (one call per admission, not two)."""

    def earliest(self) -> float: ...

    def place(self, instant: float) -> float: ...


class RuleState(Protocol):
    def earliest(self) -> float:
        """The earliest instant the next admission may take."""
        ...

    def place(self, instant: float) -> RuleState:
        """The state after one more admission at ``instant`` (not before ``earliest()``)."""
        ...

    def memo_key(self) -> object: ...


@dataclass(frozen=True)
class SlidingWindow:
    """At most ``limit`` in any half-open span of length ``window``: the (limit)th admission
    before the next must be at least a window earlier."""

    limit: int
    window: float

    @property
    def horizon(self) -> float:
        return self.window

    def start(self) -> LastInstants:
        return LastInstants(self, ())

    def room(self, span: float) -> float:
        return self.limit * (math.floor(span / self.window) + 1)

    def tracker(self) -> LastInstantsTracker:
        return LastInstantsTracker(self.limit, self.window)


class LastInstantsTracker:
    """``LastInstants`` in a ring of the last ``limit`` instants (-inf where none yet)."""

    def __init__(self, limit: int, window: float) -> None:
        self.ring = [-math.inf] * limit
        self.oldest = 0
        self.latest = -math.inf
        self.window = window

    def earliest(self) -> float:
        return max(self.latest, self.ring[self.oldest] + self.window)

    def place(self, instant: float) -> float:
        self.ring[self.oldest] = self.latest = instant
        self.oldest = (self.oldest + 1) % len(self.ring)
        return max(instant, self.ring[self.oldest] + self.window)


@dataclass(frozen=True)
class LastInstants:
    rule: SlidingWindow
    last: tuple[float, ...]  # the last `limit` admissions, oldest first

    def earliest(self) -> float:
        if len(self.last) < self.rule.limit:
            return self.last[-1] if self.last else -math.inf
        return max(self.last[-1], self.last[0] + self.rule.window)

    def place(self, instant: float) -> LastInstants:
        return LastInstants(self.rule, (*self.last, instant)[-self.rule.limit :])

    def memo_key(self) -> object:
        return self.last


@dataclass(frozen=True)
class TokenBucket:
    """At most ``capacity + rate * d`` in any span of length d, the bucket starting full: as
    GCRA keeps it, one theoretical arrival time (TAT) per key."""

    capacity: int
    rate: float

    @property
    def horizon(self) -> float:
        return self.capacity / self.rate

    def start(self) -> ArrivalTime:
        return ArrivalTime(self, -math.inf, -math.inf)

    def room(self, span: float) -> float:
        return self.capacity + self.rate * span

    def tracker(self) -> ArrivalTimeTracker:
        return ArrivalTimeTracker(self)


class ArrivalTimeTracker:
    """``ArrivalTime`` kept in place."""

    def __init__(self, rule: TokenBucket) -> None:
        self.tat = self.last = -math.inf
        self.tolerance = (rule.capacity - 1) / rule.rate
        self.interval = 1 / rule.rate

    def earliest(self) -> float:
        return max(self.last, self.tat - self.tolerance)

    def place(self, instant: float) -> float:
        self.tat = max(self.tat, instant) + self.interval
        self.last = instant
        return max(instant, self.tat - self.tolerance)


@dataclass(frozen=True)
class ArrivalTime:
    rule: TokenBucket
    tat: float
    last: float

    def earliest(self) -> float:
        tolerance = (self.rule.capacity - 1) / self.rule.rate
        return max(self.last, self.tat - tolerance)

    def place(self, instant: float) -> ArrivalTime:
        return ArrivalTime(self.rule, max(self.tat, instant) + 1 / self.rule.rate, instant)

    def memo_key(self) -> object:
        return (self.tat, self.last)


@dataclass(frozen=True)
class FirstWindows:
    """Fixed windows each started by the first admission after the one before ended, the edge rule
    applied: a window started at a holds what falls in [a, a + window + EDGE], and the next
    starts at a + window - EDGE or later (``least_apart``). Each placed admission joins the open
    window while it has room and reach, else starts the next: a placement found so proves a
    history valid, but one not found proves nothing (an admission kept out of a window with room
    may be better placed starting the next), so this rule is for ``greedy_drops_none`` and Hall
    witnesses, never for ``check_placement``."""

    limit: int
    window: float

    @property
    def horizon(self) -> float:
        return self.window + EDGE

    def start(self) -> OpenWindow:
        return OpenWindow(self, -math.inf, self.limit, -math.inf)

    def room(self, span: float) -> float:
        # windows that reach into a closed span of this length start within span + window + EDGE
        # of each other, window - EDGE apart at least
        return self.limit * (math.floor((span + self.horizon) / least_apart(self.window)) + 1)

    def tracker(self) -> OpenWindowTracker:
        return OpenWindowTracker(self)


class OpenWindowTracker:
    """``OpenWindow`` kept in place."""

    def __init__(self, rule: FirstWindows) -> None:
        self.limit, self.apart, self.reach = rule.limit, least_apart(rule.window), rule.horizon
        self.started, self.count, self.last = -math.inf, rule.limit, -math.inf

    def earliest(self) -> float:
        return self.last if self.count < self.limit else self.started + self.apart

    def place(self, instant: float) -> float:
        if self.count < self.limit and instant <= self.started + self.reach:
            self.count += 1
        else:
            self.started, self.count = instant, 1
        self.last = instant
        return self.earliest()


@dataclass(frozen=True)
class OpenWindow:
    rule: FirstWindows
    started: float
    count: int
    last: float

    def earliest(self) -> float:
        if self.count < self.rule.limit:
            return self.last
        return self.started + least_apart(self.rule.window)

    def place(self, instant: float) -> OpenWindow:
        reach = self.started + self.rule.horizon
        if self.count < self.rule.limit and instant <= reach:
            return OpenWindow(self.rule, self.started, self.count + 1, instant)
        return OpenWindow(self.rule, instant, 1, instant)

    def memo_key(self) -> object:
        return (self.started, self.count, self.last)
