"""What every way of provisioning Redis shares: the handle, the server flags, readiness."""

from __future__ import annotations

import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Protocol

import redis


class Unavailable(RuntimeError):
    """This way of provisioning Redis cannot be used here; the message says why."""


class ServerControl(Protocol):
    """What a fault may do to a server the harness started (a load run's nemesis)."""

    def kill(self) -> None:
        """SIGKILL: gone at once, mid-command, nothing saved."""

    def shutdown(self) -> None:
        """``SHUTDOWN NOSAVE``: it stops as an operator would stop it, nothing saved."""

    def start(self) -> None:
        """Start it again on the same port, empty; return once it answers."""

    def pause(self) -> None:
        """SIGSTOP: its connections stay open and nothing answers."""

    def resume(self) -> None:
        """SIGCONT: it answers again what waited."""


@dataclass
class RedisServer:
    """A running Redis (or a cluster of them) and how to stop it. Stopping twice is harmless."""

    url: str
    how: str  # "url", "container", "embedded" or "virtual-time"
    detail: str
    stop_callback: Callable[[], None] = field(repr=False, default=lambda: None)
    node_urls: tuple[str, ...] = ()  # a cluster's primaries; empty for a single server
    replica_urls: tuple[str, ...] = ()  # a cluster's replicas, one per primary, in their order
    clock_file: str = ""  # a virtual-time server's clock (see virtual_time); else empty
    control: ServerControl | None = field(repr=False, default=None)  # one the harness started

    def stop(self) -> None:
        stop, self.stop_callback = self.stop_callback, lambda: None
        stop()

    def __enter__(self) -> RedisServer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_PORT = 10240  # where ports are picked from, up to the kernel's ephemeral range
BUS_OFFSET = 10000  # a cluster node's bus port is its port + this
_handed_out: set[int] = set()


def free_port(*, cluster: bool = False) -> int:
    """A TCP port on 127.0.0.1 that nothing is bound to right now, never the same twice in one
    process. Picked below the kernel's ephemeral range where there is room: a port the kernel
    hands out for binding to 0 is one it also hands out as the local end of anyone's outgoing
    connection, which may take it before the program it was meant for binds it (``Address
    already in use``). For a cluster node, the bus port (port + 10000) must be free too."""
    below = _ephemeral_start() - (BUS_OFFSET if cluster else 0)
    for _ in range(100 if below - LOWEST_PORT >= 1000 else 0):
        port = LOWEST_PORT + secrets.randbelow(below - LOWEST_PORT)
        if port in _handed_out or not _bindable(port):
            continue
        if not cluster or _bindable(port + BUS_OFFSET):
            _handed_out.add(port)
            return port
    while True:  # no room below the range: one of the kernel's, as it gives them out
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if not cluster or (port + BUS_OFFSET <= 65535 and _bindable(port + BUS_OFFSET)):
            return port


def _ephemeral_start() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def server_args(port: int, data_dir: str, *, cluster: bool = False) -> list[str]:
    """Flags for a throwaway server: loopback only, no persistence."""
    args = [
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        data_dir,
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    if cluster:
        args += [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            f"nodes-{port}.conf",
            "--cluster-node-timeout",
            "5000",
        ]
    return args


def ping(url: str, timeout: float = 2.0) -> None:
    """Raise Unavailable unless the server at ``url`` answers PING."""
    client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        client.ping()
    except (redis.RedisError, OSError) as error:
        raise Unavailable(f"Redis not reachable at {url}: {error}") from None
    finally:
        client.close()


def shutdown_nosave(url: str) -> None:
    """``SHUTDOWN NOSAVE``; the server closes the connection as it goes."""
    client = redis.Redis.from_url(url, socket_timeout=5)
    try:
        client.shutdown(nosave=True)
    except redis.ConnectionError:
        pass  # it went, as asked
    finally:
        client.close()


def wait_until_ready(url: str, died: Callable[[], str | None], timeout: float = 15.0) -> None:
    """Poll ``url`` until it answers; ``died()`` returns why the server is gone, if it is."""
    deadline = time.monotonic() + timeout
    while True:
        reason = died()
        if reason:
            raise Unavailable(reason)
        try:
            ping(url, timeout=0.5)
            return
        except Unavailable:
            if time.monotonic() > deadline:
                raise Unavailable(f"no answer from {url} after {timeout:.0f} s") from None
            time.sleep(0.05)
