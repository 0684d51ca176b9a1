"""Keys as Redis sees them, under virtual time: which a command touches, when each expires.

On a server on virtual time (see ``provision.virtual_time``) the server itself expires keys by
the run's time, and ``server_ttls`` reads them all at the end. On a Redis that keeps real time,
Redis counts TTLs down in real time, and a run's real milliseconds must not leak into its
virtual time (a key one virtual millisecond from expiry would vanish while the explorer thinks).
So there ``Expiry`` keeps each key's deadline in virtual time and gives Redis a TTL ``SLOW``
times longer: real time passing during a run moves it by a negligible virtual amount. When the
limiter sets a TTL, the explorer reads it right after the command and converts it; when virtual
time passes, keys whose deadline has passed are deleted, as Redis would have.
"""

from __future__ import annotations

import math
import time
from typing import Any

from ratelimit_harness.harness.provision.virtual_time import ServerClock

NO_KEYS = {"PING", "TIME", "SCRIPT", "MULTI", "EXEC", "DISCARD", "UNWATCH", "INFO"}
ALL_ARGS_ARE_KEYS = {"MGET", "DEL", "EXISTS", "UNLINK", "WATCH", "TOUCH"}
SLOW = 1000  # a virtual second lasts this many real seconds in Redis
MARGIN_MS = 50  # tolerance when telling our own (slowed) TTL from one the limiter just set
# Redis keeps a key alive at its deadline itself: a key expires once time is past its deadline
# by more than this. The explorer moves time by at least 10 ms.
LATE = 0.002


_REAL = (time.monotonic,)  # inside a tuple, where swapping in virtual clocks does not reach


def real_now() -> float:
    """Real monotonic seconds, in any thread, virtual clocks or not."""
    return _REAL[0]()


def touched(command: tuple[Any, ...]) -> tuple[str, ...]:
    """The keys one command names (a MULTI block: those of every command in it)."""
    name = str(command[0]).upper().split()[0]  # redis-py sends "SCRIPT LOAD" as one word
    if name == "MULTI":
        return tuple(k for part in command[1:-1] for k in touched(tuple(str(part).split())))
    if name in NO_KEYS or len(command) < 2:
        return ()
    if name in ("EVAL", "EVALSHA"):
        return tuple(map(text, command[3 : 3 + int(command[2])]))
    if name in ALL_ARGS_ARE_KEYS:
        return tuple(map(text, command[1:]))
    return (text(command[1]),)


def text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


# every key and what each of ``per_key`` (Lua expressions of ``key``) gives, in one round trip
# (the explorer's databases hold a few keys)
_EVERY_KEY = """
local found, cursor = {{}}, '0'
repeat
  local page = redis.call('SCAN', cursor, 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    found[#found + 1] = key
    {per_key}
  end
until cursor == '0'
return found
"""
_PTTL = "found[#found + 1] = redis.call('PTTL', key)"
_TTLS = _EVERY_KEY.format(per_key=_PTTL)
# DUMP serializes a value exactly (its type and contents), or is nil for a key just gone
_STATE = _EVERY_KEY.format(per_key=f"found[#found + 1] = redis.call('DUMP', key) or ''; {_PTTL}")


def server_ttls(client: Any) -> dict[str, float]:
    """Every key and its TTL in seconds (-1: none), as the server has them: on a server on
    virtual time, that is virtual time's."""
    flat = client.eval(_TTLS, 0)
    ttls = {text(key): int(ttl) for key, ttl in zip(flat[::2], flat[1::2], strict=True)}
    return {key: -1.0 if ttl == -1 else ttl / 1000 for key, ttl in ttls.items() if ttl != -2}


def server_state(client: Any) -> tuple[tuple[bytes, bytes, int], ...]:
    """Every key, its value as DUMP gives it, and its PTTL in milliseconds, in key order."""
    flat = client.eval(_STATE, 0)
    return tuple(sorted(zip(flat[::3], flat[1::3], flat[2::3], strict=True)))


class ServerExpiry:
    """Expiry on a server on virtual time: the server expires keys itself, by the clock the
    run moves (``advance``). The same face as ``Expiry``, for ``Run``."""

    real_time = False  # every expiry on this server is the run's own

    def __init__(self, clock: ServerClock, client: Any, now: float) -> None:
        self.clock, self.client = clock, client
        clock.set(now)

    def after(self, keys: tuple[str, ...], now: float, sent: float) -> None:
        """Nothing to do: the server keeps each TTL on the run's clock."""

    def advance(self, now: float) -> None:
        self.clock.set(now)

    def snapshot(self, now: float) -> dict[str, float]:
        return server_ttls(self.client)


class Expiry:
    """Virtual deadlines of the keys of one run, on a Redis that keeps real time. ``client``
    must not be a scheduled one."""

    real_time = True  # the server counts TTLs down in real time: any expiry of its own is real

    def __init__(self, client: Any) -> None:
        self.client = client
        self.deadlines: dict[str, float] = {}  # key -> virtual instant it expires
        self.slowed: dict[str, tuple[int, float]] = {}  # key -> (real TTL set, real instant)

    def after(self, keys: tuple[str, ...], now: float, sent: float) -> None:
        """Called right after a command that touched ``keys``, at virtual instant ``now``;
        ``sent`` is the real instant (``real_now()``) the command was sent."""
        for key in keys:
            ttl = self.client.pttl(key)
            if ttl < 0:  # gone (-2), or no TTL (-1)
                self.deadlines.pop(key, None)
                self.slowed.pop(key, None)
            elif not self._ours(key, ttl):
                # the TTL was set no earlier than ``sent``: add all the real time since, so the
                # deadline is never early (a loaded machine only makes it a little late)
                counted_down = math.ceil((real_now() - sent) * 1000)
                self._set(key, now + (ttl + counted_down + 1) / 1000, now)

    def advance(self, now: float) -> None:
        """Virtual time is now ``now``: delete the keys whose deadline has come."""
        for key, deadline in list(self.deadlines.items()):
            if deadline < now - LATE:
                self.client.delete(key)
                del self.deadlines[key]
                self.slowed.pop(key, None)
            else:
                self._set(key, deadline, now)

    def snapshot(self, now: float) -> dict[str, float]:
        """Every key and its TTL in virtual seconds (-1: none). A key the explorer never saw
        (a script named it itself) keeps the TTL the server counts down in real time, which a
        run's few real milliseconds barely move."""
        ttls = server_ttls(self.client)
        return {
            key: self.deadlines[key] - now if key in self.deadlines else ttl
            for key, ttl in ttls.items()
        }

    def _set(self, key: str, deadline: float, now: float) -> None:
        real_ms = max(1, round((deadline - now) * 1000 * SLOW))
        self.client.pexpire(key, real_ms)
        self.deadlines[key] = deadline
        self.slowed[key] = (real_ms, real_now())

    def _ours(self, key: str, ttl: int) -> bool:
        if key not in self.slowed:
            return False
        real_ms, since = self.slowed[key]
        expected = real_ms - (real_now() - since) * 1000
        return abs(ttl - expected) <= MARGIN_MS
