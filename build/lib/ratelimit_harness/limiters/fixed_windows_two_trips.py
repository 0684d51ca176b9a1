"""fixed-windows-two-trips: several fixed windows checked one after the other, a round trip
each, as stacked limiters do (broken). Each trip is fixed_window.lua's atomic
check-and-increment, so no window is over-admitted; but a request the second window refuses has
already been counted in the first, and that count shuts out requests the first had room for."""

from __future__ import annotations

from dataclasses import replace

from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.fixed_windows_lua import FixedWindows


class FixedWindowsTwoTrips(FixedWindows):
    script_name = "fixed_window.lua"

    def check(self, identity: str) -> Decision:
        decision = Decision(allowed=False)
        for n, (limit, window_us) in enumerate(self.windows):
            now = self.server_now_arg()
            reply = self.script.run(self.client, self.key(identity, n), limit, window_us, now)
            decision = replace(Decision.from_script(reply, limit), binding=n)
            if not decision.allowed:
                break
        return decision
