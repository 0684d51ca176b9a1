"""A script runs by EVALSHA in one round trip, and loads itself when the server lacks it."""

from typing import Any

import pytest
import redis

from ratelimit_harness.limiters.lua import LuaScript

pytestmark = pytest.mark.integration

COUNTER = LuaScript("return redis.call('INCRBY', KEYS[1], ARGV[1])")


class Recording(redis.Redis):
    """A client that notes the name of every command it sends."""

    sent: list[str]

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.sent.append(str(args[0]))
        return super().execute_command(*args, **options)  # type: ignore[no-untyped-call]


@pytest.fixture
def recording(client: redis.Redis) -> Recording:
    spy = Recording(connection_pool=client.connection_pool)
    spy.sent = []
    return spy


def test_the_sha_is_the_one_the_server_computes(client: redis.Redis) -> None:
    assert client.script_load(COUNTER.source) == COUNTER.sha


def test_a_loaded_script_is_one_evalsha(client: redis.Redis, recording: Recording) -> None:
    client.script_load(COUNTER.source)
    assert COUNTER.run(recording, "lua:counter", 2) == 2
    assert COUNTER.run(recording, "lua:counter", 3) == 5
    assert recording.sent == ["EVALSHA", "EVALSHA"]


def test_loads_the_script_on_noscript_and_sends_the_same_evalsha_again(
    client: redis.Redis, recording: Recording
) -> None:
    client.script_flush()  # this test's own server: the script is gone
    assert COUNTER.run(recording, "lua:counter", 4) == 4
    assert recording.sent == ["EVALSHA", "SCRIPT LOAD", "EVALSHA"]
    assert client.script_exists(COUNTER.sha) == [True]
