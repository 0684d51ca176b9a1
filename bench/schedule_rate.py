"""The explorer's schedules per second on a few limiters, and against another checkout.

Each round runs ``ratelimit-harness race --limiter NAME --seed 1 --json OUT`` once per limiter
(a correct one runs its whole budget; a broken one finds, shrinks and searches again), in a
process of its own, on the server on virtual time the command starts, and reads the schedules it
ran and their seconds from its JSON. With ``--against DIR`` (a checkout of the same project,
say an older commit's) each round runs there too, right after, so a shared machine's swings move
both sides alike; each row then ends with the median of the rounds' ratios (this one's
schedules/s over the other's).

    .venv/bin/python bench/schedule_rate.py [--rounds N] [--limiter NAME ...] [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
LIMITERS = ["fixed-window-lua", "naive-get-set"]


def rate(checkout: Path, limiter: str) -> float:
    """Schedules per second of one race, run from ``checkout`` (its code first on the path)."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "race.json"
        command = [
            sys.executable,
            "-m",
            "ratelimit_harness",
            "race",
            "--limiter",
            limiter,
            "--seed",
            "1",
        ]
        command += ["--json", str(out), "--trace", str(Path(scratch) / "trace.json")]
        subprocess.run(command, cwd=checkout, capture_output=True, check=False, timeout=600)
        if not out.exists():
            sys.exit(f"error: race --limiter {limiter} in {checkout} wrote no JSON")
        summary = json.loads(out.read_text())
    return float(summary["examples"]) / float(summary["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--limiter", nargs="+", default=LIMITERS)
    parser.add_argument("--against", type=Path, help="another checkout, run in every round")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    args = parser.parse_args()
    if not 1 <= args.rounds <= 50:
        sys.exit("error: --rounds must be 1..50")
    print(f"{'limiter':24} {'schedules/s':>11} {'other':>7} {'ratio':>6}  (medians)")
    rows = []
    for limiter in args.limiter:
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(rate(HERE, limiter))
            if args.against:
                theirs.append(rate(args.against, limiter))
        ratios = [a / b for a, b in zip(ours, theirs, strict=False)]
        other = f"{statistics.median(theirs):7.1f}" if theirs else f"{'-':>7}"
        ratio = f"{statistics.median(ratios):6.3f}" if ratios else f"{'-':>6}"
        print(f"{limiter:24} {statistics.median(ours):11.1f} {other} {ratio}", flush=True)
        rows.append(_row(limiter, ours, ratios))
    if args.json:
        print(json.dumps({"bench": "schedule_rate", "rows": rows}))


def _row(limiter: str, ours: list[float], ratios: list[float]) -> dict[str, Any]:
    note = f"{len(ours)} rounds, {min(ours):.0f}-{max(ours):.0f}/s"
    if ratios:
        note += f"; x{statistics.median(ratios):.3f} of the other checkout"
    return {
        "measure": "explorer: schedules per second (race --seed 1)",
        "what": limiter,
        "value": statistics.median(ours),
        "unit": "/s",
        "note": note,
        "rounds": len(ours),
        "slowest": min(ours),
        "fastest": max(ours),
        "vs_other": statistics.median(ratios) if ratios else None,
    }


if __name__ == "__main__":
    main()
