"""in-memory: a fixed-window counter in the process' own memory (Part 7's four instances).

Correct in one process; behind a load balancer each instance counts only what it sees, so
together they admit up to instances x limit (over-admission). The Redis client is unused.
"""

import math
import time
from typing import Any

from ratelimit_harness.limiters.base import Clock
from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.policy import Policy, PolicyError


class InMemory:
    def __init__(self, client: Any, policy: Policy, *, clock: Clock = time.time, **_: Any) -> None:
        if policy.promise != "fixed-window" or policy.limit is None or policy.window is None:
            raise PolicyError(f"InMemory enforces fixed-window policies, not {policy.promise}")
        self.policy = policy
        self.limit, self.window = policy.limit, policy.window
        self.clock = clock
        self.counters: dict[str, tuple[int, int]] = {}  # identity -> (window index, count)

    def check(self, identity: str) -> Decision:
        now = self.clock()
        index = math.floor(now / self.window)
        seen_index, count = self.counters.get(identity, (index, 0))
        if seen_index != index:
            count = 0
        reset_at = (index + 1) * self.window
        if count >= self.limit:
            return Decision(False, 0, self.limit, reset_at, reset_at - now, now)
        self.counters[identity] = (index, count + 1)
        return Decision(True, self.limit - count - 1, self.limit, reset_at, 0.0, now)
