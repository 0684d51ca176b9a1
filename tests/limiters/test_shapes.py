"""The three test limiters of ``shapes.py``, broken by hand on a real Redis.

Each test runs instance A on a ``Stepped`` client: just before a chosen command, it runs what
the breaking interleaving puts there (B's requests, or the window running out). Then it
asserts the violation. The programs of ``programs/shapes/`` are started once each with node.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.limiters import Policy
from tests.harness.support import child_env
from tests.limiters.js_programs import require_programs, run_program
from tests.limiters.shapes import compare_and_set, exists_then_incrby, marker_window

pytestmark = pytest.mark.integration

PROGRAMS = Path(__file__).resolve().parent / "programs" / "shapes"
FIRST = "fixed-window:limit=2,window=10,anchor=first"
Shape = Callable[[Any, Any], Callable[[str], bool]]
SHAPES: list[Shape] = [exists_then_incrby, marker_window, compare_and_set]


class Stepped:
    """A redis-py client (or pipeline) that runs a hook just before a command.

    ``hooks`` maps a method name to a list of calls: each call of that method first runs
    (and drops) the next one. Pipelines it makes share the hooks, so ``execute`` steps too.
    """

    def __init__(self, client: Any, hooks: dict[str, list[Callable[[], object]]]) -> None:
        self._client = client
        self._hooks = hooks

    def pipeline(self) -> Stepped:
        return Stepped(self._client.pipeline(), self._hooks)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)

        def stepped(*args: Any, **kwargs: Any) -> Any:
            if self._hooks.get(name):
                self._hooks[name].pop(0)()
            return method(*args, **kwargs)

        return stepped


@pytest.fixture
def other(redis_server: RedisServer) -> Iterator[redis.Redis]:
    """A second connection, for instance A (B uses ``client``)."""
    connection = redis.Redis.from_url(redis_server.url)
    yield connection
    connection.close()


@pytest.mark.parametrize("shape", SHAPES)
def test_alone_each_admits_exactly_the_limit(shape: Shape, client: redis.Redis) -> None:
    check = shape(client, Policy.parse(FIRST))
    assert [check("alice") for _ in range(4)] == [True, True, False, False]


def test_exists_then_incrby_leaves_an_immortal_key(client: redis.Redis, other: redis.Redis) -> None:
    """A 1 s window: the key expires while A waits between EXISTS and INCRBY."""
    key = "shapes:exists:{alice}"

    def window_ends() -> None:
        deadline = time.monotonic() + 2.0
        while client.exists(key) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not client.exists(key), "the key did not expire within 2 s"

    policy = Policy.parse("fixed-window:limit=2,window=1,anchor=first")
    a = exists_then_incrby(Stepped(other, {"incrby": [window_ends]}), policy)
    assert a("alice")
    assert client.ttl(key) == -1  # INCRBY made the key anew, with no TTL
    assert [a("alice") for _ in range(3)] == [True, False, False]
    assert client.ttl(key) == -1  # refused for good: no window ever ends


def test_marker_window_admits_three_in_one_window_for_limit_two(
    client: redis.Redis, other: redis.Redis
) -> None:
    """A reads the marker missing; B starts the window, admitted twice; A deletes it."""
    policy = Policy.parse(FIRST)
    b = marker_window(client, policy)
    admitted: list[str] = []

    def b_twice() -> None:
        admitted.extend("B" for _ in range(2) if b("alice"))

    a = marker_window(Stepped(other, {"delete": [b_twice]}), policy)
    if a("alice"):
        admitted.append("A")
    assert admitted == ["B", "B", "A"]  # three admissions for a limit of 2
    assert client.ttl("shapes:marker:{alice}:marker") > 8  # all within the one window


def test_compare_and_set_refuses_far_below_the_limit(
    client: redis.Redis, other: redis.Redis
) -> None:
    """B writes before each of A's two EXECs; A gives up and refuses at 2 of 10."""
    policy = Policy.parse("fixed-window:limit=10,window=10,anchor=first")
    b = compare_and_set(client, policy)
    b_admitted: list[bool] = []

    def b_once() -> None:
        b_admitted.append(b("alice"))

    a = compare_and_set(Stepped(other, {"execute": [b_once, b_once]}), policy)
    assert not a("alice")
    assert b_admitted == [True, True]
    assert int(client.get("shapes:cas:{alice}") or 0) == 2  # far below the limit of 10
    assert a("alice")  # unhindered, A admits again


@pytest.mark.parametrize("name", ["exists-then-incrby", "marker-window", "compare-and-set"])
def test_program_answers_and_exits_at_eof(name: str, redis_server: RedisServer) -> None:
    require_programs()
    env = child_env(REDIS_URL=redis_server.url, RATELIMIT_POLICY=FIRST, RATELIMIT_INSTANCE="0")
    program = ["node", str(PROGRAMS / f"{name}.js")]
    answers, _ = run_program(program, env, ["alice"] * 3)
    assert answers == ["allowed", "allowed", "rejected"]
