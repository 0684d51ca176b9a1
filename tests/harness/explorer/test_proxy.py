"""The scheduling proxy, driven by real clients while the test plays the explorer: each step is
held until released, in the thread explorer's sense of a step, and nothing held reaches Redis
before its turn."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ratelimit_harness.harness.explorer.wire.proxy import (
    Held,
    ProxyError,
    SchedulingProxy,
    StepLost,
)
from ratelimit_harness.harness.explorer.wire.resp import Framer, Push, ReplyError, decode, show
from ratelimit_harness.harness.provision import RedisServer

WAIT = 10.0  # seconds any one wait of these tests may take


class Program:
    """The app instance: ``body`` in a thread of its own, its result or exception kept."""

    def __init__(self, body: Callable[[], Any]) -> None:
        self._result: Any = None
        self._error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(body,), daemon=True)
        self.thread.start()

    def _run(self, body: Callable[[], Any]) -> None:
        try:
            self._result = body()
        except BaseException as error:
            self._error = error

    def join(self) -> Any:
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), "the program did not finish"
        if self._error is not None:
            raise self._error
        return self._result


def play(proxy: SchedulingProxy, program: Program) -> list[tuple[tuple[str, ...], str]]:
    """Release every step the program holds, oldest first, until it ends: each step and its
    reply, in one line."""
    steps, deadline = [], time.monotonic() + WAIT
    while time.monotonic() < deadline:
        held = proxy.wait_held(0.05)
        if held is not None:
            steps.append((held.command, show(proxy.release(held))))
        elif not program.thread.is_alive():
            return steps
    raise AssertionError(f"the program did not finish; steps so far: {steps}")


def take(proxy: SchedulingProxy, command: tuple[str, ...]) -> Any:
    """Wait until ``command`` is held, on whichever connection, and release it."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        for held in proxy.held():
            if held.command == command:
                return proxy.release(held)
        proxy.wait_held(0.01)
    raise AssertionError(f"{command} was never held; held: {proxy.held()}")


def until_held(proxy: SchedulingProxy, count: int) -> tuple[Held, ...]:
    deadline = time.monotonic() + WAIT
    while len(held := proxy.held()) < count and time.monotonic() < deadline:
        proxy.wait_held(0.01)
    return held


def connected(proxy: SchedulingProxy, **options: Any) -> redis.Redis:
    return redis.Redis.from_url(proxy.url, socket_timeout=WAIT, **options)


def raw_socket(proxy: SchedulingProxy) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=WAIT)


def read_values(sock: socket.socket, count: int) -> list[Any]:
    framer = Framer()
    values: list[Any] = []
    while len(values) < count:
        data = sock.recv(65536)
        assert data, f"closed after {values}"
        values += [decode(value) for value in framer.feed(data)]
    return values


@pytest.fixture
def proxy(redis_server: RedisServer, client: redis.Redis) -> Iterator[SchedulingProxy]:
    with SchedulingProxy(redis_server.url) as started:
        yield started


# --- no Redis needed --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("redis://10.1.2.3:6379/0", "loopback address only, not 10.1.2.3"),
        ("redis://example.com:6379/0", "loopback address only, not example.com"),
        ("rediss://127.0.0.1:6379/0", "redis:// URL only"),
        ("unix:///tmp/redis.sock", "redis:// URL only"),
        ("redis://127.0.0.1:6379/db", "not a database number"),
    ],
)
def test_an_upstream_off_loopback_or_not_plain_redis_is_refused(url: str, why: str) -> None:
    with pytest.raises(ProxyError, match=why):
        SchedulingProxy(url)


def test_the_url_given_to_the_program_keeps_the_upstreams_database_and_credentials() -> None:
    with SchedulingProxy("redis://user:secret@localhost:6390/5") as proxy:
        assert proxy.port > 0
        assert proxy.url == f"redis://user:secret@127.0.0.1:{proxy.port}/5"
    with SchedulingProxy("redis://[::1]:6390") as proxy:
        assert proxy.url == f"redis://127.0.0.1:{proxy.port}/0"


def test_an_unreachable_redis_is_said_by_the_next_wait() -> None:
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        free = spare.getsockname()[1]
    with SchedulingProxy(f"redis://127.0.0.1:{free}/0") as proxy, raw_socket(proxy) as sock:
        assert sock.recv(16) == b""  # the program's connection is closed
        with pytest.raises(ProxyError, match=f"cannot reach Redis at 127.0.0.1:{free}"):
            proxy.wait_held(WAIT)


def test_nothing_held_is_nothing_to_release() -> None:
    with SchedulingProxy("redis://127.0.0.1:6390/0") as proxy:
        assert proxy.wait_held(0.01) is None
        assert proxy.held() == ()
        with pytest.raises(ProxyError, match="nothing is held"):
            proxy.release()


# --- through a real Redis -------------------------------------------------------------------


@pytest.mark.integration
def test_each_command_is_held_until_released(proxy: SchedulingProxy, client: redis.Redis) -> None:
    def body() -> Any:
        with connected(proxy) as app:
            app.set("k", "v")
            return app.get("k")

    program = Program(body)
    held = proxy.wait_held(WAIT)
    assert held is not None
    assert held.command == ("SET", "k", "v")
    assert proxy.held() == (held,)
    time.sleep(0.05)  # were it forwarded, Redis would have it by now
    assert client.get("k") is None
    assert proxy.release() == "OK"
    assert client.get("k") == b"v"
    with pytest.raises(ProxyError, match="not held"):
        proxy.release(held)  # once only
    assert play(proxy, program) == [(("GET", "k"), "v")]
    assert program.join() == b"v"
    counts = proxy.counts()
    assert (counts.forwarded, counts.dropped, counts.connections) == (2, 0, 1)
    assert counts.passed >= 1  # the client's CLIENT SETINFO on connecting


@pytest.mark.integration
def test_a_pipelines_commands_are_held_one_by_one_in_order(
    proxy: SchedulingProxy, client: redis.Redis
) -> None:
    def body() -> Any:
        with connected(proxy) as app:
            pipe = app.pipeline(transaction=False)
            pipe.set("n", 1).incr("n").get("n")
            return pipe.execute()

    program = Program(body)
    assert take(proxy, ("SET", "n", "1")) == "OK"
    held = until_held(proxy, 1)
    assert [step.command for step in held] == [("INCRBY", "n", "1")]  # only the head is held
    assert client.get("n") == b"1"  # the one before it ran, this one not yet
    assert play(proxy, program) == [(("INCRBY", "n", "1"), "2"), (("GET", "n"), "2")]
    assert program.join() == [True, 2, b"2"]


@pytest.mark.integration
def test_a_transaction_is_one_step_held_at_its_exec(
    proxy: SchedulingProxy, client: redis.Redis
) -> None:
    def body() -> Any:
        with connected(proxy) as app:
            pipe = app.pipeline(transaction=True)
            pipe.set("n", 1).incr("n")
            return pipe.execute()

    program = Program(body)
    held = proxy.wait_held(WAIT)
    assert held is not None
    assert held.command == ("MULTI", "SET n 1", "INCRBY n 1", "EXEC")
    assert held.commands[-1] == (b"EXEC",)
    time.sleep(0.05)
    assert client.get("n") is None  # queued, nothing run
    assert proxy.release() == ["OK", 2]
    assert play(proxy, program) == []  # that was the only step
    assert program.join() == [True, 2]


@pytest.mark.integration
def test_a_client_that_reads_each_reply_of_a_block_before_sending_on_is_held_at_exec(
    proxy: SchedulingProxy, client: redis.Redis
) -> None:
    def body() -> Any:
        connection = redis.Connection(port=proxy.port, socket_timeout=WAIT)
        try:
            replies = []
            for command in (("MULTI",), ("SET", "n", "1"), ("INCR", "n"), ("EXEC",)):
                connection.send_command(*command)
                replies.append(connection.read_response())
            return replies
        finally:
            connection.disconnect()

    program = Program(body)
    held = proxy.wait_held(WAIT)
    assert held is not None
    assert held.command == ("MULTI", "SET n 1", "INCR n", "EXEC")
    assert client.get("n") is None
    assert proxy.release() == ["OK", 2]
    assert program.join() == [b"OK", b"QUEUED", b"QUEUED", [b"OK", 2]]


@pytest.mark.integration
def test_a_registered_script_is_one_step_and_script_load_passes(
    proxy: SchedulingProxy, client: redis.Redis
) -> None:
    source = f"return redis.call('INCR', KEYS[1]) -- {uuid.uuid4()}"

    def body() -> Any:
        with connected(proxy) as app:
            script = app.register_script(source)
            app.script_load(source)
            return script(keys=["n"])

    program = Program(body)
    sha = client.script_load(source)
    assert play(proxy, program) == [(("EVALSHA", sha, "1", "n"), "1")]
    assert program.join() == 1


@pytest.mark.integration
def test_a_script_sent_again_after_noscript_is_no_second_step(
    proxy: SchedulingProxy, client: redis.Redis
) -> None:
    source = f"return redis.call('INCR', KEYS[1]) -- {uuid.uuid4()}"  # not cached yet

    def body() -> Any:
        with connected(proxy) as app:
            return app.register_script(source)(keys=["n"])

    program = Program(body)
    steps = play(proxy, program)
    assert [command[0] for command, _ in steps] == ["EVALSHA"]
    assert steps[0][1].startswith("NOSCRIPT")
    assert program.join() == 1  # SCRIPT LOAD and the EVALSHA again passed
    assert client.get("n") == b"1"


@pytest.mark.integration
def test_resp3_passes_its_handshake_and_its_replies_come_back_whole(
    proxy: SchedulingProxy,
) -> None:
    def body() -> Any:
        with connected(proxy, protocol=3) as app:
            app.hset("h", mapping={"a": "1", "b": "2"})
            app.zadd("z", {"m": 1.5})
            return app.hgetall("h"), app.zscore("z", "m"), app.smembers("s")

    program = Program(body)
    steps = play(proxy, program)
    assert [command[0] for command, _ in steps] == ["HSET", "ZADD", "HGETALL", "ZSCORE", "SMEMBERS"]
    assert steps[2][1] == "{a: 1, b: 2}"  # a map
    assert steps[3][1] == "1.5"  # a double
    assert program.join() == ({b"a": b"1", b"b": b"2"}, 1.5, set())
    assert proxy.counts().passed >= 1  # HELLO 3


@pytest.mark.integration
def test_two_connections_of_one_program_interleave_and_each_gets_its_own_replies(
    proxy: SchedulingProxy,
) -> None:
    def body() -> Any:
        def on_its_own(by: int) -> tuple[Any, Any]:
            with connected(proxy) as app:
                return app.incrby("c", by), app.get("c")

        ones, tens = Program(lambda: on_its_own(1)), Program(lambda: on_its_own(10))
        return ones.join(), tens.join()

    program = Program(body)
    first, second = until_held(proxy, 2)
    assert first.connection != second.connection
    assert take(proxy, ("INCRBY", "c", "10")) == 10
    assert take(proxy, ("INCRBY", "c", "1")) == 11
    assert take(proxy, ("GET", "c")) == b"11"
    assert take(proxy, ("GET", "c")) == b"11"
    assert program.join() == ((11, b"11"), (10, b"11"))
    assert proxy.counts().connections == 2


@pytest.mark.integration
def test_a_kill_while_a_set_is_held_never_lets_it_reach_redis(
    proxy: SchedulingProxy, client: redis.Redis
) -> None:
    def body() -> Any:
        with connected(proxy, retry=Retry(NoBackoff(), 0)) as app:
            return app.set("victim", "1")

    program = Program(body)
    held = proxy.wait_held(WAIT)
    assert held is not None
    assert held.command == ("SET", "victim", "1")
    proxy.kill()
    with pytest.raises(redis.ConnectionError):
        program.join()
    assert proxy.held() == ()
    proxy.close()
    assert client.exists("victim") == 0
    assert client.get("victim") is None


@pytest.mark.integration
def test_a_connection_closed_with_its_step_held_loses_the_step(
    proxy: SchedulingProxy, client: redis.Redis
) -> None:
    with raw_socket(proxy) as sock:
        sock.sendall(b"SET gone 1\r\n")
        held = proxy.wait_held(WAIT)
        assert held is not None
    deadline = time.monotonic() + WAIT
    while proxy.held() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proxy.held() == ()
    with pytest.raises(StepLost, match="lost: its connection closed"):
        proxy.release(held)
    assert proxy.counts().dropped == 1
    assert client.exists("gone") == 0


@pytest.mark.integration
def test_what_was_written_before_settle_is_held_when_it_returns(
    proxy: SchedulingProxy, client: redis.Redis
) -> None:
    """No waiting on time (grace 0): the bytes are in the proxy's buffer once sendall returns,
    and settle turns the proxy's loop until they are read and held, every time."""
    with raw_socket(proxy) as sock:
        sock.sendall(b"PING\r\n")
        assert read_values(sock, 1) == ["PONG"]  # connected, through to Redis
        for n in range(200):
            sock.sendall(f"SET settled:{n} {n}\r\nGET settled:{n}\r\n".encode())
            held = proxy.settle()
            assert [step.command for step in held] == [("SET", f"settled:{n}", str(n))]
            assert proxy.release(held[0]) == "OK"
            assert [step.command for step in proxy.settle()] == [("GET", f"settled:{n}")]
            assert proxy.release() == str(n).encode()
            assert read_values(sock, 2) == ["OK", str(n).encode()]
    assert client.get("settled:199") == b"199"


@pytest.mark.integration
def test_settle_waits_its_grace_for_a_step_and_no_longer(proxy: SchedulingProxy) -> None:
    with raw_socket(proxy) as sock:
        sock.sendall(b"PING\r\n")
        assert read_values(sock, 1) == ["PONG"]
        started = time.monotonic()
        assert proxy.settle(0.05) == ()
        assert time.monotonic() - started >= 0.05
        threading.Timer(0.02, sock.sendall, args=(b"SET late 1\r\n",)).start()
        (held,) = proxy.settle(WAIT)
        assert held.command == ("SET", "late", "1")
        proxy.release(held)


@pytest.mark.integration
def test_inline_commands_are_steps_too(proxy: SchedulingProxy, client: redis.Redis) -> None:
    with raw_socket(proxy) as sock:
        sock.sendall(b"SET inline 1\r\nPING\r\n")
        held = proxy.wait_held(WAIT)
        assert held is not None
        assert held.command == ("SET", "inline", "1")
        assert proxy.release() == "OK"
        assert read_values(sock, 2) == ["OK", "PONG"]  # the PING went right after
    assert client.get("inline") == b"1"


@pytest.mark.integration
def test_an_error_reply_passes_to_the_program_as_an_error(proxy: SchedulingProxy) -> None:
    def body() -> Any:
        with connected(proxy) as app:
            app.set("s", "x")
            return app.incr("s")

    program = Program(body)
    assert take(proxy, ("SET", "s", "x")) == "OK"
    reply = take(proxy, ("INCRBY", "s", "1"))
    assert isinstance(reply, ReplyError)
    assert "not an integer" in str(reply)
    with pytest.raises(redis.ResponseError, match="not an integer"):
        program.join()


@pytest.mark.integration
def test_resp3_push_messages_reach_the_program_even_while_a_step_is_held(
    proxy: SchedulingProxy, client: redis.Redis
) -> None:
    with raw_socket(proxy) as sock:
        sock.sendall(b"HELLO 3\r\nCLIENT TRACKING on\r\nGET tracked\r\n")
        assert proxy.release(proxy.wait_held(WAIT)) is None
        hello, tracking, got = read_values(sock, 3)
        assert (hello[b"proto"], tracking, got) == (3, "OK", None)
        sock.sendall(b"GET other\r\n")
        assert proxy.wait_held(WAIT) is not None  # held, not answered
        client.set("tracked", "1")  # another client changes a key this one read
        assert read_values(sock, 1) == [Push([b"invalidate", [b"tracked"]])]
        assert proxy.release() is None
        assert read_values(sock, 1) == [None]


@pytest.mark.integration
def test_a_held_batch_over_the_bound_is_an_error_and_its_connection_is_cut(
    redis_server: RedisServer, client: redis.Redis
) -> None:
    with SchedulingProxy(redis_server.url, max_queued=3) as proxy, raw_socket(proxy) as sock:
        sock.sendall(b"".join(b"SET k%d 1\r\n" % n for n in range(6)))
        with pytest.raises(ProxyError, match="over 3 commands behind the step it holds"):
            proxy.wait_held(WAIT)
        assert sock.recv(16) == b""
        assert proxy.held() == ()
    assert client.exists(*(f"k{n}" for n in range(6))) == 0


@pytest.mark.integration
def test_on_held_is_told_of_each_step_once(redis_server: RedisServer) -> None:
    told: list[Held] = []
    with SchedulingProxy(redis_server.url, on_held=told.append) as proxy:

        def body() -> Any:
            with connected(proxy) as app:
                return app.pipeline(transaction=False).set("a", 1).get("a").execute()

        program = Program(body)
        steps = play(proxy, program)
        assert program.join() == [True, b"1"]
    assert [held.command for held in told] == [command for command, _ in steps]


@pytest.mark.integration
def test_a_reply_larger_than_any_one_read_comes_back_whole(
    proxy: SchedulingProxy, client: redis.Redis
) -> None:
    big = os.urandom(3 * 1024 * 1024)
    client.set("big", big)

    def body() -> Any:
        with connected(proxy) as app:
            return app.get("big")

    program = Program(body)
    assert proxy.release(proxy.wait_held(WAIT)) == big
    assert program.join() == big


@pytest.mark.integration
def test_a_step_forwarded_is_still_answered_after_the_program_left(
    proxy: SchedulingProxy, client: redis.Redis
) -> None:
    sock = raw_socket(proxy)
    sock.sendall(b"BLPOP queue 0\r\n")
    held = proxy.wait_held(WAIT)
    assert held is not None

    def leave_then_push() -> None:
        deadline = time.monotonic() + WAIT
        while not any(c["cmd"] == "blpop" for c in client.client_list()):  # forwarded: blocked
            assert time.monotonic() < deadline, "the BLPOP never reached Redis"
            time.sleep(0.01)
        sock.close()
        time.sleep(0.2)  # for the proxy to see the program gone
        client.lpush("queue", "x")

    program = Program(leave_then_push)
    assert proxy.release(held) == [b"queue", b"x"]  # Redis ran it, and said so
    program.join()
    assert client.llen("queue") == 0


@pytest.mark.integration
@pytest.mark.parametrize("protocol", [2, 3])
def test_a_subscriber_gets_its_messages(
    proxy: SchedulingProxy, client: redis.Redis, protocol: int
) -> None:
    def body() -> Any:
        with connected(proxy, protocol=protocol) as app, app.pubsub() as pubsub:
            pubsub.subscribe("news")
            confirmed = pubsub.get_message(timeout=WAIT)
            got = None
            deadline = time.monotonic() + WAIT
            while got is None and time.monotonic() < deadline:
                client.publish("news", "hello")
                got = pubsub.get_message(timeout=0.1)
            pubsub.unsubscribe("news")
            return confirmed, got

    program = Program(body)
    assert play(proxy, program) == []  # no step: a subscriber changes no data
    confirmed, got = program.join()
    assert (confirmed["type"], confirmed["channel"]) == ("subscribe", b"news")
    assert (got["type"], got["data"]) == ("message", b"hello")


# --- a program in another language ------------------------------------------------------

IOREDIS_PROGRAM = """
const Redis = require("ioredis");
const redis = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 0 });
redis.defineCommand("bump", { numberOfKeys: 1, lua: process.env.SCRIPT });
(async () => {
  await redis.set("n", "1");
  const piped = await redis.pipeline().incr("n").incr("n").exec();
  const block = await redis.multi().incr("n").exec();
  const bumped = [await redis.bump("n"), await redis.bump("n")];
  console.log(JSON.stringify({ piped, block, bumped, n: await redis.get("n") }));
  redis.disconnect();
})().catch((error) => { console.error(error); process.exit(1); });
"""


@pytest.fixture(scope="session")
def ioredis(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with ioredis installed, by npm."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed to run a Node program")
    where = tmp_path_factory.mktemp("ioredis")
    install = ["npm", "install", "--no-audit", "--no-fund", "--silent", "ioredis@5"]
    done = subprocess.run(
        install, cwd=where, capture_output=True, text=True, timeout=300, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"npm could not install ioredis: {done.stderr.strip()[-200:]}")
    return where


@pytest.mark.integration
@pytest.mark.slow
def test_a_node_program_on_ioredis_is_held_step_by_step(
    proxy: SchedulingProxy, client: redis.Redis, ioredis: Path
) -> None:
    (ioredis / "program.js").write_text(IOREDIS_PROGRAM)
    script = f"return redis.call('INCR', KEYS[1]) -- {uuid.uuid4()}"
    environment = {**os.environ, "REDIS_URL": proxy.url, "SCRIPT": script}
    node = subprocess.Popen(
        ["node", "program.js"], cwd=ioredis, env=environment, stdout=subprocess.PIPE, text=True
    )
    try:
        steps, deadline = [], time.monotonic() + 3 * WAIT
        while node.poll() is None and time.monotonic() < deadline:
            held = proxy.wait_held(0.05)
            if held is not None:
                steps.append(held)
                proxy.release(held)
        output, _ = node.communicate(timeout=WAIT)
    finally:
        node.kill()
    assert node.returncode == 0
    names = [held.command[0].upper() for held in steps]
    # ioredis sends a script's source the first time on a connection, its sha after
    assert names == ["SET", "INCR", "INCR", "MULTI", "EVAL", "EVALSHA", "GET"]
    assert [part.upper() for part in steps[3].command] == ["MULTI", "INCR N", "EXEC"]
    assert json.loads(output) == {
        "piped": [[None, 2], [None, 3]],
        "block": [[None, 4]],
        "bumped": [5, 6],
        "n": "6",
    }
    assert client.get("n") == b"6"
