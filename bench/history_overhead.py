"""What histories cost: recording overhead per operation, read_history and merge speed.

    .venv/bin/python bench/history_overhead.py [--ops N] [--lines N] [--journals N] [--json]

Prints a table (``--json``: and one JSON line of it); asserts nothing about timing. Files go
to a temporary directory, removed after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ratelimit_harness.harness.history import (
    Operation,
    Outcome,
    Recorder,
    merge_journals,
    read_history,
    write_history,
)

OUTCOMES = list(Outcome)


def recording_overhead(directory: Path, ops: int, repeats: int) -> tuple[float, float]:
    """Microseconds per operation, best of ``repeats``: the loop recording each operation
    (invoke, then complete) to a journal, and the same loop recording nothing."""
    keys = [f"user-{i % 1000}" for i in range(ops)]
    recorded, bare = [], []
    for attempt in range(repeats):
        start = time.perf_counter()
        for key in keys:
            outcome = Outcome.ALLOWED if key else Outcome.REJECTED
        bare.append(time.perf_counter() - start)
        with Recorder(directory / f"overhead-{attempt}.jsonl", "bench") as recorder:
            start = time.perf_counter()
            for key in keys:
                token = recorder.invoke(key)
                outcome = Outcome.ALLOWED if key else Outcome.REJECTED
                recorder.complete(token, outcome)
            recorded.append(time.perf_counter() - start)
    return min(recorded) / ops * 1e6, min(bare) / ops * 1e6


def synthetic_history(lines: int, seed: int = 1) -> Iterator[Operation]:
    rng = random.Random(seed)
    start = 1_700_000_000.0
    for i in range(lines):
        invoke = start + i * 1e-4 + rng.random() * 1e-3
        outcome = rng.choice(OUTCOMES)
        complete = None if outcome is Outcome.UNKNOWN else invoke + rng.random() * 0.01
        now = None if rng.random() < 0.5 else invoke + 0.001
        yield Operation(
            f"app-{i % 8}", f"user-{rng.randrange(1000)}", invoke, complete, outcome, now
        )


def reading_speed(directory: Path, lines: int) -> tuple[float, int]:
    """Seconds for read_history of a ``lines``-line history, and the file's size in bytes."""
    path = directory / "history.jsonl"
    write_history(path, synthetic_history(lines))
    start = time.perf_counter()
    history = read_history(path)
    elapsed = time.perf_counter() - start
    if len(history) != lines:
        raise SystemExit(f"read {len(history)} operations, wrote {lines}")
    return elapsed, path.stat().st_size


def merging_speed(directory: Path, journals: int, ops: int) -> float:
    """Seconds for merge_journals of ``journals`` journals of ``ops`` operations each (plus one
    left in flight in each), recorded on one shared, advancing clock."""
    ticks = iter(range(10**12))

    def clock() -> float:
        return 1_700_000_000.0 + next(ticks) * 1e-5

    recorders = [
        Recorder(directory / f"app-{n}.journal", f"app-{n}", clock) for n in range(journals)
    ]
    rng = random.Random(2)
    for recorder in recorders:
        recorder.invoke("in-flight")
    for i in range(ops):
        for recorder in recorders:
            recorder.complete(recorder.invoke(f"user-{i % 1000}"), rng.choice(OUTCOMES))
    for recorder in recorders:
        recorder.close()
    start = time.perf_counter()
    merged = merge_journals(Path(recorder.path) for recorder in recorders)
    elapsed = time.perf_counter() - start
    if len(merged) != journals * (ops + 1):
        raise SystemExit(f"merged {len(merged)} operations, recorded {journals * (ops + 1)}")
    return elapsed


def figure(what: str, value: float, unit: str, note: str, operations: int) -> dict[str, Any]:
    """One row of the ``--json`` line."""
    return {
        "measure": "history",
        "what": what,
        "value": value,
        "unit": unit,
        "note": note,
        "operations": operations,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=200_000, help="recorded operations")
    parser.add_argument("--lines", type=int, default=1_000_000, help="history lines read")
    parser.add_argument("--journals", type=int, default=3, help="journals merged")
    parser.add_argument("--merge-ops", type=int, default=100_000, help="operations a journal")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()

    cpus = os.cpu_count()
    print(f"Python {platform.python_version()}, {cpus} CPUs, {platform.machine()}")
    with tempfile.TemporaryDirectory(prefix="history-bench-") as name:
        directory = Path(name)
        recorded, bare = recording_overhead(directory, args.ops, repeats=3)
        read_seconds, size = reading_speed(directory, args.lines)
        merge_seconds = merging_speed(directory, args.journals, args.merge_ops)

    merged_ops = args.journals * (args.merge_ops + 1)
    rows = [
        (
            f"recording, invoke + complete ({args.ops:,} ops, best of 3)",
            f"{recorded - bare:.2f} µs/op",
            f"loop {recorded:.2f} µs/op with, {bare:.2f} without",
        ),
        (
            f"read_history ({args.lines:,} lines, {size / 1e6:.0f} MB)",
            f"{args.lines / read_seconds:,.0f} ops/s",
            f"{read_seconds:.2f} s",
        ),
        (
            f"merge_journals ({args.journals} x {args.merge_ops:,} ops)",
            f"{merged_ops / merge_seconds:,.0f} ops/s",
            f"{merge_seconds:.2f} s",
        ),
    ]
    width = max(len(row[0]) for row in rows)
    for what, value, detail in rows:
        print(f"{what:<{width}}  {value:>16}  {detail}")
    if args.json:
        measured = [
            figure("recording cost", recorded - bare, "us/op", rows[0][2], args.ops),
            figure("read_history", args.lines / read_seconds, "ops/s", rows[1][0], args.lines)
            | {"seconds": read_seconds},
            figure("merge_journals", merged_ops / merge_seconds, "ops/s", rows[2][0], merged_ops)
            | {"seconds": merge_seconds},
        ]
        print(json.dumps({"bench": "history_overhead", "rows": measured}))


if __name__ == "__main__":
    main()
