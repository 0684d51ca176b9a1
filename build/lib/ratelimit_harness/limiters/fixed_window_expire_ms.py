"""fixed-window-expire-ms: Part 2's counter, but EXPIRE is given the window in milliseconds
(wrong).

EXPIRE takes seconds; PEXPIRE takes milliseconds. A limiter that computes its window in
milliseconds, as JavaScript's ``Date.now()`` invites, and hands it to EXPIRE keeps every key a
thousand windows: no request is wrongly decided, but the keys pile up (excess TTL). A released
npm limiter did exactly this. It keeps Part 2's own flaws too.
"""

from ratelimit_harness.limiters.fixed_window_incr_expire import FixedWindowIncrExpire


class FixedWindowExpireMs(FixedWindowIncrExpire):
    def ttl(self) -> int:
        return self.window_us // 1000  # milliseconds, where EXPIRE takes seconds
