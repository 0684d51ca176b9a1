"""Schedules run as written: each round trip a point, faults where they are put."""

import pytest

from ratelimit_harness.harness.explorer.schedule.actions import (
    Action,
    Advance,
    Crash,
    Skew,
    Through,
)
from ratelimit_harness.harness.history import Outcome
from ratelimit_harness.harness.provision import RedisServer
from tests.harness.explorer.schedules import run, steps

pytestmark = pytest.mark.integration
FIXED = "fixed-window:limit=1,window=10"
# both instances read before either writes: the chapter's GET/SET race, in four round trips
GET_GET_SET_SET = steps(0, 0, 1, 1, 0, 1)


def test_the_get_set_race_is_exactly_the_interleaving_chosen(redis_server: RedisServer) -> None:
    result, verdict = run(redis_server.url, "naive-get-set", FIXED, GET_GET_SET_SET)
    commands = [line.what.split()[0] for line in result.trace if line.lane != "-"]
    assert commands == [
        "check(user:1)",
        "GET",
        "check(user:1)",
        "GET",
        "SET",
        "check(user:1)",
        "SET",
        "check(user:1)",
    ]
    assert [op.outcome for op in result.history] == [Outcome.ALLOWED, Outcome.ALLOWED]
    assert verdict.kinds == {"over-admission"}


def test_a_script_is_one_point_so_the_same_schedule_cannot_break_it(
    redis_server: RedisServer,
) -> None:
    result, verdict = run(redis_server.url, "fixed-window-lua", FIXED, GET_GET_SET_SET)
    assert verdict.valid
    decided = [op.outcome for op in result.history if op.outcome is not Outcome.UNKNOWN]
    assert decided == [Outcome.ALLOWED, Outcome.REJECTED]  # the other two never got their turn


def test_pipelined_commands_are_separate_points(redis_server: RedisServer) -> None:
    result, _ = run(
        redis_server.url, "sliding-log-pipeline", "sliding-window:limit=1,window=10", steps(0, 0)
    )
    sent = [line.what for line in result.trace[1:]]
    assert sent[0].startswith("ZREMRANGEBYSCORE")  # one step in: the first command only
    assert sent[1].startswith("schedule ends: never sends ZADD")
    assert result.history[0].outcome is Outcome.UNKNOWN  # unfinished at the bound: unknown


def test_a_crash_between_incr_and_expire_leaves_an_immortal_key(redis_server: RedisServer) -> None:
    actions: list[Action] = [*steps(0, 0), Crash(0)]  # INCR sent; EXPIRE never is
    result, verdict = run(redis_server.url, "fixed-window-incr-expire", FIXED, actions)
    assert verdict.kinds == {"immortal-key"}
    assert result.history[0].complete is None
    assert -1.0 in result.ttls.values()


def test_time_passing_expires_the_key_between_setnx_and_incr(
    redis_server: RedisServer,
) -> None:
    actions: list[Action] = [
        Through(0, "user:1"),
        Advance(5),
        *steps(0, 0),
        Advance(5.01),
        Through(0, "user:1"),
    ]
    _, verdict = run(redis_server.url, "fixed-window-setnx-incr", FIXED, actions)
    assert "immortal-key" in verdict.kinds


def test_keys_expire_by_virtual_time_only(redis_server: RedisServer) -> None:
    actions: list[Action] = [
        Through(0, "user:1"),
        Advance(9.99),
        Through(0, "user:1"),
        Advance(0.02),
        Through(0, "user:1"),
    ]
    result, verdict = run(redis_server.url, "fixed-window-lua", FIXED, actions)
    assert [op.outcome for op in result.history] == [
        Outcome.ALLOWED,
        Outcome.REJECTED,
        Outcome.ALLOWED,
    ]
    assert verdict.valid


def test_a_clock_running_ahead_refills_the_client_clock_bucket(redis_server: RedisServer) -> None:
    actions: list[Action] = [Through(0, "user:1"), Skew(1, 10), Through(1, "user:1")]
    spec = "token-bucket:capacity=1,rate=0.1"
    _, verdict = run(redis_server.url, "token-bucket-client-clock", spec, actions)
    assert verdict.kinds == {"over-admission"}
    _, verdict = run(redis_server.url, "token-bucket-lua", spec, actions)
    assert verdict.valid


def test_a_plugged_in_limiter_reading_time_time_runs_on_virtual_time(
    redis_server: RedisServer,
) -> None:
    actions: list[Action] = [
        Through(0, "user:1"),
        Through(1, "user:1"),
        Advance(10),
        Through(0, "user:1"),
    ]
    result, verdict = run(redis_server.url, "tests.limiters.sample_plugin:factory", FIXED, actions)
    assert [op.outcome for op in result.history] == [
        Outcome.ALLOWED,
        Outcome.REJECTED,
        Outcome.ALLOWED,
    ]
    assert verdict.valid


def test_the_recreated_counter_of_setnx_incr_admits_one_too_many(redis_server: RedisServer) -> None:
    """The trace the explorer found: app-0 stops between SET NX and INCR while its window's key
    expires; app-1 is admitted in the next window; app-0's INCR starts a fresh count at 1. (A hair
    after the edge the explorer starts on: an admission at the very instant of an edge may count
    in the window before it, which would leave the window room.)"""
    actions: list[Action] = [
        Advance(0.01),
        Through(0, "user:1"),
        *steps(0, 0),
        Advance(10),
        Through(1, "user:1"),
        Advance(0.01),
        *steps(0),
    ]
    _, verdict = run(redis_server.url, "fixed-window-setnx-incr", FIXED, actions)
    assert verdict.kinds == {"immortal-key", "over-admission"}


def test_a_limiter_that_retries_is_not_accused_when_the_schedule_starves_it(
    redis_server: RedisServer,
) -> None:
    """WATCH/MULTI: app-0 reads, app-1 changes the count, app-0's EXEC fails and it starts
    over; the schedule ends while it waits to WATCH again, so its request stays unknown."""
    actions: list[Action] = [*steps(0, 0, 0), Through(1, "user:1"), *steps(0)]
    watching = "tests.limiters.sample_plugin:watch_retry"
    result, verdict = run(redis_server.url, watching, FIXED, actions)
    sent = [line.what.split()[0] for line in result.trace if line.lane == "app-0"]
    assert sent == ["check(user:1)", "WATCH", "GET", "MULTI", "schedule"]
    assert [op.outcome for op in result.history] == [Outcome.ALLOWED, Outcome.UNKNOWN]
    assert verdict.valid
