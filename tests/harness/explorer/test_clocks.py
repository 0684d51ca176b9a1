"""Virtual clocks: every clock a limiter may read follows its instance, in its thread only,
wherever the code keeps it; and everything is as it was once ``patched()`` ends."""

import datetime as datetime_module
import importlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from time import monotonic_ns, perf_counter_ns, time_ns  # imported by name, as libraries do
from typing import Any, ClassVar, TypeVar

import pytest

from ratelimit_harness.harness.explorer.clocks.virtual import (
    InstanceClock,
    VirtualTime,
    patched,
    reading,
)
from ratelimit_harness.harness.explorer.server.keys import real_now

START = 1_000_000_000.0  # the run's time: far from the real clock
SKEW = 2.5
VIRTUAL = START + SKEW  # what the instance reads
# the real clocks, where swapping does not reach them (inside a dict)
REAL = {"time": time.time, "monotonic": time.monotonic, "perf_counter": time.perf_counter}
REAL_DATETIME = (datetime,)
T = TypeVar("T")

clock = time.time  # a module-level alias


class Throttle:
    timer: ClassVar[Any] = time.time  # as Django REST framework's throttles keep it
    unbound = staticmethod(time.time)


class Subclassed(Throttle):
    pass


class Meter:
    def read(self, now: Callable[[], int] = time.monotonic_ns) -> float:
        return now() / 1e9

    @staticmethod
    def at(now: Callable[[], float] = time.perf_counter) -> float:
        return now()

    @classmethod
    def stamp(cls, *, now: Callable[[], float] = time.time) -> float:
        return now()

    class Nested:
        timer: ClassVar[Any] = time.monotonic


def stamped(now: Callable[[], float] = time.time) -> float:
    return now()


def stamped_by_keyword(*, now: Callable[[], int] = time.time_ns) -> float:
    return now() / 1e9


# each shape, and the real clock it reads outside an instance; every reader looks its clock up
# when called, as the code it stands for does (hence the lambdas)
SHAPES: dict[str, tuple[Callable[[], float], str]] = {
    "time.time": (lambda: time.time(), "time"),  # noqa: PLW0108
    "time.monotonic": (lambda: time.monotonic(), "monotonic"),  # noqa: PLW0108
    "an alias": (lambda: clock(), "time"),  # noqa: PLW0108
    "time_ns imported by name": (lambda: time_ns() / 1e9, "time"),
    "monotonic_ns imported by name": (lambda: monotonic_ns() / 1e9, "monotonic"),
    "perf_counter_ns imported by name": (lambda: perf_counter_ns() / 1e9, "perf_counter"),
    "a class attribute, through an instance": (lambda: Throttle().timer(), "time"),
    "a class attribute, on the class": (lambda: Throttle.timer(), "time"),  # noqa: PLW0108
    "an inherited class attribute": (lambda: Subclassed().timer(), "time"),
    "a static method that is a clock": (lambda: Subclassed().unbound(), "time"),
    "a nested class's attribute": (lambda: Meter.Nested().timer(), "monotonic"),
    "a default argument": (stamped, "time"),
    "a keyword-only default": (stamped_by_keyword, "time"),
    "a method's default": (lambda: Meter().read(), "monotonic"),
    "a static method's default": (lambda: Meter.at(), "perf_counter"),  # noqa: PLW0108
    "a class method's keyword-only default": (lambda: Meter.stamp(), "time"),  # noqa: PLW0108
    "datetime.now()": (lambda: datetime.now().timestamp(), "time"),
    "datetime.now(UTC)": (lambda: datetime.now(UTC).timestamp(), "time"),
    "datetime.today()": (lambda: datetime.today().timestamp(), "time"),
    "datetime.utcnow()": (lambda: datetime.utcnow().replace(tzinfo=UTC).timestamp(), "time"),
    "datetime.datetime.now()": (lambda: datetime_module.datetime.now().timestamp(), "time"),
}


def in_instance(read: Callable[[], T]) -> T:
    """What ``read`` answers in an instance's thread, its clock ``SKEW`` ahead of ``START``."""
    skewed = InstanceClock(VirtualTime(START), skew=SKEW)
    seen: list[T] = []

    def instance() -> None:
        with reading(skewed):
            seen.append(read())

    thread = threading.Thread(target=instance)
    thread.start()
    thread.join()
    return seen[0]


@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_reads_the_instance_clock_in_its_thread_and_real_time_elsewhere(
    shape: str,
) -> None:
    read, real = SHAPES[shape][0], REAL[SHAPES[shape][1]]
    with patched():
        virtual = in_instance(read)
        elsewhere = read()
        assert abs(elsewhere - real()) < 1
    assert virtual == pytest.approx(VIRTUAL, abs=1e-6)
    assert abs(read() - real()) < 1


def test_the_readings_kept_are_the_limiters_not_a_librarys() -> None:
    clock = InstanceClock(VirtualTime(START))

    def instance() -> None:
        with reading(clock):
            time.time()  # this module's reading: as a limiter's would be
            logging.makeLogRecord({})  # the standard library stamps a log line with the time
            datetime.now()

    with patched():
        thread = threading.Thread(target=instance)
        thread.start()
        thread.join()
    assert clock.readings == [START, START]


def test_the_instance_reads_time_passing_and_a_new_skew() -> None:
    true_time = VirtualTime(START)
    skewed = InstanceClock(true_time, skew=SKEW)
    seen: list[float] = []

    def instance() -> None:
        with reading(skewed):
            seen.append(Throttle().timer())
            true_time.advance(10)
            skewed.skew = -1
            seen.append(stamped())

    with patched():
        thread = threading.Thread(target=instance)
        thread.start()
        thread.join()
    assert seen == [VIRTUAL, START + 10 - 1]


def test_the_real_clock_the_explorer_keeps_for_itself_stays_real_in_an_instance() -> None:
    with patched():
        seen = in_instance(lambda: (real_now(), REAL["monotonic"]()))
    assert abs(seen[0] - seen[1]) < 1


def test_date_today_is_the_instance_day() -> None:
    with patched():
        virtual = in_instance(date.today)
        elsewhere = date.today()
    assert virtual == date.fromtimestamp(VIRTUAL)
    assert elsewhere == date.fromtimestamp(REAL["time"]())


def test_isinstance_against_the_swapped_classes_answers_as_before() -> None:
    real_datetime = datetime_module.datetime(2026, 1, 2, 3, 4, 5)
    real_date = datetime_module.date(2026, 1, 2)
    with patched():
        virtual_now = in_instance(datetime.now)
        assert datetime is not REAL_DATETIME[0]  # swapped in this module too
        assert isinstance(real_datetime, datetime)
        assert isinstance(real_datetime, date)
        assert isinstance(real_date, date)
        assert not isinstance(real_date, datetime)
        assert issubclass(datetime_module.datetime, datetime)
    assert isinstance(virtual_now, datetime)
    assert virtual_now + datetime_module.timedelta(seconds=1) > virtual_now


def test_a_class_attribute_is_not_bound_as_a_method() -> None:
    with patched():
        timer = Throttle().timer
        assert timer is vars(Throttle)["timer"]  # not a bound method
        assert timer is time.time
        assert timer.__name__ == "time"


def test_everything_is_put_back_exactly() -> None:
    originals = {
        "time.time": time.time,
        "time.monotonic_ns": time.monotonic_ns,
        "datetime.datetime": datetime_module.datetime,
        "datetime.date": datetime_module.date,
    }
    kept = _spots()
    with patched():
        assert time.time is not originals["time.time"]
        assert vars(Throttle)["timer"] is not kept["attribute"]
        assert stamped.__defaults__ is not kept["defaults"]
    assert time.time is originals["time.time"]
    assert time.monotonic_ns is originals["time.monotonic_ns"]
    assert datetime_module.datetime is originals["datetime.datetime"]
    assert datetime_module.date is originals["datetime.date"]
    now_kept = _spots()
    assert all(now_kept[name] is kept[name] for name in kept)


@pytest.fixture
def importable(tmp_path: Path) -> Iterator[Path]:
    """A directory on ``sys.path``; the modules imported from it are forgotten after."""
    sys.path.insert(0, str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    sys.path.remove(str(tmp_path))
    for name in set(sys.modules) - before:
        del sys.modules[name]


LIBRARY = """
import time
from datetime import datetime
from time import monotonic as elapsed


class Throttle:
    timer = time.time
    unbound = staticmethod(time.monotonic)


def stamped(now=time.time):
    return now()
"""


def test_a_module_imported_while_patched_reads_virtual_time_and_gets_the_builtins_back(
    importable: Path,
) -> None:
    (importable / "library_while_patched.py").write_text(LIBRARY)
    with patched():
        library = importlib.import_module("library_while_patched")
        virtual = in_instance(
            lambda: (library.Throttle().timer(), library.Throttle.unbound(), library.stamped())
        )
    assert virtual == (VIRTUAL, VIRTUAL, VIRTUAL)
    assert vars(library.Throttle)["timer"] is time.time
    assert vars(library.Throttle)["unbound"].__func__ is time.monotonic
    assert library.stamped.__defaults__ == (time.time,)
    assert library.stamped.__defaults__[0] is time.time
    assert library.datetime is datetime_module.datetime
    assert library.elapsed is time.monotonic


def test_a_module_imported_before_is_swapped_again_after_a_name_is_rebound(
    importable: Path,
) -> None:
    (importable / "library_rebound.py").write_text(LIBRARY)
    library = importlib.import_module("library_rebound")
    with patched():
        pass
    library.clock = time.perf_counter  # type: ignore[attr-defined]
    with patched():
        assert in_instance(library.clock) == VIRTUAL
    assert library.clock is time.perf_counter


def _spots() -> dict[str, object]:
    """What each spot that keeps a clock holds now."""
    return {
        "alias": clock,
        "imported": time_ns,
        "attribute": vars(Throttle)["timer"],
        "static method": vars(Throttle)["unbound"],
        "nested": vars(Meter.Nested)["timer"],
        "defaults": stamped.__defaults__,
        "keyword defaults": stamped_by_keyword.__kwdefaults__,
        "method defaults": Meter.read.__defaults__,
        "datetime here": datetime,
    }
