"""Running the JavaScript limiters (limiters/js/) as the race explorer does, without its proxy:
one program per instance, its clock a clock file the test moves (the program started on it, as
the explorer starts it), identities asked one line at a time."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ratelimit_harness.harness.process_clock import REAL, ClockFile, ProcessClock, probe
from ratelimit_harness.harness.process_clock.clock_file import nanoseconds
from ratelimit_harness.harness.provision.virtual_time import START
from ratelimit_harness.limiters.js_catalogue import JS_CATALOGUE, unavailable
from tests.harness.support import TIMEOUT, child_env, kill_quietly, read_line

FIELDS = {"allowed", "remaining", "limit", "reset_at", "retry_after", "now"}
CLOCK = "RATELIMIT_TEST_CLOCK"  # in a program's environment here: the clock file it starts on


def require_programs() -> None:
    """Skip where node or ioredis is missing, or fail where HARNESS_REQUIRE_ALL_PATHS=1."""
    why = unavailable() or probe() or None
    if why is None:
        return
    if os.environ.get("HARNESS_REQUIRE_ALL_PATHS") == "1":
        pytest.fail(f"the JavaScript limiters are required but cannot run: {why}")
    pytest.skip(f"the JavaScript limiters cannot run: {why}")


def program_env(url: str, policy: str, clock_file: Path, instance: int = 0) -> dict[str, str]:
    """The environment of one instance: its Redis, its policy, its clock."""
    return child_env(
        REDIS_URL=url,
        RATELIMIT_POLICY=policy,
        RATELIMIT_INSTANCE=str(instance),
        **{CLOCK: str(clock_file)},
    )


class TimeOfDay(ClockFile):
    """A clock file whose time of day stands still where the test sets it; its monotonic
    clocks keep real time, so a program's timers run (ioredis' connection, its exit)."""

    def set_seconds(self, realtime: float, monotonic: float | None = None) -> None:
        self.set(nanoseconds(realtime), REAL)


def frozen_clock(folder: Path, at: float = START) -> TimeOfDay:
    """A clock file in ``folder`` whose time of day stands still at ``at`` until the test sets
    it again."""
    folder.mkdir(parents=True, exist_ok=True)
    clock = TimeOfDay(ClockFile.create(folder, "now").path)
    clock.set_seconds(at)
    return clock


def spawn(command: Sequence[str], env: dict[str, str], **popen: Any) -> subprocess.Popen[str]:
    """``command`` started with ``env``: on the clock file its ``CLOCK`` names, if any."""
    if CLOCK in env:
        return ProcessClock(ClockFile(env[CLOCK])).spawn(command, env=env, text=True, **popen)
    return subprocess.Popen(command, env=env, text=True, **popen)


def run_all(name: str, env: dict[str, str], identities: list[str]) -> tuple[list[str], str]:
    """The answers of a whole run of catalogue program ``name``: see ``run_program``."""
    return run_program(JS_CATALOGUE[name].command(), env, identities)


def run_program(
    command: Sequence[str], env: dict[str, str], identities: list[str]
) -> tuple[list[str], str]:
    """The answers of a whole run (stdin closed after the last identity) and its stderr;
    the program must exit 0."""
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    process = spawn(command, env, **pipes)
    try:
        out, err = process.communicate("".join(f"{identity}\n" for identity in identities), TIMEOUT)
    finally:
        kill_quietly(process)
    assert process.returncode == 0, err
    return out.splitlines(), err


def decision(line: str) -> dict[str, Any]:
    """An answer as the protocol reads it: a word, or a JSON object with a boolean allowed
    and nothing but the protocol's fields."""
    if line in ("allowed", "rejected"):
        return {"allowed": line == "allowed"}
    answer = json.loads(line)
    assert isinstance(answer, dict), line
    assert isinstance(answer.get("allowed"), bool), line
    assert set(answer) <= FIELDS, line
    return answer


class Instance:
    """One program, kept running: ``ask`` sends an identity and reads its answer."""

    def __init__(self, name: str, env: dict[str, str]) -> None:
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        self.process = spawn(JS_CATALOGUE[name].command(), env, **pipes)

    def ask(self, identity: str) -> bool:
        assert self.process.stdin
        assert self.process.stdout
        self.process.stdin.write(f"{identity}\n")
        self.process.stdin.flush()
        return bool(decision(read_line(self.process.stdout).rstrip("\n"))["allowed"])

    def close(self) -> int:
        """Close stdin and wait for the exit code."""
        assert self.process.stdin
        self.process.stdin.close()
        return self.process.wait(timeout=TIMEOUT)

    def kill(self) -> None:
        """Make sure it is gone, however the test ended."""
        kill_quietly(self.process)
        if self.process.stdin and not self.process.stdin.closed:
            self.process.stdin.close()
