"""Clocks the explorer cannot move are found: where a program's clock cannot be controlled,
before the race (exit 3); any clock by the `now` its decisions report (exit 2); either is judged
only with --allow-real-clock. Go programs on go-redis read the schedule's time."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.errors import ClockUncontrolled
from ratelimit_harness.harness.explorer.clocks import real
from ratelimit_harness.harness.explorer.clocks.real import TOLERANCE, OffClock, uncontrolled
from ratelimit_harness.harness.explorer.instances.process import POOL
from ratelimit_harness.harness.explorer.schedule.run import Setup
from ratelimit_harness.harness.explorer.search.drawing import Space
from ratelimit_harness.harness.explorer.search.explore import explore
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.harness.pytest_plugin import RaceResult
from ratelimit_harness.limiters import Policy
from ratelimit_harness.limiters.program import EXEC
from tests.limiters.go_programs import build

FIRST = "fixed-window:anchor=first,limit=2,window=10"
CRASH_ONLY = Space(nemeses=("crash",))
REFUSED = "ptrace is not allowed here (a test's stand-in)"
UPTIME_CLOCK = Path(__file__).parents[2] / "limiters" / "programs" / "kernel_uptime_clock.py"


@pytest.fixture
def ptrace_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a machine whose container forbids ptrace: no program's clock can be controlled."""
    monkeypatch.setattr(real, "probe", lambda: REFUSED)


def test_only_a_program_is_refused_where_clocks_cannot_be_controlled(ptrace_refused: None) -> None:
    assert uncontrolled(f"{EXEC}node limiter.js") == REFUSED
    assert uncontrolled("fixed-window-lua") == ""
    assert uncontrolled("mymodule:factory") == ""


def test_a_now_off_the_schedule_is_counted_and_the_first_said() -> None:
    off = OffClock()
    assert off.check("app-0 check(a)", 100.0 + TOLERANCE, 90.0, 100.0)
    assert off.check("app-0 check(a)", 90.0 - TOLERANCE, 90.0, 100.0)
    assert not off.check("app-1 check(a)", 100.0 + 2 * TOLERANCE, 90.0, 100.0)
    assert not off.check("app-0 check(b)", 90.0 - 3 * 86400, 90.0, 100.0)
    assert off.count == 2
    assert off.first == (
        "app-1 check(a) reported now=102.000, while the schedule's time was "
        "90.000..100.000 (2.000 s ahead)"
    )
    total = OffClock()
    total.add(OffClock())
    total.add(off)
    assert total.said().startswith("2 decisions reported a time the schedule did not show")
    assert total.said().endswith(off.first)


def test_race_refuses_a_program_whose_clock_cannot_be_controlled_before_any_redis_starts(
    ptrace_refused: None, capsys: pytest.CaptureFixture[str]
) -> None:
    limiter = f"{EXEC}node limiter.js"
    args = ["race", "--limiter", limiter, "--policy", FIRST, "--redis-url", "redis://127.0.0.1:1"]
    assert main(args) == 3
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error == (
        f"error: {limiter}'s clock cannot follow the schedule: {REFUSED}; --allow-real-clock "
        "races it on real time, judged as if it never decided by its own clock"
    )


@pytest.fixture(scope="module")
def go_programs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("go"))


@pytest.mark.integration
@pytest.mark.slow
def test_go_limiters_on_go_redis_read_the_schedules_time(
    go_programs: Path, virtual_server: RedisServer
) -> None:
    """Go reads its clock through the vDSO: replaced, it reads the schedule's time. The `now`
    each decision reports is on the schedule; the GET-then-SET one over-admits with no fault, the
    Lua one is clean."""
    policy = Policy.parse(FIRST)
    url, clock_file = virtual_server.url, virtual_server.clock_file
    try:
        lua = Setup(f"{EXEC}{go_programs / 'lua-window'}", policy, 2, url, clock_file=clock_file)
        clean = explore(lua, space=CRASH_ONLY, max_examples=100, seed=1)
        get_set = Setup(f"{EXEC}{go_programs / 'get-set'}", policy, 2, url, clock_file=clock_file)
        broken = explore(get_set, space=CRASH_ONLY, max_examples=100, seed=1)
    finally:
        POOL.close()
    assert clean.found is None, clean.found and clean.found.trace
    assert clean.errors == 0, clean.first_error
    assert clean.decisions > 100
    assert clean.off_clock.count == 0, clean.off_clock.first
    assert "over-admission" in broken.kinds
    assert broken.faults == frozenset()
    assert broken.found is not None
    assert all(op.now is not None for op in broken.found.history if op.complete is not None)


@pytest.mark.integration
@pytest.mark.slow
def test_race_finds_a_clock_past_every_clock_function_by_what_its_decisions_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A correct program that tells the time from /proc, behind `sh -c`: the `now` its
    decisions report gives it away. Exit 2 with the first; --allow-real-clock judges it
    (clean)."""
    limiter = f"{EXEC}sh -c '{sys.executable} {UPTIME_CLOCK}'"
    summary_file = str(tmp_path / "race.json")
    args = ["race", "--limiter", limiter, "--policy", FIRST, "--nemesis", "crash", "--seed", "1",
            "--max-examples", "20", "--redis", "embedded", "--json", summary_file]  # fmt: skip
    try:
        refused = main(args)
        error = capsys.readouterr().err.strip().splitlines()[-1]
        summary = json.loads((tmp_path / "race.json").read_text())
        allowed = main([*args, "--allow-real-clock"])
        out = capsys.readouterr().out
    finally:
        POOL.close()
    assert refused == 2
    assert error.startswith("error: ")
    assert "decisions reported a time the schedule did not show" in error
    assert error.endswith(
        f"--allow-real-clock judges {limiter} as if it never decided by that clock"
    )
    assert summary["off_clock"] == summary["decisions"] > 20
    assert summary["first_off_clock"].startswith("app-")
    assert summary["allow_real_clock"] is False
    assert allowed == 0
    assert "no violation in" in out
    assert "real clock: " in out


@pytest.mark.integration
def test_the_plugin_refuses_a_program_where_clocks_cannot_be_controlled_unless_told(
    race: Callable[..., RaceResult], ptrace_refused: None
) -> None:
    with pytest.raises(ClockUncontrolled, match=r"ptrace is not allowed .* allow_real_clock=True"):
        race(exec="node limiter.js", policy=FIRST)


@pytest.mark.integration
@pytest.mark.slow
def test_a_stall_while_a_command_is_held_fires_no_client_timeout(
    go_programs: Path, virtual_server: RedisServer
) -> None:
    """go-redis times each read out after 3 s of its monotonic clock. Stalls of up to several
    10 s windows pass while a command of the one-script program is held: its time of day moves,
    its monotonic clock waits for the next request, so no read times out and every check
    answers. (Moved with the time of day, a stall past 3 s failed its check with an i/o
    timeout.)"""
    policy = Policy.parse(FIRST)
    url, clock_file = virtual_server.url, virtual_server.clock_file
    lua = Setup(f"{EXEC}{go_programs / 'lua-window'}", policy, 2, url, clock_file=clock_file)
    try:
        found = explore(lua, space=Space(nemeses=("stall",)), max_examples=150, seed=3)
    finally:
        POOL.close()
    assert found.errors == 0, found.first_error
    assert found.found is None, found.found and found.found.trace
