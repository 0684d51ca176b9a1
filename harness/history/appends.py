"""Appending records to a file that a kill must not tear: each write one ``os.write`` on an
``O_APPEND`` descriptor, and writes that may wait held in memory for a while first."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

HELD_BYTES = 1 << 16  # held at most, whatever the time: a write then takes them all


class AppendFile:
    """Appends bytes to one file, records whole: ``write`` sends them to the OS at once, after
    anything held; ``hold`` keeps them in memory until ``hold_for`` seconds have passed since
    the first of them was held (or ``HELD_BYTES`` are), or until the next ``write`` or
    ``flush``. Either keeps the order of the calls. With ``hold_for`` 0 nothing waits.

    Nothing is buffered below this: each write is one ``os.write`` (more only if the OS takes
    part of it, as on a full disk), so a process killed at any point loses only what it held.
    A thread-safe ``flush`` is for a timer: a record held by a process gone quiet waits for it.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        exclusive: bool,
        hold_for: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = os.fspath(path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
        self._fd = os.open(path, flags | (os.O_EXCL if exclusive else 0), 0o644)
        self.hold_for = hold_for
        self._clock = clock  # what the hold is timed by
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._due = 0.0  # when the first record held must be written
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        """``data`` and whatever is held, to the OS now (in one write)."""
        if not self._held:
            self._write(data)
            return
        with self._lock:
            self._held.append(data)
            self._write_held()

    def hold(self, data: bytes) -> None:
        """``data``, to the OS once it has waited ``hold_for`` (or with the next write)."""
        if not self.hold_for:
            self._write(data)
            return
        with self._lock:
            if not self._held:
                self._due = self._clock() + self.hold_for
            self._held.append(data)
            self._held_bytes += len(data)
            if self._held_bytes >= HELD_BYTES or self._clock() >= self._due:
                self._write_held()

    def flush(self) -> None:
        """Whatever is held, to the OS now."""
        with self._lock:
            if self._held:
                self._write_held()

    def close(self) -> None:
        if self._fd >= 0:
            self.flush()
            os.close(self._fd)
            self._fd = -1

    def _write_held(self) -> None:
        data = b"".join(self._held)
        self._held.clear()
        self._held_bytes = 0
        self._write(data)

    def _write(self, data: bytes) -> None:
        if self._fd < 0:
            raise ValueError(f"{self.path} is closed")
        written = os.write(self._fd, data)
        while written < len(data):  # a short write (a full disk, say): write the rest
            data = data[written:]
            written = os.write(self._fd, data)
