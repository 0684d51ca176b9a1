"""Answers each line of stdin with the time it reads: the time of day in milliseconds since the
epoch, and the monotonic nanoseconds since its first line."""

import sys
import time

first = None
for _ in sys.stdin:
    now, monotonic = time.time_ns() // 1_000_000, time.monotonic_ns()
    first = monotonic if first is None else first
    print(now, monotonic - first, flush=True)
