"""Virtual time: one true clock for the run (Redis' clock), and one clock per app instance
that follows it at its own skew. Nothing sleeps; time moves only when the explorer says so.

While ``patched()`` is active, every clock a limiter may read in an instance's thread
(``time.time``, ``time.time_ns``, ``time.monotonic``, ``time.perf_counter`` and their ``_ns``
forms, ``datetime.datetime.now``/``utcnow``), including copies a module imported by name
(``from time import time_ns``), answers that instance's virtual time. Other threads see real time.
"""

from __future__ import annotations

import datetime as _datetime
import sys
import threading
import time as _time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from harness.provision.virtual_time import START  # virtual runs begin here


class VirtualTime:
    """The run's true time, in epoch seconds."""

    def __init__(self, start: float = START) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class InstanceClock:
    """An app instance's clock: the true time plus its skew."""

    def __init__(self, true_time: VirtualTime, skew: float = 0.0) -> None:
        self.true_time = true_time
        self.skew = skew

    def __call__(self) -> float:
        return self.true_time.now + self.skew


_current = threading.local()


@contextmanager
def reading(clock: InstanceClock) -> Iterator[None]:
    """Make ``clock`` the time of the calling thread (under ``patched()``)."""
    _current.clock = clock
    try:
        yield
    finally:
        _current.clock = None


def _virtual() -> InstanceClock | None:
    return getattr(_current, "clock", None)


def _seconds(real: Callable[[], float]) -> Callable[[], float]:
    def now() -> float:
        clock = _virtual()
        return real() if clock is None else clock()

    return now


def _nanoseconds(real: Callable[[], int]) -> Callable[[], int]:
    def now_ns() -> int:
        clock = _virtual()
        return real() if clock is None else round(clock() * 1e9)

    return now_ns


class _VirtualDatetime(_datetime.datetime):
    @classmethod
    def now(cls, tz: _datetime.tzinfo | None = None) -> _VirtualDatetime:
        clock = _virtual()
        if clock is None:
            return super().now(tz)
        return cls.fromtimestamp(clock(), tz)

    @classmethod
    def utcnow(cls) -> _VirtualDatetime:
        clock = _virtual()
        if clock is None:
            return super().utcnow()
        return cls.fromtimestamp(clock(), _datetime.UTC).replace(tzinfo=None)


def _replacements() -> dict[Any, Any]:
    seconds = ("time", "monotonic", "perf_counter")
    table: dict[Any, Any] = {
        getattr(_time, name): _seconds(getattr(_time, name)) for name in seconds
    }
    table |= {getattr(_time, f"{n}_ns"): _nanoseconds(getattr(_time, f"{n}_ns")) for n in seconds}
    table[_datetime.datetime] = _VirtualDatetime
    return table


@contextmanager
def patched() -> Iterator[None]:
    """Swap the clock functions for virtual ones in ``time``, ``datetime`` and every module
    that holds a copy; put the originals back on exit."""
    table = _replacements()
    swapped: list[tuple[Any, str, Any]] = []
    for module in [_time, _datetime, *list(sys.modules.values())]:
        if module is None or module is sys.modules.get(__name__):
            continue
        try:
            names = list(vars(module).items())
        except TypeError:
            continue
        for name, value in names:
            try:
                replacement = table.get(value)
            except TypeError:  # unhashable
                continue
            if replacement is not None and not name.startswith("__"):
                swapped.append((module, name, value))
    try:
        for module, name, value in swapped:
            setattr(module, name, table[value])
        yield
    finally:
        for module, name, value in swapped:
            setattr(module, name, value)
