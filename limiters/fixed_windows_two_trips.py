"""fixed-windows-two-trips: several fixed windows checked one after the other, a round trip
each, as stacked limiters do (broken). Each trip is fixed_window.lua's atomic
check-and-increment, so no window is over-admitted; but a request the second window refuses has
already been counted in the first, and that count shuts out requests the first had room for."""

from __future__ import annotations

from typing import Any

from ratelimit_harness.limiters.base import RedisLimiter
from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.fixed_windows_lua import (
    COMPOSITE_WINDOWS,
    fixed_windows_only,
    windows,
)
from ratelimit_harness.limiters.policy import Policy
from ratelimit_harness.limiters.script_limiter import server_time_script


class FixedWindowsTwoTrips(RedisLimiter):
    policy_kinds = (COMPOSITE_WINDOWS,)

    def __init__(self, client: Any, policy: Policy, **options: Any) -> None:
        super().__init__(client, policy, **options)
        self.script = server_time_script("fixed_window.lua")
        self.windows = windows(policy)

    @classmethod
    def enforces(cls, policy: Policy) -> bool:
        return fixed_windows_only(policy)

    def check(self, identity: str) -> Decision:
        decision = Decision(allowed=False)
        for n, (limit, window_us) in enumerate(self.windows):
            reply = self.script.run(
                self.client, self.key(identity, n), limit, window_us, self.server_now_arg()
            )
            decision = Decision.from_script(reply, limit)
            if not decision.allowed:
                break
        return decision
