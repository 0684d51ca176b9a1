"""Clocks the explorer cannot move are found: a Go program before the race, any other by the `now`
its decisions report; either is judged only with --allow-real-clock."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.errors import RealClock
from ratelimit_harness.harness.explorer.clocks.real import (
    GO_BUILD_INFO,
    TOLERANCE,
    OffClock,
    real_clock_runtime,
)
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


def executable(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_go_binary_and_go_run_are_named_and_nothing_else_is(tmp_path: Path) -> None:
    go = executable(tmp_path / "limiter", b"\x7fELF" + b"\0" * 5000 + GO_BUILD_INFO + b"\0" * 64)
    other = executable(tmp_path / "other", b"\x7fELF" + b"\0" * 5000)
    script = executable(tmp_path / "script", b"#!/bin/sh\n# " + GO_BUILD_INFO + b"\n")
    assert real_clock_runtime(f"{go} --port 1").startswith(f"{go} is a Go program: ")
    assert "vDSO" in real_clock_runtime(str(go))
    assert real_clock_runtime("go run ./cmd/limiter").startswith("`go run` builds a Go program")
    for command in (str(other), str(script), f"sh -c {go}", "node limiter.js", "", "'unclosed"):
        assert real_clock_runtime(command) == "", command
    assert real_clock_runtime(str(tmp_path / "missing")) == ""


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


def test_race_refuses_a_go_program_before_any_redis_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    go = executable(tmp_path / "limiter", b"\x7fELF" + GO_BUILD_INFO)
    args = [
        "race",
        "--limiter",
        f"{EXEC}{go}",
        "--policy",
        FIRST,
        "--redis-url",
        "redis://127.0.0.1:1",
    ]
    assert main(args) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith(f"error: {go} is a Go program: Go reads its clocks through the vDSO")
    assert error.endswith("--allow-real-clock judges it as if it never decided by its own clock "
                          "(server time and TTLs still follow the schedule)")  # fmt: skip


@pytest.fixture(scope="module")
def go_programs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("go"))


@pytest.mark.integration
@pytest.mark.slow
def test_go_limiters_on_go_redis_are_judged_right_with_their_real_clock_said(
    go_programs: Path, virtual_server: RedisServer
) -> None:
    """Neither decides by its own clock (the window is a TTL on the server's): judged with a real
    clock, the GET-then-SET one over-admits with no fault, the Lua one is clean. Each reports
    its clock's now, weeks off the schedule's: counted, and dropped from the history."""
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
    assert clean.off_clock.count == clean.decisions > 100
    assert "days behind" in clean.off_clock.first
    assert "over-admission" in broken.kinds
    assert broken.faults == frozenset()
    assert broken.found is not None
    assert all(op.now is None for op in broken.found.history)


@pytest.mark.integration
@pytest.mark.slow
def test_race_finds_a_real_clock_behind_a_wrapper_by_what_its_decisions_report(
    go_programs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`sh -c` hides the Go binary from the check before the race: the `now` its decisions
    report gives it away. Exit 2 with the first; --allow-real-clock judges it (clean)."""
    limiter = f"{EXEC}sh -c {go_programs / 'lua-window'}"
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
def test_the_plugin_refuses_a_go_program_unless_told_a_real_clock_is_allowed(
    race: Callable[..., RaceResult], tmp_path: Path
) -> None:
    go = executable(tmp_path / "limiter", b"\x7fELF" + GO_BUILD_INFO)
    with pytest.raises(RealClock, match=r"is a Go program: .* allow_real_clock=True judges it"):
        race(exec=str(go), policy=FIRST)
