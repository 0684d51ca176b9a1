"""The JavaScript limiters, each run as a program on the line protocol against a real Redis,
sequentially, its clock a clock file: decisions, answers, exit codes, keys and TTLs."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.harness.provision.virtual_time import START
from ratelimit_harness.limiters import Policy
from ratelimit_harness.limiters.js_catalogue import JS_CATALOGUE
from tests.limiters.js_programs import (
    Instance,
    TimeOfDay,
    decision,
    frozen_clock,
    program_env,
    require_programs,
    run_all,
)

pytestmark = pytest.mark.integration

# a budget of 2 per kind, windows of 10 s (whole seconds, as EXPIRE takes them)
POLICIES = {
    "fixed-window": "fixed-window:limit=2,window=10",
    "fixed-window:anchor=first": "fixed-window:limit=2,window=10,anchor=first",
    "sliding-window": "sliding-window:limit=2,window=10",
    "sliding-counter": "sliding-counter:limit=2,window=10",
    "token-bucket": "token-bucket:capacity=2,rate=0.1",
}
# the longest TTL each program's keys may carry under its policy above
TTLS = {
    "naive-get-set": 10,
    "fixed-window-incr-expire": 10,
    "fixed-window-setnx-incr": 10,
    "fixed-window-first-lua": 10,
    "sliding-log-pipeline": 10,
    "sliding-counter-mget-incr": 20,  # two windows
    "token-bucket-client-clock": math.ceil(2 / 0.1) + 1,
}
NAMES = list(JS_CATALOGUE)


def policy_of(name: str) -> str:
    return POLICIES[JS_CATALOGUE[name].promise]


@pytest.fixture(scope="module", autouse=True)
def _programs() -> None:
    require_programs()


@pytest.fixture
def clock(tmp_path: Path) -> TimeOfDay:
    """Every program's clock, standing at START (a multiple of every window here)."""
    return frozen_clock(tmp_path)


@pytest.fixture
def instances() -> Iterator[list[Instance]]:
    """The programs a test keeps running, killed when it ends however it ended."""
    started: list[Instance] = []
    yield started
    for instance in started:
        instance.kill()


def env_for(name: str, server: RedisServer, clock: TimeOfDay, spec: str = "") -> dict[str, str]:
    return program_env(server.url, spec or policy_of(name), clock.path)


@pytest.mark.parametrize("name", NAMES)
def test_sequential_decisions_follow_the_policy(
    name: str, redis_server: RedisServer, client: redis.Redis, clock: TimeOfDay
) -> None:
    lines, stderr = run_all(name, env_for(name, redis_server, clock), ["u1"] * 3 + ["u2"] * 3)
    assert [decision(line)["allowed"] for line in lines] == [True, True, False] * 2
    assert stderr == ""


@pytest.mark.parametrize("name", NAMES)
def test_keys_carry_the_identity_as_a_hash_tag_and_a_ttl(
    name: str, redis_server: RedisServer, client: redis.Redis, clock: TimeOfDay
) -> None:
    run_all(name, env_for(name, redis_server, clock), ["user:1"] * 3)
    keys = [key.decode() for key in client.scan_iter()]
    params = Policy.parse(policy_of(name)).exact_params()
    assert keys
    assert all(key.startswith(f"ratelimit:{{user:1}}:{name}.js:{params}") for key in keys)
    assert all(0 < client.ttl(key) <= TTLS[name] for key in keys)


def test_json_answers_report_what_the_chapter_returns(
    redis_server: RedisServer, client: redis.Redis, clock: TimeOfDay
) -> None:
    name = "fixed-window-incr-expire"
    lines, _ = run_all(name, env_for(name, redis_server, clock), ["u1"] * 3)
    assert [decision(line) for line in lines] == [
        {"allowed": True, "remaining": 1},
        {"allowed": True, "remaining": 0},
        {"allowed": False, "remaining": 0},
    ]


def test_refused_requests_stay_in_the_sliding_log(
    redis_server: RedisServer, client: redis.Redis, clock: TimeOfDay
) -> None:
    """Part 3's undo removes a member it never added: every refusal stays logged."""
    name = "sliding-log-pipeline"
    lines, _ = run_all(name, env_for(name, redis_server, clock), ["u1"] * 5)
    assert [decision(line)["allowed"] for line in lines] == [True, True, False, False, False]
    (key,) = client.scan_iter()
    assert client.zcard(key) == 5


@pytest.mark.parametrize("name", NAMES)
def test_exits_0_at_eof_without_a_request(
    name: str, redis_server: RedisServer, clock: TimeOfDay
) -> None:
    assert run_all(name, env_for(name, redis_server, clock), []) == ([], "")


@pytest.mark.parametrize(
    ("name", "spec", "said"),
    [
        ("naive-get-set", "fixed-window:limit=2", "needs window"),
        ("naive-get-set", "token-bucket:capacity=2,rate=1", "not token-bucket"),
        ("fixed-window-incr-expire", "fixed-window:limit=2,window=2.5", "whole seconds"),
        ("fixed-window-first-lua", "fixed-window:limit=2,window=10", "not fixed-window"),
        ("token-bucket-client-clock", "token-bucket:capacity=1.5,rate=1", "whole number"),
    ],
)
def test_a_policy_it_cannot_enforce_exits_2_with_one_line(
    name: str, spec: str, said: str, redis_server: RedisServer, clock: TimeOfDay
) -> None:
    instance = Instance(name, env_for(name, redis_server, clock, spec))
    try:
        assert instance.process.wait(timeout=30) == 2
        assert instance.process.stderr
        stderr = instance.process.stderr.read()
    finally:
        instance.kill()
    assert said in stderr
    assert stderr.count("\n") == 1


def test_token_bucket_refills_when_its_clock_file_moves(
    redis_server: RedisServer,
    client: redis.Redis,
    clock: TimeOfDay,
    instances: list[Instance],
) -> None:
    """Part 5's now is Date.now(): 10 s on the file refill one token at 0.1 a second."""
    name = "token-bucket-client-clock"
    spec = "token-bucket:capacity=1,rate=0.1"
    bucket = Instance(name, env_for(name, redis_server, clock, spec))
    instances.append(bucket)
    assert [bucket.ask("u1") for _ in range(2)] == [True, False]
    clock.set_seconds(START + 9.9)
    assert not bucket.ask("u1")
    clock.set_seconds(START + 10)
    assert [bucket.ask("u1") for _ in range(2)] == [True, False]
    assert bucket.close() == 0


def test_fixed_window_keys_the_window_by_its_clock_file(
    redis_server: RedisServer,
    client: redis.Redis,
    clock: TimeOfDay,
    instances: list[Instance],
) -> None:
    """Two instances whose clocks straddle a boundary count in two windows (Part 2 under skew)."""
    name, spec = "fixed-window-incr-expire", "fixed-window:limit=1,window=10"
    clock.set_seconds(START + 9.999)
    ahead = frozen_clock(clock.path.parent / "ahead", START + 10)  # 1 ms ahead
    behind, fast = (
        Instance(name, program_env(redis_server.url, spec, each.path, number))
        for number, each in enumerate((clock, ahead))
    )
    instances.extend((behind, fast))
    assert behind.ask("u1")
    assert fast.ask("u1")  # one moment, a window each: two admitted with a limit of 1
    assert not behind.ask("u1")
    assert (behind.close(), fast.close()) == (0, 0)
