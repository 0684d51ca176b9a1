"""Reference models: each policy kind decided exactly, in memory, at its clock's instant.

Not a limiter to deploy (one process, no Redis): the yardstick the real ones are held to, and
the source of histories that are valid by construction.
"""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass, field

from ratelimit_harness.limiters.base import Clock
from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.policy import FIRST_ANCHORED, Policy


@dataclass
class _Key:
    count: int = 0  # fixed window / sliding counter: admitted in the current window
    index: int | None = None  # its window
    start: float = -math.inf  # fixed window anchored at its first admission: when it started
    previous: int = 0  # sliding counter: admitted in the window before
    log: deque[float] = field(default_factory=deque)  # sliding window: admission instants
    tokens: float | None = None  # bucket
    last: float = 0.0  # bucket: when tokens was right; leaky: last departure


class Reference:
    def __init__(self, policy: Policy, *, clock: Clock = time.time) -> None:
        self.policy = policy
        self.clock = clock
        self.keys: dict[str, _Key] = {}
        # the parameters the kind takes (the others are never read)
        self.limit = policy.limit or 0
        self.window = policy.window or 1.0
        self.capacity = policy.capacity or 0
        self.rate = policy.rate or 1.0
        name = "fixed-window-first" if policy.promise == FIRST_ANCHORED else policy.kind
        self._decide = getattr(self, "_" + name.replace("-", "_"))

    def check(self, identity: str) -> Decision:
        now = self.clock()
        state = self.keys.setdefault(identity, _Key())
        allowed, delay = self._decide(state, now)
        budget = self.budget(identity)
        return Decision(allowed, math.floor(budget), None, None, None, now, delay)

    def budget(self, identity: str) -> float:
        """What is left right now: requests in the window, tokens, or free places in the queue."""
        state, now, policy = self.keys.get(identity, _Key()), self.clock(), self.policy
        kind = policy.kind
        if policy.promise == FIRST_ANCHORED:
            return self.limit - self._since_first(state, now)
        if kind == "fixed-window":
            return self.limit - self._roll(state, now)
        if kind == "sliding-window":
            return self.limit - sum(1 for t in state.log if t > now - self.window)
        if kind == "sliding-counter":
            return self.limit - self._estimate(state, now)
        if kind == "leaky-bucket":
            return self.capacity - math.ceil(max(0.0, state.last - now) * self.rate - 1e-9)
        return self._refill(state, now)

    def _roll(self, state: _Key, now: float) -> int:
        index = math.floor(now / self.window)
        if state.index != index:
            state.previous = state.count if state.index == index - 1 else 0
            state.index, state.count = index, 0
        return state.count

    def _since_first(self, state: _Key, now: float) -> int:
        """Admitted in the window [start, start + window) ``now`` is in; none once it ended."""
        return state.count if now < state.start + self.window else 0

    def _estimate(self, state: _Key, now: float) -> float:
        current = self._roll(state, now)
        elapsed = now / self.window - math.floor(now / self.window)
        return current + state.previous * (1 - elapsed)

    def _refill(self, state: _Key, now: float) -> float:
        if state.tokens is None:
            state.tokens, state.last = float(self.capacity), now
        state.tokens = min(self.capacity, state.tokens + max(0.0, now - state.last) * self.rate)
        state.last = max(state.last, now)
        return state.tokens

    def _fixed_window(self, state: _Key, now: float) -> tuple[bool, float]:
        allowed = self._roll(state, now) < self.limit
        state.count += allowed
        return allowed, 0.0

    def _fixed_window_first(self, state: _Key, now: float) -> tuple[bool, float]:
        """A window starts at the first request after the last one ended (always admitted)."""
        if not self._since_first(state, now):
            state.start, state.count = now, 0
        allowed = state.count < self.limit
        state.count += allowed
        return allowed, 0.0

    def _sliding_window(self, state: _Key, now: float) -> tuple[bool, float]:
        while state.log and state.log[0] <= now - self.window:
            state.log.popleft()
        allowed = len(state.log) < self.limit
        if allowed:
            state.log.append(now)
        return allowed, 0.0

    def _sliding_counter(self, state: _Key, now: float) -> tuple[bool, float]:
        allowed = self._estimate(state, now) < self.limit
        state.count += allowed
        return allowed, 0.0

    def _token_bucket(self, state: _Key, now: float) -> tuple[bool, float]:
        allowed = self._refill(state, now) >= 1
        state.tokens = (state.tokens or 0.0) - allowed
        return allowed, 0.0

    _gcra = _token_bucket

    def _leaky_bucket(self, state: _Key, now: float) -> tuple[bool, float]:
        interval = 1 / self.rate
        waiting = math.ceil(max(0.0, state.last - now) / interval - 1e-9)
        if state.tokens is not None and waiting >= self.capacity:
            return False, 0.0
        depart = now if state.tokens is None else max(now, state.last + interval)
        state.tokens, state.last = 0.0, depart
        return True, depart - now
