"""A clock file: the instants a traced program's clocks read, written by the harness.

The file holds two signed 64-bit integers, little-endian: the time of day and the monotonic
clocks' instant, in nanoseconds since the epoch. A negative one means that clock keeps real
time. The tracer maps the file's first page into each process of the program (``tracer``), so
a write here is what the program reads from its next clock call on, in every thread and every
process, from any process of the harness that writes it.

Kept in ``/dev/shm`` where there is one: a write there is a copy into memory.
"""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

REAL = -1  # an instant that says: this clock keeps real time
NANOS = 1_000_000_000
SIZE = 4096  # one page: what the tracer maps
_LAYOUT = struct.Struct("<qq")


def nanoseconds(seconds: float) -> int:
    """``seconds`` since the epoch in nanoseconds, exact to the microsecond (a float holds an
    instant to about 0.2 us: nanoseconds from it directly would be off by up to 256 ns)."""
    return round(seconds * 1_000_000) * 1000


class ClockFile:
    """One clock file (see the module's text)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def create(cls, folder: Path | None = None, name: str = "clock") -> ClockFile:
        """A new clock file on real time, in ``folder`` (by default a new one in ``/dev/shm``)."""
        if folder is None:
            shm = Path("/dev/shm")
            folder = Path(tempfile.mkdtemp(prefix="rlh-clock-", dir=shm if shm.is_dir() else None))
        path = folder / name
        with open(path, "wb") as file:
            file.write(_LAYOUT.pack(REAL, REAL).ljust(SIZE, b"\0"))
        return cls(path)

    def set(self, realtime: int, monotonic: int) -> None:
        """From now on the program's clocks read these instants (nanoseconds since the epoch;
        ``REAL``: that clock keeps real time)."""
        descriptor = os.open(self.path, os.O_WRONLY)
        try:
            os.pwrite(descriptor, _LAYOUT.pack(realtime, monotonic), 0)
        finally:
            os.close(descriptor)

    def set_seconds(self, realtime: float, monotonic: float | None = None) -> None:
        """As ``set``, in seconds, to the microsecond (``monotonic`` by default the same)."""
        instant = nanoseconds(realtime)
        self.set(instant, instant if monotonic is None else nanoseconds(monotonic))

    def read(self) -> tuple[int, int]:
        """The two instants, as last written."""
        descriptor = os.open(self.path, os.O_RDONLY)
        try:
            realtime, monotonic = _LAYOUT.unpack(os.pread(descriptor, _LAYOUT.size, 0))
        finally:
            os.close(descriptor)
        return realtime, monotonic
