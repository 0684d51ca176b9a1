"""Whether the same command gives the same verdict on every run: ``race`` on the three shapes of
released code in ``tests/limiters/shapes.py`` and their twins on the line protocol, seeded and
unseeded.

A *verdict* here is what a user reads first: each flaw found, its kinds of violation and the
faults it needs.
Each shape is raced ``--runs`` times with seeds 1, 2, ... and ``--runs`` times with no seed,
each run a ``race`` process of its own at the default budget, with every fault allowed. A row
gives how many runs gave the verdict expected (``EXPECTED``), and how many distinct verdicts
the seeded runs gave, and the unseeded ones (1: they agreed).

    .venv/bin/python bench/verdict_agreement.py [--runs N] [--jobs N] [--only NAME] [--json]
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "limiters" / "programs" / "shapes"
FIRST = "fixed-window:limit=2,window=10,anchor=first"
CAS = "fixed-window:limit=10,window=10,anchor=first"
Flaw = tuple[tuple[str, ...], tuple[str, ...]]  # its kinds, the faults it needs
Verdict = tuple[Flaw, ...]
# shape -> (policy, the verdict every run must give)
EXPECTED: dict[str, tuple[str, Verdict]] = {
    # the key left with no TTL then refuses once its window is past
    "exists_then_incrby": (
        FIRST,
        ((("immortal-key",), ("stall",)), (("immortal-key", "wrongful-rejection"), ("stall",))),
    ),
    "marker_window": (FIRST, ((("immortal-key",), ()), (("over-admission",), ()))),
    "compare_and_set": (CAS, ((("wrongful-rejection",), ()),)),
}


def limiters(only: str | None) -> list[tuple[str, str, str]]:
    """(row name, --limiter, shape) for each shape and its program."""
    rows = []
    for shape in EXPECTED:
        program = PROGRAMS / f"{shape.replace('_', '-')}.js"
        rows += [
            (shape, f"tests.limiters.shapes:{shape}", shape),
            (f"{program.name}", f"exec:node {program}", shape),
        ]
    return [row for row in rows if only is None or only in row[0]]


def race(limiter: str, policy: str, seed: int | None) -> tuple[Verdict, float]:
    """One ``race`` process: its verdict and its seconds."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "race.json"
        command = [sys.executable, "-m", "ratelimit_harness", "race", "--limiter", limiter]
        command += ["--policy", policy, "--json", str(out), "--trace", f"{scratch}/trace.json"]
        command += [] if seed is None else ["--seed", str(seed)]
        started = time.perf_counter()
        done = subprocess.run(
            command, check=False, cwd=ROOT, capture_output=True, text=True, timeout=600
        )
        seconds = time.perf_counter() - started
        if done.returncode not in (0, 1):
            raise SystemExit(f"race {limiter} exited {done.returncode}:\n{done.stderr[-2000:]}")
        summary = json.loads(out.read_text())
    flaws = ((tuple(flaw["kinds"]), tuple(flaw["faults"])) for flaw in summary["flaws"])
    return tuple(sorted(flaws)), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=10, help="runs seeded, and unseeded (default: 10)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="races at once (default: 2)")
    parser.add_argument("--only", help="the rows whose name holds this")
    parser.add_argument("--json", action="store_true", help="end with the rows as one JSON line")
    args = parser.parse_args()
    seeds: list[int | None] = [*range(1, args.runs + 1), *([None] * args.runs)]
    rows: list[dict[str, Any]] = []
    print(f"{'limiter':28} {'seeded':>8} {'unseeded':>9} {'distinct':>9} {'s/run':>6}")
    for name, limiter, shape in limiters(args.only):
        policy, expected = EXPECTED[shape]
        with ThreadPoolExecutor(args.jobs) as pool:
            runs = list(pool.map(functools.partial(race, limiter, policy), seeds))
        verdicts = [verdict for verdict, _ in runs]
        seeded, unseeded = verdicts[: args.runs], verdicts[args.runs :]
        distinct = f"{len(set(seeded))}, {len(set(unseeded))}"
        per_run = sum(seconds for _, seconds in runs) / len(runs)
        print(
            f"{name:28} {seeded.count(expected):>5}/{args.runs:<2} "
            f"{unseeded.count(expected):>6}/{args.runs:<2} {distinct:>9} {per_run:>6.1f}"
        )
        for verdict in sorted(set(verdicts) - {expected}):
            print(f"  {verdicts.count(verdict)} runs gave {verdict}")
        rows.append(
            {
                "measure": "verdicts as expected",
                "what": name,
                "value": verdicts.count(expected),
                "unit": f"of {2 * args.runs} runs",
                "note": f"distinct verdicts: {distinct} (seeded, unseeded); {per_run:.1f} s a run",
            }
        )
    if args.json:
        print(json.dumps({"bench": "verdict_agreement", "rows": rows}))


if __name__ == "__main__":
    main()
