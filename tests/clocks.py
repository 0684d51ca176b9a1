"""A clock tests move by hand; ``advance`` makes Redis feel the same time pass."""

from __future__ import annotations

from typing import Any

from harness.explorer.keys import age

START = 1_699_999_200.0  # a multiple of 3600 s, so of every window the tests use


class ManualClock:
    def __init__(self, start: float = START) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def advance(clock: ManualClock, client: Any, seconds: float) -> None:
    clock.advance(seconds)
    age(client, seconds)
