"""Virtual clocks: every clock a limiter may read follows its instance, in its thread only."""

import datetime
import threading
import time
from time import time_ns  # imported by name, as real libraries do

from harness.explorer.clocks import InstanceClock, VirtualTime, patched, reading


def read_all() -> tuple[float, int, float, float]:
    return time.time(), time_ns(), time.monotonic(), datetime.datetime.now().timestamp()


def test_an_instance_thread_reads_its_own_virtual_clock() -> None:
    true_time = VirtualTime(1_800_000_000.0)
    skewed = InstanceClock(true_time, skew=2.5)
    seen: list[tuple[float, int, float, float]] = []

    def instance() -> None:
        with reading(skewed):
            seen.append(read_all())
            true_time.advance(10)
            seen.append(read_all())

    with patched():
        thread = threading.Thread(target=instance)
        thread.start()
        thread.join()
        elsewhere = time.time()
    assert seen[0] == (1_800_000_002.5, 1_800_000_002_500_000_000, 1_800_000_002.5, 1_800_000_002.5)
    assert seen[1][0] == 1_800_000_012.5
    assert abs(elsewhere - time.time()) < 5  # other threads keep real time


def test_the_originals_come_back() -> None:
    original = time.time
    with patched():
        assert time.time is not original
    assert time.time is original
    assert time_ns is globals()["time_ns"]
    assert time_ns() > 1_700_000_000 * 10**9
