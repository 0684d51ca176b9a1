"""Connections carried from one run to the next, so that a run does not pay for connecting.

Each run gives each instance a client of its own, and a fresh client would open a fresh
connection: a TCP connect, a handshake of a few round trips (HELLO, CLIENT SETINFO), and
redis-py reading its own version from the package's metadata. That was 40 % of a schedule's
time on a one-script limiter. So when a run ends, each connection its clients hold idle is kept
(``Connections.keep``), if it is as clean as a fresh one; the next run's clients are handed those
first (``Connections.client``).

*Clean* is asked of the server: ``CLIENT INFO`` on the connection itself must show no flag,
no MULTI, no WATCH, no subscription, the database, name, user and protocol it connected with.
A limiter that crashed between WATCH and EXEC, switched databases or subscribed leaves a
connection that is closed, as before. A connection that still owes a reply is never kept. A
server too old to say what a connection watches (Redis before 7.4) keeps none, and is not asked
again until the search ends.

The connections are the harness's, made from the URL it was given, for the clients it hands to
a limiter's factory. A client the limiter builds for itself is left alone.
"""

from __future__ import annotations

import os
from typing import Any

import redis

from ratelimit_harness.harness.explorer.wire import intercept

ANSWER_WITHIN = 1.0  # seconds a kept connection may take to answer CLIENT INFO


class _Pool(redis.ConnectionPool):
    """A pool that hands out kept connections before it makes any."""

    kept: list[Any]

    def make_connection(self) -> Any:
        try:  # (a limiter's own thread may take the last one first)
            return self.kept.pop()
        except IndexError:
            return super().make_connection()


class Connections:
    """Clean, connected connections by URL, carried between runs in one process."""

    def __init__(self) -> None:
        self._kept: dict[str, list[Any]] = {}
        self._unable: set[str] = set()  # URLs of servers that cannot say what is watched
        self._pid = os.getpid()

    def client(self, url: str) -> redis.Redis:
        """A client on ``url`` that uses the connections kept for it first."""
        pool = _Pool.from_url(url)
        pool.kept = self._for(url)
        client = redis.Redis(connection_pool=pool)
        client.auto_close_connection_pool = True  # closing it closes what it did not hand on
        return client

    def keep(self, client: redis.Redis, url: str) -> None:
        """The run that ``client`` served is over: keep its idle connections that are clean
        (taking them out of its pool, so that closing the client leaves them open)."""
        kept = self._for(url)
        idle: list[Any] = getattr(client.connection_pool, "_available_connections", [])
        if url in self._unable:
            return
        for connection in list(idle):
            fields = _info(connection)
            if fields is not None and "watch" not in fields:
                self._unable.add(url)
                return
            if fields is not None and _as_fresh(fields, connection):
                idle.remove(connection)
                connection.__dict__.pop("_harness_wire", None)  # the next run's wire is new
                kept.append(connection)

    def close(self) -> None:
        """Close every connection kept."""
        for kept in self._kept.values():
            for connection in kept:
                connection.disconnect()
        self._kept.clear()
        self._unable.clear()

    def _for(self, url: str) -> list[Any]:
        if os.getpid() != self._pid:  # a process forked: the sockets are the parent's
            self._kept, self._unable, self._pid = {}, set(), os.getpid()
        return self._kept.setdefault(url, [])


def _info(connection: Any) -> dict[str, str] | None:
    """What the server says of ``connection`` (its CLIENT INFO, field by field); None where it
    cannot be asked: it is closed, owes a reply, or does not answer."""
    owes = connection.__dict__.get("_harness_wire")
    if getattr(connection, "_sock", None) is None or (owes and (owes.owed or owes.early)):
        return None
    try:
        if connection.can_read():  # a reply nobody asked for
            return None
        with intercept.aside():
            connection.send_command("CLIENT", "INFO")
            if not connection.can_read(timeout=ANSWER_WITHIN):
                return None
            info = connection.read_response()
    except (redis.RedisError, OSError):
        return None
    line = info.decode() if isinstance(info, bytes) else str(info)
    return dict(part.split("=", 1) for part in line.split() if "=" in part)


def _as_fresh(fields: dict[str, str], connection: Any) -> bool:
    """Whether ``fields`` (its CLIENT INFO) are what a fresh connection of ``connection``'s
    settings shows."""
    expected = {
        "flags": "N",
        "multi": "-1",
        "watch": "0",
        "sub": "0",
        "psub": "0",
        "db": str(getattr(connection, "db", 0) or 0),
        "name": getattr(connection, "client_name", None) or "",
        "user": getattr(connection, "username", None) or "default",
        "resp": str(getattr(connection, "protocol", None) or 2),
    }
    return (
        all(fields.get(name) == value for name, value in expected.items())
        and fields.get("ssub", "0") == "0"
    )


CONNECTIONS = Connections()
