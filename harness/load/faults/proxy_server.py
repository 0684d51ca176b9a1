"""The fault proxy itself, in its own OS process; ``FaultProxy`` (``proxy.py``) starts it
and drives it, and its docstring says what each fault does.

    python -m ratelimit_harness.harness.load.faults.proxy_server HOST PORT

The process listens on a free loopback port and gives each connection made there a connection of
its own to Redis at ``HOST:PORT``, a loopback address. It is driven over its stdin and stdout, one
line each way. It first says ``listening PORT``. Then it reads a change (``delay SECONDS``,
``partition 0``, ``refuse 0`` or ``heal 0``), ``counts`` or ``close``, and answers
``ok`` (for ``counts``, ``ok`` and the five numbers of a ``ProxyCounts``) or ``error: WHY``. It
ends at ``close``, or when its stdin closes (its caller is gone), resetting every connection.

One asyncio loop does it all. A *link* is a client's connection and the proxy's connection to
Redis for it; each of the two is an *end*, which writes what it reads to the other end.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import socket
import struct
import sys
from collections import deque
from collections.abc import Sequence

from ratelimit_harness.harness.loopback import loopback_address

MAX_HELD = 1 << 20  # bytes one direction of a connection may hold under a delay before it pauses
CONNECT_TIMEOUT = 5.0  # seconds for the proxy to reach Redis for a new connection
_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST, not FIN
_FAULTS = ("delay", "partition", "refuse", "heal")


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
    """Serve until told to close (see the module's docstring); ``argv`` is ``HOST PORT``, else
    the command line's."""
    host, port = argv if argv is not None else sys.argv[1:]
    address = loopback_address(host)
    if address is None:
        sys.exit(f"the fault proxy forwards to a loopback address only, not {host}")
    asyncio.run(_serve(address, int(port)))


if __name__ == "__main__":
    main()
