"""race-test's wall time on one core and on every core, and the explorer's schedules per second.

Runs ``ratelimit-harness race-test --seed 1`` once per ``--jobs`` value (default: 1, then every
core), each on its own embedded Redis, and prints the wall time of each, the speed-up over one
job, and the explorer's schedules per second: every row's schedules over every row's seconds in
the first run (searching, shrinking and replaying; the naive stress test is not in a row's
seconds). Exits 1 when a run's verdicts do not all match the catalogue.

    .venv/bin/python bench/race_test_time.py [--jobs 1 all] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def race_test(jobs: str) -> tuple[float, dict[str, Any]]:
    """Wall seconds of one race-test, and its JSON table."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [sys.executable, "-m", "ratelimit_harness", "race-test", "--seed", "1"]
        command += ["--redis", "embedded", "--json", out.name]
        if jobs != "all":
            command += ["--jobs", jobs]
        started = time.monotonic()
        subprocess.run(command, capture_output=True, check=False)
        seconds = time.monotonic() - started
        return seconds, json.loads(Path(out.name).read_text() or '{"all_match": false}')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", nargs="+", default=["1", "all"], help="a number, or all")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    rows, first, matched, explorer = [], None, True, None
    print(f"{'jobs':>5} {'wall s':>7} {'speed-up':>8} {'schedules/s':>11}  verdicts")
    for jobs in args.jobs:
        seconds, table = race_test(jobs)
        first = first or seconds
        matched &= bool(table["all_match"])
        verdicts = "all match" if table["all_match"] else "MISMATCHES (or no table)"
        for row in table.get("rows", []):
            if not row["matches"]:  # what went otherwise, for the next look
                print(f"  {row['name']}: {_mismatch(row)}", file=sys.stderr)
        schedules = sum(row["examples"] for row in table.get("rows", []))
        searched = sum(row["seconds"] for row in table.get("rows", []))
        per_second = schedules / searched if searched else 0.0
        shown = jobs if jobs != "all" else f"all ({os.cpu_count()})"
        print(
            f"{shown:>5} {seconds:>7.1f} {first / seconds:>8.2f} {per_second:>11,.0f}  {verdicts}"
        )
        note = f"x{first / seconds:.2f} of the first; {verdicts}"
        wall = _row("race-test wall time", f"--jobs {shown}", seconds, "s", note)
        rows.append({**wall, "all_match": bool(table["all_match"])})
        if explorer is None:
            note = f"{schedules:,} schedules in {searched:.0f} s of rows, --jobs {shown}"
            explorer = _row("explorer", "schedules/s", per_second, "/s", note)
            explorer |= {"schedules": schedules, "seconds": searched}
    if args.json:
        print(json.dumps({"bench": "race_test_time", "rows": [*rows, explorer]}))
    sys.exit(0 if matched else 1)


def _mismatch(row: dict[str, Any]) -> str:
    """Why a row of race-test's table does not match the catalogue."""
    said = [f"expected {row['expected_flaws']}, found {row['found_flaws']}"]
    if row["replays_that_failed"]:
        said.append(f"replays that failed: {row['replays_that_failed']}")
    if row["unseen"]:
        said.append(f"{row['unseen']} commands unseen")
    return "; ".join(said)


def _row(measure: str, what: str, value: float, unit: str, note: str) -> dict[str, Any]:
    return {"measure": measure, "what": what, "value": value, "unit": unit, "note": note}


if __name__ == "__main__":
    main()
