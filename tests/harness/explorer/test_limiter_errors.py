"""A limiter's errors are never silence: a check that raises, or answers what is not a
decision, is an outcome of its own, counted and shown; one that never decides ends the race
with exit 2 and the first such answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.explorer.schedule.actions import Crash
from ratelimit_harness.harness.history import Outcome
from ratelimit_harness.harness.provision import RedisServer
from tests.harness.explorer.schedules import run, steps

pytestmark = pytest.mark.integration
FIXED = "fixed-window:limit=1,window=10"
PLUGINS = "tests.harness.explorer.plugins"


def _race(url: str, tmp_path: Path, plugin: str, *extra: str) -> list[str]:
    return ["race", "--limiter", f"{PLUGINS}:{plugin}", "--policy", FIXED, "--seed", "1",
            "--redis-url", url, "--trace", str(tmp_path / "trace.json"), *extra]  # fmt: skip


@pytest.mark.parametrize(
    ("plugin", "first"),
    [
        ("raising", "RuntimeError: no connection to the rate service for user:1"),
        (
            "undecided",
            "TypeError: a limiter returned 'maybe': expected a bool or an object with .allowed",
        ),
    ],
)
@pytest.mark.usefixtures("client")  # an empty database
def test_a_limiter_that_never_decides_ends_the_race_with_exit_2_and_why(
    redis_server: RedisServer,
    plugin: str,
    first: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(_race(redis_server.url, tmp_path, plugin, "--max-examples", "20")) == 2
    captured = capsys.readouterr()
    said = [line for line in captured.err.splitlines() if line.strip()]
    *notes, line = said
    assert all(note.startswith("note: ") for note in notes)  # and no traceback
    assert line.startswith(
        f"error: {PLUGINS}:{plugin} never returned a decision in 40 schedules"
    )  # 20 of each stage
    assert line.endswith(f"the first: app-0 check(user:1): {first}")
    assert "no violation" not in captured.out  # never judged clean
    assert not (tmp_path / "trace.json").exists()


def test_errors_are_counted_and_the_first_shown_while_the_race_goes_on(
    redis_server: RedisServer, client: redis.Redis, tmp_path: Path
) -> None:
    summary = tmp_path / "race.json"
    args = _race(redis_server.url, tmp_path, "sometimes_raising", "--max-examples", "30")
    assert main([*args, "--json", str(summary)]) in (0, 1)  # judged, whatever the verdict
    said = json.loads(summary.read_text())
    assert said["errors"] > 0
    assert said["decisions"] > 0
    assert said["first_error"].endswith("RuntimeError: the rate service hiccuped")


def test_the_summary_line_counts_the_errors(
    redis_server: RedisServer,
    client: redis.Redis,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(_race(redis_server.url, tmp_path, "sometimes_raising", "--max-examples", "30"))
    (line,) = [said for said in capsys.readouterr().out.splitlines() if said.startswith("errors:")]
    errors, checks = (int(n) for n in line.split()[1:4:2])
    assert 0 < errors < checks
    assert line.endswith(": RuntimeError: the rate service hiccuped")


def test_a_check_that_raises_before_reaching_redis_is_an_error(redis_server: RedisServer) -> None:
    result, verdict = run(redis_server.url, f"{PLUGINS}:raising", FIXED, steps(0))
    (op,) = result.history
    assert op.outcome is Outcome.ERROR  # nothing reached Redis: it cannot have counted
    assert result.errors == ["app-0 check(user:1): RuntimeError: no connection to the rate "
                             "service for user:1"]  # fmt: skip
    assert result.trace[-1].what == "check(user:1) failed"
    assert result.trace[-1].reply.startswith("RuntimeError: no connection")
    assert result.decisions == 0
    assert verdict.valid


def test_a_check_that_raises_after_a_write_may_have_counted(redis_server: RedisServer) -> None:
    result, _ = run(redis_server.url, f"{PLUGINS}:writes_then_raises", FIXED, steps(0, 0))
    (op,) = result.history
    assert op.outcome is Outcome.UNKNOWN  # its INCR reached Redis first
    assert result.errors == ["app-0 check(user:1): RuntimeError: lost the reply"]


def test_a_crash_is_not_swallowed_by_a_limiter_that_fails_open(redis_server: RedisServer) -> None:
    result, _ = run(redis_server.url, f"{PLUGINS}:fail_open", FIXED, [*steps(0), Crash(0)])
    (op,) = result.history
    assert op.outcome is Outcome.UNKNOWN  # not "allowed": the crash reached no except clause
    assert op.complete is None
    assert not result.errors
