"""The clock skew a flaw is reported to need is the smallest that breaks the limiter, not the
smallest for the schedule that first showed it: shrinking a skew also moves time towards the
edge it must carry a reading across."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ratelimit_harness.harness.explorer.campaign import race_policy
from ratelimit_harness.harness.explorer.schedule.actions import Action, Advance, Skew, Step, Through
from ratelimit_harness.harness.explorer.schedule.faults import FAULTS, _between_requests
from ratelimit_harness.harness.pytest_plugin import RaceResult
from ratelimit_harness.limiters import CATALOGUE

# each catalogue limiter that needs clock skew for a flaw, and the most skew it should need:
# a millisecond carries a reading across an edge; two where a decision within a millisecond of
# the edge is excused (the edge rule), so the true time must stand a millisecond past it
SMALLEST = [
    ("fixed-window-incr-expire", "over-admission", 0.001),
    ("fixed-window-incr-expire", "wrongful-rejection", 0.002),
    ("fixed-window-setnx-incr", "over-admission", 0.001),
    ("fixed-window-setnx-incr", "wrongful-rejection", 0.002),
    ("sliding-log-pipeline", "over-admission", 0.002),
    ("sliding-counter-mget-incr", "wrongful-rejection", 0.001),
    ("token-bucket-client-clock", "over-admission", 0.001),
    ("in-memory", "wrongful-rejection", 0.002),
]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize(
    ("limiter", "flaw", "most"), SMALLEST, ids=[f"{n}-{f}" for n, f, _ in SMALLEST]
)
def test_a_flaw_under_clock_skew_needs_no_more_than_a_few_milliseconds(
    race: Callable[..., RaceResult], limiter: str, flaw: str, most: float
) -> None:
    policy = race_policy(CATALOGUE[limiter].policy)
    result = race(limiter, policy, flaw=flaw, nemesis="skew", seed=1)
    assert flaw in result.flaws, result
    assert result.faults == {"skew"}, result
    assert 0 < result.exploration.clocks_apart <= most, result


def test_a_skew_of_a_window_at_its_start_is_tried_as_a_millisecond_at_its_end() -> None:
    # fails only if the second request reads a window the true time has not reached: the
    # instance's clock must stand past the next edge (10 s) while true time stands before it
    def breaks(actions: list[Action]) -> bool:
        now, skew = 0.0, 0.0
        readings = []
        for action in actions:
            if isinstance(action, Advance):
                now += action.seconds
            elif isinstance(action, Skew):
                skew += action.seconds
            elif isinstance(action, Through):
                readings.append((now, now + skew))
        true, read = readings[-1]
        return true < 10 <= read

    schedule: list[Action] = [Through(0, "u"), Skew(0, 10.0), Through(0, "u")]
    taken: list[list[Action]] = []

    def take(candidate: list[Action]) -> bool:
        if breaks(candidate):
            taken.append(candidate)
            return True
        return False

    assert FAULTS["skew"].gentler(schedule, take)
    skews = [a.seconds for a in taken[-1] if isinstance(a, Skew)]
    assert skews == [0.001]
    assert breaks(taken[-1])


def test_time_is_never_inserted_inside_a_request() -> None:
    # inserting time there would stall the instance: a fault the flaw did not need
    actions: list[Action] = [Step(0, "u"), Step(0, "u"), Through(0, "u"), Through(1, "u")]
    assert _between_requests(actions) == [0, 3, 4]
