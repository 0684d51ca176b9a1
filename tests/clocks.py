"""A clock tests move by hand; ``advance`` makes Redis feel the same time pass."""

from __future__ import annotations

import time
from typing import Any

from ratelimit_harness.harness.explorer.clocks.virtual import VirtualTime

START = 1_699_999_200.0  # a multiple of 3600 s, so of every window the tests use


class ManualClock(VirtualTime):
    """The explorer's virtual time, starting at the tests' own aligned instant. ``set_ttls``:
    for each key ``advance`` last gave a TTL, that TTL (ms) and the real instant it gave it."""

    def __init__(self, start: float = START) -> None:
        super().__init__(start)
        self.set_ttls: dict[Any, tuple[int, float]] = {}


def advance(clock: ManualClock, client: Any, seconds: float) -> None:
    """Move ``clock`` and shorten every key's TTL by as much, deleting those that run out
    (tests move time by whole tens of milliseconds, far above the real time they take).

    A key this function gave a TTL last time gets back the real time Redis counted down since:
    on a slow server (a Cluster in a container) that would add up, round after round, and end
    a window early. A key whose TTL is above the one given was set again; it is taken as it is.
    """
    clock.advance(seconds)
    elapsed_ms = round(seconds * 1000)
    now = time.monotonic()
    given, clock.set_ttls = clock.set_ttls, {}
    for key in client.scan_iter(count=1000):
        ttl = client.pttl(key)
        if ttl < 0:
            continue
        if key in given and ttl <= given[key][0]:
            ttl_given, given_at = given[key]
            ttl = min(ttl_given, ttl + round((now - given_at) * 1000))
        if ttl <= elapsed_ms:
            client.delete(key)
        else:
            client.pexpire(key, ttl - elapsed_ms)
            clock.set_ttls[key] = (ttl - elapsed_ms, time.monotonic())
