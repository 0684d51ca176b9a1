"""Every clock a limiter's program reads follows virtual time: the time of day and the monotonic
clocks (Node's ``process.hrtime``), through crashes and restarts, across the runs a program
outlives."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.explorer.clocks.virtual import InstanceClock, VirtualTime
from ratelimit_harness.harness.explorer.instances.process import POOL, ProcessInstance
from ratelimit_harness.harness.explorer.instances.thread import TIMEOUT, Finished, Pending
from ratelimit_harness.harness.explorer.instances.waiting import wait_until_waiting
from ratelimit_harness.harness.explorer.schedule.run import Run, RunResult, Setup, scheduled
from ratelimit_harness.harness.explorer.search import bounded
from ratelimit_harness.harness.explorer.search.drawing import Space
from ratelimit_harness.harness.explorer.search.explore import explore
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.harness.provision.virtual_time import START
from ratelimit_harness.limiters import Policy
from ratelimit_harness.limiters.program import EXEC
from tests.limiters.js_programs import require_programs

pytestmark = pytest.mark.integration
CLOCKS = Path(__file__).parents[2] / "limiters" / "programs" / "clocks"
FIXED = Policy.parse("fixed-window:limit=2,window=10")
CRASH_ONLY = Space(nemeses=("crash",))


@pytest.fixture(autouse=True)
def no_programs_left() -> Iterator[None]:
    require_programs()
    yield
    POOL.close()


def node(name: str) -> str:
    return f"{EXEC}node {CLOCKS / name}"


def test_a_monotonic_clock_agrees_with_virtual_time_in_every_schedule(
    virtual_server: RedisServer,
) -> None:
    """The program reads Date.now() once as it boots, then process.hrtime(): the `now` each of
    its decisions reports is the schedule's instant, to the millisecond, after time moves,
    crashes and restarts, in each run (each begins at the same instant, so a pooled program's
    monotonic clock goes back between runs)."""
    setup = Setup(
        node("monotonic-lua.js"), FIXED, 2, virtual_server.url, clock_file=virtual_server.clock_file
    )
    bound = bounded.bound_for(FIXED, 2, CRASH_ONLY.nemeses)
    admin = redis.Redis.from_url(setup.url)
    reported: list[tuple[float, float]] = []  # (the schedule's instant, the program's now)
    errors: list[str] = []  # a program that aborted (its clock went back below its boot) says so

    def keep(outcome: RunResult) -> bool:
        reported.extend((op.invoke, op.now) for op in outcome.history if op.now is not None)
        errors.extend(outcome.errors)
        return False

    try:
        with scheduled():
            coverage = bounded.Schedules(FIXED, bound).read(lambda: Run(setup, admin), keep, 120)
    finally:
        admin.close()
    assert coverage.schedules == 120
    assert not errors, errors[:3]
    assert len(reported) > 200
    moved = {round(at, 3) for at, _ in reported}
    assert len(moved) > 3  # time moved, to several instants
    assert all(abs(now - at) < 0.001 for at, now in reported), reported[:10]


def test_a_client_clock_limiter_on_monotonic_time_is_clean_and_its_get_set_twin_is_not(
    virtual_server: RedisServer,
) -> None:
    """With no fault that moves a clock (no stall, no skew), the Lua one is clean; the GET then
    SET one on the same clock over-admits and needs no fault."""
    url, clock_file = virtual_server.url, virtual_server.clock_file
    lua = Setup(node("monotonic-lua.js"), FIXED, 2, url, clock_file=clock_file)
    clean = explore(lua, space=CRASH_ONLY, max_examples=100, seed=1)
    assert clean.found is None, clean.found and clean.found.trace
    assert clean.errors == 0, clean.first_error
    get_set = Setup(node("monotonic-get-set.js"), FIXED, 2, url, clock_file=clock_file)
    broken = explore(get_set, space=CRASH_ONLY, max_examples=100, seed=1)
    assert "over-admission" in broken.kinds
    assert broken.faults == frozenset()


def test_a_program_booted_at_a_later_instant_answers_after_time_goes_back(
    virtual_server: RedisServer, tmp_path: Path
) -> None:
    """A program started while an instance's clock is ahead (a spare started beside a skewed
    instance, say) is taken at once by a run that begins earlier: its monotonic clock goes back
    while it is still connecting. It boots far below any instant a run shows, so it never goes
    back below its boot (Node aborts there, at its next timer)."""
    ahead = InstanceClock(VirtualTime(START + 30), skew=5.0)
    instance = ProcessInstance(
        "app-0",
        0,
        ahead,
        command=f"node {CLOCKS / 'monotonic-lua.js'}",
        policy=FIXED,
        url=virtual_server.url,
        log=lambda *_: None,
        folder=tmp_path,
    )
    try:
        wait_until_waiting(instance.program.pid, 10.0)  # booted, as a spare is when taken
        answers = []
        for clock in (InstanceClock(VirtualTime(START)), ahead):
            instance.join(clock, lambda *_: None)
            event = instance.start("user:1")
            while isinstance(event, Pending):
                event = instance.go()
            answers.append(event)
    finally:
        instance.stop()
    assert [type(each) for each in answers] == [Finished, Finished], answers
    nows = [each.decision.now for each in answers if each.decision]  # type: ignore[union-attr]
    assert nows == pytest.approx([START, START + 35], abs=0.001)  # (the program floors to ms)


def test_a_program_that_waits_for_a_timer_inside_a_request_is_stuck_and_told_why(
    virtual_server: RedisServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its timer is due 50 ms on, and the schedule's time stands still inside a request: the
    race ends (exit 2) within seconds of the program going quiet, saying so, not after the
    10 s any instance may run."""
    args = ["race", "--limiter", node("timer-in-check.js"), "--policy", str(FIXED),
            "--max-examples", "5", "--redis-url", virtual_server.url, "--flush"]  # fmt: skip
    began = time.monotonic()
    assert main(args) == 2
    took = time.monotonic() - began
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("error: app-0 waits, with no command on its way to Redis and no answer")
    assert "for a timer, most likely" in error
    assert took < TIMEOUT, took
