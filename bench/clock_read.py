"""What one clock read costs a program: on the real clock, on a clock file through its replaced
vDSO (``process_clock``), and under libfaketime reading a clock file (the explorer's way until
2026-12-07, still the load half's), side by side, in turns.

The program is Python, reading ``time.time_ns()`` and ``time.monotonic_ns()`` N times each and
timing the loop with ``time.process_time_ns()`` (CPU time, which neither way moves). Each way
runs ``--repeat`` times in turns, so a shared machine's swings move all alike; the best of each
is kept. Prints nanoseconds per read and each way's ratio to the real clock (``--json``: one
JSON line of it); asserts nothing about timing.

    .venv/bin/python bench/clock_read.py [--reads N] [--repeat R] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ratelimit_harness.harness.load.system.clocks import on_offset_file
from ratelimit_harness.harness.process_clock import NANOS, ClockFile, ProcessClock

WAIT = 120.0  # seconds one run may take
PROGRAM = """
import sys, time
count = int(sys.argv[1])
start = time.process_time_ns()
for _ in range(count):
    time.time_ns()
    time.monotonic_ns()
print((time.process_time_ns() - start) / (2 * count))
"""


def per_read(way: str, reads: int, folder: Path) -> float:
    """Nanoseconds of CPU per clock read, in one run of the program the ``way`` given."""
    command = [sys.executable, "-S", "-c", PROGRAM, str(reads)]
    if way == "vdso":
        clock = ClockFile.create(folder, "vdso")
        clock.set(1_800_000_000 * NANOS, 1_800_000_000 * NANOS)
        process = ProcessClock(clock).spawn(command, stdout=subprocess.PIPE, text=True)
        out, _ = process.communicate(timeout=WAIT)
        return float(out)
    env = dict(os.environ)
    if way == "libfaketime":
        offset = folder / "offset"
        offset.write_text("+0\n")
        env |= on_offset_file(offset)
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=WAIT, check=True
    )
    return float(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    ways = ("real", "vdso", "libfaketime")
    best = dict.fromkeys(ways, float("inf"))
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.repeat):
            for way in ways:
                best[way] = min(best[way], per_read(way, args.reads, Path(folder)))
    for way in ways:
        ratio = best[way] / best["real"]
        print(f"{way:12} {best[way]:8.1f} ns a read   {ratio:5.2f}x the real clock's")
    if args.json:
        print(json.dumps({"ns_per_read": best, "reads": args.reads, "repeat": args.repeat}))


if __name__ == "__main__":
    main()
