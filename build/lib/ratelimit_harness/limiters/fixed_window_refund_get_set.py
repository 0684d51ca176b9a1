"""fixed-window-refund-get-set: fixed-window-lua, but a request is given back in two round trips,
HMGET then HSET of the count less the request (wrong).

Part 7's lost update, in the give-back: a request another instance admits between the two
trips is counted by the script, then written over by the HSET, so the window forgets it and
admits one more than its limit; two give-backs that read the same count lose one, and the
window refuses a request it had room for. Only give-backs race, so only a run that gives
requests back (``load`` with a rule's ``refund = "failed"``) can catch it."""

from __future__ import annotations

from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.fixed_window_lua import FixedWindowLua, admitted_in


class FixedWindowRefundGetSet(FixedWindowLua):
    def refund(self, identity: str, decision: Decision, cost: int = 1) -> None:
        key = self.key(identity)
        window, count = self.client.hmget(key, "w", "n")
        if window is not None and int(window) == admitted_in(decision, self, identity):
            self.client.hset(key, "n", max(0, int(count) - cost))
