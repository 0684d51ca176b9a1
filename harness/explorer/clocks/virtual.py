"""Virtual time: one true clock for the run (Redis' clock), and one clock per app instance
that follows it at its own skew. Nothing sleeps; time moves only when the explorer says so.

While ``patched()`` is active, every clock a limiter may read in an instance's thread
(``time.time``, ``time.monotonic``, ``time.perf_counter`` and their ``_ns`` forms,
``datetime.now``/``utcnow``/``today``, ``date.today``) answers that instance's virtual time,
wherever code keeps it (see ``kept``: a module's global, a class attribute, a default argument).
Other threads see real time.
"""

from __future__ import annotations

import datetime as _datetime
import sys
import threading
import time as _time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ratelimit_harness.harness.explorer.clocks.kept import Finder, Table, modules, swap
from ratelimit_harness.harness.provision.virtual_time import START  # virtual runs begin here


class VirtualTime:
    """The run's true time, in epoch seconds."""

    def __init__(self, start: float = START) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# packages whose clock readings are their own business, not kept (see InstanceClock.read):
# Redis clients and the standard library time their own timeouts and log lines, and a test
# tool may time a garbage collection in whichever thread it happens in
NOT_THE_LIMITERS = frozenset(
    {"redis", "valkey", "hypothesis", "_pytest", "pluggy", *sys.stdlib_module_names}
)


class InstanceClock:
    """An app instance's clock: the true time plus its skew."""

    def __init__(self, true_time: VirtualTime, skew: float = 0.0) -> None:
        self.true_time = true_time
        self.skew = skew
        self.readings: list[float] = []  # what the instance's own code read, in order

    def __call__(self) -> float:
        return self.true_time.now + self.skew

    def read(self) -> float:
        """The time, as the instance's thread reads it: kept in ``readings`` unless a Redis
        client or the standard library read it (for timeouts or a log line of their own)."""
        now = self()
        caller = sys._getframe(2).f_globals.get("__name__", "").partition(".")[0]
        if caller not in NOT_THE_LIMITERS:
            self.readings.append(now)
        return now


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


class _Clock:
    """What stands in for a builtin clock: the calling thread's virtual time under ``reading``,
    the real clock's answer elsewhere. An object, not a function: like the builtin (and unlike
    a Python function) it has no ``__get__``, so kept as a class attribute (``timer =
    time.time``) it is not bound as a method."""

    def __init__(self, real: Callable[[], Any]) -> None:
        self.real = real
        self.__name__ = self.__qualname__ = real.__name__

    def __repr__(self) -> str:
        return f"<virtual time.{self.__name__}>"


class _Seconds(_Clock):
    def __call__(self) -> float:
        clock = _virtual()
        return self.real() if clock is None else clock.read()


class _Nanoseconds(_Clock):
    def __call__(self) -> int:
        clock = _virtual()
        return self.real() if clock is None else round(clock.read() * 1e9)


class _StandsFor(type):
    """The metaclass of a virtual ``datetime`` or ``date``: whatever is an instance (or a
    subclass) of the real class is one of the virtual one too, so ``isinstance`` checks against
    the swapped name answer as before (``type(x) is datetime`` cannot be kept so)."""

    original: type

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls.original)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, cls.original)


class _VirtualDate(_datetime.date, metaclass=_StandsFor):
    original = _datetime.date

    @classmethod
    def today(cls) -> Any:
        clock = _virtual()
        return super().today() if clock is None else cls.fromtimestamp(clock.read())


class _VirtualDatetime(_datetime.datetime, metaclass=_StandsFor):
    original = _datetime.datetime

    @classmethod
    def now(cls, tz: _datetime.tzinfo | None = None) -> Any:
        clock = _virtual()
        return super().now(tz) if clock is None else cls.fromtimestamp(clock.read(), tz)

    @classmethod
    def today(cls) -> Any:
        return cls.now()

    @classmethod
    def utcnow(cls) -> Any:
        clock = _virtual()
        if clock is None:
            return super().utcnow()
        return cls.fromtimestamp(clock.read(), _datetime.UTC).replace(tzinfo=None)


def _replacements() -> Table:
    seconds = ("time", "monotonic", "perf_counter")
    pairs: list[tuple[Any, Any]] = [
        (getattr(_time, n), _Seconds(getattr(_time, n))) for n in seconds
    ]
    pairs += [(getattr(_time, f"{n}_ns"), _Nanoseconds(getattr(_time, f"{n}_ns"))) for n in seconds]
    pairs += [(_datetime.datetime, _VirtualDatetime), (_datetime.date, _VirtualDate)]
    return Table(pairs)


_TABLE = _replacements()
_FINDER = Finder(_TABLE, _TABLE.reversed())


@contextmanager
def patched() -> Iterator[None]:
    """Swap the clocks for virtual ones wherever code keeps them (see ``kept``) in ``time``,
    ``datetime`` and every module imported; put the originals back on exit, also where a
    module imported meanwhile took a virtual one."""
    before = [m for m in modules() if m is not sys.modules.get(__name__)]
    restores = swap(_FINDER.spots(before), _TABLE)
    try:
        yield
    finally:
        for restore in reversed(restores):
            restore()
        known = {id(m) for m in before}
        new = [m for m in modules() if id(m) not in known and m is not sys.modules.get(__name__)]
        swap(_FINDER.spots(new), _TABLE.reversed())
