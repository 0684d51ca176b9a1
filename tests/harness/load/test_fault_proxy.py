"""The load's fault proxy, with real clients and a real Redis behind it: bytes pass unchanged at
no fault; a delay holds each direction; a partition makes clients time out and ends with their
connections cut, what they sent meanwhile never applied; refusing fails at once; each change is
recorded in order; closing leaves no process, port or thread behind.

Time is asserted from below only (a delay takes at least its length), never from above."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ratelimit_harness.harness.load.faults.proxy import FaultEvent, FaultProxy, FaultProxyError
from ratelimit_harness.harness.load.faults.proxy_server import MAX_HELD, _Link, _Proxy
from ratelimit_harness.harness.provision import RedisServer

pytestmark = pytest.mark.realtime  # on the wall clock: run one at a time

WAIT = 10.0  # seconds any one wait of these tests may take
READ = 256 * 1024  # the most one read of the proxy takes: what it may hold beyond MAX_HELD


@pytest.fixture
def proxy(redis_server: RedisServer) -> Iterator[FaultProxy]:
    with FaultProxy.for_url(redis_server.url) as proxy:
        yield proxy


def through(proxy: FaultProxy, server: RedisServer, timeout: float = WAIT) -> redis.Redis:
    """A client of Redis through ``proxy``, which never retries (a fault shows at once)."""
    url = proxy.url_for(server.url)
    return redis.Redis.from_url(url, socket_timeout=timeout, retry=Retry(NoBackoff(), 0))


def raw(proxy: FaultProxy) -> socket.socket:
    """A plain socket through ``proxy``, its connection to Redis made (one PING answered)."""
    connection = socket.create_connection(proxy.address, timeout=WAIT)
    connection.sendall(b"PING\r\n")
    assert receive(connection, len(b"+PONG\r\n")) == b"+PONG\r\n"
    return connection


def receive(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size and (chunk := connection.recv(size - len(data))):
        data += chunk
    return data


def wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen in {WAIT} s"
        time.sleep(0.01)


@pytest.mark.integration
def test_commands_pass_through_unchanged(
    proxy: FaultProxy, redis_server: RedisServer, client: redis.Redis
) -> None:
    app = through(proxy, redis_server)
    value = os.urandom(3 * 1024 * 1024)
    assert app.set("fault-proxy:large", value)
    assert app.get("fault-proxy:large") == value
    assert client.get("fault-proxy:large") == value
    pipe = app.pipeline(transaction=False)
    for _ in range(1000):
        pipe.incr("fault-proxy:count")
    assert pipe.execute() == list(range(1, 1001))
    assert client.get("fault-proxy:count") == b"1000"
    app.close()


@pytest.mark.integration
def test_pubsub_and_blocking_commands_pass_through(
    proxy: FaultProxy, redis_server: RedisServer, client: redis.Redis
) -> None:
    app = through(proxy, redis_server)
    subscriber = app.pubsub()
    subscriber.subscribe("fault-proxy:channel")
    assert subscriber.get_message(timeout=WAIT)["type"] == "subscribe"
    assert client.publish("fault-proxy:channel", "hello") == 1
    message = subscriber.get_message(timeout=WAIT)
    assert message is not None
    assert message["data"] == b"hello"
    subscriber.close()

    popped: list[Any] = []
    waiter = threading.Thread(target=lambda: popped.append(app.blpop(["fault-proxy:list"], 30)))
    waiter.start()

    def blocked() -> bool:
        return any(c.get("cmd") == "blpop" for c in client.client_list())

    wait_for(blocked, "BLPOP blocking in Redis")
    client.rpush("fault-proxy:list", "item")
    waiter.join(WAIT)
    assert popped == [(b"fault-proxy:list", b"item")]
    app.close()


@pytest.mark.integration
@pytest.mark.parametrize("delay", [0.0, 0.05])
def test_an_end_passes_behind_what_came_before_it(proxy: FaultProxy, delay: float) -> None:
    connection = raw(proxy)
    proxy.delay(delay)
    connection.sendall(b"ECHO last\r\n")
    connection.shutdown(socket.SHUT_WR)  # the client is done sending, not yet reading
    assert receive(connection, 100) == b"$4\r\nlast\r\n"  # then the end: Redis closed
    connection.close()
    wait_for(lambda: proxy.counts().open == 0, "the proxy letting the connection go")


class Written(asyncio.Transport):
    """A transport that keeps what is written to it (for the proxy's flow, without sockets)."""

    def __init__(self) -> None:
        super().__init__()
        self.written = b""

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def test_what_a_client_sends_before_redis_is_connected_waits_for_it() -> None:
    # Before 3.11.3 a socket is read as soon as its connection is made, even when its protocol
    # paused reading (Debian 12's Python is 3.11.2): the proxy may read a client's first command
    # before its own connection to Redis is made. That command waits; it used to be dropped.
    loop = asyncio.new_event_loop()
    try:
        link = _Link(_Proxy("127.0.0.1", 6379, loop))
        link.client.transport = Written()
        link.client.data_received(b"PING\r\n")
        redis_side = Written()
        link.upstream.connection_made(redis_side)
        assert redis_side.written == b"PING\r\n"
        link.client.data_received(b"GET k\r\n")
        assert redis_side.written == b"PING\r\nGET k\r\n"
    finally:
        loop.close()


def test_url_for_points_at_the_proxy_and_keeps_the_rest() -> None:
    with FaultProxy("127.0.0.1", 6379) as proxy:
        port = proxy.port
        assert proxy.address == ("127.0.0.1", port)
        given = "redis://user:secret@localhost:6379/3?socket_timeout=1"
        assert proxy.url_for(given) == f"redis://user:secret@127.0.0.1:{port}/3?socket_timeout=1"
        assert proxy.url_for("redis://127.0.0.1:6380") == f"redis://127.0.0.1:{port}"
        with pytest.raises(FaultProxyError, match="redis://"):
            proxy.url_for("http://127.0.0.1:6379")


@pytest.mark.parametrize("host", ["10.1.2.3", "example.com", "0.0.0.0"])
def test_an_upstream_off_loopback_is_refused(host: str) -> None:
    with pytest.raises(FaultProxyError, match="loopback"):
        FaultProxy(host, 6379)
    with pytest.raises(FaultProxyError, match="loopback"):
        FaultProxy.for_url(f"redis://{host}:6379/0")


@pytest.mark.integration
def test_a_delay_holds_a_request_and_its_reply(
    proxy: FaultProxy, redis_server: RedisServer
) -> None:
    app = through(proxy, redis_server)
    app.ping()
    proxy.delay(0.1)
    start = time.perf_counter()
    assert app.ping()
    assert time.perf_counter() - start >= 2 * 0.1 * 0.99
    proxy.heal()
    assert app.ping()
    app.close()


@pytest.mark.integration
def test_what_was_held_stays_ahead_when_the_delay_ends(proxy: FaultProxy) -> None:
    connection = raw(proxy)
    proxy.delay(0.3)
    connection.sendall(b"PING\r\n")
    wait_for(lambda: proxy.counts().peak_held > 0, "the PING held")
    proxy.heal()  # what is read now is not delayed, but comes after the PING
    connection.sendall(b"ECHO x\r\n")
    replies = b"+PONG\r\n$1\r\nx\r\n"
    assert receive(connection, len(replies)) == replies
    connection.close()


@pytest.mark.integration
def test_a_large_value_under_a_delay_is_held_within_the_bound(
    proxy: FaultProxy, redis_server: RedisServer, client: redis.Redis
) -> None:
    app = through(proxy, redis_server)
    value = os.urandom(4 * MAX_HELD)
    proxy.delay(0.05)
    assert app.set("fault-proxy:large", value)
    assert app.get("fault-proxy:large") == value
    assert 0 < proxy.counts().peak_held <= MAX_HELD + READ
    app.close()


@pytest.mark.integration
def test_a_partition_times_clients_out_and_its_end_cuts_them(
    proxy: FaultProxy, redis_server: RedisServer, client: redis.Redis
) -> None:
    app = through(proxy, redis_server, timeout=0.3)
    assert app.ping()
    held = raw(proxy)
    proxy.partition()
    with pytest.raises(redis.TimeoutError):
        app.ping()
    newcomer = through(proxy, redis_server, timeout=0.3)
    with pytest.raises(redis.TimeoutError):
        newcomer.ping()
    held.sendall(b"SET fault-proxy:sent-in-the-partition 1\r\n")
    proxy.heal()
    with pytest.raises(ConnectionResetError):  # no reply, and no end but a cut
        held.recv(100)
    assert client.exists("fault-proxy:sent-in-the-partition") == 0
    assert through(proxy, redis_server).ping()
    # all three open in the partition: the clients closed theirs as they timed out, but a
    # proxy that reads nothing cannot tell until it is over
    assert proxy.counts().cut == 3
    held.close()
    app.close()
    newcomer.close()


@pytest.mark.integration
def test_refusing_fails_at_once_and_cuts_what_is_open(
    proxy: FaultProxy, redis_server: RedisServer
) -> None:
    app = through(proxy, redis_server)
    assert app.ping()
    connection = raw(proxy)
    proxy.refuse()
    with pytest.raises(ConnectionResetError):
        connection.recv(100)
    with pytest.raises(redis.ConnectionError):  # not a TimeoutError: nothing waits
        app.ping()
    with pytest.raises(redis.ConnectionError):
        through(proxy, redis_server).ping()
    proxy.heal()
    assert app.ping()  # connects anew
    counts = proxy.counts()
    assert (counts.cut, counts.open) == (2, 1)
    assert counts.refused >= 1  # the new client's (and the app's, if it tried again)
    connection.close()
    app.close()


def test_each_change_is_recorded_in_order_with_the_clock() -> None:
    told: list[FaultEvent] = []
    clock = itertools.count(100.0).__next__
    with FaultProxy("127.0.0.1", 6379, clock=clock, on_change=told.append) as proxy:
        proxy.delay(0.05)
        proxy.partition()
        proxy.heal()
        proxy.refuse()
        with pytest.raises(FaultProxyError, match="delay"):
            proxy.delay(-1)
        with pytest.raises(FaultProxyError, match="delay"):
            proxy.delay(float("nan"))
        proxy.heal()
        events = proxy.events
    assert events == (
        FaultEvent(100.0, "delay", 0.05),
        FaultEvent(101.0, "partition"),
        FaultEvent(102.0, "heal"),
        FaultEvent(103.0, "refuse"),
        FaultEvent(104.0, "heal"),
    )
    assert tuple(told) == events


@pytest.mark.integration
def test_closing_leaves_no_process_port_or_thread(redis_server: RedisServer) -> None:
    threads = threading.active_count()
    proxy = FaultProxy.for_url(redis_server.url)
    app = through(proxy, redis_server)
    assert app.ping()
    proxy.close()
    proxy.close()
    assert not proxy.running
    assert threading.active_count() == threads
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(proxy.address, timeout=WAIT).close()
    with pytest.raises(redis.ConnectionError):
        app.ping()
    with pytest.raises(FaultProxyError, match="closed"):
        proxy.partition()


CALLER = """
import sys
from ratelimit_harness.harness.load.faults.proxy import FaultProxy
proxy = FaultProxy("127.0.0.1", int(sys.argv[1]))  # no Redis need be there
print(proxy.port, flush=True)
sys.stdin.readline()
"""


def test_the_proxy_ends_when_its_caller_dies() -> None:
    with subprocess.Popen(
        [sys.executable, "-c", CALLER, "6379"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as caller:
        assert caller.stdout is not None
        port = int(caller.stdout.readline())
        assert not refused(port)
        caller.send_signal(signal.SIGKILL)
        caller.wait(WAIT)
    wait_for(lambda: refused(port), "the proxy's end")


def refused(port: int) -> bool:
    """Whether nothing listens on ``port``. A reset comes from a listener: the proxy resets a
    connection it cannot take to Redis."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=WAIT).close()
    except ConnectionRefusedError:
        return True
    except ConnectionResetError:
        pass
    return False
