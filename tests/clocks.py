"""A clock tests move by hand; ``advance`` makes Redis feel the same time pass."""

from __future__ import annotations

import time
from typing import Any

from ratelimit_harness.harness.explorer.clocks import VirtualTime

START = 1_699_999_200.0  # a multiple of 3600 s, so of every window the tests use


class ManualClock(VirtualTime):
    """The explorer's virtual time, starting at the tests' own aligned instant. ``moved_at``:
    the real instant it was made or last moved by ``advance``."""

    def __init__(self, start: float = START) -> None:
        super().__init__(start)
        self.moved_at = time.monotonic()


def advance(clock: ManualClock, client: Any, seconds: float) -> None:
    """Move ``clock`` and shorten every key's TTL by as much, deleting those that run out
    (tests move time by whole tens of milliseconds, far above the real time they take). The
    real time since the last move, which Redis counted down too, is given back: on a slow
    server (a Cluster in a container) it would add up, round after round, and end a window
    early."""
    clock.advance(seconds)
    elapsed_ms = round(seconds * 1000)
    real_ms = round((time.monotonic() - clock.moved_at) * 1000)
    for key in client.scan_iter(count=1000):
        ttl = client.pttl(key)
        if ttl < 0:
            continue
        if ttl <= elapsed_ms:
            client.delete(key)
        else:
            client.pexpire(key, ttl - elapsed_ms + real_ms)
    clock.moved_at = time.monotonic()
