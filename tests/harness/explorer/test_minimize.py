"""Shrinking on the actions: what does not matter goes, what matters stays, time folds."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ratelimit_harness.harness.explorer.schedule.actions import (
    Action,
    Advance,
    Crash,
    Skew,
    Step,
    Through,
)
from ratelimit_harness.harness.explorer.schedule.run import run_schedule
from ratelimit_harness.harness.explorer.search.minimize import minimize
from ratelimit_harness.harness.provision import RedisServer
from tests.harness.explorer.schedules import setup


def S(instance: int) -> Step:
    return Step(instance, "user:1")


def T(instance: int) -> Through:
    return Through(instance, "user:1")


def _same(actions: list[Action]) -> list[Action]:
    return actions


def _subsequence(needle: list[Action], hay: list[Action]) -> bool:
    rest = iter(hay)
    return all(any(action == other for other in rest) for action in needle)


def test_a_schedule_that_does_not_fail_again_gives_nothing() -> None:
    assert minimize([S(0), S(1)], _same, lambda actions: False) is None


def test_what_does_not_matter_goes() -> None:
    padded: list[Action] = [T(1), S(0), T(1), Advance(3), S(0), Crash(1), S(0), Skew(0, 5)]
    assert minimize(padded, _same, lambda actions: Crash(1) in actions) == [Crash(1)]


def test_two_periods_of_time_passing_fold_into_one() -> None:
    def late(actions: list[Action]) -> bool:  # instance 0 moves after 10 s or more
        passed = 0.0
        for action in actions:
            if isinstance(action, Advance):
                passed += action.seconds
            elif action == S(0) and passed >= 10:
                return True
        return False

    assert minimize([Advance(9.99), S(1), Advance(0.01), S(0)], _same, late) == [
        Advance(10.0),
        S(0),
    ]


def test_two_moves_in_a_row_become_one_whole_request() -> None:
    def requests(actions: list[Action]) -> int:  # of instance 0, two steps each
        halves = sum(1 for a in actions if a == S(0)) + 2 * sum(1 for a in actions if a == T(0))
        return halves // 2

    fewest = minimize([Advance(10), S(1), S(0), S(0)], _same, lambda a: requests(a) == 1)
    assert fewest == [T(0)]


def test_an_instance_whose_moves_only_matter_together_is_left_out_at_once() -> None:
    def fails(actions: list[Action]) -> bool:  # instance 1 moving an odd number of times hides it
        odd = sum(1 for a in actions if a == S(1)) % 2
        return not odd and Advance(10) in actions

    assert minimize([S(1), Advance(10), S(0), S(1)], _same, fails) == [Advance(10)]


ACTIONS = st.sampled_from([S(0), S(1), T(0), T(1), Advance(1), Advance(10), Crash(1)])


@given(st.lists(ACTIONS, max_size=20), st.data())
def test_what_is_left_is_exactly_as_long_as_what_is_needed(
    actions: list[Action], data: st.DataObject
) -> None:
    """Failing means holding a given subsequence: the shortest such schedule is that
    subsequence, and the shrinking reaches one as short."""
    keep = data.draw(st.lists(st.booleans(), min_size=len(actions), max_size=len(actions)))
    needed = [action for action, kept in zip(actions, keep, strict=True) if kept]
    fewest = minimize(actions, _same, lambda candidate: _subsequence(needed, candidate))
    assert fewest is not None
    assert len(fewest) == len(needed)
    assert _subsequence(needed, fewest)


@pytest.mark.integration
def test_a_real_expiry_race_shrinks_to_its_four_actions(redis_server: RedisServer) -> None:
    """fixed-window-setnx-incr: SET NX EX, the key expires, INCR recreates it with no TTL."""
    setnx_incr = setup(
        redis_server.url, "fixed-window-setnx-incr", "fixed-window:limit=1,window=10"
    )
    padded: list[Action] = [S(0), S(0), S(0), T(1), S(0), S(0), Advance(9.99), Advance(0.02), S(0)]
    fewest = minimize(
        padded, lambda a: run_schedule(setnx_incr, a), lambda o: "immortal-key" in o[1].kinds
    )
    assert fewest is not None
    assert fewest[0].actions == [S(0), S(0), Advance(10.01), S(0)]
