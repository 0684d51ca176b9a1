"""A RESP proxy in front of Redis that holds one app instance's commands until the explorer lets
each go: a scheduling point for a limiter in any language, on any client.

One ``SchedulingProxy`` per instance. The program is given ``proxy.url`` (its ``REDIS_URL``: a
loopback port of the proxy, with the database and credentials of the upstream URL); every
connection it opens there gets a connection of its own to the one upstream Redis (loopback only:
any other upstream is refused). Bytes pass as they are, both ways; the proxy cuts them into whole
commands and replies (``resp``) only to know when to hold and whose reply is whose.

What is one point, one *step*, is the thread explorer's (``intercept``; the rules in ``steps``): a
command; each command of a pipeline, one by one, in order, though the client wrote them in one
go; a MULTI ... EXEC block, held at its EXEC; a script. Commands of ``steps.PASSES`` are no
points: they are forwarded at once, or as soon as what the program sent before them on that
connection has gone. A step is held at the head of its connection, until ``release``.

The explorer's side, from one thread (the asyncio loop runs in a thread the proxy owns):

- ``start()`` / ``close()``, or ``with SchedulingProxy(url) as proxy``; ``port``, ``url``;
- ``wait_held(timeout)``: the oldest step held (the one sent first, among the heads of the
  program's connections), waiting up to ``timeout`` seconds for one; None if none came. A step
  sent before the call is held until released, so it is never missed. ``held()``: every step
  held now, oldest first (empty: the program is not at a point). ``on_held``, if given, is
  called in the proxy's thread as each step comes to be held (to wake an explorer that waits on
  other things too, as a program's output); it must be quick and must not call the proxy;
- ``settle(grace)``: every step held once the proxy has read what the program wrote to it so
  far. Bytes a process wrote to a loopback socket are, as a rule, in the proxy's receive buffer
  when its write returns (the kernel delivers them within the writer's system call), so the
  proxy's loop, turned until its reads come to rest (``QUIET_TURNS`` turns in a row that read
  nothing, at most ``MAX_TURNS``), has them framed and held: what a program wrote before
  something else it did (its answer on stdout, say) is held by the time that is seen, whatever
  the threads' timing. Then, if nothing is held, the loop turns on until a step is held or
  ``grace`` seconds have passed since the call (for what is written just after, or on a
  connection still opening): a bounded spin, as a grace of microseconds cannot be slept;
- ``release(step=None, timeout)``: forward the step (the oldest held, by default), deliver its
  reply to the program and return it decoded (``resp.decode``; an error reply is a
  ``resp.ReplyError``; ``resp.show`` puts it in one line); then the next step is held;
- ``kill()``: a crash. What is held and queued is never forwarded (it never reaches Redis) and
  every connection of the program is cut. The proxy stays open: a program started again
  connects anew (the caller ends the old program's process);
- ``counts()``: steps forwarded, commands passed, commands dropped (never forwarded: a kill, a
  connection the program closed with them queued), connections opened.

After ``release`` the program runs until its next step, or until it answers: the commands it
passes meanwhile go at once. An explorer that waits for one of those two before it moves another
instance keeps the run serial.

Bounded: a connection may queue ``max_queued`` commands behind the step it holds (a larger held
batch is an error, its connection cut), a command or reply ``resp.MAX_VALUE`` bytes; every wait
has a timeout; the upstream is reached within ``CONNECT_TIMEOUT``. What goes wrong in the
proxy's thread (a program that does not speak RESP, an unreachable Redis, the cap) is raised,
as a ``ProxyError``, by the next ``wait_held`` or ``release``. A connection the program closes
with a step held loses the step (``release`` raises ``StepLost``); one closed after its step
was forwarded still has its reply read, for ``release`` to return. Error replies and RESP3 push
messages (client tracking's invalidations) pass to the program as they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TypeVar

from ratelimit_harness.harness.errors import EnvironmentFailure, HarnessError, described
from ratelimit_harness.harness.explorer.server.keys import text
from ratelimit_harness.harness.explorer.wire.resp import Framer, ProtocolError, decode
from ratelimit_harness.harness.explorer.wire.steps import Command, Sorter
from ratelimit_harness.harness.loopback import redis_on_loopback

TIMEOUT = 10.0  # seconds release waits for Redis to answer a step, by default
CONNECT_TIMEOUT = 5.0  # seconds to reach Redis, to start, to close
MAX_QUEUED = 10_000  # commands one connection may send behind the step it holds
# settle: turns of the proxy's loop in a row with nothing read (a read takes two: the transport
# reads in one, the connection's task frames it in the next), and at most this many turns
QUIET_TURNS, MAX_TURNS = 3, 200
_GRACE = 2.0  # beyond a wait's own timeout, for the proxy's thread to answer
_READ = 64 * 1024
T = TypeVar("T")


class ProxyError(HarnessError):
    """The proxy cannot go on as asked: its upstream, the program's bytes, a bound."""


class StepLost(ProxyError, EnvironmentFailure):
    """The step cannot complete: its connection closed before it was sent, or answered."""


class ProxyTimeout(ProxyError, EnvironmentFailure):
    """Redis did not answer a step in time (or the proxy's thread did not answer a call)."""


@dataclass(frozen=True)
class Held:
    """A step held: on which of the program's connections (1, 2, ... as they opened), its
    number (the order the proxy read the program's commands in, over all its connections), and
    what it holds: one command, or a MULTI block (MULTI, each command queued, EXEC)."""

    connection: int
    number: int
    commands: tuple[tuple[bytes, ...], ...]

    @property
    def command(self) -> tuple[str, ...]:
        """As the thread explorer logs one (``intercept.plan``): the command's arguments, or a block
        as "MULTI", each queued command in one string, "EXEC"."""
        if len(self.commands) > 1:
            queued = (" ".join(map(text, command)) for command in self.commands[1:-1])
            return ("MULTI", *queued, "EXEC")
        return tuple(map(text, self.commands[0]))


@dataclass(frozen=True)
class Counts:
    forwarded: int  # steps released to Redis
    passed: int  # commands that were no step, forwarded without waiting
    dropped: int  # commands never forwarded (a kill, a connection closed with them queued)
    connections: int  # connections the program opened


@dataclass
class _Owed:
    """A command forwarded whose replies have not all come."""

    command: Command
    replies: int
    done: asyncio.Future[Any] | None  # a released step: its reply, for release


@dataclass
class _Link:
    """One connection of the program and its own connection to Redis."""

    number: int
    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter
    sorter: Sorter = field(default_factory=Sorter)
    queue: deque[tuple[int, Command]] = field(default_factory=deque)  # read, not yet forwarded
    owed: deque[_Owed] = field(default_factory=deque)
    raw: bool = False  # a RESP2 subscriber: forwarded as it is from now on
    gone: bool = False  # nothing more is forwarded (the program closed it, or it was cut)
    told: int = 0  # the last step on_held was told of


class SchedulingProxy:
    """Holds each step of one program's commands until released (see the module's contract)."""

    def __init__(
        self,
        upstream: str,
        *,
        port: int = 0,
        on_held: Callable[[Held], None] | None = None,
        max_queued: int = MAX_QUEUED,
    ) -> None:
        self._upstream, self._credentials, self._db = upstream_address(upstream)
        self._listen = port
        self._on_held = on_held
        self._max_queued = max_queued
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        # the proxy's thread's own, from here on
        self._server: asyncio.Server | None = None
        self._changed: asyncio.Event | None = None  # set whenever what is held may differ
        self._links: dict[int, _Link] = {}
        self._handlers: set[asyncio.Task[None]] = set()
        self._opened = 0  # connections, numbered as they open
        self._reads = 0  # reads of the program's bytes (and connections accepted), so far
        self._opening = 0  # connections accepted whose connection to Redis is not made yet
        # "host:port" of each connection to Redis made for the program, as the server sees it
        self.upstream_addresses: set[str] = set()
        self._commands = itertools.count(1)
        self._failures: list[ProxyError] = []
        self._forwarded = self._passed = self._dropped = 0

    @property
    def url(self) -> str:
        """The URL the program is given: the proxy's port, the upstream's database."""
        return f"redis://{self._credentials}127.0.0.1:{self.port}/{self._db}"

    # --- the explorer's side -------------------------------------------------------------

    def start(self) -> SchedulingProxy:
        if self._loop is not None:
            raise ProxyError("the proxy was started already")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="scheduling-proxy", daemon=True
        )
        self._thread.start()
        try:
            self.port = self._call(self._open(), CONNECT_TIMEOUT)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Cut every connection and stop; what is held is never forwarded. Idempotent."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or self._closed:
            return
        with contextlib.suppress(ProxyError):
            self._call(self._shut(), CONNECT_TIMEOUT)
        self._closed = True
        loop.call_soon_threadsafe(loop.stop)
        thread.join(CONNECT_TIMEOUT)
        if not thread.is_alive():
            loop.close()

    def __enter__(self) -> SchedulingProxy:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def wait_held(self, timeout: float) -> Held | None:
        return self._call(self._wait_held(max(timeout, 0.0)), max(timeout, 0.0))

    def held(self) -> tuple[Held, ...]:
        return self._call(self._now(self._held), CONNECT_TIMEOUT)

    def settle(self, grace: float = 0.0) -> tuple[Held, ...]:
        return self._call(self._settle(max(grace, 0.0)), CONNECT_TIMEOUT + max(grace, 0.0))

    def release(self, step: Held | None = None, timeout: float = TIMEOUT) -> Any:
        return self._call(self._release(step, timeout), timeout)

    def kill(self) -> None:
        self._call(self._now(self._kill), CONNECT_TIMEOUT)

    def busy(self) -> bool:
        """Whether a command of the program is on its way: written to its socket and not yet
        forwarded (held ones too; the proxy first reads what its sockets have, as ``settle``),
        or forwarded and not yet answered."""
        return self._call(self._busy(), CONNECT_TIMEOUT)

    def counts(self) -> Counts:
        return self._call(self._now(self._counts), CONNECT_TIMEOUT)

    def _call(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coroutine`` in the proxy's thread and wait for it, a little beyond ``timeout``."""
        if self._loop is None or self._closed:
            coroutine.close()
            raise ProxyError("the proxy is not running")
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise ProxyError("the proxy was called from its own thread (on_held?)")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout + _GRACE)
        except TimeoutError:
            future.cancel()
            raise ProxyTimeout(
                f"the proxy's thread did not answer in {timeout + _GRACE} s"
            ) from None

    # --- the proxy's thread --------------------------------------------------------------

    async def _now(self, what: Callable[[], T]) -> T:
        return what()

    async def _open(self) -> int:
        self._changed = asyncio.Event()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self._listen)
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def _shut(self) -> None:
        if self._server is not None:
            self._server.close()
        self._kill()
        handlers = set(self._handlers)
        for handler in handlers:
            handler.cancel()
        if handlers:
            await asyncio.wait(handlers, timeout=CONNECT_TIMEOUT)
        if self._server is not None:
            await asyncio.wait_for(self._server.wait_closed(), CONNECT_TIMEOUT)

    async def _wait_held(self, timeout: float) -> Held | None:
        assert self._changed is not None
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            self._raise_failure()
            held = self._held()
            if held:
                return held[0]
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return None
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def _settle(self, grace: float) -> tuple[Held, ...]:
        loop = asyncio.get_running_loop()
        until = loop.time() + grace
        quiet, seen = 0, -1
        for _ in range(MAX_TURNS):
            if self._reads == seen and not self._opening:
                quiet += 1
                if quiet == QUIET_TURNS:
                    break
            else:
                quiet, seen = 0, self._reads
            await asyncio.sleep(0)  # one turn: the loop polls every socket, runs what is ready
        # the grace, turning on: a timed wait would sleep a whole millisecond (epoll's unit)
        while not self._held() and loop.time() < until:
            await asyncio.sleep(0)
        self._raise_failure()
        return self._held()

    async def _release(self, step: Held | None, timeout: float) -> Any:
        self._raise_failure()
        held = self._held()
        if step is None:
            if not held:
                raise ProxyError("release: nothing is held")
            step = held[0]
        link = self._links.get(step.connection)
        shown = " ".join(step.command)[:80]
        if link is None or link.gone:
            raise StepLost(f"step {step.number} ({shown}) is lost: its connection closed")
        if step not in held:
            raise ProxyError(f"step {step.number} ({shown}) is not held (released already?)")
        _, command = link.queue.popleft()
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._send(link, command, done)
        self._forwarded += 1
        self._pump(link)
        try:
            return await asyncio.wait_for(done, timeout)
        except TimeoutError:
            raise ProxyTimeout(f"Redis did not answer {shown} in {timeout} s") from None

    def _held(self) -> tuple[Held, ...]:
        found = [
            Held(link.number, link.queue[0][0], link.queue[0][1].held)
            for link in self._links.values()
            if not link.gone and not link.raw and link.queue and link.queue[0][1].point
        ]
        return tuple(sorted(found, key=lambda held: held.number))

    async def _busy(self) -> bool:
        await self._settle(0.0)
        return self._opening > 0 or any(
            link.queue or link.owed for link in self._links.values() if not link.gone
        )

    def _kill(self) -> None:
        for link in list(self._links.values()):
            self._cut(link)
        self._tell()

    def _counts(self) -> Counts:
        return Counts(self._forwarded, self._passed, self._dropped, self._opened)

    def _raise_failure(self) -> None:
        if self._failures:
            raise self._failures.pop(0)

    def _fail(self, error: ProxyError, link: _Link | None = None) -> None:
        self._failures.append(error)
        if link is not None:
            self._cut(link)
        self._tell()

    def _tell(self) -> None:
        if self._changed is not None:
            self._changed.set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection of the program, for as long as it lasts."""
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        host, port = self._upstream
        try:
            self._reads += 1
            self._opening += 1
            try:
                connecting = asyncio.open_connection(host, port, limit=_READ)
                upstream_reader, upstream = await asyncio.wait_for(connecting, CONNECT_TIMEOUT)
            except (OSError, TimeoutError) as error:
                self._fail(ProxyError(f"cannot reach Redis at {host}:{port}: {described(error)}"))
                writer.transport.abort()
                return
            finally:
                self._opening -= 1
            self._opened += 1
            local = upstream.get_extra_info("sockname")
            if local:
                self.upstream_addresses.add(f"{local[0]}:{local[1]}")
            link = _Link(self._opened, writer, upstream)
            self._links[link.number] = link
            await asyncio.gather(
                self._from_client(link, reader), self._from_upstream(link, upstream_reader)
            )
        except asyncio.CancelledError:
            # the proxy closes (its links are cut already): end quietly, for asyncio's stream
            # callback reports a handler that ends cancelled as an error, once per connection
            return
        finally:
            self._handlers.discard(task)

    async def _from_client(self, link: _Link, reader: asyncio.StreamReader) -> None:
        framer = Framer(inline=True)
        try:
            while not link.gone and (data := await reader.read(_READ)):
                self._reads += 1
                if link.raw:
                    link.upstream.write(framer.rest() + data)
                else:
                    for frame in framer.feed(data):
                        self._queue(link, link.sorter.sort(frame))
                    self._pump(link)
                    if link.raw:
                        link.upstream.write(framer.rest())
                await link.upstream.drain()
        except ProtocolError as error:
            self._fail(
                ProxyError(f"connection {link.number} sent what is not a command: {error}"), link
            )
        except ProxyError as error:
            self._fail(error, link)
        except ConnectionError:
            pass
        finally:
            self._client_gone(link)

    async def _from_upstream(self, link: _Link, reader: asyncio.StreamReader) -> None:
        framer = Framer()
        try:
            while data := await reader.read(_READ):
                if link.raw and not link.owed:
                    self._to_client(link, framer.rest() + data)
                else:
                    for reply in framer.feed(data):
                        self._deliver(link, reply)
                if not link.client.is_closing():
                    with contextlib.suppress(ConnectionError):  # the program left: read on
                        await link.client.drain()
        except ProtocolError as error:
            self._fail(
                ProxyError(f"Redis sent connection {link.number} what is not RESP: {error}"), link
            )
        except ConnectionError:
            pass
        finally:
            self._upstream_gone(link)

    def _queue(self, link: _Link, command: Command) -> None:
        if len(link.queue) >= self._max_queued:
            raise ProxyError(
                f"connection {link.number} sent over {self._max_queued} commands behind the step "
                f"it holds (the proxy's bound on a held batch); cut"
            )
        link.queue.append((next(self._commands), command))

    def _pump(self, link: _Link) -> None:
        """Forward what heads the connection's queue until a step, which is held there."""
        while link.queue and not link.gone:
            number, command = link.queue[0]
            if command.point and not link.raw:
                if link.told != number:
                    link.told = number
                    self._tell()
                    self._announce(Held(link.number, number, command.held))
                return
            link.queue.popleft()
            self._send(link, command, None)
            self._passed += 1

    def _announce(self, held: Held) -> None:
        if self._on_held is None:
            return
        try:
            self._on_held(held)
        except Exception as error:
            self._failures.append(ProxyError(f"on_held raised {described(error)}"))

    def _send(self, link: _Link, command: Command, done: asyncio.Future[Any] | None) -> None:
        link.upstream.write(command.frame)
        if command.replies:
            link.owed.append(_Owed(command, command.replies, done))
        elif done is not None:
            done.set_result(None)
        if command.raw:
            link.raw = True

    def _deliver(self, link: _Link, reply: bytes) -> None:
        """A whole reply from Redis: to the program, in order; to release, if it was awaited."""
        if reply[:1] == b">" or (link.raw and not link.owed):  # a push: nobody's reply
            self._to_client(link, reply)
            return
        if not link.owed:
            raise ProtocolError(f"a reply no command asked for: {reply[:40]!r}")
        owed = link.owed[0]
        link.sorter.answered(owed.command, reply)
        self._to_client(link, reply)
        owed.replies -= 1
        if owed.replies:
            return
        link.owed.popleft()
        if owed.done is not None and not owed.done.done():
            try:
                owed.done.set_result(decode(reply))
            except ProtocolError as error:
                owed.done.set_exception(ProxyError(f"Redis' reply cannot be read: {error}"))
        if link.gone and not link.owed:
            link.upstream.close()

    def _to_client(self, link: _Link, data: bytes) -> None:
        if data and not link.client.is_closing():
            link.client.write(data)

    def _drop_queue(self, link: _Link) -> None:
        link.gone = True
        self._dropped += len(link.queue)
        link.queue.clear()

    def _client_gone(self, link: _Link) -> None:
        """The program closed the connection: what it queued is dropped, what was forwarded is
        still answered (for release), then Redis' side is closed too."""
        self._drop_queue(link)
        if not link.owed:
            link.upstream.close()
        self._tell()

    def _upstream_gone(self, link: _Link) -> None:
        self._drop_queue(link)
        for owed in link.owed:
            if owed.done is not None and not owed.done.done():
                lost = " ".join(map(text, owed.command.args))[:80]
                owed.done.set_exception(
                    StepLost(f"Redis closed connection {link.number} before answering {lost}")
                )
        link.owed.clear()
        link.client.close()
        self._links.pop(link.number, None)
        self._tell()

    def _cut(self, link: _Link) -> None:
        """At once, both ways: nothing more is forwarded, nor answered."""
        self._drop_queue(link)
        link.client.transport.abort()
        link.upstream.transport.abort()


def upstream_address(url: str) -> tuple[tuple[str, int], str, str]:
    """``url``'s (host, port), credentials ("user:password@" or ""), and database ("0" when it
    names none): a redis:// URL on a loopback address, or a ProxyError."""
    try:
        parts, upstream = redis_on_loopback(url, "the proxy")
    except ValueError as error:
        raise ProxyError(str(error)) from None
    db = parts.path.strip("/") or "0"
    if not db.isdigit():
        raise ProxyError(f"not a database number: {db!r}")
    credentials = parts.netloc.rpartition("@")[0]
    return upstream, f"{credentials}@" if credentials else "", db
