"""A local Redis Cluster: three primaries, started one of the usual ways, slots split evenly."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from urllib.parse import urlparse

import redis

from harness.provision.base import RedisServer, Unavailable

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


def start_cluster(start_node: Callable[..., RedisServer]) -> RedisServer:
    """Start PRIMARIES nodes with ``start_node(cluster=True)`` and join them into one cluster."""
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
    except BaseException:
        stop()
        raise
    how = servers[0].how
    return RedisServer(urls[0], how, f"{PRIMARIES}-primary cluster ({how})", stop, tuple(urls))
