"""A loopback TCP proxy in front of Redis that a load's nemesis makes slow, partitioned or dead.

The app instances are given ``proxy.url_for(redis_url)`` instead of Redis' own URL: the proxy's
port, with the URL's credentials, database and query kept. Every connection made there gets a
connection of its own to Redis, and bytes pass both ways as they are (no RESP is read: any
client, any command, pub/sub and blocking commands alike). One fault holds at a time, from the
call that sets it until the next call, which replaces it:

- ``delay(seconds)``: every chunk read, either way, is held ``seconds`` before it is written
  on, in order (a chunk read after the delay changed never overtakes one read before it). A
  request and its reply each wait, so a round trip takes at least twice ``seconds``. Chunks held
  when the delay changes keep the time they were due;
- ``partition()``: nothing is forwarded, either way, and nothing is lost yet. The proxy stops
  reading both sides of every connection, so what the two ends send waits in the kernel's
  buffers and then the senders block, as TCP does behind a partition: clients time out. A
  connection made during a partition is accepted and held likewise (it never reaches Redis);
- ``refuse()``: a dead host. Every open connection is reset (RST, both sides) and each new one
  is reset as soon as it is accepted, so connecting fails at once (a ConnectionError, no wait);
- ``heal()``: back to forwarding at once.

Leaving a partition, by ``heal`` or any other fault, resets every connection that was open
during it (their held bytes are never forwarded): a partition long enough to matter ends with
dead connections (the clients' timeouts have given up on them), and a command a client sent and
saw time out is then never applied at some later moment. Its outcome stays unknown, as the
checkers treat a timeout; the client connects again.

The caller's side: ``FaultProxy(host, port)`` or ``FaultProxy.for_url(redis_url)`` is running
once made, until ``close()`` (or the end of ``with``); ``port``, ``address``, ``url_for``; the
four faults above; ``events``; ``counts()``. Each change is recorded once the proxy has it in
effect, with the injected clock (``time.time`` by default): in ``events``, and passed to
``on_change`` if given, in the caller's thread. The calls may come from any thread.

The proxy is its own OS process (``python -m ratelimit_harness.harness.load.fault_proxy``), driven
over its stdin and stdout, one line each way per change: it never competes with the load's own
process for the GIL (whose progress, judging and live view would otherwise add latency that is no
fault), and it ends when that process does (its stdin closes). At no fault it adds about 20 µs to a
round trip (a PING's p50 45 µs through it, 22 µs direct, on this project's 2-core machine, shared),
and carried 10-18k round trips a second from four clients at once
(``bench/fault_proxy_latency.py``).

Bounded: a direction of a connection holds at most ``MAX_HELD`` bytes (and one more read) under
a delay, and reads from its sender only while the receiver's socket takes what is written (the
transport's own backpressure); every wait for the proxy's process has a timeout; the upstream
must be a loopback address.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import math
import os
import select
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from ratelimit_harness.harness.errors import EnvironmentFailure, HarnessError

MAX_HELD = 1 << 20  # bytes one direction of a connection may hold under a delay before it pauses
MAX_DELAY = 600.0  # seconds: the longest delay accepted
START_TIMEOUT = 30.0  # seconds for the proxy's process to listen (a loaded machine is slow)
CONTROL_TIMEOUT = 5.0  # seconds for the proxy's process to answer a change, or to close
CONNECT_TIMEOUT = 5.0  # seconds for the proxy to reach Redis for a new connection
_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST, not FIN
_FAULTS = ("delay", "partition", "refuse", "heal")


class FaultProxyError(HarnessError):
    """The fault proxy cannot do what it was asked (a bad address, a bad delay); the message
    says why."""


class FaultProxyFailed(FaultProxyError, EnvironmentFailure):
    """The fault proxy's process died or stopped answering."""


@dataclass(frozen=True)
class FaultEvent:
    """A change of fault: when (the proxy's clock, ``time.time`` unless injected) it was in
    effect, which (``delay``, ``partition``, ``refuse`` or ``heal``), and a delay's seconds."""

    at: float
    fault: str
    seconds: float = 0.0


@dataclass(frozen=True)
class ProxyCounts:
    accepted: int  # connections accepted and forwarded (or held, in a partition)
    refused: int  # connections reset as they were accepted (``refuse``)
    cut: int  # connections the proxy reset: by ``refuse``, or as a partition ended
    open: int  # connections open now
    peak_held: int  # the most bytes one direction of a connection held under a delay


class FaultProxy:
    """A faulty loopback proxy to ``upstream_host:upstream_port``, running from construction
    until ``close`` (see the module's contract)."""

    def __init__(
        self,
        upstream_host: str,
        upstream_port: int,
        *,
        clock: Callable[[], float] = time.time,
        on_change: Callable[[FaultEvent], None] | None = None,
        log: Path | None = None,
    ) -> None:
        host = loopback(upstream_host)
        if not 0 < upstream_port < 65536:
            raise FaultProxyError(f"not a TCP port: {upstream_port}")
        self._clock = clock
        self._on_change = on_change
        self._events: list[FaultEvent] = []
        self._lock = threading.Lock()
        self._buffer = b""
        self._closed = False
        with contextlib.ExitStack() as stack:
            stderr = stack.enter_context(log.open("ab")) if log else None
            self._process = subprocess.Popen(
                [sys.executable, "-m", __name__, host, str(upstream_port)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                bufsize=0,
                start_new_session=True,  # a ^C in the terminal is the load's to handle, not its
            )
        try:
            self.port = int(self._reply(START_TIMEOUT, "listening")[0])
        except BaseException:
            self._end()
            raise

    @classmethod
    def for_url(
        cls,
        redis_url: str,
        *,
        clock: Callable[[], float] = time.time,
        on_change: Callable[[FaultEvent], None] | None = None,
        log: Path | None = None,
    ) -> FaultProxy:
        """A proxy in front of the Redis of ``redis_url`` (a redis:// URL)."""
        parts = _redis_url(redis_url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 6379
        return cls(host, port, clock=clock, on_change=on_change, log=log)

    @property
    def address(self) -> tuple[str, int]:
        return "127.0.0.1", self.port

    def url_for(self, redis_url: str) -> str:
        """``redis_url`` pointed at the proxy: its credentials, database and query kept."""
        parts = _redis_url(redis_url)
        credentials = parts.netloc.rpartition("@")[0]
        netloc = f"{credentials}@127.0.0.1:{self.port}" if credentials else f"127.0.0.1:{self.port}"
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))

    @property
    def events(self) -> tuple[FaultEvent, ...]:
        with self._lock:
            return tuple(self._events)

    @property
    def running(self) -> bool:
        return self._process.poll() is None

    @property
    def pid(self) -> int:
        """The proxy's process (for a log; ``close`` ends it)."""
        return self._process.pid

    def delay(self, seconds: float) -> None:
        if not (math.isfinite(seconds) and 0 <= seconds <= MAX_DELAY):
            raise FaultProxyError(f"a delay is 0 to {MAX_DELAY:g} seconds, not {seconds}")
        self._change("delay", seconds)

    def partition(self) -> None:
        self._change("partition")

    def refuse(self) -> None:
        self._change("refuse")

    def heal(self) -> None:
        self._change("heal")

    def counts(self) -> ProxyCounts:
        with self._lock:
            numbers = self._ask("counts")
        return ProxyCounts(*map(int, numbers))

    def close(self) -> None:
        """Reset every connection and end the proxy's process. Idempotent."""
        with self._lock:
            if self._closed:
                return
            with contextlib.suppress(FaultProxyError):
                self._ask("close")
            self._end()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _change(self, fault: str, seconds: float = 0.0) -> None:
        with self._lock:
            self._ask(f"{fault} {seconds!r}")
            event = FaultEvent(self._clock(), fault, seconds)
            self._events.append(event)
        if self._on_change is not None:
            self._on_change(event)

    def _ask(self, line: str) -> list[str]:
        """Send one line to the proxy's process and return the words of its "ok" answer."""
        if self._closed or self._process.stdin is None:
            raise FaultProxyError("the fault proxy is closed")  # the caller's slip
        try:
            self._process.stdin.write(f"{line}\n".encode())
        except OSError:
            raise FaultProxyFailed(f"the fault proxy has exited ({self._process.poll()})") from None
        return self._reply(CONTROL_TIMEOUT, "ok")

    def _reply(self, timeout: float, expected: str) -> list[str]:
        stdout = self._process.stdout
        assert stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            ready = select.select([stdout], [], [], max(remaining, 0))[0] if remaining > 0 else []
            if not ready:
                raise FaultProxyFailed(f"the fault proxy did not answer in {timeout:g} s")
            chunk = os.read(stdout.fileno(), 4096)
            if not chunk:
                code = self._process.poll()
                raise FaultProxyFailed(f"the fault proxy has exited ({code}; its log may say why)")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        words = line.decode(errors="replace").split()
        if words[:1] != [expected]:
            raise FaultProxyFailed(f"the fault proxy: {' '.join(words) or 'no answer'}")
        return words[1:]

    def _end(self) -> None:
        self._closed = True
        for pipe in (self._process.stdin, self._process.stdout):
            if pipe is not None:
                pipe.close()
        try:
            self._process.wait(CONTROL_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def loopback(host: str) -> str:
    """``host`` as a loopback address ("localhost" is 127.0.0.1), or a FaultProxyError."""
    address = "127.0.0.1" if host == "localhost" else host
    try:
        if ipaddress.ip_address(address).is_loopback:
            return address
    except ValueError:
        pass
    raise FaultProxyError(f"the fault proxy forwards to a loopback address only, not {host}")


def _redis_url(url: str) -> urllib.parse.SplitResult:
    parts = urllib.parse.urlsplit(url)
    try:
        parts.port  # noqa: B018 (raises on a port that is no number)
    except ValueError as error:
        raise FaultProxyError(f"not a Redis URL: {url} ({error})") from None
    if parts.scheme != "redis":
        raise FaultProxyError(f"the fault proxy serves redis:// URLs only, not {url}")
    return parts


# --- the proxy's own process ------------------------------------------------------------


class _End(asyncio.Protocol):
    """One side of a connection through the proxy (the client's, or Redis'): what is read
    here is written to ``other``, now or when its delay is over."""

    def __init__(self, proxy: _Proxy, link: _Link) -> None:
        self.proxy, self.link = proxy, link
        self.transport: asyncio.Transport | None = None
        self.held: deque[tuple[float, bytes]] = deque()  # read here, due to be written there
        self.held_bytes = 0
        self.timer: asyncio.TimerHandle | None = None
        self.full = False  # this side's socket takes no more for now (pause_writing)
        self.reading = True
        self.ended = False  # nothing more will be read here (EOF, or closed)
        self.gone = False  # the connection is closed: what is written here is dropped

    @property
    def other(self) -> _End:
        return self.link.upstream if self is self.link.client else self.link.client

    @property
    def ready(self) -> bool:
        """Whether what is read here may be written to the other side now (its connection is
        made, and no partition holds the link); else it waits in ``held``."""
        return self.other.transport is not None and not self.link.held

    # asyncio's calls
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self is self.link.client:
            self.proxy.accepted(self.link)
        self.other.forward()  # what the other side read before this one was connected
        # Not regulated here but on the loop's next turn: before 3.11.3, a selector transport
        # starts reading after connection_made returns even when it paused reading in it
        # (Debian 12's Python is 3.11.2), so a pause made here would not hold.
        self.proxy.loop.call_soon(self.regulate)

    def data_received(self, data: bytes) -> None:
        if self.ready and not self.held and self.proxy.delay == 0:
            self.other.write(data)
            return
        loop = self.proxy.loop
        due = max(loop.time() + self.proxy.delay, self.held[-1][0] if self.held else 0.0)
        self.held.append((due, data))
        self.held_bytes += len(data)
        self.proxy.peak_held = max(self.proxy.peak_held, self.held_bytes)
        if self.timer is None:
            self.forward()
        self.regulate()

    def eof_received(self) -> bool:
        self.ended = True
        self.forward()
        return True  # half-open: replies may still come the other way

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = self.gone = True
        if exc is not None:  # reset: the other side is reset too
            self.proxy.cut(self.link, counted=False)
        else:
            self.forward()
        self.link.lost()

    def pause_writing(self) -> None:
        self.full = True
        self.other.regulate()

    def resume_writing(self) -> None:
        self.full = False
        self.other.regulate()

    # the flow
    def forward(self) -> None:
        """Write on what is due; wait for the rest; pass an end on once all is written."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if not self.ready:
            return
        now = self.proxy.loop.time()
        while self.held and self.held[0][0] <= now:
            data = self.held.popleft()[1]
            self.held_bytes -= len(data)
            self.other.write(data)
        if self.held:
            self.timer = self.proxy.loop.call_at(self.held[0][0], self.forward)
        elif self.ended:
            self.other.finish(closed=self.gone)
        self.regulate()

    def regulate(self) -> None:
        """Read here only while the other side can take it and no fault holds it."""
        wanted = not (
            self.ended
            or self.link.held
            or self.other.transport is None
            or self.other.full
            or self.held_bytes >= MAX_HELD
        )
        if self.transport is None or wanted == self.reading or self.transport.is_closing():
            return
        self.reading = wanted
        if wanted:
            self.transport.resume_reading()
        else:
            self.transport.pause_reading()

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.gone:
            self.transport.write(data)

    def finish(self, *, closed: bool) -> None:
        """The other side ended: end this one too, once what it was sent is written (close it,
        if it has ended too, or the other is closed; else only its sending half)."""
        if self.transport is None or self.gone or self.transport.is_closing():
            return
        if not (closed or self.ended) and self.transport.can_write_eof():
            self.transport.write_eof()
        else:
            self.transport.close()

    def reset(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.held.clear()
        self.held_bytes = 0
        self.ended = self.gone = True
        if self.transport is not None and not self.transport.is_closing():
            sock = self.transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
            self.transport.abort()


class _Link:
    """A client's connection and the proxy's own connection to Redis for it."""

    def __init__(self, proxy: _Proxy) -> None:
        self.proxy = proxy
        self.client = _End(proxy, self)
        self.upstream = _End(proxy, self)
        self.held = False  # open during a partition: nothing forwarded, reset when it ends

    def lost(self) -> None:
        if self.client.gone and (self.upstream.gone or self.upstream.transport is None):
            self.proxy.links.discard(self)


class _Proxy:
    def __init__(self, host: str, port: int, loop: asyncio.AbstractEventLoop) -> None:
        self.upstream = host, port
        self.loop = loop
        self.links: set[_Link] = set()
        self.connecting: set[asyncio.Task[None]] = set()
        self.delay = 0.0
        self.partitioned = self.refusing = False
        self.counted = {"accepted": 0, "refused": 0, "cut": 0}
        self.peak_held = 0

    def client(self) -> _End:
        return _Link(self).client

    def accepted(self, link: _Link) -> None:
        if self.refusing:
            self.counted["refused"] += 1
            link.client.reset()
            return
        self.counted["accepted"] += 1
        self.links.add(link)
        link.held = self.partitioned
        if not link.held:
            task = self.loop.create_task(self.connect(link))
            self.connecting.add(task)
            task.add_done_callback(self.connecting.discard)

    async def connect(self, link: _Link) -> None:
        try:
            connecting = self.loop.create_connection(lambda: link.upstream, *self.upstream)
            await asyncio.wait_for(connecting, CONNECT_TIMEOUT)
        except (OSError, TimeoutError):
            self.cut(link, counted=False)  # Redis is down: so is the proxy, to this client
            return
        if link not in self.links:  # cut meanwhile
            link.upstream.reset()

    def cut(self, link: _Link, *, counted: bool = True) -> None:
        if link in self.links:
            self.counted["cut"] += counted
            self.links.discard(link)
        link.client.reset()
        link.upstream.reset()

    def change(self, fault: str, seconds: float) -> None:
        if self.partitioned:
            for link in [link for link in self.links if link.held]:
                self.cut(link)
        self.partitioned, self.refusing = fault == "partition", fault == "refuse"
        self.delay = seconds if fault == "delay" else 0.0
        for link in list(self.links):
            if self.refusing:
                self.cut(link)
            elif self.partitioned:
                link.held = True
                for end in (link.client, link.upstream):
                    end.forward()
                    end.regulate()

    def counts(self) -> str:
        counted = self.counted
        numbers = (counted["accepted"], counted["refused"], counted["cut"], len(self.links))
        return " ".join(map(str, (*numbers, self.peak_held)))

    def shut(self) -> None:
        for task in self.connecting:
            task.cancel()
        for link in list(self.links):
            self.cut(link, counted=False)


async def _serve(host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    proxy = _Proxy(host, port, loop)
    server = await loop.create_server(proxy.client, "127.0.0.1", 0)
    _say(f"listening {server.sockets[0].getsockname()[1]}")
    commands = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(commands), sys.stdin)
    try:
        while line := await commands.readline():  # until "close", or the caller is gone
            words = line.decode(errors="replace").split()
            if words == ["close"]:
                break
            if words == ["counts"]:
                _say(f"ok {proxy.counts()}")
            elif len(words) == 2 and words[0] in _FAULTS and _number(words[1]):
                proxy.change(words[0], float(words[1]))
                _say("ok")
            else:
                _say(f"error: no such command: {' '.join(words)[:80]}")
    finally:
        server.close()
        proxy.shut()
        await asyncio.sleep(0)  # let the resets reach the sockets
    _say("ok")


def _number(word: str) -> bool:
    try:
        return math.isfinite(float(word))
    except ValueError:
        return False


def _say(line: str) -> None:
    with contextlib.suppress(OSError):  # the caller is gone: so are we, soon
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> None:
    """The proxy's process: ``python -m ratelimit_harness.harness.load.fault_proxy HOST PORT``."""
    host, port = argv if argv is not None else sys.argv[1:]
    asyncio.run(_serve(loopback(host), int(port)))


if __name__ == "__main__":
    main()
