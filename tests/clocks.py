"""A clock tests move by hand; ``advance`` makes Redis feel the same time pass."""

from __future__ import annotations

from typing import Any

START = 1_699_999_200.0  # a multiple of 3600 s, so of every window the tests use


class ManualClock:
    def __init__(self, start: float = START) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def advance(clock: ManualClock, client: Any, seconds: float) -> None:
    """Move ``clock`` and shorten every key's TTL by as much, deleting those that run out
    (tests move time by whole tens of milliseconds, far above the real time they take)."""
    clock.advance(seconds)
    elapsed_ms = round(seconds * 1000)
    for key in client.scan_iter(count=1000):
        ttl = client.pttl(key)
        if ttl < 0:
            continue
        if ttl <= elapsed_ms:
            client.delete(key)
        else:
            client.pexpire(key, ttl - elapsed_ms)
