"""A local Redis Cluster: three primaries, started one of the usual ways, slots split evenly;
with ``replicas``, a replica of each as well (for a failover)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from urllib.parse import urlparse

import redis

from ratelimit_harness.harness.provision.base import RedisServer, Unavailable

SLOTS = 16384
PRIMARIES = 3


def form_cluster(urls: list[str], timeout: float = 30.0) -> None:
    """Give each node an even share of the slots, introduce them, and wait until all agree."""
    nodes = [redis.Redis.from_url(url, socket_timeout=5) for url in urls]
    try:
        share = SLOTS // len(nodes)
        for index, node in enumerate(nodes):
            last = SLOTS - 1 if index == len(nodes) - 1 else (index + 1) * share - 1
            node.execute_command("CLUSTER ADDSLOTSRANGE", index * share, last)
        first = urlparse(urls[0])
        for node in nodes[1:]:
            node.execute_command("CLUSTER MEET", first.hostname, first.port)
        deadline = time.monotonic() + timeout
        while not all(_settled(node, len(nodes)) for node in nodes):
            if time.monotonic() > deadline:
                raise Unavailable(f"cluster of {', '.join(urls)} did not settle in {timeout:.0f} s")
            time.sleep(0.1)
    finally:
        for node in nodes:
            node.close()


def _settled(node: redis.Redis, size: int) -> bool:
    info = node.execute_command("CLUSTER INFO")  # redis-py parses it into a dict
    return bool(info["cluster_state"] == "ok" and int(info["cluster_known_nodes"]) == size)


def add_replicas(primaries: list[str], replicas: list[str], timeout: float = 30.0) -> None:
    """Make each node of ``replicas`` a replica of the primary at the same place in
    ``primaries``; return once each replica's link to its primary is up."""
    first = urlparse(primaries[0])
    for primary_url, replica_url in zip(primaries, replicas, strict=True):
        with (
            redis.Redis.from_url(primary_url, socket_timeout=5) as primary,
            redis.Redis.from_url(replica_url, socket_timeout=5) as replica,
        ):
            node_id = primary.execute_command("CLUSTER MYID")
            for node in (primary, replica):  # a full sync at once, not after the 5 s default
                node.config_set("repl-diskless-sync-delay", 0)
            replica.execute_command("CLUSTER MEET", first.hostname, first.port)
            deadline = time.monotonic() + timeout
            while True:  # it must know the primary before it can follow it
                try:
                    replica.execute_command("CLUSTER REPLICATE", node_id)
                    break
                except redis.ResponseError:
                    if time.monotonic() > deadline:
                        raise Unavailable(f"{replica_url} could not follow {primary_url}") from None
                    time.sleep(0.1)
            while replica.info("replication").get("master_link_status") != "up":
                if time.monotonic() > deadline:
                    raise Unavailable(f"{replica_url} did not sync with {primary_url}")
                time.sleep(0.1)


def fail_over(replica_url: str, timeout: float = 30.0) -> None:
    """``CLUSTER FAILOVER`` at ``replica_url`` (a planned failover: the replica catches up, then
    takes over its primary's slots); return once it is a primary. A replica still syncing (one
    that was a primary moments ago) is waited for; a failover that did not happen is asked
    again, bounded by ``timeout``."""
    deadline = time.monotonic() + timeout
    with redis.Redis.from_url(replica_url, socket_timeout=5) as replica:
        while replica.info("replication").get("master_link_status") != "up":
            if time.monotonic() > deadline:
                raise Unavailable(f"{replica_url} is not a replica in sync")
            time.sleep(0.05)
        while True:
            replica.execute_command("CLUSTER FAILOVER")
            asked = time.monotonic()
            while time.monotonic() - asked < 5:
                if role_of(replica_url) == "master":
                    return
                time.sleep(0.05)
            if time.monotonic() > deadline:
                raise Unavailable(f"{replica_url} did not take over in {timeout:.0f} s")


def role_of(url: str) -> str:
    """The node's ``ROLE``: ``master`` or ``slave``."""
    with redis.Redis.from_url(url, socket_timeout=5) as node:
        role = node.execute_command("ROLE")[0]
    return role.decode() if isinstance(role, bytes) else str(role)


def start_cluster(start_node: Callable[..., RedisServer], *, replicas: bool = False) -> RedisServer:
    """Start PRIMARIES nodes with ``start_node(cluster=True)`` and join them into one cluster
    (with ``replicas``, PRIMARIES more, a replica of each)."""
    servers: list[RedisServer] = []

    def stop() -> None:
        for server in servers:
            with contextlib.suppress(Exception):
                server.stop()

    try:
        for _ in range(PRIMARIES):
            servers.append(start_node(cluster=True))
        urls = [server.url for server in servers]
        form_cluster(urls)
        followers: list[str] = []
        if replicas:
            for _ in range(PRIMARIES):
                servers.append(start_node(cluster=True))
            followers = [server.url for server in servers[PRIMARIES:]]
            add_replicas(urls, followers)
    except BaseException:
        stop()
        raise
    how = servers[0].how
    shape = f"{PRIMARIES}-primary cluster" + (", a replica each" if replicas else "")
    return RedisServer(
        urls[0], how, f"{shape} ({how})", stop, tuple(urls), replica_urls=tuple(followers)
    )
