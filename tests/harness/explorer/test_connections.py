"""Connections kept between runs: only those the server sees as clean."""

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from ratelimit_harness.harness.explorer.schedule.run import Run, Setup, scheduled
from ratelimit_harness.harness.explorer.wire import connections as connections_module
from ratelimit_harness.harness.explorer.wire.connections import CONNECTIONS, Connections
from ratelimit_harness.harness.provision import RedisServer
from ratelimit_harness.limiters import Policy
from tests.harness.explorer.schedules import steps

pytestmark = pytest.mark.integration


@pytest.fixture
def connections() -> Iterator[Connections]:
    kept = Connections()
    yield kept
    kept.close()


def _can_say_what_it_watches(client: redis.Redis) -> bool:
    """Redis 7.4 and Valkey 8 name WATCH in CLIENT INFO; older servers keep nothing."""
    return b"watch=" in client.execute_command("CLIENT", "INFO")


def test_a_connection_used_cleanly_serves_the_next_client(
    redis_server: RedisServer, connections: Connections
) -> None:
    first = connections.client(redis_server.url)
    first.incr("counter")
    used = first.client_id()
    kept = _can_say_what_it_watches(first)
    connections.keep(first, redis_server.url)
    first.close()
    second = connections.client(redis_server.url)
    assert (second.client_id() == used) is kept
    assert second.incr("counter") == 2
    second.close()


LEFT_BEHIND: dict[str, Callable[[redis.Redis], object]] = {
    "a WATCH": lambda client: client.execute_command("WATCH", "counter"),
    "a MULTI": lambda client: client.execute_command("MULTI"),
    "another database": lambda client: client.execute_command("SELECT", 1),
    "a name": lambda client: client.execute_command("CLIENT", "SETNAME", "mine"),
}


@pytest.mark.parametrize("left", LEFT_BEHIND.values(), ids=list(LEFT_BEHIND))
def test_a_connection_left_in_another_state_is_closed_not_kept(
    redis_server: RedisServer, connections: Connections, left: Callable[[redis.Redis], object]
) -> None:
    first = connections.client(redis_server.url)
    used = first.client_id()
    left(first)
    connections.keep(first, redis_server.url)
    first.close()
    second = connections.client(redis_server.url)
    assert second.client_id() != used
    assert second.execute_command("CLIENT", "INFO").split(b" db=")[1].startswith(b"0 ")
    second.close()


def test_a_connection_that_owes_a_reply_is_not_kept(
    redis_server: RedisServer, connections: Connections
) -> None:
    first = connections.client(redis_server.url)
    used = first.client_id()
    connection = first.connection_pool.get_connection()
    connection.send_command("PING")  # its PONG is never read
    first.connection_pool.release(connection)
    connections.keep(first, redis_server.url)
    first.close()
    second = connections.client(redis_server.url)
    assert second.client_id() != used
    assert second.ping() is True
    second.close()


def test_runs_hand_their_connections_on_and_the_search_closes_them(
    virtual_server: RedisServer,
) -> None:
    # the explorer's own server (Valkey 9), where the explorer races
    url = virtual_server.url
    policy = Policy.parse("fixed-window:limit=1,window=10")
    setup = Setup("fixed-window-lua", policy, 2, url, clock_file=virtual_server.clock_file)
    admin = redis.Redis.from_url(url)
    with scheduled():
        addresses = []
        for _ in range(2):
            run = Run(setup, admin)
            for action in steps(0, 0, 1, 1):
                run.apply(action)
            run.finish()
            kept = CONNECTIONS._kept.get(url, [])
            addresses.append(sorted(connection._harness_address for connection in kept))
        assert len(addresses[0]) == 2
        assert addresses[1] == addresses[0]  # the second run used the first run's
    assert CONNECTIONS._kept == {}
    assert all(connection._sock is None for connection in kept)
    admin.close()


def test_a_server_that_cannot_say_what_is_watched_is_asked_once_a_search(
    redis_server: RedisServer, connections: Connections, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[Any] = []

    def before_7_4(connection: Any) -> dict[str, str]:  # CLIENT INFO with no watch= field
        asked.append(connection)
        return {"flags": "N", "multi": "-1", "db": "0"}

    monkeypatch.setattr(connections_module, "_info", before_7_4)
    for _ in range(3):
        client = connections.client(redis_server.url)
        client.ping()
        connections.keep(client, redis_server.url)
        client.close()
    assert len(asked) == 1
    assert connections._kept[redis_server.url] == []
    connections.close()  # the next search asks again
    client = connections.client(redis_server.url)
    client.ping()
    connections.keep(client, redis_server.url)
    client.close()
    assert len(asked) == 2
