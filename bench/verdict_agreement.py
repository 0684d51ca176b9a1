"""Whether the same command gives the same verdict on every run: ``race`` on the three shapes of
released code in ``tests/limiters/shapes.py`` and their twins on the line protocol, and on
limiters that read their own clock (Node's monotonic one; Go's real one, where ``go`` is) or start
a thread of their own (pyrate-limiter 4.5.1), seeded and unseeded.

A *verdict* here is what a user reads first: each flaw found, its kinds of violation and the
faults it needs.
Each row is raced ``--runs`` times with seeds 1, 2, ... and ``--runs`` times with no seed,
each run a ``race`` process of its own at the default budget: the shapes with every fault
allowed, the clocks under crashes alone (their own clocks are what is tested). A row gives how
many runs gave the verdict expected (``Row.expected``), and how many distinct verdicts the
seeded runs gave, and the unseeded ones (1: they agreed).

    .venv/bin/python bench/verdict_agreement.py [--runs N] [--jobs N] [--only NAME] [--json]
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import json
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "limiters" / "programs"
FIRST = "fixed-window:limit=2,window=10,anchor=first"
CAS = "fixed-window:limit=10,window=10,anchor=first"
ALIGNED = "fixed-window:limit=2,window=10"
Flaw = tuple[tuple[str, ...], tuple[str, ...]]  # its kinds, the faults it needs
Verdict = tuple[Flaw, ...]


@dataclass(frozen=True)
class Row:
    name: str
    limiter: str  # as --limiter takes it
    policy: str
    expected: Verdict  # what every run must give
    options: tuple[str, ...] = ()  # race's, beyond the default budget and every fault


# the key left with no TTL then refuses once its window is past
EXISTS_THEN_INCRBY = (
    (("immortal-key",), ("stall",)),
    (("immortal-key", "wrongful-rejection"), ("stall",)),
)
MARKER_WINDOW = ((("immortal-key",), ()), (("over-admission",), ()))
COMPARE_AND_SET = ((("wrongful-rejection",), ()),)
GET_SET = ((("over-admission",), ()),)
# no TTL on its sorted set; entries stamped by two clocks a hair apart (a skew) land a window
# early (a stall does it too: needs names one smallest set). Half of seeds 1-10 also find a
# wrongful rejection under skew, as true a flaw: a seeded row counts runs that gave exactly this
PYRATE = ((("immortal-key",), ()), (("immortal-key", "over-admission"), ("skew",)))
WINDOW = "sliding-window:limit=2,window=10"
CRASH = ("--nemesis", "crash")
GO = ("--nemesis", "crash", "--allow-real-clock")  # a Go program's clock is real (see clocks.real)


def shapes() -> list[Row]:
    """The three shapes of released code, in Python and as Node programs."""
    rows = []
    for shape, policy, expected in (
        ("exists_then_incrby", FIRST, EXISTS_THEN_INCRBY),
        ("marker_window", FIRST, MARKER_WINDOW),
        ("compare_and_set", CAS, COMPARE_AND_SET),
    ):
        program = PROGRAMS / "shapes" / f"{shape.replace('_', '-')}.js"
        rows += [
            Row(shape, f"tests.limiters.shapes:{shape}", policy, expected),
            Row(program.name, f"exec:node {program}", policy, expected),
        ]
    return rows


def clocks(go_programs: Path) -> list[Row]:
    """Limiters that read their own clock: Node's monotonic one, Go's real one, under crashes."""
    node = PROGRAMS / "clocks"
    return [
        Row("monotonic-lua.js", f"exec:node {node / 'monotonic-lua.js'}", ALIGNED, (), CRASH),
        Row(
            "monotonic-get-set.js",
            f"exec:node {node / 'monotonic-get-set.js'}",
            ALIGNED,
            GET_SET,
            CRASH,
        ),
        Row("go lua-window", f"exec:{go_programs / 'lua-window'}", FIRST, (), GO),
        Row("go get-set", f"exec:{go_programs / 'get-set'}", FIRST, GET_SET, GO),
    ]


def threads() -> list[Row]:
    """A released limiter that starts a thread of its own: pyrate-limiter 4.5.1's Limiter, whose
    Leaker trims buckets every 10 s (the compare extra installs it)."""
    try:
        installed = importlib.metadata.version("pyrate-limiter")
    except importlib.metadata.PackageNotFoundError:
        return []
    if installed != "4.5.1":
        return []
    return [Row("pyrate-limiter 4.5.1", "corpus.pyrate_limiter:redis_bucket_v4", WINDOW, PYRATE)]


def go_build(into: Path) -> Path:
    """The Go limiters of the tests, built into ``into`` (the first build fetches go-redis)."""
    subprocess.run(
        ["go", "build", "-o", f"{into}/", "./get-set", "./lua-window"],
        cwd=PROGRAMS / "go",
        check=True,
        timeout=600,
    )
    return into


def race(row: Row, seed: int | None) -> tuple[Verdict, float]:
    """One ``race`` process: its verdict and its seconds."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "race.json"
        command = [sys.executable, "-m", "ratelimit_harness", "race", "--limiter", row.limiter]
        command += ["--policy", row.policy, "--json", str(out), "--trace", f"{scratch}/trace.json"]
        command += row.options
        command += [] if seed is None else ["--seed", str(seed)]
        started = time.perf_counter()
        done = subprocess.run(
            command, check=False, cwd=ROOT, capture_output=True, text=True, timeout=600
        )
        seconds = time.perf_counter() - started
        if done.returncode not in (0, 1):
            raise SystemExit(f"race {row.limiter} exited {done.returncode}:\n{done.stderr[-2000:]}")
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
    with tempfile.TemporaryDirectory() as scratch:
        go_programs = go_build(Path(scratch)) if shutil.which("go") else None
        every = shapes() + threads() + (clocks(go_programs) if go_programs else [])
        for row in every:
            if args.only is None or args.only in row.name:
                rows.append(_agreement(row, seeds, args))
    if args.json:
        print(json.dumps({"bench": "verdict_agreement", "rows": rows}))


def _agreement(row: Row, seeds: list[int | None], args: argparse.Namespace) -> dict[str, Any]:
    """Race ``row`` once for each seed; print its line and return its entry."""
    with ThreadPoolExecutor(args.jobs) as pool:
        runs = list(pool.map(functools.partial(race, row), seeds))
    verdicts = [verdict for verdict, _ in runs]
    seeded, unseeded = verdicts[: args.runs], verdicts[args.runs :]
    distinct = f"{len(set(seeded))}, {len(set(unseeded))}"
    per_run = sum(seconds for _, seconds in runs) / len(runs)
    print(
        f"{row.name:28} {seeded.count(row.expected):>5}/{args.runs:<2} "
        f"{unseeded.count(row.expected):>6}/{args.runs:<2} {distinct:>9} {per_run:>6.1f}",
        flush=True,
    )
    for verdict in sorted(set(verdicts) - {row.expected}):
        print(f"  {verdicts.count(verdict)} runs gave {verdict}")
    return {
        "measure": "verdicts as expected",
        "what": row.name,
        "value": verdicts.count(row.expected),
        "unit": f"of {2 * args.runs} runs",
        "note": f"distinct verdicts: {distinct} (seeded, unseeded); {per_run:.1f} s a run",
    }


if __name__ == "__main__":
    main()
