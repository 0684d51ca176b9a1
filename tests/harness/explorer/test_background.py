"""Threads a limiter starts are actors of their instance: their commands run at the explorer's
turn, named in the trace, their sleeps on virtual time, the same in every run of a schedule."""

from __future__ import annotations

import threading

import pytest

from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.explorer.instances.background import QUIET
from ratelimit_harness.harness.explorer.schedule.actions import Action, Advance, Through
from ratelimit_harness.harness.explorer.schedule.run import RunResult, Setup, run_schedule
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.harness.provision.virtual_time import START
from ratelimit_harness.limiters import Policy
from tests.limiters.background import PERIOD

pytestmark = pytest.mark.integration
FIXED = Policy.parse("fixed-window:limit=5,window=10")
PLUGINS = "tests.limiters.background"
SCHEDULE: list[Action] = [
    Through(0, "a"),
    Through(1, "a"),
    Advance(PERIOD),
    Through(0, "a"),
    Advance(PERIOD),
    Through(1, "a"),
]
REPEATS = 10


def race(server: RedisServer, plugin: str, actions: list[Action]) -> RunResult:
    setup = Setup(f"{PLUGINS}:{plugin}", FIXED, 2, server.url, clock_file=server.clock_file)
    return run_schedule(setup, actions)[0]


def lines(result: RunResult) -> list[tuple[str, float, str, str]]:
    return [(step.lane, step.clock, step.what, step.reply) for step in result.trace]


def test_a_thread_started_by_the_factory_runs_between_actions_on_virtual_time(
    virtual_server: RedisServer,
) -> None:
    """Each instance's stamper stamps as the run begins, then once each time the schedule's
    time has moved PERIOD on: the stamp is its instance's virtual clock, under its name."""
    result = race(virtual_server, "sleeper", SCHEDULE)
    stamps = [(lane, what) for lane, _, what, _ in lines(result) if "stamp" in what]
    expected = [f"SET ratelimit:background:stamp {START + seconds:.3f}" for seconds in (0, 5, 10)]
    assert stamps == [
        ("app-0~stamper", expected[0]),
        ("app-1~stamper", expected[0]),
        ("app-0~stamper", expected[1]),
        ("app-1~stamper", expected[1]),
        ("app-0~stamper", expected[2]),
        ("app-1~stamper", expected[2]),
    ]
    assert result.unscheduled == 0


def test_a_leak_thread_on_its_own_event_loop_gives_the_same_trace_in_every_run(
    virtual_server: RedisServer,
) -> None:
    """Started inside a check, it leaks at the boundary after it, then after each PERIOD of
    virtual time; ten runs of one schedule give one trace and one history."""
    before = threading.active_count()
    runs = [race(virtual_server, "async_leaker", SCHEDULE) for _ in range(REPEATS)]
    first = lines(runs[0])
    leaks = [(lane, clock, what) for lane, clock, what, _ in first if what.startswith("DECR")]
    assert leaks == [
        (f"app-{n}~leaker", START + seconds, "DECRBY ratelimit:{a}:count 1")
        for seconds in (0, PERIOD, 2 * PERIOD)
        for n in (0, 1)
    ]
    assert all(lines(run) == first for run in runs[1:])
    assert all(
        [(op.process, op.outcome) for op in run.history]
        == [(op.process, op.outcome) for op in runs[0].history]
        for run in runs
    )
    assert threading.active_count() <= before + 1  # every run's leakers ended with it


def test_a_thread_that_waits_where_nothing_schedules_it_is_said_once_and_not_waited_for(
    virtual_server: RedisServer,
) -> None:
    result = race(virtual_server, "waits_on_a_queue", [Through(0, "a"), Through(1, "a")])
    notes = [(lane, what) for lane, _, what, _ in lines(result) if "waits where" in what]
    assert [lane for lane, _ in notes] == ["app-0~server", "app-1~server"]
    assert f"runs {QUIET:g} s without a command or a sleep" in notes[0][1]
    assert len(result.history) == 2


def test_a_thread_pool_a_check_waits_on_is_left_alone(virtual_server: RedisServer) -> None:
    """Its workers run what the check hands them, and it waits: no actor, nothing waited for
    (its INCRBY passes unscheduled, as before)."""
    result = race(virtual_server, "pooled", [Through(0, "a"), Through(1, "a")])
    assert not [line for line in lines(result) if "~" in line[0] or "waits where" in line[2]]
    assert result.unscheduled == 2


def test_a_task_an_async_factory_left_running_runs_between_actions_on_virtual_time(
    virtual_server: RedisServer,
) -> None:
    """Each instance's trim task stamps as the run begins, then once each time the schedule's
    time has moved PERIOD on, under its name, never inside a check; the same in every run."""
    traces = [lines(race(virtual_server, "async_trimmer", SCHEDULE)) for _ in range(3)]
    assert traces[1:] == traces[:1] * 2
    trims = [(lane, what) for lane, _, what, _ in traces[0] if "trimmed" in what]
    expected = [f"SET ratelimit:background:trimmed {START + s:.3f} EX 60" for s in (0, 5, 10)]
    assert trims == [(f"app-{n}~trim", line) for line in expected for n in (0, 1)]
    result = race(virtual_server, "async_trimmer", SCHEDULE)
    assert result.unscheduled == 0
    assert [op.outcome for op in result.history] == ["allowed"] * 4


def test_race_judges_a_limiter_whose_async_factory_left_a_task_running() -> None:
    """Its task is scheduled, so nothing is left unscheduled: the race judges it clean."""
    policy = "fixed-window:limit=5,window=10,anchor=first"  # its window starts at a first INCR
    args = ["race", "--limiter", f"{PLUGINS}:async_trimmer", "--policy", policy,
            "--nemesis", "none", "--max-examples", "20", "--seed", "1"]  # fmt: skip
    assert main(args) == 0
