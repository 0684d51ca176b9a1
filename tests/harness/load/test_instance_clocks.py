"""An instance on a clock of its own journals on real time: the epoch of its monotonic clock is
taken from the reading of the time of day that two monotonic readings bracket most tightly, so a
process held between two readings does not put its journals behind."""

from __future__ import annotations

import pytest

from ratelimit_harness.harness.load.system.clocks import true_clock

OFFSET = 1_796_000_000.0  # real time less the monotonic clock, in these clocks


class HeldClocks:
    """A monotonic clock that advances a microsecond a reading, and the time of day beside it;
    after each reading of the time of day numbered in ``held``, 4 ms pass (descheduled)."""

    def __init__(self, held: set[int]) -> None:
        self.now = 1000.0
        self.held = held
        self.walls = 0

    def monotonic(self) -> float:
        self.now += 1e-6
        return self.now

    def wall(self) -> float:
        self.now += 1e-6
        reading = self.now + OFFSET
        if self.walls in self.held:
            self.now += 0.004
        self.walls += 1
        return reading

    def real(self) -> float:
        return self.now + OFFSET


@pytest.mark.parametrize("held", [set(), {0}, set(range(40))])
def test_the_journals_stay_on_real_time_though_a_reading_was_held(held: set[int]) -> None:
    clocks = HeldClocks(held)
    clock = true_clock(clocks.wall, clocks.monotonic)
    assert clock() == pytest.approx(clocks.real(), abs=5e-6)


def test_one_reading_that_was_held_is_off_by_half_the_hold() -> None:
    clocks = HeldClocks({0})
    clock = true_clock(clocks.wall, clocks.monotonic, readings=1)
    assert clocks.real() - clock() == pytest.approx(0.002, abs=1e-5)  # why it tries many times
