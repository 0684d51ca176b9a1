"""The CLI's boundary: the project's own errors are one line and exit 2; anything else is a
bug of the harness and keeps its traceback; a broken instance thread ends a run at once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from ratelimit_harness.harness import listing
from ratelimit_harness.harness.cli import main
from ratelimit_harness.harness.explorer.clocks.virtual import InstanceClock
from ratelimit_harness.harness.explorer.instances import thread
from ratelimit_harness.harness.explorer.schedule.run import run_schedule
from ratelimit_harness.harness.explorer.search import explore
from ratelimit_harness.harness.explorer.server.keys import Expiry
from ratelimit_harness.harness.provision import RedisServer
from tests.harness.explorer import plugins
from tests.harness.explorer.schedules import setup, steps

FIXED = "fixed-window:limit=1,window=10"


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line of the error, after any notes (how Redis was provisioned, say): no
    traceback."""
    *notes, error = capsys.readouterr().err.strip().splitlines()
    assert all(note.startswith("note: ") for note in notes), notes
    assert error.startswith("error: ")
    return error


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["race", "--limiter", "gcra-lua", "--max-examples", "0"], "--max-examples must be"),
        (["race", "--limiter", "gcra-lua", "--instances", "17"], "--instances must be 1..16"),
        (["race", "--limiter", "gcra-lua", "--costs", "1,0"], "--costs must be whole numbers"),
        (["race", "--limiter", "gcra-lua", "--costs", "two"], "--costs must be whole numbers"),
        (["race-test", "--stress-seconds", "61"], "--stress-seconds must be 0..60"),
        (["race-test", "--max-examples", "100001"], "--max-examples must be"),
        (["race-test", "--jobs", "0"], "--jobs must be 1..64"),
        (["probe", "--limiter", "gcra-lua", "--requests", "0"], "--requests must be"),
        (["replay", "/nonexistent/trace.json"], "no such file or directory: /nonexistent/trace"),
        (["check", "/nonexistent/h.jsonl", "--policy", FIXED], "/nonexistent/h.jsonl"),
    ],
)  # fmt: skip
def test_bad_arguments_are_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    assert message in _one_error_line(capsys)


def test_a_redis_that_does_not_answer_is_one_line_and_exit_3(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["race", "--limiter", "tests.limiters.sample_plugin:raises_when_built"]
    assert main([*args, "--policy", FIXED, "--redis-url", "redis://127.0.0.1:1/0"]) == 3
    assert "Redis not reachable at redis://127.0.0.1:1/0" in _one_error_line(capsys)


def test_an_output_file_that_cannot_be_written_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "h.jsonl"
    history.write_text("")
    out = "/nonexistent/dir/verdict.json"
    assert main(["check", str(history), "--policy", FIXED, "--json", out]) == 2
    assert f"cannot write {out}: No such file" in _one_error_line(capsys)


def test_a_bug_of_the_harness_is_not_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> str:
        raise ValueError("a bug in the listing")

    monkeypatch.setattr(listing, "catalogue", broken)
    with pytest.raises(ValueError, match="a bug in the listing"):
        main(["limiters"])


@pytest.mark.integration
def test_a_plugin_whose_factory_raises_is_bad_input(
    redis_server: RedisServer, client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = "tests.limiters.sample_plugin:raises_when_built"
    args = ["race", "--limiter", spec, "--policy", FIXED, "--redis-url", redis_server.url]
    assert main(args) == 2
    assert "raised KeyError: 'RATE_SERVICE_URL'" in _one_error_line(capsys)


@pytest.mark.integration
def test_probe_says_when_the_limiter_raises(
    redis_server: RedisServer, client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["probe", "--limiter", "tests.harness.explorer.plugins:raising", "--policy", FIXED,
            "--redis-url", redis_server.url]  # fmt: skip
    assert main(args) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert said[0].startswith("tests.harness.explorer.plugins:raising with")  # what it probes
    (line,) = said[1:]
    assert "error: request 1: RuntimeError: no connection to the rate service for user:1" in line


@contextmanager
def _broken_thread_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make the harness's own code in every instance thread fail, before any check runs."""

    @contextmanager
    def reading(clock: InstanceClock) -> Iterator[None]:
        raise RuntimeError("a bug in the instance thread")
        yield  # pragma: no cover

    monkeypatch.setattr(thread, "reading", reading)
    yield


@pytest.mark.integration
def test_a_broken_instance_thread_ends_the_run_at_once_with_its_cause(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _broken_thread_clock(monkeypatch):
        started = time.monotonic()
        with pytest.raises(RuntimeError, match="a bug in the instance thread"):
            run_schedule(setup(redis_server.url, "naive-get-set", FIXED), steps(0, 1, 0, 1))
        assert time.monotonic() - started < 2  # not the 10 s an instance may take


@pytest.mark.integration
def test_a_broken_instance_thread_ends_hypothesis_search_with_its_cause(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(explore, "_bounded", lambda *_: False)  # straight to Hypothesis
    with _broken_thread_clock(monkeypatch):
        started = time.monotonic()
        with pytest.raises(RuntimeError, match="a bug in the instance thread"):
            explore.explore(setup(redis_server.url, "fixed-window-lua", FIXED), max_examples=50)
        assert time.monotonic() - started < 2


@pytest.mark.integration
def test_a_limiter_that_blocks_ends_the_run_after_one_timeout(
    redis_server: RedisServer,
    client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(thread, "TIMEOUT", 1.0)
    args = ["race", "--limiter", "tests.harness.explorer.plugins:blocking", "--policy", FIXED,
            "--redis-url", redis_server.url]  # fmt: skip
    plugins.RELEASE.clear()
    started = time.monotonic()
    try:
        assert main(args) == 2
    finally:
        plugins.RELEASE.set()
    assert time.monotonic() - started < 2  # one timeout, not one per instance and per stop
    assert "app-0 ran 1 s without reaching Redis" in _one_error_line(capsys)


@pytest.mark.integration
def test_a_failure_of_the_harness_inside_a_limiters_call_is_not_the_limiters(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def after(*_: object) -> None:
        raise KeyError("a bug in the expiry bookkeeping")

    monkeypatch.setattr(Expiry, "after", after)  # runs after each command, in the call
    with pytest.raises(KeyError, match="a bug in the expiry bookkeeping"):
        run_schedule(setup(redis_server.url, "naive-get-set", FIXED), steps(0, 0))
