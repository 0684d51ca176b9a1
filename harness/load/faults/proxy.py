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

This module is the caller's side. ``FaultProxy(host, port)`` or ``FaultProxy.for_url(redis_url)``
is running once made, until ``close()`` (or the end of ``with``); ``port``, ``address``,
``url_for``; the four faults above; ``events``; ``counts()``. Each change is recorded once the
proxy has it in effect, with the injected clock (``time.time`` by default): in ``events``, and
passed to ``on_change`` if given, in the caller's thread. The calls may come from any thread.

The proxy is its own OS process (``proxy_server.py``), driven over its stdin and stdout,
one line each way per change. So it never competes with the load's own process for the GIL (whose
progress, judging and live view would otherwise add latency that is no fault), and it ends when
that process does (its stdin closes). At no fault it adds about 20 µs to a round trip (a PING's
p50 45 µs through it, 22 µs direct, on this project's 2-core machine, shared), and carried
10-18k round trips a second from four clients at once (``bench/fault_proxy_latency.py``).

Bounded: a direction of a connection holds at most ``proxy_server.MAX_HELD`` bytes (1 MiB,
and one more read) under a delay, and reads from its sender only while the receiver's socket
takes what is written (the transport's own backpressure); every wait for the proxy's process has
a timeout; the upstream must be a loopback address.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from ratelimit_harness.harness.errors import EnvironmentFailure, HarnessError
from ratelimit_harness.harness.load.faults import proxy_server
from ratelimit_harness.harness.loopback import loopback_address, redis_on_loopback

MAX_DELAY = 600.0  # seconds: the longest delay accepted
START_TIMEOUT = 30.0  # seconds for the proxy's process to listen (a loaded machine is slow)
CONTROL_TIMEOUT = 5.0  # seconds for the proxy's process to answer a change, or to close


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
        host = loopback_address(upstream_host)
        if host is None:
            raise FaultProxyError(
                f"the fault proxy forwards to a loopback address only, not {upstream_host}"
            )
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
                [sys.executable, "-m", proxy_server.__name__, host, str(upstream_port)],
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
        """A proxy in front of the Redis of ``redis_url`` (a redis:// URL on loopback)."""
        host, port = _redis_url(redis_url)[1]
        return cls(host, port, clock=clock, on_change=on_change, log=log)

    @property
    def address(self) -> tuple[str, int]:
        return "127.0.0.1", self.port

    def url_for(self, redis_url: str) -> str:
        """``redis_url`` pointed at the proxy: its credentials, database and query kept."""
        parts = _redis_url(redis_url)[0]
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


def _redis_url(url: str) -> tuple[urllib.parse.SplitResult, tuple[str, int]]:
    try:
        return redis_on_loopback(url, "the fault proxy")
    except ValueError as error:
        raise FaultProxyError(str(error)) from None
