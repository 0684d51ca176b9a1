"""``python -m ratelimit_harness.limiters.line_program NAME``: a limiter as a program on the line
protocol."""

from __future__ import annotations

import subprocess
import sys

import pytest
import redis

from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.limiters.decision import Decision
from ratelimit_harness.limiters.line_program import answer_line, request
from ratelimit_harness.limiters.program import parse_answer
from tests.harness.support import child_env


@pytest.mark.parametrize(
    "decision",
    [
        Decision(True),
        Decision(False, remaining=0, limit=5, reset_at=1800000010.5, retry_after=2.5, now=1.8e9),
    ],
)
def test_an_answer_reads_back_as_the_decision_it_was(decision: Decision) -> None:
    assert parse_answer(answer_line(decision)).decision == decision


def run(args: list[str], stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ratelimit_harness.limiters.line_program", *args]
    return subprocess.run(
        command,
        check=False,
        input=stdin,
        capture_output=True,
        text=True,
        env=child_env(**env),
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([], {}, "usage: python -m ratelimit_harness.limiters.line_program LIMITER"),
        (["naive-get-set"], {}, "REDIS_URL and RATELIMIT_POLICY must be set"),
        (["no-such"], {"RATELIMIT_POLICY": "fixed-window:limit=1,window=1"}, "unknown limiter"),
        (["gcra-lua"], {"RATELIMIT_POLICY": "fixed-window:limit=1,window=1"}, "enforces"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], env: dict[str, str], message: str
) -> None:
    done = run(args, **({"REDIS_URL": "redis://127.0.0.1:1/0"} | env if env else {}))
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert message in line


@pytest.mark.parametrize(
    ("line", "asked"),
    [
        ("user:1\n", ("user:1",)),
        ("user:1 3\n", ("user:1", 3)),
        ("user:1 1\n", ("user:1 1",)),  # a cost of 1 is never sent: this is an identity
        ("a user 0\n", ("a user 0",)),
        ("user:1 x\n", ("user:1 x",)),
    ],
)
def test_a_line_asks_for_an_identity_or_an_identity_and_a_cost(
    line: str, asked: tuple[object, ...]
) -> None:
    assert request(line) == asked


@pytest.mark.integration
def test_it_answers_each_identity_with_its_decision(
    client: redis.Redis, redis_server: RedisServer
) -> None:
    policy = "fixed-window:limit=2,window=60"
    url = redis_server.url
    done = run(["fixed-window-lua"], "a\na\na\nb\n", REDIS_URL=url, RATELIMIT_POLICY=policy)
    assert done.returncode == 0, done.stderr
    answers = [parse_answer(line).decision for line in done.stdout.splitlines()]
    assert [d.allowed for d in answers if d] == [True, True, False, True]
    assert [d.remaining for d in answers if d] == [1, 0, 0, 1]
